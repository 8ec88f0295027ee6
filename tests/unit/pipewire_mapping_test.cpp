// Every mapping of the pipewire backend (daemon/backends/pipewire/mapping.hpp): the cubic volume
// scale, channel names, node types, link states, availability, the default metadata's values,
// application/media properties, where libpipewire looks for its socket, and peak detection,
// held against the enums protocol/api/audio.json documents.

#ifdef QSD_HAVE_PIPEWIRE_BACKEND

#include "backends/pipewire/mapping.hpp"
#include "helpers.hpp"

#include <qsd/protocol/api.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace qsd;
using namespace qsd::pipewire;

using qsd::testing::schemaEnum;

TEST(PipewireVolume, IsTheCubeRootOfTheLinearVolumeAsWpctlShowsIt) {
	// wpctl set-volume 0.35 stores 0.042875 (testenv.md); pactl 80 % stores 0.512.
	EXPECT_NEAR(cubicFromLinear(0.042875), 0.35, 1e-12);
	EXPECT_NEAR(cubicFromLinear(0.512), 0.8, 1e-12);
	EXPECT_DOUBLE_EQ(cubicFromLinear(1.0), 1.0);
	EXPECT_DOUBLE_EQ(cubicFromLinear(8.0), 2.0);   // above 100 % is allowed
	EXPECT_FLOAT_EQ(linearFromCubic(0.35), 0.042875f);
	EXPECT_FLOAT_EQ(linearFromCubic(0.5), 0.125f);
	EXPECT_FLOAT_EQ(linearFromCubic(2.0), 8.0f);
}

TEST(PipewireVolume, ReadsNegativeAndNonFiniteValuesAsZero) {
	// PipeWire stores what it is given: pw-cli set-param ... channelVolumes [-1] is kept.
	EXPECT_EQ(cubicFromLinear(-1.0), 0.0);
	EXPECT_EQ(cubicFromLinear(std::nan("")), 0.0);
	EXPECT_EQ(cubicFromLinear(std::numeric_limits<double>::infinity()), 0.0);
	EXPECT_EQ(linearFromCubic(-0.5), 0.0f);
}

TEST(PipewireVolume, RoundTripsThroughFloatToTheSameValue) {
	for (double v: {0.0, 0.01, 0.1, 0.25, 0.3333, 0.35, 0.5, 0.7, 0.999, 1.0, 1.5, 3.0, 10.0}) {
		VolumeState s;
		s.linear = {linearFromCubic(v)};
		auto back = cubicVolumes(s);
		ASSERT_EQ(back.size(), 1u);
		EXPECT_TRUE(sameVolume(back[0], v)) << v << " came back as " << back[0];
		EXPECT_NEAR(back[0], v, 1e-6) << v;
	}
	EXPECT_FALSE(sameVolume(0.5, 0.51));
	EXPECT_FALSE(sameVolume(0.0, 0.001));
}

namespace {

// What ACP (spa/plugins/alsa/acp) gives back for a linear volume written to a route: PulseAudio's
// pa_sw_volume_from_linear, then pa_sw_volume_to_linear as a float; with `steps` hardware steps
// and no dB scale, the mixer's step nearest to it (alsa-mixer.c to_alsa_volume/from_alsa_volume).
float acpStored(float linear, long steps = 0) {
	constexpr double norm = 65536.0;
	long v = linear <= 0 ? 0 : std::lround(std::cbrt(double(linear)) * norm);
	if (steps > 0) {
		long hw = std::clamp(std::lround(double(v) * double(steps) / norm), 0L, steps);
		v = std::lround(double(hw) * norm / double(steps));
	}
	if (v == long(norm)) return 1.0f;
	double f = double(v) / norm;
	return float(f * f * f);
}

} // namespace

