#include "log.hpp"

#include "event_loop.hpp"
#include "text.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

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

// Every category's lines: at most kCategoryBurst per kCategoryWindowUs, the rest counted and said
// with the next line let through. The paths a peer can drive at will have limiters of their own
// (Limiter, below); this one bounds what a peer can make any other path log: a service whose name
// comes and goes in a loop, an application registering something in a loop. journald's own rate
// limit, when it is reached, drops every line of the unit for the rest of its interval, the ones
// that matter among them. Debug lines, which are asked for, are not limited.
constexpr size_t kCategoryBurst = 100;
constexpr uint64_t kCategoryWindowUs = 10'000'000;
constexpr size_t kMaxCategories = 64;   // categories are names in the code; a bound all the same
constexpr size_t kMaxMessageBytes = 4096;

struct CategoryLimit {
	std::string category;
	Limiter limiter{kCategoryBurst, kCategoryWindowUs};
};
std::vector<CategoryLimit> limits;

Limiter& limiterOf(std::string_view category) {
	for (auto& l: limits)
		if (l.category == category) return l.limiter;
	if (limits.size() >= kMaxCategories) return limits.back().limiter;
	limits.push_back({std::string(category)});
	return limits.back().limiter;
}

} // namespace

// One line whatever the message holds. Much of it is peers' text (an item's name, a player's
// status, the message of an error a service sent), and journald reads a newline as the end of an
// entry and a "<N>" after it as the next entry's priority: a peer could write lines of its own,
// at any priority. Control characters and bytes that are not UTF-8 (journalctl shows a message
// holding them as a blob) are written as \n, \r, \t or \xNN; trailing white space goes
// (dbus-python ends its errors' messages with a newline); the message is cut at
// kMaxMessageBytes.
std::string oneLine(std::string_view message) {
	while (!message.empty() && (message.back() == '\n' || message.back() == ' ' || message.back() == '\r' || message.back() == '\t'))
		message.remove_suffix(1);
	size_t total = message.size();
	message = cutAtCharacter(message, kMaxMessageBytes);
	std::string out;
	out.reserve(message.size());
	for (size_t i = 0; i < message.size();) {
		auto c = static_cast<unsigned char>(message[i]);
		size_t n = c >= 0x20 && c != 0x7F ? utf8SequenceAt(message, i) : 0;
		if (n > 0) {
			out.append(message.substr(i, n));
			i += n;
			continue;
		}
		if (c == '\n') out += "\\n";
		else if (c == '\r') out += "\\r";
		else if (c == '\t') out += "\\t";
		else out += fmt::format("\\x{:02x}", c);
		++i;
	}
	if (message.size() < total) out += fmt::format("... ({} more bytes)", total - message.size());
	return out;
}

void init() {
	journal = stderrIsJournal();
	tty = isatty(STDERR_FILENO) == 1;
	if (const char* d = std::getenv("QSD_DEBUG"); d && *d && std::strcmp(d, "0") != 0) threshold = Level::Debug;
}

void setVerbose(bool debug) { threshold = debug ? Level::Debug : Level::Info; }

bool enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(threshold); }

void write(Level level, std::string_view category, std::string_view message) {
	if (!enabled(level)) return;
	uint64_t held = 0;
	if (level != Level::Debug && !limiterOf(category).allow(EventLoop::clock(), held)) return;
	auto text = oneLine(message);
	if (held > 0) text += fmt::format(" ({} more lines of {} were not logged: too many)", held, category);
	std::string line;
	if (journal) {
		line = fmt::format("<{}>{}: {}\n", static_cast<int>(level), category, text);
	} else if (tty) {
		std::time_t now = std::time(nullptr);
		char ts[16];
		std::strftime(ts, sizeof ts, "%H:%M:%S", std::localtime(&now));
		line = fmt::format("{} {} {}: {}\n", ts, name(level), category, text);
	} else {
		line = fmt::format("qsd: {}: {}: {}\n", name(level), category, text);
	}
	// One write(2) per line so concurrent writers to the same pipe do not interleave.
	(void)!::write(STDERR_FILENO, line.data(), line.size());
}

std::string heldBack(uint64_t suppressed) {
	return suppressed ? fmt::format(" ({} more lines like it were not logged)", suppressed) : std::string();
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
