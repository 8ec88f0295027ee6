// Fan-out latency: one change, N subscribers (1, 16, 64, 256) of a real qsd over its socket.
//
// N connections subscribe to /debug/fanout; a writer connection repeatedly sends
// debug.set /debug/fanout/seq = i and this program waits until every subscriber has read the
// tree.changed carrying i. Times are taken on CLOCK_MONOTONIC in this (single-threaded, epoll)
// client: t0 just before the request is written, and for each subscriber the moment the read
// that completed its line returned. Reported per change:
//   send→first : request written → first subscriber has the line (daemon read + dispatch +
//                flush + first subscriber's write + wake-up of this client)
//   send→last  : request written → last subscriber has the line
//   first→last : the fan-out spread (target: p99 ≤ 1 ms with 256 subscribers, docs/performance.md)
//   ready spread: the same spread, each subscriber timed when epoll first reported its socket
//                readable instead of when its line was read. With many subscribers the reader,
//                not qsd, sets the first spread: reading a socket takes it a few µs, more than
//                qsd takes to write one (one io_uring submission for all). So it reads at most
//                kChunk sockets between two epoll_waits, and a socket's readiness is seen within
//                that many reads of its write.
// "qsd CPU" is the daemon's own CPU time per change (from /proc/<pid>/schedstat), which does not
// depend on how busy the machine is: on an idle core, first->last approaches it. "qsd wait" is
// the time qsd was runnable but waiting for a CPU (other load on the machine), per change.
// "per extra sub" is what one more subscriber costs the daemon: (CPU(N) - CPU(1)) / (N - 1),
// against the 1-subscriber row of the same run (target: ≤ 1.5 µs).
// Arguments: subscriber counts to run (default 1 16 64 256; 1 is always run first), --quick.

#include "bench_util.hpp"

#include <sys/epoll.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using bench::json;
using bench::nowNs;
using bench::percentile;

// Sockets read between two epoll_waits: the "ready" times are late by at most this many reads.
constexpr int kChunk = 8;

// Extracts the integer after "value": in a tree.changed line; -1 when absent.
long long valueIn(const std::string& line) {
	auto pos = line.rfind("\"value\":");
	if (pos == std::string::npos) return -1;
	return std::strtoll(line.c_str() + pos + 8, nullptr, 10);
}

} // namespace