TEST(PipewireVolume, IsTheSameOnACardWithinItsQuantum) {
	// ACP keeps route volumes as 16-bit cubic steps: 0.1 reads back 0.100006, further than a
	// float's error, and volumeStep says so (1/65537, n_volume_steps = PA_VOLUME_NORM + 1).
	VolumeState route;
	route.step = float(1.0 / 65537.0);
	double quantum = routeQuantum(route);
	for (double v = 0.0; v <= 1.5; v += 0.001) {
		VolumeState s;
		s.linear = {acpStored(linearFromCubic(v))};
		double back = cubicVolumes(s)[0];
		EXPECT_TRUE(sameVolume(back, v, quantum)) << v << " came back as " << back;
	}
	VolumeState s;
	s.linear = {acpStored(linearFromCubic(0.1))};
	EXPECT_FALSE(sameVolume(cubicVolumes(s)[0], 0.1)) << "a float's tolerance is too small for a card";
	// Not reported (a Bluetooth route): WirePlumber's default step, which is ACP's.
	EXPECT_DOUBLE_EQ(routeQuantum(VolumeState{}), 1.0 / 65536.0);
	VolumeState bogus;
	bogus.step = std::nanf("");
	EXPECT_DOUBLE_EQ(routeQuantum(bogus), 1.0 / 65536.0);
	bogus.step = 2.0f;
	EXPECT_DOUBLE_EQ(routeQuantum(bogus), 1.0 / 65536.0);
	// Still not the next step.
	EXPECT_FALSE(sameVolume(0.1 + 2.0 / 65536.0, 0.1, quantum));
}

TEST(PipewireVolume, IsTheSameOnAMixerWithoutDbScaleWithinHalfAHardwareStep) {
	// 32 hardware steps (0..31): volumeStep 1/32, a step is 1/31 on the cubic scale.
	VolumeState route;
	route.step = 1.0f / 32.0f;
	double quantum = routeQuantum(route);
	for (double v = 0.0; v <= 1.0; v += 0.001) {
		VolumeState s;
		s.linear = {acpStored(linearFromCubic(v), 31)};
		double back = cubicVolumes(s)[0];
		EXPECT_TRUE(sameVolume(back, v, quantum)) << v << " came back as " << back;
	}
	// The neighbouring step is a change.
	EXPECT_FALSE(sameVolume(16.0 / 31.0, 17.0 / 31.0, quantum));
}

TEST(PipewireVolume, KeepsTheBalanceWhenTheMeanChangesAsQuickshellDoes) {
	std::vector<double> v = {0.2, 0.4};
	EXPECT_DOUBLE_EQ(meanVolume(v), 0.3);
	auto scaled = scaleVolumes(v, 0.6);
	ASSERT_EQ(scaled.size(), 2u);
	EXPECT_DOUBLE_EQ(scaled[0], 0.4);
	EXPECT_DOUBLE_EQ(scaled[1], 0.8);
	// From silence every channel takes the new value.
	EXPECT_EQ(scaleVolumes(std::vector<double>{0.0, 0.0}, 0.5), (std::vector<double>{0.5, 0.5}));
	EXPECT_EQ(meanVolume({}), 0.0);
	EXPECT_TRUE(scaleVolumes({}, 1.0).empty());
}

TEST(PipewireVolume, MakesTheAudioObjectOfANode) {
	VolumeState s;
	s.linear = {0.125f, 0.125f};
	s.channelMap = {3, 4};
	s.mute = true;
	auto j = audioJson(s);
	EXPECT_EQ(j["volume"], 0.5);
	EXPECT_EQ(j["volumes"], json::array({0.5, 0.5}));
	EXPECT_EQ(j["channels"], json::array({"frontLeft", "frontRight"}));
	EXPECT_EQ(j["muted"], true);
	// Fewer positions than volumes (PipeWire takes any array): the rest are unknown.
	s.linear = {1.0f, 0.0f, 0.008f};
	s.channelMap = {2};
	s.mute.reset();
	j = audioJson(s);
	EXPECT_EQ(j["channels"], json::array({"mono", "unknown", "unknown"}));
	EXPECT_EQ(j["volumes"], json::array({1.0, 0.0, 0.2}));
	EXPECT_NEAR(j["volume"].get<double>(), 0.4, 1e-9);
	EXPECT_EQ(j["muted"], false);
	// A node with only a master volume.
	VolumeState master;
	master.volume = 0.125f;
	EXPECT_TRUE(master.usable());
	EXPECT_EQ(audioJson(master)["volume"], 0.5);
	EXPECT_EQ(audioJson(master)["volumes"], json::array());
	EXPECT_FALSE(VolumeState{}.usable());
}

