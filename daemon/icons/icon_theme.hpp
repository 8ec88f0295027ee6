#pragma once
// Icon name -> file, after the freedesktop Icon Theme Specification and what the toolkits do:
// the current theme and the themes it inherits, the platform default (GTK's Adwaita, where
// installed), hicolor, then the flat fallbacks (the base directories, /usr/share/pixmaps). A tray
// item's IconThemePath is searched both as one more base directory holding theme trees (with or
// without an index.theme: apps ship bare "hicolor/48x48/apps" trees, Quickshell #26/#147) and
// flat. Within a theme a raster image of the nearest size at least the one asked for wins; an
// SVG only when the theme has no raster of that name (a QML Image needs a plugin for SVG).
//
// The daemon has one instance (icons/shared_theme.hpp), whichever backends show icons: the
// index holds every size of every name, so the size is a parameter of each lookup.
//
// A lookup is a few hash probes. Each theme's index.theme is parsed once and the files of its
// directories are listed once, into an index by icon name:
//  - installed themes (and the flat base and pixmap directories) stay indexed until inotify
//    reports a change under them: watchFd() is for the caller's event loop, readEvents() drops
//    the indexes (an icon installed later is then found, a "not found" is not kept for good);
//  - an item's own trees are checked against their directories' mtimes at most once per pass
//    (Options::pass), rebuilt when one changed, and bounded: at most kMaxPrivateTrees trees and
//    kMaxPrivateNames names in all, the least recently used dropped first.
// Names longer than a file name, or with a '/' (other than an absolute file path), are refused
// before any lookup. Tested against temporary theme trees in tests/unit/icon_theme_test.cpp.

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qsd::icons {

class IconTheme {
public:
	// Limits on what a peer can make qsd do (docs/architecture.md, "Hostile peers").
	static constexpr size_t kMaxNameBytes = 255;        // an icon name: one file name
	static constexpr size_t kMaxPathBytes = 4096;       // PATH_MAX: an absolute icon file, an IconThemePath
	static constexpr size_t kMaxPrivateTrees = 32;      // an item's trees (and flat directories) kept indexed
	static constexpr size_t kMaxPrivateNames = 16384;   // names indexed in all of them together
	static constexpr size_t kMaxPrivateDirs = 512;      // directories of one private tree
	static constexpr size_t kMaxPrivateEntries = 32768; // directory entries read for one private tree
	static constexpr size_t kMaxWatches = 2048;         // inotify watches on the installed themes

	struct Options {
		std::string theme;                      // the current theme's name ("" or "hicolor": none)
		std::vector<std::string> fallbackThemes{"Adwaita"};   // the platform default, after the theme's chain
		std::vector<std::string> baseDirs;      // in order: ~/.icons, $XDG_DATA_HOME/icons, $XDG_DATA_DIRS/icons
		std::vector<std::string> pixmapDirs;    // flat fallbacks: /usr/share/pixmaps
		// Names the current pass (the event loop's iteration): an item's trees are compared with
		// their directories at most once per pass. Unset: at every lookup.
		std::function<uint64_t()> pass;
		bool watch = true;                      // follow the installed themes with inotify
	};

	// The current theme: $QSD_ICON_THEME, else gtk-icon-theme-name in
	// $XDG_CONFIG_HOME/gtk-3.0/settings.ini (then gtk-4.0), else Theme= in [Icons] of
	// $XDG_CONFIG_HOME/kdeglobals, else "hicolor". `source` says which, for the log.
	static std::string currentTheme(std::string* source = nullptr);
	// The files currentTheme reads, as {directory, file name} (the directory is what to watch:
	// settings are saved by writing a new file and renaming it over the old one). Empty when
	// $QSD_ICON_THEME decides.
	static std::vector<std::pair<std::string, std::string>> settingsFiles();
	// Options for this environment (the current theme, the XDG base directories); `source`
	// as for currentTheme.
	static Options fromEnvironment(std::string* source = nullptr);

	explicit IconTheme(Options options);
	~IconTheme();
	IconTheme(const IconTheme&) = delete;
	IconTheme& operator=(const IconTheme&) = delete;

	// The file for icon `name` at `size` pixels (an absolute path is taken as it is when it is
	// a regular file), with the item's `themePath` ("" for none). "" when nothing is found.
	[[nodiscard]] std::string lookup(const std::string& name, int size, const std::string& themePath = {});

	// A number that changes whenever lookups with `themePath` could give other answers (the
	// installed themes changed, or one of that path's trees did): callers may keep answers
	// while it stays the same. Checks the path's trees like a lookup does.
	[[nodiscard]] uint64_t version(const std::string& themePath = {});

	// The themes searched, in order (the current one, its Inherits, the fallbacks, hicolor).
	[[nodiscard]] const std::vector<std::string>& chain();
	[[nodiscard]] const Options& options() const { return options_; }

	// The inotify descriptor to poll for readEvents (-1 when nothing is watched).
	[[nodiscard]] int watchFd() const { return inotify_; }
	// Reads what inotify reported; true when the installed themes changed (their indexes are
	// dropped and rebuilt at the next lookup).
	bool readEvents();

	// Drops the trees indexed for an item's IconThemePath (the item left, or changed path), the
	// path taken as lookups take it ("/x/" is "/x"); nothing for a path they do not search ("").
	void forget(const std::string& themePath);
	// Another current theme (the user chose one): the installed themes are indexed again, with
	// the chain it makes.
	void setTheme(std::string theme);

	// Drops every item's trees (the tray stopped).
	void forgetAll();
	// Drops every index.
	void clearCache();

	struct Stats {
		size_t themes;         // installed themes indexed
		size_t privateTrees;   // an item's trees and flat directories indexed
		size_t privateNames;   // names in them
		size_t watches;
	};
	[[nodiscard]] Stats stats() const;

	struct Directory;      // one subdirectory of a theme, from index.theme or found on disk
	struct Tree;           // the indexed files of one theme (or one flat directory)
	struct Private;        // an item's tree, with what it was read from

private:
	void ensureChain();
	// The theme's tree (nullptr: not installed); with `scan`, its files listed too.
	Tree* installed(const std::string& theme, bool scan = true);
	Tree* flatInstalled();
	Tree* privateTree(const std::string& key, const std::string& dir, bool flat);
	void buildInstalled(Tree& tree, const std::string& theme);
	void dropInstalled();
	void watch(const std::string& path, bool files, const std::string& dirName = {});
	void watchMissing(const std::string& path);
	[[nodiscard]] bool isInstalledRoot(const std::string& dir, const std::string& theme);
	[[nodiscard]] uint64_t currentPass();

	Options options_;
	std::vector<std::string> chain_;
	bool chainValid_ = false;
	std::map<std::string, std::unique_ptr<Tree>> installed_;   // by theme name; null: not installed
	std::unique_ptr<Tree> flat_;                               // the base and pixmap directories
	std::list<std::unique_ptr<Private>> private_;              // most recently used first
	std::unordered_map<std::string, std::list<std::unique_ptr<Private>>::iterator> privateByKey_;
	size_t privateNames_ = 0;
	uint64_t generation_ = 1;
	uint64_t lookups_ = 0;

	int inotify_ = -1;
	struct Watch {
		bool files = false;              // any change of an entry counts (a directory of icons)
		bool anyDir = false;             // a subdirectory created or removed counts
		std::vector<std::string> dirNames;   // ... only these (a missing directory's ancestor)
	};
	std::map<int, Watch> watches_;
	bool watchesFull_ = false;
};

} // namespace qsd::icons
