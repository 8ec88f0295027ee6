#pragma once
// A set of pending asynchronous D-Bus calls that belong to one owner, grouped by what they are
// for ("ppd", "up:/org/freedesktop/UPower/devices/battery_BAT0", "item:org.example.App/..."),
// so that a service or an object that goes away cancels exactly its own calls, and the owner's
// destruction cancels everything: a reply never reaches a destroyed owner.
//
// Built on AsyncCall. The one subtlety it hides: a reply handler must forget its own entry
// before anything else, without cancelling it. sdbus-c++ 1.2 keeps the handler in the call's
// slot data while it runs, so cancelling a call from inside its own handler (a handler that
// cancels its group, say) would destroy the handler in the middle of its execution. Every
// handler passed here is wrapped so that it forgets its entry first; it also catches what the
// handler throws, since an exception must not unwind through sd-bus.

#include "../backoff.hpp"
#include "bus.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace qsd::dbus {

// The peer did not answer in time (sd-bus's own timeout, or the bus daemon's).
[[nodiscard]] inline bool timedOut(const sdbus::Error& e) {
	return e.getName() == "org.freedesktop.DBus.Error.NoReply" || e.getName() == "org.freedesktop.DBus.Error.Timeout";
}

// The bus refused to pass the call on (dbus-daemon allows a connection 128 calls waiting for an
// answer): the peer never saw it, so its answer is still to come, as after a timeout.
[[nodiscard]] inline bool notPassedOn(const sdbus::Error& e) {
	return e.getName() == "org.freedesktop.DBus.Error.LimitsExceeded";
}

// A system service (UPower, power-profiles-daemon, NetworkManager, BlueZ) answers a read in
// milliseconds. One that has not answered in 5 s is busy, most often because the system is
// still starting: the read is made again (kAskAgain) rather than waited for the 25 s of sd-bus's
// default timeout.
inline constexpr std::chrono::seconds kBusyTimeout{5};
// A read that nothing else would bring again (a start-up read, a registration), after a
// timeout: asked again 1 s later, the delay doubling up to 30 s, for as long as the service
// keeps its name (its owner's departure cancels the Retry).
inline constexpr Backoff::Policy kAskAgain{std::chrono::seconds(1), std::chrono::seconds(30), 0};

class CallSet {
public:
	// `component` names the log category of the owner ("nm", "tray") for handler failures.
	explicit CallSet(std::string component = "dbus"): component_(std::move(component)) {}
	~CallSet() { cancelAll(); }
	CallSet(const CallSet&) = delete;
	CallSet& operator=(const CallSet&) = delete;

	// Sends the call an AsyncMethodInvoker describes and runs `handler` with its reply, unless
	// the call is cancelled first. The handler takes (const sdbus::Error*, results...) exactly as
	// sdbus-c++'s uponReplyInvoke does:
	//   calls_.start("ppd", proxy.callMethodAsync("GetAll").onInterface(kProps).withArguments(iface),
	//                [this](const sdbus::Error* e, dbus::Properties props) { ... });
	template <typename F>
	void start(std::string group, sdbus::AsyncMethodInvoker&& invoker, F&& handler) {
		uint64_t id = next_++;
		auto call = invoker.uponReplyInvoke(wrap(id, std::forward<F>(handler), &std::decay_t<F>::operator()));
		track(id, std::move(group), std::move(call));
	}
	template <typename F>
	void start(std::string group, sdbus::AsyncMethodInvoker& invoker, F&& handler) {
		start(std::move(group), std::move(invoker), std::forward<F>(handler));
	}

	// Raw form, for calls whose arguments or results are read from the message by hand.
	// `handler(reply, error)` gets the reply (nullptr on error) or the error.
	using RawHandler = std::function<void(sdbus::MethodReply* reply, const sdbus::Error* error)>;
	void start(std::string group, sdbus::IProxy& proxy, const sdbus::MethodCall& message, RawHandler handler,
	           std::chrono::microseconds timeout = std::chrono::microseconds(0));

	void cancel(std::string_view group);            // the calls of one group
	void cancelPrefix(std::string_view prefix);     // the groups that start with prefix
	void cancelAll();

	[[nodiscard]] size_t size() const { return calls_.size(); }
	[[nodiscard]] size_t count(std::string_view group) const;

private:
	struct Entry {
		std::string group;
		AsyncCall call;
	};

	void track(uint64_t id, std::string group, sdbus::PendingAsyncCall call);
	void forget(uint64_t id);
	void failed(const char* what) const;
	template <typename Pred>
	void cancelIf(Pred pred);

	// Builds a handler with the same parameter list as `f` (sdbus-c++ deduces the reply's
	// signature from it) that forgets entry `id` before it calls `f`. sdbus-c++ calls its
	// handler as const, so `f` must be too (a lambda that is not `mutable`).
	template <typename F, typename C, typename... A>
	auto wrap(uint64_t id, F&& f, void (C::*)(const sdbus::Error*, A...) const) {
		return wrapped<F, A...>(id, std::forward<F>(f));
	}
	template <typename F, typename... A>
	auto wrapped(uint64_t id, F&& f) {
		return [this, id, f = std::forward<F>(f)](const sdbus::Error* e, A... args) {
			forget(id);
			try {
				f(e, std::forward<A>(args)...);
			} catch (const sdbus::Error& x) {
				failed(x.getMessage().c_str());
			} catch (const std::exception& x) {
				failed(x.what());
			}
		};
	}

	std::string component_;
	uint64_t next_ = 1;
	std::map<uint64_t, Entry> calls_;
};

} // namespace qsd::dbus
