#include "display.hpp"

#include "../../files.hpp"
#include "../../log.hpp"

#include <cerrno>
#include <cstring>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace qsd::wayland {

namespace {

std::string readComm(pid_t pid) {
	if (pid <= 0) return {};
	auto comm = readFile("/proc/" + std::to_string(pid) + "/comm", 4096).value_or("");
	return comm.substr(0, comm.find('\n'));
}

} // namespace

std::unique_ptr<Display> Display::connect(EventLoop& loop, const std::string& path,
                                          std::function<void(const LostReason&)> onLost) {
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	if (path.size() >= sizeof addr.sun_path) {
		errno = ENAMETOOLONG;
		return nullptr;
	}
	std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
	// Non-blocking: connect on a local socket then never waits for a stuck compositor (a full
	// backlog is EAGAIN), and libwayland only ever reads and writes with MSG_DONTWAIT anyway.
	int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) return nullptr;
	if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0) {
		int e = errno;
		::close(fd);
		errno = e;
		return nullptr;
	}
	ucred cred{};
	socklen_t len = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) cred.pid = 0;
	wl_display* display = wl_display_connect_to_fd(fd);
	if (!display) {
		int e = errno;
		::close(fd);   // wl_display_connect_to_fd keeps the fd only when it succeeds
		errno = e;
		return nullptr;
	}
	std::unique_ptr<Display> d(new Display(loop, display, std::move(onLost)));
	d->peerPid_ = cred.pid;
	d->peerCommand_ = readComm(cred.pid);
	return d;
}

Display::Display(EventLoop& loop, wl_display* display, std::function<void(const LostReason&)> onLost)
    : loop_(loop), display_(display), onLost_(std::move(onLost)) {
	io_ = loop_.addIo(wl_display_get_fd(display_), EPOLLIN, [this](uint32_t revents) { onIo(revents); }, "wayland",
	                  [this] { prepare(); });
}

Display::~Display() {
	// Pending callbacks are proxies of this display: destroyed before it.
	for (auto& [_, p]: syncs_) wl_callback_destroy(p->callback);
	syncs_.clear();
	io_.reset();
	reporter_.reset();
	wl_display_disconnect(display_);
}

void Display::onIo(uint32_t revents) {
	if (lost_) return;
	if (revents & EPOLLOUT) {
		if (wl_display_flush(display_) >= 0) {
			wantWrite_ = false;
			io_.setIoEvents(EPOLLIN);
		} else if (errno != EAGAIN && errno != EPIPE) {
			return checkError("flush");
		}
	}
	if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
	// Only this handler reads, right after preparing: no read is ever left prepared while
	// the loop sleeps. prepare_read fails only while events are queued; dispatch them first.
	while (wl_display_prepare_read(display_) != 0) {
		if (wl_display_dispatch_pending(display_) < 0) return checkError("dispatch");
	}
	// EPOLLHUP arrives with EPOLLIN: the read drains what is left (a protocol error message
	// comes last) and then reports EPIPE.
	if (wl_display_read_events(display_) < 0) return checkError("read");
	if (wl_display_dispatch_pending(display_) < 0) return checkError("dispatch");
}

void Display::prepare() {
	if (lost_) return;
	// Requests can be made while handling any other source (a client's action): flush them
	// before the loop sleeps.
	int n;
	while ((n = wl_display_dispatch_pending(display_)) > 0) {}
	if (n < 0) return checkError("dispatch");
	if (wl_display_flush(display_) < 0) {
		if (errno == EAGAIN) {
			// The socket is full: wait until it drains, then flush from onIo.
			if (!wantWrite_) {
				wantWrite_ = true;
				io_.setIoEvents(EPOLLIN | EPOLLOUT);
			}
		} else if (errno != EPIPE) {
			// EPIPE: the compositor closed; the io source reports the hang-up with whatever it
			// sent last (often a protocol error).
			checkError("flush");
		}
	} else if (wantWrite_) {
		wantWrite_ = false;
		io_.setIoEvents(EPOLLIN);
	}
}

void Display::checkError(const char* what) {
	int saved = errno;
	LostReason reason;
	int err = wl_display_get_error(display_);
	if (err == EPROTO) {
		const wl_interface* iface = nullptr;
		uint32_t id = 0;
		uint32_t code = wl_display_get_protocol_error(display_, &iface, &id);
		reason.protocolError = true;
		reason.message = fmt::format("protocol error {} on {}@{}", code, iface ? iface->name : "?", id);
	} else {
		if (err == 0) err = saved;
		reason.message = fmt::format("{} failed: {}", what, err ? std::strerror(err) : "connection closed");
	}
	fail(std::move(reason));
}

void Display::fail(LostReason reason) {
	if (lost_) return;
	lost_ = true;
	reason_ = std::move(reason);
	io_.setEnabled(SD_EVENT_OFF);
	// Reported from the next iteration: the owner tears everything down there, outside any
	// libwayland call and outside this source's own callback.
	reporter_ = loop_.addDefer(
	    [this] {
		    auto onLost = onLost_;   // the owner may destroy this Display from the callback
		    auto reason = reason_;
		    onLost(reason);
	    },
	    "wayland-lost");
}

void Display::sync(std::function<void()> done) {
	if (lost_) return;
	auto id = nextSync_++;
	auto p = std::make_unique<Pending>(Pending{this, id, wl_display_sync(display_), std::move(done)});
	if (!p->callback) return;
	static const wl_callback_listener listener = {.done = onSyncDone};
	wl_callback_add_listener(p->callback, &listener, p.get());
	syncs_.emplace(id, std::move(p));
}

void Display::onSyncDone(void* data, wl_callback*, uint32_t) noexcept {
	auto* p = static_cast<Pending*>(data);
	try {
		Display* self = p->display;
		auto it = self->syncs_.find(p->id);
		if (it == self->syncs_.end()) return;
		auto pending = std::move(it->second);
		self->syncs_.erase(it);
		wl_callback_destroy(pending->callback);
		if (pending->done) pending->done();
	} catch (const std::exception& e) {
		log::error("wayland", "sync callback failed: {}", e.what());
	}
}

} // namespace qsd::wayland
