#pragma once
// The machine-readable API description: an OpenRPC document whose components include the JSON
// Schema of the tree. Built from protocol/api/*.json at compile time; rpc.discover serves it.

#include <nlohmann/json.hpp>

namespace qsd::api {

// The whole OpenRPC document, assembled from every fragment in protocol/api/.
[[nodiscard]] const nlohmann::json& openrpc();

// One method's description, or nullptr.
[[nodiscard]] const nlohmann::json* method(std::string_view name);

} // namespace qsd::api
