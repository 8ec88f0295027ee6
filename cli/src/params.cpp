#include "params.hpp"

#include <charconv>

namespace qsctl {

std::string normalizePath(std::string_view arg) {
	if (arg.empty() || arg == "/") return {};
	if (arg.front() != '/') return "/" + std::string(arg);
	return std::string(arg);
}

static std::optional<json> parseJson(std::string_view text) {
	auto j = json::parse(text.begin(), text.end(), nullptr, false);
	if (j.is_discarded()) return std::nullopt;
	return j;
}

std::optional<json> buildParams(const std::string& paramsOption, bool haveParamsOption,
                                const std::vector<std::string>& assignments, std::string& error) {
	json params;   // null: no params member at all
	if (haveParamsOption) {
		auto p = parseJson(paramsOption);
		if (!p || !(p->is_object() || p->is_array())) {
			error = "--params must be a JSON object or array";
			return std::nullopt;
		}
		params = std::move(*p);
	}
	if (!assignments.empty()) {
		if (params.is_array()) {
			error = "KEY=VALUE arguments cannot be combined with positional --params (an array)";
			return std::nullopt;
		}
		if (params.is_null()) params = json::object();
	}
	for (const auto& arg: assignments) {
		auto eq = arg.find('=');
		if (eq == std::string::npos) {
			error = "expected KEY=VALUE, KEY:=JSON or KEY==STRING, got '" + arg + "'";
			return std::nullopt;
		}
		std::string key = arg.substr(0, eq);
		std::string_view value = std::string_view(arg).substr(eq + 1);
		enum { Auto, Json, String } kind = Auto;
		if (!key.empty() && key.back() == ':') {
			key.pop_back();
			kind = Json;
		} else if (!value.empty() && value.front() == '=') {
			value.remove_prefix(1);
			kind = String;
		}
		if (key.empty()) {
			error = "empty key in '" + arg + "'";
			return std::nullopt;
		}
		if (kind == String) {
			params[key] = std::string(value);
			continue;
		}
		auto parsed = parseJson(value);
		if (parsed) {
			params[key] = std::move(*parsed);
		} else if (kind == Json) {
			error = "the value of '" + key + "' is not valid JSON: " + std::string(value);
			return std::nullopt;
		} else {
			params[key] = std::string(value);
		}
	}
	return params;
}

std::optional<long long> parseCount(std::string_view text) {
	long long v = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
	if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
	return v;
}

} // namespace qsctl
