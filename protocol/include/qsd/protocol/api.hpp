#pragma once
// The machine-readable API description: an OpenRPC document whose components include the JSON
// Schema of the tree. Built from protocol/api/*.json at compile time; rpc.discover serves it.

#include <nlohmann/json.hpp>

namespace qsd::api {

// The whole OpenRPC document, assembled from every fragment in protocol/api/.
[[nodiscard]] const nlohmann::json& openrpc();

// One method's description, or nullptr.
[[nodiscard]] const nlohmann::json* method(std::string_view name);

// Checks `params` against a method's description (an element of openrpc()["methods"]): every
// required param present, every given one of its schema's type, enum, range, length and shape.
// Throws rpc::RpcException -32602 with data {param, expected}: `param` is dotted inside objects
// ("mode.width"), `at` adds an array index ("volumes[2]"), and `supported` lists an enum's
// values. An optional param given as null counts as absent.
void checkParams(const nlohmann::json& method, const nlohmann::json& params);

} // namespace qsd::api
