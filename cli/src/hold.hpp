#pragma once
// The restart hold of `qsctl watch --reconnect`, as the QML client has it: a daemon that has
// just started answers a subscription before its backends have read their services, so its
// first snapshot says `null` (or `{available: false}`) for what is about to come back. A watched
// path whose backend is `starting` keeps the value last printed until the backend is past
// `starting` or the grace period, counted from the backend's `since`, is over. Pure: the caller
// passes the clocks and the daemon's /daemon/backends.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace qsctl {

using json = nlohmann::json;

// The backend that writes a domain ("network" -> "nm"); "" for a domain no backend writes
// (/daemon, /debug).
[[nodiscard]] std::string_view backendOfDomain(std::string_view domain);

// The backends a watched path depends on: its domain's backend; every backend for the whole
// tree (""); none for /daemon and paths outside every domain.
[[nodiscard]] std::vector<std::string> backendsOfPath(const std::string& path);

class RestartHold {
public:
	explicit RestartHold(int graceMs) : graceMs_(graceMs) {}

	// A fresh snapshot: holds each path whose backend is `starting` in `backends` (the value of
	// /daemon/backends, or nullptr), until min(its `since` + grace, now + grace). A backend the
	// daemon does not run (no entry) is not waited for. `wallNowSec` is the real-time clock
	// (seconds since the epoch, as `since`), `monoNowMs` a monotonic clock for the deadlines.
	void start(const std::vector<std::string>& paths, const json* backends, double wallNowSec, int64_t monoNowMs);
	// Releases the paths whose backends left `starting` or whose deadline passed; true when
	// one was released.
	bool update(const json* backends, int64_t monoNowMs);
	void clear() { held_.clear(); }

	[[nodiscard]] bool held(const std::string& path) const { return held_.count(path) != 0; }
	[[nodiscard]] bool any() const { return !held_.empty(); }
	// Milliseconds until the next deadline (at least 1), or -1 when nothing is held.
	[[nodiscard]] int timeoutMs(int64_t monoNowMs) const;

private:
	struct Held {
		std::vector<std::string> backends;   // still starting
		int64_t deadline = 0;                // monotonic ms
	};
	int graceMs_;
	std::map<std::string, Held> held_;
};

} // namespace qsctl
