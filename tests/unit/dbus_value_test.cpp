// dbus::Value, the decoded property values of the caches (daemon/dbus/variant.hpp): every type
// it keeps plain, compound ones kept whole, wrong types degrading to nullopt, and messages of
// the wrong shape giving sdbus::Error, all read from real sd_bus_messages.

#include "dbus/properties.hpp"
#include "dbus/raw.hpp"
#include "dbus/variant.hpp"

#include <gtest/gtest.h>

#include <climits>

using namespace qsd;
using sdbus::Variant;

namespace {

using PixmapStruct = sdbus::Struct<int32_t, int32_t, std::vector<uint8_t>>;
using ToolTipStruct = sdbus::Struct<std::string, std::vector<PixmapStruct>, std::string, std::string>;

// A sealed message holding `write`'s values, positioned at its start.
template <typename F>
sdbus::PlainMessage message(F write) {
	auto msg = dbus::plainMessage();
	write(msg);
	msg.seal();
	msg.rewind(true);
	return msg;
}

dbus::Value readOne(const Variant& v) {
	auto msg = message([&](sdbus::Message& m) { m << v; });
	return dbus::Value::read(msg);
}

} // namespace

TEST(DbusValue, DecodesEveryPlainTypeFromAMessage) {
	auto msg = message([](sdbus::Message& m) {
		m << Variant(true) << Variant(uint8_t(200)) << Variant(int16_t(-300)) << Variant(uint16_t(65535)) << Variant(int32_t(-5))
		  << Variant(uint32_t(4000000000u)) << Variant(int64_t(INT64_MIN)) << Variant(uint64_t(UINT64_MAX)) << Variant(2.5)
		  << Variant(std::string("text")) << Variant(sdbus::ObjectPath("/a/b")) << Variant(sdbus::Signature("a{sv}"))
		  << Variant(std::vector<std::string>{"x", "", "z"})
		  << Variant(std::vector<sdbus::ObjectPath>{sdbus::ObjectPath("/p"), sdbus::ObjectPath("/q")})
		  << Variant(std::vector<uint8_t>{0, 1, 255}) << Variant(std::vector<uint8_t>{});
	});
	std::vector<dbus::Value> v;
	for (int i = 0; i < 16; ++i) v.push_back(dbus::Value::read(msg));
	EXPECT_THROW((void)dbus::Value::read(msg), sdbus::Error);   // past the end

	const char* signatures[] = {"b", "y", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "as", "ao", "ay", "ay"};
	for (size_t i = 0; i < v.size(); ++i) {
		EXPECT_EQ(v[i].signature(), signatures[i]) << i;
		EXPECT_EQ(v[i].variant(), nullptr) << i;   // all kept plain
	}
	EXPECT_EQ(dbus::asBool(v[0]), true);
	EXPECT_EQ(dbus::asInt(v[1]), 200);
	EXPECT_EQ(dbus::asInt(v[2]), -300);
	EXPECT_EQ(dbus::asUint(v[3]), 65535u);
	EXPECT_EQ(dbus::asInt(v[4]), -5);
	EXPECT_EQ(dbus::asUint(v[5]), 4000000000u);
	EXPECT_EQ(dbus::asInt(v[6]), INT64_MIN);
	EXPECT_EQ(dbus::asUint(v[7]), UINT64_MAX);
	EXPECT_EQ(dbus::asDouble(v[8]), 2.5);
	EXPECT_EQ(dbus::asString(v[9]), "text");
	EXPECT_EQ(dbus::asString(v[10]), "/a/b");
	EXPECT_EQ(dbus::asString(v[11]), "a{sv}");
	EXPECT_EQ(dbus::asStrings(v[12]), (std::vector<std::string>{"x", "", "z"}));
	EXPECT_EQ(dbus::asStrings(v[13]), (std::vector<std::string>{"/p", "/q"}));
	EXPECT_EQ(dbus::asBytes(v[14]), (std::vector<uint8_t>{0, 1, 255}));
	EXPECT_EQ(dbus::asBytes(v[15]), std::vector<uint8_t>{});

	// JSON as variantToJson gave it for an sdbus::Variant.
	EXPECT_EQ(dbus::variantToJson(v[0]), true);
	EXPECT_EQ(dbus::variantToJson(v[4]), -5);
	EXPECT_EQ(dbus::variantToJson(v[7]), UINT64_MAX);
	EXPECT_EQ(dbus::variantToJson(v[8]), 2.5);
	EXPECT_EQ(dbus::variantToJson(v[10]), "/a/b");
	EXPECT_EQ(dbus::variantToJson(v[13]), nlohmann::json({"/p", "/q"}));
	EXPECT_EQ(dbus::variantToJson(v[14]), nlohmann::json({0, 1, 255}));
	EXPECT_EQ(dbus::variantToJson(dbus::Value()), nullptr);

	// Back to an sdbus::Variant of the same type (for calls, and for as<T>).
	EXPECT_EQ(v[5].toVariant().peekValueType(), "u");
	EXPECT_EQ(v[5].toVariant().get<uint32_t>(), 4000000000u);
	EXPECT_EQ(v[13].toVariant().get<std::vector<sdbus::ObjectPath>>().at(1), "/q");
	EXPECT_EQ(dbus::as<uint32_t>(v[5]), 4000000000u);
	EXPECT_EQ(dbus::as<sdbus::ObjectPath>(v[10]), sdbus::ObjectPath("/a/b"));
}

