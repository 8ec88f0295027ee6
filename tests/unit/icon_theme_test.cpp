// The icon theme lookup (daemon/icons/icon_theme.hpp) against temporary theme trees:
// the theme, what it inherits, the platform default, hicolor, the flat fallbacks, and an item's
// IconThemePath both as a theme tree without index.theme and flat; rasters before SVG; the
// indexes (built once, dropped when inotify reports a change, an item's trees checked once per
// pass and bounded) and the names refused before any lookup.

#ifdef QSD_TRAY_BACKEND

#include "icons/icon_theme.hpp"
#include "helpers.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <csignal>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace qsd::icons;
using qsd::testing::TempDir;
namespace fs = std::filesystem;

using qsd::testing::finishes;

namespace {

const char* kTestIndex = R"([Icon Theme]
Name=Test
Inherits=Parent
Directories=16x16/apps,48x48/apps,scalable/apps,32x32@2/apps,128x128/apps

[16x16/apps]
Size=16
Type=Fixed

[48x48/apps]
Size=48
Type=Fixed

[32x32@2/apps]
Size=32
Scale=2
Type=Fixed

[128x128/apps]
Size=128
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
	TempDir t;
	IconTheme::Options options;
	Fixture() {
		t.file("share/icons/Test/index.theme", kTestIndex);
		t.file("share/icons/Parent/index.theme", kParentIndex);
		t.file("share/icons/hicolor/index.theme", kHicolorIndex);
		options.theme = "Test";
		options.baseDirs = {(t.path / "home/.icons").string(), (t.path / "share/icons").string()};
		options.pixmapDirs = {(t.path / "pixmaps").string()};
	}
	std::string p(const char* rel) { return (t.path / rel).string(); }
};

} // namespace

TEST(IconTheme, ChainIsTheThemeItsParentsThenHicolor) {
	Fixture f;
	IconTheme theme(f.options);
	EXPECT_EQ(theme.chain(), (std::vector<std::string>{"Test", "Parent", "hicolor"}));
	f.options.theme = "hicolor";
	EXPECT_EQ(IconTheme(f.options).chain(), (std::vector<std::string>{"hicolor"}));
	f.options.theme = "Missing";
	EXPECT_EQ(IconTheme(f.options).chain(), (std::vector<std::string>{"Missing", "hicolor"}));
}

TEST(IconTheme, ARasterOfTheNearestSizeAtLeastTheOneAskedForThenSvg) {
	Fixture f;
	// No raster of 64 px or more: the largest one, not the SVG that matches exactly.
	f.t.file("share/icons/Test/16x16/apps/a.png");
	f.t.file("share/icons/Test/48x48/apps/a.png");
	f.t.file("share/icons/Test/scalable/apps/a.svg");
	// The smallest raster of at least 64 px.
	f.t.file("share/icons/Test/48x48/apps/r.png");
	f.t.file("share/icons/Test/128x128/apps/r.png");
	f.t.file("share/icons/Test/scalable/apps/r.svg");
	// 32x32@2 holds 64 px images.
	f.t.file("share/icons/Test/32x32@2/apps/x.png");
	f.t.file("share/icons/Test/128x128/apps/x.png");
	// SVG only when there is no raster; PNG before XPM and SVG in one directory.
	f.t.file("share/icons/Test/scalable/apps/s.svg");
	f.t.file("share/icons/Test/48x48/apps/g.svg");
	f.t.file("share/icons/Test/48x48/apps/g.xpm");
	f.t.file("share/icons/Test/48x48/apps/g.png");
	f.t.file("share/icons/Test/48x48/apps/v.svg");
	f.t.file("share/icons/Test/48x48/apps/v.xpm");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup("a", 64), f.p("share/icons/Test/48x48/apps/a.png"));
	EXPECT_EQ(theme.lookup("r", 64), f.p("share/icons/Test/128x128/apps/r.png"));
	EXPECT_EQ(theme.lookup("x", 64), f.p("share/icons/Test/32x32@2/apps/x.png"));
	EXPECT_EQ(theme.lookup("s", 64), f.p("share/icons/Test/scalable/apps/s.svg"));
	EXPECT_EQ(theme.lookup("g", 64), f.p("share/icons/Test/48x48/apps/g.png"));
	EXPECT_EQ(theme.lookup("v", 64), f.p("share/icons/Test/48x48/apps/v.xpm"));
	// A theme earlier in the chain wins with its SVG over a raster further down: the user's
	// theme decides how icons look.
	f.t.file("share/icons/Test/scalable/apps/k.svg");
	f.t.file("share/icons/hicolor/64x64/apps/k.png");
	IconTheme again(f.options);
	EXPECT_EQ(again.lookup("k", 64), f.p("share/icons/Test/scalable/apps/k.svg"));
}

