#pragma once
// The backend contract (docs/architecture.md, "Backends"). A backend owns one domain of the
// tree, watches its service, subscribes before it enumerates, and degrades instead of failing.
//
// What every backend shares lives here, once: the start/stop life cycle (the started guard, the
// initial root, the methods registered and removed, the liveness token that callbacks and
// client leases hold), the method table and the order in which a request is checked, and the
// client leases. D-Bus backends add BusBackend (bus_backend.hpp) on top.

#include "../dbus/bus.hpp"
#include "../event_loop.hpp"
#include "../icons/shared_theme.hpp"
#include "../server/dispatcher.hpp"
#include "../server/server.hpp"
#include "../tree.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qsd {

class Answer;

// The longest a backend stays `starting` for what its service has when it starts (the tray's
// items, MPRIS's players) once it knows what that is: one peer slow to answer its first read (or
// that never does) must not hold back the others, nor the clients, which keep a domain as it was
// across a reconnect while its backend starts (their restart hold, 3 s, is longer). Shorter than
// the backends' 5 s call timeout.
constexpr std::chrono::seconds kStartWait{2};

// What a backend reports in /daemon/backends/<id>/state.
enum class BackendState {
	Starting,     // start() ran; waiting for the first answers
	Running,      // the service is there and the domain is complete
	Unavailable,  // the service is not on the bus (or its socket is gone): available=false
	Failed,       // cannot work at all (no bus connection); `error` says why
	Stopped,
};
[[nodiscard]] const char* toString(BackendState state);

struct BackendContext {
	EventLoop& loop;
	Tree& tree;
	Dispatcher& dispatcher;
	Server& server;
	BusConnection* systemBus;     // nullptr when the system bus cannot be reached
	BusConnection* sessionBus;    // nullptr when there is no session bus
	bool debug = false;           // --debug-api: backends may register extra debug methods
	// Why a bus could not be reached ("cannot connect to the system bus: ..."), "" when it was.
	std::string systemBusError = {};
	std::string sessionBusError = {};
	// The daemon's icon theme lookup, one for every backend that shows icons (made at first use;
	// never null in the daemon).
	icons::SharedTheme* icons = nullptr;
	// The bus has not answered yet (the daemon asks each bus on the loop before connecting:
	// BusProbe); its pointer is null meanwhile and its error says so. Backend::busesChanged()
	// runs when that changes.
	bool systemBusPending = false;
	bool sessionBusPending = false;
};

// Why a backend (or a part of it) cannot serve a request now: -32000 with data {backend, path}.
struct Unavailable {
	std::string path;   // the subtree that is unavailable: "/network", "/power/profiles"
	std::string why;    // "NetworkManager is not on the system bus"
};

class Backend;

// One request to a backend method, after its params passed the API description's checks and
// the backend said it is available. The handler reads params(), looks its ids up (throwing
// rpc::RpcException for unknown ones) and answers through result() at once, or through
// answer() — shared by the handlers of the calls that carry the request out — later.
class Call {
public:
	Call(Backend& backend, const nlohmann::json& params, Responder responder, ClientSession& client);
	~Call();
	Call(const Call&) = delete;
	Call& operator=(const Call&) = delete;

	[[nodiscard]] const rpc::Params& params() const { return params_; }
	[[nodiscard]] const nlohmann::json& raw() const { return raw_; }
	[[nodiscard]] ClientSession& client() const { return client_; }
	// The answer of an asynchronous call. `service` names who did not answer when the call is
	// cancelled because it went away ("org.freedesktop.NetworkManager"); default: the backend's.
	[[nodiscard]] std::shared_ptr<Answer> answer(std::string service = {});
	// Answers now.
	void result(nlohmann::json value);
	// For code that completes a Responder itself (PipeWire and Wayland requests that wait for
	// their effect in the graph or on the compositor).
	[[nodiscard]] Responder takeResponder();

	// The kit's: answers an error, through the answer when the handler made one.
	void fail(rpc::Error error);

private:
	Backend& backend_;
	const nlohmann::json& raw_;
	rpc::Params params_;
	ClientSession& client_;
	std::optional<Responder> responder_;
	std::shared_ptr<Answer> answer_;
};

class Backend {
public:
	virtual ~Backend() = default;
	Backend(const Backend&) = delete;
	Backend& operator=(const Backend&) = delete;

	[[nodiscard]] virtual std::string_view id() const = 0;    // "nm", "upower", ...
	[[nodiscard]] virtual std::string_view root() const = 0;  // "/network", "/power", ...

	// Writes the initial root, registers the methods and calls onStart(), once.
	void start();
	// Cancels pending work (onStop()), removes the methods and the domain, once. Every backend's
	// destructor calls it: the base's destructor can no longer reach onStop().
	void stop();
	[[nodiscard]] bool started() const { return started_; }
	// A bus of the context answered at last (or will not): a started backend that waited for it
	// goes on (onBusesChanged()).
	void busesChanged() {
		if (started_) onBusesChanged();
	}

