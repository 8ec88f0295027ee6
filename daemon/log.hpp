#pragma once
// Logging: "<N>" priority prefixes when stderr goes to journald (JOURNAL_STREAM matches it),
// plain "qsd: level: category: message" lines on a terminal or a pipe.

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qsd::log {

enum class Level { Error = 3, Warning = 4, Notice = 5, Info = 6, Debug = 7 };

void init();                      // reads JOURNAL_STREAM and QSD_DEBUG once
void setVerbose(bool debug);
[[nodiscard]] bool enabled(Level level);
// Writes one line: the message as oneLine() gives it; at most 100 lines per category in 10 s
// (Debug lines aside), the rest counted and said with the next line let through.
void write(Level level, std::string_view category, std::string_view message);
// The message as one line: control characters and bytes that are not UTF-8 as \n, \r, \t or
// \xNN, trailing white space dropped, cut after 4096 bytes (with how many more there were).
[[nodiscard]] std::string oneLine(std::string_view message);

// At a level chosen at run time (Debug lines are formatted only when they are written).
template <typename... Args>
void at(Level level, std::string_view cat, fmt::format_string<Args...> fmt, Args&&... args) {
	if (level != Level::Debug || enabled(Level::Debug)) write(level, cat, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void error(std::string_view cat, fmt::format_string<Args...> fmt, Args&&... args) {
	write(Level::Error, cat, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void warning(std::string_view cat, fmt::format_string<Args...> fmt, Args&&... args) {
	write(Level::Warning, cat, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void notice(std::string_view cat, fmt::format_string<Args...> fmt, Args&&... args) {
	write(Level::Notice, cat, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void info(std::string_view cat, fmt::format_string<Args...> fmt, Args&&... args) {
	write(Level::Info, cat, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(std::string_view cat, fmt::format_string<Args...> fmt, Args&&... args) {
	if (enabled(Level::Debug)) write(Level::Debug, cat, fmt::format(fmt, std::forward<Args>(args)...));
}

// At most `burst` lines per `windowUs`, for lines a peer can cause at will (a registration, a
// node without volume controls); the lines held back are counted and said with the next line
// let through ("... (and 1234 more like it)").
class Limiter {
public:
	Limiter(size_t burst, uint64_t windowUs): burst_(burst), windowUs_(windowUs) {}
	// True when a line may be logged now; `suppressed` is then how many were held back before.
	bool allow(uint64_t nowUs, uint64_t& suppressed);

private:
	size_t burst_;
	uint64_t windowUs_;
	uint64_t windowStart_ = 0;
	size_t inWindow_ = 0;
	uint64_t held_ = 0;
};

// " (N more lines like it were not logged)", or nothing when `suppressed` is 0.
[[nodiscard]] std::string heldBack(uint64_t suppressed);

} // namespace qsd::log
