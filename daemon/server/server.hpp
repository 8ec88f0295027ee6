#pragma once
// The listening socket and the set of client sessions.

#include "../event_loop.hpp"
#include "../tree.hpp"
#include "client.hpp"
#include "dispatcher.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace qsd {

struct ServerOptions {
	std::string socketPath;      // empty: use the socket-activated fd
	int activatedFd = -1;        // from sd_listen_fds()
	size_t maxClients = 1024;
	ClientLimits client;
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

	// Delivers an event notification to every client subscribed to its topic. An event never
	// overtakes the state written before it: while tree writes are pending (coalesced, or not
	// yet flushed), it waits for their flush and carries the revision that holds them.
	void emitEvent(const std::string& topic, const nlohmann::json& data);

	// Keeps a client's response line until pending tree writes are flushed (see
	// ClientSession::sendResponse); held lines keep their order with held events.
	void holdResponse(uint64_t client, std::string line);

	// Memory was freed in bulk (a client went, or a big queue was written out). glibc keeps
	// freed heap mapped, so RSS would stay at the peak of the busiest moment; a second later,
	// if more than 1 MiB of the heap is free, malloc_trim gives the free pages back. At most
	// once a second.
	void heapFreed();

	// Removes a session after the current dispatch.
	void removeLater(uint64_t id);

	std::function<void(size_t clients)> onClientCountChanged;

	[[nodiscard]] std::shared_ptr<ClientSession> client(uint64_t id) const;

private:
	void onAccept();
	void reap();
	void deliverEvent(const std::string& topic, const nlohmann::json& data);
	void releaseHeld();

	EventLoop& loop_;
	Tree& tree_;
	Dispatcher& dispatcher_;
	ServerOptions options_;
	int listenFd_ = -1;
	bool ownsSocketFile_ = false;
	EventSource accept_;
	EventSource reaper_;
	EventSource trim_;
	bool trimArmed_ = false;
	uint64_t nextClient_ = 1;
	FilterGroups filterGroups_;   // outlives the sessions, whose subscriptions are its members
	std::map<uint64_t, std::shared_ptr<ClientSession>> clients_;
	std::vector<uint64_t> doomed_;
	// Events and responses waiting for the flush of pending tree writes, in the order sent.
	struct Held {
		uint64_t client = 0;       // 0: an event
		std::string topicOrLine;   // the event's topic, or the response line
		nlohmann::json data;       // the event's data
	};
	std::vector<Held> held_;
	Tree::Subscription flushed_;
};

} // namespace qsd
