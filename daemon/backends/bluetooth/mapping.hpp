#pragma once
// Pure mapping from BlueZ's D-Bus values (and rfkill's events) to /bluetooth tree values. No I/O
// and no state beyond the rfkill table's: every function here is unit-tested
// (tests/unit/bluetooth_mapping_test.cpp) and documented in docs/backends/bluetooth.md.

#include "../../dbus/variant.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qsd::bluetooth {

// Names and aliases come from radio peers: at most this many bytes reach the tree (the
// Bluetooth specification's own limit for a device name, BlueZ's MAX_NAME_LENGTH).
constexpr size_t kMaxNameBytes = 248;
// Icon names are BlueZ's own ("audio-headset"), but bounded all the same.
constexpr size_t kMaxIconBytes = 64;

// `s` cut to at most `maxBytes` bytes, at a UTF-8 character boundary.
[[nodiscard]] std::string bounded(std::string s, size_t maxBytes);

// "/org/bluez/hci0" -> "hci0". std::nullopt for any other shape (a deeper path, characters a
// tree key should not have).
[[nodiscard]] std::optional<std::string> adapterKey(std::string_view path);
// "/org/bluez/hci0/dev_11_22_33_44_55_66" -> {"hci0", "hci0_11_22_33_44_55_66",
// "11:22:33:44:55:66"}. std::nullopt for any other shape.
struct DeviceId {
	std::string adapter;   // the adapter's key
	std::string key;       // the device's key in /bluetooth/devices
	std::string address;   // from the path, for a device whose Address property is unusable
};
[[nodiscard]] std::optional<DeviceId> deviceId(std::string_view path);
// "11:22:33:44:55:66" (hex digits in either case); what BlueZ's Address holds.
[[nodiscard]] bool isAddress(std::string_view s);

// An action of qsd's own in flight on an adapter's power or a device's connection.
enum class Intent { None, On, Off };

// The adapter's state, with Quickshell's names: "blocked" when rfkill blocks it (or BlueZ's
// PowerState says "off-blocked"); else BlueZ's PowerState ("on" -> enabled, "off" -> disabled,
// "off-enabling" -> enabling, "on-disabling" -> disabling) when the adapter has it; else Powered,
// with "enabling"/"disabling" while qsd's own setEnabled waits for the change.
[[nodiscard]] std::string adapterState(std::optional<bool> powered, const std::optional<std::string>& powerState,
                                       bool rfkillBlocked, Intent pending);
// The device's state, as Quickshell: "connecting" while a connect of qsd's is in flight and the
// device is not connected yet, "disconnecting" likewise, else "connected" or "disconnected".
[[nodiscard]] std::string deviceState(std::optional<bool> connected, Intent pending);

// org.bluez.Battery1.Percentage (a byte, 0..100) -> 0..1; std::nullopt above 100.
[[nodiscard]] std::optional<double> batteryFraction(uint64_t percentage);
// A passkey as people read it: six digits, zero-padded ("001234"); std::nullopt above 999999.
[[nodiscard]] std::optional<std::string> passkeyText(uint64_t passkey);
// What Agent1.RequestPinCode may answer: 1..16 bytes, printable ASCII (BlueZ's agent API: "a
// string of 1-16 characters length", alphanumeric in practice).
[[nodiscard]] bool isPinCode(std::string_view s);

// The kinds of agent request, one per org.bluez.Agent1 method that asks something.
enum class AgentKind {
	RequestPinCode,
	DisplayPinCode,
	RequestPasskey,
	DisplayPasskey,
	RequestConfirmation,
	RequestAuthorization,
	AuthorizeService,
};
[[nodiscard]] const char* agentKindName(AgentKind kind);
// Display requests are answered to BlueZ at once (it waits for that answer before the pairing
// goes on); they stay in the tree until BlueZ cancels them or a client dismisses them.
[[nodiscard]] bool answeredAtOnce(AgentKind kind);

// The result of mapping a property set: the tree value, and the D-Bus properties that had a type
// other than the one expected (their fields are null or their default; the caller logs them once).
struct Mapped {
	nlohmann::json value;
	std::vector<std::string> badProperties;
};

