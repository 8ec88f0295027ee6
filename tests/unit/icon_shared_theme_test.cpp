// The daemon's one icon theme lookup (daemon/icons/shared_theme.hpp) on a real event loop: a
// change under the installed themes reaches every subscriber once, a subscriber that let go of
// its handle is not called, a lookup made in a loop iteration sees a file created before it
// even when inotify's source has not run yet in that iteration, and a theme the user chooses
// while qsd runs (GTK's settings.ini, KDE's kdeglobals) is searched from then on.

#include "event_loop.hpp"
#include "helpers.hpp"
#include "icons/shared_theme.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <systemd/sd-event.h>

#include <chrono>
#include <functional>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>
#include <string>

using namespace qsd;
using qsd::testing::runUntil;
using qsd::testing::TempDir;

namespace {

// The environment IconTheme::fromEnvironment reads, pointed at a temporary hicolor theme; put
// back as it was afterwards.
struct ThemeEnvironment {
	TempDir t;
	std::map<std::string, std::optional<std::string>> saved;
	ThemeEnvironment() {
		t.file("share/icons/hicolor/index.theme",
		       "[Icon Theme]\nName=Hicolor\nDirectories=32x32/apps\n\n[32x32/apps]\nSize=32\nType=Fixed\n");
		t.file("share/icons/hicolor/32x32/apps/first.png");
		set("XDG_DATA_DIRS", (t.path / "share").string());
		set("XDG_DATA_HOME", (t.path / "home-data").string());
		set("HOME", (t.path / "home").string());
		set("QSD_ICON_THEME", "hicolor");
	}
	~ThemeEnvironment() {
		for (const auto& [name, value]: saved) {
			if (value) ::setenv(name.c_str(), value->c_str(), 1);
			else ::unsetenv(name.c_str());
		}
	}
	void unset(const char* name) {
		const char* old = std::getenv(name);
		saved.emplace(name, old ? std::optional<std::string>(old) : std::nullopt);
		::unsetenv(name);
	}
	void set(const char* name, const std::string& value) {
		const char* old = std::getenv(name);
		saved.emplace(name, old ? std::optional<std::string>(old) : std::nullopt);
		::setenv(name, value.c_str(), 1);
	}
	std::string url(const char* file) { return "file://" + (t.path / "share/icons/hicolor/32x32/apps" / file).string(); }
};

} // namespace

TEST(IconSharedTheme, EverySubscriberHearsOfAChangeAndLookupsSeeIt) {
	ThemeEnvironment e;
	EventLoop loop;
	icons::SharedTheme shared(loop);
	EXPECT_EQ(shared.url("first", 32), e.url("first.png"));
	EXPECT_EQ(shared.url("later", 32), std::nullopt);
	int a = 0, b = 0, c = 0;
	auto subA = shared.onChange([&] { ++a; });
	auto subB = shared.onChange([&] { ++b; });
	auto subC = shared.onChange([&] { ++c; });
	subC.reset();   // let go: not called any more
	auto generation = shared.generation();
	e.t.file("share/icons/hicolor/32x32/apps/later.png");
	ASSERT_TRUE(runUntil(loop, [&] { return a > 0; }));
	EXPECT_EQ(a, 1);
	EXPECT_EQ(b, 1);
	EXPECT_EQ(c, 0);
	EXPECT_NE(shared.generation(), generation);
	EXPECT_EQ(shared.url("later", 32), e.url("later.png"));
	// Paths are not names.
	EXPECT_EQ(shared.url(e.t.path.string() + "/share/icons/hicolor/32x32/apps/first.png", 32), std::nullopt);
}

