// The icon theme lookup (daemon/backends/tray/icon_theme.hpp) against temporary theme trees:
// the theme, what it inherits, hicolor, the flat fallbacks, and an item's IconThemePath both as a
// theme tree without index.theme and flat.

#ifdef QSD_TRAY_BACKEND

#include "backends/tray/icon_theme.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace qsd::tray;
namespace fs = std::filesystem;

namespace {

struct Trees {
	fs::path root;
	Trees() {
		std::string tmpl = (fs::temp_directory_path() / "qsd-icon-theme.XXXXXX").string();
		if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
		root = tmpl;
	}
	~Trees() {
		std::error_code ec;
		fs::remove_all(root, ec);
	}
	fs::path file(const fs::path& rel, const std::string& content = "x") {
		auto p = root / rel;
		fs::create_directories(p.parent_path());
		std::ofstream(p) << content;
		return p;
	}
};

const char* kTestIndex = R"([Icon Theme]
Name=Test
Inherits=Parent
Directories=16x16/apps,48x48/apps,scalable/apps

[16x16/apps]
Size=16
Type=Fixed

[48x48/apps]
Size=48
Type=Fixed

[scalable/apps]
Size=48
Type=Scalable
MinSize=8
MaxSize=512
)";

const char* kParentIndex = R"([Icon Theme]
Name=Parent
Directories=32x32/apps

[32x32/apps]
Size=32
Type=Fixed
)";

const char* kHicolorIndex = R"([Icon Theme]
Name=Hicolor
Directories=22x22/apps,64x64/apps

[22x22/apps]
Size=22
Type=Fixed

[64x64/apps]
Size=64
Type=Fixed
)";

struct Fixture {
	Trees t;
	IconTheme::Options options;
	Fixture() {
		t.file("share/icons/Test/index.theme", kTestIndex);
		t.file("share/icons/Parent/index.theme", kParentIndex);
		t.file("share/icons/hicolor/index.theme", kHicolorIndex);
		options.theme = "Test";
		options.baseDirs = {(t.root / "home/.icons").string(), (t.root / "share/icons").string()};
		options.pixmapDirs = {(t.root / "pixmaps").string()};
		options.size = 64;
	}
	std::string p(const char* rel) { return (t.root / rel).string(); }
};

} // namespace

TEST(TrayIconTheme, ChainIsTheThemeItsParentsThenHicolor) {
	Fixture f;
	IconTheme theme(f.options);
	EXPECT_EQ(theme.chain(), (std::vector<std::string>{"Test", "Parent", "hicolor"}));
	f.options.theme = "hicolor";
	EXPECT_EQ(IconTheme(f.options).chain(), (std::vector<std::string>{"hicolor"}));
	f.options.theme = "Missing";
	EXPECT_EQ(IconTheme(f.options).chain(), (std::vector<std::string>{"Missing", "hicolor"}));
}

TEST(TrayIconTheme, SizeMatchingWithinATheme) {
	Fixture f;
	f.t.file("share/icons/Test/16x16/apps/a.png");
	f.t.file("share/icons/Test/48x48/apps/a.png");
	f.t.file("share/icons/Test/scalable/apps/a.svg");
	f.t.file("share/icons/Test/16x16/apps/b.png");
	f.t.file("share/icons/Test/48x48/apps/b.png");
	f.t.file("share/icons/Test/48x48/apps/g.svg");
	f.t.file("share/icons/Test/48x48/apps/g.png");
	IconTheme theme(f.options);
	// 64 px: the scalable directory matches exactly.
	EXPECT_EQ(theme.lookup("a"), f.p("share/icons/Test/scalable/apps/a.svg"));
	// No match: the nearest size.
	EXPECT_EQ(theme.lookup("b"), f.p("share/icons/Test/48x48/apps/b.png"));
	// PNG before SVG in one directory.
	EXPECT_EQ(theme.lookup("g"), f.p("share/icons/Test/48x48/apps/g.png"));
}

TEST(TrayIconTheme, InheritedThemesHicolorAndFlatFallbacks) {
	Fixture f;
	f.t.file("share/icons/Parent/32x32/apps/b.png");
	f.t.file("share/icons/hicolor/22x22/apps/c.png");
	f.t.file("pixmaps/f.xpm");
	f.t.file("share/icons/flat-in-base.png");
	// The theme wins over hicolor even when hicolor has the better size.
	f.t.file("share/icons/Test/16x16/apps/k.png");
	f.t.file("share/icons/hicolor/64x64/apps/k.png");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup("b"), f.p("share/icons/Parent/32x32/apps/b.png"));
	EXPECT_EQ(theme.lookup("c"), f.p("share/icons/hicolor/22x22/apps/c.png"));
	EXPECT_EQ(theme.lookup("f"), f.p("pixmaps/f.xpm"));
	EXPECT_EQ(theme.lookup("flat-in-base"), f.p("share/icons/flat-in-base.png"));
	EXPECT_EQ(theme.lookup("k"), f.p("share/icons/Test/16x16/apps/k.png"));
	EXPECT_EQ(theme.lookup("nothing-like-it"), "");
	EXPECT_EQ(theme.lookup(""), "");
	EXPECT_EQ(theme.lookup("../share/icons/flat-in-base"), "");
}

