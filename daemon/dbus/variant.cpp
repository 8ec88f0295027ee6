#include "variant.hpp"

#include "raw.hpp"

#include "../log.hpp"

#include <climits>
#include <cstring>

namespace sdbus {
// Exported by libsdbus-c++ 1.2 (every sdbus::Variant is made with it) but declared only in its
// private headers: a message that belongs to no bus, to decode an sdbus::Variant from.
PlainMessage createPlainMessage();
} // namespace sdbus

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

// ---------------------------------------------------------------------------------------------
// Value

namespace {
[[noreturn]] void notAVariant(const char* what) {
	throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", std::string("malformed message: ") + what);
}

bool isPlainArray(char t) { return t == 's' || t == 'o' || t == 'y'; }
// The basic types but h (a file descriptor is not a value to cache).
bool isPlainBasic(char t) { return t != 0 && std::strchr("ybnqiuxtdsog", t) != nullptr; }
} // namespace

sdbus::PlainMessage plainMessage() { return sdbus::createPlainMessage(); }

Value::Value(const sdbus::Variant& v) {
	if (v.isEmpty()) return;
	auto msg = plainMessage();
	v.serializeTo(msg);
	msg.seal();
	msg.rewind(true);
	*this = read(msg);
}

Value Value::boolean(bool b) {
	Value out;
	out.v_ = b;
	out.type_[0] = 'b';
	return out;
}

Value Value::integer(char type, int64_t x) {
	Value out;
	out.v_ = x;
	out.type_[0] = type;
	return out;
}

Value Value::unsignedInt(uint64_t x) {
	Value out;
	out.v_ = x;
	out.type_[0] = 't';
	return out;
}

Value Value::number(double d) {
	Value out;
	out.v_ = d;
	out.type_[0] = 'd';
	return out;
}

Value Value::text(std::string s, char type) {
	Value out;
	out.v_ = std::move(s);
	out.type_[0] = type;
	return out;
}

Value Value::texts(std::vector<std::string> list, char type) {
	Value out;
	out.v_ = std::move(list);
	out.type_[0] = 'a';
	out.type_[1] = type;
	return out;
}

Value Value::bytes(std::vector<uint8_t> data) {
	Value out;
	out.v_ = std::move(data);
	out.type_[0] = 'a';
	out.type_[1] = 'y';
	return out;
}

Value Value::unread(std::string signature) {
	Value out;
	out.v_ = Unread{std::move(signature)};
	return out;
}

std::string Value::signature() const {
	if (const auto* c = std::get_if<std::shared_ptr<const Compound>>(&v_)) return (*c)->signature;
	if (const auto* u = std::get_if<Unread>(&v_)) return u->signature;
	return std::string(type_, type_[0] == 0 ? 0 : type_[1] == 0 ? 1 : 2);
}

sdbus::Variant Value::toVariant() const {
	if (const auto* c = variant()) return *c;
	if (const auto* b = boolValue()) return sdbus::Variant(*b);
	if (const auto* d = doubleValue()) return sdbus::Variant(*d);
	if (const auto* u = uintValue()) return sdbus::Variant(*u);
	if (const auto* i = intValue()) {
		switch (type_[0]) {
		case 'y': return sdbus::Variant(uint8_t(*i));
		case 'n': return sdbus::Variant(int16_t(*i));
		case 'q': return sdbus::Variant(uint16_t(*i));
		case 'i': return sdbus::Variant(int32_t(*i));
		case 'u': return sdbus::Variant(uint32_t(*i));
		default: return sdbus::Variant(*i);
		}
	}
	if (const auto* s = stringValue()) {
		if (type_[0] == 'o') return sdbus::Variant(sdbus::ObjectPath(*s));
		if (type_[0] == 'g') return sdbus::Variant(sdbus::Signature(*s));
		return sdbus::Variant(*s);
	}
	if (const auto* l = stringsValue()) {
		if (type_[1] == 'o') return sdbus::Variant(std::vector<sdbus::ObjectPath>(l->begin(), l->end()));
		return sdbus::Variant(*l);
	}
	if (const auto* a = bytesValue()) return sdbus::Variant(*a);
	return {};
}

