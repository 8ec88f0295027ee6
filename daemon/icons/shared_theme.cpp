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
	++generation_;
	log::debug("icons", "the icon themes changed");
	// A copy: a subscriber may subscribe or let go of its handle while it is told.
	auto subscribers = subscribers_;
	for (const auto& w: subscribers)
		if (auto s = w.lock()) (*s)();
}

} // namespace qsd::icons
