#pragma once
// What graph.cpp and device_params.cpp share: the properties kept of each kind of object, the
// proxies' bookkeeping, and the small helpers of both. Internal to the PipeWire backend.

#include "graph.hpp"

#include "../../log.hpp"
#include "../../text.hpp"

#include <spa/param/param.h>

#include <cstdint>
#include <new>
#include <set>
#include <string_view>
#include <type_traits>

namespace qsd::pipewire::detail {
inline constexpr const char* kLog = "pipewire";

// The properties /audio is made of; the rest (a node has dozens) is not kept.
inline const std::set<std::string_view> kNodeKeys = {
    "object.serial", "media.class", "node.name", "node.description", "node.nick", "device.id", "card.profile.device",
    "client.id", "application.name", "application.icon-name", "application.process.id", "application.process.binary",
    "media.name", "media.title", "media.artist", "media.role", "media.category", "stream.monitor",
    "stream.capture.sink", "device.api"};
inline const std::set<std::string_view> kDeviceKeys = {"object.serial", "media.class", "device.name", "device.description",
                                                "device.nick", "device.api"};
inline const std::set<std::string_view> kClientKeys = {"object.serial", "application.name", "application.icon-name",
                                                "application.process.id", "application.process.binary"};
inline const std::set<std::string_view> kOtherKeys = {"object.serial"};

inline Props toProps(const spa_dict* dict, const std::set<std::string_view>& keep) {
	Props p;
	if (!dict) return p;
	const spa_dict_item* item = nullptr;
	spa_dict_for_each(item, dict) {
		if (item->key && item->value && keep.count(item->key)) p.emplace(item->key, cutAtCharacter(item->value, kMaxPropBytes));
	}
	return p;
}

template <typename T>
const std::set<std::string_view>& keysOf() {
	if constexpr (std::is_same_v<T, Node>) return kNodeKeys;
	else if constexpr (std::is_same_v<T, Device>) return kDeviceKeys;
	else if constexpr (std::is_same_v<T, Client>) return kClientKeys;
	else return kOtherKeys;
}

inline constexpr uint64_t kFnvOffset = 14695981039346656037ull;

// The waitGen of a device whose enumerations wait for a round: no sync completes it.
inline constexpr uint64_t kQueuedGen = UINT64_MAX;

inline void fnv1a(uint64_t& hash, const void* data, size_t size) {
	const auto* p = static_cast<const unsigned char*>(data);
	for (size_t i = 0; i < size; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
}

inline const char* paramName(uint32_t id) {
	switch (id) {
	case SPA_PARAM_EnumProfile: return "EnumProfile";
	case SPA_PARAM_Profile: return "Profile";
	case SPA_PARAM_EnumRoute: return "EnumRoute";
	case SPA_PARAM_Route: return "Route";
	default: return "a param";
	}
}

// Catches what a handler throws: nothing may unwind into libpipewire.
template <typename F>
void guarded(const char* what, F&& f) noexcept {
	try {
		f();
	} catch (const std::exception& e) {
		log::error(kLog, "handling {} failed: {}", what, e.what());
	} catch (...) {
		log::error(kLog, "handling {} failed", what);
	}
}

// Kept in each bound proxy's user data: whether the server removed it, and whether nothing but
// that removal holds it any more.
struct ProxyState {
	spa_hook listener{};
	bool removed = false;
	bool retired = false;
};

inline void onProxyRemoved(void* data) noexcept {
	auto* proxy = static_cast<pw_proxy*>(data);
	auto* state = static_cast<ProxyState*>(pw_proxy_get_user_data(proxy));
	state->removed = true;
	if (state->retired) pw_proxy_destroy(proxy);
}

inline void onProxyDestroy(void* data) noexcept {
	auto* state = static_cast<ProxyState*>(pw_proxy_get_user_data(static_cast<pw_proxy*>(data)));
	spa_hook_remove(&state->listener);
}

inline pw_proxy* bindProxy(pw_registry* registry, uint32_t id, const char* type, uint32_t version) {
	auto* proxy = static_cast<pw_proxy*>(pw_registry_bind(registry, id, type, version, sizeof(ProxyState)));
	if (!proxy) return nullptr;
	auto* state = new (pw_proxy_get_user_data(proxy)) ProxyState();
	static const pw_proxy_events events = {
	    .version = PW_VERSION_PROXY_EVENTS,
	    .destroy = &onProxyDestroy,
	    .removed = &onProxyRemoved,
	};
	pw_proxy_add_listener(proxy, &state->listener, &events, proxy);
	return proxy;
}

} // namespace qsd::pipewire::detail