// What an adapter's tree object needs besides its org.bluez.Adapter1 properties.
struct AdapterInputs {
	bool rfkillBlocked = false;
	Intent pending = Intent::None;
};
// org.bluez.Adapter1 -> {name, address, alias, enabled, state, discoverable,
// discoverableTimeout, pairable, pairableTimeout, discovering}.
[[nodiscard]] Mapped mapAdapter(const dbus::Properties& props, const AdapterInputs& in);

// What a device's tree object needs besides its properties.
struct DeviceInputs {
	std::string adapter;                    // its adapter's key
	std::string pathAddress;                // the address its object path spells
	Intent pending = Intent::None;          // connect/disconnect of qsd's in flight
	bool pairing = false;                   // a pair of qsd's in flight
	nlohmann::json iconUrl = nullptr;       // the icon resolved (a file:// URL) or null
};
// org.bluez.Device1 (+ org.bluez.Battery1 when the device has it) -> {address, name, alias, icon,
// iconUrl, adapter, paired, bonded, trusted, blocked, connected, state, pairing, rssi, battery,
// wakeAllowed}.
[[nodiscard]] Mapped mapDevice(const dbus::Properties& device, const dbus::Properties* battery, const DeviceInputs& in);
// The icon name a device's tree object holds (its bounded Icon), "" when it has none.
[[nodiscard]] std::string deviceIcon(const dbus::Properties& device);

// The default adapter among the keys: the first in natural order ("hci2" before "hci10"), as
// Quickshell takes the first adapter. std::nullopt when there is none.
[[nodiscard]] std::optional<std::string> defaultAdapter(const std::vector<std::string>& keys);
// Natural order of adapter keys: digit runs compare as numbers.
[[nodiscard]] bool naturalLess(std::string_view a, std::string_view b);

// ---- rfkill ----------------------------------------------------------------------------------

// One record of /dev/rfkill (struct rfkill_event, RFKILL_EVENT_SIZE_V1 = 8 bytes, host order).
struct RfkillEvent {
	uint32_t idx = 0;
	uint8_t type = 0;
	uint8_t op = 0;
	bool soft = false;
	bool hard = false;
};
constexpr size_t kRfkillEventSize = 8;
constexpr uint8_t kRfkillTypeAll = 0;
constexpr uint8_t kRfkillTypeBluetooth = 2;
constexpr uint8_t kRfkillOpAdd = 0;
constexpr uint8_t kRfkillOpDel = 1;
constexpr uint8_t kRfkillOpChange = 2;
constexpr uint8_t kRfkillOpChangeAll = 3;
[[nodiscard]] RfkillEvent parseRfkillEvent(std::span<const uint8_t, kRfkillEventSize> bytes);
// The record that asks the kernel to set switch `idx`'s soft block (RFKILL_OP_CHANGE).
[[nodiscard]] std::array<uint8_t, kRfkillEventSize> rfkillChange(uint32_t idx, bool soft);

// The Bluetooth switches rfkill reports, and what blocks an adapter. A switch named like the
// adapter ("hci0": the kernel names an adapter's own switch after it) blocks that adapter; a
// Bluetooth switch of the platform (named otherwise: "tpacpi_bluetooth_sw") blocks every adapter.
class RfkillTable {
public:
	struct Switch {
		std::string name;
		bool soft = false;
		bool hard = false;
	};
	struct Block {
		bool soft = false;
		bool hard = false;
		std::vector<uint32_t> softSwitches;   // the switches whose soft block an unblock must lift
		std::vector<std::string> names;       // of every blocking switch, for messages
		[[nodiscard]] bool blocked() const { return soft || hard; }
	};

	// Applies one event; `name` is the switch's name (read by the caller for a new switch). True
	// when what the table holds changed. Switches of other types are ignored.
	bool apply(const RfkillEvent& event, const std::string& name);
	[[nodiscard]] Block blockOf(std::string_view adapter) const;
	[[nodiscard]] const std::map<uint32_t, Switch>& switches() const { return switches_; }
	[[nodiscard]] bool knows(uint32_t idx) const { return switches_.count(idx) != 0; }
	void clear() { switches_.clear(); }

private:
	std::map<uint32_t, Switch> switches_;
};

} // namespace qsd::bluetooth
