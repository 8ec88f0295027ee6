#pragma once
// The "bluetooth" backend: /bluetooth from BlueZ (org.bluez on the system bus), with the pairing
// agent. Internal to daemon/backends/bluetooth/; the rest of the daemon knows only
// createBluetoothBackend().
//
// Model: one mirror of BlueZ's objects (dbus::ObjectCache: GetManagedObjects, then
// InterfacesAdded/Removed and PropertiesChanged, invalidated properties such as RSSI read again),
// from which every adapter and device object of the tree is derived when it changes. Adapter
// states also follow the kernel's rfkill switches (rfkill.hpp). qsd exports org.bluez.Agent1 on
// its system-bus connection and registers it as BlueZ's default agent whenever BlueZ appears;
// each question BlueZ asks it waits in /bluetooth/agent/requests until a client answers.
//
// The class is defined across files, one reason to change each:
//   bluetooth_backend.cpp  life cycle, the object cache's hooks, the tree, rfkill
//   agent.cpp              org.bluez.Agent1: registration, requests, answers
//   actions.cpp            the bluetooth.* methods, discovery claims
//   mapping.cpp            value tables (pure), rfkill.cpp the rfkill device, icons.cpp the theme

#include "mapping.hpp"
#include "rfkill.hpp"

#include "../../dbus/object_cache.hpp"
#include "../../retry.hpp"
#include "../answer.hpp"
#include "../bus_backend.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qsd::bluetooth {

using json = nlohmann::json;

class BluetoothBackend final: public BusBackend {
public:
	explicit BluetoothBackend(BackendContext& context);
	~BluetoothBackend() override;

	std::string_view id() const override { return "bluetooth"; }
	std::string_view root() const override { return kRoot; }

	static constexpr const char* kBluez = "org.bluez";
	static constexpr const char* kBluezPath = "/org/bluez";
	static constexpr const char* kAdapterIface = "org.bluez.Adapter1";
	static constexpr const char* kDeviceIface = "org.bluez.Device1";
	static constexpr const char* kBatteryIface = "org.bluez.Battery1";
	static constexpr const char* kAgentManagerIface = "org.bluez.AgentManager1";
	static constexpr const char* kAgentIface = "org.bluez.Agent1";
	static constexpr const char* kAgentPath = "/org/qsd/bluetooth/agent";
	static constexpr const char* kRoot = "/bluetooth";
	static constexpr const char* kAdapters = "/bluetooth/adapters";
	static constexpr const char* kDevices = "/bluetooth/devices";
	static constexpr const char* kRequests = "/bluetooth/agent/requests";

	// Bounds on what peers can make grow (docs/backends/bluetooth.md, "Limits").
	static constexpr size_t kMaxDevices = 1024;           // devices in the tree
	static constexpr size_t kMaxAgentRequests = 16;       // agent questions waiting at once
	static constexpr size_t kMaxDisplayRequests = 16;     // passkeys and PIN codes shown at once (one per device)
	static constexpr auto kAgentTimeout = std::chrono::seconds(60);
	static constexpr auto kUnblockTimeout = std::chrono::seconds(5);
	static constexpr auto kPairTimeout = std::chrono::seconds(120);
	static constexpr auto kConnectTimeout = std::chrono::seconds(60);
	// RegisterAgent and RequestDefaultAgent wait dbus::kBusyTimeout; unanswered, the
	// registration is made again (dbus::kAskAgain): without it no pairing question would ever
	// reach qsd.
	// A package installing icons writes hundreds of files: the icons are resolved again once the
	// burst had this long to settle, not once per file (as the tray does).
	static constexpr auto kIconRescanDelay = std::chrono::milliseconds(500);
	// Device icons are drawn in lists and chips: the theme's 32 px variant, or the nearest.
	static constexpr int kIconSize = 32;

private:
	// --- life cycle (bluetooth_backend.cpp)
	void onBusStart() override;
	void onBusStop() override;
	std::span<const Method> methods() const override;
	std::optional<Unavailable> availability() const override;
	std::string service() const override { return kBluez; }
	void appeared();
	void snapshot();
	void vanished();
	void reset();
	void updateState();

	struct AdapterModel {
		std::string path;
		Intent pending = Intent::None;   // setEnabled of qsd's in flight
		uint64_t serial = 0;             // tells the latest setEnabled from earlier ones
		bool awaitingPowered = false;    // BlueZ accepted it; Powered has not changed yet
	};
	struct DeviceModel {
		std::string path;
		std::string adapter;             // the adapter's key
		std::string address;             // from the path
		Intent pending = Intent::None;   // connect/disconnect of qsd's in flight
		uint64_t serial = 0;
		int pairing = 0;                 // pair calls of qsd's in flight
		uint64_t instance = 0;           // tells this device from one at the same path before it
		bool published = false;          // in the tree (not when over kMaxDevices)
		std::string icon;                // the name iconUrl was resolved for
		uint64_t iconVersion = 0;        // ... with the themes as they were then (icons::SharedTheme::generation)
		json iconUrl = nullptr;
	};

	// --- the cache's hooks and the tree (bluetooth_backend.cpp)
	void added(const std::string& path, const std::vector<std::string>& interfaces);
	void removed(const std::string& path, const std::vector<std::string>& interfaces);
	void changed(const std::string& path, const std::string& interface, const std::vector<std::string>& names);
	void addAdapter(const std::string& path, const std::string& key);
	void removeAdapter(const std::string& key);
	void addDevice(const std::string& path, const DeviceId& id);
	void removeDevice(const std::string& key);
	void publishAdapter(const std::string& key);
	void publishDevice(const std::string& key);
	void publishDefaultAdapter();
	void publishAgent();
	void rfkillChanged();
	bool rfkillBlocked(const std::string& adapter) const;
	void watchIconThemes();
	void iconThemesChanged();

