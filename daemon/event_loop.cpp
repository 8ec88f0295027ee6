#include "event_loop.hpp"

#include "log.hpp"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <limits>
#include <system_error>

namespace qsd {

namespace {

struct IoData {
	EventLoop* loop;
	EventLoop::IoHandler onReady;
	EventLoop::Handler onPrepare;
	const char* description;
};
struct PlainData {
	EventLoop* loop;
	EventLoop::Handler handler;
	const char* description;
};

template <typename T>
void destroyData(void* userdata) noexcept {
	delete static_cast<T*>(userdata);
}

// Trampolines never let an exception reach sd-event, and return 0 so a failing handler does
// not disable its source.
int onIo(sd_event_source*, int, uint32_t revents, void* userdata) noexcept {
	auto* d = static_cast<IoData*>(userdata);
	EventLoop::DispatchScope scope(d->loop);
	try {
		d->onReady(revents);
	} catch (const std::exception& e) {
		log::error("loop", "handler of {} failed: {}", d->description, e.what());
	}
	return 0;
}

int onPrepare(sd_event_source* source, void*) noexcept {
	auto* d = static_cast<IoData*>(sd_event_source_get_userdata(source));
	try {
		if (d->onPrepare) d->onPrepare();
	} catch (const std::exception& e) {
		log::error("loop", "prepare hook of {} failed: {}", d->description, e.what());
	}
	return 0;
}

int onPlain(void* userdata) noexcept {
	auto* d = static_cast<PlainData*>(userdata);
	EventLoop::DispatchScope scope(d->loop);
	try {
		d->handler();
	} catch (const std::exception& e) {
		log::error("loop", "handler of {} failed: {}", d->description, e.what());
	}
	return 0;
}

int onTime(sd_event_source*, uint64_t, void* userdata) noexcept { return onPlain(userdata); }
int onSimple(sd_event_source*, void* userdata) noexcept { return onPlain(userdata); }
int onSig(sd_event_source*, const struct signalfd_siginfo*, void* userdata) noexcept { return onPlain(userdata); }

void check(int r, const char* what) {
	if (r < 0) throw std::system_error(-r, std::generic_category(), what);
}

} // namespace

EventSource& EventSource::operator=(EventSource&& other) noexcept {
	if (this != &other) {
		reset();
		source_ = other.source_;
		other.source_ = nullptr;
	}
	return *this;
}

EventSource::~EventSource() { reset(); }

void EventSource::reset() {
	if (source_) {
		sd_event_source_disable_unref(source_);
		source_ = nullptr;
	}
}

void EventSource::setEnabled(int mode) {
	if (source_) sd_event_source_set_enabled(source_, mode);
}

bool EventSource::enabled() const {
	return source_ && sd_event_source_get_enabled(source_, nullptr) > 0;
}

void EventSource::setIoEvents(uint32_t events) {
	if (source_) sd_event_source_set_io_events(source_, events);
}

void EventSource::setTime(uint64_t usec) {
	if (!source_) return;
	sd_event_source_set_time(source_, usec);
	sd_event_source_set_enabled(source_, SD_EVENT_ONESHOT);
}

EventLoop::DispatchScope::~DispatchScope() {
	// The handler's data may be gone (a source that destroyed itself); the loop is not.
	if (--loop_->dispatching_ > 0) return;
	// By id: a hook may remove another (or itself).
	for (auto it = loop_->afterDispatch_.begin(); it != loop_->afterDispatch_.end();) {
		uint64_t id = it->first;
		try {
			it->second();
		} catch (const std::exception& e) {
			log::error("loop", "after-dispatch hook failed: {}", e.what());
		}
		it = loop_->afterDispatch_.upper_bound(id);
	}
}

EventLoop::EventLoop() { check(sd_event_new(&event_), "sd_event_new"); }

EventLoop::~EventLoop() {
	owned_.clear();
	sd_event_unref(event_);
}

uint64_t EventLoop::clock() {
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000u + uint64_t(ts.tv_nsec) / 1000u;
}

uint64_t EventLoop::now() const {
	uint64_t t = 0;
	sd_event_now(event_, CLOCK_MONOTONIC, &t);
	return t;
}

std::chrono::system_clock::time_point EventLoop::wallNow() const {
	uint64_t t = 0;
	sd_event_now(event_, CLOCK_REALTIME, &t);
	return std::chrono::system_clock::time_point(
	    std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::microseconds(t)));
}

EventSource EventLoop::addIo(int fd, uint32_t events, IoHandler onReady, const char* description, Handler prepare) {
	auto* data = new IoData{this, std::move(onReady), std::move(prepare), description};
	sd_event_source* s = nullptr;
	int r = sd_event_add_io(event_, &s, fd, events, onIo, data);
	if (r < 0) {
		delete data;
		check(r, description);
	}
	sd_event_source_set_destroy_callback(s, destroyData<IoData>);
	sd_event_source_set_description(s, description);
	if (data->onPrepare) sd_event_source_set_prepare(s, qsd::onPrepare);
	return EventSource(s);
}