// One instance serves every backend (the tray at 64 px, Bluetooth at 32, notifications at 128):
// the size is the lookup's, and one index answers each size as its own instance would.
TEST(IconTheme, OneIndexAnswersEverySize) {
	Fixture f;
	f.t.file("share/icons/Test/16x16/apps/r.png");
	f.t.file("share/icons/Test/48x48/apps/r.png");
	f.t.file("share/icons/Test/128x128/apps/r.png");
	f.t.file("share/icons/Test/scalable/apps/r.svg");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup("r", 16), f.p("share/icons/Test/16x16/apps/r.png"));
	EXPECT_EQ(theme.lookup("r", 32), f.p("share/icons/Test/48x48/apps/r.png"));
	EXPECT_EQ(theme.lookup("r", 64), f.p("share/icons/Test/128x128/apps/r.png"));
	EXPECT_EQ(theme.lookup("r", 16), f.p("share/icons/Test/16x16/apps/r.png"));
	EXPECT_EQ(theme.lookup("r", 256), f.p("share/icons/Test/128x128/apps/r.png"));
	EXPECT_EQ(theme.stats().themes, 1u);
}

// The index of an installed theme is kept for as long as qsd runs: a large theme (Papirus,
// Breeze: thousands of names in a dozen sizes) must cost its names' bytes and a few words per
// file, not an allocation or two per name (a map of strings to vectors cost about 200 bytes per
// name). Heap bytes in use are not counted under a sanitizer, which has its own allocator.
TEST(IconTheme, AnInstalledThemeIsIndexedInLittleMoreThanItsNames) {
#if defined(__SANITIZE_ADDRESS__)
	GTEST_SKIP() << "mallinfo2 does not see AddressSanitizer's heap";
#else
	Fixture f;
	constexpr int kNames = 3000;
	size_t nameBytes = 0;
	for (int i = 0; i < kNames; ++i) {
		auto name = "application-x-qsd-test-" + std::to_string(i);
		nameBytes += name.size();
		f.t.file("share/icons/Test/16x16/apps/" + name + ".png");
		f.t.file("share/icons/Test/48x48/apps/" + name + ".png");
	}
	IconTheme theme(f.options);
	(void)theme.chain();
	auto before = ::mallinfo2().uordblks;
	EXPECT_EQ(theme.lookup("application-x-qsd-test-7", 64), f.p("share/icons/Test/48x48/apps/application-x-qsd-test-7.png"));
	auto used = ::mallinfo2().uordblks - before;
	// The names, 8 bytes of offsets each and 4 per file: 36 bytes a name beyond its bytes here.
	// What else the first lookup keeps (the other themes of the chain, the watches) is small.
	EXPECT_LT(used, nameBytes + kNames * 64) << used << " bytes for " << kNames << " names of " << nameBytes << " bytes";
#endif
}