Value Value::read(sdbus::Message& msg) {
	sd_bus_message* m = rawMessage(msg);
	char type = 0;
	const char* contents = nullptr;
	if (checkRead(sd_bus_message_peek_type(m, &type, &contents), "value") == 0) notAVariant("a value is missing");
	if (type != SD_BUS_TYPE_VARIANT || !contents || !*contents) notAVariant("a variant was expected");
	Value out;
	const char t = contents[0];
	if (contents[1] == 0 && isPlainBasic(t)) {
		checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents), "variant");
		union {
			int b;
			uint8_t y;
			int16_t n;
			uint16_t q;
			int32_t i;
			uint32_t u;
			int64_t x;
			uint64_t t;
			double d;
			const char* s;
		} raw{};
		checkRead(sd_bus_message_read_basic(m, t, &raw), "value");
		switch (t) {
		case 'b': out.v_ = raw.b != 0; break;
		case 'y': out.v_ = int64_t(raw.y); break;
		case 'n': out.v_ = int64_t(raw.n); break;
		case 'q': out.v_ = int64_t(raw.q); break;
		case 'i': out.v_ = int64_t(raw.i); break;
		case 'u': out.v_ = int64_t(raw.u); break;
		case 'x': out.v_ = raw.x; break;
		case 't': out.v_ = raw.t; break;
		case 'd': out.v_ = raw.d; break;
		default: out.v_ = std::string(raw.s ? raw.s : ""); break;   // s o g
		}
		out.type_[0] = t;
		checkRead(sd_bus_message_exit_container(m), "variant");
		return out;
	}
	if (t == SD_BUS_TYPE_ARRAY && isPlainArray(contents[1]) && contents[2] == 0) {
		const char e = contents[1];
		checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents), "variant");
		if (e == 'y') {
			const void* data = nullptr;
			size_t size = 0;
			checkRead(sd_bus_message_read_array(m, 'y', &data, &size), "byte array");
			const auto* bytes = static_cast<const uint8_t*>(data);
			out.v_ = size ? std::vector<uint8_t>(bytes, bytes + size) : std::vector<uint8_t>();
		} else {
			std::vector<std::string> list;
			checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, contents + 1), "array");
			for (;;) {
				const char* s = nullptr;
				if (checkRead(sd_bus_message_read_basic(m, e, &s), "array element") == 0) break;
				list.emplace_back(s ? s : "");
			}
			checkRead(sd_bus_message_exit_container(m), "array");
			out.v_ = std::move(list);
		}
		out.type_[0] = 'a';
		out.type_[1] = e;
		checkRead(sd_bus_message_exit_container(m), "variant");
		return out;
	}
	// Compound: sdbus-c++ copies the variant out of the message (the read position is shared).
	std::string signature = contents;
	sdbus::Variant v;
	msg >> v;
	out.v_ = std::make_shared<const Compound>(Compound{std::move(signature), std::move(v)});
	return out;
}

sdbus::Message& operator>>(sdbus::Message& msg, Value& value) {
	value = Value::read(msg);
	return msg;
}

void readProperties(sdbus::Message& msg, Properties& out, const std::set<std::string>* keep) {
	sd_bus_message* m = rawMessage(msg);
	if (checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}"), "properties") == 0)
		notAVariant("properties are missing");
	for (;;) {
		if (checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv"), "property") == 0) break;
		const char* key = nullptr;
		checkRead(sd_bus_message_read_basic(m, 's', &key), "property name");
		std::string name(key ? key : "");
		if (keep && !keep->count(name)) checkRead(sd_bus_message_skip(m, "v"), "property value");
		else out.insert_or_assign(std::move(name), Value::read(msg));
		checkRead(sd_bus_message_exit_container(m), "property");
	}
	checkRead(sd_bus_message_exit_container(m), "properties");
}

// ---------------------------------------------------------------------------------------------
// sdbus::Variant and Value reads

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

std::optional<bool> asBool(const Value& v) {
	if (const auto* b = v.boolValue()) return *b;
	return std::nullopt;
}

std::optional<int64_t> asInt(const Value& v) {
	if (const auto* i = v.intValue()) return *i;
	if (const auto* u = v.uintValue(); u && *u <= uint64_t(INT64_MAX)) return int64_t(*u);
	return std::nullopt;
}

std::optional<uint64_t> asUint(const Value& v) {
	if (const auto* u = v.uintValue()) return *u;
	if (const auto* i = v.intValue(); i && *i >= 0) return uint64_t(*i);
	return std::nullopt;
}

std::optional<double> asDouble(const Value& v) {
	if (const auto* d = v.doubleValue()) return *d;
	if (const auto* i = v.intValue()) return double(*i);
	if (const auto* u = v.uintValue()) return double(*u);
	return std::nullopt;
}

std::optional<std::string> asString(const Value& v) {
	if (const auto* s = v.stringValue()) return *s;
	return std::nullopt;
}

std::optional<std::vector<std::string>> asStrings(const Value& v) {
	if (const auto* l = v.stringsValue()) return *l;
	return std::nullopt;
}

std::optional<std::vector<uint8_t>> asBytes(const Value& v) {
	if (const auto* a = v.bytesValue()) return *a;
	return std::nullopt;
}

json variantToJson(const Value& v) {
	if (const auto* c = v.variant()) return variantToJson(*c);
	if (const auto* b = v.boolValue()) return *b;
	if (const auto* i = v.intValue()) return *i;
	if (const auto* u = v.uintValue()) return *u;
	if (const auto* d = v.doubleValue()) return *d;
	if (const auto* s = v.stringValue()) return *s;
	if (const auto* l = v.stringsValue()) return *l;
	if (const auto* a = v.bytesValue()) return *a;
	return nullptr;
}

const Value* find(const Properties& props, const std::string& key) {
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
	report(object, name, value ? signatureOf(*value) : std::string());
}

void PropertyReader::wrongType(std::string_view object, const std::string& name, const Value* value) {
	if (!warned_.emplace(std::string(object), name).second) return;
	report(object, name, value ? value->signature() : std::string());
}

void PropertyReader::report(std::string_view object, const std::string& name, const std::string& type) {
	log::warning(component_, "{}: property {} has the unexpected D-Bus type '{}'; its field degrades", object, name,
	             type.empty() ? "?" : type);
}

void PropertyReader::forget(std::string_view object) {
	auto it = warned_.lower_bound(std::pair<std::string, std::string>(std::string(object), std::string()));
	while (it != warned_.end() && it->first == object) it = warned_.erase(it);
}

} // namespace qsd::dbus