TEST(IconSharedTheme, ALookupSeesAFileCreatedBeforeItsIterationWhateverRunsFirst) {
	ThemeEnvironment e;
	EventLoop loop;
	icons::SharedTheme shared(loop);
	EXPECT_EQ(shared.url("late", 32), std::nullopt);
	// The file appears; then a source that looks the name up runs first in the next iteration,
	// before the themes' inotify source (as a D-Bus message about a new player may).
	e.t.file("share/icons/hicolor/32x32/apps/late.png");
	std::optional<std::string> seen;
	bool ran = false;
	sd_event_source* first = nullptr;
	auto handler = [](sd_event_source*, void* data) -> int {
		auto* f = static_cast<std::function<void()>*>(data);
		(*f)();
		return 0;
	};
	std::function<void()> lookup = [&] {
		seen = shared.url("late", 32);
		ran = true;
	};
	ASSERT_GE(sd_event_add_defer(loop.raw(), &first, handler, &lookup), 0);
	sd_event_source_set_priority(first, SD_EVENT_PRIORITY_IMPORTANT);
	sd_event_source_set_enabled(first, SD_EVENT_ONESHOT);
	ASSERT_GE(sd_event_run(loop.raw(), 1'000'000), 0);
	sd_event_source_unref(first);
	ASSERT_TRUE(ran);
	EXPECT_EQ(seen, e.url("late.png"));
}

TEST(IconSharedTheme, AThemeTheUserChoosesWhileQsdRunsIsSearched) {
	ThemeEnvironment e;
	e.unset("QSD_ICON_THEME");
	e.set("XDG_CONFIG_HOME", (e.t.path / "config").string());
	for (const char* theme: {"One", "Two"}) {
		e.t.file(std::string("share/icons/") + theme + "/index.theme",
		         std::string("[Icon Theme]\nName=") + theme + "\nDirectories=32x32/apps\n\n[32x32/apps]\nSize=32\nType=Fixed\n");
		e.t.file(std::string("share/icons/") + theme + "/32x32/apps/app.png");
	}
	auto in = [&](const char* theme) { return "file://" + (e.t.path / "share/icons" / theme / "32x32/apps/app.png").string(); };
	// A setting saved as GTK and KDE save them: a new file renamed over the old one.
	auto choose = [&](const char* dir, const char* file, const std::string& text) {
		auto tmp = e.t.file(std::string("config/") + dir + "/." + file + ".new", text);
		std::filesystem::rename(tmp, e.t.path / "config" / dir / file);
	};
	choose("gtk-3.0", "settings.ini", "[Settings]\ngtk-icon-theme-name=One\n");
	EventLoop loop;
	icons::SharedTheme shared(loop);
	EXPECT_EQ(shared.url("app", 32), in("One"));
	int told = 0;
	auto sub = shared.onChange([&] { ++told; });
	choose("gtk-3.0", "settings.ini", "[Settings]\ngtk-icon-theme-name=Two\n");
	ASSERT_TRUE(runUntil(loop, [&] { return told > 0; }));
	EXPECT_EQ(shared.url("app", 32), in("Two"));
	EXPECT_EQ(shared.theme().chain(), (std::vector<std::string>{"Two", "hicolor"}));
	// Another file in the directory, the same choice saved again, and KDE's choice while GTK's
	// decides change nothing; then GTK's setting goes (a reset), and KDE's decides.
	e.t.file("config/gtk-3.0/bookmarks", "file:///tmp\n");
	choose("gtk-3.0", "settings.ini", "[Settings]\ngtk-icon-theme-name=Two\n# saved again\n");
	choose(".", "kdeglobals", "[Icons]\nTheme=One\n");
	std::filesystem::remove_all(e.t.path / "config/gtk-3.0");
	// inotify reports in order: the last change seen means the others were read before it.
	ASSERT_TRUE(runUntil(loop, [&] { return shared.url("app", 32) == in("One"); }));
	EXPECT_EQ(told, 2);
	// The directory made again, with a setting in it.
	choose("gtk-3.0", "settings.ini", "[Settings]\ngtk-icon-theme-name=Two\n");
	ASSERT_TRUE(runUntil(loop, [&] { return shared.url("app", 32) == in("Two"); }));
	EXPECT_EQ(told, 3);
}
