// The whole API document, assembled from the fragments embedded at build time, and its
// compact part for checking params (written into the build by qsd-api-checking, see
// protocol/CMakeLists.txt).

#include "qsd/protocol/api.hpp"

#include <algorithm>
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

namespace {

// What checkParams reads of a schema: the validation keywords (no descriptions, examples or titles).
json compactSchema(const json& schema, std::vector<std::string>& refs) {
	if (!schema.is_object()) return schema;
	json out = json::object();
	for (const auto& [key, value]: schema.items()) {
		if (key == "$ref") {
			if (value.is_string()) refs.push_back(value.get<std::string>());
			out[key] = value;
		} else if (key == "items" || key == "additionalProperties") {
			out[key] = compactSchema(value, refs);
		} else if (key == "properties" && value.is_object()) {
			auto& props = out[key] = json::object();
			for (const auto& [name, sub]: value.items()) props[name] = compactSchema(sub, refs);
		} else if ((key == "oneOf" || key == "anyOf") && value.is_array()) {
			auto& alternatives = out[key] = json::array();
			for (const auto& sub: value) alternatives.push_back(compactSchema(sub, refs));
		} else if (key == "type" || key == "enum" || key == "minimum" || key == "maximum" || key == "exclusiveMinimum" ||
		           key == "exclusiveMaximum" || key == "minLength" || key == "maxLength" || key == "minItems" ||
		           key == "maxItems" || key == "required") {
			out[key] = value;
		}
	}
	return out;
}

// One description per method: its name and params, and the component schemas its params refer
// to, directly or through other schemas (at the same JSON Pointers, so its $refs resolve in it as
// in the whole document), with only what checkParams reads. The whole document is about 1.5 MiB
// of heap once parsed; a daemon parses a method's description at the method's first call, and
// builds the whole document only while it answers rpc.discover.
std::vector<std::pair<std::string, std::string>> buildChecking() {
	const json doc = build();
	std::vector<std::pair<std::string, std::string>> out;
	for (const auto& m: doc["methods"]) {
		std::vector<std::string> refs;
		json method = {{"name", m.value("name", "")}};
		if (auto params = m.find("params"); params != m.end() && params->is_array()) {
			auto& list = method["params"] = json::array();
			for (const auto& p: *params) {
				json param = {{"name", p.value("name", "")}};
				if (p.contains("required")) param["required"] = p["required"];
				if (p.contains("schema")) param["schema"] = compactSchema(p["schema"], refs);
				list.push_back(std::move(param));
			}
		}
		while (!refs.empty()) {
			auto ref = std::move(refs.back());
			refs.pop_back();
			if (ref.rfind("#/", 0) != 0) continue;
			json::json_pointer at(ref.substr(1));
			if (method.contains(at) || !doc.contains(at)) continue;
			method[at] = compactSchema(doc.at(at), refs);
		}
		out.emplace_back(method["name"].get<std::string>(), method.dump());
	}
	std::sort(out.begin(), out.end());
	return out;
}

} // namespace

std::vector<std::pair<std::string, std::string>> detail::buildCheckingTexts() { return buildChecking(); }

json document() { return build(); }

const json& openrpc() {
	static const json doc = build();
	return doc;
}

} // namespace qsd::api
