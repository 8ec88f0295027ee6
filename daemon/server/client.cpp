#include "client.hpp"

#include "../log.hpp"
#include "server.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

namespace qsd {

using json = nlohmann::json;
using rpc::ErrorCode;

ClientSession::ClientSession(Server& server, EventLoop& loop, Tree& tree, uint64_t id, int fd, const ucred& peer,
                             const ClientLimits& limits)
    : server_(server), loop_(loop), tree_(tree), id_(id), fd_(fd), peer_(peer), limits_(limits),
      reader_(limits.maxLineBytes) {
	server_.track(this);
}

ClientSession::~ClientSession() {
	server_.queueShrank(queuedBytes_ + pendingBytes_, droppableBytes_ + pendingBytes_);
	server_.untrack(this);
	io_.reset();
	resume_.reset();
	subscriptions_.clear();
	// Released outside the map (a release may reach back into this session's map).
	auto resources = std::move(resources_);
	resources.clear();
	if (fd_ >= 0) ::close(fd_);
}

void ClientSession::start() {
	io_ = loop_.addIo(fd_, EPOLLIN, [this](uint32_t revents) { onIo(revents); }, "client");
	resume_ = loop_.addDefer([this] {
		auto self = shared_from_this();
		dispatchHeld();
	}, "client-resume");
	resume_.setEnabled(SD_EVENT_OFF);
}

void ClientSession::onIo(uint32_t revents) {
	// Keep this session alive while its own handlers run (a request may close it).
	auto self = shared_from_this();
	if (revents & EPOLLOUT) writeSome();
	if (closing_) return;
	if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) readSome();
}

void ClientSession::readSome() {
	char buf[64 << 10];
	size_t total = 0;
	while (!closing_ && !paused() && held_.empty() && total < limits_.maxReadPerDispatch) {
		ssize_t n = ::read(fd_, buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR) continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) return;
			close(fmt::format("read failed: {}", std::strerror(errno)));
			return;
		}
		if (n == 0) {
			eof_ = true;
			if (reader_.pending() > 0) log::debug("server", "client {} closed with a partial request line", id_);
			// Answers still queued, or waiting for a flush, are written before closing.
			if (queue_.empty() && answersHeld_ == 0) close("disconnected");
			else updateIoEvents();
			return;
		}
		total += size_t(n);
		reader_.feed(
		    std::string_view(buf, size_t(n)),
		    [this](std::string_view line) {
			    if (closing_) return;
			    // Over budget since a previous line of this read: the rest waits until the client
			    // has read its answers. Without this, one read of small requests with big answers
			    // would queue thousands of answers before the pause takes effect.
			    if (paused() || !held_.empty()) held_.emplace_back(std::string(line));
			    else dispatchLine(line);
		    },
		    [this] {
			    if (paused() || !held_.empty()) held_.emplace_back(std::nullopt);
			    else sendLineTooLong();
		    });
		// What a client sends can be a secret (network.answerSecrets' Wi-Fi password): the read
		// buffer, which nothing else writes over until the next request, is not left holding it.
		explicit_bzero(buf, size_t(n));
		// A short read emptied the socket: another read would only say EAGAIN (one wasted
		// system call per wake-up). The source is level-triggered, so more data wakes us again.
		if (size_t(n) < sizeof buf) return;
	}
}

void ClientSession::dispatchLine(std::string_view line) {
	requestWrites_ = tree_.writeCount();
	server_.dispatcher().dispatch(*this, line);
	requestWrites_.reset();
}

void ClientSession::sendLineTooLong() {
	sendResponse(rpc::makeError(nullptr, {ErrorCode::InvalidRequest, "Invalid Request: line too long",
	                                      {{"limit", "lineBytes"}, {"max", limits_.maxLineBytes}}}));
}

void ClientSession::dispatchHeld() {
	while (!held_.empty() && !paused() && !closing_) {
		auto line = std::move(held_.front());
		held_.pop_front();
		if (line) dispatchLine(*line);
		else sendLineTooLong();
	}
	if (closing_) return;
	if (eof_ && held_.empty() && queue_.empty() && answersHeld_ == 0) {
		close("disconnected");
		return;
	}
	updateIoEvents();
}

