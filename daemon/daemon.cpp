#include "daemon.hpp"

#include "log.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <systemd/sd-daemon.h>

#include <algorithm>
#include <csignal>
#include <malloc.h>
#include <tuple>
#include <unistd.h>

#include <fmt/format.h>

namespace qsd {

Daemon::Daemon(DaemonOptions options): options_(std::move(options)), tree_(loop_, EventLoop::clock) {
	// While changes are frequent, flushing may take at most 1/30 of the time, and a change
	// waits at most 10 ms (docs/architecture.md, "Coalescing under load": the held flushes'
	// timer wake-ups, which the flush's own CPU time does not count, take about as much again).
	tree_.setCoalescing({29, 10'000});
	server_ = std::make_unique<Server>(loop_, tree_, dispatcher_, options_.server);
	server_->onClientCountChanged = [this](size_t n) { tree_.set("/daemon/clients", n); };
	tree_.set("/daemon", {{"version", QSD_VERSION},
	                      {"protocol", rpc::PROTOCOL_VERSION},
	                      {"epoch", tree_.epoch()},
	                      {"startedAt", nowRfc3339()},
	                      {"pid", ::getpid()},
	                      {"clients", 0},
	                      {"backends", nlohmann::json::object()}});
	methods_ = registerCoreMethods(*this);
	if (options_.debugApi) {
		auto debug = registerDebugMethods(*this);
		std::move(debug.begin(), debug.end(), std::back_inserter(methods_));
		log::notice("qsd", "debug API enabled (debug.* methods write under /debug)");
	}
}

Daemon::~Daemon() {
	// Backends first: they hold proxies on the connections and registrations in the dispatcher.
	for (auto& b: backends_) {
		try {
			b->stop();
		} catch (const std::exception& e) {
			log::error("qsd", "stopping backend {} failed: {}", b->id(), e.what());
		}
	}
	backends_.clear();
	context_.reset();
	for (auto* bus: {&sessionBus_, &systemBus_}) {
		bus->probe.reset();
		bus->retryTimer.reset();
		bus->connection.reset();
	}
	methods_.clear();
	server_.reset();
}

std::vector<std::string> Daemon::backendIds() const {
	std::vector<std::string> ids;
	for (const auto& b: backends_) ids.emplace_back(b->id());
	return ids;
}

namespace {
const char* busName(BusConnection::Kind kind) { return kind == BusConnection::Kind::System ? "system" : "session"; }
} // namespace

void Daemon::askBus(BusSlot& bus) {
	bus.probe = std::make_unique<BusProbe>(loop_, bus.kind, kBusAnswerTimeout,
	                                       [this, &bus](BusProbe::Result result, const std::string& why) {
		                                       busAnswered(bus, result, why);
	                                       });
}

// A bus answered its probe, or will not: connect, or say why not, and let the backends on it
// start (or fail) now. A bus that did not answer is asked again until it does.
void Daemon::busAnswered(BusSlot& bus, BusProbe::Result result, const std::string& why) {
	const char* which = busName(bus.kind);
	bool wasPending = bus.pending;
	bus.pending = false;
	if (result == BusProbe::Result::NoAnswer) {
		bus.error = fmt::format("cannot connect to the {} bus: {}", which, why);
		auto delay = bus.retry.next();
		log::warning("qsd", "{}; asking it again in {} s", bus.error,
		             std::chrono::duration_cast<std::chrono::seconds>(*delay).count());
		bus.retryTimer = loop_.addTimer(*delay, [this, &bus] { askBus(bus); }, "bus-retry");
	} else {
		// Answered: this handshake takes a round trip. Refused: it fails at once, saying why.
		try {
			bus.connection = std::make_unique<BusConnection>(loop_, bus.kind);
			if (bus.probe) bus.connection->setId(bus.probe->busId());
			bus.error.clear();
			if (bus.retry.failures()) log::notice("qsd", "the {} bus answered", which);
			// A bus that goes away takes every proxy, match, owned name and agent registration
			// of the backends on it: qsd exits with a failure so that the service manager
			// starts it again (qsd.service has Restart=on-failure, and qsd.socket keeps the
			// socket for clients), and the new qsd reads everything afresh from the new bus.
			// The session bus going is the end of the session, where exiting is right anyway.
			bus.connection->onLost([this, which] {
				log::error("qsd", "the connection to the {} bus was lost; exiting so that qsd is started again", which);
				loop_.exit(kExitBusLost);
			});
		} catch (const sdbus::Error& e) {
			bus.error = fmt::format("cannot connect to the {} bus: {}", which, e.getMessage());
			log::warning("qsd", "{}; {} services will be unavailable", bus.error, which);
		}
	}
	if (!context_) return;
	auto [connection, error, pending] = bus.kind == BusConnection::Kind::System
	                                         ? std::tie(context_->systemBus, context_->systemBusError, context_->systemBusPending)
	                                         : std::tie(context_->sessionBus, context_->sessionBusError, context_->sessionBusPending);
	connection = bus.connection.get();
	error = bus.error;
	pending = false;
	// Backends on a bus that failed before are told only when it answers at last.
	if (!wasPending && !connection) return;
	for (auto& b: backends_) {
		try {
			b->busesChanged();
		} catch (const std::exception& e) {
			// As a backend that throws in start(): reported, never fatal.
			log::error("qsd", "backend {} failed to start on the {} bus: {}", b->id(), which, e.what());
			b->stop();
			tree_.set("/daemon/backends/" + std::string(b->id()),
			          {{"state", "failed"}, {"since", nowRfc3339()}, {"error", e.what()}});
		}
	}
	// Start-up's temporaries (the whole API document, parsed to keep what checks params) are
	// free now but resident: give their pages back once the backends on both buses started.
	if (!systemBus_.pending && !sessionBus_.pending && wasPending) ::malloc_trim(0);
}

void Daemon::startBackends() {
	icons_ = std::make_unique<icons::SharedTheme>(loop_);
	context_ = std::make_unique<BackendContext>(BackendContext{loop_, tree_, dispatcher_, *server_, nullptr, nullptr,
	                                                           options_.debugApi, {}, {}, icons_.get()});
	// Until its bus answered, a backend on it is starting and its requests are refused as
	// unavailable, with this reason.
	context_->systemBusPending = context_->sessionBusPending = true;
	context_->systemBusError = "the system bus has not answered yet";
	context_->sessionBusError = "the session bus has not answered yet";
	if (options_.backends)
		for (const auto& id: *options_.backends)
			if (std::none_of(builtinBackends().begin(), builtinBackends().end(),
			                 [&](const BackendInfo& info) { return info.id == id; }))
				log::warning("qsd", "backend {} is not built into this qsd (--backends)", id);
	for (const auto& info: builtinBackends()) {
		if (options_.backends &&
		    std::find(options_.backends->begin(), options_.backends->end(), info.id) == options_.backends->end())
			continue;
		try {
			auto backend = info.create(*context_);
			backend->start();
			backends_.push_back(std::move(backend));
		} catch (const std::exception& e) {
			// A backend that cannot start is reported, never fatal.
			log::error("qsd", "backend {} failed to start: {}", info.id, e.what());
			tree_.set("/daemon/backends/" + std::string(info.id),
			          {{"state", "failed"}, {"since", nowRfc3339()}, {"error", e.what()}});
		}
	}
}

int Daemon::run() {
	loop_.onSignal(SIGTERM, [this] {
		log::info("qsd", "SIGTERM: exiting");
		loop_.exit(0);
	});
	loop_.onSignal(SIGINT, [this] {
		log::info("qsd", "SIGINT: exiting");
		loop_.exit(0);
	});
	// SIGHUP (`systemctl --user reload qsd`) asks backends to re-read their environment (the
	// wayland backend looks for WAYLAND_DISPLAY again); it must never end the daemon, whichever
	// backends are built, so the daemon handles it first.
	loop_.onSignal(SIGHUP, [] { log::info("qsd", "SIGHUP: backends re-read their environment"); });
	// A client that goes away mid-write must not kill us.
	std::signal(SIGPIPE, SIG_IGN);
	server_->listen();
	loop_.enableWatchdog();
	sd_notify(0, "READY=1\nSTATUS=listening");
	// The buses are asked on the loop (BusProbe): clients are answered and signals handled
	// while they answer, and the backends on a bus start once it has.
	askBus(systemBus_);
	askBus(sessionBus_);
	startBackends();
	int r = loop_.run();
	sd_notify(0, "STOPPING=1");
	return r < 0 ? 1 : r;
}

} // namespace qsd
