#pragma once
// How long to wait before trying again after a failure: `base`, doubled after each further
// failure up to `cap` (cap == base: a fixed delay), and nothing more after `maxTries` failures
// in a row (0: never give up). reset() after a success. Pure: the caller arms its own timer.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

namespace qsd {

class Backoff {
public:
	using Delay = std::chrono::microseconds;
	struct Policy {
		Delay base;
		Delay cap;
		unsigned maxTries = 0;
	};

	constexpr explicit Backoff(Policy policy): policy_(policy) {}

	// Counts a failure and returns the delay before the next try, or nullopt to give up.
	[[nodiscard]] std::optional<Delay> next() {
		if (policy_.maxTries && failures_ >= policy_.maxTries) return std::nullopt;
		unsigned shift = std::min(failures_, 30u);
		++failures_;
		auto delay = policy_.base.count() << shift;
		// An overflowing shift (a cap far above the base) stays at the cap.
		if (shift >= 62 || delay / (int64_t(1) << shift) != policy_.base.count()) return policy_.cap;
		return std::min(Delay(delay), policy_.cap);
	}
	void reset() { failures_ = 0; }
	[[nodiscard]] unsigned failures() const { return failures_; }
	[[nodiscard]] bool exhausted() const { return policy_.maxTries && failures_ >= policy_.maxTries; }

private:
	Policy policy_;
	unsigned failures_ = 0;
};

// A delay as the log gives it ("asking again in 4 s").
[[nodiscard]] constexpr int64_t wholeSeconds(Backoff::Delay d) {
	return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

} // namespace qsd
