#pragma once
// Pure mapping from Wayland protocol values to /wayland tree values, and the decisions that do
// not need a connection (which socket, which key, which mode). No I/O and no state: unit-tested
// in tests/unit/wayland_mapping_test.cpp and documented in docs/backends/wayland.md.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qsd::wayland {

using json = nlohmann::json;

// wl_output.transform (0..7) -> "normal", "rotated90", "rotated180", "rotated270", "flipped",
// "flipped90", "flipped180", "flipped270"; nullopt outside the enum.
[[nodiscard]] std::optional<std::string_view> transformName(int32_t transform);
// The inverse; nullopt for an unknown name.
[[nodiscard]] std::optional<int32_t> transformValue(std::string_view name);
// Every transform name, in enum order (for the schema and error data).
[[nodiscard]] std::span<const std::string_view> transformNames();

// A refresh rate in mHz (wl_output.mode, zwlr_output_mode_v1.refresh) -> Hz as a number with
// at most three decimals (59940 -> 59.94); 0 or negative (unknown) -> null.
[[nodiscard]] json refreshHz(int32_t mHz);
// Hz (as a client gives it) -> mHz, rounded; 0 for "unspecified".
[[nodiscard]] int32_t refreshMilliHz(double hz);

// A mode: size in hardware pixels and refresh in mHz (0 = unknown).
struct Mode {
	int32_t width = 0;
	int32_t height = 0;
	int32_t refresh = 0;
	bool preferred = false;
	bool operator==(const Mode&) const = default;
};
// {width, height, refresh} with refresh in Hz (null when unknown).
[[nodiscard]] json modeJson(const Mode& mode);

// The unit of fractional scales (wp_fractional_scale_v1): a derived scale is a multiple of 1/120.
inline constexpr double kScaleDenominator = 120.0;

// The scale an output's logical size (xdg-output) implies for its current mode: mode size /
// logical size, the mode turned for 90 and 270 degree transforms, rounded to the nearest 1/120;
// nullopt when the two dimensions disagree by more than 1 % or a size is not positive.
[[nodiscard]] std::optional<double> impliedScale(const Mode& mode, int32_t transform, std::pair<int32_t, int32_t> logical);

// What wl_output (v2..v4) said about one output, as of its last done.
struct WlOutputInfo {
	std::string name;          // v4 name event; "" before v4
	std::string description;   // v4 description event
	std::string make, model;   // geometry
	int32_t physicalWidth = 0, physicalHeight = 0;   // mm
	int32_t transform = 0;
	int32_t scale = 1;
	std::optional<Mode> mode;  // the mode flagged current
};
// What xdg_output said about it.
struct XdgOutputInfo {
	std::string name, description;   // v2+
	std::optional<std::pair<int32_t, int32_t>> position;   // logical_position
	std::optional<std::pair<int32_t, int32_t>> size;       // logical_size
};
// What zwlr_output_head_v1 said about a head (a head exists for disabled outputs too).
struct HeadInfo {
	std::string name, description, make, model, serial;
	std::optional<std::pair<int32_t, int32_t>> physicalSize;
	bool enabled = false;
	std::optional<Mode> mode;                              // current_mode
	std::optional<std::pair<int32_t, int32_t>> position;
	std::optional<int32_t> transform;
	std::optional<double> scale;
	std::vector<Mode> modes;
};

// The /wayland/outputs/<name> object from whatever is known about one output: its wl_output
// (absent for a disabled head), its xdg_output (absent without xdg-output), its head (absent
// without wlr-output-management). `modes` is present exactly when a head is given; modes
// without a size are left out. An output with a wl_output is enabled whatever its head says.
// Field sources and fallbacks are documented in docs/backends/wayland.md.
[[nodiscard]] json outputJson(const WlOutputInfo* output, const XdgOutputInfo* xdg, const HeadInfo* head);
// The output's name from the same sources: head, wl_output v4, xdg_output v2; "" if none.
[[nodiscard]] std::string outputName(const WlOutputInfo* output, const XdgOutputInfo* xdg, const HeadInfo* head);

