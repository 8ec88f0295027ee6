#include "variant.hpp"

namespace qsd::dbus {

using json = nlohmann::json;

namespace {
template <typename T>
std::optional<T> tryGet(const sdbus::Variant& v) {
	try {
		if (v.containsValueOfType<T>()) return v.get<T>();
	} catch (const sdbus::Error&) {
	}
	return std::nullopt;
}
} // namespace

std::optional<bool> asBool(const sdbus::Variant& v) { return tryGet<bool>(v); }

std::optional<int64_t> asInt(const sdbus::Variant& v) {
	if (auto x = tryGet<int32_t>(v)) return *x;
	if (auto x = tryGet<uint32_t>(v)) return *x;
	if (auto x = tryGet<int64_t>(v)) return *x;
	if (auto x = tryGet<uint64_t>(v)) return int64_t(*x);
	if (auto x = tryGet<uint8_t>(v)) return *x;
	if (auto x = tryGet<int16_t>(v)) return *x;
	if (auto x = tryGet<uint16_t>(v)) return *x;
	return std::nullopt;
}

std::optional<uint64_t> asUint(const sdbus::Variant& v) {
	auto x = asInt(v);
	if (!x || *x < 0) {
		if (auto u = tryGet<uint64_t>(v)) return *u;
		return std::nullopt;
	}
	return uint64_t(*x);
}

std::optional<double> asDouble(const sdbus::Variant& v) {
	if (auto x = tryGet<double>(v)) return *x;
	if (auto x = asInt(v)) return double(*x);
	return std::nullopt;
}

std::optional<std::string> asString(const sdbus::Variant& v) {
	if (auto x = tryGet<std::string>(v)) return *x;
	if (auto x = tryGet<sdbus::ObjectPath>(v)) return std::string(*x);
	if (auto x = tryGet<sdbus::Signature>(v)) return std::string(*x);
	return std::nullopt;
}

std::optional<std::vector<std::string>> asStrings(const sdbus::Variant& v) {
	if (auto x = tryGet<std::vector<std::string>>(v)) return *x;
	if (auto x = tryGet<std::vector<sdbus::ObjectPath>>(v)) return std::vector<std::string>(x->begin(), x->end());
	return std::nullopt;
}

std::optional<std::vector<uint8_t>> asBytes(const sdbus::Variant& v) { return tryGet<std::vector<uint8_t>>(v); }

const sdbus::Variant* find(const Properties& props, const std::string& key) {
	auto it = props.find(key);
	return it == props.end() ? nullptr : &it->second;
}

json variantToJson(const sdbus::Variant& v) {
	if (auto x = tryGet<bool>(v)) return *x;
	if (auto x = tryGet<double>(v)) return *x;
	if (auto x = asInt(v)) return *x;
	if (auto x = tryGet<uint64_t>(v)) return *x;
	if (auto x = asString(v)) return *x;
	if (auto x = asStrings(v)) return *x;
	if (auto x = asBytes(v)) return *x;
	if (auto x = tryGet<std::vector<uint32_t>>(v)) return *x;
	if (auto x = tryGet<std::vector<int32_t>>(v)) return *x;
	if (auto x = tryGet<std::vector<double>>(v)) return *x;
	if (auto x = tryGet<std::map<std::string, std::string>>(v)) return *x;
	if (auto x = tryGet<std::vector<std::map<std::string, std::string>>>(v)) return *x;
	if (auto x = tryGet<std::map<std::string, sdbus::Variant>>(v)) {
		json o = json::object();
		for (const auto& [k, inner]: *x) o[k] = variantToJson(inner);
		return o;
	}
	if (auto x = tryGet<std::vector<std::map<std::string, sdbus::Variant>>>(v)) {
		json a = json::array();
		for (const auto& m: *x) {
			json o = json::object();
			for (const auto& [k, inner]: m) o[k] = variantToJson(inner);
			a.push_back(std::move(o));
		}
		return a;
	}
	if (auto x = tryGet<sdbus::Variant>(v)) return variantToJson(*x);
	return nullptr;
}

} // namespace qsd::dbus
