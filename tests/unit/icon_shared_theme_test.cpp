// The daemon's one icon theme lookup (daemon/icons/shared_theme.hpp) on a real event loop: a
// change under the installed themes reaches every subscriber once, a subscriber that let go of
// its handle is not called, and a lookup made in a loop iteration sees a file created before it
// even when inotify's source has not run yet in that iteration.

#include "event_loop.hpp"
#include "icons/shared_theme.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <systemd/sd-event.h>

#include <chrono>
#include <functional>
#include <map>
#include <cstdlib>
#include <optional>
#include <string>

using namespace qsd;
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
	void set(const char* name, const std::string& value) {
		const char* old = std::getenv(name);
		saved.emplace(name, old ? std::optional<std::string>(old) : std::nullopt);
		::setenv(name, value.c_str(), 1);
	}
	std::string url(const char* file) { return "file://" + (t.path / "share/icons/hicolor/32x32/apps" / file).string(); }
};

// Runs the loop until `done` or 5 s.
template <typename F>
bool runUntil(EventLoop& loop, F done) {
	auto deadline = EventLoop::clock() + 5'000'000;
	while (!done() && EventLoop::clock() < deadline) sd_event_run(loop.raw(), 100'000);
	return done();
}

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
