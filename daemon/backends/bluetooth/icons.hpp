#pragma once
// A device's icon name (BlueZ's Icon: "audio-headset", "input-mouse") as a file:// URL of the
// user's icon theme. The one place the backend reaches the theme lookup it shares with the
// tray; without the tray compiled in there is no lookup and every URL is null.

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

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

} // namespace qsd::bluetooth