TEST(PipewireChannels, UseQuickshellsNamesInCamelCase) {
	const std::map<uint32_t, std::string> expected = {
	    {0, "unknown"},  {1, "na"},          {2, "mono"},      {3, "frontLeft"},           {4, "frontRight"},
	    {5, "frontCenter"}, {6, "lowFrequencyEffects"}, {7, "sideLeft"}, {8, "sideRight"}, {11, "rearCenter"},
	    {12, "rearLeft"}, {13, "rearRight"}, {25, "lowFrequencyEffects2"}, {37, "bottomRightCenter"},
	    {0x1000, "aux0"}, {0x1003, "aux3"},  {0x1fff, "aux4095"}, {0x10000, "custom0"}, {0x10004, "custom4"},
	    {38, "unknown"},  {0x0fff, "unknown"}, {0x2000, "unknown"}};
	auto documented = schemaEnum("AudioChannel");
	for (const auto& [id, name]: expected) {
		EXPECT_EQ(channelName(id), name) << id;
		if (name.rfind("aux", 0) != 0 && name.rfind("custom", 0) != 0) {
			EXPECT_TRUE(documented.count(name)) << name;
		}
	}
	for (uint32_t i = 0; i < 38; ++i) EXPECT_TRUE(documented.count(channelName(i))) << i;
	EXPECT_EQ(documented.size(), 38u);
}

TEST(PipewireNodeTypes, FollowMediaClassWithQuickshellsFlags) {
	struct Case {
		const char* mediaClass;
		NodeType type;
		const char* name;
		bool sink, stream, audio;
	};
	const Case cases[] = {
	    {"Audio/Sink", NodeType::AudioSink, "audioSink", true, false, true},
	    {"Audio/Source", NodeType::AudioSource, "audioSource", false, false, true},
	    {"Audio/Source/Virtual", NodeType::AudioSource, "audioSource", false, false, true},
	    {"Audio/Duplex", NodeType::AudioDuplex, "audioDuplex", true, false, true},
	    {"Stream/Output/Audio", NodeType::AudioOutStream, "audioOutStream", true, true, true},
	    {"Stream/Input/Audio", NodeType::AudioInStream, "audioInStream", false, true, true},
	    {"Video/Source", NodeType::VideoSource, "videoSource", false, false, false},
	    {"Video/Sink", NodeType::VideoSink, "videoSink", true, false, false},
	    {"Midi/Bridge", NodeType::Other, "other", false, false, false},
	    {"Audio/SinkX", NodeType::Other, "other", false, false, false},
	    {"Stream/Output/Video", NodeType::Other, "other", false, false, false},
	    {"", NodeType::Other, "other", false, false, false},
	};
	auto documented = schemaEnum("AudioNodeType");
	for (const auto& c: cases) {
		EXPECT_EQ(nodeType(c.mediaClass), c.type) << c.mediaClass;
		EXPECT_STREQ(toString(c.type), c.name);
		EXPECT_EQ(isSink(c.type), c.sink) << c.mediaClass;
		EXPECT_EQ(isStream(c.type), c.stream) << c.mediaClass;
		EXPECT_EQ(isAudio(c.type), c.audio) << c.mediaClass;
		EXPECT_TRUE(documented.count(c.name)) << c.name;
	}
	EXPECT_EQ(documented.size(), 8u);
}

TEST(PipewireNodeTypes, TellMonitoringStreamsApart) {
	EXPECT_TRUE(isMonitorStream({{"media.category", "Monitor"}}));
	EXPECT_TRUE(isMonitorStream({{"media.category", "Manager"}}));
	EXPECT_TRUE(isMonitorStream({{"stream.monitor", "true"}}));
	EXPECT_FALSE(isMonitorStream({{"media.category", "Playback"}}));
	EXPECT_FALSE(isMonitorStream({{"stream.monitor", "false"}}));
	EXPECT_FALSE(isMonitorStream({}));
}