// hicolor's index lists 649 directories; a system has a few hundred of them and icons in a few
// dozen. The directories without a file are not kept in the index, and the watches on them
// cost a few words each, not a map of their paths.
TEST(IconTheme, DirectoriesWithoutIconsCostLittle) {
#if defined(__SANITIZE_ADDRESS__)
	GTEST_SKIP() << "mallinfo2 does not see AddressSanitizer's heap";
#else
	Fixture f;
	std::string index = "[Icon Theme]\nName=Wide\nDirectories=";
	std::string sections;
	for (int i = 0; i < 600; ++i) {
		auto dir = std::to_string(16 + i) + "x" + std::to_string(16 + i) + "/applications-and-more";
		index += (i ? "," : "") + dir;
		sections += "\n[" + dir + "]\nSize=" + std::to_string(16 + i) + "\nType=Fixed\n";
		if (i % 2 == 0) fs::create_directories(f.t.path / "share/icons/Wide" / dir);   // 300 exist, empty
	}
	f.t.file("share/icons/Wide/index.theme", index + "\n" + sections);
	f.t.file("share/icons/Wide/48x48/applications-and-more/one.png");
	f.options.theme = "Wide";
	auto before = ::mallinfo2().uordblks;
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup("one", 48), f.p("share/icons/Wide/48x48/applications-and-more/one.png"));
	auto used = ::mallinfo2().uordblks - before;
	EXPECT_GE(theme.stats().watches, 300u);
	// About 47 KB here (80 bytes per watch, and what the allocator keeps in its per-thread
	// caches, which mallinfo2 counts as in use); a Directory for each of the 600 listed and a
	// map of the watched paths cost 200 KB.
	EXPECT_LT(used, 96u * 1024) << used << " bytes for 600 directories, 300 watched";
#endif
}

TEST(IconTheme, ThePlatformDefaultComesAfterTheThemeAndBeforeHicolor) {
	Fixture f;
	f.t.file("share/icons/Adwaita/index.theme", "[Icon Theme]\nName=Adwaita\nInherits=hicolor\nDirectories=48x48/status\n\n"
	                                             "[48x48/status]\nSize=48\nType=Fixed\n");
	f.t.file("share/icons/Adwaita/48x48/status/audio-volume-high.png");
	f.t.file("share/icons/Adwaita/48x48/status/both.png");
	f.t.file("share/icons/hicolor/64x64/apps/both.png");
	f.t.file("share/icons/Parent/32x32/apps/both.png");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.chain(), (std::vector<std::string>{"Test", "Parent", "Adwaita", "hicolor"}));
	EXPECT_EQ(theme.lookup("both", 64), f.p("share/icons/Parent/32x32/apps/both.png"));
	// No theme configured: what a GTK or Qt app shows, Adwaita's icon.
	f.options.theme = "hicolor";
	IconTheme none(f.options);
	EXPECT_EQ(none.chain(), (std::vector<std::string>{"Adwaita", "hicolor"}));
	EXPECT_EQ(none.lookup("audio-volume-high", 64), f.p("share/icons/Adwaita/48x48/status/audio-volume-high.png"));
	EXPECT_EQ(none.lookup("both", 64), f.p("share/icons/Adwaita/48x48/status/both.png"));
	// Not installed: not in the chain.
	f.options.fallbackThemes = {"Missing"};
	EXPECT_EQ(IconTheme(f.options).chain(), (std::vector<std::string>{"hicolor"}));
}

TEST(IconTheme, InheritedThemesHicolorAndFlatFallbacks) {
	Fixture f;
	f.t.file("share/icons/Parent/32x32/apps/b.png");
	f.t.file("share/icons/hicolor/22x22/apps/c.png");
	f.t.file("pixmaps/f.xpm");
	f.t.file("share/icons/flat-in-base.png");
	// The theme wins over hicolor even when hicolor has the better size.
	f.t.file("share/icons/Test/16x16/apps/k.png");
	f.t.file("share/icons/hicolor/64x64/apps/k.png");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup("b", 64), f.p("share/icons/Parent/32x32/apps/b.png"));
	EXPECT_EQ(theme.lookup("c", 64), f.p("share/icons/hicolor/22x22/apps/c.png"));
	EXPECT_EQ(theme.lookup("f", 64), f.p("pixmaps/f.xpm"));
	EXPECT_EQ(theme.lookup("flat-in-base", 64), f.p("share/icons/flat-in-base.png"));
	EXPECT_EQ(theme.lookup("k", 64), f.p("share/icons/Test/16x16/apps/k.png"));
	EXPECT_EQ(theme.lookup("nothing-like-it", 64), "");
	EXPECT_EQ(theme.lookup("", 64), "");
	EXPECT_EQ(theme.lookup("../share/icons/flat-in-base", 64), "");
}

