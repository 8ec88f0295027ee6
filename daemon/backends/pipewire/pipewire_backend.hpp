#pragma once
// The "pipewire" backend: /audio from a PipeWire connection (graph.hpp), published after every
// loop iteration, with the audio.* actions. pipewire_backend.cpp holds the lifecycle and the
// publishing, actions.cpp the methods, their waits and the level meters.

#include "../../backoff.hpp"
#include "../../log.hpp"
#include "../answer.hpp"
#include "../backend.hpp"
#include "graph.hpp"
#include "loop.hpp"
#include "peaks.hpp"

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

struct pw_context;

namespace qsd::pipewire {

// Where the backend publishes (docs/backends/pipewire.md).
inline constexpr const char* kRoot = "/audio";
inline constexpr const char* kNodes = "/audio/nodes";
inline constexpr const char* kDevices = "/audio/devices";
inline constexpr const char* kLinks = "/audio/links";

class PipewireBackend final: public Backend {
public:
	explicit PipewireBackend(BackendContext& context);
	~PipewireBackend() override;

	[[nodiscard]] std::string_view id() const override { return "pipewire"; }
	[[nodiscard]] std::string_view root() const override { return kRoot; }

private:
	void onStart() override;
	void onStop() override;
	std::span<const Method> methods() const override;
	std::optional<Unavailable> availability() const override;
	std::string service() const override { return "PipeWire"; }

	// After the socket appeared, a daemon between bind() and listen() refuses connections: a
	// few short retries, triggered by that event only.
	static constexpr Backoff::Policy kQuickRetry{std::chrono::milliseconds(50), std::chrono::milliseconds(50), 40};

	// Where a node's volume and mute live: its own Props, or (a node of a sound card with a
	// route) the device's active Route, as WirePlumber's mixer API and wpctl decide.
	struct VolumeSource {
		std::optional<VolumeState> state;
		const Device* device = nullptr;
		int32_t route = -1;
		int32_t cardDevice = -1;
	};

	// An action waiting until PipeWire shows its effect (or refuses, or the time runs out).
	struct Waiter {
		std::shared_ptr<Answer> answer;
		std::function<std::optional<json>()> check;   // the result once applied
		uint32_t object = 0;                          // global id whose errors fail it
		uint64_t deadline = 0;
		std::string what;
		bool metadata = false;   // a write to the "default" metadata (see rereadForWaiters)
		// What the write sets ("volume <node key>", a metadata key...): a later write of the same
		// target takes over this one's answer (wait()). Empty: not a write.
		std::string target;
		std::vector<std::shared_ptr<Answer>> earlier;   // answers taken over, answered alike
	};

	// A level meter shared by the clients that asked for it.
	struct Monitor {
		std::unique_ptr<PeakStream> stream;
		std::map<uint64_t, std::weak_ptr<ClientSession>> clients;   // by client id
		std::vector<float> peaks;
		std::vector<uint32_t> positions;   // of the published peakChannels
		bool channelsPublished = false;
		bool published = false;
	};
	// --- lifecycle (pipewire_backend.cpp)
	void connect();
	void afterIterate();
	void teardown(const std::string& why, bool reconnect);
	void publishUnavailable(const std::string& why);

	// --- publishing (pipewire_backend.cpp)
	void flush();
	void publishAll();
	void publishNode(const Node& n);
	void logNoVolume(const std::string& key, const json& name);
	void publishDevice(const Device& d);
	void publishLinks(std::set<uint32_t>& dirtyNodes);
	void publishDefaults();
	// PipeWire's gap (docs/backends/pipewire.md): the defaults qsd holds may have missed a change.
	[[nodiscard]] bool defaultsSuspect() const;
	void checkDefaults();
	void rereadDefaults();
	[[nodiscard]] json nodeJson(const Node& n) const;
	[[nodiscard]] json deviceJson(const Device& d) const;
	[[nodiscard]] VolumeSource volumeSource(const Node& n) const;
	[[nodiscard]] std::optional<std::string> defaultKey(const char* metadataKey, bool sink) const;
	[[nodiscard]] const Node* nodeByKey(const std::string& key) const;
	[[nodiscard]] const Device* deviceByKey(const std::string& key) const;
	[[nodiscard]] bool published(const Node& n) const;
	[[nodiscard]] bool isMonitor(const Node& n) const;

