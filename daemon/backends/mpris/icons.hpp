#pragma once
// A player's iconUrl: its DesktopEntry's .desktop file, found in the XDG data directories, and
// that file's Icon= looked up in the icon theme. DesktopEntry is the player's word, so it is
// only ever used as one file name (mapping.hpp validDesktopEntry), and the file is opened
// without blocking and read only when it is a regular file of bounded size.

#include "../../icons/shared_theme.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qsd::mpris {

// The applications directories, in order: $XDG_DATA_HOME/applications (~/.local/share), then
// each of $XDG_DATA_DIRS (/usr/local/share:/usr/share).
[[nodiscard]] std::vector<std::string> applicationDirs();

// The Icon= of <entry>.desktop in the first of `dirs` that has it; nullopt when the entry is not
// a valid file name, no directory has the file, or it has no icon.
[[nodiscard]] std::optional<std::string> desktopEntryIcon(const std::string& entry, const std::vector<std::string>& dirs);

class IconLookup {
public:
	explicit IconLookup(icons::SharedTheme& theme);
	~IconLookup();
	IconLookup(const IconLookup&) = delete;
	IconLookup& operator=(const IconLookup&) = delete;

	// The file:// URL of the icon of desktop entry `entry`, or nullopt. Cached per entry.
	[[nodiscard]] std::optional<std::string> forDesktopEntry(const std::string& entry);

private:
	icons::SharedTheme& theme_;
	uint64_t generation_ = 0;   // the themes' generation the cache was filled with
	std::vector<std::string> dirs_;
	std::map<std::string, std::optional<std::string>> cache_;
};

} // namespace qsd::mpris
