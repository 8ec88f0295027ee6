// The "wayland" backend: /wayland from one wayland-client connection on the daemon's loop —
// outputs (wl_output, xdg-output, wlr-output-management), toplevels (wlr-foreign-toplevel-
// management, ext-foreign-toplevel-list) and the compositor's globals — and the wayland.*
// actions. One connection serves every shell that talks to qsd.
//
// Lifetime: the socket comes from the Locator (WAYLAND_DISPLAY from qsd's environment or the
// systemd user manager's, re-read on SIGHUP). Connected, the registry is enumerated and two
// wl_display.sync roundtrips later (globals, then what binding them sent) the whole domain is
// written in one batch. When the compositor goes (hang-up, read/flush error, protocol error)
// everything is torn down, /wayland becomes {available: false}, and the socket's directory is
// watched with inotify; a refused connection is retried a few times with a growing delay (a
// compositor between bind() and listen(), or a stale socket), then only inotify or SIGHUP
// bring it back. A compositor that accepts the connection and then drops it is still there,
// and is retried for as long as that goes on, with delays growing to 30 s. Nothing polls.

#include "display.hpp"
#include "locator.hpp"
#include "mapping.hpp"
#include "outputs.hpp"
#include "toplevels.hpp"

#include "../../log.hpp"
#include "../../backoff.hpp"
#include "../backend.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace qsd::wayland {

namespace {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;

constexpr const char* kRoot = "/wayland";
// Connection attempts that fail are retried after 0.1, 0.2, 0.4, 0.8, 1.6 s, doubling up to 30 s.
constexpr Backoff::Policy kRetry{std::chrono::milliseconds(100), std::chrono::seconds(30), 0};
// Refused connections in a row after which only the socket watch or SIGHUP retry: a socket
// that refuses is stale (its compositor crashed) or about to be replaced, and the watch sees
// its replacement; retrying it forever would wake qsd up for nothing.
constexpr unsigned kRefusedTries = 5;
// A connection that lasted this long was a success: the next loss retries quickly again. One
// that the compositor ends sooner, every time, keeps the delays growing.
constexpr uint64_t kStableUs = 10'000'000;

class WaylandBackend final: public Backend {
public:
	explicit WaylandBackend(BackendContext& context): Backend(context) {}
	~WaylandBackend() override { stop(); }

	std::string_view id() const override { return "wayland"; }
	std::string_view root() const override { return kRoot; }

private:
	void onStart() override;
	void onStop() override;
	std::span<const Method> methods() const override;
	std::optional<Unavailable> availability() const override;
	std::string service() const override { return "the compositor"; }

	// Everything that belongs to one connection; destroyed as a whole when it ends. Proxies
	// go before the display (members are destroyed in reverse order).
	struct Session {
		std::unique_ptr<Display> display;
		std::string socket;
		wl_registry* registry = nullptr;
		std::unique_ptr<Outputs> outputs;
		std::unique_ptr<Toplevels> toplevels;
		std::map<uint32_t, std::pair<std::string, uint32_t>> globals;   // name -> interface, version
		bool ready = false;
		~Session() {
			toplevels.reset();
			outputs.reset();
			if (registry) wl_registry_destroy(registry);
		}
	};

	void connect();
	void ready();
	void lost(const LostReason& reason);
	void drop(const std::string& why);
	void retryLater();
	void onBusesChanged() override {
		if (locator_) locator_->setBus(context_.sessionBus);
	}
	void locatorChanged();
	void publishCompositor();
	void activate(Call& c);
	void close(Call& c);
	void setMaximized(Call& c);
	void setMinimized(Call& c);
	void setFullscreen(Call& c);
	void configureOutput(Call& c);
	void toplevelAction(Call& c, Toplevels::Action action, const std::string& output = {});

	static void onGlobal(void* data, wl_registry* registry, uint32_t name, const char* interface, uint32_t version) noexcept;
	static void onGlobalRemove(void* data, wl_registry* registry, uint32_t name) noexcept;

