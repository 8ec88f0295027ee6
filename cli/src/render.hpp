#pragma once
// Turning answers into text: values for scripts, `describe` and `status` for people. Pure.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace qsctl {

using json = nlohmann::json;

enum class Style {
	Pretty,    // indented JSON (default for get/call)
	Compact,   // one line of JSON
	Raw,       // strings bare, other scalars as JSON, objects/arrays as one line of JSON
};

// The value as text, with a trailing newline. Invalid UTF-8 never throws (U+FFFD).
[[nodiscard]] std::string formatValue(const json& value, Style style);

// "2026-12-03T08:24:01.507Z" -> seconds since the epoch.
[[nodiscard]] std::optional<double> parseRfc3339(const std::string& text);
// 3725 -> "1h 2m 5s"; 90061 -> "1d 1h 1m".
[[nodiscard]] std::string formatDuration(double seconds);

// `qsctl describe`: every method with its summary, then the events.
[[nodiscard]] std::string describeAll(const json& doc);
// `qsctl describe PREFIX.`: methods whose name starts with the prefix; empty when none.
[[nodiscard]] std::string describePrefix(const json& doc, const std::string& prefix);
// `qsctl describe METHOD`: params, result and errors of one method; nullopt if unknown.
[[nodiscard]] std::optional<std::string> describeMethod(const json& doc, const std::string& name);
// `qsctl describe EVENT`: an event of x-events and its data; nullopt if unknown.
[[nodiscard]] std::optional<std::string> describeEvent(const json& doc, const std::string& name);
// The OpenRPC object of one method, or nullptr.
[[nodiscard]] const json* findMethod(const json& doc, const std::string& name);

// `qsctl status`: the /daemon subtree for people; `now` in seconds since the epoch.
[[nodiscard]] std::string renderStatus(const json& daemon, const json& revision, double now);

// One line describing an RPC error: "MESSAGE (code N): DATA".
[[nodiscard]] std::string describeError(const json& error);

} // namespace qsctl