// Adds a source whose userdata is a heap PlainData freed with the source; `add` is one of the
// sd_event_add_* calls, bound to everything but the source pointer and the userdata.
template <typename Add>
static sd_event_source* addPlain(EventLoop* loop, Add add, EventLoop::Handler handler, const char* description) {
	auto* data = new PlainData{loop, std::move(handler), description};
	sd_event_source* s = nullptr;
	int r = add(&s, data);
	if (r < 0) {
		delete data;
		check(r, description);
	}
	sd_event_source_set_destroy_callback(s, destroyData<PlainData>);
	sd_event_source_set_description(s, description);
	return s;
}

// Timers use an accuracy of 1 µs: 0 would select sd-event's default of 250 ms.
EventSource EventLoop::addTimer(std::chrono::microseconds delay, Handler onExpire, const char* description) {
	return EventSource(addPlain(this, [&](sd_event_source** s, void* d) {
		return sd_event_add_time_relative(event_, s, CLOCK_MONOTONIC, uint64_t(delay.count()), 1, onTime, d);
	}, std::move(onExpire), description));
}

EventSource EventLoop::addIdleTimer(Handler onExpire, const char* description) {
	auto* s = addPlain(this, [&](sd_event_source** src, void* d) {
		return sd_event_add_time(event_, src, CLOCK_MONOTONIC, UINT64_MAX, 1, onTime, d);
	}, std::move(onExpire), description);
	sd_event_source_set_enabled(s, SD_EVENT_OFF);
	return EventSource(s);
}

EventSource EventLoop::addDefer(Handler handler, const char* description) {
	auto* s = addPlain(this, [&](sd_event_source** src, void* d) { return sd_event_add_defer(event_, src, onSimple, d); },
	                   std::move(handler), description);
	sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	return EventSource(s);
}

EventSource EventLoop::addPost(Handler handler, const char* description) {
	return EventSource(addPlain(this, [&](sd_event_source** s, void* d) { return sd_event_add_post(event_, s, onSimple, d); },
	                            std::move(handler), description));
}

// A CLOCK_REALTIME timerfd armed for the end of time with TFD_TIMER_CANCEL_ON_SET never expires;
// whenever the offset between CLOCK_REALTIME and CLOCK_MONOTONIC changes, the kernel cancels it:
// it polls readable and read() fails with ECANCELED, once per change, and it stays cancelable for
// the next one. sd-event has the same source (sd_event_add_time_change), but not in the
// libsystemd Debian 12 ships.
EventSource EventLoop::addClockChange(Handler onChange, const char* description) {
	int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0) throw std::system_error(errno, std::generic_category(), "timerfd_create");
	EventSource source;
	try {
		itimerspec never{};
		never.it_value.tv_sec = std::numeric_limits<time_t>::max();
		if (timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &never, nullptr) < 0)
			throw std::system_error(errno, std::generic_category(), "timerfd_settime");
		source = addIo(fd, EPOLLIN, [fd, onChange = std::move(onChange)](uint32_t) {
			uint64_t expirations = 0;
			if (read(fd, &expirations, sizeof expirations) < 0 && errno == ECANCELED) onChange();
		}, description);
	} catch (...) {
		close(fd);
		throw;
	}
	sd_event_source_set_io_fd_own(source.get(), 1);
	return source;
}

void EventLoop::onSignal(int signo, Handler handler) {
	// sd-event takes one source per signal (a second one is EBUSY): one source fans out.
	auto& handlers = signalHandlers_[signo];
	handlers.push_back(std::move(handler));
	if (handlers.size() > 1) return;
	auto fanOut = [this, signo] {
		// By index and by copy: a handler may add another handler for the same signal.
		for (size_t i = 0; i < signalHandlers_[signo].size(); ++i) {
			auto h = signalHandlers_[signo][i];
			try {
				h();
			} catch (const std::exception& e) {
				log::error("loop", "handler of signal {} failed: {}", signo, e.what());
			}
		}
	};
	sd_event_source* source = nullptr;
	try {
		source = addPlain(this, [&](sd_event_source** s, void* d) {
			return sd_event_add_signal(event_, s, signo | SD_EVENT_SIGNAL_PROCMASK, onSig, d);
		}, std::move(fanOut), "signal");
	} catch (...) {
		signalHandlers_.erase(signo);
		throw;
	}
	owned_.emplace_back(source);
}

void EventLoop::enableWatchdog() { (void)sd_event_set_watchdog(event_, true); }

int EventLoop::run() { return sd_event_loop(event_); }

void EventLoop::exit(int code) { sd_event_exit(event_, code); }

} // namespace qsd
