#pragma once
// The "nm" backend: /network from NetworkManager (org.freedesktop.NetworkManager). Internal to
// daemon/backends/nm/; the rest of the daemon knows only createNmBackend().
//
// Model: one mirror of every NetworkManager object and its properties (dbus::ObjectCache: one
// GetManagedObjects, then ObjectManager and PropertiesChanged signals), plus the few other
// signals the backend uses, matched once at start. Signals carry full property values, so after
// start-up only profile settings (GetSettings) and actions need calls, all of them asynchronous. The tree is derived from the cache: a change marks the
// devices it touches dirty, and one deferred pass per loop iteration rebuilds those devices and
// writes only the fields that differ, so an access point's strength change is a one-field patch.
//
// The class is defined across files, one reason to change each:
//   nm_backend.cpp  life cycle, signals, the object cache's hooks, calls
//   devices.cpp     the tree: /network, devices, IP details, wired networks, in-memory diffing
//   wifi.cpp        Wi-Fi networks, access points, the strength shortcut, the scanner
//   actions.cpp     the network.* methods
//   profiles.cpp    every saved connection (/network/profiles, /network/vpnActive)
//   agent.cpp       the secret agent NetworkManager asks for secrets, and the claim, answers and
//                   cancels of the shells that prompt for them
//   settings.cpp    profile settings (pure), mapping.cpp value tables (pure), secrets.cpp what a
//                   prompt asks for and the reply NetworkManager expects (pure)

#include "mapping.hpp"
#include "secrets.hpp"
#include "settings.hpp"

#include "../../dbus/object_cache.hpp"
#include "../../dbus/variant.hpp"
#include "../../retry.hpp"
#include "../answer.hpp"
#include "../bus_backend.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace qsd::nm {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;


class NmBackend final: public BusBackend {
public:
	explicit NmBackend(BackendContext& context): BusBackend(context, Bus::System, "nm") {}
	~NmBackend() override { stop(); }

	std::string_view id() const override { return "nm"; }
	std::string_view root() const override { return kRoot; }

private:
	void onBusStart() override;
	void onBusStop() override;
	std::span<const Method> methods() const override;
	std::optional<Unavailable> availability() const override;
	std::string service() const override { return kNmName; }

	static constexpr const char* kNmName = "org.freedesktop.NetworkManager";
	static constexpr const char* kNmPath = "/org/freedesktop/NetworkManager";
	static constexpr const char* kOmPath = "/org/freedesktop";
	static constexpr const char* kNmIface = "org.freedesktop.NetworkManager";
	static constexpr const char* kDevIface = "org.freedesktop.NetworkManager.Device";
	static constexpr const char* kWiredIface = "org.freedesktop.NetworkManager.Device.Wired";
	static constexpr const char* kWifiIface = "org.freedesktop.NetworkManager.Device.Wireless";
	static constexpr const char* kApIface = "org.freedesktop.NetworkManager.AccessPoint";
	static constexpr const char* kAcIface = "org.freedesktop.NetworkManager.Connection.Active";
	static constexpr const char* kConnIface = "org.freedesktop.NetworkManager.Settings.Connection";
	static constexpr const char* kIp4Iface = "org.freedesktop.NetworkManager.IP4Config";
	static constexpr const char* kIp6Iface = "org.freedesktop.NetworkManager.IP6Config";
	static constexpr const char* kPropsIface = "org.freedesktop.DBus.Properties";
	static constexpr const char* kOmIface = "org.freedesktop.DBus.ObjectManager";
	static constexpr const char* kRoot = "/network";
	static constexpr const char* kDevices = "/network/devices";
	static constexpr const char* kProfiles = "/network/profiles";
	static constexpr const char* kSecretRequests = "/network/secretRequests";
	static constexpr const char* kAgentPath = "/org/freedesktop/NetworkManager/SecretAgent";
	static constexpr const char* kAgentIface = "org.freedesktop.NetworkManager.SecretAgent";
	static constexpr const char* kAgentManagerPath = "/org/freedesktop/NetworkManager/AgentManager";
	static constexpr const char* kAgentManagerIface = "org.freedesktop.NetworkManager.AgentManager";
	// The agent's identifier: NetworkManager keeps one agent per identifier and user.
	static constexpr const char* kAgentId = "org.qsd.agent";
	// How long a prompt waits for a shell: as long as NetworkManager waits for an agent.
	static constexpr auto kSecretTimeout = std::chrono::seconds(120);
	// GetSettings waits dbus::kBusyTimeout. Unanswered, the profile is shown without its settings
	// and asked again 1 s later, the delay doubling up to 30 s, 8 times (a profile, unlike a
	// start-up read, is asked again by its next Updated after that).
	static constexpr Backoff::Policy kSettingsAgain{std::chrono::seconds(1), std::chrono::seconds(30), 8};
	// Pending prompts at most; NetworkManager asks one at a time per connection, so this bounds
	// only a misbehaving caller.
	static constexpr size_t kMaxSecretRequests = 16;
	// Quickshell's scanner period: a RequestScan about every 10 s while someone wants fresh results.
	static constexpr auto kScanInterval = std::chrono::seconds(10);


