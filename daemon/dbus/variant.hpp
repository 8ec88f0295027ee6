#pragma once
// Decoded D-Bus values, and their conversion to JSON. Never trusts the peer: an unexpected type
// gives std::nullopt (typed getters) or null (variantToJson), never a throw.
//
// dbus::Value is what the property caches hold: the value of one property, decoded when it
// arrives. The types backends read (the basic types but h, and as, ao, ay) are kept as plain
// C++ values, 48 bytes plus the text or array they own; rarer, compound ones (a{sv} such as
// MPRIS Metadata, NetworkManager's aa{sv} address data, a tray's tooltip struct) keep an
// sdbus::Variant behind a shared pointer, since their consumers read them as exact sdbus-c++
// types. An sdbus::Variant owns a whole sd_bus_message (about 1.1 KiB) and is slow to read:
// a cached simple property now costs about a tenth of that with its map node, and a typed read
// is a type check.

#include <sdbus-c++/sdbus-c++.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qsd::dbus {

class Value {
public:
	// No value: signature() is "" and every typed read gives nullopt.
	Value() = default;
	// Decodes `v` (for tests and for code that builds a value to cache; slow: not for signals).
	Value(const sdbus::Variant& v);   // NOLINT(google-explicit-constructor): Properties{{"A", sdbus::Variant(1)}}

	static Value boolean(bool b);
	static Value integer(char type, int64_t x);      // y n q i u x (the value must fit)
	static Value unsignedInt(uint64_t x);            // t
	static Value number(double d);
	static Value text(std::string s, char type = 's');   // s o g
	static Value texts(std::vector<std::string> list, char type = 's');   // as, ao (type 'o')
	static Value bytes(std::vector<uint8_t> data);   // ay
	// A value of type `signature` that was skipped in its message, not read: every typed read
	// gives nullopt and only its signature is kept. For a peer's value of a type the mapping does
	// not read, which is only reported: a mistyped property can be as large as a message.
	static Value unread(std::string signature);

	// The D-Bus signature of the value ("u", "as", "a{sv}"), "" for no value.
	[[nodiscard]] std::string signature() const;
	[[nodiscard]] bool empty() const { return std::holds_alternative<std::monostate>(v_); }
	[[nodiscard]] bool unread() const { return std::holds_alternative<Unread>(v_); }

	[[nodiscard]] const bool* boolValue() const { return std::get_if<bool>(&v_); }
	[[nodiscard]] const int64_t* intValue() const { return std::get_if<int64_t>(&v_); }      // y n q i u x
	[[nodiscard]] const uint64_t* uintValue() const { return std::get_if<uint64_t>(&v_); }   // t
	[[nodiscard]] const double* doubleValue() const { return std::get_if<double>(&v_); }
	[[nodiscard]] const std::string* stringValue() const { return std::get_if<std::string>(&v_); }   // s o g
	[[nodiscard]] const std::vector<std::string>* stringsValue() const { return std::get_if<std::vector<std::string>>(&v_); }
	[[nodiscard]] const std::vector<uint8_t>* bytesValue() const { return std::get_if<std::vector<uint8_t>>(&v_); }
	// A compound value, nullptr for a plain one.
	[[nodiscard]] const sdbus::Variant* variant() const {
		const auto* c = std::get_if<std::shared_ptr<const Compound>>(&v_);
		return c ? &(*c)->value : nullptr;
	}
	// The same value as an sdbus::Variant (for a D-Bus call; slow).
	[[nodiscard]] sdbus::Variant toVariant() const;

	// Reads the variant ('v') at `msg`'s read position, which moves past it. Throws sdbus::Error
	// when the message holds anything else or is malformed.
	static Value read(sdbus::Message& msg);

private:
	struct Compound {
		std::string signature;
		sdbus::Variant value;
	};

	struct Unread {
		std::string signature;
	};

	std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, std::vector<std::string>,
	             std::vector<uint8_t>, std::shared_ptr<const Compound>, Unread>
	    v_;
	// The signature of a plain value: one basic type, or 'a' and one ("as", "ay").
	char type_[2] = {0, 0};
};

// sdbus-c++ reads a Value where it reads a variant: a GetAll's a{sv} answer into Properties.
sdbus::Message& operator>>(sdbus::Message& msg, Value& value);

using Properties = std::map<std::string, Value>;

// Reads an a{sv} at `msg`'s read position into `out` (replacing values of the same name); with
// `keep`, only the names it holds (the others are skipped unread). Throws sdbus::Error on a
// message of another shape.
void readProperties(sdbus::Message& msg, Properties& out, const std::set<std::string>* keep = nullptr);

// Best-effort conversion of basic types, arrays of them, a{sv}, aa{sv}, a{ss}, aa{ss} and ay
// (as an array of numbers). Unknown signatures give null.
[[nodiscard]] nlohmann::json variantToJson(const sdbus::Variant& v);

[[nodiscard]] nlohmann::json variantToJson(const Value& v);

