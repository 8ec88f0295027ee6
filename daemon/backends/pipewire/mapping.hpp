#pragma once
// Pure mapping from PipeWire values (properties, parsed params, enums) to /audio tree values.
// No I/O, no libpipewire types: every function here is unit-tested
// (tests/unit/pipewire_mapping_test.cpp) and documented in docs/backends/pipewire.md.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qsd::pipewire {

using json = nlohmann::json;
// A PipeWire property dictionary (object info props, registry global props).
using Props = std::map<std::string, std::string, std::less<>>;

// The bytes of a property value that are kept (cut at a character): any client of the session's
// PipeWire (any application that plays sound) sets its own, of any length, and every subscriber
// of /audio is sent them. Names and descriptions are far shorter; an application's media.name
// (a page's title) is at most a few hundred bytes.
constexpr size_t kMaxPropBytes = 1024;

// The entries of each param list kept per device (EnumProfile, EnumRoute, and the active Route
// of each card device); the rest of an answer is dropped unread. Any client may export a device
// (module-client-device is loaded by default), and every subscriber of /audio is sent its lists:
// one device with 2000 profiles of 4 KB names made /audio 18 MB. An ACP card lists tens of
// profiles and a route per port, so 128 is far above real hardware.
constexpr size_t kMaxDeviceParams = 128;
// The bytes kept of a profile's or a route's name and description, cut at a character. Real ones
// are under 64 bytes ("output:analog-stereo+input:analog-stereo", "High Fidelity Playback (A2DP
// Sink, codec SBC-XQ)"); at kMaxPropBytes a device at every bound was 547 KB of /audio and
// 1.5 MiB of qsd's heap, at 256 it is 152 KB and 0.6 MiB.
constexpr size_t kMaxParamTextBytes = 256;
// The devices bound and shown, in all: the first ones to appear; a device past it is remembered
// by its global id (with what binding it takes: nothing of it is read) and bound when a shown
// one goes. Not per client: WirePlumber exports every device of the machine (ALSA cards,
// Bluetooth, cameras: tens) from one client, while one hostile client's 100 devices at every
// bound above took 151 MiB of qsd's heap and put 55 MB in every resync of /audio.
constexpr size_t kMaxDevices = 128;
// The devices whose params are enumerated at once; the others wait their turn, first come first,
// and the next ones start when every enumeration of the round is answered. libpipewire's
// connection reads into one buffer that grows to hold the answers that arrive without a pause
// and never shrinks (module-protocol-native/connection.c, 0.3.65), so every device's answers at
// once, from a client exporting 300 devices of 200 profiles and routes of 4 KB names, kept up to
// 208 MiB of it for the connection's life. A round's pause bounds it to a round's answers (4-19
// MiB there). A real device's answers are a few KiB, and a round costs one more round trip:
// tens of devices take a few, not measurable at start-up; one device per round left 9 MiB but
// made 101 small devices 15-20 ms slower to appear.
constexpr size_t kMaxEnumeratingDevices = 4;
// The times a device in a round may start its enumerations again (a change announced while
// they were answered) before it waits for a later round, so that one device announcing changes
// without end cannot hold the others back.
constexpr int kMaxEnumerationPasses = 8;

// ---- volumes

// PipeWire keeps linear channel volumes (SPA_PROP_channelVolumes); the tree uses the cubic
// scale `wpctl get-volume` and pavucontrol show (cube root). Negative, NaN and infinite linear
// values read as 0; cubic values map back with v^3.
[[nodiscard]] double cubicFromLinear(double linear);
[[nodiscard]] float linearFromCubic(double cubic);
// The mean of the channel volumes (Quickshell's PwNodeAudio.volume); 0 for no channels.
[[nodiscard]] double meanVolume(std::span<const double> volumes);
// Quickshell's volume setter: every channel scaled by newMean / oldMean, so the balance stays;
// when the old mean is 0 every channel takes newMean.
[[nodiscard]] std::vector<double> scaleVolumes(std::span<const double> volumes, double newMean);
// Whether `read`, a cubic volume read back, is what writing the cubic volume `written` gives on a
// control that stores volumes in steps of `quantum` (cubic scale; 0 for a float, which comes
// back within a few ulps). A step stores everything within half a step of it.
[[nodiscard]] bool sameVolume(double read, double written, double quantum = 0);

