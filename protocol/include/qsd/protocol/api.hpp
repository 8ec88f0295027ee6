#pragma once
// The machine-readable API description: an OpenRPC document whose components include the JSON
// Schema of the tree. Built from protocol/api/*.json at compile time; rpc.discover serves it.

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace qsd::api {

// The whole OpenRPC document, assembled from every fragment in protocol/api/, built at each call
// (about 1.5 MiB of heap: the daemon holds it only while it answers rpc.discover).
[[nodiscard]] nlohmann::json document();

// The same, built once and kept for the life of the process (tests and tools).
[[nodiscard]] const nlohmann::json& openrpc();

// What checkParams needs of the document, built once: every method's name and params, and the
// component schemas they refer to, with only the validation keywords.
[[nodiscard]] const nlohmann::json& checking();

namespace detail {
// checking() as text: made by the build (qsd-api-checking), read by the daemon.
[[nodiscard]] std::string buildCheckingText();
[[nodiscard]] std::string_view checkingText();
} // namespace detail

// One method's name and params (from checking()), or nullptr.
[[nodiscard]] const nlohmann::json* method(std::string_view name);

// Checks `params` against a method's description (an element of checking()["methods"]): every
// required param present, every given one of its schema's type, enum, range, length and shape.
// Throws rpc::RpcException -32602 with data {param, expected}: `param` is dotted inside objects
// ("mode.width"), `at` adds an array index ("volumes[2]"), and `supported` lists an enum's
// values. An optional param given as null counts as absent.
void checkParams(const nlohmann::json& method, const nlohmann::json& params);

} // namespace qsd::api
