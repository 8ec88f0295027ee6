#include "qsd/protocol/api.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace qsd::api {
namespace detail {
const std::vector<std::pair<std::string_view, std::string_view>>& fragments();
}

using json = nlohmann::json;

// core.json is the base document; every other fragment (one per domain) contributes
// "methods", "components" (schemas, errors), "x-events" and "x-tree" (its domain's entry in the
// tree schema). Keeping one fragment per backend lets each backend own its description.
static json build() {
	json doc;
	std::vector<json> others;
	for (const auto& [name, text]: detail::fragments()) {
		auto fragment = json::parse(text);
		if (name == "core.json") doc = std::move(fragment);
		else others.push_back(std::move(fragment));
	}
	if (doc.is_null()) throw std::logic_error("protocol/api/core.json is missing");
	auto& treeProps = doc["components"]["schemas"]["Tree"]["properties"];
	for (auto& fragment: others) {
		for (auto& m: fragment.value("methods", json::array())) doc["methods"].push_back(std::move(m));
		for (auto& e: fragment.value("x-events", json::array())) doc["x-events"].push_back(std::move(e));
		if (fragment.contains("components")) {
			for (auto& [section, entries]: fragment["components"].items())
				for (auto& [key, value]: entries.items()) doc["components"][section][key] = std::move(value);
		}
		// A named copy: items() of the temporary from value() would outlive it (use after scope).
		const json tree = fragment.value("x-tree", json::object());
		for (const auto& [domain, schema]: tree.items()) treeProps[domain] = schema;
	}
	return doc;
}

const json& openrpc() {
	static const json doc = build();
	return doc;
}

const json* method(std::string_view name) {
	for (const auto& m: openrpc()["methods"])
		if (m.value("name", "") == name) return &m;
	return nullptr;
}

} // namespace qsd::api
