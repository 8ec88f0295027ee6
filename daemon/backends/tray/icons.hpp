#pragma once
// An item's icon fields from its icon sources: a theme file (the theme's own file, by URL) or a
// PNG written from the best-fitting pixmap, the attention variant while the item needs
// attention, and the overlay composed over it. The order is documented in docs/backends/tray.md.

#include "icon_store.hpp"
#include "icon_theme.hpp"
#include "mapping.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qsd::tray {

struct ResolvedIcon {
	nlohmann::json icon = nullptr;          // file:// URL or null
	nlohmann::json overlayIcon = nullptr;   // the overlay's URL when it could not be composed
	std::vector<IconRef> files;             // the stored files the URLs point to
};

class IconResolver {
public:
	IconResolver(IconTheme& theme, IconStore& store): theme_(theme), store_(store) {}

	[[nodiscard]] ResolvedIcon resolve(const IconSources& sources);

	// A DBusMenu entry's icon: icon-data (PNG bytes, stored as a file) first, else icon-name
	// looked up in the theme (with the item's IconThemePath). Adds stored files to `files`.
	[[nodiscard]] nlohmann::json menuIcon(const std::string& name, const std::vector<uint8_t>& data,
	                                      const std::string& themePath, std::vector<IconRef>& files);

	[[nodiscard]] IconTheme& theme() { return theme_; }

private:
	// One candidate image: a file (theme or absolute path) or pixels from a pixmap.
	struct Source {
		std::string file;
		Image image;
		[[nodiscard]] bool found() const { return !file.empty() || !image.empty(); }
	};
	Source pick(const std::string& name, const std::vector<Pixmap>& pixmaps, const std::string& themePath);
	nlohmann::json url(const Source& s, std::vector<IconRef>& files);

	IconTheme& theme_;
	IconStore& store_;
};

} // namespace qsd::tray
