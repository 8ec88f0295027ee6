// EventSource::enabled() is what the daemon's timers ask instead of keeping an "armed" flag of
// their own beside sd-event's state: it must follow setTime, setEnabled and a one-shot firing.

#include "event_loop.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace qsd;

TEST(AnEventSource, IsEnabledWhileATimerIsArmedAndNotOnceItFired) {
	EventLoop loop;
	std::vector<bool> seenInHandler;
	EventSource timer;
	timer = loop.addIdleTimer([&] {
		seenInHandler.push_back(timer.enabled());
		loop.exit(0);
	}, "test-timer");
	EXPECT_FALSE(timer.enabled()) << "an idle timer starts disarmed";

	timer.setTime(loop.now() + 1000);
	EXPECT_TRUE(timer.enabled());
	timer.setEnabled(SD_EVENT_OFF);
	EXPECT_FALSE(timer.enabled());

	timer.setTime(loop.now() + 1000);
	EXPECT_EQ(loop.run(), 0);
	// A one-shot source is turned off before its handler runs: the handler may arm it again.
	EXPECT_EQ(seenInHandler, std::vector<bool>{false});
	EXPECT_FALSE(timer.enabled());
}

TEST(AnEventSource, ThatIsEmptyIsNotEnabled) {
	EventSource none;
	EXPECT_FALSE(none.enabled());
	none.setEnabled(SD_EVENT_ON);   // a no-op on an empty source
	EXPECT_FALSE(none.enabled());
}
