#pragma once
// The "upower" backend: /power from UPower (org.freedesktop.UPower) and power-profiles-daemon
// (org.freedesktop.UPower.PowerProfiles or net.hadess.PowerProfiles), each watched on its own,
// so either service may come and go without touching the other's subtree. Internal to
// daemon/backends/upower/; the rest of the daemon knows only createUpowerBackend().
//
// D-Bus discipline (docs/architecture.md, "One thread, one loop"): the only blocking D-Bus work
// is the AddMatch of the signal matches and name watchers, done once at start and kept across
// service restarts; everything else is an async call tracked in the backend's dbus::CallSet, so
// a vanished service cancels its own calls and a reply never reaches a destroyed owner.
//
// The class is defined in two files: upower_backend.cpp (life cycle, UPower and its devices)
// and profiles.cpp (power-profiles-daemon, profile holds, the power.* methods); mapping.cpp
// holds the pure value tables.

#include "mapping.hpp"

#include "../../retry.hpp"
#include "../../dbus/name_watcher.hpp"
#include "../../dbus/properties.hpp"
#include "../answer.hpp"
#include "../bus_backend.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qsd::upower {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;


class UpowerBackend final: public BusBackend {
public:
	explicit UpowerBackend(BackendContext& context): BusBackend(context, Bus::System, "upower") {}
	~UpowerBackend() override { stop(); }

	std::string_view id() const override { return "upower"; }
	std::string_view root() const override { return kRoot; }

private:
	void onBusStart() override;
	void onBusStop() override;
	nlohmann::json initialRoot() const override { return {{"available", false}, {"profiles", {{"available", false}}}}; }
	std::span<const Method> methods() const override;
	// Every power.* method is about power profiles.
	std::optional<Unavailable> availability() const override;
	std::string service() const override { return ppdActive_ >= 0 ? ppd().name : kPpd[0].name; }

	static constexpr const char* kPropsIface = "org.freedesktop.DBus.Properties";
	static constexpr const char* kUpName = "org.freedesktop.UPower";
	static constexpr const char* kUpPath = "/org/freedesktop/UPower";
	static constexpr const char* kUpIface = "org.freedesktop.UPower";
	static constexpr const char* kDevIface = "org.freedesktop.UPower.Device";

	// power-profiles-daemon's two names, in order of preference: the newer one first (0.20+ owns
	// both; tuned-ppd owns only the newer one; older releases only the hadess one).
	struct PpdService {
		const char* name;
		const char* path;
		const char* iface;
	};
	static constexpr std::array<PpdService, 2> kPpd = {{
	    {"org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles", "org.freedesktop.UPower.PowerProfiles"},
	    {"net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles"},
	}};

	static constexpr const char* kRoot = "/power";
	static constexpr const char* kDevices = "/power/devices";
	static constexpr const char* kDisplay = "/power/displayDevice";
	static constexpr const char* kProfiles = "/power/profiles";


	// A device is read again after a failed GetAll: 0.5 s later, then with the delay doubling
	// up to 30 s; given up after 8 failures in a row (the display device never is).
	static constexpr Backoff::Policy kReread{std::chrono::milliseconds(500), std::chrono::seconds(30), 8};
	static constexpr Backoff::Policy kRereadDisplay{std::chrono::milliseconds(500), std::chrono::seconds(30), 0};
	// A hold made again after power-profiles-daemon restarted: 1 s, doubling up to 60 s, for as
	// long as its client holds the cookie.
	static constexpr Backoff::Policy kRehold{std::chrono::seconds(1), std::chrono::seconds(60), 0};
	// Reads wait dbus::kBusyTimeout. A start-up read that did not answer is asked again
	// (dbus::kAskAgain): nothing else would ever fill in what it reads (UPower sends no
	// DeviceAdded for the devices it already has).
	// UPower's start-up reads, as the bits of what is still to be asked again.
	enum UpRead : unsigned { kReadProps = 1, kReadCritical = 2, kReadDisplay = 4, kReadDevices = 8, kReadAll = 15 };

	struct Device {
		std::string path;
		std::string id;
		uint64_t serial = 0;                  // tells a stale reply from one for a re-added path
		std::unique_ptr<sdbus::IProxy> proxy;
		dbus::PropertySet props{kDevIface};
		bool published = false;               // in the tree
		bool late = false;                    // its first read timed out: ready does not wait for it
		Retry retry{kReread};                 // the next GetAll after failures in a row
	};