TEST(IconTheme, ThemesSpanBaseDirectoriesInOrder) {
	Fixture f;
	// The user's directory has no index.theme of its own: the theme's index applies there too.
	f.t.file("home/.icons/Test/48x48/apps/d.png");
	f.t.file("home/.icons/Test/48x48/apps/e.png");
	f.t.file("share/icons/Test/48x48/apps/e.png");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup("d", 64), f.p("home/.icons/Test/48x48/apps/d.png"));
	EXPECT_EQ(theme.lookup("e", 64), f.p("home/.icons/Test/48x48/apps/e.png"));
}

TEST(IconTheme, AnItemsIconThemePathAsATreeAndFlat) {
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
	EXPECT_EQ(theme.lookup("h", 64, app), f.p("app/hicolor/48x48/status/h.png"));
	EXPECT_EQ(theme.lookup("s", 64, app), f.p("app/hicolor/scalable/status/s.svg"));
	EXPECT_EQ(theme.lookup("i", 64, app), f.p("app/i.png"));
	EXPECT_EQ(theme.lookup("named.png", 64, app), f.p("app/named.png"));
	EXPECT_EQ(theme.lookup("b", 64, app), f.p("share/icons/Test/48x48/apps/b.png"));
	// Without the path they are not found, and a new file in the app's tree is found at once
	// (the app's tree is never cached).
	EXPECT_EQ(theme.lookup("h", 64), "");
	f.t.file("app/hicolor/64x64/status/h.png");
	EXPECT_EQ(theme.lookup("h", 64, app), f.p("app/hicolor/64x64/status/h.png"));
	// An absolute path is taken as it is.
	EXPECT_EQ(theme.lookup(f.p("app/i.png"), 64), f.p("app/i.png"));
	EXPECT_EQ(theme.lookup(f.p("app/missing.png"), 64), "");
}

TEST(IconTheme, ChangesOfTheInstalledThemesAreFollowedThroughInotify) {
	Fixture f;
	auto a = f.t.file("share/icons/Test/48x48/apps/z.png");
	f.t.file("share/icons/hicolor/64x64/apps/z.png");
	IconTheme theme(f.options);
	ASSERT_GE(theme.watchFd(), 0);
	EXPECT_EQ(theme.lookup("z", 64), a.string());
	EXPECT_FALSE(theme.readEvents());
	auto v = theme.version();
	// Removed: the next one.
	fs::remove(a);
	EXPECT_TRUE(theme.readEvents());
	EXPECT_NE(theme.version(), v);
	EXPECT_EQ(theme.lookup("z", 64), f.p("share/icons/hicolor/64x64/apps/z.png"));
	// "Not found" is not kept once an icon is installed: in a directory that exists, in one
	// that did not (a new size), in a theme installed later, in a base directory created later.
	EXPECT_EQ(theme.lookup("later", 64), "");
	f.t.file("share/icons/Test/48x48/apps/later.png");
	EXPECT_TRUE(theme.readEvents());
	EXPECT_EQ(theme.lookup("later", 64), f.p("share/icons/Test/48x48/apps/later.png"));
	EXPECT_EQ(theme.lookup("sized", 64), "");
	f.t.file("share/icons/Test/128x128/apps/sized.png");
	EXPECT_TRUE(theme.readEvents());
	EXPECT_EQ(theme.lookup("sized", 64), f.p("share/icons/Test/128x128/apps/sized.png"));
	EXPECT_EQ(theme.lookup("user", 64), "");
	f.t.file("home/.icons/hicolor/index.theme", kHicolorIndex);
	f.t.file("home/.icons/hicolor/22x22/apps/user.png");
	EXPECT_TRUE(theme.readEvents());
	EXPECT_EQ(theme.lookup("user", 64), f.p("home/.icons/hicolor/22x22/apps/user.png"));
	// Unrelated changes beside a missing base directory do not count.
	fs::create_directories(f.t.path / "data");
	IconTheme other([&] {
		auto o = f.options;
		o.baseDirs.insert(o.baseDirs.begin(), (f.t.path / "data/icons").string());
		return o;
	}());
	EXPECT_EQ(other.lookup("nothing", 64), "");
	f.t.file("data/recently-used.xbel");
	EXPECT_FALSE(other.readEvents());
	f.t.file("data/icons/flat.png");
	EXPECT_TRUE(other.readEvents());
	EXPECT_EQ(other.lookup("flat", 64), f.p("data/icons/flat.png"));
}