TEST(TrayIconTheme, ThemesSpanBaseDirectoriesInOrder) {
	Fixture f;
	// The user's directory has no index.theme of its own: the theme's index applies there too.
	f.t.file("home/.icons/Test/48x48/apps/d.png");
	f.t.file("home/.icons/Test/48x48/apps/e.png");
	f.t.file("share/icons/Test/48x48/apps/e.png");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup("d"), f.p("home/.icons/Test/48x48/apps/d.png"));
	EXPECT_EQ(theme.lookup("e"), f.p("home/.icons/Test/48x48/apps/e.png"));
}

TEST(TrayIconTheme, AnItemsIconThemePathAsATreeAndFlat) {
	Fixture f;
	// An app's own hicolor tree without index.theme (Quickshell #26, #147).
	f.t.file("app/hicolor/24x24/status/h.png");
	f.t.file("app/hicolor/48x48/status/h.png");
	f.t.file("app/hicolor/scalable/status/s.svg");
	f.t.file("app/i.png");
	f.t.file("app/named.png");
	// A name the installed theme has too: the user's theme wins (as GTK does).
	f.t.file("app/hicolor/48x48/status/b.png");
	f.t.file("share/icons/Test/48x48/apps/b.png");
	IconTheme theme(f.options);
	auto app = f.p("app");
	EXPECT_EQ(theme.lookup("h", app), f.p("app/hicolor/48x48/status/h.png"));
	EXPECT_EQ(theme.lookup("s", app), f.p("app/hicolor/scalable/status/s.svg"));
	EXPECT_EQ(theme.lookup("i", app), f.p("app/i.png"));
	EXPECT_EQ(theme.lookup("named.png", app), f.p("app/named.png"));
	EXPECT_EQ(theme.lookup("b", app), f.p("share/icons/Test/48x48/apps/b.png"));
	// Without the path they are not found, and a new file in the app's tree is found at once
	// (the app's tree is never cached).
	EXPECT_EQ(theme.lookup("h"), "");
	f.t.file("app/hicolor/64x64/status/h.png");
	EXPECT_EQ(theme.lookup("h", app), f.p("app/hicolor/64x64/status/h.png"));
	// An absolute path is taken as it is.
	EXPECT_EQ(theme.lookup(f.p("app/i.png")), f.p("app/i.png"));
	EXPECT_EQ(theme.lookup(f.p("app/missing.png")), "");
}

TEST(TrayIconTheme, CachedResultsFollowRemovedFiles) {
	Fixture f;
	auto a = f.t.file("share/icons/Test/48x48/apps/z.png");
	f.t.file("share/icons/hicolor/64x64/apps/z.png");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup("z"), a.string());
	fs::remove(a);
	EXPECT_EQ(theme.lookup("z"), f.p("share/icons/hicolor/64x64/apps/z.png"));
}

TEST(TrayIconTheme, CurrentThemeFromTheEnvironmentAndSettings) {
	Trees t;
	std::string oldConfig = std::getenv("XDG_CONFIG_HOME") ? std::getenv("XDG_CONFIG_HOME") : "";
	std::string oldTheme = std::getenv("QSD_ICON_THEME") ? std::getenv("QSD_ICON_THEME") : "";
	::setenv("XDG_CONFIG_HOME", t.root.c_str(), 1);
	::unsetenv("QSD_ICON_THEME");
	std::string source;
	EXPECT_EQ(IconTheme::currentTheme(&source), "hicolor");
	EXPECT_EQ(source, "default");
	t.file("kdeglobals", "[General]\nx=1\n[Icons]\nTheme=breeze-dark\n");
	EXPECT_EQ(IconTheme::currentTheme(&source), "breeze-dark");
	EXPECT_EQ(source, "kdeglobals");
	t.file("gtk-3.0/settings.ini", "[Settings]\ngtk-theme-name=Adwaita\ngtk-icon-theme-name = Papirus-Dark\n");
	EXPECT_EQ(IconTheme::currentTheme(&source), "Papirus-Dark");
	EXPECT_EQ(source, "gtk-3.0");
	::setenv("QSD_ICON_THEME", "Tela", 1);
	EXPECT_EQ(IconTheme::currentTheme(&source), "Tela");
	EXPECT_EQ(source, "QSD_ICON_THEME");
	if (oldConfig.empty()) ::unsetenv("XDG_CONFIG_HOME");
	else ::setenv("XDG_CONFIG_HOME", oldConfig.c_str(), 1);
	if (oldTheme.empty()) ::unsetenv("QSD_ICON_THEME");
	else ::setenv("QSD_ICON_THEME", oldTheme.c_str(), 1);
}

#endif // QSD_TRAY_BACKEND
