// Flood cost: a fixed amount of work, independent of timing, so that qsd's instruction count
// under `valgrind --tool=callgrind` is repeatable on a loaded machine (docs/performance.md,
// "Flood CPU"). bench_flood measures the CPU share at 10 000 changes/s; how many batches it
// makes depends on how often qsd wakes, so its instruction count varies from run to run. Here
// every step waits until all 16 subscribers have the notification of the previous step, so the
// number of batches is fixed:
//   bursts : 1 000 writes of 10 debug.set notifications each (one read, one batch each)
//   single : 2 000 single debug.set notifications (one batch each)
// It prints qsd's CPU time per change and per batch (schedstat) as well; under callgrind read
// the instruction counts instead:
//   QSD_BIN=<wrapper that execs valgrind --tool=callgrind qsd "$@"> bench_flood_cost

#include "bench_util.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using bench::json;

namespace {

constexpr int kSubscribers = 16;

// Reads every subscriber until each has seen a tree.changed holding `marker`.
void waitAll(std::vector<std::unique_ptr<bench::Conn>>& subs, const std::string& marker) {
	for (auto& s: subs) {
		for (;;) {
			auto line = s->readLine(30000);
			if (!line) bench::die("a subscriber got nothing for 30 s");
			if (line->find(marker) != std::string::npos) break;
		}
	}
}

std::string change(int key, int value) {
	return "{\"jsonrpc\":\"2.0\",\"method\":\"debug.set\",\"params\":{\"path\":\"/debug/flood/k" + std::to_string(key) +
	       "\",\"value\":" + std::to_string(value) + "}}\n";
}

} // namespace

int main(int argc, char** argv) {
	bool quick = bench::quickMode(argc, argv);
	int bursts = quick ? 50 : 1000;
	int singles = quick ? 100 : 2000;

	bench::Daemon daemon;
	bench::Conn writer(daemon.socket());
	{
		json obj = json::object();
		for (int i = 0; i < 100; ++i) obj["k" + std::to_string(i)] = -1;
		writer.call("debug.set", {{"path", "/debug/flood"}, {"value", obj}});
	}
	std::vector<std::unique_ptr<bench::Conn>> subs;
	for (int i = 0; i < kSubscribers; ++i) {
		subs.push_back(std::make_unique<bench::Conn>(daemon.socket()));
		bench::subscribe(*subs.back(), {"/debug/flood"});
	}
	std::printf("# flood cost: %d subscribers of /debug/flood; each step waits for every subscriber\n", kSubscribers);

	int value = 0;
	auto a = daemon.stats();
	for (int b = 0; b < bursts; ++b) {
		std::string burst;
		for (int i = 0; i < 10; ++i) burst += change((b * 10 + i) % 100, ++value);
		writer.send(burst);
		waitAll(subs, "\"value\":" + std::to_string(value) + "}");
	}
	auto m = daemon.stats();
	for (int i = 0; i < singles; ++i) {
		writer.send(change(i % 100, ++value));
		waitAll(subs, "\"value\":" + std::to_string(value) + "}");
	}
	auto z = daemon.stats();

	double burstCpu = double(m.runtimeNs - a.runtimeNs) / 1e3;
	double singleCpu = double(z.runtimeNs - m.runtimeNs) / 1e3;
	std::printf("bursts: %d batches of 10 changes: qsd CPU %.1f µs per batch, %.1f µs per change\n", bursts,
	            burstCpu / bursts, burstCpu / (bursts * 10.0));
	std::printf("single: %d batches of 1 change:   qsd CPU %.1f µs per batch\n", singles, singleCpu / singles);
	return 0;
}
