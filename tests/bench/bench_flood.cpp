// Flood: 10 000 changes/s for a few seconds with 16 subscribers reading promptly. Prints qsd's
// CPU use (share of one core, from /proc/<pid>/schedstat over the wall time), the share of the
// time it waited for a CPU (load from other work), its RSS, and how
// many notifications and operations each subscriber received (coalescing: changes per
// notification).
//
// The changes are debug.set notifications (no answer, like D-Bus signals) on 100 keys under
// /debug/flood, sent by a paced writer in two shapes:
//   bursts : 10 changes written together every 1 ms (a D-Bus burst: one read, one batch)
//   spaced : 1 change written every 100 µs (the worst case: each change may be its own batch)
// Then, for reference, debug.flood writes changes inside qsd as fast as the loop turns (one
// batch per change) to show the saturation rate with 16 subscribers.

#include "bench_util.hpp"

#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using bench::json;

namespace {

struct Sub {
	std::unique_ptr<bench::Conn> conn;
	uint64_t notifications = 0;
	uint64_t ops = 0;
	bool sawDone = false;
};

size_t countOf(const std::string& s, std::string_view what) {
	size_t n = 0;
	for (auto pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + what.size())) ++n;
	return n;
}

// Reads what is there; counts tree.changed lines and their operations.
void drain(Sub& s, const std::string& doneMarker) {
	char buf[64 << 10];
	for (;;) {
		ssize_t got = ::recv(s.conn->fd(), buf, sizeof buf, 0);
		if (got <= 0) return;
		auto& b = s.conn->buffer();
		b.append(buf, size_t(got));
		size_t start = 0, nl;
		while ((nl = b.find('\n', start)) != std::string::npos) {
			std::string_view line(b.data() + start, nl - start);
			if (line.find("\"tree.changed\"") != std::string_view::npos) {
				++s.notifications;
				s.ops += countOf(std::string(line), "\"op\"");
				if (line.find(doneMarker) != std::string_view::npos) s.sawDone = true;
			}
			start = nl + 1;
		}
		b.erase(0, start);
	}
}

struct Result {
	double seconds;
	uint64_t writes;
	double cpuShare;
	double waitShare;
	long rssPeakKiB;
	double notifPerSub;
	double opsPerSub;
};

Result run(bench::Daemon& daemon, bench::Conn& writer, std::vector<Sub>& subs, int ep, bool spaced, double seconds,
           int rate, int round) {
	for (auto& s: subs) {
		s.notifications = s.ops = 0;
		s.sawDone = false;
	}
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	long periodNs = spaced ? 1'000'000'000L / rate : 1'000'000L;
	int perTick = spaced ? 1 : rate / 1000;
	itimerspec its{{0, periodNs}, {0, periodNs}};
	timerfd_settime(tfd, 0, &its, nullptr);
	epoll_event tev{};
	tev.events = EPOLLIN;
	tev.data.u32 = 0xffffffffu;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);

	uint64_t total = uint64_t(seconds * rate);
	uint64_t sent = 0;
	auto a = daemon.stats();
	uint64_t t0 = bench::nowNs();
	long peak = a.rssKiB;
	uint64_t lastSample = t0;
	std::string marker = "\"/debug/flood/done\"";
	bool doneSent = false;
	std::vector<epoll_event> events(subs.size() + 1);
	for (;;) {
		int r = epoll_wait(ep, events.data(), int(events.size()), 5000);
		if (r <= 0) bench::die("flood: nothing happened for 5 s");
		for (int e = 0; e < r; ++e) {
			auto idx = events[size_t(e)].data.u32;
			if (idx != 0xffffffffu) {
				drain(subs[idx], marker);
				continue;
			}
			uint64_t expirations = 0;
			if (::read(tfd, &expirations, sizeof expirations) != sizeof expirations) continue;
			uint64_t due = std::min<uint64_t>(expirations * uint64_t(perTick), total - sent);
			std::string burst;
			for (uint64_t i = 0; i < due; ++i, ++sent) {
				std::string line = "{\"jsonrpc\":\"2.0\",\"method\":\"debug.set\",\"params\":{\"path\":\"/debug/flood/k" +
				                   std::to_string(sent % 100) + "\",\"value\":" + std::to_string(sent) + "}}\n";
				if (spaced) writer.send(line);
				else burst += line;
			}
			if (!burst.empty()) writer.send(burst);
			if (sent == total && !doneSent) {
				writer.send("{\"jsonrpc\":\"2.0\",\"method\":\"debug.set\",\"params\":{\"path\":\"/debug/flood/done\",\"value\":" +
				            std::to_string(round) + "}}\n");
				doneSent = true;
				its = {};
				timerfd_settime(tfd, 0, &its, nullptr);
			}
		}
		uint64_t now = bench::nowNs();
		if (now - lastSample > 50'000'000) {
			peak = std::max(peak, daemon.stats().rssKiB);
			lastSample = now;
		}
		bool all = doneSent;
		for (auto& s: subs) all = all && s.sawDone;
		if (all) break;
	}
	uint64_t t1 = bench::nowNs();
	auto b = daemon.stats();
	epoll_ctl(ep, EPOLL_CTL_DEL, tfd, nullptr);
	::close(tfd);
	Result res{};
	res.seconds = double(t1 - t0) / 1e9;
	res.writes = total;
	res.cpuShare = double(b.runtimeNs - a.runtimeNs) / double(t1 - t0);
	res.waitShare = double(b.waitNs - a.waitNs) / double(t1 - t0);
	res.rssPeakKiB = std::max(peak, b.rssKiB);
	double n = 0, o = 0;
	for (auto& s: subs) {
		n += double(s.notifications);
		o += double(s.ops);
	}
	res.notifPerSub = n / double(subs.size());
	res.opsPerSub = o / double(subs.size());
	return res;
}

} // namespace

