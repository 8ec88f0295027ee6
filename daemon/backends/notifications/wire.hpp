#pragma once
// Notify's arguments read straight from the message with sd-bus (dbus/raw.hpp). The hints are
// an a{sv} a sender fills as it likes: each known hint is read only when its variant holds the
// type the specification gives it (peeked first, so a wrong type is skipped, never thrown on),
// unknown hints are skipped unread, and image pixels are not copied here: a RawImage points into
// the message, which the caller keeps alive until it has decoded them.

#include "mapping.hpp"

#include <sdbus-c++/Message.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qsd::notifications {

struct Hints {
	std::optional<uint8_t> urgency;
	std::optional<std::string> category;
	std::optional<std::string> desktopEntry;
	std::optional<std::string> imagePath;            // image-path, else image_path
	std::optional<std::string> oldImagePath;         // image_path while it is read (then in imagePath)
	std::optional<bool> resident;
	std::optional<bool> transient;
	std::optional<bool> actionIcons;                 // action-icons: the action keys are icon names
	std::optional<std::string> replyPlaceholder;     // x-kde-reply-placeholder-text
	std::optional<int64_t> value;                    // value (i or u): a progress in percent
	std::optional<std::string> stackTag;             // x-dunst-stack-tag
	std::optional<std::string> synchronous;          // x-canonical-private-synchronous
	// Pixel hints in the order they are tried: image-data, image_data, icon_data; at most one of
	// each (a name sent more than once: its last value, as for every hint).
	std::vector<std::pair<std::string, RawImage>> images;
	// Known hints of the wrong type: (name, the signature sent), for the log.
	std::vector<std::pair<std::string, std::string>> wrongTypes;
};

struct NotifyArgs {
	std::string appName;
	uint32_t replacesId = 0;
	std::string appIcon;
	std::string summary;
	std::string body;
	std::vector<std::string> actions;   // at most 4 × kMaxActions elements
	size_t extraActions = 0;            // elements beyond those, not kept
	Hints hints;
	int32_t expireTimeout = -1;
};

// Reads Notify's arguments (susssasa{sv}i) from the start of the call. Strings are as sent (the
// bus guarantees valid UTF-8; the caller still sanitizes and cuts them). Throws sdbus::Error on a
// message sd-bus cannot read.
[[nodiscard]] NotifyArgs readNotify(sdbus::Message& call);

// What the text of a Notify call becomes in the tree: every string valid UTF-8 and within its
// bound (docs/backends/notifications.md, "Bounds"). Pure; defined in mapping.cpp.
struct NotifyText {
	std::string appName;
	std::string summary;
	std::string body;       // the markup as sent, made valid and cut
	std::string bodyText;   // the same without markup
	std::vector<Action> actions;
	std::optional<std::string> category;
	std::optional<std::string> desktopEntry;
	std::optional<std::string> replyPlaceholder;
	// x-dunst-stack-tag, else x-canonical-private-synchronous, cut as the names are.
	std::optional<std::string> stackTag;
	std::optional<int> value;   // the value hint clamped to 0..100
	bool cutSummary = false;
	bool cutBody = false;
	size_t droppedActions = 0;   // elements of the actions array not kept (extraActions included)
};
[[nodiscard]] NotifyText mapText(const NotifyArgs& args);
// The stack tag as NotifyText has it, and the app name as it is shown: a notification with the
// same two as one that is shown replaces it (docs/backends/notifications.md, "Stack tags").
// nullopt without a tag. Pure; defined in mapping.cpp.
[[nodiscard]] std::optional<std::pair<std::string, std::string>> stackKey(const NotifyArgs& args);

} // namespace qsd::notifications
