#pragma once
// SPA pods <-> the parsed params of mapping.hpp. Parsing never trusts the peer: a field of the
// wrong type or size is skipped, an object of the wrong type gives std::nullopt. Builders write
// into a caller's buffer and return nullptr when it is too small. Unit-tested by round trips
// (tests/unit/pipewire_pod_test.cpp).

#include "mapping.hpp"

#include <spa/pod/builder.h>
#include <spa/pod/pod.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace qsd::pipewire {

// A Props object (node Props param, or a Route's props) carrying at least one of
// channelVolumes, mute, volume. Other Props objects (an adapter's "params" struct) give nullopt.
[[nodiscard]] std::optional<VolumeState> parseProps(const spa_pod* pod);
// A Profile or EnumProfile object.
[[nodiscard]] std::optional<ProfileParam> parseProfile(const spa_pod* pod);
// A Route or EnumRoute object.
[[nodiscard]] std::optional<RouteParam> parseRoute(const spa_pod* pod);

// Props {channelVolumes?, mute?} for pw_node_set_param(SPA_PARAM_Props).
const spa_pod* buildProps(spa_pod_builder& b, const std::optional<std::vector<float>>& volumes, std::optional<bool> mute);
// Route {index, device, props {channelVolumes?, mute?}?, save} for pw_device_set_param(SPA_PARAM_Route),
// as wpctl (WirePlumber's mixer API) writes it.
const spa_pod* buildRoute(spa_pod_builder& b, int32_t index, int32_t device,
                          const std::optional<std::vector<float>>& volumes, std::optional<bool> mute, bool save);
// Profile {index, save} for pw_device_set_param(SPA_PARAM_Profile).
const spa_pod* buildProfile(spa_pod_builder& b, int32_t index, bool save);
// EnumFormat of a capture stream: interleaved F32 with the given channel positions (any rate).
const spa_pod* buildCaptureFormat(spa_pod_builder& b, const std::vector<uint32_t>& positions);

} // namespace qsd::pipewire