TEST(PipewireNodeTypes, TellMonitorsFromRecorders) {
	// qsd's own level meter, pavucontrol's (media.category Manager), cava on a sink's monitor.
	EXPECT_TRUE(isMonitorNode(NodeType::AudioInStream, {{"media.category", "Monitor"}, {"stream.monitor", "true"}}, false));
	EXPECT_TRUE(isMonitorNode(NodeType::AudioInStream, {{"media.category", "Manager"}}, false));
	EXPECT_TRUE(isMonitorNode(NodeType::AudioInStream, {{"stream.capture.sink", "true"}}, false));
	EXPECT_TRUE(isMonitorNode(NodeType::AudioInStream, {}, true));
	// A recorder (pw-record, a call) is not; a sink or a playback stream never is.
	EXPECT_FALSE(isMonitorNode(NodeType::AudioInStream, {{"media.role", "Communication"}}, false));
	EXPECT_FALSE(isMonitorNode(NodeType::AudioSink, {}, false));
	EXPECT_FALSE(isMonitorNode(NodeType::AudioOutStream, {{"stream.capture.sink", "true"}}, true));
	EXPECT_FALSE(isMonitorNode(NodeType::AudioInStream, {{"stream.capture.sink", "false"}}, false));
}

TEST(PipewireNodeTypes, TellWhatALinkCaptures) {
	using enum NodeType;
	EXPECT_EQ(captureOf(AudioSource, "alsa", true, AudioInStream), Capture::Microphone);
	EXPECT_EQ(captureOf(AudioSource, "", false, AudioInStream), Capture::Microphone);   // a virtual source
	EXPECT_EQ(captureOf(AudioSource, "alsa", true, AudioSink), Capture::None);          // a loopback into a sink
	EXPECT_EQ(captureOf(AudioSink, "alsa", true, AudioInStream), Capture::None);        // a sink's monitor
	EXPECT_EQ(captureOf(VideoSource, "v4l2", true, Other), Capture::Camera);
	EXPECT_EQ(captureOf(VideoSource, "libcamera", true, Other), Capture::Camera);
	EXPECT_EQ(captureOf(VideoSource, "", false, Other), Capture::Screencast);            // xdg-desktop-portal
	EXPECT_EQ(captureOf(VideoSource, "", true, Other), Capture::None);                   // some other device
	EXPECT_EQ(captureOf(VideoSource, "bluez5", false, Other), Capture::None);
	EXPECT_EQ(captureOf(VideoSink, "", false, Other), Capture::None);
	EXPECT_STREQ(toString(Capture::Microphone), "microphone");
	EXPECT_STREQ(toString(Capture::Camera), "camera");
	EXPECT_STREQ(toString(Capture::Screencast), "screencast");
}

TEST(PipewireEnums, NameLinkStatesAvailabilityAndDirections) {
	const std::map<int, std::string> states = {{-2, "error"},       {-1, "unlinked"}, {0, "init"},
	                                           {1, "negotiating"},   {2, "allocating"}, {3, "paused"},
	                                           {4, "active"},        {5, "unknown"},   {-3, "unknown"}};
	auto documented = schemaEnum("AudioLinkState");
	for (const auto& [v, name]: states) {
		EXPECT_EQ(linkStateName(v), name) << v;
		EXPECT_TRUE(documented.count(name)) << name;
	}
	EXPECT_EQ(documented.size(), 8u);
	EXPECT_STREQ(availabilityName(0), "unknown");
	EXPECT_STREQ(availabilityName(1), "no");
	EXPECT_STREQ(availabilityName(2), "yes");
	EXPECT_STREQ(availabilityName(7), "unknown");
	EXPECT_EQ(schemaEnum("AudioAvailability"), (std::set<std::string>{"unknown", "no", "yes"}));
	EXPECT_STREQ(directionName(0), "input");
	EXPECT_STREQ(directionName(1), "output");
	EXPECT_EQ(schemaEnum("AudioDirection"), (std::set<std::string>{"input", "output"}));
}

