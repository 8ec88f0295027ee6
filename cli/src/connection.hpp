#pragma once
// A blocking JSON-RPC connection to qsd: one Unix stream socket, NDJSON framing. qsctl is a
// short-lived process with one job at a time, so blocking I/O with poll() timeouts keeps it
// small; the daemon never waits on us either way.

#include <qsd/protocol/framing.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace qsctl {

using json = nlohmann::json;

// The socket qsctl talks to: --socket, else $QSD_SOCKET, else $XDG_RUNTIME_DIR/qsd/qsd.sock
// (the daemon's own rules). Empty when none can be determined.
[[nodiscard]] std::string resolveSocketPath(const std::string& option);

class Connection {
public:
	// Hangup: the fd given to watchHangup() reported that its other end is gone.
	enum class Status { Message, Eof, Timeout, Error, Hangup };

	Connection() = default;
	~Connection();
	Connection(const Connection&) = delete;
	Connection& operator=(const Connection&) = delete;

	// How long open() may wait for qsd to accept and send() for it to read (--timeout);
	// < 0: for ever.
	void setTimeout(int ms) { timeoutMs_ = ms; }

	// Connects; on failure returns false and sets error() (errno text).
	bool open(const std::string& path);
	void close();
	[[nodiscard]] bool isOpen() const { return fd_ >= 0; }
	[[nodiscard]] int fd() const { return fd_; }
	[[nodiscard]] const std::string& error() const { return error_; }

	// While waiting for the daemon, also watch `fd` (a pipe or socket we write to, or -1 for
	// none): when its reader is gone, next() returns Hangup.
	void watchHangup(int fd) { hangupFd_ = fd; }

	// Sends one message as a line. False when the daemon went away.
	bool send(const json& message);

	// Sends a request with a fresh id; returns the id.
	int64_t request(std::string_view method, json params = nullptr);

	// The next message from the daemon. timeoutMs < 0 waits forever.
	Status next(json& out, int timeoutMs);

	// Waits for the response to request `id`; notifications received meanwhile are passed to
	// `onOther` when given, else dropped.
	template<class F>
	Status response(int64_t id, json& out, int timeoutMs, F&& onOther);
	Status response(int64_t id, json& out, int timeoutMs) {
		return response(id, out, timeoutMs, [](const json&) {});
	}

private:
	int fd_ = -1;
	int hangupFd_ = -1;
	int timeoutMs_ = -1;
	int64_t nextId_ = 1;
	std::string error_;
	// Snapshots of a large tree are long lines; the daemon bounds what it sends, we only
	// bound memory against a broken peer.
	qsd::LineReader reader_{size_t(1) << 30};
	std::deque<std::string> lines_;
};

template<class F>
Connection::Status Connection::response(int64_t id, json& out, int timeoutMs, F&& onOther) {
	for (;;) {
		json msg;
		auto s = next(msg, timeoutMs);
		if (s != Status::Message) return s;
		if (msg.is_object() && !msg.contains("method") && msg.contains("id") && msg["id"] == id) {
			out = std::move(msg);
			return Status::Message;
		}
		// An error qsd answered with id null is about our request too: one it could not read (a
		// line too long, not JSON) or the connection it refused (its limit). Waited past, it
		// became a timeout, or a lost connection, with qsd's reason never shown. qsctl has one
		// request out at a time.
		if (msg.is_object() && !msg.contains("method") && msg.contains("error") && msg.value("id", json(0)).is_null()) {
			out = std::move(msg);
			return Status::Message;
		}
		onOther(msg);
	}
}

} // namespace qsctl