int main(int argc, char** argv) {
	bool quick = bench::quickMode(argc, argv);
	double seconds = quick ? 0.3 : 3.0;
	int rate = 10000;
	int nsubs = 16;

	bench::Daemon daemon;
	bench::Conn writer(daemon.socket());
	{
		json obj = json::object();
		for (int i = 0; i < 100; ++i) obj["k" + std::to_string(i)] = -1;
		writer.call("debug.set", {{"path", "/debug/flood"}, {"value", obj}});
	}
	std::vector<Sub> subs{size_t(nsubs)};
	int ep = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < nsubs; ++i) {
		subs[size_t(i)].conn = std::make_unique<bench::Conn>(daemon.socket());
		bench::subscribe(*subs[size_t(i)].conn, {"/debug/flood"});
		subs[size_t(i)].conn->setNonBlocking();
		epoll_event ev{};
		ev.events = EPOLLIN;
		ev.data.u32 = uint32_t(i);
		epoll_ctl(ep, EPOLL_CTL_ADD, subs[size_t(i)].conn->fd(), &ev);
	}
	bench::sleepMs(100);
	auto base = daemon.stats();

	std::printf("# flood: %d changes/s for %.1f s, %d subscribers of /debug/flood reading promptly, backends off\n", rate,
	            seconds, nsubs);
	std::printf("RSS before: %.2f MiB\n", bench::mib(base.rssKiB));
	std::printf("%-8s %8s %8s | %12s %10s %10s | %14s %12s %14s\n", "shape", "writes", "wall s", "qsd CPU %core", "qsd wait",
	            "RSS peak",
	            "notifs/sub", "ops/sub", "writes/notif");
	int round = 0;
	for (bool spaced: {false, true}) {
		auto r = run(daemon, writer, subs, ep, spaced, seconds, rate, ++round);
		std::printf("%-8s %8llu %8.2f | %11.1f%% %9.1f%% %7.2f MiB | %14.0f %12.0f %14.2f\n", spaced ? "spaced" : "bursts",
		            (unsigned long long)r.writes, r.seconds, r.cpuShare * 100, r.waitShare * 100, bench::mib(r.rssPeakKiB), r.notifPerSub,
		            r.opsPerSub, double(r.writes) / std::max(1.0, r.notifPerSub));
		std::fflush(stdout);
	}

	// Saturation: debug.flood, one batch per change, as fast as qsd's loop turns.
	{
		int count = quick ? 2000 : 10000;
		auto a = daemon.stats();
		for (auto& s: subs) s.notifications = s.ops = 0;
		uint64_t t0 = bench::nowNs();
		writer.sendJson({{"jsonrpc", "2.0"}, {"id", 99}, {"method", "debug.flood"},
		                 {"params", {{"path", "/debug/flood"}, {"count", count}, {"keys", 100}, {"batch", 1}}}});
		writer.setNonBlocking();
		epoll_event wev{};
		wev.events = EPOLLIN;
		wev.data.u32 = 0xfffffffeu;
		epoll_ctl(ep, EPOLL_CTL_ADD, writer.fd(), &wev);
		bool answered = false;
		uint64_t tAnswer = 0;
		std::vector<epoll_event> events(subs.size() + 1);
		long peak = a.rssKiB;
		while (!answered) {
			int r = epoll_wait(ep, events.data(), int(events.size()), 10000);
			if (r <= 0) bench::die("debug.flood: no progress for 10 s");
			for (int e = 0; e < r; ++e) {
				auto idx = events[size_t(e)].data.u32;
				if (idx == 0xfffffffeu) {
					char buf[4096];
					ssize_t got = ::recv(writer.fd(), buf, sizeof buf, 0);
					if (got > 0 && std::string_view(buf, size_t(got)).find("\"id\":99") != std::string_view::npos) {
						answered = true;
						tAnswer = bench::nowNs();
					}
				} else {
					drain(subs[idx], "\"never\"");
				}
			}
			peak = std::max(peak, daemon.stats().rssKiB);
		}
		auto b = daemon.stats();
		// Subscribers may still hold queued lines; drain them briefly.
		for (int i = 0; i < 20; ++i) {
			int r = epoll_wait(ep, events.data(), int(events.size()), 20);
			for (int e = 0; e < r; ++e)
				if (events[size_t(e)].data.u32 < subs.size()) drain(subs[events[size_t(e)].data.u32], "\"never\"");
		}
		double secs = double(tAnswer - t0) / 1e9;
		double n = 0;
		for (auto& s: subs) n += double(s.notifications);
		std::printf("saturation (debug.flood, %d changes, 1 batch each): %.2f s = %.0f batches/s, qsd CPU %.1f%% of a core, RSS "
		            "peak %.2f MiB, notifications/sub %.0f; qsd waited for a CPU %.1f%% of the time\n",
		            count, secs, count / secs, double(b.runtimeNs - a.runtimeNs) / double(tAnswer - t0) * 100, bench::mib(peak),
		            n / double(subs.size()), double(b.waitNs - a.waitNs) / double(tAnswer - t0) * 100);
	}
	::close(ep);
	return 0;
}
