#pragma once
// Reading item properties out of D-Bus messages, pixmaps fast.
//
// sdbus-c++ 1.2 deserializes an `ay` byte by byte (about 20 ns a byte here): a 64 px pixmap takes
// over 300 µs and an app that sends 16..256 px takes milliseconds, on every read. Here the
// pixmap properties (a(iiay)) are read with sd-bus's own sd_bus_message_read_array, a memcpy,
// and kept decoded; ToolTip is kept without its pixmaps (never shown); every other property is
// an sdbus::Variant as usual.

#include "mapping.hpp"

#include <sdbus-c++/sdbus-c++.h>

#include <string>
#include <vector>

namespace qsd::tray {

// Drops property `name` (from `props`, or from `pixmaps` for a pixmap property).
void forgetProperty(const std::string& name, dbus::Properties& props, ItemPixmaps& pixmaps);

// The a{sv} at the message's position (GetAll's reply): pixmap properties into `pixmaps`
// (removed from `props`), ToolTip without pixmaps, the rest as variants into `props`. A value of
// an unexpected type stays a variant in `props`, for the mapping to report. Throws sdbus::Error on
// a malformed message.
void readProperties(sdbus::Message& msg, dbus::Properties& props, ItemPixmaps& pixmaps);

// One property's value (the variant of a Get reply) at the message's position, stored the same way.
void readProperty(sdbus::Message& msg, const std::string& name, dbus::Properties& props, ItemPixmaps& pixmaps);

} // namespace qsd::tray