TEST(DbusValue, AWrongTypeDegradesToNullopt) {
	auto s = readOne(Variant(std::string("5")));
	EXPECT_EQ(dbus::asInt(s), std::nullopt);
	EXPECT_EQ(dbus::asUint(s), std::nullopt);
	EXPECT_EQ(dbus::asDouble(s), std::nullopt);
	EXPECT_EQ(dbus::asBool(s), std::nullopt);
	EXPECT_EQ(dbus::asStrings(s), std::nullopt);
	EXPECT_EQ(dbus::asBytes(s), std::nullopt);
	EXPECT_EQ(dbus::as<uint32_t>(s), std::nullopt);
	EXPECT_EQ(dbus::asBool(readOne(Variant(uint32_t(1)))), std::nullopt);   // D-Bus booleans are 'b' only
	EXPECT_EQ(dbus::asInt(readOne(Variant(uint64_t(UINT64_MAX)))), std::nullopt);   // does not fit
	EXPECT_EQ(dbus::asUint(readOne(Variant(int32_t(-1)))), std::nullopt);           // negative
	EXPECT_EQ(dbus::asInt(readOne(Variant(2.5))), std::nullopt);
	EXPECT_EQ(dbus::asString(readOne(Variant(std::vector<std::string>{"x"}))), std::nullopt);
	EXPECT_EQ(dbus::as<int32_t>(readOne(Variant(uint32_t(1)))), std::nullopt);   // exact types only
	EXPECT_EQ(dbus::asStrings(readOne(Variant(std::vector<int32_t>{1}))), std::nullopt);

	dbus::PropertyReader reader("test");
	dbus::Properties props{{"Percentage", Variant(std::string("high"))}};
	EXPECT_EQ(reader.number(props, "/dev/a", "Percentage"), std::nullopt);
	EXPECT_EQ(reader.warnings(), 1u);
}

