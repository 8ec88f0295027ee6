// qsd's resident memory idle and with many subscribers, backends off (--backends=): the core's
// own footprint (loop, tree, server, sessions). Each subscriber subscribes to the whole tree
// (a snapshot each), then every subscriber receives 100 changes.

#include "bench_util.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using bench::json;

int main(int argc, char** argv) {
	bool quick = bench::quickMode(argc, argv);
	int leaves = 1000;
	std::vector<int> steps = quick ? std::vector<int>{1, 4} : std::vector<int>{1, 16, 64, 256};

	bench::Daemon daemon;
	bench::sleepMs(200);
	auto idle = daemon.stats();
	bench::Conn control(daemon.socket());
	bench::populate(control, "tree", leaves);
	bench::sleepMs(50);
	auto populated = daemon.stats();

	std::printf("# RSS of qsd, backends off (--backends=), tree of %d leaves under /debug/tree (MiB)\n", leaves);
	std::printf("%-52s %8s %8s\n", "state", "VmRSS", "VmHWM");
	std::printf("%-52s %8.2f %8.2f\n", "idle, no client", bench::mib(idle.rssKiB), bench::mib(idle.hwmKiB));
	std::printf("%-52s %8.2f %8.2f\n", "1 client, tree populated", bench::mib(populated.rssKiB), bench::mib(populated.hwmKiB));
	std::vector<std::unique_ptr<bench::Conn>> subs;
	for (int n: steps) {
		while (int(subs.size()) < n) {
			subs.push_back(std::make_unique<bench::Conn>(daemon.socket()));
			bench::subscribe(*subs.back(), {""});
		}
		bench::sleepMs(50);
		auto s = daemon.stats();
		std::printf("%-52s %8.2f %8.2f\n", (std::to_string(n) + " whole-tree subscribers").c_str(), bench::mib(s.rssKiB),
		            bench::mib(s.hwmKiB));
		// 100 changes, read by every subscriber (their queues drain). Subscribers of the whole
		// tree also see /daemon/clients change, so wait for the last change's value.
		std::string last;
		for (int i = 0; i < 100; ++i) {
			last = "s" + std::to_string(n) + "-" + std::to_string(i);
			control.call("debug.set", {{"path", "/debug/tree/o" + std::to_string(i % (leaves / 10)) + "/p0"}, {"value", last}});
		}
		for (auto& c: subs) {
			for (;;) {
				auto line = c->readLine();
				if (!line) bench::die("a subscriber missed a change");
				if (line->find("\"" + last + "\"") != std::string::npos) break;
			}
		}
		auto t = daemon.stats();
		std::printf("%-52s %8.2f %8.2f\n", (std::to_string(n) + " subscribers, after 100 changes each").c_str(),
		            bench::mib(t.rssKiB), bench::mib(t.hwmKiB));
		std::fflush(stdout);
	}
	return 0;
}
