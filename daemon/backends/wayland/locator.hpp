#pragma once
// Where the compositor is, and when it (re)appears.
//
// The socket comes from WAYLAND_DISPLAY: qsd's own environment at start, else the systemd user
// manager's (org.freedesktop.systemd1 on the session bus, Manager.Environment), which is where
// `systemctl --user import-environment WAYLAND_DISPLAY` puts it once a compositor started after
// qsd. systemd sends no signal when that environment changes, so it is read at start and again
// on SIGHUP (`systemctl --user kill -s HUP qsd.service` after the import), asynchronously.
//
// While the socket is not there (no compositor yet, or it went away), an inotify watch on the
// socket's directory reports when a file of that name is created; nothing polls.

#include "../../dbus/bus.hpp"
#include "../../dbus/call_set.hpp"
#include "../../event_loop.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace qsd::wayland {

class Locator {
public:
	// onChanged: the socket path or desktop name changed (or was found), or the manager
	// answered and there is still no socket. onAppeared: a file with the socket's name was
	// created in its directory while watching.
	Locator(EventLoop& loop, BusConnection* sessionBus, std::function<void()> onChanged, std::function<void()> onAppeared);
	~Locator();
	Locator(const Locator&) = delete;
	Locator& operator=(const Locator&) = delete;

	// Reads qsd's environment; asks the systemd user manager when WAYLAND_DISPLAY is not there.
	void start();
	// Asks the systemd user manager again (SIGHUP). A value found there replaces the current
	// one; none leaves it as it is.
	void reread();
	// The session bus answered after start() (the daemon asks each bus before connecting), or
	// will not (nullptr): without a socket yet, the systemd user manager is asked now.
	void setBus(BusConnection* sessionBus);

	[[nodiscard]] const std::optional<std::string>& socket() const { return socket_; }
	[[nodiscard]] const std::string& desktop() const { return desktop_; }
	// Where the socket came from: "environment" or "systemd"; "" while unknown.
	[[nodiscard]] const std::string& source() const { return source_; }
	// Why there is no socket, for /daemon/backends/wayland/error.
	[[nodiscard]] std::string missingReason() const;

	// Watches the socket's directory for the socket (no-op when already watching the same
	// path). False when the directory cannot be watched (logged).
	bool watch();
	void unwatch();
	[[nodiscard]] bool watching() const { return static_cast<bool>(watchIo_); }

private:
	void askManager();
	void managerReplied(const std::vector<std::string>& environment);
	void onInotify();

	EventLoop& loop_;
	BusConnection* bus_;
	std::function<void()> onChanged_;
	std::function<void()> onAppeared_;
	std::optional<std::string> socket_;
	std::string desktop_;
	std::string source_;
	std::string managerError_;
	std::unique_ptr<sdbus::IProxy> manager_;
	dbus::CallSet calls_{"wayland"};   // the Environment read, one at a time
	bool askAgain_ = false;
	int inotifyFd_ = -1;
	std::string watchedPath_;
	EventSource watchIo_;
};

} // namespace qsd::wayland
