// SPA pods <-> parsed params (daemon/backends/pipewire/pod.hpp): pods built the way PipeWire and
// ACP build them parse to the expected values, what qsd writes is what wpctl writes, and a
// peer's malformed pods degrade to nothing instead of being trusted.

#ifdef QSD_HAVE_PIPEWIRE_BACKEND

// spa_pod_parse_object is a GNU statement expression, which clang's -Wpedantic reports.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wgnu-statement-expression"
#endif

#include "backends/pipewire/pod.hpp"

#include <spa/param/audio/raw.h>
#include <spa/param/format.h>
#include <spa/param/param.h>
#include <spa/param/profile.h>
#include <spa/param/props.h>
#include <spa/param/route.h>
#include <spa/pod/builder.h>
#include <spa/pod/parser.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace qsd::pipewire;

namespace {

struct Buffer {
	std::vector<uint8_t> data = std::vector<uint8_t>(4096);
	spa_pod_builder b{};
	Buffer() { spa_pod_builder_init(&b, data.data(), uint32_t(data.size())); }
};

const spa_pod* adapterProps(Buffer& buf) {
	// An adapter node's volume Props, as pw-dump shows them for a null sink.
	spa_pod_frame f{};
	float volumes[] = {0.125f, 0.5f};
	uint32_t map[] = {SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR};
	spa_pod_builder_push_object(&buf.b, &f, SPA_TYPE_OBJECT_Props, SPA_PARAM_Props);
	spa_pod_builder_prop(&buf.b, SPA_PROP_volume, 0);
	spa_pod_builder_float(&buf.b, 1.0f);
	spa_pod_builder_prop(&buf.b, SPA_PROP_mute, 0);
	spa_pod_builder_bool(&buf.b, true);
	spa_pod_builder_prop(&buf.b, SPA_PROP_channelVolumes, 0);
	spa_pod_builder_array(&buf.b, sizeof(float), SPA_TYPE_Float, 2, volumes);
	spa_pod_builder_prop(&buf.b, SPA_PROP_channelMap, 0);
	spa_pod_builder_array(&buf.b, sizeof(uint32_t), SPA_TYPE_Id, 2, map);
	spa_pod_builder_prop(&buf.b, SPA_PROP_softVolumes, 0);
	spa_pod_builder_array(&buf.b, sizeof(float), SPA_TYPE_Float, 2, volumes);
	return static_cast<const spa_pod*>(spa_pod_builder_pop(&buf.b, &f));
}

} // namespace

TEST(PipewirePod, ParsesAnAdaptersVolumeProps) {
	Buffer buf;
	auto s = parseProps(adapterProps(buf));
	ASSERT_TRUE(s);
	EXPECT_EQ(s->linear, (std::vector<float>{0.125f, 0.5f}));
	EXPECT_EQ(s->channelMap, (std::vector<uint32_t>{SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR}));
	EXPECT_EQ(s->mute, true);
	EXPECT_EQ(s->volume, 1.0f);
}

TEST(PipewirePod, SkipsPropsWithoutVolumeAndOtherObjects) {
	Buffer buf;
	// The adapter's second Props object holds only its "params" struct.
	spa_pod_frame f[2]{};
	spa_pod_builder_push_object(&buf.b, &f[0], SPA_TYPE_OBJECT_Props, SPA_PARAM_Props);
	spa_pod_builder_prop(&buf.b, SPA_PROP_params, 0);
	spa_pod_builder_push_struct(&buf.b, &f[1]);
	spa_pod_builder_string(&buf.b, "monitor.channel-volumes");
	spa_pod_builder_bool(&buf.b, false);
	spa_pod_builder_pop(&buf.b, &f[1]);
	auto* params = static_cast<const spa_pod*>(spa_pod_builder_pop(&buf.b, &f[0]));
	EXPECT_FALSE(parseProps(params));
	Buffer other;
	EXPECT_FALSE(parseProps(buildProfile(other.b, 1, true)));
	EXPECT_FALSE(parseProps(nullptr));
	EXPECT_FALSE(parseRoute(adapterProps(other)));
	EXPECT_FALSE(parseProfile(nullptr));
}