bool ClientSession::overBudget(size_t extraBytes) const {
	// Answers held for a flush count: they are this client's, queued a moment later.
	return queuedBytes_ + heldBytes_ + pendingBytes_ + extraBytes > limits_.maxQueuedBytes ||
	       queue_.size() + answersHeld_ + 1 > limits_.maxQueuedMessages;
}

size_t ClientSession::costOf(const std::string& line) {
	// The string's buffer (its capacity and terminator: lines grown by appending hold up to
	// twice their length), malloc's header, and the queue's entry. Counting only the text once
	// let real memory reach 1.6 times the budget.
	return line.capacity() + 1 + 16 + sizeof(Outgoing);
}

size_t ClientSession::costOf(const Outgoing& message) {
	// A shared batch text counts in full against every queue that holds it: what a slow client
	// may cost is then what it cost when each had its own copy, and is cut to tree.resync alike.
	return costOf(message.data) + (message.shared ? message.shared->capacity() + 1 + 16 : 0);
}

void ClientSession::push(Outgoing message) {
	message.cost = costOf(message);
	size_t cost = message.cost;
	bool droppable = message.droppable;
	queuedBytes_ += cost;
	if (droppable) droppableBytes_ += cost;
	peakQueuedBytes_ = std::max(peakQueuedBytes_, queuedBytes_);
	queue_.push_back(std::move(message));
	// Last: over the server's budget, this may drop queued changes, this connection's included.
	server_.queueGrew(cost, droppable);
}

std::deque<ClientSession::Outgoing>::iterator ClientSession::drop(std::deque<Outgoing>::iterator at) {
	queuedBytes_ -= at->cost;
	if (at->droppable) droppableBytes_ -= at->cost;
	server_.queueShrank(at->cost, at->droppable ? at->cost : 0);
	return queue_.erase(at);
}

void ClientSession::enqueue(std::string data, uint64_t subscription, bool droppable) {
	enqueue(Outgoing{std::move(data), subscription, {}, 0, droppable});
}

void ClientSession::enqueue(Outgoing message) {
	if (closing_) return;
	bool wasEmpty = queue_.empty();
	push(std::move(message));
	// Taken by the server already: written at the end of the flush (EPOLLOUT is of no use before).
	if (writeDeferred_) return;
	if (!wasEmpty) {
		updateIoEvents();
		return;
	}
	// Written at once: most messages leave in this call, without waiting for EPOLLOUT. A batch
	// of changes handed to many subscribers is written at the end of the flush, every
	// subscriber's first write in one system call.
	if (server_.writeLater(*this)) {
		writeDeferred_ = true;
		return;
	}
	writeSome();
}

void ClientSession::sendResponse(const json& message) { sendResponseLine(rpc::toLine(message)); }

void ClientSession::sendResponseLine(std::string line, uint64_t ticket) {
	// Whether writes of the event being handled are pending: for an answer given while its
	// request is dispatched, whether that request wrote; for one given later (an action that
	// completes on a D-Bus reply), whether anything was written since the last flush chance.
	bool ownWrites = requestWrites_ ? tree_.pending() && tree_.writeCount() != *requestWrites_ : tree_.pendingFresh();
	if (ownWrites) {
		// Their batch is complete only at the end of the dispatch, when the loop's
		// after-dispatch hook flushes it; the answer leaves right after that batch's tree.changed.
		++answersHeld_;
		heldBytes_ += costOf(line);
		server_.holdResponse(id_, std::move(line), ticket);
		tree_.flushAfterDispatch();
		pauseIfOverBudget();
		return;
	}
	// Writes of earlier events (a coalescing window holds them, or they were made outside a
	// dispatch and wait for the defer source): their batches are complete, and the answer need not wait.
	if (tree_.pending()) tree_.flush();
	deliverResponse(std::move(line), ticket);
}

void ClientSession::deliverHeldResponse(std::string line, uint64_t ticket) {
	--answersHeld_;
	heldBytes_ -= costOf(line);
	deliverResponse(std::move(line), ticket);
}

void ClientSession::deliverResponse(std::string line, uint64_t ticket) {
	enqueue(std::move(line), 0, false);
	if (ticket) releaseHeld(ticket);
	pauseIfOverBudget();
}

void ClientSession::releaseHeld(uint64_t ticket) {
	for (auto& [id, sub]: subscriptions_) {
		if (sub->heldUntil != ticket) continue;
		sub->heldUntil = 0;
		// Dropped meanwhile: the resync follows the drain (onDrained), after the answer.
		if (sub->resync || sub->pending.empty()) continue;
		sendChanges(*sub);
	}
	if (catchUpDue()) updateIoEvents();
}

