#include "mapping.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

namespace qsd::wayland {

namespace {

using rpc::Params;

// In wl_output.transform order (wayland.xml): 90/180/270 are counter-clockwise rotations,
// "flipped" is a flip around the vertical axis.
constexpr std::array<std::string_view, 8> kTransforms = {
    "normal", "rotated90", "rotated180", "rotated270", "flipped", "flipped90", "flipped180", "flipped270",
};

constexpr std::array<KnownInterface, 6> kKnown = {{
    {"wl_output", 4},
    {"wl_seat", 1},
    {"zxdg_output_manager_v1", 3},
    {"zwlr_output_manager_v1", 2},
    {"zwlr_foreign_toplevel_manager_v1", 3},
    {"ext_foreign_toplevel_list_v1", 1},
}};

json pair(const char* a, const char* b, const std::pair<int32_t, int32_t>& v) { return json{{a, v.first}, {b, v.second}}; }

const std::string& firstNonEmpty(const std::string& a, const std::string& b, const std::string& c) {
	if (!a.empty()) return a;
	if (!b.empty()) return b;
	return c;
}

json stringOrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

} // namespace

std::optional<std::string_view> transformName(int32_t transform) {
	if (transform < 0 || size_t(transform) >= kTransforms.size()) return std::nullopt;
	return kTransforms[size_t(transform)];
}

std::optional<int32_t> transformValue(std::string_view name) {
	for (size_t i = 0; i < kTransforms.size(); ++i)
		if (kTransforms[i] == name) return int32_t(i);
	return std::nullopt;
}

std::span<const std::string_view> transformNames() { return kTransforms; }

json refreshHz(int32_t mHz) {
	if (mHz <= 0) return nullptr;
	// mHz are integers, so three decimals are exact; dividing gives the nearest double.
	return double(mHz) / 1000.0;
}

int32_t refreshMilliHz(double hz) {
	if (!std::isfinite(hz) || hz <= 0) return 0;
	return int32_t(std::lround(std::min(hz, 1.0e6) * 1000.0));
}

json modeJson(const Mode& mode) {
	return json{{"width", mode.width}, {"height", mode.height}, {"refresh", refreshHz(mode.refresh)}};
}

std::optional<double> impliedScale(const Mode& mode, int32_t transform, std::pair<int32_t, int32_t> logical) {
	if (mode.width <= 0 || mode.height <= 0 || logical.first <= 0 || logical.second <= 0) return std::nullopt;
	// Odd transforms (90, 270 and their flipped forms) turn the mode on its side.
	bool sideways = transform & 1;
	double w = sideways ? mode.height : mode.width;
	double h = sideways ? mode.width : mode.height;
	double sx = w / logical.first, sy = h / logical.second;
	// Logical sizes are rounded to integers; a mismatch beyond that is not a plain scale.
	if (std::fabs(sx - sy) > 0.01 * sx) return std::nullopt;
	// That rounding leaves the quotient a little off (1280 / 853 for 1.5). Scales are set in
	// steps of 1/120 (wp_fractional_scale_v1's unit), which the longer side resolves exactly.
	double s = logical.first >= logical.second ? sx : sy;
	return std::round(s * kScaleDenominator) / kScaleDenominator;
}

std::string outputName(const WlOutputInfo* output, const XdgOutputInfo* xdg, const HeadInfo* head) {
	static const std::string none;
	return firstNonEmpty(head ? head->name : none, output ? output->name : none, xdg ? xdg->name : none);
}

json outputJson(const WlOutputInfo* output, const XdgOutputInfo* xdg, const HeadInfo* head) {
	static const std::string none;
	// An output that has a wl_output is on: compositors remove the global when they turn an
	// output off (and sway 1.7 reports its headless heads as disabled while they are not).
	// Without wlr-output-management only enabled outputs are known at all.
	bool enabled = output != nullptr || (head && head->enabled);
	json o;
	o["name"] = outputName(output, xdg, head);
	// wl_output v4 and xdg-output v2 describe the output for people; the head's description
	// is the same text by protocol (and the only one while the head is off).
	o["description"] = stringOrNull(firstNonEmpty(output ? output->description : none, xdg ? xdg->description : none,
	                                              head ? head->description : none));
	if (output) {
		o["make"] = output->make;
		o["model"] = output->model;
		o["physicalSize"] = json{{"width", output->physicalWidth}, {"height", output->physicalHeight}};
	} else {
		o["make"] = stringOrNull(head ? head->make : none);
		o["model"] = stringOrNull(head ? head->model : none);
		o["physicalSize"] = head && head->physicalSize ? pair("width", "height", *head->physicalSize) : json(nullptr);
	}
	o["serial"] = stringOrNull(head ? head->serial : none);

	if (output && output->mode) o["mode"] = modeJson(*output->mode);
	else if (head && enabled && head->mode) o["mode"] = modeJson(*head->mode);
	else o["mode"] = nullptr;
	if (head) {
		json modes = json::array();
		for (const auto& m: head->modes) {
			if (m.width <= 0 || m.height <= 0) continue;   // a "virtual" mode without a size
			auto j = modeJson(m);
			j["preferred"] = m.preferred;
			modes.push_back(std::move(j));
		}
		o["modes"] = std::move(modes);
	}

	// The head's scale is fractional (wl_fixed); wl_output's is only the integer buffer scale
	// (2 for 1.5), so without a head's scale the one the logical size implies comes first.
	std::optional<double> implied;
	if (output && output->mode && xdg && xdg->size) implied = impliedScale(*output->mode, output->transform, *xdg->size);
	if (head && head->scale && enabled) o["scale"] = *head->scale;
	else if (implied) o["scale"] = *implied;
	else if (output) o["scale"] = output->scale;
	else o["scale"] = nullptr;

	std::optional<std::string_view> transform;
	if (output) transform = transformName(output->transform);
	else if (head && head->transform) transform = transformName(*head->transform);
	o["transform"] = transform ? json(std::string(*transform)) : json(nullptr);

	if (xdg && xdg->position && enabled) o["position"] = pair("x", "y", *xdg->position);
	else if (head && head->position && enabled) o["position"] = pair("x", "y", *head->position);
	else o["position"] = nullptr;
	o["logicalSize"] = xdg && xdg->size && enabled ? pair("width", "height", *xdg->size) : json(nullptr);
	o["enabled"] = enabled;
	return o;
}

ToplevelFlags toplevelFlags(std::span<const uint32_t> states) {
	ToplevelFlags f;
	for (auto s: states) {
		switch (s) {
		case 0: f.maximized = true; break;
		case 1: f.minimized = true; break;
		case 2: f.activated = true; break;
		case 3: f.fullscreen = true; break;
		default: break;   // a newer state this build does not know
		}
	}
	return f;
}

json toplevelJson(const ToplevelInfo& info) {
	json t{{"title", info.title}, {"appId", info.appId}};
	if (info.flags) {
		t["activated"] = info.flags->activated;
		t["maximized"] = info.flags->maximized;
		t["minimized"] = info.flags->minimized;
		t["fullscreen"] = info.flags->fullscreen;
	} else {
		t["activated"] = t["maximized"] = t["minimized"] = t["fullscreen"] = nullptr;
	}
	t["outputs"] = info.outputs ? json(*info.outputs) : json(nullptr);
	t["parent"] = info.parent ? json(*info.parent) : json(nullptr);
	return t;
}

bool usableIdentifier(std::string_view identifier) {
	if (identifier.empty() || identifier.size() > 32) return false;
	return std::all_of(identifier.begin(), identifier.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

std::string toplevelKey(const std::optional<std::string>& identifier, uint64_t& counter,
                        const std::function<bool(const std::string&)>& taken) {
	if (identifier && usableIdentifier(*identifier) && !taken(*identifier)) {
		const auto& id = *identifier;
		bool numeric = std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
		if (!numeric || id[0] == '0') return id;   // never a counter value's text
		uint64_t value = 0;
		auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), value);
		if (ec == std::errc::result_out_of_range) return id;   // beyond any counter value
		if (ec == std::errc() && end == id.data() + id.size() && value > counter) {
			counter = value;
			return id;
		}
		// A number the counter may have given already: not used.
	}
	for (;;) {
		auto key = std::to_string(++counter);
		if (!taken(key)) return key;
	}
}

std::optional<std::string> socketPath(std::string_view waylandDisplay, std::string_view runtimeDir) {
	if (waylandDisplay.empty()) return std::nullopt;
	if (waylandDisplay.front() == '/') return std::string(waylandDisplay);
	if (runtimeDir.empty()) return std::nullopt;
	std::string path(runtimeDir);
	if (path.back() != '/') path += '/';
	path += waylandDisplay;
	return path;
}

std::optional<std::string> environmentValue(const std::vector<std::string>& environment, std::string_view name) {
	std::optional<std::string> value;
	for (const auto& entry: environment) {
		if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=')
			value = entry.substr(name.size() + 1);
	}
	return value;
}

json compositorName(std::string_view xdgCurrentDesktop, std::string_view peerCommand) {
	auto first = xdgCurrentDesktop.substr(0, xdgCurrentDesktop.find(':'));
	if (!first.empty()) return std::string(first);
	if (!peerCommand.empty()) return std::string(peerCommand);
	return nullptr;
}

OutputConfig parseOutputConfig(const json& params) {
	Params p(params);
	OutputConfig c;
	c.output = p.string("output");
	if (c.output.empty()) Params::fail("output", "an output name from /wayland/outputs");
	c.enabled = p.optBoolean("enabled");
	auto int32 = [](const json& v, const char* name) {
		if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
		    v.get<int64_t>() > std::numeric_limits<int32_t>::max())
			Params::fail(name, "a 32-bit integer");
		return int32_t(v.get<int64_t>());
	};
	if (p.has("mode") && !p.raw()["mode"].is_null()) {
		const auto& m = p.object("mode");
		ModeRequest r;
		if (!m.contains("width")) Params::fail("mode.width", "a positive integer");
		if (!m.contains("height")) Params::fail("mode.height", "a positive integer");
		r.width = int32(m["width"], "mode.width");
		r.height = int32(m["height"], "mode.height");
		if (r.width <= 0) Params::fail("mode.width", "a positive integer");
		if (r.height <= 0) Params::fail("mode.height", "a positive integer");
		if (m.contains("refresh") && !m["refresh"].is_null()) {
			if (!m["refresh"].is_number() || !(m["refresh"].get<double>() > 0) || m["refresh"].get<double>() > 1.0e6)
				Params::fail("mode.refresh", "a refresh rate in Hz above 0");
			r.refresh = m["refresh"].get<double>();
		}
		c.mode = r;
	}
	if (auto s = p.optNumber("scale")) {
		// wl_fixed has 8 fractional bits and compositors refuse 0; 256 is far above any
		// real scale and keeps the value representable.
		if (!(*s > 0) || *s > 256) Params::fail("scale", "a number above 0 (at most 256)");
		c.scale = *s;
	}
	if (auto t = p.optString("transform")) {
		auto v = transformValue(*t);
		if (!v) {
			throw rpc::RpcException(rpc::ErrorCode::InvalidParams, "Invalid params: 'transform' must be a transform name",
			                        json{{"param", "transform"},
			                             {"expected", "a transform name"},
			                             {"supported", std::vector<std::string>(kTransforms.begin(), kTransforms.end())}});
		}
		c.transform = *v;
	}
	if (p.has("position") && !p.raw()["position"].is_null()) {
		const auto& pos = p.object("position");
		if (!pos.contains("x")) Params::fail("position.x", "a 32-bit integer");
		if (!pos.contains("y")) Params::fail("position.y", "a 32-bit integer");
		c.position = std::make_pair(int32(pos["x"], "position.x"), int32(pos["y"], "position.y"));
	}
	return c;
}

std::optional<size_t> pickMode(std::span<const Mode> modes, const ModeRequest& request) {
	std::optional<size_t> best;
	for (size_t i = 0; i < modes.size(); ++i) {
		const auto& m = modes[i];
		if (m.width != request.width || m.height != request.height) continue;
		if (request.refresh) {
			double diff = std::fabs(double(m.refresh) / 1000.0 - *request.refresh);
			if (diff > 0.5) continue;
			if (!best || diff < std::fabs(double(modes[*best].refresh) / 1000.0 - *request.refresh)) best = i;
			continue;
		}
		if (!best) {
			best = i;
			continue;
		}
		const auto& b = modes[*best];
		if (m.preferred != b.preferred) {
			if (m.preferred) best = i;
		} else if (m.refresh > b.refresh) {
			best = i;
		}
	}
	return best;
}

std::span<const KnownInterface> knownInterfaces() { return kKnown; }

uint32_t bindVersion(uint32_t offered, uint32_t understood) { return std::min(offered, understood); }

} // namespace qsd::wayland
