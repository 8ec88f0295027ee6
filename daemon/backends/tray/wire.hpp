#pragma once
// Reading item properties and DBusMenu layouts out of D-Bus messages, byte arrays fast.
//
// sdbus-c++ 1.2 deserializes an `ay` byte by byte (about 20 ns a byte here): a 64 px pixmap takes
// over 300 µs and an app that sends 16..256 px takes milliseconds, on every read. Here the
// pixmap properties (a(iiay)) are read with sd-bus's own sd_bus_message_read_array, and of each
// only the entry the icon is made of is kept (one memcpy); ToolTip is kept without its pixmaps
// (never shown); every other shown property is a dbus::Value, its text bounded
// (kMaxPropertyText); properties not shown are skipped. DBusMenu layouts are read the same way, straight into MenuNode trees: no
// sdbus::Variant per child (about a kilobyte each, holding a copy of its subtree), and icon-data
// (PNG bytes) read in bulk.

#include "mapping.hpp"

#include <sdbus-c++/sdbus-c++.h>

#include <string>
#include <string_view>
#include <vector>

namespace qsd::tray {

// A text property (s, o, g) as an item's cache keeps it: cut to kMaxPropertyText where a
// character starts (readValue keeps a Menu path that long as none instead).
[[nodiscard]] dbus::Value keptText(std::string_view text, char type = 's');

// Drops property `name` (from `props`, or from `pixmaps` for a pixmap property).
void forgetProperty(const std::string& name, dbus::Properties& props, ItemPixmaps& pixmaps);

// The a{sv} at the message's position (GetAll's reply): pixmap properties into `pixmaps`
// (removed from `props`; of each only the entry choosePixmap takes for a kDefaultIconSize
// icon), ToolTip without pixmaps, the other shown properties (kShownItemProperties) into
// `props`, the rest skipped. A value of an unexpected type stays in
// `props` for the mapping to report: a basic one as it came, a compound one as its signature
// (dbus::Value::unread). Returns the bytes of pixmap data the message held, kept or not (a
// large message leaves that much free heap behind). Throws sdbus::Error on a malformed message.
size_t readProperties(sdbus::Message& msg, dbus::Properties& props, ItemPixmaps& pixmaps);

// One property's value (the variant of a Get reply) at the message's position, stored the same
// way; returns the same.
size_t readProperty(sdbus::Message& msg, const std::string& name, dbus::Properties& props, ItemPixmaps& pixmaps);

// Where the entry a GetLayout asked for sits in its menu, so that the menu's bounds hold for the
// whole menu and not per reply: a submenu read again (LayoutUpdated(parent), AboutToShow) is
// spliced into the menu, and an item answering each with a few thousand entries once grew a menu
// to 164 001 entries, and chained submenus to 4 515 levels.
struct LayoutPlace {
	size_t depth = 0;     // the entry's depth (the root's is 0)
	size_t entries = 1;   // the menu's entries besides those the reply replaces (the entry's
	                      // descendants), the entry itself included
};

// GetLayout's reply (u revision, (ia{sv}av) layout), from its start: the layout. Children that
// are not (ia{sv}av), that would put the menu deeper than kMaxMenuDepth or beyond
// kMaxMenuEntries (counted from `place`) are skipped and counted in `skipped`. `rootProperties`
// tells whether the entry asked for came with any properties (Qt sends a submenu's own entry
// without them). Throws sdbus::Error on a malformed message.
[[nodiscard]] MenuNode readLayout(sdbus::Message& reply, size_t& skipped, bool* rootProperties = nullptr,
                                  LayoutPlace place = {});

// ItemsPropertiesUpdated (a(ia{sv}) updated, a(ias) removed), from its start, applied to the
// entries of the menu `index` covers (removed properties take their defaults): one hash probe
// per id, whatever the menu's size. True when an entry of the menu was named. Throws
// sdbus::Error on a malformed message, which then changes nothing.
bool readPropertiesUpdated(sdbus::Message& signal, const MenuIndex& index);

} // namespace qsd::tray
