#include "shared_theme.hpp"

#include "../files.hpp"
#include "../log.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace qsd::icons {

SharedTheme::SharedTheme(EventLoop& loop): loop_(loop) {}

SharedTheme::~SharedTheme() {
	settingsWatch_.reset();
	if (settingsFd_ >= 0) ::close(settingsFd_);
}

namespace {
uint64_t iteration(EventLoop& loop) {
	uint64_t n = 0;
	sd_event_get_iteration(loop.raw(), &n);
	return n;
}
} // namespace

IconTheme& SharedTheme::theme() {
	if (theme_) {
		// A file installed just before a player or a device appeared: its inotify event may
		// wait behind the D-Bus message in this iteration. One read() per iteration, not one per
		// lookup (a menu looks up a thousand names in one).
		if (auto now = iteration(loop_); now != drained_) {
			drained_ = now;
			readEvents();
		}
		return *theme_;
	}
	auto options = IconTheme::fromEnvironment();
	// An item's own icon trees are compared with their directories once per loop iteration: a
	// menu of a thousand entries costs one check, not a thousand.
	options.pass = [this] { return iteration(loop_); };
	theme_ = std::make_unique<IconTheme>(options);
	std::string source;
	IconTheme::currentTheme(&source);
	log::info("icons", "icon theme {} (from {}), searched as {}", options.theme, source, fmt::join(theme_->chain(), " > "));
	if (theme_->watchFd() >= 0)
		watch_ = loop_.addIo(theme_->watchFd(), EPOLLIN, [this](uint32_t) { readEvents(); }, "icon-themes");
	watchSettings();
	drained_ = iteration(loop_);
	return *theme_;
}

std::optional<std::string> SharedTheme::url(const std::string& name, int size) {
	if (name.empty() || name.front() == '/') return std::nullopt;
	auto file = theme().lookup(name, size);
	if (file.empty()) return std::nullopt;
	return fileUrl(file);
}

SharedTheme::Subscription SharedTheme::onChange(std::function<void()> changed) {
	auto s = std::make_shared<std::function<void()>>(std::move(changed));
	std::erase_if(subscribers_, [](const auto& w) { return w.expired(); });
	subscribers_.push_back(s);
	return s;
}

void SharedTheme::readEvents() {
	if (!theme_ || !theme_->readEvents()) return;
	log::debug("icons", "the icon themes changed");
	notify();
}

void SharedTheme::notify() {
	++generation_;
	// A copy: a subscriber may subscribe or let go of its handle while it is told.
	auto subscribers = subscribers_;
	for (const auto& w: subscribers)
		if (auto s = w.lock()) (*s)();
}

// ---------------------------------------------------------------------------------------------
// the user's choice of theme

void SharedTheme::watchSettings() {
	settings_ = IconTheme::settingsFiles();
	if (settings_.empty()) return;   // $QSD_ICON_THEME decides
	settingsFd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (settingsFd_ < 0) {
		log::warning("icons", "cannot watch the icon theme settings ({}): a theme chosen while qsd runs is used after a restart",
		             std::strerror(errno));
		return;
	}
	for (const auto& [dir, _]: settings_) watchSettingsDir(dir);
	settingsWatch_ = loop_.addIo(settingsFd_, EPOLLIN, [this](uint32_t) { readSettingsEvents(); }, "icon-theme-settings");
}

void SharedTheme::watchSettingsDir(const std::string& dir) {
	// A directory that does not exist (gtk-4.0, often) is watched for from its parent, which is
	// $XDG_CONFIG_HOME, watched for kdeglobals.
	int wd = ::inotify_add_watch(settingsFd_, dir.c_str(),
	                             IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ONLYDIR);
	if (wd >= 0) settingsDirs_[wd] = dir;
}

void SharedTheme::readSettingsEvents() {
	bool relevant = false;
	alignas(inotify_event) char buf[4096];
	for (;;) {
		ssize_t n = ::read(settingsFd_, buf, sizeof buf);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break;
		for (ssize_t at = 0; at < n;) {
			const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
			at += ssize_t(sizeof(inotify_event) + e->len);
			if (e->mask & IN_Q_OVERFLOW) {
				relevant = true;
				continue;
			}
			auto dir = settingsDirs_.find(e->wd);
			if (dir == settingsDirs_.end()) continue;
			if (e->mask & IN_IGNORED) {   // the directory went; its parent sees it come back
				settingsDirs_.erase(dir);
				continue;
			}
			if (!e->len) continue;
			std::string path = dir->second + "/" + e->name;
			for (const auto& [d, file]: settings_) {
				if (d == dir->second && file == e->name) relevant = true;
				// gtk-3.0 made (or moved) into $XDG_CONFIG_HOME: watched from now on, and its
				// settings.ini may already be there.
				if (d == path && (e->mask & (IN_CREATE | IN_MOVED_TO)) && (e->mask & IN_ISDIR)) {
					watchSettingsDir(d);
					relevant = true;
				}
			}
		}
	}
	if (!relevant || !theme_) return;
	std::string source;
	auto theme = IconTheme::currentTheme(&source);
	if (theme == theme_->options().theme) return;
	theme_->setTheme(theme);
	log::info("icons", "icon theme {} (from {}), searched as {}", theme, source, fmt::join(theme_->chain(), " > "));
	notify();
}

} // namespace qsd::icons
