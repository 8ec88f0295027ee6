#include "locator.hpp"

#include "mapping.hpp"

#include "../../dbus/variant.hpp"
#include "../../log.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace qsd::wayland {

namespace {

constexpr const char* kSystemd = "org.freedesktop.systemd1";
constexpr const char* kSystemdPath = "/org/freedesktop/systemd1";
constexpr const char* kManagerIface = "org.freedesktop.systemd1.Manager";

std::string env(const char* name) {
	const char* v = std::getenv(name);
	return v ? v : "";
}

} // namespace

Locator::Locator(EventLoop& loop, BusConnection* sessionBus, std::function<void()> onChanged, std::function<void()> onAppeared)
    : loop_(loop), bus_(sessionBus), onChanged_(std::move(onChanged)), onAppeared_(std::move(onAppeared)) {}

Locator::~Locator() {
	unwatch();
	calls_.cancelAll();
}

void Locator::start() {
	desktop_ = env("XDG_CURRENT_DESKTOP");
	if (auto path = socketPath(env("WAYLAND_DISPLAY"), env("XDG_RUNTIME_DIR"))) {
		socket_ = path;
		source_ = "environment";
		onChanged_();
		return;
	}
	askManager();
}

void Locator::setBus(BusConnection* sessionBus) {
	if (bus_ == sessionBus) return;
	bus_ = sessionBus;
	if (bus_ && !socket_) askManager();
}

void Locator::reread() {
	log::info("wayland", "SIGHUP: reading WAYLAND_DISPLAY from the systemd user manager again");
	askManager();
}

std::string Locator::missingReason() const {
	std::string why = "WAYLAND_DISPLAY is not set in qsd's environment";
	if (!bus_) return why + " and there is no session bus to ask the systemd user manager";
	if (!managerError_.empty()) return why + "; the systemd user manager could not be asked (" + managerError_ + ")";
	return why + " nor in the systemd user manager's (import it there, then send qsd SIGHUP)";
}

void Locator::askManager() {
	if (!bus_) return;
	if (calls_.size()) {
		// One call at a time; a request made meanwhile asks once more after the answer.
		askAgain_ = true;
		return;
	}
	try {
		if (!manager_) manager_ = sdbus::createProxy(bus_->connection(), kSystemd, kSystemdPath);
		calls_.start("environment",
		             manager_->callMethodAsync("Get")
		                 .onInterface("org.freedesktop.DBus.Properties")
		                 .withArguments(std::string(kManagerIface), std::string("Environment")),
		             [this](const sdbus::Error* error, sdbus::Variant value) {
			            if (error) {
				            managerError_ = error->getName();
				            log::info("wayland", "cannot read the systemd user manager's environment: {}: {}",
				                      error->getName(), error->getMessage());
			            } else {
				            managerError_.clear();
				            auto environment = dbus::asStrings(value);
				            if (!environment) {
					            managerError_ = "Environment is not an array of strings";
					            log::warning("wayland", "the systemd user manager's Environment has the type '{}'; ignored",
					                         value.peekValueType());
				            } else {
					            managerReplied(*environment);
				            }
			            }
			            // Still nothing: the reason given for waiting may have changed.
			            if (!socket_) onChanged_();
			            if (askAgain_) {
				            askAgain_ = false;
				            askManager();
			            }
		            });
	} catch (const sdbus::Error& e) {
		managerError_ = e.getName();
		log::warning("wayland", "cannot ask the systemd user manager for its environment: {}", e.getMessage());
	}
}

void Locator::managerReplied(const std::vector<std::string>& environment) {
	auto display = environmentValue(environment, "WAYLAND_DISPLAY");
	auto runtime = environmentValue(environment, "XDG_RUNTIME_DIR").value_or(env("XDG_RUNTIME_DIR"));
	auto path = display ? socketPath(*display, runtime) : std::nullopt;
	if (!path) {
		log::debug("wayland", "the systemd user manager has no usable WAYLAND_DISPLAY");
		return;
	}
	auto desktop = environmentValue(environment, "XDG_CURRENT_DESKTOP").value_or(desktop_);
	if (path == socket_ && desktop == desktop_) return;
	log::info("wayland", "WAYLAND_DISPLAY from the systemd user manager: {}", *path);
	socket_ = path;
	desktop_ = desktop;
	source_ = "systemd";
	onChanged_();
}

bool Locator::watch() {
	if (!socket_) return false;
	if (watchIo_ && watchedPath_ == *socket_) return true;
	unwatch();
	auto slash = socket_->rfind('/');
	std::string dir = slash == 0 ? "/" : socket_->substr(0, slash);
	inotifyFd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (inotifyFd_ < 0) {
		log::warning("wayland", "cannot watch {} for the compositor: inotify_init1: {}", dir, std::strerror(errno));
		return false;
	}
	// IN_CREATE: bind() makes the socket; IN_MOVED_TO: a socket renamed into place.
	if (inotify_add_watch(inotifyFd_, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0) {
		log::warning("wayland", "cannot watch {} for the compositor: {}; it will not be noticed when it starts", dir,
		             std::strerror(errno));
		::close(inotifyFd_);
		inotifyFd_ = -1;
		return false;
	}
	watchedPath_ = *socket_;
	watchIo_ = loop_.addIo(inotifyFd_, EPOLLIN, [this](uint32_t) { onInotify(); }, "wayland-socket-watch");
	log::debug("wayland", "watching {} for {}", dir, watchedPath_.substr(slash + 1));
	return true;
}

void Locator::unwatch() {
	watchIo_.reset();
	if (inotifyFd_ >= 0) ::close(inotifyFd_);
	inotifyFd_ = -1;
	watchedPath_.clear();
}

void Locator::onInotify() {
	auto base = watchedPath_.substr(watchedPath_.rfind('/') + 1);
	bool seen = false;
	alignas(inotify_event) char buf[4096];
	for (;;) {
		ssize_t n = ::read(inotifyFd_, buf, sizeof buf);
		if (n <= 0) break;
		for (ssize_t off = 0; off < n;) {
			const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
			if (ev->len > 0 && base == ev->name) seen = true;
			off += ssize_t(sizeof(inotify_event) + ev->len);
		}
	}
	if (seen) onAppeared_();
}

} // namespace qsd::wayland
