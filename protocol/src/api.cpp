#include "qsd/protocol/api.hpp"

#include <string_view>

namespace qsd::api {

using json = nlohmann::json;

const json& checking() {
	// Written at build time (detail::buildCheckingText): the daemon never parses the whole
	// document (about 1.5 MiB of heap, and 370 KB of the binary's pages) to check params.
	static const json doc = json::parse(detail::checkingText());
	return doc;
}

const json* method(std::string_view name) {
	for (const auto& m: checking()["methods"])
		if (m.value("name", "") == name) return &m;
	return nullptr;
}

} // namespace qsd::api