void ClientSession::pauseIfOverBudget() {
	// Answers are never dropped: past its own budget, or past the server's while it has answers
	// waiting, a connection is not read until it catches up.
	if (!closing_ && !readPaused_ && (overBudget(0) || (server_.overQueueBudget() && !queue_.empty()))) {
		log::warning("server", "client {} is not reading its answers ({} bytes queued), pausing its requests", id_,
		             queuedBytes_ + heldBytes_);
		readPaused_ = true;
		updateIoEvents();
	}
}

void ClientSession::sendEvent(const std::string& topic, const json& data, uint64_t revision) {
	auto line = rpc::toLine(rpc::makeNotification("event", {{"topic", topic}, {"data", data}, {"revision", revision}}));
	if (overBudget(costOf(line)) || server_.droppableFull(costOf(line))) {
		++droppedEvents_;
		return;
	}
	enqueue(std::move(line), 0, true);
}

bool ClientSession::headWrite(SendBatch::Write& w) {
	if (closing_ || queue_.empty()) return false;
	const auto& head = queue_.front();
	// The shared part and this session's own bytes, in one system call.
	w.fd = fd_;
	w.iovCount = 0;
	size_t skip = headOffset_;
	for (std::string_view part: {head.shared ? std::string_view(*head.shared) : std::string_view(), std::string_view(head.data)}) {
		if (skip >= part.size()) {
			skip -= part.size();
			continue;
		}
		w.iov[w.iovCount++] = {const_cast<char*>(part.data() + skip), part.size() - skip};
		skip = 0;
	}
	return true;
}

bool ClientSession::advance(ssize_t result) {
	if (result == -EINTR) return true;
	if (result < 0) {
		if (result == -EAGAIN || result == -EWOULDBLOCK) return false;
		// The peer went away while we wrote: an ordinary disconnect.
		if (result == -EPIPE || result == -ECONNRESET) close("disconnected");
		else close(fmt::format("write failed: {}", std::strerror(int(-result))));
		return false;
	}
	headOffset_ += size_t(result);
	if (headOffset_ < queue_.front().size()) return false;
	headOffset_ = 0;
	drop(queue_.begin());
	return true;
}

void ClientSession::continueWriting(bool more) {
	if (closing_) return;
	if (more) writeSome();
	else afterWrites();
}

void ClientSession::writeSome() {
	while (!closing_ && !queue_.empty()) {
		SendBatch::Write w;
		headWrite(w);
		msghdr msg{};
		msg.msg_iov = w.iov;
		msg.msg_iovlen = w.iovCount;
		ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (!advance(n < 0 ? -errno : n)) break;
	}
	if (closing_) return;
	afterWrites();
}

void ClientSession::afterWrites() {
	if (queue_.empty()) {
		noteQueueFreed();
		onDrained();
	}
	if (readPaused_ && queuedBytes_ <= limits_.maxQueuedBytes / 2 && queue_.size() <= limits_.maxQueuedMessages / 2) {
		readPaused_ = false;
		log::info("server", "client {} caught up, reading its requests again", id_);
		if (!held_.empty() && !paused()) resume_.setEnabled(SD_EVENT_ONESHOT);
	}
	if (eof_ && queue_.empty() && held_.empty() && answersHeld_ == 0) {
		close("disconnected");
		return;
	}
	updateIoEvents();
}

void ClientSession::updateIoEvents() {
	if (closing_ || !io_) return;
	uint32_t events = 0;
	if (!paused() && !eof_ && held_.empty()) events |= EPOLLIN;
	// Dropped changes are resent as a snapshot once the client has read what it was sent:
	// wait for the socket to become writable even when nothing else is queued.
	if (!queue_.empty() || catchUpDue()) events |= EPOLLOUT;
	// Called after every write: most of the time nothing changes, and sd-event need not know.
	if (events == ioEvents_) return;
	ioEvents_ = events;
	io_.setIoEvents(events);
	io_.setEnabled(events ? SD_EVENT_ON : SD_EVENT_OFF);
}

bool ClientSession::catchUpDue() const {
	if (droppedEvents_ > 0) return true;
	for (const auto& [id, sub]: subscriptions_)
		if (sub->resync && !sub->heldUntil) return true;
	return false;
}

