#pragma once
// Pure mapping from UPower and power-profiles-daemon D-Bus values to /power tree values.
// No I/O and no state: every table here is unit-tested (tests/unit/upower_mapping_test.cpp) and
// documented in docs/backends/upower.md.

#include "../../dbus/variant.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qsd::upower {

// UPower's device enums (org.freedesktop.UPower.Device Type, State, Technology, WarningLevel,
// BatteryLevel) as camelCase strings. Values outside the table map to "unknown".
[[nodiscard]] std::string deviceTypeName(uint64_t type);
[[nodiscard]] std::string deviceStateName(uint64_t state);
[[nodiscard]] std::string technologyName(uint64_t technology);
// WarningLevel and BatteryLevel share UPower's UpDeviceLevel enum.
[[nodiscard]] std::string levelName(uint64_t level);
// GetCriticalAction(): "PowerOff" -> "powerOff", ...; unknown strings give "unknown".
[[nodiscard]] std::string criticalActionName(std::string_view action);

// power-profiles-daemon profile names <-> tree names ("power-saver" <-> "powerSaver").
// profileName gives std::nullopt for a name outside the table.
[[nodiscard]] std::optional<std::string> profileName(std::string_view ppdName);
// Accepts the tree name and, for convenience, the daemon's own spelling.
[[nodiscard]] std::optional<std::string> ppdProfileName(std::string_view name);
// PerformanceDegraded: "" -> "none", "lap-detected" -> "lapDetected",
// "high-operating-temperature" -> "highTemperature"; anything else gives "unknown".
[[nodiscard]] std::string degradationReasonName(std::string_view reason);

// UPower Percentage / Capacity (0..100) -> 0..1, clamped; NaN gives null.
[[nodiscard]] nlohmann::json fraction(double percent);
// UpdateTime (seconds since the Unix epoch) -> RFC 3339 UTC; 0 (never) gives null.
[[nodiscard]] nlohmann::json rfc3339(uint64_t unixSeconds);

// The tree id of a UPower device: the last element of its object path
// ("/org/freedesktop/UPower/devices/battery_BAT0" -> "battery_BAT0"). Not escaped.
[[nodiscard]] std::string deviceId(std::string_view objectPath);

// The result of mapping a property set: the tree value, and the D-Bus properties that had a
// type other than the one expected (their fields are null; the caller logs them once).
struct Mapped {
	nlohmann::json value;
	std::vector<std::string> badProperties;
};

// org.freedesktop.UPower.Device properties -> one device object with every field of the
// schema. Missing properties take UPower's own default (0, false, "", unknown); a property of
// the wrong type gives null.
// With `only`, just the fields of those properties (and the derived fields that depend on them):
// what a PropertiesChanged naming them changes.
[[nodiscard]] Mapped mapDevice(const dbus::Properties& props, const std::vector<std::string>* only = nullptr);

// org.freedesktop.UPower properties -> {onBattery, lidIsPresent, lidIsClosed, daemonVersion}.
[[nodiscard]] Mapped mapDaemon(const dbus::Properties& props);

// One profile hold as power-profiles-daemon lists it in ActiveProfileHolds.
struct Hold {
	std::string profile;        // the daemon's spelling ("performance")
	std::string applicationId;
	std::string reason;
};
// ActiveProfileHolds: aa{sv} per the specification; aa{ss} and an (empty) a(aa{sv}) as
// python-dbusmock sends them. std::nullopt for any other type.
[[nodiscard]] std::optional<std::vector<Hold>> parseHolds(const dbus::Value& v);
// A hold made through power.holdProfile, as the backend knows it.
struct OwnHold {
	uint64_t cookie = 0;              // qsd's id for it: the cookie its client got
	Hold hold;
	std::string state;                // "pending" (HoldProfile not answered yet), "active", "failed"
	nlohmann::json error = nullptr;   // failed: {name, message} of the last HoldProfile
};
// The holds as a tree object keyed by a stable, readable id: "<applicationId>:<profile>",
// with "#2", "#3"... for further holds with the same pair (ordered by reason). The daemon does
// not publish its cookies, so the id is derived from the content. Each entry is
// {profile, applicationId, reason, state}: the daemon's holds are "active"; qsd's own holds
// carry their `cookie`, an active one is matched to the daemon's entry with the same content
// (or listed on its own until the daemon lists it), a pending or failed one is listed on its
// own, a failed one with its `error`.
[[nodiscard]] nlohmann::json holdsObject(std::vector<Hold> daemonHolds, const std::vector<OwnHold>& own = {});

// net.hadess.PowerProfiles / org.freedesktop.UPower.PowerProfiles properties ->
// {profile, profiles, hasPerformanceProfile, degradationReason, holds, actions, version}.
// `unknownProfiles` collects profile names outside the table (omitted from `profiles`).
struct MappedProfiles {
	nlohmann::json value;
	std::vector<std::string> badProperties;
	std::vector<std::string> unknownValues;   // "Property=value" for strings outside a table
};
[[nodiscard]] MappedProfiles mapProfiles(const dbus::Properties& props, const std::vector<OwnHold>& own = {});

} // namespace qsd::upower