TEST(PipewireDefaults, ReadTheNameOfTheDefaultMetadataValue) {
	EXPECT_EQ(defaultNodeName(R"({"name":"sink_a"})"), "sink_a");
	EXPECT_EQ(defaultNodeName(R"({ "name": "alsa_output.pci" })"), "alsa_output.pci");   // wpctl's spacing
	EXPECT_EQ(defaultNodeName("plain_name"), "plain_name");
	EXPECT_EQ(defaultNodeName(R"("quoted")"), "quoted");
	EXPECT_EQ(defaultNodeName(""), std::nullopt);
	EXPECT_EQ(defaultNodeName(R"({"name":""})"), std::nullopt);
	EXPECT_EQ(defaultNodeName(R"({"other":1})"), std::nullopt);
	EXPECT_EQ(defaultNodeName("[1,2]"), std::nullopt);
	EXPECT_EQ(defaultNodeValue("sink_a"), R"({"name":"sink_a"})");
	EXPECT_EQ(defaultNodeName(*defaultNodeValue("a \"b\"")), "a \"b\"");
	EXPECT_EQ(defaultNodeValue("bad_\xff"), std::nullopt);   // JSON's strings are UTF-8
}

TEST(PipewireProperties, FillTheApplicationFromTheNodeThenItsClient) {
	Props node = {{"application.name", "Firefox"}, {"media.name", "Tab"}, {"media.role", "Music"}};
	Props client = {{"application.name", "ignored"}, {"application.process.id", "4242"},
	                {"application.process.binary", "firefox"}, {"application.icon-name", "firefox"}};
	auto app = applicationJson(node, &client);
	EXPECT_EQ(app, (json{{"name", "Firefox"}, {"iconName", "firefox"}, {"processId", 4242}, {"binary", "firefox"}}));
	EXPECT_EQ(applicationJson(node, nullptr),
	          (json{{"name", "Firefox"}, {"iconName", nullptr}, {"processId", nullptr}, {"binary", nullptr}}));
	EXPECT_EQ(applicationJson({{"application.process.id", "x12"}}, nullptr)["processId"], nullptr);
	EXPECT_EQ(mediaJson(node), (json{{"name", "Tab"}, {"title", nullptr}, {"artist", nullptr}, {"role", "Music"}}));
	EXPECT_EQ(propInt({{"k", "-3"}}, "k"), -3);
	EXPECT_EQ(propInt({{"k", "3x"}}, "k"), std::nullopt);
	EXPECT_EQ(propString({}, "k"), nullptr);
}

TEST(PipewireProperties, WatchedPropertiesAreBounded) {
	bool cut = true;
	PropItems items = {{"node.name", "sink"}, {"media.class", "Audio/Sink"}, {"node.name", "again"}, {"", "empty key"}};
	auto p = watchedProps(items, &cut);
	// A key listed twice keeps its first value; an empty key is left out.
	EXPECT_EQ(p, (Props{{"media.class", "Audio/Sink"}, {"node.name", "sink"}}));
	EXPECT_TRUE(cut);
	p = watchedProps({{"a", "1"}, {"b", ""}}, &cut);
	EXPECT_EQ(p, (Props{{"a", "1"}, {"b", ""}}));
	EXPECT_FALSE(cut);

	// The first kMaxWatchedProps in PipeWire's order.
	std::vector<std::string> keys;
	for (int i = 0; i < 300; ++i) keys.push_back("k" + std::to_string(1000 + i));
	items.clear();
	for (const auto& k: keys) items.emplace_back(k, "v");
	p = watchedProps(items, &cut);
	EXPECT_EQ(p.size(), kMaxWatchedProps);
	EXPECT_TRUE(p.count("k1000") && p.count("k1255") && !p.count("k1256"));
	EXPECT_TRUE(cut);

	// A key over 255 bytes is left out; a value is cut at a character after kMaxPropBytes.
	std::string longKey(256, 'k'), okKey(255, 'k');
	std::string value = "a";
	for (int i = 0; i < 600; ++i) value += "\xc3\xa9";   // é: byte 1024 is the middle of one
	p = watchedProps({{longKey, "x"}, {okKey, "y"}, {"v", value}}, &cut);
	EXPECT_FALSE(p.count(longKey));
	EXPECT_EQ(p.at(okKey), "y");
	EXPECT_EQ(p.at("v").size(), 1023u);
	EXPECT_EQ(p.at("v"), value.substr(0, 1023));
	EXPECT_TRUE(cut);

	// No more once keys and values reach kMaxWatchedPropsBytes.
	std::vector<std::string> big;
	for (int i = 0; i < 100; ++i) big.push_back("key" + std::to_string(100 + i));
	items.clear();
	std::string kib(1000, 'x');
	for (const auto& k: big) items.emplace_back(k, kib);
	p = watchedProps(items, &cut);
	size_t bytes = 0;
	for (const auto& [k, v]: p) bytes += k.size() + v.size();
	EXPECT_LE(bytes, kMaxWatchedPropsBytes);
	EXPECT_EQ(p.size(), kMaxWatchedPropsBytes / 1006);
	EXPECT_TRUE(cut);
}

