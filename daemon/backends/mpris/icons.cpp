#include "icons.hpp"

#include "mapping.hpp"

#ifdef QSD_TRAY_BACKEND
#include "../tray/icon_theme.hpp"
#include "../tray/mapping.hpp"
#endif

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace qsd::mpris {

namespace {

constexpr size_t kMaxCached = 64;
constexpr int kIconSize = 64;

std::string env(const char* name) {
	const char* v = std::getenv(name);
	return v ? v : "";
}

// The file's text when it is a regular file of at most kMaxDesktopFile bytes. O_NONBLOCK: a FIFO
// planted under that name must not stall the loop; fstat then refuses it.
std::optional<std::string> readSmallFile(const std::string& path) {
	int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) return std::nullopt;
	std::optional<std::string> out;
	struct stat st{};
	if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 && size_t(st.st_size) <= kMaxDesktopFile) {
		std::string text(size_t(st.st_size), '\0');
		size_t got = 0;
		while (got < text.size()) {
			ssize_t n = ::read(fd, text.data() + got, text.size() - got);
			if (n < 0 && errno == EINTR) continue;
			if (n <= 0) break;
			got += size_t(n);
		}
		text.resize(got);
		out = std::move(text);
	}
	::close(fd);
	return out;
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
		auto text = readSmallFile(dir + "/" + entry + ".desktop");
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
	if (auto it = cache_.find(entry); it != cache_.end()) return it->second;
	std::optional<std::string> url;
	if (auto icon = desktopEntryIcon(entry, dirs_)) url = iconUrl(*icon);
	if (cache_.size() >= kMaxCached) cache_.clear();
	cache_.emplace(entry, url);
	return url;
}

} // namespace qsd::mpris
