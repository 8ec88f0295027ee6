#include "server.hpp"

#include "../log.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <malloc.h>
#include <stdexcept>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace qsd {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

sockaddr_un address(const std::string& path) {
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + path);
	std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
	return addr;
}

// True when a daemon already answers on `path` (then we must not steal its socket).
bool someoneListens(const std::string& path) {
	int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) return false;
	auto addr = address(path);
	bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
	::close(fd);
	return live;
}

} // namespace

Server::Server(EventLoop& loop, Tree& tree, Dispatcher& dispatcher, ServerOptions options)
    : loop_(loop), tree_(tree), dispatcher_(dispatcher), options_(std::move(options)), filterGroups_(tree, options_.filters),
      sender_(SendBatch::allowedByEnvironment()) {
	reaper_ = loop_.addDefer([this] { reap(); }, "client-reaper");
	reaper_.setEnabled(SD_EVENT_OFF);
	flushed_ = tree_.observeFlush([this] {
		releasing_ = true;
		releaseHeld();
		releasing_ = false;
		writeDeferred();
		// Objects that left the tree went from their backend too (a thousand PipeWire nodes of
		// an application that quit: 7 MiB), often from below what stays.
		if (tree_.lastFlushRemoved()) heapFreed();
	});
	trim_ = loop_.addIdleTimer(
	    [] {
		    // mallinfo2 only sums the free lists; trimming walks them and madvises pages.
		    auto free = ::mallinfo2().fordblks;
		    if (free < (1u << 20)) return;
		    ::malloc_trim(0);
		    log::debug("server", "heap trimmed ({} bytes were free)", free);
	    },
	    "heap-trim");
}

Server::~Server() {
	accept_.reset();
	clients_.clear();
	// Only a socket file we created is ours to remove (an activated one belongs to systemd), and
	// only while it is still the file we bound.
	struct stat st{};
	if (ownsSocketFile_ && ::stat(options_.socketPath.c_str(), &st) == 0 && st.st_dev == socketDev_ && st.st_ino == socketIno_)
		::unlink(options_.socketPath.c_str());
	if (listenFd_ >= 0) ::close(listenFd_);
	if (lockFd_ >= 0) ::close(lockFd_);   // last: a successor may take the path from now on
}

void Server::listen() {
	if (options_.activatedFd >= 0) {
		listenFd_ = options_.activatedFd;
		int flags = fcntl(listenFd_, F_GETFL);
		fcntl(listenFd_, F_SETFL, flags | O_NONBLOCK);
		log::info("server", "listening on the socket-activated fd {}", listenFd_);
	} else {
		const auto& path = options_.socketPath;
		auto slash = path.rfind('/');
		if (slash != std::string::npos && slash > 0) {
			auto dir = path.substr(0, slash);
			// The directory is private to the user: 0700, created if missing.
			if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) fail("cannot create " + dir);
		}
		// Checking that nobody listens and then binding is two steps: two qsd started at the same
		// moment (an exec line and the bus's activation of a notification server) both passed
		// the check, and the second unlinked the first's socket. The first then served nobody
		// while it held its place in the queues of the bus names qsd asks for. The path is taken
		// under an exclusive lock on a file beside it, held for the daemon's life.
		auto lockPath = path + ".lock";
		lockFd_ = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (lockFd_ < 0) fail("cannot open " + lockPath);
		if (::flock(lockFd_, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EWOULDBLOCK) throw std::runtime_error("another qsd is already listening on " + path + " (it holds " + lockPath + ")");
			fail("cannot lock " + lockPath);
		}
		if (someoneListens(path)) throw std::runtime_error("another qsd is already listening on " + path);
		::unlink(path.c_str());
		listenFd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (listenFd_ < 0) fail("socket");
		auto addr = address(path);
		// The socket is created 0600 (umask during bind), so no other user can connect at all.
		mode_t old = ::umask(0177);
		int r = ::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
		::umask(old);
		if (r < 0) fail("cannot bind " + path);
		ownsSocketFile_ = true;
		struct stat st{};
		if (::stat(path.c_str(), &st) == 0) {
			socketDev_ = st.st_dev;
			socketIno_ = st.st_ino;
		}
		// A full backlog makes a non-blocking connect() fail with EAGAIN: allow the kernel's
		// maximum, so a burst of clients (every bar of a session starting at once) is served.
		if (::listen(listenFd_, SOMAXCONN) < 0) fail("listen");
		log::info("server", "listening on {}", path);
	}
	accept_ = loop_.addIo(listenFd_, EPOLLIN, [this](uint32_t) { onAccept(); }, "accept");
}