	// --- the agent (agent.cpp)
	struct AgentRequest {
		std::string id;
		std::string device;              // key
		std::string devicePath;
		AgentKind kind = AgentKind::RequestConfirmation;
		json passkey = nullptr;
		json pinCode = nullptr;
		json entered = nullptr;
		json service = nullptr;
		std::string createdAt;
		sdbus::MethodCall call;
		bool replied = false;            // display requests: answered to BlueZ at once
		EventSource timer;
	};
	void exportAgent();
	void registerAgent();
	void agentFailed(const char* method, const sdbus::Error& e);
	void onAgentCall(sdbus::MethodCall call, AgentKind kind);
	void onAgentCancel(sdbus::MethodCall call);
	void onAgentRelease(sdbus::MethodCall call);
	bool fromBluez(sdbus::MethodCall& call);
	void replyEmpty(const sdbus::MethodCall& call);
	void replyError(const sdbus::MethodCall& call, const char* name, const std::string& message);
	void endRequest(uint64_t id, const char* reason);
	void endRequestsOf(const std::string& deviceKey, const char* reason);
	// What is shown for a device's pairing (displayPasskey, displayPinCode): BlueZ never cancels
	// it (the calls wait for no answer), so qsd ends it when that pairing is over.
	void endDisplayOf(const std::string& deviceKey, const char* reason);
	size_t waitingRequests() const;   // questions not answered yet: the ones kMaxAgentRequests bounds
	void cancelAllRequests(const char* reason);
	json requestJson(const AgentRequest& r) const;
	void answer(Call& c);

	// --- actions (actions.cpp)
	AdapterModel& adapter(const rpc::Params& p, const char* param = "adapter");
	DeviceModel& device(const rpc::Params& p, const char* param = "device");
	void setProperty(const std::string& path, const char* iface, const char* name, sdbus::Variant value,
	                 std::function<void(const sdbus::Error*)> done);
	void callMethod(const std::string& path, const char* iface, const char* method,
	                const std::function<void(sdbus::MethodCall&)>& fill, std::function<void(const sdbus::Error*)> done,
	                std::chrono::microseconds timeout = std::chrono::microseconds(0));
	void setEnabled(Call& c);
	void power(const std::string& key, bool on, std::shared_ptr<Answer> answer);
	void setDiscoverable(Call& c);
	void setPairable(Call& c);
	void setDiscovering(Call& c);
	void pair(Call& c);
	void cancelPairing(Call& c);
	void connectDevice(Call& c);
	void disconnectDevice(Call& c);
	void forget(Call& c);
	void setTrusted(Call& c);
	void setBlocked(Call& c);
	void setWakeAllowed(Call& c);
	void setAlias(Call& c);
	void setAdapterFlag(Call& c, const char* param, const char* property, const char* timeoutProperty);
	void setDeviceFlag(Call& c, const char* param, const char* property);
	void unblocked();

	// Discovery: one session of qsd's per adapter, while at least one client claims it.
	struct Discovery {
		std::set<uint64_t> holders;
		// Failed: StartDiscovery was refused (the adapter is off), or the adapter powered off and
		// BlueZ ended the session; started again when the adapter is powered or a client claims
		// again, never in a loop.
		enum class Phase { Stopped, Starting, Running, Stopping, Failed } phase = Phase::Stopped;
		uint64_t serial = 0;   // tells a stale StartDiscovery/StopDiscovery answer from the latest
		// Claims answered once StartDiscovery is, by holder.
		std::vector<std::pair<uint64_t, std::shared_ptr<Answer>>> waiting;
	};
	void discoveryReleased(const std::string& adapter, uint64_t holder);
	void reconcileDiscovery(const std::string& adapter);
	void discoveryLost(const std::string& adapter);
	void retryDiscovery(const std::string& adapter);
	void discoveryPoweredOff(const std::string& adapter);

	// A setEnabled waiting for the kernel to report the unblock it asked for.
	struct PendingUnblock {
		std::string adapter;
		std::shared_ptr<Answer> answer;
		EventSource timer;
	};

	std::unique_ptr<dbus::ObjectCache> cache_;
	std::unique_ptr<RfkillWatch> rfkill_;
	std::unique_ptr<sdbus::IObject> agent_;
	icons::SharedTheme::Subscription iconThemes_;   // the installed icon themes changed
	EventSource iconRescan_;    // devices' icons resolved again once a burst of changes is over
	bool ready_ = false;
	std::map<std::string, AdapterModel> adapters_;    // by key
	std::map<std::string, DeviceModel> devices_;      // by key
	size_t published_ = 0;                            // devices in the tree
	bool overLimitWarned_ = false;
	std::map<std::string, Discovery> discovery_;      // by adapter key
	uint64_t nextHolder_ = 1;
	uint64_t nextSerial_ = 1;
	std::vector<std::unique_ptr<PendingUnblock>> unblocks_;

	bool agentRegistered_ = false;
	bool agentDefault_ = false;
	json agentError_ = nullptr;
	Retry agentRetry_{dbus::kAskAgain};
	std::map<uint64_t, AgentRequest> requests_;
	uint64_t nextRequest_ = 1;
	bool requestsWarned_ = false;
	std::chrono::microseconds agentTimeout_ = kAgentTimeout;
};

} // namespace qsd::bluetooth
