// The typed reads of daemon/dbus/variant.hpp: any integer width where a number is expected, a
// wrong type degrades to nullopt, and PropertyReader warns once per (object, property).

#include "dbus/variant.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace qsd;
using sdbus::Variant;

TEST(VariantReads, AcceptEveryIntegerWidthAsANumber) {
	EXPECT_EQ(dbus::asInt(Variant(uint8_t(7))), 7);
	EXPECT_EQ(dbus::asInt(Variant(int16_t(-3))), -3);
	EXPECT_EQ(dbus::asInt(Variant(uint16_t(65535))), 65535);
	EXPECT_EQ(dbus::asInt(Variant(int32_t(-5))), -5);
	EXPECT_EQ(dbus::asInt(Variant(uint32_t(4000000000u))), 4000000000);
	EXPECT_EQ(dbus::asInt(Variant(int64_t(-9))), -9);
	EXPECT_EQ(dbus::asInt(Variant(uint64_t(12))), 12);
	EXPECT_EQ(dbus::asInt(Variant(uint64_t(UINT64_MAX))), std::nullopt);   // does not fit
	EXPECT_EQ(dbus::asUint(Variant(uint64_t(UINT64_MAX))), UINT64_MAX);
	EXPECT_EQ(dbus::asUint(Variant(int32_t(-1))), std::nullopt);           // negative is not a uint
	EXPECT_EQ(dbus::asDouble(Variant(int32_t(3))), 3.0);
	EXPECT_EQ(dbus::asDouble(Variant(2.5)), 2.5);
	EXPECT_EQ(dbus::asInt(Variant(2.5)), std::nullopt);
	EXPECT_EQ(dbus::asInt(Variant(true)), std::nullopt);
	EXPECT_EQ(dbus::asInt(Variant(std::string("5"))), std::nullopt);
}

TEST(VariantReads, ReadStringsPathsAndBytesByTheirSignature) {
	EXPECT_EQ(dbus::asString(Variant(std::string("x"))), "x");
	EXPECT_EQ(dbus::asString(Variant(sdbus::ObjectPath("/a/b"))), "/a/b");
	EXPECT_EQ(dbus::asString(Variant(sdbus::Signature("a{sv}"))), "a{sv}");
	EXPECT_EQ(dbus::asString(Variant(int32_t(1))), std::nullopt);
	EXPECT_EQ(dbus::asStrings(Variant(std::vector<sdbus::ObjectPath>{sdbus::ObjectPath("/p")})),
	          std::vector<std::string>{"/p"});
	EXPECT_EQ(dbus::asStrings(Variant(std::vector<int32_t>{1})), std::nullopt);
	EXPECT_EQ(dbus::asBytes(Variant(std::vector<uint8_t>{1, 2})), (std::vector<uint8_t>{1, 2}));
	EXPECT_EQ(dbus::asBool(Variant(uint32_t(1))), std::nullopt);   // D-Bus booleans are 'b' only
	EXPECT_EQ(dbus::asBool(Variant(false)), false);
	using Pixmap = sdbus::Struct<int32_t, int32_t, std::vector<uint8_t>>;
	auto pixmaps = dbus::as<std::vector<Pixmap>>(Variant(std::vector<Pixmap>{Pixmap(1, 1, std::vector<uint8_t>{0, 0, 0, 0})}));
	ASSERT_TRUE(pixmaps);
	EXPECT_EQ(std::get<0>((*pixmaps)[0]), 1);
	EXPECT_EQ(dbus::as<std::vector<Pixmap>>(Variant(std::string("x"))), std::nullopt);
	EXPECT_EQ(dbus::signatureOf(Variant(std::vector<Pixmap>{})), "a(iiay)");
}

TEST(PropertyReader, DegradesAWrongTypeAndWarnsOncePerObjectAndProperty) {
	dbus::PropertyReader reader("test");
	dbus::Properties props{{"Percentage", Variant(std::string("high"))}, {"Online", Variant(true)}};
	EXPECT_EQ(reader.number(props, "/dev/a", "Percentage"), std::nullopt);
	EXPECT_EQ(reader.number(props, "/dev/a", "Percentage"), std::nullopt);
	EXPECT_EQ(reader.warnings(), 1u);
	EXPECT_EQ(reader.number(props, "/dev/b", "Percentage"), std::nullopt);
	EXPECT_EQ(reader.warnings(), 2u);
	EXPECT_EQ(reader.boolean(props, "/dev/a", "Online"), true);
	EXPECT_EQ(reader.boolean(props, "/dev/a", "Missing"), std::nullopt);   // missing: no warning
	EXPECT_EQ(reader.warnings(), 2u);
	reader.forget("/dev/a");
	EXPECT_EQ(reader.warnings(), 1u);
	EXPECT_EQ(reader.number(props, "/dev/a", "Percentage"), std::nullopt);
	EXPECT_EQ(reader.warnings(), 2u);
	props["Percentage"] = Variant(42.0);   // the peer sends the right type again
	EXPECT_EQ(reader.number(props, "/dev/a", "Percentage"), 42.0);
	reader.wrongType("/dev/c", "Icon", props);
	EXPECT_EQ(reader.warnings(), 3u);
	reader.clear();
	EXPECT_EQ(reader.warnings(), 0u);
}
