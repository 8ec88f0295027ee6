#pragma once
// Shared pieces of the benchmarks: start a private qsd, talk NDJSON to it, read /proc figures,
// percentiles. Benchmarks print figures; nothing here asserts a time.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#ifndef QSD_BENCH_QSD_BIN
#define QSD_BENCH_QSD_BIN "qsd"
#endif

namespace bench {

using json = nlohmann::json;

inline uint64_t nowNs() {
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

inline void sleepMs(double ms) {
	timespec ts{time_t(ms / 1000), long(std::fmod(ms, 1000.0) * 1e6)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

[[noreturn]] inline void die(const std::string& what) {
	std::fprintf(stderr, "bench: %s\n", what.c_str());
	std::exit(1);
}

// --quick (or QSD_BENCH_QUICK=1): tiny sizes, for the smoke run under ctest.
inline bool quickMode(int argc, char** argv) {
	for (int i = 1; i < argc; ++i)
		if (std::string_view(argv[i]) == "--quick") return true;
	const char* e = std::getenv("QSD_BENCH_QUICK");
	return e && *e && std::string_view(e) != "0";
}

// Percentile by nearest rank over a copy.
inline double percentile(std::vector<double> v, double p) {
	if (v.empty()) return 0;
	std::sort(v.begin(), v.end());
	size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
	if (rank == 0) rank = 1;
	return v[std::min(rank, v.size()) - 1];
}

struct ProcStats {
	long rssKiB = 0;
	long hwmKiB = 0;
	long voluntary = 0;
	long nonvoluntary = 0;
	long threads = 0;
	uint64_t cpuTicks = 0;     // utime + stime, in clock ticks
	uint64_t runtimeNs = 0;    // /proc/<pid>/schedstat: time spent on a CPU
	uint64_t waitNs = 0;       // /proc/<pid>/schedstat: time runnable but waiting for a CPU (load)
};

inline ProcStats readProc(pid_t pid) {
	ProcStats s;
	std::ifstream status("/proc/" + std::to_string(pid) + "/status");
	std::string line;
	auto field = [&](const char* name, long& out) {
		size_t n = std::strlen(name);
		if (line.compare(0, n, name) == 0) out = std::strtol(line.c_str() + n, nullptr, 10);
	};
	while (std::getline(status, line)) {
		field("VmRSS:", s.rssKiB);
		field("VmHWM:", s.hwmKiB);
		field("voluntary_ctxt_switches:", s.voluntary);
		field("nonvoluntary_ctxt_switches:", s.nonvoluntary);
		field("Threads:", s.threads);
	}
	std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
	std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
	// Fields after the command name (which may hold spaces) start after the last ')'.
	auto close = all.rfind(')');
	if (close != std::string::npos) {
		std::istringstream rest(all.substr(close + 2));
		std::vector<std::string> f;
		std::string w;
		while (rest >> w) f.push_back(w);
		// f[0] is field 3 (state); utime is field 14, stime field 15.
		if (f.size() > 13) s.cpuTicks = std::stoull(f[11]) + std::stoull(f[12]);
	}
	std::ifstream sched("/proc/" + std::to_string(pid) + "/schedstat");
	sched >> s.runtimeNs >> s.waitNs;
	return s;
}

inline double mib(long kib) { return double(kib) / 1024.0; }

// A qsd started for one benchmark: no backends, debug API on, its socket in a fresh temp dir.
class Daemon {
public:
	explicit Daemon(std::vector<std::string> extra = {"--backends=", "--debug-api"}) {
		// The socket path must fit in sockaddr_un, so a short temporary directory.
		std::string tmpl = std::filesystem::temp_directory_path().string() + "/qsd-bench-XXXXXX";
		if (!mkdtemp(tmpl.data())) die("mkdtemp failed");
		dir_ = tmpl;
		socket_ = dir_ + "/qsd.sock";
		const char* envBin = std::getenv("QSD_BIN");
		std::string bin = envBin && *envBin ? envBin : QSD_BENCH_QSD_BIN;
		std::vector<std::string> args{bin, "--socket", socket_};
		args.insert(args.end(), extra.begin(), extra.end());
		pid_ = fork();
		if (pid_ < 0) die("fork failed");
		if (pid_ == 0) {
			// A benchmark that dies (bench::die exits without destructors) takes its qsd along.
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			int log = ::open((dir_ + "/qsd.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (log >= 0) {
				dup2(log, 2);
				dup2(log, 1);
			}
			// No systemd watchdog or notify socket inherited from whoever runs the benchmark.
			unsetenv("WATCHDOG_USEC");
			unsetenv("WATCHDOG_PID");
			unsetenv("NOTIFY_SOCKET");
			unsetenv("LISTEN_FDS");
			unsetenv("LISTEN_PID");
			std::vector<char*> argv;
			for (auto& a: args) argv.push_back(a.data());
			argv.push_back(nullptr);
			execv(argv[0], argv.data());
			std::fprintf(stderr, "exec %s: %s\n", argv[0], std::strerror(errno));
			_exit(127);
		}
		// Ready when the socket accepts a connection.
		for (int i = 0; i < 500; ++i) {
			int status = 0;
			if (waitpid(pid_, &status, WNOHANG) == pid_) {
				pid_ = -1;
				die("qsd exited during start-up (log: " + dir_ + "/qsd.log)");
			}
			int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			sockaddr_un addr{};
			addr.sun_family = AF_UNIX;
			std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_.c_str());
			bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
			::close(fd);
			if (ok) return;
			sleepMs(10);
		}
		die("qsd did not listen within 5 s");
	}
	~Daemon() {
		if (pid_ > 0) {
			kill(pid_, SIGTERM);
			int status = 0;
			for (int i = 0; i < 300 && waitpid(pid_, &status, WNOHANG) == 0; ++i) sleepMs(10);
			if (waitpid(pid_, &status, WNOHANG) == 0) {
				kill(pid_, SIGKILL);
				waitpid(pid_, &status, 0);
			}
		}
		::unlink(socket_.c_str());
		::unlink((dir_ + "/qsd.log").c_str());
		::rmdir(dir_.c_str());
	}
	Daemon(const Daemon&) = delete;
	Daemon& operator=(const Daemon&) = delete;

	[[nodiscard]] pid_t pid() const { return pid_; }
	[[nodiscard]] const std::string& socket() const { return socket_; }
	[[nodiscard]] ProcStats stats() const { return readProc(pid_); }

private:
	std::string dir_;
	std::string socket_;
	pid_t pid_ = -1;
};

// One NDJSON connection. Blocking helpers for set-up; the fd can be made non-blocking and put
// in an epoll set by the benchmark for the measured part.
class Conn {
public:
	explicit Conn(const std::string& path) {
		fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
		if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
			die("connect " + path + ": " + std::strerror(errno));
	}
	~Conn() {
		if (fd_ >= 0) ::close(fd_);
	}
	Conn(const Conn&) = delete;
	Conn& operator=(const Conn&) = delete;

	[[nodiscard]] int fd() const { return fd_; }
	std::string& buffer() { return buf_; }

	void send(std::string_view data) {
		while (!data.empty()) {
			ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EINTR) continue;
				if (errno == EAGAIN) {
					pollfd p{fd_, POLLOUT, 0};
					poll(&p, 1, 1000);
					continue;
				}
				die(std::string("send: ") + std::strerror(errno));
			}
			data.remove_prefix(size_t(n));
		}
	}
	void sendJson(const json& message) { send(message.dump() + "\n"); }

	// Reads one line; nullopt on timeout or EOF.
	std::optional<std::string> readLine(int timeoutMs = 5000) {
		for (;;) {
			auto nl = buf_.find('\n');
			if (nl != std::string::npos) {
				std::string line = buf_.substr(0, nl);
				buf_.erase(0, nl + 1);
				return line;
			}
			pollfd p{fd_, POLLIN, 0};
			int r = poll(&p, 1, timeoutMs);
			if (r <= 0) return std::nullopt;
			char tmp[64 << 10];
			ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
			if (n <= 0) return std::nullopt;
			buf_.append(tmp, size_t(n));
		}
	}

	// A request; returns its result, skipping notifications. Dies on an error reply.
	json call(const std::string& method, json params = json::object()) {
		auto id = nextId_++;
		sendJson({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
		for (;;) {
			auto line = readLine(30000);
			if (!line) die("no answer to " + method);
			auto msg = json::parse(*line);
			if (!msg.contains("id") || msg["id"] != id) continue;
			if (msg.contains("error")) die(method + " failed: " + msg["error"].dump());
			return msg["result"];
		}
	}

	void setNonBlocking() { fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK); }

private:
	int fd_ = -1;
	std::string buf_;
	uint64_t nextId_ = 1;
};

inline json subscribe(Conn& c, std::vector<std::string> paths) { return c.call("tree.subscribe", {{"paths", std::move(paths)}}); }

// Fills /debug/<name> with `leaves` numbers in one batch (objects of 10 leaves, like devices).
inline void populate(Conn& c, const std::string& name, int leaves) {
	json obj = json::object();
	for (int i = 0; i < leaves; ++i) obj["o" + std::to_string(i / 10)]["p" + std::to_string(i % 10)] = i;
	c.call("debug.set", {{"path", "/debug/" + name}, {"value", obj}});
}

} // namespace bench
