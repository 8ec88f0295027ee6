// The tray's icon machinery: the daemon's icon theme (it follows the installed themes with
// inotify, so an icon installed while qsd runs shows up and a "not found" is not kept for good),
// the store of icon files qsd writes, and the resolver that turns an item's icon properties into
// URLs.

#include "tray_backend.hpp"

#include "../../log.hpp"

namespace qsd::tray {

namespace {
// A package installing icons writes hundreds of files in a burst: the items' icons are resolved
// again once the burst had this long to settle, not once per file.
constexpr uint64_t kRescanDelayUs = 500'000;
} // namespace

void TrayBackend::setupIcons() {
	theme_ = &context_.icons->theme();
	store_ = std::make_unique<IconStore>(IconStore::defaultDir(), IconStore::Limits{}, IconStore::Sharing::Instances);
	resolver_ = std::make_unique<IconResolver>(*theme_, *store_);
	themeChanges_ = context_.icons->onChange([this] { themesChanged(); });
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
	themeChanges_.reset();
	resolver_.reset();
	store_.reset();
	// The items' own icon trees (IconThemePath) are the tray's alone.
	if (theme_) theme_->forgetAll();
	theme_ = nullptr;
}

void TrayBackend::themesChanged() {
	// The theme's indexes are already dropped (lookups from now on see the change); the items
	// are resolved again when the burst is over.
	if (sd_event_source_get_enabled(themeRescan_.get(), nullptr) > 0) return;
	log::debug("tray", "the icon themes changed: resolving the items' icons again");
	themeRescan_.setTime(context_.loop.now() + kRescanDelayUs);
}

} // namespace qsd::tray
