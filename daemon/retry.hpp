#pragma once
// "That failed, or did not answer in time: try again later", as every backend says it: a
// Backoff and the timer that acts on it. After a failure, schedule() counts it and arms one try
// after the policy's next delay; a success calls reset(), which forgets the failures and drops a
// try still pending. The timer is an EventSource owned here, so destroying the Retry (with the
// device, player or item it belongs to) drops the try: it never runs on a destroyed owner.
// What the try must check when it runs (is the object still the same one, is it still needed)
// stays with the caller: the owner may have changed without being destroyed.

#include "backoff.hpp"
#include "event_loop.hpp"
#include "log.hpp"

#include <optional>
#include <utility>

namespace qsd {

class Retry {
public:
	explicit Retry(Backoff::Policy policy): backoff_(policy) {}

	// Counts a failure and runs `attempt` once after the next delay, in place of a try still
	// pending. Returns the delay, or nullopt when the policy gives up (maxTries failures in a
	// row): then no try is pending.
	std::optional<Backoff::Delay> schedule(EventLoop& loop, EventLoop::Handler attempt, const char* description) {
		timer_ = {};
		auto delay = backoff_.next();
		if (delay) timer_ = loop.addTimer(*delay, std::move(attempt), description);
		return delay;
	}
	// A success: the failures are forgotten and a pending try is dropped.
	void reset() {
		backoff_.reset();
		timer_ = {};
	}
	// Drops a pending try and keeps the count: the attempt is being made now for another reason,
	// and if it fails too the next delay is longer.
	void cancel() { timer_ = {}; }

	// The level of the line that says what schedule() just counted: `first` at the 1st, 2nd,
	// 4th, 8th… failure in a row and Debug between. A service that stays hung is asked again
	// every 30 s or so for as long as it keeps its name: hung for an hour, it is logged 7 times
	// (and more and more rarely), not a hundred.
	[[nodiscard]] log::Level level(log::Level first = log::Level::Warning) const {
		unsigned n = failures();
		return n != 0 && (n & (n - 1)) == 0 ? first : log::Level::Debug;
	}

	[[nodiscard]] unsigned failures() const { return backoff_.failures(); }
	[[nodiscard]] bool exhausted() const { return backoff_.exhausted(); }
	[[nodiscard]] bool pending() const { return timer_.enabled(); }

private:
	Backoff backoff_;
	EventSource timer_;
};

} // namespace qsd
