#pragma once
// One client connection: reads NDJSON requests, dispatches them, and writes responses and
// notifications through a bounded outbound queue. Never blocks on the client.

#include "../event_loop.hpp"
#include "../tree.hpp"
#include "send_batch.hpp"
#include "subscription.hpp"

#include <qsd/protocol/framing.hpp>

#include <nlohmann/json.hpp>

#include <sys/epoll.h>
#include <sys/socket.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qsd {

class Server;

struct ClientLimits {
	size_t maxLineBytes = 1 << 20;            // longer request lines: error reply, line discarded
	// Outbound budget before change streams are dropped, in bytes of memory the queued lines
	// hold (their allocations, not only their text: ClientSession::costOf).
	size_t maxQueuedBytes = 4 << 20;
	size_t maxQueuedMessages = 8192;
	size_t maxSubscriptions = 64;
	size_t maxPathsPerSubscription = 256;
	size_t maxPathsPerConnection = 1024;      // of all its subscriptions together,
	size_t maxPathBytesPerConnection = 64 << 10;   // and their text
	size_t maxEventTopics = 64;
	size_t maxReadPerDispatch = 256 << 10;    // fairness between clients
	// Requests whose answer waits for something else (a D-Bus call out): at this many, the
	// connection is not read until half of them are answered.
	size_t maxCallsInFlight = 64;
};

class ClientSession: public std::enable_shared_from_this<ClientSession> {
public:
	using json = nlohmann::json;

	ClientSession(Server& server, EventLoop& loop, Tree& tree, uint64_t id, int fd, const ucred& peer,
	              const ClientLimits& limits);
	~ClientSession();
	ClientSession(const ClientSession&) = delete;
	ClientSession& operator=(const ClientSession&) = delete;

	void start();
	[[nodiscard]] uint64_t id() const { return id_; }
	[[nodiscard]] const ucred& peer() const { return peer_; }
	[[nodiscard]] std::weak_ptr<ClientSession> weak() { return weak_from_this(); }
	[[nodiscard]] bool closing() const { return closing_; }

	// Responses and other messages that must arrive: always queued. Over budget, the session
	// stops reading requests until the client catches up.
	// While tree writes are pending, a response waits for their flush (Server::holdResponse):
	// it leaves after the tree.changed of every write made before it, so a client whose
	// request changed the tree finds its mirror up to date when the answer arrives.
	void sendResponse(const json& message);
	// A response's text with its '\n'; `ticket`: a batch's answer (Responder::batchTicket), which
	// releases the subscriptions made in it once it is queued.
	void sendResponseLine(std::string line, uint64_t ticket = 0);
	void deliverHeldResponse(std::string line, uint64_t ticket);
	// The subscriptions made in the batch `ticket` send their notifications from now on.
	void releaseHeld(uint64_t ticket);
	// An event notification: dropped (and counted) when over budget.
	void sendEvent(const std::string& topic, const json& data, uint64_t revision);

	// tree.subscribe / tree.unsubscribe; throw rpc::RpcException on bad input.
	// Returns `into` with the result's JSON text appended (written from the tree: see
	// rpc::JsonWriter). `batch`: the ticket of the batch the request is in (0: none); the
	// subscription's notifications then wait for the batch's answer, which holds its id (a
	// client drops notifications of a subscription it does not know).
	std::string subscribe(std::vector<std::string> paths, uint64_t throttleMs, std::string into = {}, uint64_t batch = 0);
	void unsubscribe(uint64_t subscription);
	[[nodiscard]] size_t subscriptionCount() const { return subscriptions_.size(); }

	// events.subscribe: topic names, "prefix.*" or "*". Replaces the previous set.
	void setEventTopics(std::vector<std::string> topics);
	[[nodiscard]] bool wantsEvent(const std::string& topic) const;

	// Resources whose lifetime is this connection's (a profile hold): destroyed on disconnect.
	void attach(const std::string& key, std::shared_ptr<void> resource);
	bool detach(const std::string& key);

	// A request that was not answered while it was dispatched (its handler answers later), and
	// its answer (Dispatcher). At ClientLimits::maxCallsInFlight, reading stops until half of
	// them are answered: 100 000 tray.activate in a row had as many D-Bus calls out at once,
	// each a call into an application, and their answers past every budget.
	void callStarted();
	void callEnded();
	[[nodiscard]] size_t callsInFlight() const { return callsInFlight_; }
	[[nodiscard]] const ClientLimits& limits() const { return limits_; }

	// Closes after the current dispatch; reason is logged.
	void close(const std::string& reason);

	// Over the server's budget for all queues together (Server::queueGrew): this connection's
	// queued tree.changed are dropped and each stream it had is resynchronised once it has read
	// what is in its socket, as when its own budget overflows. The memory freed.
	size_t shedChanges();
	[[nodiscard]] size_t queuedBytes() const { return queuedBytes_; }
	// Of which changes and events: what may be dropped (then resynchronised or counted).
	[[nodiscard]] size_t droppableBytes() const { return droppableBytes_ + pendingBytes_; }
	// What a queued line costs: its allocation and the queue's bookkeeping.
	[[nodiscard]] static size_t costOf(const std::string& line);