	// A hold made through power.holdProfile. It belongs to the client connection: the
	// ClientSession owns a HoldToken whose destruction (disconnect, or power.releaseProfile)
	// releases it. Our own ids are the cookies clients see, so they survive a restart of
	// power-profiles-daemon, after which the hold is made again.
	struct ClientHold {
		uint64_t id = 0;
		std::weak_ptr<ClientSession> client;
		std::string profile;     // the daemon's spelling
		std::string reason;
		std::string applicationId;
		std::optional<uint32_t> cookie;   // power-profiles-daemon's, while it holds
		std::string owner;                // the unique name that gave the cookie
		bool pending = false;             // HoldProfile in flight
		bool confirmed = false;           // the client got its cookie
		bool released = false;            // let go while HoldProfile was in flight
		// The last HoldProfile of a hold made again (after a restart of power-profiles-daemon)
		// failed: {name, message}, and it is tried again with backoff.
		nlohmann::json error = nullptr;
		Retry retry{kRehold};
	};

	// --- start-up
	void updateState();

	// --- UPower
	void upAppeared(const std::string& owner);
	void upVanished();
	void upRead(unsigned what);
	void upLate(unsigned what, const sdbus::Error& e);
	void upSignal(sdbus::Message& msg);
	void upPropertiesChanged(sdbus::Message& msg);
	void addDevice(const std::string& path);
	void removeDevice(const std::string& path);
	void fetchDevice(Device& d, bool display);
	void readFailed(Device& d, bool display, const sdbus::Error& e);
	void maybeUpReady();
	void publishDaemon();
	// `changed`: the properties a PropertiesChanged named (nullptr: every field).
	void publishDevice(Device& d, bool display, const std::vector<std::string>* changed = nullptr);
	Device* deviceAt(const std::string& path, bool& display);

	// --- power-profiles-daemon
	void ppdNamesChanged();
	void ppdLoad(bool rehold);   // rehold: once it answers, make the holds with no cookie and no call out again
	void ppdPropertiesChanged(size_t service, sdbus::Message& msg);
	void ppdProfileReleased(size_t service, sdbus::Message& msg);
	void publishProfiles();
	void refreshHolds();
	void hold(ClientHold& h, std::shared_ptr<Answer> answer);
	void holdFailed(ClientHold& h, const sdbus::Error& e);
	[[nodiscard]] std::vector<upower::OwnHold> ownHolds() const;
	void release(uint32_t cookie);
	void clientReleased(uint64_t id);
	void forgetHold(uint64_t id);
	void setProfile(Call& c);
	void holdProfile(Call& c);
	void releaseProfile(Call& c);
	[[nodiscard]] static std::string leaseKey(uint64_t id) { return "power.hold." + std::to_string(id); }
	[[nodiscard]] bool ppdReady() const { return ppdActive_ >= 0 && ppdProps_.loaded(); }
	[[nodiscard]] const PpdService& ppd() const { return kPpd[size_t(ppdActive_)]; }
	std::string checkProfile(const rpc::Params& p);

	// UPower
	std::unique_ptr<NameWatcher> upWatcher_;
	std::unique_ptr<sdbus::IProxy> upProxy_;
	dbus::PropertySet upProps_{kUpIface};
	json criticalAction_ = nullptr;
	bool criticalDone_ = false;
	bool displayDone_ = false;
	bool enumDone_ = false;
	bool upReady_ = false;
	unsigned upLate_ = 0;                         // UpRead bits that failed, asked again by upRetry_
	Retry upRetry_{dbus::kAskAgain};
	std::map<std::string, Device> devices_;       // by object path
	std::unique_ptr<Device> display_;
	uint64_t nextSerial_ = 1;

	// power-profiles-daemon
	std::array<std::unique_ptr<NameWatcher>, 2> ppdWatchers_;
	int ppdActive_ = -1;                         // index into kPpd
	std::string ppdOwner_;
	std::unique_ptr<sdbus::IProxy> ppdProxy_;
	// The proxy of the daemon's other name, kept while it takes its second one: the HoldProfile,
	// ReleaseProfile and Set(ActiveProfile) calls out through it are the same daemon's, and
	// answered through it.
	std::unique_ptr<sdbus::IProxy> ppdHoldProxy_;
	dbus::PropertySet ppdProps_;
	Retry ppdRetry_{dbus::kAskAgain};                      // its GetAll failed
	std::set<std::string> ppdUnknown_;          // unknown enum values already logged
	std::map<uint64_t, ClientHold> holds_;
	uint64_t nextHold_ = 1;
};

} // namespace qsd::upower