	// One method of the backend's table: the name it is called by, once, and its handler.
	// `needsService` false: the method works whatever availability() says (releasing a claim).
	struct Method {
		std::string_view name;
		void (*invoke)(Backend& backend, Call& call);
		bool needsService = true;
	};
	// Builds a table entry from a member function: method<&NmBackend::setWifiEnabled>("network.setWifiEnabled").
	template <auto Handler>
	static constexpr Method method(std::string_view name, bool needsService = true) {
		return Method{name, &invokeMember<Handler>, needsService};
	}

protected:
	friend class Call;
	explicit Backend(BackendContext& context): context_(context) {}

	// --- what each backend provides
	// The domain's value before anything is known; written by start() and after a failure.
	[[nodiscard]] virtual nlohmann::json initialRoot() const { return {{"available", false}}; }
	// The backend's methods, each named once. Registered by start(), removed by stop().
	[[nodiscard]] virtual std::span<const Method> methods() const { return {}; }
	// Whether requests can be served now; std::nullopt when they can. A kind of backend checks
	// what all of its kind need first (precondition(): a D-Bus backend's bus connection).
	[[nodiscard]] virtual std::optional<Unavailable> availability() const { return std::nullopt; }
	[[nodiscard]] virtual std::optional<Unavailable> precondition() const { return std::nullopt; }
	// Who answers this backend's calls, for "… went away before answering".
	[[nodiscard]] virtual std::string service() const { return std::string(id()); }
	virtual void onStart() = 0;
	virtual void onStop() = 0;
	virtual void onBusesChanged() {}

	// --- what the kit gives them
	// Writes /daemon/backends/<id>/{state, since, error}.
	void setState(BackendState state, std::string error = {});
	[[nodiscard]] BackendState state() const { return state_; }
	// Emits an `event` notification to the clients subscribed to `topic`.
	void emitEvent(const std::string& topic, const nlohmann::json& data);
	// The -32000 error of an unavailable backend (or part of it).
	[[nodiscard]] rpc::RpcException unavailable(const Unavailable& why) const;
	// A handle that reaches this backend only while it is started: for callbacks that may run
	// after stop() (signal handlers owned by the loop, client leases).
	[[nodiscard]] std::weak_ptr<Backend*> liveness() const { return alive_; }

	// A claim a client holds for as long as its connection lives (a profile hold, a scan, a
	// level meter, discovery, the secret prompt), under `key` in its session. `release` runs
	// once: when the client gives it up (revokeLease), disconnects, or the lease is replaced —
	// never after this backend stopped. Replacing a held key releases the old lease first.
	void grantLease(ClientSession& client, const std::string& key, std::function<void()> release);
	// Gives the lease up (its release runs now). False when the client holds none under `key`.
	static bool revokeLease(ClientSession& client, const std::string& key);

	BackendContext& context_;

private:
	template <auto Handler>
	static void invokeMember(Backend& backend, Call& call);
	void registerMethods();
	void dispatch(const Method& m, const nlohmann::json& params, Responder responder, ClientSession& client);

	BackendState state_ = BackendState::Stopped;
	std::string error_;
	bool started_ = false;
	std::shared_ptr<Backend*> alive_;
	std::vector<MethodRegistration> registrations_;
};

namespace detail {
template <typename T>
struct MemberOf;
template <typename C, typename R, typename... A>
struct MemberOf<R (C::*)(A...)> {
	using type = C;
};
} // namespace detail

template <auto Handler>
void Backend::invokeMember(Backend& backend, Call& call) {
	using X = typename detail::MemberOf<decltype(Handler)>::type;
	(static_cast<X&>(backend).*Handler)(call);
}

struct BackendInfo {
	std::string_view id;
	std::unique_ptr<Backend> (*create)(BackendContext& context);
};
// The backends compiled in (WITH_* options), in start order.
[[nodiscard]] std::span<const BackendInfo> builtinBackends();

// Factories, each defined in its backend's folder.
std::unique_ptr<Backend> createNmBackend(BackendContext& context);
std::unique_ptr<Backend> createUpowerBackend(BackendContext& context);
std::unique_ptr<Backend> createPipewireBackend(BackendContext& context);
std::unique_ptr<Backend> createTrayBackend(BackendContext& context);
std::unique_ptr<Backend> createWaylandBackend(BackendContext& context);
std::unique_ptr<Backend> createMprisBackend(BackendContext& context);
std::unique_ptr<Backend> createNotificationsBackend(BackendContext& context);
std::unique_ptr<Backend> createBluetoothBackend(BackendContext& context);

// An RFC 3339 UTC timestamp with milliseconds ("2026-12-03T08:27:26.131Z"), as the tree gives
// times; nowRfc3339() is the wall clock read now.
[[nodiscard]] std::string rfc3339(std::chrono::system_clock::time_point t);
[[nodiscard]] std::string nowRfc3339();

} // namespace qsd
