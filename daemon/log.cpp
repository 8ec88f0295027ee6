#include "log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>

namespace qsd::log {

namespace {
bool journal = false;
bool tty = false;
Level threshold = Level::Info;

// Under journald, stderr is the stream named by JOURNAL_STREAM (device:inode).
bool stderrIsJournal() {
	const char* js = std::getenv("JOURNAL_STREAM");
	if (!js) return false;
	unsigned long long dev = 0, ino = 0;
	if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
	struct stat st {};
	if (fstat(STDERR_FILENO, &st) < 0) return false;
	return st.st_dev == dev && st.st_ino == ino;
}

const char* name(Level level) {
	switch (level) {
	case Level::Error: return "error";
	case Level::Warning: return "warning";
	case Level::Notice: return "notice";
	case Level::Info: return "info";
	case Level::Debug: return "debug";
	}
	return "";
}
} // namespace

void init() {
	journal = stderrIsJournal();
	tty = isatty(STDERR_FILENO) == 1;
	if (const char* d = std::getenv("QSD_DEBUG"); d && *d && std::strcmp(d, "0") != 0) threshold = Level::Debug;
}

void setVerbose(bool debug) { threshold = debug ? Level::Debug : Level::Info; }

bool enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(threshold); }

void write(Level level, std::string_view category, std::string_view message) {
	if (!enabled(level)) return;
	std::string line;
	if (journal) {
		line = fmt::format("<{}>{}: {}\n", static_cast<int>(level), category, message);
	} else if (tty) {
		std::time_t now = std::time(nullptr);
		char ts[16];
		std::strftime(ts, sizeof ts, "%H:%M:%S", std::localtime(&now));
		line = fmt::format("{} {} {}: {}\n", ts, name(level), category, message);
	} else {
		line = fmt::format("qsd: {}: {}: {}\n", name(level), category, message);
	}
	// One write(2) per line so concurrent writers to the same pipe do not interleave.
	(void)!::write(STDERR_FILENO, line.data(), line.size());
}

bool Limiter::allow(uint64_t nowUs, uint64_t& suppressed) {
	if (nowUs - windowStart_ >= windowUs_ || windowStart_ == 0) {
		windowStart_ = nowUs ? nowUs : 1;
		inWindow_ = 0;
	}
	if (inWindow_ >= burst_) {
		++held_;
		return false;
	}
	++inWindow_;
	suppressed = held_;
	held_ = 0;
	return true;
}

} // namespace qsd::log
