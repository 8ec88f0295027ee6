#pragma once
// Icon name -> file, after the freedesktop Icon Theme Specification: the current theme, the
// themes it inherits, hicolor, then the flat fallback directories. An item's IconThemePath is
// searched both as one more base directory holding theme trees (with or without an
// index.theme: apps ship bare "hicolor/48x48/apps" trees, Quickshell #26/#147) and flat.
//
// Only the file system is touched (stat, opendir, reading index.theme files); lookups in the
// installed themes are cached, so a name costs its stats once. Tested against temporary theme
// trees in tests/unit/tray_icon_theme_test.cpp.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qsd::tray {

class IconTheme {
public:
	struct Options {
		std::string theme;                      // the current theme's name ("" or "hicolor": none)
		std::vector<std::string> baseDirs;      // in order: ~/.icons, $XDG_DATA_HOME/icons, $XDG_DATA_DIRS/icons
		std::vector<std::string> pixmapDirs;    // flat fallbacks: /usr/share/pixmaps
		int size = 64;                          // the size looked for, in pixels
	};

	// The current theme: $QSD_ICON_THEME, else gtk-icon-theme-name in
	// $XDG_CONFIG_HOME/gtk-3.0/settings.ini (then gtk-4.0), else Theme= in [Icons] of
	// $XDG_CONFIG_HOME/kdeglobals, else "hicolor". `source` says which, for the log.
	static std::string currentTheme(std::string* source = nullptr);
	// Options for this environment (the current theme, the XDG base directories).
	static Options fromEnvironment(int size);

	explicit IconTheme(Options options);
	~IconTheme();
	IconTheme(const IconTheme&) = delete;
	IconTheme& operator=(const IconTheme&) = delete;

	// The file for icon `name` (an absolute path is taken as it is when the file exists), with
	// the item's `themePath` ("" for none). "" when nothing is found. Prefers PNG, then SVG, then
	// XPM within a directory, as the specification orders them.
	[[nodiscard]] std::string lookup(const std::string& name, const std::string& themePath = {});

	// The themes searched, in order (the current one, its Inherits, hicolor).
	[[nodiscard]] const std::vector<std::string>& chain() const { return chain_; }
	[[nodiscard]] const Options& options() const { return options_; }

	// Forgets cached lookups (a theme may have been installed or changed).
	void clearCache();

	struct Directory;      // one subdirectory of a theme, from index.theme or found on disk
	struct Index;          // one theme's index.theme

private:
	const Index* index(const std::string& theme);
	std::string lookupInTheme(const std::string& name, const std::string& theme, const std::vector<std::string>& bases);
	std::string lookupInTree(const std::string& name, const std::string& themeDir);

	Options options_;
	std::vector<std::string> chain_;
	std::map<std::string, std::unique_ptr<Index>> indexes_;   // by theme name; null: none found
	std::map<std::string, std::string> cache_;                // name -> file ("" = not found)
};

} // namespace qsd::tray
