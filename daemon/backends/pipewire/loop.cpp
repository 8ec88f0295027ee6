#include "loop.hpp"

#include "../../log.hpp"

#include <pipewire/pipewire.h>
#include <spa/utils/result.h>

#include <sys/epoll.h>
#include <sys/inotify.h>

#include <cstring>

namespace qsd::pipewire {

PwLoop::PwLoop(EventLoop& loop, std::function<void()> afterIterate): afterIterate_(std::move(afterIterate)) {
	pw_init(nullptr, nullptr);
	loop_ = pw_loop_new(nullptr);
	if (!loop_) throw std::runtime_error(std::string("pw_loop_new failed: ") + std::strerror(errno));
	attach(loop, "pipewire-loop");
}

PwLoop::PwLoop(EventLoop& loop, pw_loop* adopted, const char* description): loop_(adopted), owned_(false) {
	attach(loop, description);
}

void PwLoop::attach(EventLoop& loop, const char* description) {
	// Enter once, from the thread that iterates (spa/support/loop.h): the loop then knows this
	// thread as its own, so pw_loop_invoke from here runs at once instead of waiting for a
	// thread. Left in the destructor.
	pw_loop_enter(loop_);
	entered_ = true;
	io_ = loop.addIo(pw_loop_get_fd(loop_), EPOLLIN, [this](uint32_t) {
		int r = pw_loop_iterate(loop_, 0);
		if (r < 0 && r != -EINTR) log::warning("pipewire", "pw_loop_iterate failed: {}", spa_strerror(r));
		if (afterIterate_) afterIterate_();
	}, description);
}

PwLoop::~PwLoop() {
	io_.reset();
	if (entered_) pw_loop_leave(loop_);
	if (loop_ && owned_) pw_loop_destroy(loop_);
}

SocketWatch::SocketWatch(EventLoop& loop, std::vector<SocketLocation> locations, std::function<void()> onAppeared)
    : loop_(loop), locations_(std::move(locations)), onAppeared_(std::move(onAppeared)) {}

void SocketWatch::arm() {
	if (armed()) return;
	for (const auto& l: locations_) {
		auto w = std::make_unique<Watch>(Watch{this, l.name});
		sd_event_source* s = nullptr;
		// IN_CREATE: bind() of a new socket; IN_MOVED_TO: a socket renamed into place;
		// IN_ATTRIB: a socket whose permissions change once it is ready.
		int r = sd_event_add_inotify(loop_.raw(), &s, l.dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR,
		                             &SocketWatch::onInotify, w.get());
		if (r < 0) {
			if (!warned_ && l.dir != "/run/pipewire")
				log::warning("pipewire", "cannot watch {} for PipeWire's socket: {}", l.dir, std::strerror(-r));
			continue;
		}
		sd_event_source_set_description(s, "pipewire-socket-watch");
		sources_.emplace_back(s);
		watches_.push_back(std::move(w));
	}
	warned_ = true;
}

void SocketWatch::disarm() {
	sources_.clear();
	watches_.clear();
}

int SocketWatch::onInotify(sd_event_source*, const struct inotify_event* event, void* userdata) noexcept {
	auto* w = static_cast<Watch*>(userdata);
	try {
		if (event->len == 0 || w->name != event->name) return 0;
		log::debug("pipewire", "{} appeared", w->name);
		// The callback may disarm (destroying this source): copy what we need first.
		auto cb = w->owner->onAppeared_;
		cb();
	} catch (const std::exception& e) {
		log::error("pipewire", "socket watch handler failed: {}", e.what());
	}
	return 0;
}

} // namespace qsd::pipewire
