#pragma once
// The listening socket and the set of client sessions.

#include "../event_loop.hpp"
#include "../tree.hpp"
#include "client.hpp"
#include "dispatcher.hpp"
#include "send_batch.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <sys/types.h>

namespace qsd {

struct ServerOptions {
	std::string socketPath;      // empty: use the socket-activated fd
	int activatedFd = -1;        // from sd_listen_fds()
	size_t maxClients = 1024;
	ClientLimits client;
	// Every connection's outbound queue together, in bytes of memory (ClientSession::costOf).
	// Changes and events past it: the largest queues' change streams are dropped and
	// resynchronised, events dropped; answers past it: connections with answers waiting are not
	// read (docs/protocol.md, "Slow clients"). A thousand connections that never read cannot
	// take 1024 x 4 MiB.
	size_t maxQueuedBytesTotal = 8u << 20;
	// The subscription filters of all connections together.
	FilterLimits filters;
};

class Server {
public:
	Server(EventLoop& loop, Tree& tree, Dispatcher& dispatcher, ServerOptions options);
	~Server();
	Server(const Server&) = delete;
	Server& operator=(const Server&) = delete;

	// Binds (or adopts the activated fd) and starts accepting. Throws std::runtime_error.
	void listen();

	[[nodiscard]] Dispatcher& dispatcher() { return dispatcher_; }
	// Every session's subscriptions, grouped by their paths (a batch is serialized once per group).
	[[nodiscard]] FilterGroups& filterGroups() { return filterGroups_; }
	[[nodiscard]] size_t clientCount() const { return clients_.size(); }
	[[nodiscard]] const std::string& socketPath() const { return options_.socketPath; }
	[[nodiscard]] size_t maxClients() const { return options_.maxClients; }

	// Delivers an event notification to every client subscribed to its topic. An event never
	// overtakes the state written before it: while tree writes are pending (coalesced, or not
	// yet flushed), it waits for their flush and carries the revision that holds them.
	void emitEvent(const std::string& topic, const nlohmann::json& data);

	// Keeps a client's response line until pending tree writes are flushed (see
	// ClientSession::sendResponse); held lines keep their order with held events.
	void holdResponse(uint64_t client, std::string line, uint64_t ticket = 0);

	// Memory was freed in bulk (a client went, a big queue was written out, a flush removed
	// values from the tree). glibc keeps freed heap mapped, so RSS would stay at the peak of the
	// busiest moment; a second later, if more than 1 MiB of the heap is free, malloc_trim gives
	// the free pages back. At most once a second, and never while nothing happens.
	void heapFreed();

	// Removes a session after the current dispatch.
	void removeLater(uint64_t id);

	// The queues' budget together (ServerOptions::maxQueuedBytesTotal). Sessions report what they
	// queue and write out (`droppable`: changes and events). When the droppable bytes pass the
	// budget, queueGrew sheds the change streams of the largest queues until a quarter of it is
	// free again. Answers are never dropped: they only count towards overQueueBudget.
	void track(ClientSession* session);
	void untrack(ClientSession* session);
	void queueGrew(size_t bytes, bool droppable);
	void queueShrank(size_t bytes, size_t droppable);
	[[nodiscard]] bool overQueueBudget() const { return queued_ > options_.maxQueuedBytesTotal; }
	[[nodiscard]] bool droppableFull(size_t extra) const { return droppable_ + extra > options_.maxQueuedBytesTotal; }
	[[nodiscard]] size_t queuedBytes() const { return queued_; }

	// A session's first write while a batch of changes (or what waited for it: held answers
	// and events) is handed out: true when it is taken, to leave with the other sessions'
	// writes in one system call at the end of the flush (SendBatch); false: write now.
	bool writeLater(ClientSession& session);

	std::function<void(size_t clients)> onClientCountChanged;

	[[nodiscard]] std::shared_ptr<ClientSession> client(uint64_t id) const;

private:
	void onAccept();
	void reap();
	void deliverEvent(const std::string& topic, const nlohmann::json& data);
	void releaseHeld();
	void writeDeferred();
	void shed();

	EventLoop& loop_;
	Tree& tree_;
	Dispatcher& dispatcher_;
	ServerOptions options_;
	int listenFd_ = -1;
	int lockFd_ = -1;                  // <socket>.lock, flock()ed while this daemon has the path
	bool ownsSocketFile_ = false;
	dev_t socketDev_ = 0;              // the socket file bound, to remove only that one
	ino_t socketIno_ = 0;
	EventSource accept_;
	EventSource reaper_;
	EventSource trim_;
	uint64_t nextClient_ = 1;
	FilterGroups filterGroups_;   // outlives the sessions, whose subscriptions are its members
	std::map<uint64_t, std::shared_ptr<ClientSession>> clients_;
	std::vector<uint64_t> doomed_;
	// Events and responses waiting for the flush of pending tree writes, in the order sent.
	struct Held {
		uint64_t client = 0;       // 0: an event
		std::string topicOrLine;   // the event's topic, or the response line
		nlohmann::json data;       // the event's data
		uint64_t ticket = 0;       // a batch's answer (ClientSession::sendResponseLine)
	};
	std::vector<Held> held_;
	Tree::Subscription flushed_;
	SendBatch sender_;
	std::vector<ClientSession*> deferred_;   // sessions whose first write waits for the end of the flush
	bool releasing_ = false;                 // releaseHeld is running
	std::vector<ClientSession*> sessions_;   // every session, for shedding (unit tests make their own)
	size_t queued_ = 0;
	size_t droppable_ = 0;
	bool shedding_ = false;
	uint64_t lastShedLogUs_ = 0;
};

} // namespace qsd