void Server::onAccept() {
	for (;;) {
		int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EINTR) continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) log::warning("server", "accept failed: {}", std::strerror(errno));
			return;
		}
		ucred cred{};
		socklen_t len = sizeof cred;
		if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			log::warning("server", "refusing a connection: SO_PEERCRED failed: {}", std::strerror(errno));
			::close(fd);
			continue;
		}
		if (cred.uid != ::getuid()) {
			log::warning("server", "refusing a connection from uid {} (pid {}): qsd serves uid {} only", cred.uid, cred.pid, ::getuid());
			auto line = rpc::toLine(rpc::makeError(nullptr, {rpc::ErrorCode::PermissionDenied, "Permission denied: another user's daemon",
			                                                 {{"uid", cred.uid}}}));
			(void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
			::close(fd);
			continue;
		}
		if (clients_.size() >= options_.maxClients) {
			log::warning("server", "refusing a connection from pid {}: {} clients connected (the limit)", cred.pid, clients_.size());
			auto line = rpc::toLine(rpc::makeError(nullptr, {rpc::ErrorCode::LimitExceeded, "Too many connections",
			                                                 {{"limit", "connections"}, {"max", options_.maxClients}}}));
			(void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
			::close(fd);
			continue;
		}
		auto id = nextClient_++;
		auto session = std::make_shared<ClientSession>(*this, loop_, tree_, id, fd, cred, options_.client);
		session->start();
		clients_.emplace(id, std::move(session));
		log::debug("server", "client {} connected (pid {})", id, cred.pid);
		if (onClientCountChanged) onClientCountChanged(clients_.size());
	}
}

void Server::emitEvent(const std::string& topic, const nlohmann::json& data) {
	// As for answers (ClientSession::sendResponse): writes of this event wait for its batch to
	// end; writes of earlier events that a coalescing window holds are flushed now.
	if (tree_.pendingFresh()) {
		held_.push_back({0, topic, data});
		tree_.flushAfterDispatch();
		return;
	}
	if (tree_.pending()) tree_.flush();
	deliverEvent(topic, data);
}

void Server::holdResponse(uint64_t client, std::string line, uint64_t ticket) {
	held_.push_back({client, std::move(line), nullptr, ticket});
}

void Server::releaseHeld() {
	auto held = std::move(held_);
	held_.clear();
	for (auto& h: held) {
		if (h.client == 0) {
			deliverEvent(h.topicOrLine, h.data);
			continue;
		}
		// The client may have gone since: its answers go with it.
		auto it = clients_.find(h.client);
		if (it != clients_.end() && !it->second->closing()) it->second->deliverHeldResponse(std::move(h.topicOrLine), h.ticket);
	}
}

bool Server::writeLater(ClientSession& session) {
	if (!tree_.delivering() && !releasing_) return false;
	deferred_.push_back(&session);
	return true;
}