TEST(DbusValue, KeepsCompoundValuesWhole) {
	std::map<std::string, Variant> meta{{"xesam:title", Variant(std::string("Song"))},
	                                    {"xesam:artist", Variant(std::vector<std::string>{"A", "B"})},
	                                    {"mpris:length", Variant(int64_t(1000))}};
	ToolTipStruct tip(std::string("icon"), std::vector<PixmapStruct>{PixmapStruct(1, 1, std::vector<uint8_t>{1, 2, 3, 4})}, std::string("Title"),
	            std::string("Text"));
	auto msg = message([&](sdbus::Message& m) {
		std::vector<std::map<std::string, Variant>> addresses{
		    {{"address", Variant(std::string("10.0.0.2"))}, {"prefix", Variant(uint32_t(24))}}};
		m << Variant(meta) << Variant(tip) << Variant(addresses);
		// A variant in a variant (sdbus-c++'s Variant(Variant) is a copy): appended with sd-bus.
		ASSERT_GE(sd_bus_message_append(dbus::rawMessage(m), "v", "v", "i", 3), 0);
		m << Variant(uint32_t(9));
	});
	auto m = dbus::Value::read(msg);
	auto t = dbus::Value::read(msg);
	auto a = dbus::Value::read(msg);
	auto vv = dbus::Value::read(msg);
	auto after = dbus::Value::read(msg);   // the read position is right after the compound ones
	EXPECT_EQ(dbus::asUint(after), 9u);

	EXPECT_EQ(m.signature(), "a{sv}");
	ASSERT_NE(m.variant(), nullptr);
	auto map = dbus::as<std::map<std::string, Variant>>(m);
	ASSERT_TRUE(map);
	EXPECT_EQ(map->at("xesam:title").get<std::string>(), "Song");
	EXPECT_EQ(dbus::variantToJson(m), (nlohmann::json{{"xesam:title", "Song"}, {"xesam:artist", {"A", "B"}}, {"mpris:length", 1000}}));
	EXPECT_EQ(dbus::asString(m), std::nullopt);

	EXPECT_EQ(t.signature(), "(sa(iiay)ss)");
	auto back = dbus::as<ToolTipStruct>(t);
	ASSERT_TRUE(back);
	EXPECT_EQ(std::get<2>(*back), "Title");
	EXPECT_EQ(std::get<1>(*back).at(0).get<2>(), (std::vector<uint8_t>{1, 2, 3, 4}));
	using Dict = std::map<std::string, Variant>;
	EXPECT_FALSE(dbus::as<Dict>(t));

	EXPECT_EQ(a.signature(), "aa{sv}");
	EXPECT_EQ(dbus::variantToJson(a), nlohmann::json::parse(R"([{"address":"10.0.0.2","prefix":24}])"));
	EXPECT_EQ(vv.signature(), "v");

	// Copies share the compound value; the Value made from an sdbus::Variant is the same.
	auto copy = t;
	EXPECT_EQ(copy.variant(), t.variant());
	dbus::Value fromVariant{Variant(tip)};
	EXPECT_EQ(fromVariant.signature(), "(sa(iiay)ss)");
	EXPECT_EQ(std::get<3>(*dbus::as<ToolTipStruct>(fromVariant)), "Text");
}

TEST(DbusValue, ReadsPropertyMapsAndSkipsWhatIsNotKept) {
	std::map<std::string, Variant> values{{"Strength", Variant(uint8_t(70))},
	                                      {"Ssid", Variant(std::vector<uint8_t>{'n', 'e', 't'})},
	                                      {"ManufacturerData", Variant(std::map<uint16_t, Variant>{{76, Variant(std::vector<uint8_t>{1})}})}};
	{
		auto msg = message([&](sdbus::Message& m) { m << values << uint32_t(5); });
		dbus::Properties props;
		dbus::readProperties(msg, props);
		EXPECT_EQ(props.size(), 3u);
		EXPECT_EQ(props.at("ManufacturerData").signature(), "a{qv}");
		uint32_t next = 0;
		msg >> next;
		EXPECT_EQ(next, 5u);
	}
	{
		auto msg = message([&](sdbus::Message& m) { m << values << uint32_t(5); });
		std::set<std::string> keep{"Strength", "Ssid"};
		dbus::Properties props{{"Old", Variant(true)}, {"Strength", Variant(uint8_t(1))}};
		dbus::readProperties(msg, props, &keep);
		EXPECT_EQ(props.size(), 3u);   // merged; ManufacturerData skipped unread
		EXPECT_EQ(dbus::asInt(props.at("Strength")), 70);
		EXPECT_EQ(props.count("ManufacturerData"), 0u);
		uint32_t next = 0;
		msg >> next;
		EXPECT_EQ(next, 5u);
	}
	{
		// sdbus-c++ reads a Value where it reads a variant: a GetAll answer into Properties.
		auto msg = message([&](sdbus::Message& m) { m << values; });
		dbus::Properties props;
		msg >> props;
		EXPECT_EQ(dbus::asBytes(props.at("Ssid")), (std::vector<uint8_t>{'n', 'e', 't'}));
		EXPECT_EQ(dbus::asUint(props.at("Strength")), 70u);
	}
}