	struct Stats {
		size_t queuedBytes;
		size_t queuedMessages;
		uint64_t droppedChanges;
		uint64_t resyncs;
	};
	[[nodiscard]] Stats stats() const;

private:
	struct Outgoing {
		std::string data;        // this session's own bytes, written after `shared`
		uint64_t subscription;   // 0: not part of a change stream
		// A batch's text that every subscriber of its paths queues (FilteredBatch::head); it
		// counts against each queue holding it, at its full size (its allocation).
		std::shared_ptr<const std::string> shared = {};
		size_t cost = 0;         // costOf(*this) when queued
		bool droppable = false;  // a change or an event (not an answer)
		[[nodiscard]] size_t size() const { return (shared ? shared->size() : 0) + data.size(); }
	};
	[[nodiscard]] static size_t costOf(const Outgoing& message);
	// Every change of the queue goes through these, so this connection's and the server's
	// counts stay right.
	void push(Outgoing message);
	std::deque<Outgoing>::iterator drop(std::deque<Outgoing>::iterator at);
	struct Subscription final: ChangeSink {
		Subscription(ClientSession& session, uint64_t id, uint64_t throttleUs)
		    : session(session), id(id), tail(FilteredBatch::tail(id)), throttleUs(throttleUs) {}
		void onChanges(const FilteredBatch& batch) override { session.onBatch(*this, batch); }

		ClientSession& session;
		uint64_t id;
		std::string tail;   // what completes a shared line for this subscription
		uint64_t throttleUs;
		FilterGroups::Membership membership;   // its filter, shared with the subscriptions of the same paths
		size_t paths = 0, pathBytes = 0;   // what it asked for
		// Throttled changes not sent yet, as the text of their operations (comma-separated): the
		// text each batch's filter made once (FilteredBatch::changes). Copies of the operations
		// as json, counted only by number (8192), held 250 MiB for one connection that never
		// read; the text is counted in bytes against this connection's and the server's budgets.
		std::string pending;
		size_t pendingOps = 0;
		size_t pendingCharged = 0;      // what chargePending last counted for it
		uint64_t pendingRevision = 0;
		uint64_t lastSentUs = 0;        // throttled streams only
		EventSource timer;
		bool resync = false;            // changes were dropped; a tree.resync follows the drain
		uint64_t heldUntil = 0;         // made in this batch (its ticket): changes wait in `pending` for its answer
		uint64_t syncedRevision = 0;    // the last resync's revision: batches up to it are in it
	};

	void onIo(uint32_t revents);
	void readSome();
	void writeSome();
	// Writing in steps, for the server's batch of first writes (Server::writeDeferred): the head
	// of the queue as one write (false: nothing to write); what a write of it did (bytes, or
	// -errno; false when writing stops there: blocked, partial or closed); then the rest.
	friend class Server;
	bool headWrite(SendBatch::Write& w);
	bool advance(ssize_t result);
	void continueWriting(bool more);
	void afterWrites();
	void updateIoEvents();
	bool overBudget(size_t extraBytes) const;
	void enqueue(std::string data, uint64_t subscription, bool droppable);
	void enqueue(Outgoing message);
	void deliverResponse(std::string line, uint64_t ticket = 0);
	void pauseIfOverBudget();
	void dispatchLine(std::string_view line);
	void noteQueueFreed();
	static constexpr size_t kBigQueue = 1 << 20;
	void onBatch(Subscription& sub, const FilteredBatch& batch);
	void sendChanges(Subscription& sub);
	void sendLine(Subscription& sub, Outgoing message);
	void overflow(Subscription& sub);
	// Counts sub.pending as it is now (after it grew or was emptied); growing may shed (Server).
	void chargePending(Subscription& sub);
	void clearPending(Subscription& sub);
	void onDrained();
	void sendLineTooLong();
	// Dispatches the lines held back while reading was paused, until it pauses again.
	void dispatchHeld();
	// A tree.resync or an eventsDropped notice waits for the socket to drain.
	[[nodiscard]] bool catchUpDue() const;

	Server& server_;
	EventLoop& loop_;
	Tree& tree_;
	uint64_t id_;
	int fd_;
	ucred peer_;
	ClientLimits limits_;
	LineReader reader_;
	EventSource io_;
	uint32_t ioEvents_ = EPOLLIN;   // what io_ waits for (enabled when not 0)
	// Lines of the last read that arrived after reading paused (at most one read's worth);
	// std::nullopt stands for a line that was too long.
	std::deque<std::optional<std::string>> held_;
	EventSource resume_;
	std::deque<Outgoing> queue_;
	size_t headOffset_ = 0;
	size_t answersHeld_ = 0;   // responses waiting in Server::holdResponse for a flush
	size_t heldBytes_ = 0;     // their size
	size_t peakQueuedBytes_ = 0;   // since the queue was last empty
	std::optional<uint64_t> requestWrites_;   // the tree's writeCount() when the request being dispatched began
	size_t queuedBytes_ = 0;
	size_t droppableBytes_ = 0;
	size_t pendingBytes_ = 0;   // the throttled subscriptions' pending text (droppable)
	bool closing_ = false;
	bool writeDeferred_ = false;   // the server writes this queue's head at the end of the flush
	bool readPaused_ = false;      // over its queue budget
	bool callsPaused_ = false;     // at maxCallsInFlight
	size_t callsInFlight_ = 0;
	[[nodiscard]] bool paused() const { return readPaused_ || callsPaused_; }
	bool eof_ = false;
	uint64_t nextSubscription_ = 1;
	size_t paths_ = 0, pathBytes_ = 0;   // of every subscription (ClientLimits::maxPathsPerConnection)
	std::map<uint64_t, std::unique_ptr<Subscription>> subscriptions_;
	std::vector<std::string> topics_;
	uint64_t droppedEvents_ = 0;
	uint64_t droppedChanges_ = 0;
	uint64_t resyncs_ = 0;
	std::map<std::string, std::shared_ptr<void>> resources_;
};

} // namespace qsd