void Server::writeDeferred() {
	if (deferred_.empty()) return;
	if (deferred_.size() == 1) {
		// One subscriber (a desktop's usual case): its write as it was before batching, with
		// nothing allocated.
		ClientSession* only = deferred_.front();
		deferred_.clear();
		only->writeDeferred_ = false;
		only->writeSome();
		return;
	}
	// A session goes only in reap(), on a later iteration: none of these is destroyed meanwhile.
	std::vector<ClientSession*> sessions;
	sessions.swap(deferred_);
	std::vector<SendBatch::Write> writes;
	std::vector<size_t> writeOf(sessions.size(), SIZE_MAX);
	writes.reserve(sessions.size());
	for (size_t i = 0; i < sessions.size(); ++i) {
		// Taken once (ClientSession::enqueue): only here is it given back.
		sessions[i]->writeDeferred_ = false;
		SendBatch::Write w;
		if (!sessions[i]->headWrite(w)) continue;
		writeOf[i] = writes.size();
		writes.push_back(w);
	}
	sender_.send(writes);
	// Every head first moves past what was written; only then does each session go on, which
	// can run code that touches other queues (a resync after a drain flushes the tree, which may
	// shed), and a queue's head must not be dropped once bytes of it are in the socket.
	std::vector<char> more(sessions.size(), 1);
	for (size_t i = 0; i < sessions.size(); ++i)
		if (writeOf[i] != SIZE_MAX) more[i] = sessions[i]->advance(writes[writeOf[i]].result);
	for (size_t i = 0; i < sessions.size(); ++i) {
		// One session's failure (it can only be memory) must not leave the others' queues unwritten.
		try {
			sessions[i]->continueWriting(more[i] != 0);
		} catch (const std::exception& e) {
			log::error("server", "writing to client {} failed: {}", sessions[i]->id(), e.what());
		}
	}
	// The list's room is kept for the next batch (unless a nested flush took it meanwhile).
	if (deferred_.empty()) {
		sessions.clear();
		deferred_.swap(sessions);
	}
}

void Server::deliverEvent(const std::string& topic, const nlohmann::json& data) {
	for (auto& [id, c]: clients_)
		if (!c->closing() && c->wantsEvent(topic)) c->sendEvent(topic, data, tree_.revision());
}

void Server::heapFreed() {
	if (trim_.enabled()) return;
	trim_.setTime(loop_.now() + 1'000'000);
}

void Server::track(ClientSession* session) { sessions_.push_back(session); }

void Server::untrack(ClientSession* session) {
	sessions_.erase(std::remove(sessions_.begin(), sessions_.end(), session), sessions_.end());
	deferred_.erase(std::remove(deferred_.begin(), deferred_.end(), session), deferred_.end());
}

void Server::queueGrew(size_t bytes, bool droppable) {
	queued_ += bytes;
	if (!droppable) return;
	droppable_ += bytes;
	if (droppable_ > options_.maxQueuedBytesTotal && !shedding_) shed();
}

void Server::queueShrank(size_t bytes, size_t droppable) {
	queued_ -= std::min(bytes, queued_);
	droppable_ -= std::min(droppable, droppable_);
}

void Server::shed() {
	// Largest first: the connections that read least lose their queued changes (and get a
	// tree.resync once they catch up); a connection that keeps up is not touched.
	shedding_ = true;
	auto target = options_.maxQueuedBytesTotal / 4 * 3;
	auto order = sessions_;
	std::sort(order.begin(), order.end(),
	          [](const ClientSession* a, const ClientSession* b) { return a->droppableBytes() > b->droppableBytes(); });
	size_t before = droppable_, shed = 0;
	for (auto* s: order) {
		if (droppable_ <= target || s->droppableBytes() == 0) break;
		shed += s->shedChanges() > 0;
	}
	shedding_ = false;
	// Said at most every 10 s: the sessions' own warnings name who.
	if (uint64_t now = loop_.now(); now - lastShedLogUs_ >= 10'000'000 || lastShedLogUs_ == 0) {
		lastShedLogUs_ = now;
		log::warning("server", "the changes and events queued for clients hold {} KiB, over the {} KiB budget: changes queued for {} slow clients dropped, "
		             "resync follows ({} KiB left)",
		             before >> 10, options_.maxQueuedBytesTotal >> 10, shed, droppable_ >> 10);
	}
	// Freed in bulk: the pages go back to the system a second later.
	heapFreed();
}

void Server::removeLater(uint64_t id) {
	doomed_.push_back(id);
	reaper_.setEnabled(SD_EVENT_ONESHOT);
}

void Server::reap() {
	auto doomed = std::move(doomed_);
	doomed_.clear();
	for (auto id: doomed) clients_.erase(id);
	if (!doomed.empty()) heapFreed();
	if (onClientCountChanged) onClientCountChanged(clients_.size());
}

std::shared_ptr<ClientSession> Server::client(uint64_t id) const {
	auto it = clients_.find(id);
	return it == clients_.end() ? nullptr : it->second;
}

} // namespace qsd
