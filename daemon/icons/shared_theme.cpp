#include "shared_theme.hpp"

#include "../files.hpp"
#include "../log.hpp"

#include <fmt/format.h>

#include <sys/epoll.h>

namespace qsd::icons {

SharedTheme::SharedTheme(EventLoop& loop): loop_(loop) {}

SharedTheme::~SharedTheme() = default;

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
	std::string source;
	auto options = IconTheme::fromEnvironment(&source);
	// An item's own icon trees are compared with their directories once per loop iteration: a
	// menu of a thousand entries costs one check, not a thousand.
	options.pass = [this] { return iteration(loop_); };
	theme_ = std::make_unique<IconTheme>(options);
	logChain(source);
	if (theme_->watchFd() >= 0)
		watch_ = loop_.addIo(theme_->watchFd(), EPOLLIN, [this](uint32_t) { readEvents(); }, "icon-themes");
	watchSettings();
	drained_ = iteration(loop_);
	return *theme_;
}

void SharedTheme::logChain(const std::string& source) {
	log::info("icons", "icon theme {} (from {}), searched as {}", theme_->options().theme, source, fmt::join(theme_->chain(), " > "));
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
	settings_ = IconTheme::settingsFiles();   // empty: $QSD_ICON_THEME decides
	for (const auto& [dir, _]: settings_) watchSettingsDir(dir);
}

void SharedTheme::watchSettingsDir(const std::string& dir) {
	// A directory that does not exist (gtk-4.0, often) is found from its parent, which is
	// $XDG_CONFIG_HOME, watched for kdeglobals. One made again gets a new watch.
	settingsDirs_.erase(dir);
	auto w = std::make_unique<SettingsDir>(SettingsDir{this, dir, {}});
	sd_event_source* s = nullptr;
	int r = sd_event_add_inotify(loop_.raw(), &s, dir.c_str(),
	                             IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ONLYDIR,
	                             &SharedTheme::onSettingsEvent, w.get());
	if (r < 0) return;
	sd_event_source_set_description(s, "icon-theme-settings");
	w->source = EventSource(s);
	settingsDirs_.emplace(dir, std::move(w));
}

int SharedTheme::onSettingsEvent(sd_event_source*, const inotify_event* event, void* userdata) noexcept {
	auto* w = static_cast<SettingsDir*>(userdata);
	try {
		// Copies: the handler may replace this directory's watch.
		auto* owner = w->owner;
		std::string dir = w->dir;
		owner->settingsEvent(dir, *event);
	} catch (const std::exception& e) {
		log::error("icons", "icon theme settings: {}", e.what());
	}
	return 0;
}

void SharedTheme::settingsEvent(const std::string& dir, const inotify_event& e) {
	bool relevant = (e.mask & IN_Q_OVERFLOW) != 0;
	if (e.len) {
		std::string path = dir + "/" + e.name;
		for (const auto& [d, file]: settings_) {
			if (d == dir && file == e.name) relevant = true;
			// gtk-3.0 made (or moved) into $XDG_CONFIG_HOME: watched from now on, and its
			// settings.ini may already be there.
			if (d == path && (e.mask & (IN_CREATE | IN_MOVED_TO)) && (e.mask & IN_ISDIR)) {
				watchSettingsDir(d);
				relevant = true;
			}
		}
	}
	if (!relevant || !theme_) return;
	std::string source;
	auto theme = IconTheme::currentTheme(&source);
	if (theme == theme_->options().theme) return;
	theme_->setTheme(theme);
	logChain(source);
	notify();
}

} // namespace qsd::icons