TEST(PipewirePod, IgnoresFieldsOfTheWrongTypeOrSize) {
	spa_pod_frame f{};
	double wide[] = {0.5, 0.5};   // an array of 8-byte elements claiming to be floats
	Buffer bad;
	spa_pod_builder_push_object(&bad.b, &f, SPA_TYPE_OBJECT_Props, SPA_PARAM_Props);
	spa_pod_builder_prop(&bad.b, SPA_PROP_channelVolumes, 0);
	spa_pod_builder_array(&bad.b, sizeof(double), SPA_TYPE_Float, 2, wide);
	spa_pod_builder_prop(&bad.b, SPA_PROP_mute, 0);
	spa_pod_builder_int(&bad.b, 1);   // not a bool
	spa_pod_builder_prop(&bad.b, SPA_PROP_volume, 0);
	spa_pod_builder_float(&bad.b, 0.5f);
	auto* pod = static_cast<const spa_pod*>(spa_pod_builder_pop(&bad.b, &f));
	auto s = parseProps(pod);
	ASSERT_TRUE(s);   // the volume alone is usable
	EXPECT_TRUE(s->linear.empty());
	EXPECT_FALSE(s->mute);
	EXPECT_EQ(s->volume, 0.5f);
}

TEST(PipewirePod, ParsesProfilesAndRoutesAsAcpBuildsThem) {
	Buffer buf;
	spa_pod_frame f[2]{};
	spa_pod_builder_push_object(&buf.b, &f[0], SPA_TYPE_OBJECT_ParamProfile, SPA_PARAM_EnumProfile);
	spa_pod_builder_add(&buf.b, SPA_PARAM_PROFILE_index, SPA_POD_Int(2), SPA_PARAM_PROFILE_name,
	                    SPA_POD_String("output:analog-stereo"), SPA_PARAM_PROFILE_description,
	                    SPA_POD_String("Analog Stereo Output"), SPA_PARAM_PROFILE_priority, SPA_POD_Int(6500),
	                    SPA_PARAM_PROFILE_available, SPA_POD_Id(SPA_PARAM_AVAILABILITY_yes), 0);
	auto p = parseProfile(static_cast<const spa_pod*>(spa_pod_builder_pop(&buf.b, &f[0])));
	ASSERT_TRUE(p);
	EXPECT_EQ(p->index, 2);
	EXPECT_EQ(p->name, "output:analog-stereo");
	EXPECT_EQ(p->description, "Analog Stereo Output");
	EXPECT_EQ(p->priority, 6500);
	EXPECT_EQ(p->available, uint32_t(SPA_PARAM_AVAILABILITY_yes));

	Buffer rb;
	int32_t profiles[] = {1, 2};
	int32_t devices[] = {0};
	float volumes[] = {0.343f, 0.343f};
	uint32_t map[] = {SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR};
	spa_pod_builder_push_object(&rb.b, &f[0], SPA_TYPE_OBJECT_ParamRoute, SPA_PARAM_Route);
	spa_pod_builder_add(&rb.b, SPA_PARAM_ROUTE_index, SPA_POD_Int(1), SPA_PARAM_ROUTE_direction,
	                    SPA_POD_Id(SPA_DIRECTION_OUTPUT), SPA_PARAM_ROUTE_name, SPA_POD_String("analog-output-headphones"),
	                    SPA_PARAM_ROUTE_description, SPA_POD_String("Headphones"), SPA_PARAM_ROUTE_available,
	                    SPA_POD_Id(SPA_PARAM_AVAILABILITY_no), 0);
	spa_pod_builder_prop(&rb.b, SPA_PARAM_ROUTE_profiles, 0);
	spa_pod_builder_array(&rb.b, sizeof(int32_t), SPA_TYPE_Int, 2, profiles);
	spa_pod_builder_prop(&rb.b, SPA_PARAM_ROUTE_device, 0);
	spa_pod_builder_int(&rb.b, 0);
	spa_pod_builder_prop(&rb.b, SPA_PARAM_ROUTE_props, 0);
	spa_pod_builder_push_object(&rb.b, &f[1], SPA_TYPE_OBJECT_Props, SPA_PARAM_Route);
	spa_pod_builder_prop(&rb.b, SPA_PROP_mute, 0);
	spa_pod_builder_bool(&rb.b, false);
	spa_pod_builder_prop(&rb.b, SPA_PROP_channelVolumes, 0);
	spa_pod_builder_array(&rb.b, sizeof(float), SPA_TYPE_Float, 2, volumes);
	spa_pod_builder_prop(&rb.b, SPA_PROP_channelMap, 0);
	spa_pod_builder_array(&rb.b, sizeof(uint32_t), SPA_TYPE_Id, 2, map);
	spa_pod_builder_pop(&rb.b, &f[1]);
	spa_pod_builder_prop(&rb.b, SPA_PARAM_ROUTE_devices, 0);
	spa_pod_builder_array(&rb.b, sizeof(int32_t), SPA_TYPE_Int, 1, devices);
	auto r = parseRoute(static_cast<const spa_pod*>(spa_pod_builder_pop(&rb.b, &f[0])));
	ASSERT_TRUE(r);
	EXPECT_EQ(r->index, 1);
	EXPECT_EQ(r->direction, uint32_t(SPA_DIRECTION_OUTPUT));
	EXPECT_EQ(r->device, 0);
	EXPECT_EQ(r->name, "analog-output-headphones");
	EXPECT_EQ(r->available, uint32_t(SPA_PARAM_AVAILABILITY_no));
	EXPECT_EQ(r->profiles, (std::vector<int32_t>{1, 2}));
	EXPECT_EQ(r->devices, (std::vector<int32_t>{0}));
	ASSERT_TRUE(r->props);
	EXPECT_EQ(r->props->linear, (std::vector<float>{0.343f, 0.343f}));
	EXPECT_EQ(r->props->mute, false);
	// No volumeStep: nothing but the read-back tolerance depends on it (Quickshell's #807).
	EXPECT_FALSE(r->props->step);

	// ACP's volumeStep (a read-only prop of the route's props) is kept.
	Buffer sb;
	spa_pod_builder_push_object(&sb.b, &f[0], SPA_TYPE_OBJECT_Props, SPA_PARAM_Route);
	spa_pod_builder_prop(&sb.b, SPA_PROP_channelVolumes, 0);
	spa_pod_builder_array(&sb.b, sizeof(float), SPA_TYPE_Float, 2, volumes);
	spa_pod_builder_prop(&sb.b, SPA_PROP_volumeStep, SPA_POD_PROP_FLAG_READONLY);
	spa_pod_builder_float(&sb.b, 1.0f / 65537.0f);
	auto stepped = parseProps(static_cast<const spa_pod*>(spa_pod_builder_pop(&sb.b, &f[0])));
	ASSERT_TRUE(stepped);
	EXPECT_EQ(stepped->step, 1.0f / 65537.0f);
}

