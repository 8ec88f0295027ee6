#pragma once
// One connection to PipeWire and a cache of the objects /audio is made of: every node, link and
// client is bound (so every node has its volume from the start), the first kMaxDevices devices
// (the others wait, by id, for one of them to go), plus the "default" metadata. The cache records
// what changed; the backend publishes it after each loop iteration.
//
// Completeness follows pw-dump: an object is complete at the `done` of the first core sync sent
// after its bind, and a device's param lists after a change at the `done` of the sync sent after
// they were enumerated again. The server answers a client's requests in order, and holds a
// client's later requests while a device exported by another client (WirePlumber's ALSA cards)
// answers an enumeration asynchronously, so by then every event has arrived. Devices' params are
// therefore enumerated on each change, as pw-dump does: a subscription's notifications of such a
// device are lost in PipeWire 0.3 (impl-device.c drops asynchronous results). Node Props, the hot
// path of every volume change, come through a subscription and are applied as they arrive.
// Devices are enumerated a few at a time (kMaxEnumeratingDevices), in rounds: libpipewire's
// receive buffer keeps the size of the longest burst of answers it read without a pause.

#include "../../log.hpp"
#include "mapping.hpp"

#include <pipewire/pipewire.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

struct pw_metadata;

namespace qsd::pipewire {

class Graph;

// Common to every bound object: identity, its proxy and listener (an RAII pair: the listener is
// removed, then the proxy destroyed, when the object goes), and whether it is complete.
struct Object {
	Graph* graph = nullptr;
	uint32_t id = 0;                 // global id
	std::string key;                 // object.serial as a decimal string
	uint64_t serial = 0;
	Props props;                     // info props (the registry's subset until the info came)
	pw_proxy* proxy = nullptr;
	spa_hook objectListener{};
	bool haveInfo = false;
	uint64_t waitGen = 0;            // sync generation it waits for (0: none)
	bool complete = false;           // its first sync came back

	Object() = default;
	Object(const Object&) = delete;
	Object& operator=(const Object&) = delete;
	virtual ~Object() { release(); }
	void release() {
		if (!proxy) return;
		spa_hook_remove(&objectListener);
		pw_proxy_destroy(proxy);
		proxy = nullptr;
	}
	// Its global went away. The server removes the proxy itself (remove_id): before announcing
	// the removal for an object that leaves, after it for a bind that came too late. Destroying a
	// proxy the server has not removed yet sends a destroy for an id it no longer knows, which
	// it answers with a core error, so such a proxy is destroyed once its removal arrives.
	void retire();
};

// A node bound a second time while a client watches its every property
// (audio.watchProperties): the first info of a binding carries the whole dictionary, and each
// later one the whole dictionary again. The node's own binding keeps only what /audio is made
// of, and it cannot be asked for the rest again.
struct PropertyWatch: Object {
	std::optional<Props> all;   // watchedProps(), from its first info on
	bool cutLogged = false;
};

struct Node: Object {
	std::optional<VolumeState> volume;     // Props
	std::unique_ptr<PropertyWatch> watch;  // while watched
	uint32_t version = 0;                  // the version bound
};

struct Device: Object {
	std::vector<ProfileParam> profiles;       // EnumProfile
	std::optional<ProfileParam> profile;      // Profile
	std::vector<RouteParam> routes;           // EnumRoute
	std::vector<RouteParam> activeRoutes;     // Route
	// Param lists announced as changed by the last info, enumerated and collected until the
	// next sync's done.
	std::map<uint32_t, uint32_t> paramFlags;  // param id -> last flags seen
	std::map<uint32_t, int> enumSeq;          // param id -> seq of the enumeration in flight
	std::set<uint32_t> refreshing;
	std::vector<ProfileParam> newProfiles;
	std::optional<ProfileParam> newProfile;
	std::vector<RouteParam> newRoutes;
	std::vector<RouteParam> newActiveRoutes;
	// A hash of each list's last answer, byte for byte (FNV-1a: an ALSA card's EnumProfile is
	// kilobytes), and of the one being collected; the lists whose enumeration in flight a change
	// announced by the device started; and the lists announced as changed but answered unchanged,
	// with how many times they were read again since (see Graph::rereadParams).
	std::map<uint32_t, uint64_t> paramHashes;
	std::map<uint32_t, uint64_t> newParamHashes;
	std::set<uint32_t> announced;
	std::map<uint32_t, int> rereads;
	bool paramsCutLogged = false;             // a list over kMaxDeviceParams was logged
	// Enumeration rounds (Graph::requestEnumeration): the params announced while the device waits
	// for a round, which it enumerates when its turn comes (its waitGen is kQueuedGen meanwhile,
	// so it does not complete); the generation of the sync that settles the enumerations it sent
	// in the round it is in (0: in none); and how many times it started them in that round.
	std::set<uint32_t> queuedParams;
	uint64_t enumGen = 0;
	int passes = 0;
};

struct Link: Object {
	uint32_t outputNode = 0;
	uint32_t inputNode = 0;
	int state = 0;
};

struct Client: Object {};

struct Metadata: Object {
	// Subject 0's kDefaultKeys that hold a node name: key -> the name (defaultNodeName, parsed
	// when the value arrived). Other keys, and values over kMaxDefaultValueBytes, are not kept.
	std::map<std::string, std::string, std::less<>> defaults;
	uint32_t version = 0;                                        // the version bound
};

// The `default` metadata keys qsd reads (subject 0).
inline constexpr const char* kDefaultKeys[] = {"default.audio.sink", "default.audio.source",
                                               "default.configured.audio.sink", "default.configured.audio.source"};

// What changed since the backend last looked (global ids; removals carry the published key).
struct Changes {
	std::set<uint32_t> nodes, devices, links, clients;
	std::vector<std::string> removedNodes, removedDevices, removedLinks;
	bool defaults = false;
	[[nodiscard]] bool empty() const {
		return nodes.empty() && devices.empty() && links.empty() && clients.empty() && removedNodes.empty() &&
		       removedDevices.empty() && removedLinks.empty() && !defaults;
	}
};

class Graph {
public:
	explicit Graph(pw_context* context);
	~Graph();
	Graph(const Graph&) = delete;
	Graph& operator=(const Graph&) = delete;

