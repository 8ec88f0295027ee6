#pragma once
// A device's icon name (BlueZ's Icon: "audio-headset", "input-mouse") as a file:// URL of the
// user's icon theme. The one place the backend reaches the theme lookup it shares with the
// tray (tray::IconTheme, an instance of its own at the size devices are drawn); without the
// tray compiled in there is no lookup and every URL is null.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace qsd::bluetooth {

class IconLookup {
public:
	IconLookup();
	~IconLookup();
	IconLookup(const IconLookup&) = delete;
	IconLookup& operator=(const IconLookup&) = delete;

	// The URL of the theme's file for `name`, std::nullopt when the theme has none.
	[[nodiscard]] std::optional<std::string> url(const std::string& name);

	// The installed themes are indexed until inotify reports a change under them: the caller
	// polls watchFd() (-1: nothing to poll) and calls readEvents(), true when the themes changed
	// (the answers of url() may then differ). version() changes with every such change.
	[[nodiscard]] int watchFd() const;
	bool readEvents();
	[[nodiscard]] uint64_t version() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

} // namespace qsd::bluetooth
