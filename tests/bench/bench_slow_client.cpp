// Memory with a slow client: qsd's RSS before, during and after 100 000 changes (debug.flood,
// one batch each) while a client subscribed to the whole tree never reads; then after that
// client reads everything (it gets a tree.resync), and after it disconnects. The outbound
// queue of a client is bounded (4 MiB / 8192 messages), so RSS must stay bounded too.

#include "bench_util.hpp"

using bench::json;

#include <poll.h>

#include <cstdio>
#include <memory>
#include <string>

int main(int argc, char** argv) {
	bool quick = bench::quickMode(argc, argv);
	int count = quick ? 2000 : 100000;
	int keys = 1000;

	bench::Daemon daemon;
	bench::Conn driver(daemon.socket());
	bench::sleepMs(200);
	auto before = daemon.stats();

	auto slowConn = std::make_unique<bench::Conn>(daemon.socket());
	auto& slow = *slowConn;
	bench::subscribe(slow, {""});
	auto subscribed = daemon.stats();

	// The flood runs inside qsd; its answer comes when the last batch is flushed.
	auto t0 = bench::nowNs();
	driver.sendJson({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "debug.flood"},
	                 {"params", {{"path", "/debug/flood"}, {"count", count}, {"keys", keys}, {"batch", 1}}}});
	long peak = 0;
	json answer;
	for (;;) {
		pollfd p{driver.fd(), POLLIN, 0};
		poll(&p, 1, 20);
		auto s = daemon.stats();
		peak = std::max(peak, s.rssKiB);
		if (p.revents & POLLIN) {
			auto line = driver.readLine(30000);
			if (!line) bench::die("no answer to debug.flood");
			answer = json::parse(*line);
			break;
		}
		if (bench::nowNs() - t0 > 120'000'000'000ull) bench::die("debug.flood did not finish in 120 s");
	}
	double seconds = double(bench::nowNs() - t0) / 1e9;
	auto during = daemon.stats();
	bench::sleepMs(100);
	auto afterFlood = daemon.stats();

	// The slow client now reads everything queued for it, up to its resync.
	size_t lines = 0, bytes = 0, changed = 0, resyncs = 0;
	for (;;) {
		auto line = slow.readLine(1000);
		if (!line) break;
		++lines;
		bytes += line->size() + 1;
		if (line->find("\"tree.resync\"") != std::string::npos) {
			++resyncs;
			break;
		}
		if (line->find("\"tree.changed\"") != std::string::npos) ++changed;
	}
	bench::sleepMs(200);
	auto afterRead = daemon.stats();
	slowConn.reset();
	bench::sleepMs(200);
	auto afterClose = daemon.stats();

	std::printf("# slow client: whole-tree subscriber that does not read during %d changes (debug.flood, %d keys, "
	            "1 write per batch)\n", count, keys);
	std::printf("flood: %s in %.2f s\n", answer.contains("result") ? answer["result"].dump().c_str() : answer.dump().c_str(), seconds);
	std::printf("%-40s %10s\n", "qsd RSS", "MiB");
	std::printf("%-40s %10.2f\n", "before (1 idle client)", bench::mib(before.rssKiB));
	std::printf("%-40s %10.2f\n", "slow client subscribed", bench::mib(subscribed.rssKiB));
	std::printf("%-40s %10.2f\n", "peak during the flood (sampled 20 ms)", bench::mib(peak));
	std::printf("%-40s %10.2f\n", "flood done, slow client still not read", bench::mib(afterFlood.rssKiB));
	std::printf("%-40s %10.2f\n", "after the slow client read (resync)", bench::mib(afterRead.rssKiB));
	std::printf("%-40s %10.2f\n", "after the slow client disconnected", bench::mib(afterClose.rssKiB));
	std::printf("%-40s %10.2f\n", "VmHWM (high-water mark)", bench::mib(afterClose.hwmKiB));
	std::printf("slow client then read %zu lines (%zu bytes): %zu tree.changed, %zu tree.resync\n", lines, bytes, changed, resyncs);
	(void)during;
	// Short runs (--quick) may fit in the queue: then every change arrives and no resync is due.
	return lines > 0 ? 0 : 1;
}