TEST(IconTheme, NamesThatCannotBeFileNamesAreRefusedBeforeAnyLookup) {
	Fixture f;
	std::string longName(256, 'a');
	f.t.file("pixmaps/" + std::string(250, 'b') + ".png");
	IconTheme theme(f.options);
	EXPECT_EQ(theme.lookup(longName, 64), "");
	EXPECT_EQ(theme.lookup(std::string(250, 'b'), 64), f.p(("pixmaps/" + std::string(250, 'b') + ".png").c_str()));
	EXPECT_EQ(theme.lookup("a/b", 64), "");
	EXPECT_EQ(theme.lookup(std::string("a\0b", 3), 64), "");
	EXPECT_EQ(theme.lookup("/" + std::string(5000, 'c'), 64), "");
	// Nothing was indexed for them.
	EXPECT_EQ(theme.stats().privateTrees, 0u);
	// An IconThemePath that is not absolute, or too long, is not searched.
	EXPECT_EQ(theme.lookup("x", 64, "relative/dir"), "");
	EXPECT_EQ(theme.lookup("x", 64, "/" + std::string(5000, 'd')), "");
	EXPECT_EQ(theme.stats().privateTrees, 0u);
}

TEST(IconTheme, AnItemsTreeIsIndexedOnceAndCheckedOncePerPass) {
	Fixture f;
	uint64_t pass = 1;
	f.options.pass = [&] { return pass; };
	for (int i = 0; i < 40; ++i) f.t.file("app/hicolor/" + std::to_string(16 + i) + "x" + std::to_string(16 + i) + "/apps/i" + std::to_string(i) + ".png");
	IconTheme theme(f.options);
	auto app = f.p("app");
	EXPECT_EQ(theme.lookup("i3", 64, app), f.p("app/hicolor/19x19/apps/i3.png"));
	EXPECT_EQ(theme.lookup("missing", 64, app), "");
	auto before = theme.stats();
	for (int i = 0; i < 1000; ++i) EXPECT_EQ(theme.lookup("missing-" + std::to_string(i), 64, app), "");
	EXPECT_EQ(theme.stats().privateTrees, before.privateTrees);
	auto v = theme.version(app);
	// Within a pass the tree is not read again; the next pass sees the new file.
	f.t.file("app/hicolor/64x64/apps/new.png");
	EXPECT_EQ(theme.lookup("new", 64, app), "");
	EXPECT_EQ(theme.version(app), v);
	++pass;
	EXPECT_EQ(theme.lookup("new", 64, app), f.p("app/hicolor/64x64/apps/new.png"));
	EXPECT_NE(theme.version(app), v);
	// The flat directory too (Electron writes a new file per icon).
	f.t.file("app/electron-1.png");
	++pass;
	EXPECT_EQ(theme.lookup("electron-1", 64, app), f.p("app/electron-1.png"));
	// Forgotten with the item.
	EXPECT_GT(theme.stats().privateTrees, 0u);
	theme.forget(app);
	EXPECT_EQ(theme.stats().privateTrees, 0u);
}

