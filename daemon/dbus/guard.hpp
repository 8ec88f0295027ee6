#pragma once
// sd-bus runs sdbus-c++'s callbacks (signal matches, async replies, exported methods) from its C
// code, and sdbus-c++ 1.2 catches nothing around them but an exported method's sdbus::Error. An
// exception that leaves one unwinds through sd-bus and leaves the connection in the middle of a
// dispatch: every sd_bus_process after it fails with EBUSY, and every backend on that bus stops,
// silently, with a core busy. So every callback qsd gives sdbus-c++ catches what it may throw:
// the backends' matches (BusBackend), CallSet's replies and NameTracker's handlers do it in
// place; the kit's other replies and the methods qsd exports use these.

#include "../log.hpp"

#include <sdbus-c++/Error.h>
#include <sdbus-c++/Message.h>

#include <exception>
#include <utility>

namespace qsd::dbus {

// Runs f. An exception is a defect in qsd, not a peer's doing: logged, and it goes no further.
template <class F>
void guarded(const char* what, F&& f) noexcept {
	try {
		std::forward<F>(f)();
	} catch (const std::exception& e) {
		log::error("dbus", "{} failed: {}", what, e.what());
	} catch (...) {
		log::error("dbus", "{} failed", what);
	}
}

// The handler of a method qsd exports: self->*handler. sdbus-c++ turns an sdbus::Error it throws
// into the error reply; any other exception becomes the error reply `errorName` too, logged under
// `area`.
template <class T>
auto exportedMethod(const char* area, T* self, void (T::*handler)(sdbus::MethodCall),
                    const char* errorName = "org.freedesktop.DBus.Error.Failed") {
	return [area, self, handler, errorName](sdbus::MethodCall call) {
		try {
			(self->*handler)(call);   // a copy is a reference to the same message, kept for the log line
		} catch (const sdbus::Error&) {
			throw;
		} catch (const std::exception& e) {
			log::error(area, "answering {} failed: {}", call.getMemberName(), e.what());
			throw sdbus::Error(errorName, e.what());
		}
	};
}

} // namespace qsd::dbus