TEST(PipewirePod, CutsProfileAndRouteTextsAtTheirBound) {
	// Names and descriptions are cut at a character after kMaxParamTextBytes (256), not at
	// kMaxPropBytes: whoever exports a device chooses them, and real ones are under 64 bytes.
	std::string longName = "p";
	for (int i = 0; i < 300; ++i) longName += "\xc3\xa9";   // é: byte 256 is the middle of one
	std::string exact(kMaxParamTextBytes, 'x');
	Buffer buf;
	spa_pod_frame f{};
	spa_pod_builder_push_object(&buf.b, &f, SPA_TYPE_OBJECT_ParamProfile, SPA_PARAM_EnumProfile);
	spa_pod_builder_add(&buf.b, SPA_PARAM_PROFILE_index, SPA_POD_Int(0), SPA_PARAM_PROFILE_name,
	                    SPA_POD_String(longName.c_str()), SPA_PARAM_PROFILE_description, SPA_POD_String(exact.c_str()),
	                    0);
	auto p = parseProfile(static_cast<const spa_pod*>(spa_pod_builder_pop(&buf.b, &f)));
	ASSERT_TRUE(p);
	EXPECT_EQ(p->name, longName.substr(0, kMaxParamTextBytes - 1));
	EXPECT_EQ(p->description, exact);

	Buffer rb;
	spa_pod_builder_push_object(&rb.b, &f, SPA_TYPE_OBJECT_ParamRoute, SPA_PARAM_EnumRoute);
	spa_pod_builder_add(&rb.b, SPA_PARAM_ROUTE_index, SPA_POD_Int(0), SPA_PARAM_ROUTE_name,
	                    SPA_POD_String(longName.c_str()), SPA_PARAM_ROUTE_description,
	                    SPA_POD_String((exact + "y").c_str()), 0);
	auto r = parseRoute(static_cast<const spa_pod*>(spa_pod_builder_pop(&rb.b, &f)));
	ASSERT_TRUE(r);
	EXPECT_EQ(r->name, longName.substr(0, kMaxParamTextBytes - 1));
	EXPECT_EQ(r->description, exact);
	static_assert(kMaxParamTextBytes < kMaxPropBytes);
}

