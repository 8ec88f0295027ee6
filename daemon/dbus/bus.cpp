#include "bus.hpp"

#include "names.hpp"

#include "../log.hpp"

#include <poll.h>
#include <sys/epoll.h>

namespace qsd {

namespace {
uint32_t toEpoll(short events) {
	uint32_t e = 0;
	if (events & POLLIN) e |= EPOLLIN;
	if (events & POLLOUT) e |= EPOLLOUT;
	if (events & POLLPRI) e |= EPOLLPRI;
	return e;
}
} // namespace

BusConnection::BusConnection(EventLoop& loop, Kind kind): loop_(loop), kind_(kind) {
	connection_ = kind == Kind::System ? sdbus::createSystemBusConnection() : sdbus::createSessionBusConnection();
	auto pd = connection_->getEventLoopPollData();
	io_ = loop.addIo(pd.fd, toEpoll(pd.events), [this](uint32_t) { process(); },
	                 kind == Kind::System ? "system-bus" : "session-bus", [this] { prepare(); });
	events_ = toEpoll(pd.events);
	// A oneshot timer is off once it fired: prepare() must arm it again even for the same time.
	timer_ = loop.addIdleTimer([this] {
		timeout_ = UINT64_MAX;
		process();
	}, kind == Kind::System ? "system-bus-timeout" : "session-bus-timeout");
	reaper_ = loop.addDefer([this] { graveyard_.clear(); }, "proxy-reaper");
	reaper_.setEnabled(SD_EVENT_OFF);
}

BusConnection::~BusConnection() {
	names_.reset();
	graveyard_.clear();
	daemon_.reset();
	reaper_.reset();
	io_.reset();
	timer_.reset();
}

sdbus::IProxy& BusConnection::daemon() {
	if (!daemon_) daemon_ = sdbus::createProxy(*connection_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
	return *daemon_;
}

NameTracker& BusConnection::names() {
	if (!names_) names_ = std::make_unique<NameTracker>(*this);
	return *names_;
}

const std::string& BusConnection::uniqueName() {
	if (unique_.empty()) unique_ = connection_->getUniqueName();
	return unique_;
}

void BusConnection::bury(std::unique_ptr<sdbus::IProxy> proxy) {
	if (!proxy) return;
	graveyard_.push_back(std::move(proxy));
	reaper_.setEnabled(SD_EVENT_ONESHOT);
}

void BusConnection::process() {
	if (lost_) return;
	try {
		while (connection_->processPendingRequest()) {
		}
	} catch (const sdbus::Error& e) {
		if (disconnected(e)) return;
		log::error("dbus", "processing {} bus messages failed: {}: {}", kind_ == Kind::System ? "system" : "session",
		           e.getName(), e.getMessage());
	}
}

// Runs before every poll: POLLOUT while messages wait to be written, and the timeout of the
// earliest pending call. A timeout of UINT64_MAX means none (arming a timer with it fails).
void BusConnection::prepare() {
	if (lost_) return;
	sdbus::IConnection::PollData pd;
	try {
		pd = connection_->getEventLoopPollData();
	} catch (const sdbus::Error& e) {
		if (disconnected(e)) return;
		throw;
	}
	// Mostly unchanged from one poll to the next: sd-event is only told about a change (setting
	// the same time still re-sorts its timer queue).
	uint32_t events = toEpoll(pd.events);
	if (events != events_) {
		io_.setIoEvents(events);
		events_ = events;
	}
	if (pd.timeout_usec != timeout_) {
		if (pd.timeout_usec == UINT64_MAX) timer_.setEnabled(SD_EVENT_OFF);
		else timer_.setTime(pd.timeout_usec);
		timeout_ = pd.timeout_usec;
	}
}

// sd-bus reports a connection the peer closed as ENOTCONN (or ECONNRESET/EPIPE while writing),
// and its fd stays readable (HUP) for ever: without this the loop would spin on it, logging
// every pass. A bus connection is not reopened in place (every proxy, match and name of every
// backend lives on it); the daemon decides what a lost bus means (see Daemon::connectBuses).
bool BusConnection::disconnected(const sdbus::Error& e) {
	const auto& name = e.getName();
	if (name != "System.Error.ENOTCONN" && name != "System.Error.ECONNRESET" && name != "System.Error.EPIPE")
		return false;
	if (lost_) return true;
	lost_ = true;
	io_.setEnabled(SD_EVENT_OFF);
	timer_.setEnabled(SD_EVENT_OFF);
	if (onLost_) onLost_();
	return true;
}

} // namespace qsd