	bool hupHooked_ = false;
	std::unique_ptr<Locator> locator_;
	std::unique_ptr<Session> session_;
	KeyBook keys_;
	EventSource retry_;
	Backoff backoff_{kRetry};
	unsigned refused_ = 0;      // connection attempts refused in a row
	uint64_t readyAtUs_ = 0;    // when the current session was read (loop clock)
	std::string lastLog_;   // the last unavailability logged, so a retry does not repeat it
};

// ---------------------------------------------------------------------------------------------
// start / stop

void WaylandBackend::onStart() {
	setState(BackendState::Starting);
	if (!hupHooked_) {
		// The loop owns the handler for the daemon's life; it reaches this backend only while
		// it is started.
		hupHooked_ = true;
		context_.loop.onSignal(SIGHUP, [alive = liveness()] {
			if (auto self = alive.lock()) static_cast<WaylandBackend*>(*self)->locator_->reread();
		});
	}
	retry_ = context_.loop.addIdleTimer([this] { connect(); }, "wayland-retry");
	locator_ = std::make_unique<Locator>(
	    context_.loop, context_.sessionBus, [this] { locatorChanged(); },
	    [this] {
		    log::debug("wayland", "the compositor socket appeared");
		    backoff_.reset();
		    refused_ = 0;
		    connect();
	    });
	locator_->start();
	if (!locator_->socket()) setState(BackendState::Unavailable, locator_->missingReason());
}

void WaylandBackend::onStop() {
	session_.reset();
	retry_.reset();
	locator_.reset();
}

// ---------------------------------------------------------------------------------------------
// connection

void WaylandBackend::locatorChanged() {
	if (session_ && session_->socket == locator_->socket().value_or("")) {
		publishCompositor();   // the desktop name may have changed
		return;
	}
	if (session_) drop("WAYLAND_DISPLAY changed to " + locator_->socket().value_or(""));
	backoff_.reset();
	refused_ = 0;
	connect();
}

void WaylandBackend::connect() {
	if (session_ || !started()) return;
	const auto& path = locator_->socket();
	if (!path) {
		setState(BackendState::Unavailable, locator_->missingReason());
		return;
	}
	auto display = Display::connect(context_.loop, *path, [this](const LostReason& r) { lost(r); });
	if (!display) {
		int e = errno;
		auto why = fmt::format("no compositor at {} ({})", *path, std::strerror(e));
		if (why != lastLog_) log::info("wayland", "{}; waiting for it", why);
		lastLog_ = why;
		setState(BackendState::Unavailable, why);
		locator_->watch();
		// ENOENT: no socket at all, the watch will tell. Anything else (ECONNREFUSED: a stale
		// socket, or a compositor between bind() and listen()) may clear by itself, soon.
		if (e == ENOENT) return;
		if (++refused_ > kRefusedTries) {
			log::info("wayland", "giving up retrying; waiting for the compositor's socket to be created again (or SIGHUP)");
			return;
		}
		retryLater();
		return;
	}
	refused_ = 0;   // someone accepted: the compositor is there
	const auto& command = display->peerCommand().empty() ? std::string("?") : display->peerCommand();
	// Quiet while a compositor keeps dropping qsd (lost() said so once).
	if (backoff_.failures() <= kRefusedTries) log::info("wayland", "connected to {} ({})", *path, command);
	else log::debug("wayland", "connected to {} ({})", *path, command);
	lastLog_.clear();
	auto s = std::make_unique<Session>();
	s->socket = *path;
	s->display = std::move(display);
	auto* d = s->display.get();
	s->outputs = std::make_unique<Outputs>(
	    context_.tree, *d,
	    [this] {
		    if (session_ && session_->toplevels) session_->toplevels->outputsChanged();
	    },
	    [this](wl_output* gone) {
		    if (session_ && session_->toplevels) session_->toplevels->forgetOutput(gone);
	    });
	s->toplevels = std::make_unique<Toplevels>(context_.tree, *d, *s->outputs, keys_);
	s->registry = wl_display_get_registry(d->get());
	static const wl_registry_listener listener = {.global = onGlobal, .global_remove = onGlobalRemove};
	wl_registry_add_listener(s->registry, &listener, this);
	session_ = std::move(s);
	setState(BackendState::Starting);
	// First roundtrip: every global is announced (and bound as it comes). Second: everything
	// binding sent back (outputs, heads, toplevels) is in.
	d->sync([this, d] { d->sync([this] { ready(); }); });
}

void WaylandBackend::ready() {
	auto& s = *session_;
	s.ready = true;
	readyAtUs_ = context_.loop.now();
	locator_->unwatch();
	// One batch: available, the compositor, every output and toplevel.
	context_.tree.set("/wayland/available", true);
	publishCompositor();
	s.outputs->setReady();
	s.toplevels->setReady();
	setState(BackendState::Running);
}

void WaylandBackend::lost(const LostReason& reason) {
	if (!session_) return;
	bool stable = session_->ready && context_.loop.now() - readyAtUs_ >= kStableUs;
	if (stable) backoff_.reset();
	// The first losses in a row are warnings; then, while a compositor keeps dropping qsd, the
	// log says so once instead of at every try.
	if (backoff_.failures() < kRefusedTries)
		log::warning("wayland", "lost the compositor at {}: {}", session_->socket, reason.message);
	else
		log::debug("wayland", "lost the compositor at {}: {}", session_->socket, reason.message);
	if (backoff_.failures() == kRefusedTries)
		log::info("wayland", "the compositor at {} keeps closing the connection; trying again with delays growing to {} s",
		          session_->socket, wholeSeconds(kRetry.cap));
	drop("the compositor went away: " + reason.message);
	// A compositor that exits removes its socket and the watch reports the next one; one that
	// crashed leaves it behind, and the connection is refused (see connect()). One that closed
	// only us (a protocol error, or a client too slow for the burst of events it sent) is still
	// there: it is tried again until it lets qsd in, with growing delays; never at once,
	// because a dying compositor still accepts connections for a moment.
	retryLater();
}

void WaylandBackend::drop(const std::string& why) {
	session_.reset();   // pending actions answer "backend unavailable"
	keys_.identifiers = false;   // the next compositor may give the same identifiers (KeyBook)
	context_.tree.set(kRoot, {{"available", false}});
	setState(BackendState::Unavailable, why);
	if (started()) locator_->watch();
}

void WaylandBackend::retryLater() {
	auto delay = backoff_.next();   // the policy never gives up: connect() does, for refusals
	if (delay) retry_.setTime(context_.loop.now() + uint64_t(delay->count()));
}

void WaylandBackend::onGlobal(void* data, wl_registry* registry, uint32_t name, const char* interface,
                              uint32_t version) noexcept {
	auto* self = static_cast<WaylandBackend*>(data);
	try {
		if (!self->session_ || !interface) return;
		auto& s = *self->session_;
		std::string_view iface(interface);
		s.globals[name] = {std::string(iface), version};
		if (iface == wl_output_interface.name) s.outputs->addOutput(registry, name, version);
		else if (iface == zxdg_output_manager_v1_interface.name) s.outputs->bindXdgManager(registry, name, version);
		else if (iface == zwlr_output_manager_v1_interface.name) s.outputs->bindOutputManager(registry, name, version);
		else if (iface == zwlr_foreign_toplevel_manager_v1_interface.name) s.toplevels->bindWlr(registry, name, version);
		else if (iface == ext_foreign_toplevel_list_v1_interface.name) s.toplevels->bindExt(registry, name, version);
		else if (iface == wl_seat_interface.name) s.toplevels->bindSeat(registry, name, version);
		if (s.ready) self->publishCompositor();
	} catch (const std::exception& e) {
		log::error("wayland", "registry.global handler failed: {}", e.what());
	}
}

void WaylandBackend::onGlobalRemove(void* data, wl_registry*, uint32_t name) noexcept {
	auto* self = static_cast<WaylandBackend*>(data);
	try {
		if (!self->session_) return;
		auto& s = *self->session_;
		if (!s.outputs->removeGlobal(name)) (void)s.toplevels->removeGlobal(name);
		s.globals.erase(name);
		if (s.ready) self->publishCompositor();
	} catch (const std::exception& e) {
		log::error("wayland", "registry.global_remove handler failed: {}", e.what());
	}
}

void WaylandBackend::publishCompositor() {
	if (!session_ || !session_->ready) return;
	auto& s = *session_;
	std::set<std::pair<std::string, uint32_t>> offered;
	for (const auto& [_, g]: s.globals) offered.insert(g);
	json globals = json::array();
	for (const auto& [iface, version]: offered) globals.push_back({{"interface", iface}, {"version", version}});
	json missing = json::array();
	for (const auto& k: knownInterfaces()) {
		bool has = std::any_of(offered.begin(), offered.end(), [&](const auto& g) { return g.first == k.name; });
		if (!has) missing.push_back(std::string(k.name));
	}
	auto pid = s.display->peerPid();
	context_.tree.update("/wayland/compositor", {{"name", compositorName(locator_->desktop(), s.display->peerCommand())},
	                                             {"socket", s.socket},
	                                             {"pid", pid > 0 ? json(pid) : json(nullptr)},
	                                             {"globals", std::move(globals)},
	                                             {"missing", std::move(missing)}});
}

// ---------------------------------------------------------------------------------------------
// methods

std::span<const Backend::Method> WaylandBackend::methods() const {
	static constexpr Method table[] = {
	    method<&WaylandBackend::activate>("wayland.activate"),
	    method<&WaylandBackend::close>("wayland.close"),
	    method<&WaylandBackend::setMaximized>("wayland.setMaximized"),
	    method<&WaylandBackend::setMinimized>("wayland.setMinimized"),
	    method<&WaylandBackend::setFullscreen>("wayland.setFullscreen"),
	    method<&WaylandBackend::configureOutput>("wayland.configureOutput"),
	};
	return table;
}

std::optional<Unavailable> WaylandBackend::availability() const {
	if (session_ && session_->ready) return std::nullopt;
	return Unavailable{kRoot, session_ ? "the compositor is being read" : "no Wayland compositor is connected"};
}

void WaylandBackend::toplevelAction(Call& c, Toplevels::Action action, const std::string& output) {
	// Counter keys are decimal: `qsctl call wayland.close toplevel=3` sends a number.
	const auto& raw = c.params().any("toplevel");
	std::string key;
	if (raw.is_string()) key = raw.get<std::string>();
	else if (raw.is_number_unsigned()) key = std::to_string(raw.get<uint64_t>());
	else Params::fail("toplevel", "a toplevel key (a string, or an integer for a numeric key)");
	session_->toplevels->act(key, action, output, c.takeResponder());
}

void WaylandBackend::activate(Call& c) { toplevelAction(c, Toplevels::Action::Activate); }
void WaylandBackend::close(Call& c) { toplevelAction(c, Toplevels::Action::Close); }

void WaylandBackend::setMaximized(Call& c) {
	using A = Toplevels::Action;
	toplevelAction(c, c.params().boolean("maximized") ? A::Maximize : A::Unmaximize);
}

void WaylandBackend::setMinimized(Call& c) {
	using A = Toplevels::Action;
	toplevelAction(c, c.params().boolean("minimized") ? A::Minimize : A::Unminimize);
}

void WaylandBackend::setFullscreen(Call& c) {
	using A = Toplevels::Action;
	bool on = c.params().boolean("fullscreen");
	toplevelAction(c, on ? A::Fullscreen : A::Unfullscreen, c.params().optString("output").value_or(""));
}

void WaylandBackend::configureOutput(Call& c) {
	auto config = parseOutputConfig(c.raw());
	session_->outputs->configure(std::move(config), c.takeResponder());
}

} // namespace

} // namespace qsd::wayland

namespace qsd {
std::unique_ptr<Backend> createWaylandBackend(BackendContext& context) { return std::make_unique<wayland::WaylandBackend>(context); }
} // namespace qsd