int main(int argc, char** argv) {
	bool quick = bench::quickMode(argc, argv);
	std::vector<int> counts{1};
	for (int i = 1; i < argc; ++i)
		if (int n = std::atoi(argv[i]); n > 1) counts.push_back(n);
	if (counts.size() == 1) counts = quick ? std::vector<int>{1, 16} : std::vector<int>{1, 16, 64, 256};
	double cpuOne = 0;

	std::printf("# fan-out: one debug.set, N subscribers of /debug/fanout (real qsd, µs)\n");
	std::printf("%6s %7s | %-26s | %-26s | %-26s | %-22s | %8s %8s %14s %9s\n", "subs", "changes", "send->first p50/p99",
	            "send->last p50/p99/max", "first->last p50/p99/max", "ready spread p50/p99", "qsd CPU", "per sub",
	            "per extra sub", "qsd wait");
	for (int n: counts) {
		bench::Daemon daemon;
		bench::Conn writer(daemon.socket());
		writer.call("debug.set", {{"path", "/debug/fanout"}, {"value", {{"seq", -1}}}});
		std::vector<std::unique_ptr<bench::Conn>> subs;
		for (int i = 0; i < n; ++i) {
			subs.push_back(std::make_unique<bench::Conn>(daemon.socket()));
			bench::subscribe(*subs.back(), {"/debug/fanout"});
		}
		int ep = epoll_create1(EPOLL_CLOEXEC);
		for (int i = 0; i < n; ++i) {
			subs[size_t(i)]->setNonBlocking();
			epoll_event ev{};
			ev.events = EPOLLIN;
			ev.data.u32 = uint32_t(i);
			epoll_ctl(ep, EPOLL_CTL_ADD, subs[size_t(i)]->fd(), &ev);
		}
		int warmup = quick ? 5 : 50;
		int iterations = quick ? 20 : (n <= 16 ? 2000 : (n == 64 ? 1000 : 400));
		std::vector<double> toFirst, toLast, spread, readySpread;
		std::vector<uint64_t> arrived(static_cast<size_t>(n)), ready(static_cast<size_t>(n));
		std::vector<epoll_event> events(static_cast<size_t>(n));
		char buf[16 << 10];
		uint64_t writerId = 1000;
		uint64_t cpuStart = 0, waitStart = 0;
		for (int it = 0; it < warmup + iterations; ++it) {
			if (it == warmup) {
				auto st = daemon.stats();
				cpuStart = st.runtimeNs;
				waitStart = st.waitNs;
			}
			std::string req = json{{"jsonrpc", "2.0"}, {"id", ++writerId}, {"method", "debug.set"},
			                       {"params", {{"path", "/debug/fanout/seq"}, {"value", it}}}}
			                      .dump() +
			                  "\n";
			std::fill(arrived.begin(), arrived.end(), 0);
			std::fill(ready.begin(), ready.end(), 0);
			int remaining = n;
			uint64_t t0 = nowNs();
			writer.send(req);
			while (remaining > 0) {
				int r = epoll_wait(ep, events.data(), n, 5000);
				if (r <= 0) bench::die("timed out waiting for subscribers (" + std::to_string(remaining) + " left)");
				uint64_t seen = nowNs();
				for (int e = 0; e < r; ++e)
					if (auto& at = ready[events[size_t(e)].data.u32]; at == 0) at = seen;
				// Level-triggered: the sockets left unread now are reported again by the next wait.
				r = std::min(r, kChunk);
				for (int e = 0; e < r; ++e) {
					auto idx = events[size_t(e)].data.u32;
					auto& c = *subs[idx];
					for (;;) {
						ssize_t got = ::recv(c.fd(), buf, sizeof buf, 0);
						if (got <= 0) break;
						uint64_t t = nowNs();
						c.buffer().append(buf, size_t(got));
						size_t nl;
						while ((nl = c.buffer().find('\n')) != std::string::npos) {
							std::string line = c.buffer().substr(0, nl);
							c.buffer().erase(0, nl + 1);
							if (valueIn(line) == it && arrived[idx] == 0) {
								arrived[idx] = t;
								--remaining;
							}
						}
					}
				}
			}
			// The writer's answer (sent before the flush) is consumed outside the timed part.
			if (!writer.readLine()) bench::die("no answer to debug.set");
			if (it < warmup) continue;
			uint64_t first = *std::min_element(arrived.begin(), arrived.end());
			uint64_t last = *std::max_element(arrived.begin(), arrived.end());
			toFirst.push_back(double(first - t0) / 1000.0);
			toLast.push_back(double(last - t0) / 1000.0);
			spread.push_back(double(last - first) / 1000.0);
			auto [readyFirst, readyLast] = std::minmax_element(ready.begin(), ready.end());
			readySpread.push_back(double(*readyLast - *readyFirst) / 1000.0);
		}
		auto end = daemon.stats();
		double cpuPerChange = double(end.runtimeNs - cpuStart) / 1000.0 / iterations;
		double waitPerChange = double(end.waitNs - waitStart) / 1000.0 / iterations;
		::close(ep);
		auto cell3 = [](const std::vector<double>& v) {
			char b[64];
			std::snprintf(b, sizeof b, "%.0f / %.0f / %.0f", percentile(v, 50), percentile(v, 99), percentile(v, 100));
			return std::string(b);
		};
		char firstCell[64];
		std::snprintf(firstCell, sizeof firstCell, "%.0f / %.0f", percentile(toFirst, 50), percentile(toFirst, 99));
		if (n == 1) cpuOne = cpuPerChange;
		char extraCell[32] = "-";
		if (n > 1) std::snprintf(extraCell, sizeof extraCell, "%.2f", (cpuPerChange - cpuOne) / (n - 1));
		char readyCell[64];
		std::snprintf(readyCell, sizeof readyCell, "%.0f / %.0f", percentile(readySpread, 50), percentile(readySpread, 99));
		std::printf("%6d %7d | %-26s | %-26s | %-26s | %-22s | %8.0f %8.1f %14s %9.0f\n", n, iterations, firstCell,
		            cell3(toLast).c_str(), cell3(spread).c_str(), readyCell, cpuPerChange, cpuPerChange / n, extraCell,
		            waitPerChange);
		std::fflush(stdout);
	}
	return 0;
}