	// --- views derived from nodes and links (views.cpp)
	void publishViews();
	void publishDefaultNode(const char* field, const char* defaultField);
	void publishPrivacy();

	// --- actions (actions.cpp)
	void setVolume(Call& c);
	void setVolumes(Call& c);
	void setMuted(Call& c);
	void setPreferredDefault(Call& c);
	void moveStream(Call& c);
	void setDeviceProfile(Call& c);
	void setRoute(Call& c);
	void monitorPeaksMethod(Call& c);
	void watchPropertiesMethod(Call& c);
	[[nodiscard]] const Node& audioNode(const json& params, const char* param) const;
	void writeVolume(const Node& n, const VolumeSource& src, std::optional<std::vector<double>> volumes,
	                 std::optional<bool> mute, std::shared_ptr<Answer> answer);
	void wait(Waiter waiter);
	void checkWaiters();
	void rereadForWaiters();
	void expireWaiters();
	void failWaiters(rpc::ErrorCode code, const std::string& message);
	void answer(Waiter& w, const json& result);
	void refuse(Waiter& w, rpc::ErrorCode code, const std::string& message, const json& data);

	// --- level meters (actions.cpp)
	void monitorPeaks(const Node& n, std::shared_ptr<Answer> answer, ClientSession& client);
	void monitorReleased(const std::string& node, uint64_t client);
	void dropMonitor(std::string node);   // by value: callers pass the map's own key
	void dropAllMonitors();
	void publishPeaks();
	void publishPeakChannels(const std::string& key, Monitor& m);

	// --- watched properties (actions.cpp)
	void watchProperties(const Node& n, std::shared_ptr<Answer> answer, ClientSession& client);
	void propertiesReleased(const std::string& node, uint64_t client);
	void dropPropertyWatch(std::string node);   // by value, as dropMonitor
	void dropAllPropertyWatches();

	// libpipewire's loops and context exist only while a socket does (about 1.7 MiB of its code,
	// modules and heap): made by openContext() when connect() finds a socket, closed when an
	// attempt fails or the connection is gone.
	bool openContext();
	void closeContext();
	[[nodiscard]] bool socketPresent() const;

	std::unique_ptr<PwLoop> pwLoop_;
	std::unique_ptr<PwLoop> dataLoop_;   // the context's data loop, iterated by qsd's loop
	pw_context* pwContext_ = nullptr;
	bool clientNodeLoaded_ = false;
	std::unique_ptr<Graph> graph_;
	std::unique_ptr<SocketWatch> watch_;
	EventSource retry_;           // a connect attempt, deferred or after a short delay
	std::optional<Backoff> quickRetry_;   // set while the socket just appeared
	bool ready_ = false;          // /audio published complete
	std::string unavailableWhy_;

	// What is in the tree: global id -> key, and key -> global id.
	std::map<uint32_t, std::string> nodeKeys_, deviceKeys_, linkKeys_;
	std::map<std::string, uint32_t> nodeIds_, deviceIds_;
	std::map<uint32_t, std::set<uint32_t>> playingTo_, capturedFrom_;
	std::set<uint32_t> sinkCaptures_;   // audio recording streams linked from a sink (its monitor)
	json defaults_ = json::object();
	EventSource rereadTimer_;      // a suspect state of the defaults, a second after it was seen
	std::string rereadFor_;        // the defaults (as published) the metadata was last read again for
	EventSource paramRereadTimer_; // a device's param list announced as changed and read unchanged
	// The audio nodes without volume controls that were logged, while they exist: any client can
	// make such nodes and remove them again (spa-node-factory's null sink), and the keys of the
	// ones gone stayed (about 80 B each, 5000 nodes in 5 s) with a log line each. At most
	// 8 lines per 10 s; the ones held back are counted in the next.
	std::set<std::string> noVolumeLogged_;
	log::Limiter noVolumeLog_{8, 10'000'000};

	std::list<Waiter> waiters_;
	EventSource waitTimer_;
	EventSource waiterRereadTimer_;   // a write to the default metadata not seen back a second later

	std::map<std::string, Monitor> monitors_;   // by node key
	// The clients watching each node's every property (its `properties`), by node key.
	std::map<std::string, std::map<uint64_t, std::weak_ptr<ClientSession>>> propertyWatchers_;
	EventSource peakTimer_;
};

} // namespace qsd::pipewire