	// pw_context_connect; false with errno set when there is no PipeWire to talk to.
	bool connect();
	[[nodiscard]] pw_core* core() const { return core_; }

	// The connection is gone (core error EPIPE): destroy this Graph outside its callbacks.
	[[nodiscard]] bool lost() const { return lost_; }
	[[nodiscard]] const std::string& lostReason() const { return lostReason_; }
	// The registry was enumerated and every object it listed is complete.
	[[nodiscard]] bool ready() const { return ready_; }

	// Runs after each loop iteration: sends the core sync that completes what was bound or
	// announced during it.
	void afterIterate();
	// Takes the changes recorded since the last call.
	Changes takeChanges();
	// A generation whose completion proves the server handled everything sent before; and the
	// last generation completed.
	uint64_t requestSync();

	[[nodiscard]] const std::map<uint32_t, std::unique_ptr<Node>>& nodes() const { return nodes_; }
	[[nodiscard]] const std::map<uint32_t, std::unique_ptr<Device>>& devices() const { return devices_; }
	[[nodiscard]] const std::map<uint32_t, std::unique_ptr<Link>>& links() const { return links_; }
	[[nodiscard]] const std::map<uint32_t, std::unique_ptr<Client>>& clients() const { return clients_; }
	[[nodiscard]] const Node* node(uint32_t id) const;
	[[nodiscard]] const Device* device(uint32_t id) const;
	[[nodiscard]] const Client* client(uint32_t id) const;
	// The devices announced past kMaxDevices, not bound, waiting for a shown one to go.
	[[nodiscard]] size_t waitingDevices() const { return waitingDevices_.size(); }
	// The "default" metadata's subject-0 default.* entries; nullptr without a session manager.
	[[nodiscard]] const Metadata* defaults() const { return metadata_.get(); }