void ClientSession::onDrained() {
	// Everything queued has been written: now is when a lagging subscriber catches up.
	bool any = false;
	for (auto& [id, sub]: subscriptions_) any |= sub->resync && !sub->heldUntil;
	if (!any && droppedEvents_ == 0) return;   // the usual case: nothing to catch up on
	if (any) tree_.flush();
	for (auto& [id, sub]: subscriptions_) {
		// One made in a batch not answered yet resyncs after the answer (releaseHeld).
		if (!sub->resync || sub->heldUntil) continue;
		sub->resync = false;
		clearPending(*sub);
		sub->syncedRevision = tree_.revision();
		++resyncs_;
		// What rpc::toLine(rpc::makeNotification("tree.resync", {...})) writes, with the snapshot
		// written from the tree (subscribe, below).
		std::string line;
		rpc::JsonWriter out(line);
		out.raw(R"({"jsonrpc":"2.0","method":"tree.resync","params":{"revision":)").value(tree_.revision());
		out.raw(R"(,"snapshot":)");
		sub->membership.filter().writeSnapshot(tree_.root(), out);
		out.raw(R"(,"subscription":)").value(id).raw("}}\n");
		// Not droppable, as an answer is not: the client has read everything and is owed it.
		// Dropped when it passed the server's budget by itself (a subtree of 9 MB), it was built
		// again at the next EPOLLOUT and dropped again, for good: qsd spun at a full core and
		// the subscriber got nothing. It may still give way to a newer one (overflow) until
		// its first bytes are written, which writeSome() below does at once.
		push(Outgoing{std::move(line), id, {}, 0, false});
	}
	if (droppedEvents_ > 0 && queue_.size() < limits_.maxQueuedMessages) {
		auto line = rpc::toLine(rpc::makeNotification(
		    "event", {{"topic", "qsd.eventsDropped"}, {"data", {{"count", droppedEvents_}}}, {"revision", tree_.revision()}}));
		droppedEvents_ = 0;
		push(Outgoing{std::move(line), 0, {}, 0, true});
	}
	if (!queue_.empty()) writeSome();
}

std::string ClientSession::subscribe(std::vector<std::string> paths, uint64_t throttleMs, std::string into, uint64_t batch) {
	if (subscriptions_.size() >= limits_.maxSubscriptions)
		throw rpc::RpcException(ErrorCode::LimitExceeded, "Too many subscriptions on this connection",
		                        {{"limit", "subscriptions"}, {"max", limits_.maxSubscriptions}});
	if (paths.size() > limits_.maxPathsPerSubscription)
		throw rpc::RpcException(ErrorCode::LimitExceeded, "Too many paths in one subscription",
		                        {{"limit", "paths"}, {"max", limits_.maxPathsPerSubscription}});
	// Each path costs memory and a comparison with every change for as long as it is subscribed:
	// 64 subscriptions of 256 paths of 4 KB were 200 MiB for one connection (FilterGroups
	// bounds what all connections together may cost).
	size_t bytes = 0;
	for (const auto& p: paths) bytes += p.size();
	if (paths_ + paths.size() > limits_.maxPathsPerConnection)
		throw rpc::RpcException(ErrorCode::LimitExceeded, "Too many paths subscribed on this connection",
		                        {{"limit", "connectionPaths"}, {"max", limits_.maxPathsPerConnection}});
	if (pathBytes_ + bytes > limits_.maxPathBytesPerConnection)
		throw rpc::RpcException(ErrorCode::LimitExceeded, "Too many bytes of paths subscribed on this connection",
		                        {{"limit", "connectionPathBytes"}, {"max", limits_.maxPathBytesPerConnection}});
	// Pending writes become a batch of their own first, so the snapshot and the revision agree.
	tree_.flush();
	auto id = nextSubscription_++;
	auto sub = std::make_unique<Subscription>(*this, id, throttleMs * 1000);
	// In a batch, later members' writes are flushed before the batch answers (every answer
	// follows the writes made before it): the notifications wait for the answer with the id.
	sub->heldUntil = batch;
	sub->paths = paths.size();
	sub->pathBytes = bytes;
	// Registered before the snapshot is read; nothing can change in between (one thread).
	sub->membership = server_.filterGroups().join(std::move(paths), *sub);
	paths_ += sub->paths;
	pathBytes_ += sub->pathBytes;
	// The result's text, written from the tree: a json holding the snapshot would be a copy of
	// all of it that the subscription asked for, made and freed per subscriber (JsonWriter).
	std::string result = std::move(into);
	rpc::JsonWriter out(result);
	out.raw(R"({"epoch":)").value(tree_.epoch()).raw(R"(,"revision":)").value(tree_.revision()).raw(R"(,"snapshot":)");
	sub->membership.filter().writeSnapshot(tree_.root(), out);
	out.raw(R"(,"subscription":)").value(id).raw("}");
	subscriptions_.emplace(id, std::move(sub));
	return result;
}

