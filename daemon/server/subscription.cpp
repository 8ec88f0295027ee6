#include "subscription.hpp"

#include "../log.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <algorithm>

namespace qsd {

using json = nlohmann::json;

namespace {
// As tree.get reads a path (Tree::find): nlohmann's json_pointer also indexes arrays, so a
// subscription saw an element tree.get called missing, and it throws on an index past size_t,
// which stopped every batch of the subscription's filter once its parent became an array.
const json* lookup(const json& root, const std::string& path) { return Tree::findIn(root, path); }
} // namespace

PathFilter::PathFilter(std::vector<std::string> paths, const json& root): requested_(std::move(paths)) {
	for (const auto& p: requested_) {
		bool covered = std::any_of(requested_.begin(), requested_.end(), [&](const std::string& other) {
			return other != p && pointer::isWithin(p, other);
		});
		bool duplicate = std::any_of(roots_.begin(), roots_.end(), [&](const Entry& e) { return e.path == p; });
		if (!covered && !duplicate) roots_.push_back({p, false});
	}
	resetPresence(root);
}

void PathFilter::writeSnapshot(const json& root, rpc::JsonWriter& out) const {
	// The order a json object of them would have: sorted, each path once.
	std::vector<const std::string*> paths;
	paths.reserve(requested_.size());
	for (const auto& p: requested_) paths.push_back(&p);
	std::sort(paths.begin(), paths.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
	paths.erase(std::unique(paths.begin(), paths.end(), [](const std::string* a, const std::string* b) { return *a == *b; }),
	            paths.end());
	out.raw("{");
	bool first = true;
	for (const auto* p: paths) {
		const json* v = lookup(root, *p);
		if (!v) continue;
		if (!first) out.raw(",");
		first = false;
		out.key(*p).value(*v);
	}
	out.raw("}");
}

void PathFilter::resetPresence(const json& root) {
	for (auto& e: roots_) e.present = lookup(root, e.path) != nullptr;
}

void PathFilter::filter(const json& patch, const json& root, json& out) {
	Selection selection;
	select(patch, root, selection);
	for (const json* op: selection.ops) out.push_back(*op);
}

void PathFilter::select(const json& patch, const json& root, Selection& out) {
	for (const auto& op: patch) {
		const auto& path = op["path"].get_ref<const std::string&>();
		for (auto& e: roots_) {
			if (pointer::isWithin(path, e.path)) {
				// At or below the subscribed path: passes as it is.
				out.ops.push_back(&op);
				if (path.size() == e.path.size()) e.present = op["op"] != "remove";
				break;
			}
			if (pointer::isWithin(e.path, path)) {
				// An ancestor changed wholesale: restate the subscribed path's new value.
				const json* now = lookup(root, e.path);
				if (now) out.owned.push_front({{"op", e.present ? "replace" : "add"}, {"path", e.path}, {"value", *now}});
				else if (e.present) out.owned.push_front({{"op", "remove"}, {"path", e.path}});
				if (now || e.present) out.ops.push_back(&out.owned.front());
				e.present = now != nullptr;
			}
		}
	}
}

namespace {
constexpr size_t kKeepBytes = 256 << 10;
// A batch's line up to its operations (head() and changes() share it).
constexpr std::string_view kChangedOpen = R"({"jsonrpc":"2.0","method":"tree.changed","params":{"changes":[)";
} // namespace

// Byte for byte what rpc::toLine(rpc::makeNotification("tree.changed", {...})) writes (nlohmann
// sorts object keys, so the subscription id comes last and the rest is common to the filter).
const std::shared_ptr<const std::string>& FilteredBatch::head() const {
	if (head_) return head_;
	// Restated operations live in this selection only; their addresses may be reused by the
	// next filter's, so only operations that point into the patch are compared.
	bool shareable = selection_.owned.empty();
	if (shareable && reuse_ && reuse_->text && reuse_->revision == revision_ && reuse_->ops == selection_.ops)
		return head_ = reuse_->text;
	std::string line(kChangedOpen);
	{
		// One writer straight into the line: dump() per operation cost a serializer (a locale
		// lookup, an output adapter allocation) and a temporary string each.
		rpc::JsonWriter out(line);
		for (size_t i = 0; i < selection_.ops.size(); ++i) {
			if (i) out.raw(",");
			out.value(*selection_.ops[i]);
		}
	}
	line += R"(],"revision":)";
	line += std::to_string(revision_);
	line += R"(,"subscription":)";
	head_ = std::make_shared<const std::string>(std::move(line));
	if (reuse_) {
		// A huge batch is not kept: it would stay in memory until the next change.
		if (shareable && head_->size() <= kKeepBytes) *reuse_ = {revision_, selection_.ops, head_};
		else *reuse_ = {};
	}
	return head_;
}

std::string_view FilteredBatch::changes() const {
	std::string_view line(*head());
	auto end = line.rfind(R"(],"revision":)");
	return line.substr(kChangedOpen.size(), end - kChangedOpen.size());
}

std::string FilteredBatch::tail(uint64_t subscription) {
	// At most 20 digits and 3 characters: within the small-string buffer, no allocation.
	auto text = std::to_string(subscription);
	text += "}}\n";
	return text;
}

class FilterGroups::Group {
public:
	Group(std::vector<std::string> paths, const json& root): filter(std::move(paths), root) {}

	PathFilter filter;
	Tree::Subscription observer;
	std::vector<ChangeSink*> members;   // in the order they joined; nullptr: one that left
	size_t live = 0;                    // members that are not nullptr
	int delivering = 0;
	Map::iterator self;                 // its place in groups_: erased by it, not by a search
	bool doomed = false;                // emptied during its delivery: in doomed_
	size_t paths = 0, pathBytes = 0;    // what it counts against the limits of all groups
};

FilterGroups::FilterGroups(Tree& tree, Limits limits): tree_(tree), limits_(limits) {
	// A group emptied while it delivered (its last member left from inside its own observer)
	// is erased once the batch has been handed to every observer.
	sweeper_ = tree_.observeFlush([this] { sweep(); });
}

FilterGroups::~FilterGroups() = default;

FilterGroups::Membership FilterGroups::join(std::vector<std::string> paths, ChangeSink& sink) {
	auto it = groups_.find(paths);
	if (it == groups_.end()) {
		// A filter costs its paths' text (kept three times: as asked, as roots, as the key) and a
		// comparison with every operation of every batch: a thousand connections, each with 64
		// subscriptions of 256 paths, took qsd to gigabytes and every change to half a second.
		// Subscriptions to paths already subscribed share the filter and cost nothing here.
		size_t bytes = 0;
		for (const auto& p: paths) bytes += p.size();
		if (paths_ + paths.size() > limits_.maxPaths)
			throw rpc::RpcException(rpc::ErrorCode::LimitExceeded, "Too many paths subscribed on all connections",
			                        {{"limit", "allPaths"}, {"max", limits_.maxPaths}});
		if (pathBytes_ + bytes > limits_.maxPathBytes)
			throw rpc::RpcException(rpc::ErrorCode::LimitExceeded, "Too many bytes of paths subscribed on all connections",
			                        {{"limit", "allPathBytes"}, {"max", limits_.maxPathBytes}});
		size_t count = paths.size();
		auto group = std::make_unique<Group>(paths, tree_.root());
		auto* raw = group.get();
		raw->paths = count;
		raw->pathBytes = bytes;
		group->observer = tree_.observe([this, raw](uint64_t revision, const json& patch) { deliver(*raw, revision, patch); });
		it = groups_.emplace(std::move(paths), std::move(group)).first;
		raw->self = it;
		paths_ += count;
		pathBytes_ += bytes;
	} else {
		// Presence follows the tree at batch boundaries; re-read it all the same, as a new
		// filter would.
		it->second->filter.resetPresence(tree_.root());
	}
	auto& group = *it->second;
	sink.groupSlot_ = group.members.size();
	group.members.push_back(&sink);
	++group.live;
	return Membership(this, &group, &sink);
}

void FilterGroups::deliver(Group& group, uint64_t revision, const json& patch) {
	if (group.live == 0) return;
	PathFilter::Selection selection;
	group.filter.select(patch, tree_.root(), selection);
	if (selection.ops.empty()) return;
	FilteredBatch batch(revision, selection, &last_);
	++group.delivering;
	// Members that join meanwhile start with the next batch.
	for (size_t i = 0, n = group.members.size(); i < n; ++i) {
		ChangeSink* sink = group.members[i];
		if (!sink) continue;
		try {
			sink->onChanges(batch);
		} catch (const std::exception& e) {
			log::error("server", "subscriber failed: {}", e.what());
		}
	}
	--group.delivering;
	if (group.delivering == 0) compact(group);
	// An empty group is erased after the batch (sweep), not from inside its own tree observer.
	if (group.live == 0 && group.delivering == 0 && !group.doomed) {
		group.doomed = true;
		doomed_.push_back(&group);
	}
}

// A member that leaves is found by its slot and leaves a hole; the holes go once they are half
// the members, the order of those left kept. A search and an erase from the vector per leave
// made closing every connection of a group quadratic: 900 connections with 64 subscriptions of
// one path each held the loop for 0.4 s.
void FilterGroups::leave(Group& group, ChangeSink* sink) {
	size_t slot = sink->groupSlot_;
	if (slot >= group.members.size() || group.members[slot] != sink) return;
	group.members[slot] = nullptr;
	--group.live;
	if (group.delivering == 0) compact(group);
	// During its delivery, deliver() dooms it; once doomed, the sweep erases it.
	if (group.live == 0 && group.delivering == 0 && !group.doomed) erase(group);
}

void FilterGroups::compact(Group& group) {
	if ((group.members.size() - group.live) * 2 <= group.members.size()) return;
	std::erase(group.members, static_cast<ChangeSink*>(nullptr));
	for (size_t i = 0; i < group.members.size(); ++i) group.members[i]->groupSlot_ = i;
}

void FilterGroups::erase(Group& group) {
	paths_ -= group.paths;
	pathBytes_ -= group.pathBytes;
	groups_.erase(group.self);
}

void FilterGroups::sweep() {
	// Only the groups emptied during a delivery: a search of every group per subscribe and per
	// leave made closing 256 connections with 64 subscriptions each block the loop for 15 s.
	auto doomed = std::exchange(doomed_, {});
	for (auto* group: doomed) {
		group->doomed = false;
		// Joined again meanwhile, it stays.
		if (group->live == 0 && group->delivering == 0) erase(*group);
	}
}

FilterGroups::Membership::Membership(Membership&& o) noexcept
    : owner_(std::exchange(o.owner_, nullptr)), group_(std::exchange(o.group_, nullptr)), sink_(std::exchange(o.sink_, nullptr)) {}

FilterGroups::Membership& FilterGroups::Membership::operator=(Membership&& o) noexcept {
	if (this != &o) {
		leave();
		owner_ = std::exchange(o.owner_, nullptr);
		group_ = std::exchange(o.group_, nullptr);
		sink_ = std::exchange(o.sink_, nullptr);
	}
	return *this;
}

FilterGroups::Membership::~Membership() { leave(); }

void FilterGroups::Membership::leave() {
	if (owner_) owner_->leave(*group_, sink_);
	owner_ = nullptr;
	group_ = nullptr;
	sink_ = nullptr;
}

const PathFilter& FilterGroups::Membership::filter() const { return group_->filter; }

} // namespace qsd
