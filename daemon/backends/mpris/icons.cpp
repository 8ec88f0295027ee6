#include "icons.hpp"

#include "mapping.hpp"

#ifdef QSD_TRAY_BACKEND
#include "../tray/icon_theme.hpp"
#include "../tray/mapping.hpp"
#endif

#include "../../files.hpp"

#include <cstdlib>

namespace qsd::mpris {

namespace {

constexpr size_t kMaxCached = 64;
constexpr int kIconSize = 64;

std::string env(const char* name) {
	const char* v = std::getenv(name);
	return v ? v : "";
}

} // namespace

std::vector<std::string> applicationDirs() {
	std::vector<std::string> dirs;
	auto dataHome = env("XDG_DATA_HOME");
	if (dataHome.empty() && !env("HOME").empty()) dataHome = env("HOME") + "/.local/share";
	if (!dataHome.empty()) dirs.push_back(dataHome + "/applications");
	auto dataDirs = env("XDG_DATA_DIRS");
	if (dataDirs.empty()) dataDirs = "/usr/local/share:/usr/share";
	size_t start = 0;
	while (start <= dataDirs.size()) {
		auto end = dataDirs.find(':', start);
		if (end == std::string::npos) end = dataDirs.size();
		if (end > start) dirs.push_back(dataDirs.substr(start, end - start) + "/applications");
		start = end + 1;
	}
	return dirs;
}

std::optional<std::string> desktopEntryIcon(const std::string& entry, const std::vector<std::string>& dirs) {
	if (!validDesktopEntry(entry)) return std::nullopt;
	for (const auto& dir: dirs) {
		// Opened without blocking, and only read when it is a regular file of bounded size: a FIFO
		// planted under that name must not stall the loop.
		auto text = readFile(dir + "/" + entry + ".desktop", kMaxDesktopFile);
		if (!text) continue;
		// The first file found is the entry (the specification's precedence), icon or not.
		return desktopIcon(*text);
	}
	return std::nullopt;
}

#ifdef QSD_TRAY_BACKEND
struct IconLookup::Theme {
	tray::IconTheme theme{tray::IconTheme::fromEnvironment(kIconSize)};
};
#else
struct IconLookup::Theme {};
#endif

IconLookup::IconLookup(): theme_(std::make_unique<Theme>()), dirs_(applicationDirs()) {}
IconLookup::~IconLookup() = default;

std::optional<std::string> IconLookup::iconUrl(const std::string& name) {
#ifdef QSD_TRAY_BACKEND
	auto file = theme_->theme.lookup(name);
	if (file.empty()) return std::nullopt;
	return tray::fileUrl(file);
#else
	// Built without the tray, qsd has no icon theme lookup: iconUrl stays null.
	(void)name;
	return std::nullopt;
#endif
}

std::optional<std::string> IconLookup::forDesktopEntry(const std::string& entry) {
	if (!validDesktopEntry(entry)) return std::nullopt;
#ifdef QSD_TRAY_BACKEND
	// The theme's inotify queue is drained here, when a player needs an icon, rather than by an
	// io source: players come and go seldom, and an icon installed since the last lookup (or a
	// theme changed) then drops the answers cached before it.
	if (theme_->theme.readEvents()) cache_.clear();
#endif
	if (auto it = cache_.find(entry); it != cache_.end()) return it->second;
	std::optional<std::string> url;
	if (auto icon = desktopEntryIcon(entry, dirs_)) url = iconUrl(*icon);
	if (cache_.size() >= kMaxCached) cache_.clear();
	cache_.emplace(entry, url);
	return url;
}

} // namespace qsd::mpris
