#pragma once
// Pure argument helpers for qsctl (no I/O), unit-tested on their own.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qsctl {

using json = nlohmann::json;

// A PATH argument as a JSON Pointer. "" and "/" both mean the whole tree (the tree has no
// empty-named key at its root), and a leading '/' may be left out: "daemon/version" is
// "/daemon/version". Anything else is passed through unchanged for the daemon to judge.
[[nodiscard]] std::string normalizePath(std::string_view arg);

// Builds the params of `qsctl call` from --params (a JSON object or array, or empty) and
// KEY=VALUE arguments:
//   key=value    value as JSON when the whole text parses as JSON, else as a string
//   key:=json    value must be JSON (an error otherwise)
//   key==text    value is always the string `text`
// Later keys override earlier ones and --params. On error returns nullopt and sets `error`.
[[nodiscard]] std::optional<json> buildParams(const std::string& paramsOption, bool haveParamsOption,
                                              const std::vector<std::string>& assignments, std::string& error);

// Strict non-negative integer argument ("10", not "10x" or "-1").
[[nodiscard]] std::optional<long long> parseCount(std::string_view text);

} // namespace qsctl
