#include "connection.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace qsctl {

std::string resolveSocketPath(const std::string& option) {
	if (!option.empty()) return option;
	if (const char* env = std::getenv("QSD_SOCKET"); env && *env) return env;
	if (const char* rt = std::getenv("XDG_RUNTIME_DIR"); rt && *rt) return std::string(rt) + "/qsd/qsd.sock";
	return {};
}

Connection::~Connection() { close(); }

void Connection::close() {
	if (fd_ >= 0) ::close(fd_);
	fd_ = -1;
	reader_ = qsd::LineReader{size_t(1) << 30};
	lines_.clear();
}

bool Connection::open(const std::string& path) {
	close();
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	if (path.size() >= sizeof addr.sun_path) {
		error_ = "socket path too long";
		return false;
	}
	std::memcpy(addr.sun_path, path.data(), path.size());
	// Non-blocking: a daemon that stopped accepting (its listen queue full) blocked a connect()
	// for ever, whatever --timeout said; reads and writes wait in poll() with the deadline.
	int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		error_ = std::strerror(errno);
		return false;
	}
	using clock = std::chrono::steady_clock;
	auto deadline = clock::now() + std::chrono::milliseconds(timeoutMs_ < 0 ? 0 : timeoutMs_);
	for (;;) {
		if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) break;
		if (errno == EINTR) continue;
		// A Unix socket whose queue is full says EAGAIN at once, and cannot be polled for room:
		// asked again every 10 ms until the deadline.
		if (errno == EAGAIN && (timeoutMs_ < 0 || clock::now() < deadline)) {
			::poll(nullptr, 0, 10);
			continue;
		}
		error_ = errno == EAGAIN ? "qsd does not accept connections (its queue is full)" : std::strerror(errno);
		::close(fd);
		return false;
	}
	fd_ = fd;
	return true;
}

bool Connection::send(const json& message) {
	if (fd_ < 0) return false;
	auto line = qsd::rpc::toLine(message);
	std::string_view rest = line;
	using clock = std::chrono::steady_clock;
	auto deadline = clock::now() + std::chrono::milliseconds(timeoutMs_ < 0 ? 0 : timeoutMs_);
	while (!rest.empty()) {
		// MSG_NOSIGNAL: a daemon that went away is an exit code, not a SIGPIPE.
		auto n = ::send(fd_, rest.data(), rest.size(), MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR) continue;
			if (errno == EAGAIN) {
				// A daemon that does not read: as long as --timeout allows.
				int wait = -1;
				if (timeoutMs_ >= 0) {
					auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
					if (left <= 0) {
						error_ = "qsd did not read the request within " + std::to_string(timeoutMs_) + " ms";
						return false;
					}
					wait = int(left);
				}
				pollfd p{fd_, POLLOUT, 0};
				::poll(&p, 1, wait);
				continue;
			}
			error_ = std::strerror(errno);
			return false;
		}
		rest.remove_prefix(size_t(n));
	}
	return true;
}

int64_t Connection::request(std::string_view method, json params) {
	auto id = nextId_++;
	if (!send(qsd::rpc::makeRequest(id, method, std::move(params)))) return -1;
	return id;
}

Connection::Status Connection::next(json& out, int timeoutMs) {
	using clock = std::chrono::steady_clock;
	auto deadline = clock::now() + std::chrono::milliseconds(timeoutMs < 0 ? 0 : timeoutMs);
	for (;;) {
		while (!lines_.empty()) {
			auto line = std::move(lines_.front());
			lines_.pop_front();
			auto parsed = json::parse(line, nullptr, false);
			if (parsed.is_discarded()) continue;   // never from qsd; not worth dying for
			out = std::move(parsed);
			return Status::Message;
		}
		if (fd_ < 0) return Status::Error;
		int wait = -1;
		if (timeoutMs >= 0) {
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
			if (left <= 0) return Status::Timeout;
			wait = int(left);
		}
		// A write end reports POLLERR when the pipe has no reader left, whatever is asked.
		pollfd p[2] = {{fd_, POLLIN, 0}, {hangupFd_, 0, 0}};
		int r = ::poll(p, hangupFd_ >= 0 ? 2 : 1, wait);
		if (r < 0) {
			if (errno == EINTR) continue;
			error_ = std::strerror(errno);
			return Status::Error;
		}
		if (r == 0) return Status::Timeout;
		if (hangupFd_ >= 0 && (p[1].revents & (POLLERR | POLLHUP))) {
			error_ = "the reader of the output is gone";
			return Status::Hangup;
		}
		if (!p[0].revents) continue;
		char buf[65536];
		auto n = ::read(fd_, buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN) continue;
			error_ = std::strerror(errno);
			return Status::Error;
		}
		if (n == 0) {
			error_ = "connection closed by qsd";
			return Status::Eof;
		}
		reader_.feed(
		    std::string_view(buf, size_t(n)), [this](std::string_view l) { lines_.emplace_back(l); }, [] {});
	}
}

} // namespace qsctl