	struct Profile {
		std::string path;
		nm::RawSettings raw;          // as GetSettings gave it (NetworkManager never sends secrets)
		nm::ProfileInfo info;
		bool done = false;            // GetSettings answered (or failed)
		uint64_t serial = 0;          // tells a stale reply from the latest request
		Retry retry{kSettingsAgain};  // GetSettings timed out
	};
	struct NetModel {
		std::vector<uint8_t> ssid;
		std::vector<std::string> profiles;   // profile paths, the reference one first
		std::string refAp;                   // reference access point path, "" when none
		bool refActive = false;              // the reference AP is the device's active one
		std::vector<std::string> aps;        // access point paths
		std::string state = "disconnected";
		bool active = false;                 // the device's active connection is this network
		nm::Security security = nm::Security::Unknown;
	};
	struct DevModel {
		std::string path;
		std::string key;
		bool wifi = false;
		std::map<std::string, NetModel> networks;
		json published;                      // what the tree holds for it, for diffing in memory
	};
	struct Scanner {
		std::set<uint64_t> holders;
		EventSource timer;
	};
	// NetworkManager's GetSecrets call that a shell is asked to answer (/network/secretRequests/<id>).
	struct SecretRequest {
		std::string id;
		sdbus::MethodCall call;       // answered exactly once, then the request is gone
		std::string connectionPath;   // with prompt.setting, what CancelGetSecrets names
		nm::SecretPrompt prompt;      // field names only, never a value
		std::string createdAt;
		EventSource timeout;
	};
	// A device's active connection, as buildDevice reads it ("" path: none).
	struct Active {
		std::string path;
		std::string profile;
		std::string specific;
		std::string state = "disconnected";
	};

	// --- life cycle
	void appeared();
	void snapshot();
	void vanished();
	void reset();
	void maybeReady();
	void updateState();

	// --- profiles (profiles.cpp)
	void publishProfiles();
	json buildProfiles(bool& vpnActive);
	// The active connection of a profile ("" when it has none that is not disconnected).
	std::string activeConnectionOf(const std::string& profilePath);

	// --- the secret agent (agent.cpp)
	void exportAgent();
	void registerAgent();
	void unregisterAgent();
	void onGetSecrets(sdbus::MethodCall call);
	void onCancelGetSecrets(sdbus::MethodCall call);
	void onStoreSecrets(sdbus::MethodCall call);
	bool fromNetworkManager(sdbus::MethodCall& call);
	void finishRequest(const std::string& id, const char* error, const std::string& why);
	void dropRequests();
	void secretsReleased(uint64_t token);
	json requestsJson() const;
	SecretRequest& request(const rpc::Params& p);
	void handleSecrets(Call& c);
	void answerSecrets(Call& c);
	void cancelSecrets(Call& c);

	// --- cache
	void added(const std::string& path, const std::vector<std::string>& interfaces);
	void removed(const std::string& path, const std::vector<std::string>& interfaces);
	void changed(const std::string& path, const std::string& interface, const std::vector<std::string>& names);
	void onDeviceState(sdbus::Message& msg);
	void onActiveState(sdbus::Message& msg);
	void onAccessPoint(sdbus::Message& msg);
	void onProfileUpdated(sdbus::Message& msg);
	void fetchProfile(const std::string& path);
	void markDirty(const std::string& path);
	bool strengthChanged(const std::string& apPath);
	void failureCheck(const std::string& acPath, uint32_t state, uint32_t reason);

	// --- tree
	void schedulePublish();
	void publish();
	void publishRoot();
	void publishDevices(bool all);
	void publishDevice(const std::string& path, json value, DevModel model);
	void unpublishDevice(const std::string& path);
	std::optional<std::pair<json, DevModel>> buildDevice(const std::string& path);
	json buildIp(const std::string& configPath, bool v6);
	void buildWired(const std::string& path, DevModel& model, json& dev, json& networks, const Active& active);
	void buildWifi(const std::string& path, DevModel& model, json& dev, json& networks, const Active& active);
	json buildNetwork(const DevModel& dev, NetModel& net, const std::vector<std::string>& aps, const std::string& activeAp,
	                  uint32_t caps, bool adhoc);
	void sortProfiles(NetModel& net, const std::string& activeProfile);
	void addProfiles(json& n, const NetModel& net);
	void syncDiff(const std::string& path, const json& old, const json& value);
	std::string networkKeyOfProfile(const std::string& profilePath, const std::string& deviceKey) const;

