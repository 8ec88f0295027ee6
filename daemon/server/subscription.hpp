#pragma once
// What one tree subscription sees: the changes of a batch under its paths, rewritten so that
// they apply to a document holding only the subscribed subtrees.

#include "../tree.hpp"

#include <nlohmann/json.hpp>
#include <qsd/protocol/jsonrpc.hpp>

#include <cstdint>
#include <forward_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qsd {

class PathFilter {
public:
	using json = nlohmann::json;

	// paths must be valid JSON Pointers; a path inside another one is redundant and dropped
	// (its changes arrive through the outer path). `root` is the current tree.
	PathFilter(std::vector<std::string> paths, const json& root);

	// The requested paths, in request order, for the snapshot.
	[[nodiscard]] const std::vector<std::string>& requested() const { return requested_; }
	// Writes the snapshot, {path: value} for each requested path that exists, as the text of a
	// JSON object (members in nlohmann's order, a path requested twice once), from `root`.
	void writeSnapshot(const json& root, rpc::JsonWriter& out) const;
	// Re-reads which paths exist (after a resync snapshot was taken).
	void resetPresence(const json& root);

	// The operations of `patch` (applied to the tree, whose state after the batch is `root`) that
	// concern the subscribed paths. An operation on an ancestor of a subscribed path becomes an
	// add/replace/remove of that path itself.
	void filter(const json& patch, const json& root, json& out);

	// The same without copying: operations that pass as they are point into `patch` (valid
	// while it lives); restated ones are built into `owned`. Subscribers with the same paths get
	// the same pointers, which is how a fan-out serializes a batch once.
	struct Selection {
		std::vector<const json*> ops;
		std::forward_list<json> owned;   // stable addresses, and no allocation while empty
	};
	void select(const json& patch, const json& root, Selection& out);

private:
	std::vector<std::string> requested_;
	struct Entry {
		std::string path;
		bool present;
	};
	std::vector<Entry> roots_;   // requested paths minus those within another one
};

// The last head built, with the operations it holds: a filter that selects the same operations
// of the same batch (pointers into the one patch, e.g. "" and "/a" for a change under /a)
// reuses it. Kept until the next batch, unless it is big.
struct LastHead {
	uint64_t revision = 0;
	std::vector<const nlohmann::json*> ops;
	std::shared_ptr<const std::string> text;
};

// A batch as the subscriptions of one filter see it, handed to each of them in turn.
class FilteredBatch {
public:
	using json = nlohmann::json;

	FilteredBatch(uint64_t revision, const PathFilter::Selection& selection, LastHead* reuse)
	    : revision_(revision), selection_(selection), reuse_(reuse) {}

	[[nodiscard]] uint64_t revision() const { return revision_; }
	// The operations (valid during the call only), for a stream that collects them.
	[[nodiscard]] const PathFilter::Selection& selection() const { return selection_; }
	// The batch's tree.changed line up to `"subscription":`, the same buffer for every
	// subscription of the filter; a subscription writes its own id and `}}\n` after it. Built
	// on first use, so a batch that every subscriber collects or skips is never serialized.
	[[nodiscard]] const std::shared_ptr<const std::string>& head() const;
	// The operations' text within head(), comma-separated (what a throttled stream collects).
	[[nodiscard]] std::string_view changes() const;
	// What completes head() for one subscription.
	[[nodiscard]] static std::string tail(uint64_t subscription);

private:
	uint64_t revision_;
	const PathFilter::Selection& selection_;
	LastHead* reuse_;
	mutable std::shared_ptr<const std::string> head_;
};

// Receives the batches of a filter (a client's subscription).
class ChangeSink {
public:
	virtual void onChanges(const FilteredBatch& batch) = 0;

protected:
	~ChangeSink() = default;

private:
	friend class FilterGroups;
	size_t groupSlot_ = 0;   // its place among its filter group's members: leaving finds it at once
};

// What the filters of all connections may hold together (distinct lists of paths: a
// subscription to paths already subscribed shares their filter and counts once).
struct FilterLimits {
	size_t maxPaths = 65536;
	size_t maxPathBytes = 4u << 20;
};

// Subscriptions with the same paths share one PathFilter and one tree observer: a batch is
// filtered and serialized once per distinct list of paths, however many sessions subscribed
// to it, and every one of them queues the same buffer.
class FilterGroups {
public:
	using json = nlohmann::json;

	using Limits = FilterLimits;
	explicit FilterGroups(Tree& tree, Limits limits = {});
	~FilterGroups();
	FilterGroups(const FilterGroups&) = delete;
	FilterGroups& operator=(const FilterGroups&) = delete;

	class Group;
	// A sink's place in a group; leaving is destroying it (the group goes with its last member).
	class Membership {
	public:
		Membership() = default;
		Membership(FilterGroups* owner, Group* group, ChangeSink* sink): owner_(owner), group_(group), sink_(sink) {}
		Membership(Membership&& o) noexcept;
		Membership& operator=(Membership&& o) noexcept;
		~Membership();
		// The group's filter: snapshots are taken with it.
		[[nodiscard]] const PathFilter& filter() const;

	private:
		void leave();
		FilterGroups* owner_ = nullptr;
		Group* group_ = nullptr;
		ChangeSink* sink_ = nullptr;
	};

	// Call at a batch boundary (the tree flushed): from the next batch on, `sink` gets every
	// batch with a change under `paths`, in the order batches are flushed. Throws
	// rpc::RpcException (LimitExceeded) when a new filter would pass the Limits.
	[[nodiscard]] Membership join(std::vector<std::string> paths, ChangeSink& sink);
	[[nodiscard]] size_t groupCount() const { return groups_.size(); }
	[[nodiscard]] size_t pathCount() const { return paths_; }
	[[nodiscard]] size_t pathBytes() const { return pathBytes_; }

private:
	using Map = std::map<std::vector<std::string>, std::unique_ptr<Group>>;
	void deliver(Group& group, uint64_t revision, const json& patch);
	void leave(Group& group, ChangeSink* sink);
	void erase(Group& group);
	void compact(Group& group);   // drops the holes members left once they are half
	void sweep();

	Tree& tree_;
	Limits limits_;
	Map groups_;
	std::vector<Group*> doomed_;   // emptied while delivering: erased after the batch
	size_t paths_ = 0, pathBytes_ = 0;
	LastHead last_;
	Tree::Subscription sweeper_;
};

} // namespace qsd
