#include "bus_probe.hpp"

#include <cstring>

#include <fmt/format.h>

namespace qsd {

BusProbe::BusProbe(EventLoop& loop, BusConnection::Kind kind, std::chrono::microseconds timeout, Done done)
    : done_(std::move(done)) {
	// The outcome is handed over from a source of the daemon's loop, so that what `done` writes
	// to the tree is flushed like any other event's (sd-bus's own sources, attached below, are
	// not the loop's and do not flush).
	finish_ = loop.addDefer([this] { finish(); }, "bus-probe");
	finish_.setEnabled(SD_EVENT_OFF);
	int r = kind == BusConnection::Kind::System ? sd_bus_open_system(&bus_) : sd_bus_open_user(&bus_);
	if (r < 0) {
		settle(Result::Refused, std::strerror(-r));
		return;
	}
	// sd-bus drives the connection (connecting, authenticating, Hello) from the loop's epoll.
	// Not flushed when the loop exits (sd-bus's default for a bus it opened): a flush waits for
	// a bus that does not read, and SIGTERM would wait with it.
	r = sd_bus_set_close_on_exit(bus_, 0);
	if (r >= 0) r = sd_bus_attach_event(bus_, loop.raw(), SD_EVENT_PRIORITY_NORMAL);
	if (r >= 0)
		r = sd_bus_call_method_async(bus_, &call_, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
		                             "GetId", &BusProbe::onReply, this, "");
	if (r < 0) {
		settle(Result::Refused, std::strerror(-r));
		return;
	}
	// sd-bus applies no method call timeout while it authenticates (only its own 90 s one).
	timeout_ = loop.addTimer(timeout, [this, timeout] {
		auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
		settle(Result::NoAnswer, ms % 1000 ? fmt::format("no answer within {} ms", ms) : fmt::format("no answer within {} s", ms / 1000));
	}, "bus-probe-timeout");
}

BusProbe::~BusProbe() { release(); }

int BusProbe::onReply(sd_bus_message* reply, void* userdata, sd_bus_error*) {
	auto* self = static_cast<BusProbe*>(userdata);
	const sd_bus_error* e = sd_bus_message_get_error(reply);
	// sd-bus answers a pending call itself when the connection closes (authentication refused,
	// the bus daemon exiting) or the call times out: the bus did not answer. An error from the
	// bus daemon (a bus without GetId) is an answer: the connection works.
	if (e && (sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) || sd_bus_error_has_name(e, SD_BUS_ERROR_DISCONNECTED)))
		self->settle(Result::NoAnswer, e->message ? e->message : e->name);
	else {
		const char* id = nullptr;
		if (!e && sd_bus_message_read(reply, "s", &id) > 0 && id) self->id_ = id;
		self->settle(Result::Answered, {});
	}
	return 0;
}

void BusProbe::settle(Result result, std::string why) {
	if (settled_) return;
	settled_ = true;
	result_ = result;
	why_ = std::move(why);
	timeout_.reset();
	finish_.setEnabled(SD_EVENT_ONESHOT);
}

void BusProbe::finish() {
	// The connection goes before `done` runs: it was only a question (and must not be closed
	// from inside its own reply callback, which is why this runs from the loop's source).
	release();
	auto done = std::move(done_);
	if (done) done(result_, why_);
}

void BusProbe::release() {
	call_ = sd_bus_slot_unref(call_);
	if (bus_) {
		sd_bus_detach_event(bus_);
		// Not sd_bus_flush_close_unref(): a bus that does not read would block the flush.
		bus_ = sd_bus_close_unref(bus_);
	}
}

} // namespace qsd
