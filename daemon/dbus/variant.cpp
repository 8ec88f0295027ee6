#include "variant.hpp"

#include "../log.hpp"

#include <climits>

namespace qsd::dbus {

using json = nlohmann::json;

namespace {
template <typename T>
std::optional<T> tryGet(const sdbus::Variant& v) {
	return as<T>(v);
}

template <typename T>
std::optional<T> getAs(const sdbus::Variant& v) {
	try {
		return v.get<T>();
	} catch (const sdbus::Error&) {
		return std::nullopt;
	}
}
} // namespace

std::string signatureOf(const sdbus::Variant& v) {
	try {
		return v.peekValueType();
	} catch (const sdbus::Error&) {
		return {};
	}
}

std::optional<bool> asBool(const sdbus::Variant& v) {
	if (signatureOf(v) != "b") return std::nullopt;
	return getAs<bool>(v);
}

std::optional<int64_t> asInt(const sdbus::Variant& v) {
	auto sig = signatureOf(v);
	if (sig.size() != 1) return std::nullopt;
	switch (sig[0]) {
	case 'y': return getAs<uint8_t>(v);
	case 'n': return getAs<int16_t>(v);
	case 'q': return getAs<uint16_t>(v);
	case 'i': return getAs<int32_t>(v);
	case 'u': return getAs<uint32_t>(v);
	case 'x': return getAs<int64_t>(v);
	case 't': {
		auto x = getAs<uint64_t>(v);
		if (!x || *x > uint64_t(INT64_MAX)) return std::nullopt;
		return int64_t(*x);
	}
	default: return std::nullopt;
	}
}

std::optional<uint64_t> asUint(const sdbus::Variant& v) {
	if (signatureOf(v) == "t") return getAs<uint64_t>(v);
	auto x = asInt(v);
	if (!x || *x < 0) return std::nullopt;
	return uint64_t(*x);
}

std::optional<double> asDouble(const sdbus::Variant& v) {
	if (signatureOf(v) == "d") return getAs<double>(v);
	if (auto x = asInt(v)) return double(*x);
	if (auto x = asUint(v)) return double(*x);
	return std::nullopt;
}

std::optional<std::string> asString(const sdbus::Variant& v) {
	auto sig = signatureOf(v);
	if (sig == "s") return getAs<std::string>(v);
	if (sig == "o") {
		auto x = getAs<sdbus::ObjectPath>(v);
		return x ? std::optional<std::string>(std::string(*x)) : std::nullopt;
	}
	if (sig == "g") {
		auto x = getAs<sdbus::Signature>(v);
		return x ? std::optional<std::string>(std::string(*x)) : std::nullopt;
	}
	return std::nullopt;
}

std::optional<std::vector<std::string>> asStrings(const sdbus::Variant& v) {
	auto sig = signatureOf(v);
	if (sig == "as") return getAs<std::vector<std::string>>(v);
	if (sig == "ao") {
		auto x = getAs<std::vector<sdbus::ObjectPath>>(v);
		if (!x) return std::nullopt;
		return std::vector<std::string>(x->begin(), x->end());
	}
	return std::nullopt;
}

std::optional<std::vector<uint8_t>> asBytes(const sdbus::Variant& v) {
	if (signatureOf(v) != "ay") return std::nullopt;
	return getAs<std::vector<uint8_t>>(v);
}

const sdbus::Variant* find(const Properties& props, const std::string& key) {
	auto it = props.find(key);
	return it == props.end() ? nullptr : &it->second;
}

json variantToJson(const sdbus::Variant& v) {
	if (auto x = tryGet<bool>(v)) return *x;
	if (auto x = tryGet<double>(v)) return *x;
	if (auto x = asInt(v)) return *x;
	if (auto x = asUint(v)) return *x;
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

// ---------------------------------------------------------------------------------------------
// PropertyReader

std::optional<bool> PropertyReader::boolean(const Properties& props, std::string_view object, const std::string& name) {
	return read(props, object, name, &asBool);
}
std::optional<int64_t> PropertyReader::integer(const Properties& props, std::string_view object, const std::string& name) {
	return read(props, object, name, &asInt);
}
std::optional<uint64_t> PropertyReader::unsignedInt(const Properties& props, std::string_view object, const std::string& name) {
	return read(props, object, name, &asUint);
}
std::optional<double> PropertyReader::number(const Properties& props, std::string_view object, const std::string& name) {
	return read(props, object, name, &asDouble);
}
std::optional<std::string> PropertyReader::string(const Properties& props, std::string_view object, const std::string& name) {
	return read(props, object, name, &asString);
}
std::optional<std::vector<std::string>> PropertyReader::strings(const Properties& props, std::string_view object,
                                                                const std::string& name) {
	return read(props, object, name, &asStrings);
}
std::optional<std::vector<uint8_t>> PropertyReader::bytes(const Properties& props, std::string_view object,
                                                          const std::string& name) {
	return read(props, object, name, &asBytes);
}

void PropertyReader::wrongType(std::string_view object, const std::string& name, const Properties& props) {
	wrongType(object, name, find(props, name));
}

void PropertyReader::wrongType(std::string_view object, const std::string& name, const sdbus::Variant* value) {
	if (!warned_.emplace(std::string(object), name).second) return;
	std::string type = value ? signatureOf(*value) : std::string();
	log::warning(component_, "{}: property {} has the unexpected D-Bus type '{}'; its field degrades", object, name,
	             type.empty() ? "?" : type);
}

void PropertyReader::forget(std::string_view object) {
	auto it = warned_.lower_bound(std::pair<std::string, std::string>(std::string(object), std::string()));
	while (it != warned_.end() && it->first == object) it = warned_.erase(it);
}

} // namespace qsd::dbus
