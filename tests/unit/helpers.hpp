#pragma once
// Small things several unit tests need: a guard against a regression that blocks, running the loop
// until a state holds, property maps as a D-Bus peer would send them, the keys of an object, and
// the enum values the API description lists.

#include "dbus/variant.hpp"
#include "event_loop.hpp"

#include <qsd/protocol/api.hpp>

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>

#include <systemd/sd-event.h>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace qsd::testing {

// Runs `check` in a child process: true when it returns true within 30 s (a regression that
// blocks must fail the test, not hang it).
template <class F>
bool finishes(F check) {
	pid_t pid = ::fork();
	if (pid == 0) ::_exit(check() ? 0 : 1);
	for (int i = 0; i < 3000; ++i) {
		int status = 0;
		if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
		::usleep(10000);
	}
	::kill(pid, SIGKILL);
	::waitpid(pid, nullptr, 0);
	return false;
}

// Runs the loop until `done` holds or `timeoutUs` has passed (a bound, not a wait: it returns as
// soon as `done` holds). Returns done().
template <class F>
bool runUntil(EventLoop& loop, F done, uint64_t timeoutUs = 10'000'000) {
	auto deadline = EventLoop::clock() + timeoutUs;
	while (!done() && EventLoop::clock() < deadline) sd_event_run(loop.raw(), 10'000);
	return done();
}

// The keys of a JSON object.
inline std::set<std::string> keys(const nlohmann::json& object) {
	std::set<std::string> out;
	for (const auto& [k, _]: object.items()) out.insert(k);
	return out;
}

// A property map as the cache holds it, from the sdbus::Variants a peer would send.
inline dbus::Properties props(std::initializer_list<std::pair<const std::string, sdbus::Variant>> list) {
	dbus::Properties out;
	for (const auto& [k, v]: list) out.emplace(k, dbus::Value(v));
	return out;
}

// The enum values a schema of protocol/api/*.json lists (directly, or in its first anyOf branch
// for a nullable enum).
inline std::set<std::string> schemaEnum(const char* name) {
	const auto& s = api::openrpc()["components"]["schemas"][name];
	const auto& e = s.contains("enum") ? s["enum"] : s["anyOf"][0]["enum"];
	return std::set<std::string>(e.begin(), e.end());
}

} // namespace qsd::testing
