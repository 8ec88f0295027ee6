// Idle wakeups: context switches of qsd over a window with nothing changing, with subscribers
// connected (backends off). Every wakeup of an idle daemon is a context switch, so the target
// (no polling) is 0 voluntary + 0 non-voluntary switches.

#include "bench_util.hpp"

#include <cstdio>
#include <memory>
#include <vector>

int main(int argc, char** argv) {
	bool quick = bench::quickMode(argc, argv);
	double windowS = quick ? 1.0 : 10.0;
	int subscribers = 8;

	bench::Daemon daemon;
	std::vector<std::unique_ptr<bench::Conn>> subs;
	for (int i = 0; i < subscribers; ++i) {
		subs.push_back(std::make_unique<bench::Conn>(daemon.socket()));
		bench::subscribe(*subs.back(), {i % 2 ? "" : "/daemon"});
	}
	subs.front()->call("debug.set", {{"path", "/debug/idle"}, {"value", 1}});
	// Let the clients' connection and subscription changes settle, and the heap check that a
	// session's leaving asks for a second later (the readiness probe's) run.
	bench::sleepMs(1500);
	auto a = daemon.stats();
	bench::sleepMs(windowS * 1000);
	auto b = daemon.stats();
	long vol = b.voluntary - a.voluntary, nonvol = b.nonvoluntary - a.nonvoluntary;
	std::printf("# idle: qsd with %d subscribers, backends off, nothing changing, %.0f s window\n", subscribers, windowS);
	std::printf("threads: %ld\n", b.threads);
	std::printf("context switches: voluntary %ld, non-voluntary %ld, total %ld (%.2f/s)\n", vol, nonvol, vol + nonvol,
	            double(vol + nonvol) / windowS);
	std::printf("cpu time: %.3f ms\n", double(b.runtimeNs - a.runtimeNs) / 1e6);
	return 0;
}
