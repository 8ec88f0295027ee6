#pragma once
// A thin RAII owner of sd_event. Every source is a move-only EventSource; destroying it disables
// and unrefs the source, so a callback never outlives whoever owns the EventSource.

#include <systemd/sd-event.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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
	// SD_EVENT_SIGNAL_PROCMASK; the source is owned by the loop. A signal may have several
	// handlers (the daemon's and backends'): they run in the order they were added.
	void onSignal(int signo, Handler handler);

	void enableWatchdog();                     // no-op without $WATCHDOG_USEC
	int run();
	void exit(int code);

private:
	sd_event* event_ = nullptr;
	std::vector<EventSource> owned_;
	std::map<int, std::vector<Handler>> signalHandlers_;
};

} // namespace qsd