// Typed reads that accept any integer width where a number is expected. Each looks at the
// variant's signature once (they run for every field of an object on every change).
[[nodiscard]] std::optional<bool> asBool(const sdbus::Variant& v);
[[nodiscard]] std::optional<int64_t> asInt(const sdbus::Variant& v);
[[nodiscard]] std::optional<uint64_t> asUint(const sdbus::Variant& v);     // negative values: nullopt
[[nodiscard]] std::optional<double> asDouble(const sdbus::Variant& v);
[[nodiscard]] std::optional<std::string> asString(const sdbus::Variant& v);   // s, o and g
[[nodiscard]] std::optional<std::vector<std::string>> asStrings(const sdbus::Variant& v); // as, ao
[[nodiscard]] std::optional<std::vector<uint8_t>> asBytes(const sdbus::Variant& v);     // ay
[[nodiscard]] std::optional<bool> asBool(const Value& v);
[[nodiscard]] std::optional<int64_t> asInt(const Value& v);
[[nodiscard]] std::optional<uint64_t> asUint(const Value& v);
[[nodiscard]] std::optional<double> asDouble(const Value& v);
[[nodiscard]] std::optional<std::string> asString(const Value& v);
[[nodiscard]] std::optional<std::vector<std::string>> asStrings(const Value& v);
[[nodiscard]] std::optional<std::vector<uint8_t>> asBytes(const Value& v);

// An exact sdbus-c++ type (structs, arrays of structs: a tray's a(iiay) pixmaps), nullopt for
// any other type.
template <typename T>
[[nodiscard]] std::optional<T> as(const sdbus::Variant& v) {
	try {
		if (v.containsValueOfType<T>()) return v.get<T>();
	} catch (const sdbus::Error&) {
	}
	return std::nullopt;
}
// The same for a cached value: a compound one is read from its sdbus::Variant; a plain one
// converts to T exactly when an sdbus::Variant of that value would (`as<uint32_t>` of a "u").
template <typename T>
[[nodiscard]] std::optional<T> as(const Value& v) {
	if (const auto* c = v.variant()) return as<T>(*c);
	if (v.empty() || v.unread() || v.signature() != sdbus::signature_of<T>::str()) return std::nullopt;
	return as<T>(v.toVariant());
}

// The variant's D-Bus signature, "" when it cannot be read.
[[nodiscard]] std::string signatureOf(const sdbus::Variant& v);
[[nodiscard]] inline std::string signatureOf(const Value& v) { return v.signature(); }

// Looks a key up in a property map.
[[nodiscard]] const Value* find(const Properties& props, const std::string& key);

// Reads typed properties out of property maps and degrades a wrongly typed one: the read gives
// std::nullopt (the caller's field becomes null or its default) and a warning is logged once per
// (object, property), so a peer that keeps sending garbage does not flood the journal. A
// missing property is std::nullopt without a warning: most are optional. One reader per
// backend; forget(object) when an object goes, so that a new object at the same path is
// reported again.
class PropertyReader {
public:
	explicit PropertyReader(std::string component): component_(std::move(component)) {}

	[[nodiscard]] std::optional<bool> boolean(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<int64_t> integer(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<uint64_t> unsignedInt(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<double> number(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<std::string> string(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<std::vector<std::string>> strings(const Properties& props, std::string_view object,
	                                                              const std::string& name);
	[[nodiscard]] std::optional<std::vector<uint8_t>> bytes(const Properties& props, std::string_view object,
	                                                        const std::string& name);
	template <typename T>
	[[nodiscard]] std::optional<T> value(const Properties& props, std::string_view object, const std::string& name) {
		return read(props, object, name, static_cast<std::optional<T> (*)(const Value&)>(&as<T>));
	}

	// For mapping code that found a wrongly typed property itself (a pure mapping function
	// returns the names; the backend reports them here). `props` gives the type for the log.
	void wrongType(std::string_view object, const std::string& name, const Properties& props);
	void wrongType(std::string_view object, const std::string& name, const Value* value);
	void wrongType(std::string_view object, const std::string& name, const sdbus::Variant* value);
	void forget(std::string_view object);
	void clear() { warned_.clear(); }
	[[nodiscard]] size_t warnings() const { return warned_.size(); }

private:
	template <typename R>
	std::optional<R> read(const Properties& props, std::string_view object, const std::string& name,
	                      std::optional<R> (*conv)(const Value&)) {
		const auto* v = find(props, name);
		if (!v) return std::nullopt;
		auto x = conv(*v);
		if (!x) wrongType(object, name, v);
		return x;
	}

	void report(std::string_view object, const std::string& name, const std::string& type);

	std::string component_;
	std::set<std::pair<std::string, std::string>, std::less<>> warned_;
};

} // namespace qsd::dbus

template <>
struct sdbus::signature_of<qsd::dbus::Value> {
	static constexpr bool is_valid = true;
	static const std::string str() { return "v"; }
};
