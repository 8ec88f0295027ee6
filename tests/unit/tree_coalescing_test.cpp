// Tree coalescing under load (docs/architecture.md, "Coalescing under load"): after a flush
// that took d of CPU time, automatic flushes wait until min(d × dutyFactor, maxWindowUs) after it
// (after a quiet moment, d is the median of the last three flushes' costs); a write after a
// quiet moment, and every explicit flush(), go out at once. Off by default.

#include "event_loop.hpp"
#include "helpers.hpp"
#include "server/subscription.hpp"
#include "tree.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <time.h>

using namespace qsd;
using qsd::testing::runUntil;
using json = nlohmann::json;

namespace {

// Spends `cost` of this thread's CPU time (the flush cost is CPU time, so sleeping would not do).
void spin(std::chrono::microseconds cost) {
	auto cpu = [] {
		timespec ts{};
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
	};
	auto until = cpu() + cost;
	while (cpu() < until) {
	}
}

// An observer that records batches and takes `cost` to handle each, so that the flush cost,
// and with it the window, is known from below.
struct SlowRecorder {
	std::vector<std::pair<uint64_t, json>> batches;
	std::chrono::microseconds cost;
	Tree::Subscription sub;
	SlowRecorder(Tree& t, std::chrono::microseconds c): cost(c) {
		sub = t.observe([this](uint64_t rev, const json& patch) {
			batches.emplace_back(rev, patch);
			spin(cost);
		});
	}
};

// Runs every source that is due now (what the loop does within one wake-up, and after).
void runDue(EventLoop& loop) {
	for (int i = 0; i < 1000; ++i)
		if (sd_event_run(loop.raw(), 0) <= 0) return;
}

} // namespace

TEST(TreeCoalescing, IsOffByDefault) {
	EventLoop loop;
	Tree tree(loop);
	SlowRecorder rec(tree, std::chrono::microseconds(2000));
	for (int i = 0; i < 3; ++i) {
		tree.set("/d/k", i);
		runDue(loop);
		ASSERT_EQ(rec.batches.size(), size_t(i + 1)) << "write " << i << " was held";
	}
}

TEST(TreeCoalescing, FrequentWritesWaitForTheWindowAndLandInOneBatch) {
	EventLoop loop;
	Tree tree(loop);
	// A 2 ms flush: a window of 1 s (the cap), long enough that a loaded machine cannot let it
	// pass between two lines of this test.
	tree.setCoalescing({1000, 1'000'000});
	SlowRecorder rec(tree, std::chrono::microseconds(2000));
	// The first write after a quiet moment is flushed at once.
	tree.set("/d/a", 1);
	runDue(loop);
	ASSERT_EQ(rec.batches.size(), 1u);
	// Writes right after it are held, and wait together.
	tree.set("/d/b", 2);
	runDue(loop);
	tree.set("/d/c", 3);
	tree.set("/d/b", 4);
	runDue(loop);
	EXPECT_EQ(rec.batches.size(), 1u) << "a write right after a flush was not held";
	runUntil(loop, [&] { return rec.batches.size() == 2; });
	ASSERT_EQ(rec.batches.size(), 2u);
	EXPECT_EQ(rec.batches[1].first, 2u);
	EXPECT_EQ(rec.batches[1].second, json::parse(R"([{"op":"add","path":"/d/b","value":4},{"op":"add","path":"/d/c","value":3}])"));
	EXPECT_EQ(tree.root()["d"], json::parse(R"({"a":1,"b":4,"c":3})"));
}

// Changes that come rarely are not held after one slow flush among quick ones (one preempted by
// the hypervisor, whose CPU clock cannot tell); after two slow ones in a row they are.
TEST(TreeCoalescing, OneSlowFlushAfterAQuietMomentDoesNotHoldTheNextWrite) {
	EventLoop loop;
	// The tree's clock is moved by hand; the loop's timers keep the real one.
	uint64_t now = EventLoop::clock();
	Tree tree(loop, [&] { return now; });
	// A 0.1 ms flush opens a window of 0.1 s, a 4 ms one of 4 s. The quiet moments below (2 s,
	// then 1.5 s) leave a quick flush 15 times its cost before it would hold the next write.
	tree.setCoalescing({1000, 10'000'000});
	SlowRecorder rec(tree, std::chrono::microseconds(100));
	auto write = [&](int value) {
		tree.set("/d/a", value);
		runDue(loop);
	};
	write(1);
	now += 2'000'000;
	write(2);
	now += 2'000'000;
	ASSERT_EQ(rec.batches.size(), 2u);
	rec.cost = std::chrono::microseconds(4000);
	write(3);
	ASSERT_EQ(rec.batches.size(), 3u);
	// Past the quick flushes' window, within the slow one's own.
	now += 1'500'000;
	write(4);
	EXPECT_EQ(rec.batches.size(), 4u) << "one slow flush held the next write";
	now += 1'500'000;
	write(5);
	EXPECT_EQ(rec.batches.size(), 4u) << "two slow flushes in a row did not hold the next write";
	tree.flush();
	EXPECT_EQ(rec.batches.size(), 5u);
}