TEST(IconTheme, ForgettingAPathDropsItsOwnTreesOnly) {
	Fixture f;
	f.t.file("one/hicolor/48x48/apps/a.png");
	f.t.file("one/sub/hicolor/48x48/apps/c.png");
	f.t.file("two/hicolor/48x48/apps/b.png");
	IconTheme theme(f.options);
	// Every tree of each path (one per theme of the chain, and the flat directory).
	(void)theme.version(f.p("one"));
	auto perPath = theme.stats().privateTrees;
	ASSERT_GT(perPath, 0u);
	(void)theme.version(f.p("one/sub"));
	(void)theme.version(f.p("two"));
	ASSERT_EQ(theme.stats().privateTrees, 3 * perPath);
	// An item without an IconThemePath left: "" once was the prefix "/" of every item's trees.
	theme.forget("");
	theme.forget("relative/path");
	EXPECT_EQ(theme.stats().privateTrees, 3 * perPath);
	// The path as lookups take it ("/x/" is "/x"), and not the trees of a path below it.
	theme.forget(f.p("one") + "/");
	EXPECT_EQ(theme.stats().privateTrees, 2 * perPath);
	EXPECT_EQ(theme.lookup("c", 64, f.p("one/sub")), f.p("one/sub/hicolor/48x48/apps/c.png"));
	EXPECT_EQ(theme.stats().privateTrees, 2 * perPath);
	theme.forget(f.p("two"));
	EXPECT_EQ(theme.stats().privateTrees, perPath);
}

TEST(IconTheme, AnItemsTreesAreBounded) {
	Fixture f;
	IconTheme theme(f.options);
	for (size_t i = 0; i < IconTheme::kMaxPrivateTrees * 2; ++i) {
		auto dir = "apps/" + std::to_string(i);
		f.t.file(dir + "/hicolor/48x48/apps/a" + std::to_string(i) + ".png");
		EXPECT_EQ(theme.lookup("a" + std::to_string(i), 64, f.p(dir.c_str())), f.p((dir + "/hicolor/48x48/apps/a" + std::to_string(i) + ".png").c_str()));
		EXPECT_LE(theme.stats().privateTrees, IconTheme::kMaxPrivateTrees);
	}
	// A tree with more files than it may index: what is indexed stays within the bound.
	for (int i = 0; i < 5000; ++i) f.t.file("big/" + std::to_string(i) + ".png");
	(void)theme.lookup("0", 64, f.p("big"));
	EXPECT_LE(theme.stats().privateNames, IconTheme::kMaxPrivateNames);
}

TEST(IconTheme, AFifoInAnItemsTreeIsNotOpened) {
	Fixture f;
	fs::create_directories(f.t.path / "app/hicolor");
	ASSERT_EQ(::mkfifo((f.t.path / "app/hicolor/index.theme").c_str(), 0600), 0);
	f.t.file("app/hicolor/48x48/apps/fifo-ok.png");
	// In a child: a FIFO opened for reading waits for a writer, for ever.
	EXPECT_TRUE(finishes([&] {
		IconTheme theme(f.options);
		return theme.lookup("not-there", 64, f.p("app")).empty() &&
		       theme.lookup("fifo-ok", 64, f.p("app")) == f.p("app/hicolor/48x48/apps/fifo-ok.png");
	}));
}

TEST(IconTheme, CurrentThemeFromTheEnvironmentAndSettings) {
	TempDir t;
	std::string oldConfig = std::getenv("XDG_CONFIG_HOME") ? std::getenv("XDG_CONFIG_HOME") : "";
	std::string oldTheme = std::getenv("QSD_ICON_THEME") ? std::getenv("QSD_ICON_THEME") : "";
	::setenv("XDG_CONFIG_HOME", t.path.c_str(), 1);
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
