// Checks a request's params against the method's description in the API document, so every
// backend method refuses a malformed request the same way and before anything else (its
// service's availability, an id lookup). The subset of JSON Schema the descriptions use:
// type (one or several), enum, minimum/maximum/exclusiveMinimum/exclusiveMaximum,
// minLength/maxLength, items/minItems/maxItems, properties/required of an object, oneOf/anyOf
// and local $refs. Debian 12 has no JSON Schema validator for nlohmann::json; the tests check
// the API document itself with Python's jsonschema.

#include "qsd/protocol/api.hpp"
#include "qsd/protocol/jsonrpc.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace qsd::api {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::RpcException;

namespace {

// `root` is the method's description, which holds the schemas its params refer to.
const json& resolve(const json& schema, const json& root) {
	const json* s = &schema;
	// A $ref chain is short; the bound only guards against a cycle in a broken document.
	for (int i = 0; i < 8 && s->is_object() && s->contains("$ref"); ++i) {
		const auto& ref = (*s)["$ref"];
		if (!ref.is_string() || ref.get<std::string>().rfind("#", 0) != 0) break;
		s = &root.at(json::json_pointer(ref.get<std::string>().substr(1)));
	}
	return *s;
}

bool integral(const json& v) {
	if (v.is_number_integer()) return true;
	if (!v.is_number_float()) return false;
	double d = v.get<double>();
	return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15;
}

bool hasType(const json& v, const std::string& type) {
	if (type == "string") return v.is_string();
	if (type == "boolean") return v.is_boolean();
	if (type == "integer") return integral(v);
	if (type == "number") return v.is_number();
	if (type == "object") return v.is_object();
	if (type == "array") return v.is_array();
	if (type == "null") return v.is_null();
	return true;
}

std::string article(const std::string& type) {
	if (type == "integer" || type == "object" || type == "array") return "an " + type;
	if (type == "null") return "null";
	return "a " + type;
}

std::string typePhrase(const json& type) {
	if (type.is_string()) return article(type.get<std::string>());
	std::string out;
	for (size_t i = 0; i < type.size(); ++i) {
		if (i) out += i + 1 == type.size() ? " or " : ", ";
		out += article(type[i].get<std::string>());
	}
	return out;
}

std::string number(double d) {
	if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(int64_t(d));
	return json(d).dump();
}

struct Failure {
	std::string path;       // "volumes[2]", "mode.width"
	std::string expected;
	json supported = nullptr;   // the values an enum allows
};

// Returns the first failure, or nothing.
std::optional<Failure> check(const json& schemaRef, const json& v, const std::string& path, const json& root);

std::optional<Failure> checkOneOf(const json& alternatives, const json& v, const std::string& path, const json& root) {
	std::optional<Failure> first;
	std::string expected;
	json supported = nullptr;
	for (const auto& alt: alternatives) {
		auto f = check(alt, v, path, root);
		if (!f) return std::nullopt;
		if (!first) first = f;
		expected += (expected.empty() ? "" : " or ") + f->expected;
		if (!f->supported.is_null()) supported = f->supported;
	}
	if (!first) return std::nullopt;
	return Failure{path, expected, supported};
}

std::optional<Failure> check(const json& schemaRef, const json& v, const std::string& path, const json& root) {
	const json& s = resolve(schemaRef, root);
	if (!s.is_object()) return std::nullopt;
	for (const char* key: {"oneOf", "anyOf"})
		if (auto it = s.find(key); it != s.end() && it->is_array()) return checkOneOf(*it, v, path, root);

	if (auto t = s.find("type"); t != s.end()) {
		bool ok = false;
		if (t->is_string()) ok = hasType(v, t->get<std::string>());
		else if (t->is_array())
			for (const auto& one: *t) ok = ok || (one.is_string() && hasType(v, one.get<std::string>()));
		if (!ok) return Failure{path, typePhrase(*t)};
	}
	if (v.is_null()) return std::nullopt;

	if (auto e = s.find("enum"); e != s.end() && e->is_array()) {
		bool found = false;
		for (const auto& x: *e) found = found || x == v;
		if (!found) {
			std::string list;
			for (const auto& x: *e) {
				if (x.is_null()) continue;
				list += (list.empty() ? "" : ", ") + x.dump();
			}
			return Failure{path, "one of " + list, *e};
		}
	}
	if (v.is_number()) {
		double d = v.get<double>();
		auto lo = s.find("minimum"), hi = s.find("maximum");
		auto xlo = s.find("exclusiveMinimum"), xhi = s.find("exclusiveMaximum");
		bool bad = (lo != s.end() && d < lo->get<double>()) || (hi != s.end() && d > hi->get<double>()) ||
		           (xlo != s.end() && d <= xlo->get<double>()) || (xhi != s.end() && d >= xhi->get<double>());
		if (bad) {
			std::string what = integral(v) && s.value("type", json()) == "integer" ? "an integer" : "a number";
			std::string range;
			if (lo != s.end()) range += " ≥ " + number(lo->get<double>());
			if (xlo != s.end()) range += " > " + number(xlo->get<double>());
			if (hi != s.end()) range += std::string(range.empty() ? "" : " and") + " ≤ " + number(hi->get<double>());
			if (xhi != s.end()) range += std::string(range.empty() ? "" : " and") + " < " + number(xhi->get<double>());
			return Failure{path, what + range};
		}
	}
	if (v.is_string()) {
		// Lengths in code points, as JSON Schema counts them.
		size_t n = 0;
		for (unsigned char c: v.get_ref<const std::string&>()) n += (c & 0xC0) != 0x80;
		auto lo = s.find("minLength"), hi = s.find("maxLength");
		if (lo != s.end() && n < lo->get<size_t>()) {
			return Failure{path, lo->get<size_t>() == 1 ? "a non-empty string"
			                                           : "a string of at least " + std::to_string(lo->get<size_t>()) + " characters"};
		}
		if (hi != s.end() && n > hi->get<size_t>())
			return Failure{path, "a string of at most " + std::to_string(hi->get<size_t>()) + " characters"};
	}
	if (v.is_array()) {
		auto lo = s.find("minItems"), hi = s.find("maxItems");
		if (lo != s.end() && v.size() < lo->get<size_t>())
			return Failure{path, "an array of at least " + std::to_string(lo->get<size_t>()) + " items"};
		if (hi != s.end() && v.size() > hi->get<size_t>())
			return Failure{path, "an array of at most " + std::to_string(hi->get<size_t>()) + " items"};
		if (auto items = s.find("items"); items != s.end())
			for (size_t i = 0; i < v.size(); ++i)
				if (auto f = check(*items, v[i], path + "[" + std::to_string(i) + "]", root)) return f;
	}
	if (v.is_object()) {
		if (auto req = s.find("required"); req != s.end() && req->is_array())
			for (const auto& name: *req)
				if (name.is_string() && !v.contains(name.get<std::string>())) {
					const json* sub = nullptr;
					if (auto props = s.find("properties"); props != s.end() && props->contains(name.get<std::string>()))
						sub = &(*props)[name.get<std::string>()];
					auto expected = sub && resolve(*sub, root).contains("type") ? typePhrase(resolve(*sub, root)["type"]) : std::string("present");
					return Failure{path + "." + name.get<std::string>(), expected};
				}
		if (auto props = s.find("properties"); props != s.end() && props->is_object())
			for (const auto& [name, sub]: props->items())
				if (auto it = v.find(name); it != v.end())
					if (auto f = check(sub, *it, path + "." + name, root)) return f;
		if (auto extra = s.find("additionalProperties"); extra != s.end() && extra->is_object()) {
			const json* props = s.contains("properties") ? &s["properties"] : nullptr;
			for (const auto& [name, value]: v.items())
				if (!props || !props->contains(name))
					if (auto f = check(*extra, value, path + "." + name, root)) return f;
		}
	}
	return std::nullopt;
}

} // namespace