	// Writes. Each returns 0 or a negative errno (the object is gone, or the message could not be
	// queued); PipeWire's own refusal arrives later through onError.
	int setNodeProps(uint32_t node, const std::optional<std::vector<float>>& volumes, std::optional<bool> mute);
	int setRoute(uint32_t device, int32_t index, int32_t cardDevice, const std::optional<std::vector<float>>& volumes,
	             std::optional<bool> mute);
	// Enumerates a device's active routes again after a write: the device's exporter (WirePlumber
	// for ALSA cards) handles requests in order and the server holds this client's later ones
	// until it answered, so the answers show the route as the write left it, whether the card
	// announced a change or not (ACP announces none when the volume it stores did not change).
	// Returns the generation readBack waits for; 0 when the device is not there.
	uint64_t readBackRoutes(uint32_t device);
	// That enumeration and any the device's own announcements started since are settled.
	[[nodiscard]] bool readBack(uint32_t device, uint64_t gen) const;
	int setProfile(uint32_t device, int32_t index);
	int setMetadata(uint32_t subject, const char* key, const char* type, const char* value);
	// Starts and ends the watch of a node's every property (PropertyWatch). Its first info
	// records the node as changed. Starting is 0 (also when it is watched already) or a negative
	// errno; a refusal of the binding arrives through takeErrors() with the node's global id.
	// Ending records nothing: it happens outside PipeWire's dispatch (a client letting go), after
	// which no flush may run, so the caller publishes the node itself.
	int watchProperties(uint32_t node);
	void unwatchProperties(uint32_t node);
	// Reads the "default" metadata again: binds it a second time (PipeWire sends a new binding
	// every property), and at the done of the sync sent after that bind, which PipeWire holds
	// until the bind is answered, the new binding's properties replace the ones held (a change
	// to publish only if they differ). False when there is no complete metadata to read again or
	// a reading is under way. A reading that fails is dropped, and the metadata held stays.
	bool rereadMetadata();

	// A device's param list that it announced as changed (its info's flags) and that the
	// enumeration then answered unchanged, byte for byte, is read again later, up to
	// kMaxParamRereads times, until it differs. PipeWire's server answers enumerations of a
	// device from its cache, which a change the device announces marks stale; but a client that
	// goes away with an enumeration of the device in flight marks the cache fresh again, holding
	// what it held before the change (impl-device.c's remove_busy_resource, on the resource's
	// destroy; pipewire 0.3.65, and its source in 2026). A client that exits right after it
	// changed a card (wpctl set-volume) can do that, and every client then reads the old list
	// until an enumeration started before that is answered (WirePlumber's, as a rule) or the
	// device changes again. The attempt of the earliest re-reading waiting, 0 when none is.
	static constexpr int kMaxParamRereads = 3;
	[[nodiscard]] int paramRereadAttempt() const;
	// Enumerates again every list waiting for it.
	void rereadParams();

	// PipeWire refused a request on an object (core error with the object's proxy id).
	struct Error {
		uint32_t global;
		int res;
		std::string message;
	};
	std::vector<Error> takeErrors();

private:
	static void onCoreInfo(void* data, const pw_core_info* info) noexcept;
	static void onCoreDone(void* data, uint32_t id, int seq) noexcept;
	static void onCoreError(void* data, uint32_t id, int seq, int res, const char* message) noexcept;
	static void onGlobal(void* data, uint32_t id, uint32_t permissions, const char* type, uint32_t version,
	                     const spa_dict* props) noexcept;
	static void onGlobalRemove(void* data, uint32_t id) noexcept;
	static void onNodeInfo(void* data, const pw_node_info* info) noexcept;
	static void onWatchInfo(void* data, const pw_node_info* info) noexcept;
	static void onNodeParam(void* data, int seq, uint32_t id, uint32_t index, uint32_t next, const spa_pod* param) noexcept;
	static void onDeviceInfo(void* data, const pw_device_info* info) noexcept;
	static void onDeviceParam(void* data, int seq, uint32_t id, uint32_t index, uint32_t next, const spa_pod* param) noexcept;
	static void onLinkInfo(void* data, const pw_link_info* info) noexcept;
	static void onClientInfo(void* data, const pw_client_info* info) noexcept;
	static int onMetadataProperty(void* data, uint32_t subject, const char* key, const char* type, const char* value) noexcept;

