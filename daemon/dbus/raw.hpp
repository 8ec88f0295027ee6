#pragma once
// The sd_bus_message under an sdbus::Message, for reading a message with sd-bus itself where
// sdbus-c++ 1.2 is slow or throws on a peer's garbage: byte arrays in bulk
// (sd_bus_message_read_array is a memcpy; sdbus-c++ reads an `ay` byte by byte), a variant's
// type looked at before it is read (sd_bus_message_peek_type), a value skipped unread
// (sd_bus_message_skip). The message keeps its read position between the two APIs.

#include <sdbus-c++/Error.h>
#include <sdbus-c++/Message.h>
#include <systemd/sd-bus.h>

#include <cstring>
#include <string>

namespace qsd::dbus {

namespace detail {
// `&RawAccess::msg_` names Message's protected member through a derived class, which forms a
// pointer to Message's member; applying it to any Message is well-formed. (sdbus-c++ 1.2 has no
// accessor for it.)
struct RawAccess: sdbus::Message {
	static sd_bus_message* of(const sdbus::Message& m) { return static_cast<sd_bus_message*>(m.*(&RawAccess::msg_)); }
};
} // namespace detail

[[nodiscard]] inline sd_bus_message* rawMessage(const sdbus::Message& message) { return detail::RawAccess::of(message); }

// A new message that belongs to no bus, to write values into and read them back (seal() and
// rewind(true) first): how an sdbus::Variant is decoded into a dbus::Value.
[[nodiscard]] sdbus::PlainMessage plainMessage();

// Throws sdbus::Error (InvalidArgs, "<what>: <errno text>") when an sd-bus read returned an error.
inline int checkRead(int r, const char* what) {
	if (r < 0)
		throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", std::string("malformed message: ") + what + ": " + std::strerror(-r));
	return r;
}

} // namespace qsd::dbus