// Volume, mute and channel map as PipeWire reports them (node Props or a device Route's props).
struct VolumeState {
	std::vector<float> linear;          // channelVolumes
	std::vector<uint32_t> channelMap;   // SPA_AUDIO_CHANNEL_* ids
	std::optional<bool> mute;
	std::optional<float> volume;        // the single master volume, used when there are no channels
	std::optional<float> step;          // volumeStep: a card's quantum on the cubic scale
	[[nodiscard]] bool usable() const { return !linear.empty() || volume.has_value(); }
};
// The step in which a sound card's Route stores volumes, on the cubic scale. ACP (ALSA cards)
// keeps every route volume as PulseAudio's 16-bit cubic step, lround(cbrt(v) * 65536), and
// reports volumeStep 1/65537 for it; a mixer without a dB scale reports 1/(its hardware steps),
// and stores the hardware step it reached. A route that reports none gets 1/65536, as
// WirePlumber's mixer API assumes. Node Props store floats: their quantum is 0.
[[nodiscard]] double routeQuantum(const VolumeState& route);
// The node's `audio` object: {volume, volumes, channels, muted}, cubic scale.
[[nodiscard]] json audioJson(const VolumeState& state);
[[nodiscard]] std::vector<double> cubicVolumes(const VolumeState& state);

// SPA_AUDIO_CHANNEL_* -> Quickshell's PwAudioChannel names in camelCase ("frontLeft", "mono",
// "aux3", "custom65540"...). Unknown ids give "unknown".
[[nodiscard]] std::string channelName(uint32_t channel);

// ---- node kinds

// Quickshell's composite PwNodeType, from media.class.
enum class NodeType { AudioSink, AudioSource, AudioDuplex, AudioOutStream, AudioInStream, VideoSource, VideoSink, Other };
[[nodiscard]] NodeType nodeType(std::string_view mediaClass);
// The same, from an object's props (its media.class; Other without one).
[[nodiscard]] NodeType nodeType(const Props& props);
[[nodiscard]] const char* toString(NodeType type);
// Quickshell's flags: a playback stream (audioOutStream) carries the Sink flag, as do sinks,
// duplex nodes and video sinks.
[[nodiscard]] bool isSink(NodeType type);
[[nodiscard]] bool isStream(NodeType type);
[[nodiscard]] bool isAudio(NodeType type);
// Level meters and other monitoring streams (media.category Monitor or Manager, or
// stream.monitor): left out of playingTo/capturedFrom, as Quickshell leaves them out of its
// link groups.
[[nodiscard]] bool isMonitorStream(const Props& props);
// A node's isMonitor: it watches rather than records or plays. A monitoring stream (above), or an
// audio recording stream of a sink's monitor: one that asked for it (stream.capture.sink, as
// pipewire-pulse sets it for a ".monitor" source and qsd for a sink's level meter) or one linked
// from a sink (`capturesSink`: a sink's outputs are its monitor ports).
[[nodiscard]] bool isMonitorNode(NodeType type, const Props& props, bool capturesSink);

// What a link from a source node to a consumer captures, for /audio/privacy: an audio recording
// stream linked from an audio source is the microphone; a consumer of a video source is the
// camera when the source's device.api (the node's, else its device's) is v4l2 or libcamera, a
// screencast when the source is no device at all (no device.api, no device.id: a portal's
// stream). Anything else captures nothing here. Monitors are left out by the caller.
enum class Capture { None, Microphone, Camera, Screencast };
[[nodiscard]] Capture captureOf(NodeType source, std::string_view deviceApi, bool device, NodeType consumer);
[[nodiscard]] const char* toString(Capture capture);

// pw_link_state (-2..4) -> "error", "unlinked", "init", "negotiating", "allocating", "paused",
// "active"; other values give "unknown".
[[nodiscard]] const char* linkStateName(int state);
// SPA_PARAM_AVAILABILITY_* (0..2) -> "unknown", "no", "yes".
[[nodiscard]] const char* availabilityName(uint32_t available);
// spa_direction of a route: SPA_DIRECTION_INPUT (0) "input", SPA_DIRECTION_OUTPUT (1) "output".
[[nodiscard]] const char* directionName(uint32_t direction);

// ---- properties

[[nodiscard]] json propString(const Props& props, std::string_view key);     // the value or null
[[nodiscard]] std::optional<int64_t> propInt(const Props& props, std::string_view key);
// {name, iconName, processId, binary} of a stream, from its node's application.* properties,
// each falling back to its client's (pw-cat and other native clients set them on the client).
[[nodiscard]] json applicationJson(const Props& node, const Props* client);
// {name, title, artist, role} from media.name, media.title, media.artist, media.role.
[[nodiscard]] json mediaJson(const Props& node);