TEST(PipewirePod, WritesPropsAndRoutesAsWpctlDoes) {
	Buffer buf;
	const spa_pod* props = buildProps(buf.b, std::vector<float>{0.125f, 0.125f}, true);
	auto s = parseProps(props);
	ASSERT_TRUE(s);
	EXPECT_EQ(s->linear, (std::vector<float>{0.125f, 0.125f}));
	EXPECT_EQ(s->mute, true);

	Buffer rb;
	const spa_pod* route = buildRoute(rb.b, 3, 1, std::nullopt, false, true);
	int32_t index = -1, device = -1;
	bool save = false;
	const spa_pod* inner = nullptr;
	ASSERT_EQ(spa_pod_parse_object(route, SPA_TYPE_OBJECT_ParamRoute, nullptr, SPA_PARAM_ROUTE_index, SPA_POD_Int(&index),
	                               SPA_PARAM_ROUTE_device, SPA_POD_Int(&device), SPA_PARAM_ROUTE_props,
	                               SPA_POD_OPT_Pod(&inner), SPA_PARAM_ROUTE_save, SPA_POD_Bool(&save)),
	          4);
	EXPECT_EQ(index, 3);
	EXPECT_EQ(device, 1);
	EXPECT_TRUE(save);
	ASSERT_NE(inner, nullptr);
	auto mute = parseProps(inner);
	ASSERT_TRUE(mute);
	EXPECT_EQ(mute->mute, false);
	EXPECT_TRUE(mute->linear.empty());

	// A port switch carries no props.
	Buffer pb;
	inner = nullptr;
	route = buildRoute(pb.b, 1, 0, std::nullopt, std::nullopt, true);
	spa_pod_parse_object(route, SPA_TYPE_OBJECT_ParamRoute, nullptr, SPA_PARAM_ROUTE_props, SPA_POD_OPT_Pod(&inner));
	EXPECT_EQ(inner, nullptr);

	Buffer fb;
	int32_t profile = -1;
	ASSERT_GE(spa_pod_parse_object(buildProfile(fb.b, 2, true), SPA_TYPE_OBJECT_ParamProfile, nullptr,
	                               SPA_PARAM_PROFILE_index, SPA_POD_Int(&profile)),
	          0);
	EXPECT_EQ(profile, 2);
}

TEST(PipewirePod, ReportsABufferTooSmall) {
	uint8_t tiny[16];
	spa_pod_builder b{};
	spa_pod_builder_init(&b, tiny, sizeof tiny);
	EXPECT_EQ(buildProps(b, std::vector<float>(16, 1.0f), true), nullptr);
}

TEST(PipewirePod, BuildsTheLevelMetersFormat) {
	Buffer buf;
	const spa_pod* format = buildCaptureFormat(buf.b, {SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR});
	ASSERT_NE(format, nullptr);
	uint32_t sampleFormat = 0;
	int32_t channels = 0;
	ASSERT_GE(spa_pod_parse_object(format, SPA_TYPE_OBJECT_Format, nullptr, SPA_FORMAT_AUDIO_format,
	                               SPA_POD_Id(&sampleFormat), SPA_FORMAT_AUDIO_channels, SPA_POD_Int(&channels)),
	          0);
	EXPECT_EQ(sampleFormat, uint32_t(SPA_AUDIO_FORMAT_F32));
	EXPECT_EQ(channels, 2);
}

#endif
