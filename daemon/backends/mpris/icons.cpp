#include "icons.hpp"

#include "mapping.hpp"

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

IconLookup::IconLookup(icons::SharedTheme& theme): theme_(theme), dirs_(applicationDirs()) {}
IconLookup::~IconLookup() = default;

std::optional<std::string> IconLookup::forDesktopEntry(const std::string& entry) {
	if (!validDesktopEntry(entry)) return std::nullopt;
	// The answers cached before the installed themes changed (an icon installed since, a theme
	// removed) are dropped; theme() first takes in what inotify reported.
	auto& theme = theme_.theme();
	if (generation_ != theme_.generation()) {
		cache_.clear();
		generation_ = theme_.generation();
	}
	if (auto it = cache_.find(entry); it != cache_.end()) return it->second;
	std::optional<std::string> url;
	// Icon= names a theme icon, or a file (an absolute path, taken when it is a regular file).
	if (auto icon = desktopEntryIcon(entry, dirs_))
		if (auto file = theme.lookup(*icon, kIconSize); !file.empty()) url = fileUrl(file);
	if (cache_.size() >= kMaxCached) cache_.clear();
	cache_.emplace(entry, url);
	return url;
}

} // namespace qsd::mpris