void checkParams(const json& method, const json& params) {
	if (!params.is_object())
		throw RpcException(ErrorCode::InvalidParams, "Invalid params: params must be an object",
		                   {{"param", "params"}, {"expected", "an object"}});
	static const json none = json::object();
	const auto declaredParams = method.find("params");
	if (declaredParams == method.end() || !declaredParams->is_array()) return;
	for (const auto& p: *declaredParams) {
		const auto name = p.value("name", "");
		const json& declared = p.contains("schema") ? p["schema"] : none;
		auto it = params.find(name);
		// An optional param given as null is absent, as the handlers' Params::opt* read it.
		bool absent = it == params.end() || (it->is_null() && !p.value("required", false));
		if (absent) {
			if (!p.value("required", false)) continue;
			const json& schema = resolve(declared, method);
			std::string expected = schema.contains("type") ? typePhrase(schema["type"]) : "present";
			throw RpcException(ErrorCode::InvalidParams, "Invalid params: '" + name + "' must be " + expected,
			                   {{"param", name}, {"expected", expected}});
		}
		if (auto f = check(declared, *it, name, method)) {
			// `param` names the member, dotted inside objects ("mode.height", as the handlers'
			// own checks name nested params); `at` adds the array index when there is one.
			std::string member;
			for (size_t i = 0; i < f->path.size(); ++i) {
				if (f->path[i] == '[') i = f->path.find(']', i);
				else member += f->path[i];
				if (i == std::string::npos) break;
			}
			json data = {{"param", member}, {"expected", f->expected}};
			if (f->path != member) data["at"] = f->path;
			if (!f->supported.is_null()) data["supported"] = f->supported;
			throw RpcException(ErrorCode::InvalidParams, "Invalid params: '" + f->path + "' must be " + f->expected,
			                   std::move(data));
		}
	}
}

} // namespace qsd::api
