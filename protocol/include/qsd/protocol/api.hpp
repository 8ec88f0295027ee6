#pragma once
// The machine-readable API description: an OpenRPC document whose components include the JSON
// Schema of the tree. Built from protocol/api/*.json at compile time; rpc.discover serves it.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qsd::api {

// The whole OpenRPC document, assembled from every fragment in protocol/api/, built at each call
// (about 1.5 MiB of heap: the daemon holds it only while it answers rpc.discover).
[[nodiscard]] nlohmann::json document();

// The same, built once and kept for the life of the process (tests and tools).
[[nodiscard]] const nlohmann::json& openrpc();

namespace detail {
// Each method's description as checkParams reads it (see method()), as text: made by the build
// (qsd-api-checking), sorted by name, read by the daemon.
struct CheckingText {
	std::string_view name;
	std::string_view text;
};
[[nodiscard]] std::vector<std::pair<std::string, std::string>> buildCheckingTexts();
[[nodiscard]] std::span<const CheckingText> checkingTexts();
// How many method descriptions this process has parsed so far.
[[nodiscard]] size_t parsedMethods();
} // namespace detail

// Whether the API description has the method; parses nothing.
[[nodiscard]] bool hasMethod(std::string_view name);

// What checkParams needs of one method: its name and params, and under "components" the schemas
// they refer to (directly or through other schemas), with only the validation keywords; or
// nullptr. Parsed at the first call for that method and kept: a daemon holds the descriptions of
// the methods its clients called, not of every method (all of them: about 120 KiB of heap).
[[nodiscard]] const nlohmann::json* method(std::string_view name);

// Checks `params` against a method's description (from method(); its $refs resolve in it): every
// required param present, every given one of its schema's type, enum, range, length and shape.
// Throws rpc::RpcException -32602 with data {param, expected}: `param` is dotted inside objects
// ("mode.width"), `at` adds an array index ("volumes[2]"), and `supported` lists an enum's
// values. An optional param given as null counts as absent.
void checkParams(const nlohmann::json& method, const nlohmann::json& params);

} // namespace qsd::api
