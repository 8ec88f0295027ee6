#include "bus_backend.hpp"

#include "../log.hpp"

namespace qsd {

struct BusBackend::Match {
	std::string what;
	std::function<void(sdbus::Message&)> handler;
	const std::string* log = nullptr;
	bool warned = false;
	sdbus::Slot slot;

	void operator()(sdbus::Message& msg) {
		try {
			handler(msg);
		} catch (const sdbus::Error& e) {
			malformed(msg, e.getMessage());
		} catch (const std::exception& e) {
			malformed(msg, e.what());
		}
	}
	void malformed(sdbus::Message& msg, const std::string& why) {
		// A peer that keeps sending garbage is reported once, then only at debug level.
		std::string sender;
		try {
			sender = msg.getSender();
		} catch (const sdbus::Error&) {
		}
		if (!warned) log::warning(*log, "malformed {} from {}: {} (further ones are logged at debug level)", what, sender, why);
		else log::debug(*log, "malformed {} from {}: {}", what, sender, why);
		warned = true;
	}
};

BusBackend::BusBackend(BackendContext& context, Bus bus, std::string logName)
    : Backend(context), calls_(logName), reader_(logName), which_(bus), log_(std::move(logName)) {}

BusBackend::~BusBackend() = default;

void BusBackend::onStart() {
	reaper_ = context_.loop.addDefer([this] { graveyard_.clear(); }, "proxy-reaper");
	reaper_.setEnabled(SD_EVENT_OFF);
	attach();
}

void BusBackend::onBusesChanged() { attach(); }

// Starts on the bus once it is there; until the daemon heard from it the backend is starting,
// and without it, failed (both say why: precondition()). A bus that answers after it had not is
// attached then.
void BusBackend::attach() {
	if (conn_) return;
	bool pending = which_ == Bus::System ? context_.systemBusPending : context_.sessionBusPending;
	bus_ = which_ == Bus::System ? context_.systemBus : context_.sessionBus;
	if (!bus_) {
		const auto& error = which_ == Bus::System ? context_.systemBusError : context_.sessionBusError;
		if (pending) setState(BackendState::Starting);
		else
			setState(BackendState::Failed, error.empty() ? (which_ == Bus::System ? "no system bus connection" : "no session bus connection")
			                                             : error);
		return;
	}
	conn_ = &bus_->connection();
	setState(BackendState::Starting);
	onBusStart();
}

void BusBackend::onStop() {
	// Pending calls first: their handlers (and the answers they hold) go before the state they
	// would have touched.
	calls_.cancelAll();
	matches_.clear();
	if (conn_) onBusStop();
	graveyard_.clear();
	reaper_.reset();
	reader_.clear();
	conn_ = nullptr;
	bus_ = nullptr;
}

std::optional<Unavailable> BusBackend::precondition() const {
	if (conn_) return std::nullopt;
	const auto& error = which_ == Bus::System ? context_.systemBusError : context_.sessionBusError;
	return Unavailable{std::string(root()), error.empty() ? "there is no bus connection" : error};
}

void BusBackend::match(const std::string& rule, std::function<void(sdbus::Message&)> handler, std::string what) {
	auto m = std::make_unique<Match>();
	m->what = std::move(what);
	m->handler = std::move(handler);
	m->log = &log_;
	auto* raw = m.get();
	m->slot = conn_->addMatch(rule, [raw](sdbus::Message& msg) { (*raw)(msg); });
	matches_.push_back(std::move(m));
}

void BusBackend::bury(std::unique_ptr<sdbus::IProxy> proxy) {
	if (!proxy) return;
	graveyard_.push_back(std::move(proxy));
	if (reaper_) reaper_.setEnabled(SD_EVENT_ONESHOT);
	else graveyard_.clear();
}

} // namespace qsd
