#pragma once
// An item's icon fields from its icon sources: a theme file (the theme's own file, by URL) or a
// PNG written from the best-fitting pixmap, the attention variant while the item needs
// attention, and the overlay composed over it. The order is documented in docs/backends/tray.md.

#include "icon_store.hpp"
#include "mapping.hpp"
#include "pixmap.hpp"

#include "../../icons/icon_theme.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace qsd::tray {

using icons::IconTheme;

struct ResolvedIcon {
	nlohmann::json icon = nullptr;          // file:// URL or null
	nlohmann::json overlayIcon = nullptr;   // the overlay's URL when it could not be composed
	std::vector<IconRef> files;             // the stored files the URLs point to
};

// The theme files a menu's icon names resolved to, kept from one build of the menu to the next:
// a rebuild (ItemsPropertiesUpdated, LayoutUpdated) looks up only names it has not seen, as long
// as the theme's answers for the item's IconThemePath cannot have changed (IconTheme::version).
struct IconMemo {
	uint64_t version = 0;
	std::string themePath;
	std::unordered_map<std::string, std::string> files;   // icon name -> file ("" not found)
};

class IconResolver {
public:
	IconResolver(IconTheme& theme, IconStore& store): theme_(theme), store_(store) {}

	// `owner` (the item's key) is charged for the files written (IconStoreLimits).
	[[nodiscard]] ResolvedIcon resolve(const IconSources& sources, const std::string& owner = {});

	// A DBusMenu entry's icon: its icon-data's file (MenuProps::iconFile) first, else icon-name
	// looked up in the theme (with the item's IconThemePath). Adds the file to `files`. Answers
	// for names are taken from `previous` when still valid, and recorded in `next` (begun with
	// beginMemo for this build).
	[[nodiscard]] nlohmann::json menuIcon(const MenuProps& props, std::vector<IconRef>& files, const IconMemo& previous,
	                                      IconMemo& next);
	[[nodiscard]] IconMemo beginMemo(const std::string& themePath);

	[[nodiscard]] IconTheme& theme() { return theme_; }
	// Overlays composed so far (each costs a decode, a composition and a PNG encoding).
	[[nodiscard]] size_t compositions() const { return compositions_; }

private:
	// One candidate image: a file (theme or absolute path) or pixels from a pixmap.
	struct Source {
		std::string file;
		Image image;
		[[nodiscard]] bool found() const { return !file.empty() || !image.empty(); }
	};
	Source pick(const std::string& name, const std::vector<Pixmap>& pixmaps, const std::string& themePath);
	nlohmann::json url(const Source& s, std::vector<IconRef>& files, const std::string& owner);

	// The identity of what a source shows: a file's device, inode, size and mtime, or the
	// pixels' hash. An icon and overlay seen before give the composed file made then.
	static std::string identity(const Source& s);

	IconTheme& theme_;
	IconStore& store_;
	// (icon identity, overlay identity) -> the composed file, while an item shows it.
	std::map<std::string, std::weak_ptr<const IconFile>> composed_;
	size_t compositions_ = 0;
};

} // namespace qsd::tray