void ClientSession::unsubscribe(uint64_t subscription) {
	auto it = subscriptions_.find(subscription);
	if (it == subscriptions_.end())
		throw rpc::RpcException(ErrorCode::NotFound, "No such subscription", {{"param", "subscription"}, {"subscription", subscription}});
	paths_ -= it->second->paths;
	pathBytes_ -= it->second->pathBytes;
	clearPending(*it->second);
	subscriptions_.erase(it);
	// Queued changes of that stream are of no use any more, except a half-written one.
	for (auto q = queue_.begin(); q != queue_.end();) {
		if (q->subscription == subscription && !(q == queue_.begin() && headOffset_ > 0)) q = drop(q);
		else ++q;
	}
}

void ClientSession::onBatch(Subscription& sub, const FilteredBatch& batch) {
	// A resync sent while this batch was being delivered (to another of this client's
	// subscriptions) already holds it: sending it again would repeat a revision.
	if (closing_ || sub.resync || batch.revision() <= sub.syncedRevision) return;
	sub.pendingRevision = batch.revision();
	if (sub.throttleUs == 0 && !sub.heldUntil) {
		// The batch's text is shared with every subscriber of the same paths; only the id is ours.
		sendLine(sub, {sub.tail, sub.id, batch.head()});
		return;
	}
	if (!sub.pending.empty()) sub.pending += ',';
	sub.pending += batch.changes();
	sub.pendingOps += batch.selection().ops.size();
	chargePending(sub);
	if (sub.resync) return;   // over the server's budget, shed
	// A throttled stream that piles up more than a snapshot is worth, or more than this
	// connection may have queued, becomes a resync.
	if (sub.pendingOps > limits_.maxQueuedMessages || overBudget(0)) {
		overflow(sub);
		return;
	}
	if (sub.heldUntil) return;   // sent with its batch's answer (releaseHeld)
	if (sub.timer) return;   // already due
	uint64_t now = loop_.now();
	uint64_t due = sub.lastSentUs + sub.throttleUs;
	if (due <= now) {
		sendChanges(sub);
		return;
	}
	auto* raw = &sub;
	sub.timer = loop_.addIdleTimer([this, raw] {
		raw->timer.reset();
		if (!raw->pending.empty()) sendChanges(*raw);
	}, "subscription-throttle");
	sub.timer.setTime(due);
}

void ClientSession::sendChanges(Subscription& sub) {
	// A throttled stream's changes span several batches: serialized on their own, in the same
	// form as FilteredBatch::head() and tail().
	std::string line = R"({"jsonrpc":"2.0","method":"tree.changed","params":{"changes":[)";
	line += sub.pending;
	line += ']';
	clearPending(sub);
	line += R"(,"revision":)";
	line += std::to_string(sub.pendingRevision);
	line += R"(,"subscription":)";
	line += sub.tail;
	sub.lastSentUs = loop_.now();
	sendLine(sub, {std::move(line), sub.id});
}

void ClientSession::sendLine(Subscription& sub, Outgoing message) {
	if (overBudget(costOf(message))) {
		overflow(sub);
		return;
	}
	message.droppable = true;
	enqueue(std::move(message));
}

void ClientSession::overflow(Subscription& sub) {
	if (!sub.resync) {
		log::warning("server", "client {} reads too slowly ({} bytes queued): dropping changes of subscription {}, resync follows",
		             id_, queuedBytes_, sub.id);
	}
	sub.resync = true;
	clearPending(sub);
	sub.timer.reset();
	++droppedChanges_;
	for (auto q = queue_.begin(); q != queue_.end();) {
		if (q->subscription == sub.id && !(q == queue_.begin() && headOffset_ > 0)) q = drop(q);
		else ++q;
	}
	// The resync is sent once the client has read what is already in its socket, not now:
	// the socket is full, and a snapshot queued now would be dropped by the next overflow
	// (one snapshot per overflow instead of one per drain).
	updateIoEvents();
}