	// --- typed reads that degrade and log once
	const dbus::Properties* props(const std::string& path, const char* iface) const;
	const dbus::Value* prop(const std::string& path, const char* iface, const char* name) const;
	std::optional<uint64_t> getUint(const std::string& path, const char* iface, const char* name);
	std::optional<int64_t> getInt(const std::string& path, const char* iface, const char* name);
	std::optional<bool> getBool(const std::string& path, const char* iface, const char* name);
	std::optional<std::string> getString(const std::string& path, const char* iface, const char* name);
	std::optional<std::vector<std::string>> getStrings(const std::string& path, const char* iface, const char* name);
	std::optional<std::vector<uint8_t>> getBytes(const std::string& path, const char* iface, const char* name);

	// --- calls
	// `timeout` 0: sd-bus's default (25 s).
	void call(const std::string& path, const char* iface, const char* method, const std::function<void(sdbus::MethodCall&)>& fill,
	          std::function<void(sdbus::MethodReply*, const sdbus::Error*)> done,
	          std::chrono::microseconds timeout = std::chrono::microseconds(0));
	void setProperty(const std::string& path, const char* iface, const char* name, sdbus::Variant value,
	                 std::shared_ptr<Answer> answer, json result);

	// --- actions (actions.cpp)
	void setWifiEnabled(Call& c);
	void setConnectivityCheckEnabled(Call& c);
	void checkConnectivity(Call& c);
	void disconnectDevice(Call& c);
	void setAutoconnect(Call& c);
	void setManaged(Call& c);
	void setScannerEnabled(Call& c);
	void connectNetwork(Call& c);
	void connectProfile(Call& c);
	void disconnectNetwork(Call& c);
	void forget(Call& c);
	void getProfile(Call& c);
	void updateProfile(Call& c);
	void clearSecrets(Call& c);
	void deleteProfile(Call& c);
	void activateProfile(Call& c);
	void deactivateProfile(Call& c);
	DevModel& device(const rpc::Params& p);
	NetModel& network(DevModel& dev, const std::string& key);
	Profile& profile(const rpc::Params& p);
	void activate(const std::string& profilePath, const DevModel& dev, std::shared_ptr<Answer> answer, json result);
	void addAndActivate(nm::RawSettings settings, const DevModel& dev, const std::string& ap, std::shared_ptr<Answer> answer,
	                    json result);
	void scanReleased(const std::string& device, uint64_t id);
	void scannerChanged(const std::string& device);
	void scanTick(const std::string& device);
	bool requestScan(const std::string& device);

	std::unique_ptr<dbus::ObjectCache> cache_;   // every NetworkManager object, by path
	EventSource publisher_;

	std::map<std::string, Profile> profiles_;     // Settings.Connection objects, by path
	bool ready_ = false;                          // the domain is complete and published
	uint64_t nextSerial_ = 1;
	std::map<std::string, DevModel> devices_;     // published devices, by key
	std::map<std::string, std::string> keyOfPath_;   // device path -> key
	std::map<std::string, std::set<std::string>> apOwners_;   // AP path -> device paths
	bool dirtyAll_ = false;
	bool dirtyRoot_ = false;
	std::set<std::string> dirtyDevices_;
	std::map<std::string, uint32_t> failures_;    // device path -> last Failed state reason
	std::map<std::string, Scanner> scanners_;     // by device key
	std::map<std::string, int64_t> lastScanRequest_;   // by device key, CLOCK_BOOTTIME ms
	std::set<std::string> shadowed_;              // device paths whose key another device holds
	uint64_t nextScanToken_ = 1;
	json profilesPublished_ = json::object();   // /network/profiles as last written
	bool vpnActivePublished_ = false;

	std::unique_ptr<sdbus::IObject> agent_;       // the SecretAgent object on qsd's connection
	bool agentRegistered_ = false;                // with the NetworkManager that is there now
	bool agentRegistering_ = false;
	Retry agentRetry_{{std::chrono::milliseconds(250), std::chrono::seconds(30), 10}};
	std::chrono::microseconds secretTimeout_ = kSecretTimeout;
	std::set<uint64_t> secretHolders_;            // clients' network.handleSecrets claims
	uint64_t nextSecretToken_ = 1;
	std::map<std::string, SecretRequest> requests_;   // by id
	uint64_t nextRequest_ = 1;
};

// Last path component, for ids of objects that have no better one.
[[nodiscard]] std::string nmLastComponent(const std::string& path);

} // namespace qsd::nm
