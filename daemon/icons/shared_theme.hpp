#pragma once
// The daemon's one icon theme lookup, shared by every backend that shows icons (the tray's items
// and menus, notifications' app icons, Bluetooth devices, media players' desktop entries).
//
// One instance, not one per backend: the index of the installed themes is the same whatever size
// a backend draws at (each lookup names its size), and it is the largest thing a lookup keeps
// (Adwaita's and hicolor's together: about 0.3 MB of heap). One instance also means one inotify
// instance, one set of watches on the theme directories, and the kernel's cost of adding them (a
// stall of up to half a second at the first lookup on a machine with a large dentry cache) paid
// once.
//
// Nothing is made until a backend first asks: a daemon whose backends show no icon reads no
// theme and holds no inotify descriptor. When inotify reports a change under the installed
// themes, the indexes are dropped (every lookup from then on sees the change) and each
// subscriber is told, so it can resolve what it shows again. The user's choice of theme is
// followed the same way: when GTK's settings.ini or KDE's kdeglobals names another one, the
// lookup searches the new chain.

#include "icon_theme.hpp"

#include "../event_loop.hpp"

#include <sys/inotify.h>
#include <systemd/sd-event.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qsd::icons {

class SharedTheme {
public:
	explicit SharedTheme(EventLoop& loop);
	~SharedTheme();
	SharedTheme(const SharedTheme&) = delete;
	SharedTheme& operator=(const SharedTheme&) = delete;

	// The lookup itself, made (and its inotify descriptor added to the loop) at the first call.
	// What inotify reported before the call is taken in first (once per loop iteration), so a
	// lookup never answers from an index a change already made stale, whichever of the loop's
	// sources runs first.
	[[nodiscard]] IconTheme& theme();

	// The file:// URL of the theme's file for `name` at `size` pixels; nullopt when the theme
	// has none. A name only: an absolute path is not taken as a file here.
	[[nodiscard]] std::optional<std::string> url(const std::string& name, int size);

	// A number that changes whenever the installed themes changed (answers may then differ).
	[[nodiscard]] uint64_t generation() const { return generation_; }

	// `changed` runs after the installed themes changed (their indexes already dropped), for as
	// long as the returned handle lives.
	using Subscription = std::shared_ptr<std::function<void()>>;
	[[nodiscard]] Subscription onChange(std::function<void()> changed);

private:
	void readEvents();
	// The user's choice of theme (GTK's settings.ini, KDE's kdeglobals) followed with inotify
	// on their directories: another theme makes another chain, and every subscriber is told.
	void watchSettings();
	void watchSettingsDir(const std::string& dir);
	void settingsEvent(const std::string& dir, const inotify_event& event);
	void notify();
	void logChain(const std::string& source);   // which theme, from where, and its chain
	static int onSettingsEvent(sd_event_source* source, const inotify_event* event, void* userdata) noexcept;

	EventLoop& loop_;
	std::unique_ptr<IconTheme> theme_;
	EventSource watch_;
	std::vector<std::pair<std::string, std::string>> settings_;   // {directory, file name}
	// sd-event's inotify sources on the settings' directories, by directory.
	struct SettingsDir {
		SharedTheme* owner;
		std::string dir;
		EventSource source;
	};
	std::map<std::string, std::unique_ptr<SettingsDir>> settingsDirs_;
	uint64_t drained_ = 0;   // the loop iteration whose inotify events were last read
	std::vector<std::weak_ptr<std::function<void()>>> subscribers_;
	uint64_t generation_ = 1;
};

} // namespace qsd::icons
