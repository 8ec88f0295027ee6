#pragma once
// A thin RAII owner of sd_event. Every source is a move-only EventSource; destroying it disables
// and unrefs the source, so a callback never outlives whoever owns the EventSource.

#include <systemd/sd-event.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace qsd {

class EventSource {
public:
	EventSource() = default;
	explicit EventSource(sd_event_source* source): source_(source) {}
	EventSource(EventSource&& other) noexcept: source_(other.source_) { other.source_ = nullptr; }
	EventSource& operator=(EventSource&& other) noexcept;
	~EventSource();
	EventSource(const EventSource&) = delete;
	EventSource& operator=(const EventSource&) = delete;

	void setEnabled(int mode);                 // SD_EVENT_ON / SD_EVENT_OFF / SD_EVENT_ONESHOT
	void setIoEvents(uint32_t events);
	void setTime(uint64_t usecMonotonic);      // absolute CLOCK_MONOTONIC; arms ONESHOT
	void reset();
	// Whether the source will dispatch (ON or ONESHOT). A ONESHOT source is turned off before its
	// handler runs, so a timer's own handler sees it disarmed. False for an empty source.
	[[nodiscard]] bool enabled() const;
	[[nodiscard]] sd_event_source* get() const { return source_; }
	explicit operator bool() const { return source_ != nullptr; }

private:
	sd_event_source* source_ = nullptr;
};

class EventLoop {
public:
	using IoHandler = std::function<void(uint32_t revents)>;
	using Handler = std::function<void()>;

	EventLoop();                               // throws std::system_error (startup only)
	~EventLoop();
	EventLoop(const EventLoop&) = delete;
	EventLoop& operator=(const EventLoop&) = delete;

	[[nodiscard]] sd_event* raw() const { return event_; }
	[[nodiscard]] uint64_t now() const;        // CLOCK_MONOTONIC, µs
	// The wall clock (CLOCK_REALTIME) at the same wake-up as now(): sd-event reads both clocks
	// together when the loop wakes, so a wall-clock time published beside a monotonic one (a
	// player's positionAt beside its position) names the same instant, however long the
	// iteration has run since.
	[[nodiscard]] std::chrono::system_clock::time_point wallNow() const;
	// The clock of the loop's timers (CLOCK_MONOTONIC, µs) read afresh, not the time the current
	// iteration woke up at as now() gives it.
	[[nodiscard]] static uint64_t clock();

	// onPrepare runs before every poll (flush-before-sleep hooks).
	[[nodiscard]] EventSource addIo(int fd, uint32_t events, IoHandler onReady, const char* description,
	                                Handler onPrepare = {});
	// Fires once after `delay`; re-arm with EventSource::setTime.
	[[nodiscard]] EventSource addTimer(std::chrono::microseconds delay, Handler onExpire, const char* description);
	// Disabled timer: arm with setTime().
	[[nodiscard]] EventSource addIdleTimer(Handler onExpire, const char* description);
	// Runs on the next iteration, once (then disabled; re-enable with setEnabled(SD_EVENT_ONESHOT)).
	[[nodiscard]] EventSource addDefer(Handler handler, const char* description);
	// Runs after every iteration that dispatched another source (the "dirty flush" idiom).
	[[nodiscard]] EventSource addPost(Handler handler, const char* description);
	// Runs each time the wall clock (CLOCK_REALTIME) is set relative to CLOCK_MONOTONIC: by
	// settimeofday or an NTP step, and on resume from suspend, during which CLOCK_MONOTONIC stood
	// still. What qsd publishes as a wall-clock time computed from a monotonic one (a position's
	// positionAt, a notification's expiresAt) is stamped again here. Throws std::system_error.
	[[nodiscard]] EventSource addClockChange(Handler onChange, const char* description);
	// Runs `hook` right after each handler of a source added here returns (the same idiom
	// without sd-event's post sources, which cost one more loop iteration: a prepare pass over
	// every source and another epoll_wait between an event and its effect), until the returned
	// handle is destroyed. Sources added straight to raw() do not run it: see inDispatch().
	class AfterDispatch {
	public:
		AfterDispatch() = default;
		AfterDispatch(EventLoop* loop, uint64_t id): loop_(loop), id_(id) {}
		AfterDispatch(AfterDispatch&& o) noexcept: loop_(std::exchange(o.loop_, nullptr)), id_(o.id_) {}
		AfterDispatch& operator=(AfterDispatch&& o) noexcept {
			if (this != &o) {
				reset();
				loop_ = std::exchange(o.loop_, nullptr);
				id_ = o.id_;
			}
			return *this;
		}
		~AfterDispatch() { reset(); }
		void reset() {
			if (loop_) loop_->afterDispatch_.erase(id_);
			loop_ = nullptr;
		}

	private:
		EventLoop* loop_ = nullptr;
		uint64_t id_ = 0;
	};
	[[nodiscard]] AfterDispatch afterDispatch(Handler hook) {
		afterDispatch_.emplace(++afterDispatchId_, std::move(hook));
		return AfterDispatch(this, afterDispatchId_);
	}
	// Whether a handler of a source added here is running, i.e. the after-dispatch hook will
	// run once it returns.
	[[nodiscard]] bool inDispatch() const { return dispatching_ > 0; }
	// SD_EVENT_SIGNAL_PROCMASK; the source is owned by the loop. A signal may have several
	// handlers (the daemon's and backends'): they run in the order they were added.
	void onSignal(int signo, Handler handler);

	void enableWatchdog();                     // no-op without $WATCHDOG_USEC
	int run();
	void exit(int code);

	// For the sources' trampolines.
	struct DispatchScope {
		explicit DispatchScope(EventLoop* loop): loop_(loop) { ++loop_->dispatching_; }
		~DispatchScope();
		DispatchScope(const DispatchScope&) = delete;
		DispatchScope& operator=(const DispatchScope&) = delete;
		EventLoop* loop_;
	};

private:
	sd_event* event_ = nullptr;
	std::map<uint64_t, Handler> afterDispatch_;
	uint64_t afterDispatchId_ = 0;
	int dispatching_ = 0;
	std::vector<EventSource> owned_;
	std::map<int, std::vector<Handler>> signalHandlers_;
};

} // namespace qsd