TEST(PipewireRoutes, PickTheRouteWhoseVolumeWpctlUses) {
	RouteParam speaker;
	speaker.index = 0;
	speaker.device = 0;
	speaker.props = VolumeState{{0.5f, 0.5f}, {3, 4}, false, std::nullopt};
	RouteParam mic;
	mic.index = 2;
	mic.device = 1;
	mic.props = VolumeState{{1.0f}, {2}, false, std::nullopt};
	RouteParam bare;   // an active route without volume props
	bare.index = 3;
	bare.device = 2;
	std::vector<RouteParam> routes = {speaker, mic, bare};
	EXPECT_EQ(volumeRoute(routes, 0)->index, 0);
	EXPECT_EQ(volumeRoute(routes, 1)->index, 2);
	EXPECT_EQ(volumeRoute(routes, 2), nullptr);
	EXPECT_EQ(volumeRoute(routes, 5), nullptr);
	EXPECT_EQ(routeJson(speaker)["direction"], "input");
	ProfileParam p{1, "output:analog-stereo", "Analog Stereo Output", 2, 10};
	EXPECT_EQ(profileJson(p),
	          (json{{"index", 1}, {"name", "output:analog-stereo"}, {"description", "Analog Stereo Output"}, {"available", "yes"}}));
}

TEST(PipewireSocket, IsLookedForWhereLibpipewireLooks) {
	auto with = [](std::map<std::string, std::string> vars) {
		return socketLocations([vars](const char* name) -> const char* {
			auto it = vars.find(name);
			return it == vars.end() ? nullptr : it->second.c_str();
		});
	};
	auto l = with({{"XDG_RUNTIME_DIR", "/run/user/1000"}});
	ASSERT_EQ(l.size(), 2u);
	EXPECT_EQ(l[0].path(), "/run/user/1000/pipewire-0");
	EXPECT_EQ(l[1].path(), "/run/pipewire/pipewire-0");
	l = with({{"XDG_RUNTIME_DIR", "/run/user/1000"}, {"PIPEWIRE_RUNTIME_DIR", "/tmp/pw"}, {"PIPEWIRE_REMOTE", "pipewire-1"}});
	EXPECT_EQ(l[0].path(), "/tmp/pw/pipewire-1");
	l = with({{"XDG_RUNTIME_DIR", "/run/user/1000"}, {"PIPEWIRE_REMOTE", "/srv/pw/sock"}});
	ASSERT_EQ(l.size(), 1u);
	EXPECT_EQ(l[0].dir, "/srv/pw");
	EXPECT_EQ(l[0].name, "sock");
	l = with({});
	ASSERT_EQ(l.size(), 1u);
	EXPECT_EQ(l[0].path(), "/run/pipewire/pipewire-0");
}

TEST(PipewirePeaks, KeepTheLargestSampleOfEachChannel) {
	std::vector<float> peaks;
	const float a[] = {0.1f, -0.2f, -0.5f, 0.3f, 0.25f, -0.1f};   // 3 frames, 2 channels
	accumulatePeaks(a, 3, 2, peaks);
	EXPECT_EQ(peaks, (std::vector<float>{0.5f, 0.3f}));
	const float b[] = {0.05f, 2.0f, std::nanf(""), 0.0f};
	accumulatePeaks(b, 2, 2, peaks);
	EXPECT_EQ(peaks, (std::vector<float>{0.5f, 1.0f}));   // clamped; NaN ignored
	accumulatePeaks(nullptr, 0, 1, peaks);
	EXPECT_EQ(peaks, std::vector<float>{0.0f});
}

#endif