	void global(uint32_t id, const char* type, uint32_t version, const spa_dict* props);
	void globalRemove(uint32_t id);
	template <typename T>
	T* bind(std::map<uint32_t, std::unique_ptr<T>>& map, uint32_t id, const char* type, uint32_t version,
	        const spa_dict* props, const void* events);
	void bound(Object& o);
	void done(int seq);
	void completed(uint64_t gen);
	void deviceInfo(Device& d, const pw_device_info* info);
	void deviceParam(Device& d, int seq, uint32_t id, const spa_pod* param);
	void requestEnumeration(Device& d, uint32_t paramId);
	void enumerate(Device& d, uint32_t paramId);
	void startRound();
	void leaveRound(uint32_t device);
	void commitDevice(Device& d);
	void lose(std::string reason);
	void bindDevice(uint32_t id, uint32_t version, const spa_dict* props);
	void deviceWaits(uint32_t id, uint32_t version, const spa_dict* props);
	void bindWaitingDevice();
	Object* byProxyId(uint32_t proxyId);
	std::unique_ptr<Metadata> bindMetadata(uint32_t id, uint32_t version, Props props);

	pw_context* context_;
	pw_core* core_ = nullptr;
	pw_registry* registry_ = nullptr;
	spa_hook coreListener_{};
	spa_hook registryListener_{};

	std::map<uint32_t, std::unique_ptr<Node>> nodes_;
	std::map<uint32_t, std::unique_ptr<Device>> devices_;
	// The devices announced while kMaxDevices were bound: what binding one later takes, and
	// nothing more (its props come with its first info). By global id, and in the order they
	// came (a counter: global ids are reused), so the one waiting longest is bound first.
	struct WaitingDevice {
		uint64_t order = 0;
		int64_t serial = 0;
		bool hasSerial = false;   // PipeWire before 0.3.44 has none
		uint32_t version = 0;
	};
	std::map<uint32_t, WaitingDevice> waitingDevices_;
	std::map<uint64_t, uint32_t> waitingOrder_;   // order -> global id
	uint64_t nextWaitingOrder_ = 0;
	// The devices left waiting are logged one line each, at most 8 per 10 s: any client can
	// export them by the thousand.
	log::Limiter waitingLog_{8, 10'000'000};
	// Devices' params are enumerated kMaxEnumeratingDevices devices at a time: a round takes
	// devices until it has that many, and the next starts once every enumeration of the round is
	// answered (the done of the last one's sync), with the devices waiting in the queue, first
	// come first. That pause in the answers is what lets libpipewire's receive buffer start
	// again from its beginning (see kMaxEnumeratingDevices).
	std::set<uint32_t> enumerating_;         // the devices of the round with enumerations unsettled
	size_t roundDevices_ = 0;                // the devices the round took
	std::deque<uint32_t> enumerationQueue_;  // global ids of devices waiting for a round
	std::map<uint32_t, std::unique_ptr<Link>> links_;
	std::map<uint32_t, std::unique_ptr<Client>> clients_;
	std::unique_ptr<Metadata> metadata_;
	std::unique_ptr<Metadata> rereading_;   // rereadMetadata's binding, until its sync's done

	// Syncs in flight, oldest first: the server's seq and our generation.
	std::vector<std::pair<int, uint64_t>> syncs_;
	uint64_t nextGen_ = 1;
	uint64_t completedGen_ = 0;
	bool syncWanted_ = false;       // something was bound or announced in this iteration
	uint64_t initialGen_ = 0;       // the sync sent when the registry's first listing ended
	std::set<uint32_t> initialIds_; // what that listing held: ready once all of it is complete
	int paramSeq_ = 1000;           // seqs of our own enum_params
	int registrySeq_ = -1;
	bool registryListed_ = false;
	bool ready_ = false;
	bool lost_ = false;
	std::string lostReason_;
	Changes changes_;
	std::vector<Error> errors_;
	std::set<std::pair<uint32_t, uint32_t>> paramRereads_;   // (device global id, param id) to read again
	unsigned oversizedLogged_ = 0;   // the kDefaultKeys (bit i) whose value was ignored for its size, logged once
};

} // namespace qsd::pipewire
