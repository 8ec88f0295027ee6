#include "daemon.hpp"

#include "log.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <systemd/sd-daemon.h>

#include <algorithm>
#include <csignal>
#include <malloc.h>
#include <unistd.h>

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
	sessionBus_.reset();
	systemBus_.reset();
	methods_.clear();
	server_.reset();
}

std::vector<std::string> Daemon::backendIds() const {
	std::vector<std::string> ids;
	for (const auto& b: backends_) ids.emplace_back(b->id());
	return ids;
}

void Daemon::connectBuses() {
	try {
		systemBus_ = std::make_unique<BusConnection>(loop_, BusConnection::Kind::System);
	} catch (const sdbus::Error& e) {
		systemBusError_ = "cannot connect to the system bus: " + e.getMessage();
		log::warning("qsd", "{}; system services will be unavailable", systemBusError_);
	}
	try {
		sessionBus_ = std::make_unique<BusConnection>(loop_, BusConnection::Kind::Session);
	} catch (const sdbus::Error& e) {
		sessionBusError_ = "cannot connect to the session bus: " + e.getMessage();
		log::warning("qsd", "{}; session services will be unavailable", sessionBusError_);
	}
	// A bus that goes away takes every proxy, match, owned name and agent registration of the
	// backends on it: qsd exits with a failure so that the service manager starts it again
	// (qsd.service has Restart=on-failure, and qsd.socket keeps the socket for clients), and
	// the new qsd reads everything afresh from the new bus. The session bus going is the end of
	// the session, where exiting is right anyway.
	for (auto* bus: {systemBus_.get(), sessionBus_.get()}) {
		if (!bus) continue;
		const char* which = bus->kind() == BusConnection::Kind::System ? "system" : "session";
		bus->onLost([this, which] {
			log::error("qsd", "the connection to the {} bus was lost; exiting so that qsd is started again", which);
			loop_.exit(kExitBusLost);
		});
	}
}

void Daemon::startBackends() {
	icons_ = std::make_unique<icons::SharedTheme>(loop_);
	context_ = std::make_unique<BackendContext>(BackendContext{loop_, tree_, dispatcher_, *server_, systemBus_.get(),
	                                                           sessionBus_.get(), options_.debugApi, systemBusError_,
	                                                           sessionBusError_, icons_.get()});
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
	connectBuses();
	startBackends();
	// Start-up's temporaries (the whole API document, parsed to keep what checks params) are
	// free now but resident: give their pages back.
	::malloc_trim(0);
	int r = loop_.run();
	sd_notify(0, "STOPPING=1");
	return r < 0 ? 1 : r;
}

} // namespace qsd