TEST(TreeCoalescing, AnExplicitFlushIsNeverHeld) {
	EventLoop loop;
	Tree tree(loop);
	tree.setCoalescing({1000, 1'000'000});
	SlowRecorder rec(tree, std::chrono::microseconds(2000));
	tree.set("/d/a", 1);
	runDue(loop);
	tree.set("/d/a", 2);
	runDue(loop);
	ASSERT_EQ(rec.batches.size(), 1u);
	// tree.get and tree.subscribe flush first, so the revision they report matches the value.
	tree.flush();
	ASSERT_EQ(rec.batches.size(), 2u);
	EXPECT_EQ(tree.revision(), 2u);
	// The window was disarmed with it: nothing is left to flush.
	runDue(loop);
	EXPECT_EQ(rec.batches.size(), 2u);
}

// What answers and events rely on (ClientSession::sendResponse, Server::emitEvent): a write is
// fresh until its dispatch ends (the next flush chance); one held only by the window is not; and
// flushAfterDispatch() makes the next flush chance ignore the window.
TEST(TreeCoalescing, WritesAreFreshUntilTheirDispatchEndsAndAnUrgentFlushSkipsTheWindow) {
	EventLoop loop;
	Tree tree(loop);
	tree.setCoalescing({1000, 1'000'000});
	SlowRecorder rec(tree, std::chrono::microseconds(2000));
	auto writes = tree.writeCount();
	tree.set("/d/a", 1);
	EXPECT_EQ(tree.writeCount(), writes + 1);
	EXPECT_TRUE(tree.pendingFresh());
	runDue(loop);
	ASSERT_EQ(rec.batches.size(), 1u);
	EXPECT_FALSE(tree.pending());
	tree.set("/d/a", 2);
	EXPECT_TRUE(tree.pendingFresh());
	runDue(loop);
	ASSERT_EQ(rec.batches.size(), 1u) << "the window did not hold a write right after a flush";
	EXPECT_TRUE(tree.pending());
	EXPECT_FALSE(tree.pendingFresh()) << "a write whose dispatch ended is still fresh";
	tree.set("/d/b", 3);
	tree.flushAfterDispatch();
	runDue(loop);
	ASSERT_EQ(rec.batches.size(), 2u) << "an urgent flush waited for the window";
	EXPECT_EQ(rec.batches[1].second, json::parse(R"([{"op":"replace","path":"/d/a","value":2},{"op":"add","path":"/d/b","value":3}])"));
	EXPECT_FALSE(tree.pending());
}

TEST(TreeCoalescing, TheWindowIsCappedAndAWriteAfterItIsFlushedAtOnce) {
	EventLoop loop;
	// The tree's clock is moved by hand past the window; the loop's timers keep the real one.
	uint64_t now = EventLoop::clock();
	Tree tree(loop, [&] { return now; });
	// A 2 ms flush with this factor would hold for over half an hour; the cap makes it 1 s.
	tree.setCoalescing({1'000'000, 1'000'000});
	SlowRecorder rec(tree, std::chrono::microseconds(2000));
	tree.set("/d/a", 1);
	runDue(loop);
	tree.set("/d/a", 2);
	runDue(loop);
	ASSERT_EQ(rec.batches.size(), 1u);
	runUntil(loop, [&] { return rec.batches.size() == 2; });
	ASSERT_EQ(rec.batches.size(), 2u);
	// After a quiet moment longer than the window, a write goes out in its own wake-up.
	now += 1'100'000;
	tree.set("/d/a", 3);
	runDue(loop);
	EXPECT_EQ(rec.batches.size(), 3u);
}

TEST(TreeCoalescing, TurningItOffFlushesTheNextWriteAtOnce) {
	EventLoop loop;
	Tree tree(loop);
	tree.setCoalescing({1000, 1'000'000});
	SlowRecorder rec(tree, std::chrono::microseconds(2000));
	tree.set("/d/a", 1);
	runDue(loop);
	tree.setCoalescing({});
	tree.set("/d/a", 2);
	runDue(loop);
	EXPECT_EQ(rec.batches.size(), 2u);
}

TEST(PathFilterSelection, SubscribersWithTheSamePathsGetTheSameOperations) {
	json root = json::parse(R"({"a":{"x":1,"y":2},"b":{"z":3}})");
	json patch = json::parse(R"([{"op":"replace","path":"/a/x","value":1},{"op":"add","path":"/b/z","value":3}])");
	PathFilter f({"/a"}, root), g({"/a"}, root), h({"/b"}, root);
	PathFilter::Selection sf, sg, sh;
	f.select(patch, root, sf);
	g.select(patch, root, sg);
	h.select(patch, root, sh);
	// Pointers into the one patch: equal selections are recognised without comparing values.
	ASSERT_EQ(sf.ops.size(), 1u);
	EXPECT_EQ(sf.ops[0], &patch[0]);
	EXPECT_EQ(sf.ops, sg.ops);
	EXPECT_TRUE(sf.owned.empty());
	ASSERT_EQ(sh.ops.size(), 1u);
	EXPECT_EQ(sh.ops[0], &patch[1]);
}

TEST(PathFilterSelection, RestatedOperationsAreOwnedByTheSelection) {
	json root = json::parse(R"({"a":{"b":{"c":2}}})");
	PathFilter f({"/a/b/c"}, root);
	json patch = json::parse(R"([{"op":"replace","path":"/a","value":{"b":{"c":2}}},{"op":"remove","path":"/q"}])");
	PathFilter::Selection s;
	f.select(patch, root, s);
	ASSERT_EQ(s.ops.size(), 1u);
	ASSERT_EQ(std::distance(s.owned.begin(), s.owned.end()), 1);
	EXPECT_EQ(s.ops[0], &s.owned.front());
	EXPECT_EQ(*s.ops[0], json::parse(R"({"op":"replace","path":"/a/b/c","value":2})"));
}
