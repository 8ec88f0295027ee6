#pragma once
// A daemon-less server for unit tests: an event loop, a tree, a dispatcher, a Server that does
// not listen, and client sessions on socketpairs whose other end the test reads and writes.

#include "event_loop.hpp"
#include "server/client.hpp"
#include "server/dispatcher.hpp"
#include "server/server.hpp"
#include "tree.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace qsd::testing {

struct Peer {
	int fd = -1;
	std::string buf;

	~Peer() {
		if (fd >= 0) ::close(fd);
	}
	void send(const std::string& s) const {
		size_t off = 0;
		while (off < s.size()) {
			ssize_t n = ::write(fd, s.data() + off, s.size() - off);
			ASSERT_GT(n, 0) << std::strerror(errno);
			off += size_t(n);
		}
	}
	// Reads what is available now; returns the complete lines, parsed.
	std::vector<nlohmann::json> read() {
		char chunk[65536];
		for (;;) {
			ssize_t n = ::read(fd, chunk, sizeof chunk);
			if (n <= 0) break;
			buf.append(chunk, size_t(n));
		}
		std::vector<nlohmann::json> out;
		size_t start = 0;
		for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1)
			out.push_back(nlohmann::json::parse(buf.substr(start, nl - start)));
		buf.erase(0, start);
		return out;
	}
};

class ServerFixture: public ::testing::Test {
protected:
	ServerFixture(): tree(loop), server(loop, tree, dispatcher, ServerOptions{}) {}

	struct Connection {
		std::shared_ptr<ClientSession> session;
		std::unique_ptr<Peer> peer;
	};

	// A session on `on` (default: the fixture's server).
	Connection connect(ClientLimits limits = {}, int sndbuf = 0, Server* on = nullptr) {
		int sv[2];
		EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
		if (sndbuf > 0) {
			::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
			::setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof sndbuf);
		}
		ucred cred{::getpid(), ::getuid(), ::getgid()};
		auto s = std::make_shared<ClientSession>(on ? *on : server, loop, tree, nextId++, sv[0], cred, limits);
		s->start();
		auto p = std::make_unique<Peer>();
		p->fd = sv[1];
		return {std::move(s), std::move(p)};
	}

	// Runs the loop until nothing is left to do now.
	void settle() {
		for (int i = 0; i < 100000; ++i)
			if (sd_event_run(loop.raw(), 0) <= 0) return;
	}

	// Sends one line and returns every message that comes back once the loop settled.
	std::vector<nlohmann::json> exchange(Connection& c, const std::string& line) {
		c.peer->send(line + "\n");
		settle();
		return c.peer->read();
	}

	EventLoop loop;
	Tree tree;
	Dispatcher dispatcher;
	Server server;
	uint64_t nextId = 1;
};

} // namespace qsd::testing
