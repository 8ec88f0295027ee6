// EventLoop::onSignal fans one signal out to every handler added for it (sd-event itself
// takes one source per signal): the daemon's and a backend's SIGHUP handlers must coexist.

#include "event_loop.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <stdexcept>
#include <vector>

using namespace qsd;

TEST(AnEventLoop, RunsEveryHandlerOfASignalInOrder) {
	EventLoop loop;
	std::vector<int> ran;
	loop.onSignal(SIGUSR2, [&] { ran.push_back(1); });
	loop.onSignal(SIGUSR2, [&] { throw std::runtime_error("a failing handler does not stop the others"); });
	loop.onSignal(SIGUSR2, [&] {
		ran.push_back(3);
		loop.exit(0);
	});
	// Blocked by the loop (SD_EVENT_SIGNAL_PROCMASK): pending until the loop reads it.
	ASSERT_EQ(::raise(SIGUSR2), 0);
	EXPECT_EQ(loop.run(), 0);
	EXPECT_EQ(ran, (std::vector<int>{1, 3}));
}
