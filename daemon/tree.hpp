#pragma once
// The normalized object tree: one JSON document addressed by JSON Pointers. Backends write; the
// writes of one loop dispatch are coalesced and flushed as its handler returns, as one batch with one
// new revision, delivered to observers as an RFC 6902 patch.

#include "event_loop.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

namespace qsd {

class Tree {
public:
	using json = nlohmann::json;
	// revision, patch (an array of add/replace/remove operations with absolute paths)
	using Observer = std::function<void(uint64_t revision, const json& patch)>;

	// What the tree reads the time from (µs, on the clock of the loop's timers): the daemon
	// passes the loop's clock (EventLoop::clock), tests a fake one they move forward themselves.
	using Clock = std::function<uint64_t()>;

	explicit Tree(EventLoop& loop, Clock clock = EventLoop::clock);
	Tree(const Tree&) = delete;
	Tree& operator=(const Tree&) = delete;

	// All paths are JSON Pointers (RFC 6901). Writes to "" are refused (std::invalid_argument).
	// set: no-op when equal; missing parents are created as objects.
	void set(std::string_view path, json value);
	// Per-key set of an object's fields; creates the object when missing.
	void update(std::string_view path, const json& fields);
	// Removes the value and everything below it; no-op when absent.
	void remove(std::string_view path);
	// Writes `value` at `path` as per-key changes, recursively into objects that exist on both
	// sides, so a subscriber sees only the fields that changed and not the whole object restated
	// (backends republish whole objects freely). Keys of the existing object that `value` lacks
	// are removed, except the top-level ones named in `keep` (fields another part of the backend
	// writes, such as a node's peaks). A non-object on either side is a plain set().
	void sync(std::string_view path, const json& value, std::initializer_list<std::string_view> keep = {});

	[[nodiscard]] const json& root() const { return root_; }
	[[nodiscard]] const json* find(std::string_view path) const { return findIn(root_, path); }
	// The value at `path` in `root`, as the tree reads a path: members of objects only (the tree
	// writes arrays whole), never throwing; nullptr for nothing there or an invalid pointer.
	[[nodiscard]] static const json* findIn(const json& root, std::string_view path);
	[[nodiscard]] uint64_t revision() const { return revision_; }
	[[nodiscard]] const std::string& epoch() const { return epoch_; }

	// Flushes pending writes now (normally done as each dispatch ends).
	void flush();

	// Coalescing over time while changes are frequent (docs/architecture.md, "Coalescing under
	// load"). After a flush that took d µs of CPU time, the next automatic flush waits until
	// min(d × dutyFactor, maxWindowUs) after it ended; writes made meanwhile join that batch
	// (after a flush no window held, d is the median of the last three flushes' costs). A
	// write after a quiet moment is flushed at once, as without coalescing. Explicit flush()
	// calls (tree.get, subscribe) are never held. dutyFactor 0 (the default) turns it off.
	struct Coalescing {
		uint64_t dutyFactor = 0;
		uint64_t maxWindowUs = 0;
	};
	void setCoalescing(Coalescing coalescing);

	class Subscription {
	public:
		Subscription() = default;
		Subscription(Tree* tree, uint64_t id): tree_(tree), id_(id) {}
		Subscription(Subscription&& o) noexcept: tree_(o.tree_), id_(o.id_) { o.tree_ = nullptr; }
		Subscription& operator=(Subscription&& o) noexcept;
		~Subscription();
		Subscription(const Subscription&) = delete;
		Subscription& operator=(const Subscription&) = delete;

	private:
		Tree* tree_ = nullptr;
		uint64_t id_ = 0;
	};
	[[nodiscard]] Subscription observe(Observer observer);
	// Called at the end of every flush of pending writes, also when they changed nothing (a value
	// set and set back). With pending(), what happens after the writes made so far have been
	// delivered can wait for them (events, which must not overtake the state they follow).
	[[nodiscard]] Subscription observeFlush(std::function<void()> observer);
	// Whether the batch last flushed removed a value (what was below it went too): memory that
	// a flush observer may want to see given back.
	[[nodiscard]] bool lastFlushRemoved() const { return lastFlushRemoved_; }
	// Whether a batch is being handed to the observers; the flush observers run after it.
	[[nodiscard]] bool delivering() const { return delivering_ > 0; }
	[[nodiscard]] bool pending() const { return !dirty_.empty(); }
	// Whether some pending write was made since the after-dispatch flush last ran, i.e. by the event
	// being handled now (its batch is not complete yet). Pending writes that are not fresh are
	// only waiting for a coalescing window and may be flushed at any time.
	[[nodiscard]] bool pendingFresh() const { return fresh_ && !dirty_.empty(); }
	// Counts writes (of any path): a caller compares two readings to know whether it wrote.
	[[nodiscard]] uint64_t writeCount() const { return writeCount_; }
	// The flush after the current dispatch ignores the coalescing window (someone waits for it).
	void flushAfterDispatch() { urgent_ = true; }

private:
	struct Dirty {
		bool existed;       // whether the path held a value when the batch began
		uint64_t order;     // first touch, so the patch lists changes in the order they happened
	};
	void markDirty(std::string_view path, bool existed);
	void flushSoon();
	void deliver(const json& patch);   // a new revision, to every observer

	EventLoop& loop_;
	Clock clock_;
	json root_ = json::object();
	uint64_t revision_ = 0;
	int delivering_ = 0;
	std::string epoch_;
	std::map<std::string, Dirty, std::less<>> dirty_;
	uint64_t order_ = 0;
	std::map<uint64_t, Observer> observers_;
	std::map<uint64_t, std::function<void()>> flushObservers_;
	uint64_t nextObserver_ = 1;
	EventLoop::AfterDispatch afterDispatch_;
	EventSource defer_;
	EventSource window_;
	Coalescing coalescing_;
	uint64_t holdUntilUs_ = 0;   // automatic flushes wait until then (CLOCK_MONOTONIC, µs)
	uint64_t lastCosts_[2] = {};   // the CPU time of the last two flushes (µs), the latest first
	bool windowEnded_ = false;     // this flush is the one a window held
	bool fresh_ = false;    // written since the after-dispatch flush last ran
	uint64_t writeCount_ = 0;
	bool urgent_ = false;   // see flushAfterDispatch()
	bool lastFlushRemoved_ = false;
};

} // namespace qsd
