// Fuzzes framing + dispatch: the input is written, in chunks, to one end of a socketpair whose
// other end is a ClientSession of a Daemon with the core methods registered. The session reads
// it with its LineReader and dispatches every line. Besides crashes and sanitizer reports, every
// line the daemon writes back must be valid UTF-8 JSON, a JSON-RPC 2.0 response or notification.

#include "daemon.hpp"
#include "log.hpp"
#include "server/client.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace {

[[noreturn]] void die(const char* what, const std::string& line) {
	std::fprintf(stderr, "qsd-fuzz-dispatch: %s: %.400s\n", what, line.c_str());
	std::abort();
}

void checkLine(const std::string& line) {
	// Strict parse: throws on invalid UTF-8, so an answer with bad bytes is a finding.
	nlohmann::json msg;
	try {
		msg = nlohmann::json::parse(line);
	} catch (const nlohmann::json::exception&) {
		die("the daemon wrote a line that is not JSON", line);
	}
	auto checkOne = [&](const nlohmann::json& m) {
		if (!m.is_object() || m.value("jsonrpc", "") != "2.0") die("not a JSON-RPC 2.0 message", line);
		bool response = m.contains("result") || m.contains("error");
		if (response) {
			if (!m.contains("id") || (m.contains("result") && m.contains("error"))) die("malformed response", line);
			if (m.contains("error") && !(m["error"].is_object() && m["error"]["code"].is_number_integer() &&
			                             m["error"]["message"].is_string()))
				die("malformed error", line);
		} else if (!m.contains("method") || m.contains("id")) {
			die("neither a response nor a notification", line);
		}
	};
	if (msg.is_array()) {
		if (msg.empty()) die("an empty batch answer", line);
		for (const auto& m: msg) checkOne(m);
	} else {
		checkOne(msg);
	}
}

struct Peer {
	int fd;
	std::string pending;
	size_t lines = 0;

	void drain() {
		char buf[65536];
		for (;;) {
			ssize_t n = ::read(fd, buf, sizeof buf);
			if (n <= 0) return;
			pending.append(buf, size_t(n));
			size_t start = 0;
			for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
				checkLine(pending.substr(start, nl - start));
				++lines;
			}
			pending.erase(0, start);
		}
	}
};

// Runs the loop until nothing is left to do now (timers in the future are not waited for).
void settle(qsd::EventLoop& loop, Peer& peer) {
	for (int i = 0; i < 100000; ++i) {
		int r = sd_event_run(loop.raw(), 0);
		peer.drain();
		if (r <= 0) return;
	}
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
	qsd::log::init();
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
	if (size == 0) return 0;
	// The first byte picks the write chunk size, so lines are split at many places.
	size_t chunk = 1 + (data[0] % 2 == 0 ? data[0] : size_t(data[0]) * 67);
	++data;
	--size;

	// One daemon for the whole run (its construction dominates a small input's cost); each input
	// gets a fresh session, and everything a session owns goes away with it.
	static qsd::Daemon& daemon = *[] {
		qsd::DaemonOptions options;
		options.backends = std::vector<std::string>{};
		return new qsd::Daemon(std::move(options));
	}();

	int sv[2];
	if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) std::abort();
	ucred cred{::getpid(), ::getuid(), ::getgid()};
	qsd::ClientLimits limits;
	limits.maxLineBytes = 4096;          // small, so the fuzzer reaches the line limit
	limits.maxQueuedBytes = 64 << 10;    // and the outbound queue budget
	limits.maxQueuedMessages = 64;
	limits.maxSubscriptions = 8;
	Peer peer{sv[1], {}, 0};
	{
		auto session = std::make_shared<qsd::ClientSession>(daemon.server(), daemon.loop(), daemon.tree(), 1, sv[0],
		                                                    cred, limits);
		session->start();
		size_t off = 0;
		while (off < size) {
			size_t n = std::min(chunk, size - off);
			ssize_t w = ::write(sv[1], data + off, n);
			if (w > 0) off += size_t(w);
			else if (w < 0 && errno != EAGAIN && errno != EINTR) break;
			settle(daemon.loop(), peer);
		}
		// The end of the stream: a half line is dropped, queued answers are still written.
		::shutdown(sv[1], SHUT_WR);
		settle(daemon.loop(), peer);
		// A change after all that reaches whatever the input subscribed to.
		daemon.tree().set("/fuzz", 1);
		settle(daemon.loop(), peer);
	}
	settle(daemon.loop(), peer);
	::close(sv[1]);
	return 0;
}
