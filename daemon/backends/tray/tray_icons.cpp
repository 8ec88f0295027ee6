// The tray's icon machinery: the icon theme (with inotify on the installed themes, so an icon
// installed while qsd runs shows up and a "not found" is not kept for good), the store of icon
// files qsd writes, and the resolver that turns an item's icon properties into URLs.

#include "tray_backend.hpp"

#include "../../log.hpp"

#include <sys/epoll.h>

namespace qsd::tray {

namespace {
// A package installing icons writes hundreds of files in a burst: the items' icons are resolved
// again once the burst had this long to settle, not once per file.
constexpr uint64_t kRescanDelayUs = 500'000;
} // namespace

void TrayBackend::setupIcons() {
	std::string source;
	auto options = IconTheme::fromEnvironment(kDefaultIconSize);
	// An item's own icon trees are compared with their directories once per loop iteration: a
	// menu of a thousand entries costs one check, not a thousand.
	options.pass = [this] {
		uint64_t iteration = 0;
		sd_event_get_iteration(context_.loop.raw(), &iteration);
		return iteration;
	};
	theme_ = std::make_unique<IconTheme>(options);
	IconTheme::currentTheme(&source);
	log::info("tray", "icon theme {} (from {}), searched as {}", options.theme, source, fmt::join(theme_->chain(), " > "));
	store_ = std::make_unique<IconStore>(IconStore::defaultDir(), IconStore::Limits{}, IconStore::Sharing::Instances);
	resolver_ = std::make_unique<IconResolver>(*theme_, *store_);
	if (theme_->watchFd() >= 0)
		themeWatch_ = context_.loop.addIo(theme_->watchFd(), EPOLLIN, [this](uint32_t) {
			if (theme_ && theme_->readEvents()) themesChanged();
		}, "tray-icon-themes");
	themeRescan_ = context_.loop.addIdleTimer([this] {
		// Every item's icon and menu icons are resolved again; only what changed is written.
		for (auto& [key, item]: items_) {
			item.iconsDirty = true;
			item.menuDirty = true;
			queuePublish(item);
		}
	}, "tray-icon-rescan");
}

void TrayBackend::dropIcons() {
	themeRescan_.reset();
	themeWatch_.reset();
	resolver_.reset();
	store_.reset();
	theme_.reset();
}

void TrayBackend::themesChanged() {
	// The theme's indexes are already dropped (lookups from now on see the change); the items
	// are resolved again when the burst is over.
	if (sd_event_source_get_enabled(themeRescan_.get(), nullptr) > 0) return;
	log::debug("tray", "the icon themes changed: resolving the items' icons again");
	themeRescan_.setTime(context_.loop.now() + kRescanDelayUs);
}

} // namespace qsd::tray