// A node's every property, as `properties` shows it while a client watches them
// (audio.watchProperties). Any application that plays sound sets its own stream's, as many and
// as long as it likes, and every subscriber of /audio is sent them: the first kMaxWatchedProps
// in the order PipeWire lists them (the ones a node is made with come first), a key over
// kMaxWatchedPropKey bytes left out, each value cut at a character as the kept properties are
// (kMaxPropBytes), and no more once the values and keys kept reach kMaxWatchedPropsBytes. A key
// listed twice keeps its first value. `cut` is set when anything was left out or cut.
constexpr size_t kMaxWatchedProps = 256;
constexpr size_t kMaxWatchedPropKey = 255;
constexpr size_t kMaxWatchedPropsBytes = 64 * 1024;
using PropItems = std::vector<std::pair<std::string_view, std::string_view>>;
[[nodiscard]] Props watchedProps(const PropItems& items, bool* cut = nullptr);

// The value of a `default` metadata key (default.audio.sink, default.configured.audio.sink...):
// JSON {"name": "<node.name>"}; a bare name is accepted too. Empty or unparsable gives nullopt.
// Parsed once when the value arrives (Graph keeps the name), never per publication.
[[nodiscard]] std::optional<std::string> defaultNodeName(std::string_view value);
// The longest value of such a key that is read. Any client may write the `default` metadata,
// values of any size (PipeWire relayed 8 MB ones), and they stay after it exits; {"name": ...}
// with a node name (kept up to kMaxPropBytes, a real one is tens of bytes) fits many times over.
// A longer value is ignored: the key reads as unset.
constexpr size_t kMaxDefaultValueBytes = 4096;
// The value written for a preferred default: {"name":"<node.name>"} (type Spa:String:JSON).
// nullopt for a name that is not UTF-8 (any client may name its node so): JSON cannot hold it,
// and the session manager's parser (SPA's) refuses such a string.
[[nodiscard]] std::optional<std::string> defaultNodeValue(std::string_view nodeName);

// ---- device params, parsed (pod.hpp parses them from SPA pods)

struct ProfileParam {
	int32_t index = -1;
	std::string name;
	std::string description;
	uint32_t available = 0;
	int32_t priority = 0;
};
struct RouteParam {
	int32_t index = -1;
	uint32_t direction = 0;
	int32_t device = -1;                 // card.profile.device of an active route
	std::string name;
	std::string description;
	uint32_t available = 0;
	int32_t priority = 0;
	std::vector<int32_t> profiles;       // profile indexes the route belongs to
	std::vector<int32_t> devices;        // card devices it can be the port of
	std::optional<VolumeState> props;    // active routes: the hardware volume and mute
};

// {index, name, description, available} of a profile, and of a route without its volume.
[[nodiscard]] json profileJson(const ProfileParam& p);
[[nodiscard]] json routeJson(const RouteParam& r);
// The active route of card device `cardDevice` whose props carry a volume, as WirePlumber's
// mixer API picks it (the route that wpctl reads and writes for the node).
[[nodiscard]] const RouteParam* volumeRoute(const std::vector<RouteParam>& routes, int64_t cardDevice);

// ---- socket location

// Where libpipewire looks for the daemon's socket (pw_context_connect, module-protocol-native's
// local-socket.c): the remote name is $PIPEWIRE_REMOTE, else "pipewire-0"; an absolute name is
// used as is, otherwise it is looked up in $PIPEWIRE_RUNTIME_DIR, else $XDG_RUNTIME_DIR, else
// $HOME, and then in /run/pipewire. `env` returns a variable's value or nullptr.
struct SocketLocation {
	std::string dir;
	std::string name;
	[[nodiscard]] std::string path() const { return dir + "/" + name; }
};
[[nodiscard]] std::vector<SocketLocation> socketLocations(const std::function<const char*(const char*)>& env);

// ---- peaks

// Raises peaks[c] to the largest |sample| of channel c in `frames` interleaved float frames,
// clamped to 0..1; NaN samples are ignored. peaks is resized to `channels`.
void accumulatePeaks(const float* samples, size_t frames, size_t channels, std::vector<float>& peaks);

} // namespace qsd::pipewire
