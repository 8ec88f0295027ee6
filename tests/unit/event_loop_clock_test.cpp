// EventLoop::wallNow() is the wall clock of the wake-up that now() is the monotonic clock of. A
// wall-clock time published beside a monotonic one (MPRIS positionAt beside the position's
// instant) is read from the pair: the wall clock read afresh, late in a long iteration, named
// a later instant than the position it stamped.

#include "event_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

using namespace qsd;
using namespace std::chrono;

namespace {

uint64_t read(clockid_t clock) {
	timespec ts{};
	clock_gettime(clock, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000 + uint64_t(ts.tv_nsec) / 1000;
}

// CLOCK_REALTIME − CLOCK_MONOTONIC in µs, from the closest of a few paired reads (a preemption
// between the two reads of one pair would add to it).
int64_t clockOffset() {
	int64_t best = 0;
	uint64_t narrowest = UINT64_MAX;
	for (int i = 0; i < 5; ++i) {
		uint64_t m0 = read(CLOCK_MONOTONIC), w = read(CLOCK_REALTIME), m1 = read(CLOCK_MONOTONIC);
		if (m1 - m0 < narrowest) {
			narrowest = m1 - m0;
			best = int64_t(w) - int64_t(m0 + (m1 - m0) / 2);
		}
	}
	return best;
}

} // namespace

TEST(AnEventLoop, GivesTheWallClockOfTheWakeUpItGivesTheMonotonicClockOf) {
	EventLoop loop;
	uint64_t mono = 0, monoLater = 0;
	system_clock::time_point wall, wallLater;
	int64_t offset = 0;
	auto timer = loop.addTimer(1ms, [&] {
		mono = loop.now();
		wall = loop.wallNow();
		offset = clockOffset();
		// A long iteration: a handler that works for 50 ms before it stamps what it publishes.
		uint64_t until = read(CLOCK_MONOTONIC) + 50'000;
		while (read(CLOCK_MONOTONIC) < until) {}
		monoLater = loop.now();
		wallLater = loop.wallNow();
		loop.exit(0);
	}, "test-clock");
	ASSERT_EQ(loop.run(), 0);
	EXPECT_EQ(monoLater, mono);
	EXPECT_EQ(wallLater, wall) << "the wall clock moved within one iteration";
	// The two name the same instant: their difference is the clocks' offset. 2 ms leaves room
	// for the reads themselves; the wall clock read afresh would be 50 ms off.
	int64_t pairOffset = duration_cast<microseconds>(wall.time_since_epoch()).count() - int64_t(mono);
	EXPECT_LT(std::llabs(pairOffset - offset), 2000) << "wallNow() − now() differs from the clocks' offset";
}