TEST(DbusValue, PropertiesChangedOfAWrongShapeIsAnError) {
	std::map<std::string, Variant> changed{{"Percentage", Variant(42.0)}};
	{
		auto msg = message([&](sdbus::Message& m) {
			m << std::string("org.freedesktop.UPower.Device") << changed << std::vector<std::string>{"Icon"};
		});
		auto c = dbus::PropertiesChanged::read(msg);
		EXPECT_EQ(c.interface, "org.freedesktop.UPower.Device");
		EXPECT_EQ(dbus::asDouble(c.changed.at("Percentage")), 42.0);
		EXPECT_EQ(c.invalidated, std::vector<std::string>{"Icon"});
	}
	// Truncated: no invalidated list; no changed values at all; nothing.
	auto truncated = message([&](sdbus::Message& m) { m << std::string("i") << changed; });
	EXPECT_THROW((void)dbus::PropertiesChanged::read(truncated), sdbus::Error);
	auto interfaceOnly = message([&](sdbus::Message& m) { m << std::string("i"); });
	EXPECT_THROW((void)dbus::PropertiesChanged::read(interfaceOnly), sdbus::Error);
	auto empty = message([](sdbus::Message&) {});
	EXPECT_THROW((void)dbus::PropertiesChanged::read(empty), sdbus::Error);
	// Garbage: a{ss} where a{sv} belongs, a number where the interface belongs, a value that is
	// not a variant.
	auto notVariants = message([&](sdbus::Message& m) {
		m << std::string("i") << std::map<std::string, std::string>{{"A", "b"}} << std::vector<std::string>{};
	});
	EXPECT_THROW((void)dbus::PropertiesChanged::read(notVariants), sdbus::Error);
	auto number = message([&](sdbus::Message& m) { m << uint32_t(1) << changed << std::vector<std::string>{}; });
	EXPECT_THROW((void)dbus::PropertiesChanged::read(number), sdbus::Error);
	auto bare = message([](sdbus::Message& m) { m << uint32_t(7); });
	EXPECT_THROW((void)dbus::Value::read(bare), sdbus::Error);
	// Invalidated names that are not strings.
	auto badInvalidated = message([&](sdbus::Message& m) { m << std::string("i") << changed << std::vector<uint32_t>{1}; });
	EXPECT_THROW((void)dbus::PropertiesChanged::read(badInvalidated), sdbus::Error);
}

TEST(DbusValue, AnUnreadValueKeepsOnlyItsSignature) {
	auto v = dbus::Value::unread("a{sv}");
	EXPECT_TRUE(v.unread());
	EXPECT_FALSE(v.empty());
	EXPECT_EQ(v.signature(), "a{sv}");
	EXPECT_EQ(v.variant(), nullptr);
	EXPECT_EQ(dbus::asString(v), std::nullopt);
	EXPECT_EQ(dbus::asStrings(dbus::Value::unread("as")), std::nullopt);
	EXPECT_EQ((dbus::as<std::vector<std::string>>(dbus::Value::unread("as"))), std::nullopt);
	EXPECT_EQ(dbus::variantToJson(v), nullptr);
	EXPECT_FALSE(readOne(Variant(std::string("x"))).unread());

	dbus::PropertyReader reader("test");
	EXPECT_EQ(reader.string({{"Title", v}}, "/item", "Title"), std::nullopt);   // reported as mistyped
	EXPECT_EQ(reader.warnings(), 1u);
}

TEST(DbusValue, IsSmall) {
	// The point of the type: a cached simple property costs a map node and this, not a message.
	EXPECT_LE(sizeof(dbus::Value), 48u);
	EXPECT_EQ(dbus::Value().signature(), "");
	EXPECT_TRUE(dbus::Value(Variant()).empty());
	EXPECT_EQ(dbus::Value::texts({"/a"}, 'o').signature(), "ao");
	EXPECT_EQ(dbus::Value::integer('u', 7).toVariant().get<uint32_t>(), 7u);
}