// zwlr_foreign_toplevel_handle_v1.state values.
struct ToplevelFlags {
	bool maximized = false, minimized = false, activated = false, fullscreen = false;
	bool operator==(const ToplevelFlags&) const = default;
};
// The state array (uint32 values) -> flags; unknown values are ignored.
[[nodiscard]] ToplevelFlags toplevelFlags(std::span<const uint32_t> states);

// Everything /wayland/toplevels/<key> holds. `flags`, `outputs` and `parent` are known only
// through wlr-foreign-toplevel-management; without it they are null.
struct ToplevelInfo {
	std::string title, appId;
	std::optional<ToplevelFlags> flags;
	std::optional<std::vector<std::string>> outputs;   // output names, sorted
	std::optional<std::string> parent;                 // key of the parent
	bool hasParentField = false;                       // wlr-foreign-toplevel-management bound
};
[[nodiscard]] json toplevelJson(const ToplevelInfo& info);

// Whether an ext-foreign-toplevel-list identifier can be a key as it is: 1..32 printable ASCII
// bytes (what the protocol promises; anything else is not trusted).
[[nodiscard]] bool usableIdentifier(std::string_view identifier);
// The key of a new toplevel: its identifier when usable and no live window has it, else the next
// decimal counter value. The counter only grows, and a numeric identifier is a key only above it
// (the counter then goes on from it) or when no counter value can equal it (a leading zero, more
// than 20 digits): so no key is given twice within an epoch without remembering them (KeyBook).
[[nodiscard]] std::string toplevelKey(const std::optional<std::string>& identifier, uint64_t& counter,
                                      const std::function<bool(const std::string&)>& taken);

// The compositor socket WAYLAND_DISPLAY names: an absolute path as it is, a name relative to
// XDG_RUNTIME_DIR (as libwayland resolves it); nullopt when unset, empty, or relative without
// a runtime dir.
[[nodiscard]] std::optional<std::string> socketPath(std::string_view waylandDisplay, std::string_view runtimeDir);
// The value of NAME in a "NAME=value" list (the systemd manager's Environment); nullopt when
// absent. The last assignment wins, as in an environment block.
[[nodiscard]] std::optional<std::string> environmentValue(const std::vector<std::string>& environment, std::string_view name);
// The compositor's name for /wayland/compositor/name: the first entry of XDG_CURRENT_DESKTOP
// ("sway", "niri", "Hyprland"), else the command name of the process at the other end of the
// socket; null when neither is known.
[[nodiscard]] json compositorName(std::string_view xdgCurrentDesktop, std::string_view peerCommand);

// wayland.configureOutput's params, checked (errors are rpc::RpcException with -32602 naming
// the param).
struct ModeRequest {
	int32_t width = 0, height = 0;
	std::optional<double> refresh;   // Hz
};
struct OutputConfig {
	std::string output;
	std::optional<bool> enabled;
	std::optional<ModeRequest> mode;
	std::optional<double> scale;
	std::optional<int32_t> transform;
	std::optional<std::pair<int32_t, int32_t>> position;
	[[nodiscard]] bool changesProperties() const { return mode || scale || transform || position; }
};
[[nodiscard]] OutputConfig parseOutputConfig(const json& params);
// Which of a head's modes a request means: same size, and the refresh within 0.5 Hz when
// given, else the preferred one, else the highest refresh. Modes without a size never match.
// nullopt: none matches (a custom mode is then asked for).
[[nodiscard]] std::optional<size_t> pickMode(std::span<const Mode> modes, const ModeRequest& request);

// Interfaces qsd binds and the highest version it understands.
struct KnownInterface {
	std::string_view name;
	uint32_t version;
};
[[nodiscard]] std::span<const KnownInterface> knownInterfaces();
// The version to bind: min(offered, understood).
[[nodiscard]] uint32_t bindVersion(uint32_t offered, uint32_t understood);

} // namespace qsd::wayland
