#pragma once
// The "upower" backend: /power from UPower (org.freedesktop.UPower) and power-profiles-daemon
// (org.freedesktop.UPower.PowerProfiles or net.hadess.PowerProfiles), each watched on its own,
// so either service may come and go without touching the other's subtree. Internal to
// daemon/backends/upower/; the rest of the daemon knows only createUpowerBackend().
//
// D-Bus discipline (DESIGN.md, "One thread, one loop"): the only blocking D-Bus work is the
// AddMatch of the signal matches and name watchers, done once in start() and kept across
// service restarts; everything else is an async call tracked in a dbus::CallSet, so a vanished
// service cancels its own calls and a reply never reaches a destroyed owner.
//
// The class is defined in two files: upower_backend.cpp (life cycle, UPower and its devices)
// and profiles.cpp (power-profiles-daemon, profile holds, the power.* methods); mapping.cpp
// holds the pure value tables.

#include "mapping.hpp"

#include "../../dbus/call_set.hpp"
#include "../../dbus/name_watcher.hpp"
#include "../../dbus/variant.hpp"
#include "../answer.hpp"
#include "../backend.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qsd {

class ClientSession;

class UpowerBackend final: public Backend {
public:
	explicit UpowerBackend(BackendContext& context): Backend(context) {}
	~UpowerBackend() override { stop(); }

	std::string_view id() const override { return "upower"; }
	std::string_view root() const override { return kRoot; }

	void start() override;
	void stop() override;

private:
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

	using json = nlohmann::json;

	struct Device {
		std::string path;
		std::string id;
		uint64_t serial = 0;                  // tells a stale reply from one for a re-added path
		std::unique_ptr<sdbus::IProxy> proxy;
		dbus::Properties props;
		bool loaded = false;                  // GetAll answered
		bool published = false;               // in the tree
		unsigned failures = 0;                // GetAll failures in a row
		EventSource retry;                    // the next GetAll after a failure
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
		unsigned failures = 0;
		EventSource retry;
	};
	struct HoldToken {
		HoldToken(std::weak_ptr<UpowerBackend*> b, uint64_t i): backend(std::move(b)), id(i) {}
		HoldToken(const HoldToken&) = delete;
		HoldToken& operator=(const HoldToken&) = delete;
		std::weak_ptr<UpowerBackend*> backend;
		uint64_t id;
		~HoldToken() {
			if (auto b = backend.lock()) (*b)->clientReleased(id);
		}
	};

	// --- start-up
	void installMatches();
	void registerMethods();
	void updateState();

	// --- UPower
	void upAppeared(const std::string& owner);
	void upVanished();
	void upSignal(sdbus::Message& msg);
	void upPropertiesChanged(sdbus::Message& msg);
	void addDevice(const std::string& path, bool initial);
	void removeDevice(const std::string& path);
	void fetchDevice(Device& d, bool display);
	void readFailed(Device& d, bool display, const sdbus::Error& e);
	void maybeUpReady();
	void publishDaemon();
	void publishDevice(Device& d, bool display);
	Device* deviceAt(const std::string& path, bool& display);

	// --- power-profiles-daemon
	void ppdNamesChanged();
	void ppdPropertiesChanged(size_t service, sdbus::Message& msg);
	void publishProfiles();
	void refreshHolds();
	void hold(ClientHold& h, std::shared_ptr<Answer> answer);
	void holdFailed(ClientHold& h, const sdbus::Error& e);
	[[nodiscard]] std::vector<upower::OwnHold> ownHolds() const;
	void release(uint32_t cookie);
	void clientReleased(uint64_t id);
	[[nodiscard]] bool ppdReady() const { return ppdActive_ >= 0 && ppdLoaded_; }
	[[nodiscard]] const PpdService& ppd() const { return kPpd[size_t(ppdActive_)]; }
	std::string checkProfile(const rpc::Params& p);

	// --- helpers
	void bury(std::unique_ptr<sdbus::IProxy> proxy);

	sdbus::IConnection* conn_ = nullptr;
	bool started_ = false;
	std::shared_ptr<UpowerBackend*> self_;
	dbus::CallSet calls_{"upower"};
	dbus::PropertyReader reader_{"upower"};
	std::vector<MethodRegistration> methods_;
	std::vector<sdbus::Slot> matches_;
	// Proxies dropped while one of their calls may be running are destroyed from here.
	std::vector<std::unique_ptr<sdbus::IProxy>> graveyard_;
	EventSource reaper_;

	// UPower
	std::unique_ptr<NameWatcher> upWatcher_;
	std::unique_ptr<sdbus::IProxy> upProxy_;
	dbus::Properties upProps_;
	bool upPropsLoaded_ = false;
	json criticalAction_ = nullptr;
	bool criticalDone_ = false;
	bool displayDone_ = false;
	bool enumDone_ = false;
	bool upReady_ = false;
	std::map<std::string, Device> devices_;       // by object path
	std::unique_ptr<Device> display_;
	uint64_t nextSerial_ = 1;

	// power-profiles-daemon
	std::array<std::unique_ptr<NameWatcher>, 2> ppdWatchers_;
	int ppdActive_ = -1;                         // index into kPpd
	std::string ppdOwner_;
	std::unique_ptr<sdbus::IProxy> ppdProxy_;
	dbus::Properties ppdProps_;
	bool ppdLoaded_ = false;
	std::set<std::string> ppdUnknown_;          // unknown enum values already logged
	std::map<uint64_t, ClientHold> holds_;
	uint64_t nextHold_ = 1;
};

} // namespace qsd