size_t ClientSession::shedChanges() {
	size_t before = queuedBytes_ + pendingBytes_;
	for (auto& entry: subscriptions_) {
		auto id = entry.first;
		bool queued = std::any_of(queue_.begin(), queue_.end(), [id](const Outgoing& o) { return o.subscription == id; });
		if (queued || !entry.second->pending.empty()) overflow(*entry.second);
	}
	return before - queuedBytes_ - pendingBytes_;
}

void ClientSession::chargePending(Subscription& sub) {
	size_t now = sub.pending.empty() ? 0 : sub.pending.capacity() + 1 + 16;
	size_t was = std::exchange(sub.pendingCharged, now);
	if (now < was) {
		pendingBytes_ -= was - now;
		server_.queueShrank(was - now, was - now);
	} else if (now > was) {
		pendingBytes_ += now - was;
		server_.queueGrew(now - was, true);   // last: over the server's budget, this sheds
	}
}

void ClientSession::clearPending(Subscription& sub) {
	std::string().swap(sub.pending);
	sub.pendingOps = 0;
	chargePending(sub);
}

void ClientSession::setEventTopics(std::vector<std::string> topics) {
	if (topics.size() > limits_.maxEventTopics)
		throw rpc::RpcException(ErrorCode::LimitExceeded, "Too many topics", {{"limit", "topics"}, {"max", limits_.maxEventTopics}});
	topics_ = std::move(topics);
}

bool ClientSession::wantsEvent(const std::string& topic) const {
	for (const auto& t: topics_) {
		if (t == "*" || t == topic) return true;
		if (t.size() >= 2 && t.compare(t.size() - 2, 2, ".*") == 0 && topic.size() > t.size() - 1 &&
		    topic.compare(0, t.size() - 1, t, 0, t.size() - 1) == 0)
			return true;
	}
	return false;
}

// A resource's destruction may call back into its owner, which may detach others of this
// session's resources: each one is taken out of the map before it is destroyed.
void ClientSession::attach(const std::string& key, std::shared_ptr<void> resource) {
	std::shared_ptr<void> old;
	if (auto it = resources_.find(key); it != resources_.end()) old = std::exchange(it->second, std::move(resource));
	else resources_.emplace(key, std::move(resource));
}

bool ClientSession::detach(const std::string& key) {
	auto it = resources_.find(key);
	if (it == resources_.end()) return false;
	auto resource = std::move(it->second);
	resources_.erase(it);
	return true;
}

void ClientSession::callStarted() {
	if (++callsInFlight_ < limits_.maxCallsInFlight || callsPaused_ || closing_) return;
	log::warning("server", "client {} has {} requests waiting for their answers, pausing its requests", id_, callsInFlight_);
	callsPaused_ = true;
	updateIoEvents();
}

void ClientSession::callEnded() {
	if (callsInFlight_ > 0) --callsInFlight_;
	if (!callsPaused_ || callsInFlight_ > limits_.maxCallsInFlight / 2) return;
	callsPaused_ = false;
	log::info("server", "client {} has {} requests waiting, reading its requests again", id_, callsInFlight_);
	if (closing_) return;
	if (!held_.empty() && !paused()) resume_.setEnabled(SD_EVENT_ONESHOT);
	updateIoEvents();
}

void ClientSession::close(const std::string& reason) {
	if (closing_) return;
	closing_ = true;
	io_.setEnabled(SD_EVENT_OFF);
	if (reason == "disconnected") log::debug("server", "client {} {}", id_, reason);
	else log::info("server", "closing client {}: {}", id_, reason);
	server_.removeLater(id_);
}

void ClientSession::noteQueueFreed() {
	// A client that let megabytes queue up (a slow reader) leaves that much free heap behind
	// when it catches up (when it goes, Server::reap notes it).
	if (peakQueuedBytes_ >= kBigQueue) server_.heapFreed();
	peakQueuedBytes_ = queuedBytes_;
}

ClientSession::Stats ClientSession::stats() const { return {queuedBytes_, queue_.size(), droppedChanges_, resyncs_}; }

} // namespace qsd
