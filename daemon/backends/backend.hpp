#pragma once
// The backend contract (DESIGN.md, "Backends"). A backend owns one domain of the tree, watches
// its service's bus name, subscribes before it enumerates, and degrades instead of failing.

#include "../dbus/bus.hpp"
#include "../event_loop.hpp"
#include "../server/dispatcher.hpp"
#include "../server/server.hpp"
#include "../tree.hpp"

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace qsd {

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
};

class Backend {
public:
	virtual ~Backend() = default;
	Backend(const Backend&) = delete;
	Backend& operator=(const Backend&) = delete;

	[[nodiscard]] virtual std::string_view id() const = 0;    // "nm", "upower", ...
	[[nodiscard]] virtual std::string_view root() const = 0;  // "/network", "/power", ...

	// Register methods, install matches, watch the bus name; enumerate asynchronously.
	virtual void start() = 0;
	// Cancel pending calls, unregister methods, remove the domain from the tree.
	virtual void stop() = 0;

protected:
	explicit Backend(BackendContext& context): context_(context) {}

	// Writes /daemon/backends/<id>/{state, since, error}.
	void setState(BackendState state, std::string error = {});
	// Emits an `event` notification to the clients subscribed to `topic`.
	void emitEvent(const std::string& topic, const nlohmann::json& data);

	BackendContext& context_;

private:
	BackendState state_ = BackendState::Stopped;
	std::string error_;
};

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

// RFC 3339 UTC timestamp of now, as used in the tree.
[[nodiscard]] std::string nowRfc3339();

} // namespace qsd
