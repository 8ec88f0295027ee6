#include "tree.hpp"

#include "log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>
#include <time.h>
#include <vector>

namespace qsd {

using json = nlohmann::json;

namespace {

std::string randomEpoch() {
	std::random_device rd;
	std::uniform_int_distribution<uint64_t> dist;
	return fmt::format("{:016x}", dist(rd));
}

void checkPath(std::string_view path) {
	if (path.empty() || !pointer::isValid(path)) throw std::invalid_argument("invalid tree path: " + std::string(path));
}

// The token of a valid pointer that starts at `begin` (just after a '/'), unescaped into
// `scratch` only when it holds an escape; `end` gets the position of the next '/' or the size.
// The tree is walked on views of the path itself: a write is on the hot path of a flood, and
// splitting it into a vector of strings cost more than the write.
std::string_view token(std::string_view path, size_t begin, size_t& end, std::string& scratch) {
	end = path.find('/', begin);
	if (end == std::string_view::npos) end = path.size();
	auto raw = path.substr(begin, end - begin);
	if (raw.find('~') == std::string_view::npos) return raw;
	scratch.clear();
	for (size_t i = 0; i < raw.size(); ++i) {
		if (raw[i] == '~' && i + 1 < raw.size()) scratch += raw[++i] == '1' ? '/' : '~';
		else scratch += raw[i];
	}
	return scratch;
}

uint64_t clockUs(clockid_t clock) {
	timespec ts{};
	clock_gettime(clock, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000u + uint64_t(ts.tv_nsec) / 1000u;
}

} // namespace

Tree::Subscription& Tree::Subscription::operator=(Subscription&& o) noexcept {
	if (this != &o) {
		if (tree_) {
			tree_->observers_.erase(id_);
			tree_->flushObservers_.erase(id_);
		}
		tree_ = o.tree_;
		id_ = o.id_;
		o.tree_ = nullptr;
	}
	return *this;
}

Tree::Subscription::~Subscription() {
	if (!tree_) return;
	tree_->observers_.erase(id_);
	tree_->flushObservers_.erase(id_);
}

Tree::Tree(EventLoop& loop, Clock clock): loop_(loop), clock_(std::move(clock)), epoch_(randomEpoch()) {
	// Runs as each event's handler returns, so all writes made while handling one event (a
	// D-Bus message burst, one client request) become one batch, and it reaches subscribers
	// without another loop iteration.
	afterDispatch_ = loop_.afterDispatch([this] { flushSoon(); });
	window_ = loop_.addIdleTimer([this] {
		windowEnded_ = true;
		flush();
	}, "tree-flush-window");
	// Writes made outside any handler of the loop's own sources (start-up, a source added to
	// the raw sd_event) have no after-dispatch hook to follow; this defer source gives them one.
	defer_ = loop_.addDefer([this] { flushSoon(); }, "tree-flush-startup");
	defer_.setEnabled(SD_EVENT_OFF);
}

const json* Tree::findIn(const json& root, std::string_view path) {
	if (!pointer::isValid(path)) return nullptr;
	if (path.empty()) return &root;
	const json* node = &root;
	std::string scratch;
	for (size_t begin = 1, end = 0;; begin = end + 1) {
		auto key = token(path, begin, end, scratch);
		if (!node->is_object()) return nullptr;
		auto it = node->find(key);
		if (it == node->end()) return nullptr;
		node = &*it;
		if (end == path.size()) return node;
	}
}

void Tree::markDirty(std::string_view path, bool existed) {
	fresh_ = true;
	++writeCount_;
	if (dirty_.empty()) {
		// The first write of a batch (most batches have one or a few): nothing to subsume.
		dirty_.emplace(std::string(path), Dirty{existed, order_++});
		if (!loop_.inDispatch()) defer_.setEnabled(SD_EVENT_ONESHOT);
		return;
	}
	// Already covered by a dirty ancestor: its final value is taken at flush time.
	for (auto pos = path.rfind('/'); pos != std::string_view::npos && pos > 0; pos = path.rfind('/', pos - 1)) {
		if (dirty_.count(path.substr(0, pos))) return;
	}
	if (dirty_.count(path)) return;
	// Dirty descendants are subsumed by this path.
	std::string p(path);
	auto first = dirty_.lower_bound(p + "/");
	auto last = dirty_.lower_bound(p + "0"); // '0' follows '/'
	dirty_.erase(first, last);
	dirty_.emplace(std::move(p), Dirty{existed, order_++});
	if (!loop_.inDispatch()) defer_.setEnabled(SD_EVENT_ONESHOT);
}

void Tree::set(std::string_view path, json value) {
	checkPath(path);
	json* node = &root_;
	std::string scratch;
	for (size_t begin = 1, end = 0;; begin = end + 1) {
		auto key = token(path, begin, end, scratch);
		// The escaped prefix of a valid pointer is the pointer of this node.
		auto at = path.substr(0, end);
		if (!node->is_object()) {
			// A scalar in the way is replaced by an object: the whole node changes.
			*node = json::object();
		}
		auto it = node->find(key);
		if (it == node->end()) {
			// The topmost missing node is the change; build the rest below it.
			markDirty(at, false);
			json* cur = &(*node)[std::string(key)];
			while (end < path.size()) {
				key = token(path, end + 1, end, scratch);
				cur = &(*cur)[std::string(key)];
			}
			*cur = std::move(value);
			return;
		}
		if (end == path.size()) {
			if (*it == value) return;
			markDirty(at, true);
			*it = std::move(value);
			return;
		}
		if (!it->is_object()) markDirty(at, true);
		node = &*it;
	}
}

void Tree::update(std::string_view path, const json& fields) {
	if (!fields.is_object()) throw std::invalid_argument("Tree::update needs an object");
	const json* existing = find(path);
	if (!existing || !existing->is_object()) {
		set(path, fields);
		return;
	}
	for (const auto& [key, value]: fields.items()) set(pointer::join(path, key), value);
}

void Tree::sync(std::string_view path, const json& value, std::initializer_list<std::string_view> keep) {
	const json* existing = find(path);
	if (!existing || !existing->is_object() || !value.is_object()) {
		set(path, value);
		return;
	}
	std::vector<std::string> gone;
	for (const auto& [key, _]: existing->items())
		if (!value.contains(key) && std::find(keep.begin(), keep.end(), key) == keep.end()) gone.push_back(key);
	for (const auto& key: gone) remove(pointer::join(path, key));
	for (const auto& [key, v]: value.items()) sync(pointer::join(path, key), v);
}

void Tree::remove(std::string_view path) {
	checkPath(path);
	json* node = &root_;
	std::string scratch;
	for (size_t begin = 1, end = 0;; begin = end + 1) {
		auto key = token(path, begin, end, scratch);
		if (!node->is_object()) return;
		auto it = node->find(key);
		if (it == node->end()) return;
		if (end == path.size()) {
			markDirty(path, true);
			node->erase(it);
			// Added in this batch and gone again: nothing to tell, and nothing to keep (a flood
			// of short-lived objects would otherwise hold a dirty entry per object until the flush).
			if (auto d = dirty_.find(path); d != dirty_.end() && !d->second.existed) dirty_.erase(d);
			return;
		}
		node = &*it;
	}
}

void Tree::setCoalescing(Coalescing coalescing) {
	coalescing_ = coalescing;
	if (coalescing_.dutyFactor == 0) holdUntilUs_ = 0;
	lastCosts_[0] = lastCosts_[1] = 0;
}

void Tree::flushSoon() {
	fresh_ = false;
	bool urgent = std::exchange(urgent_, false);
	// Runs after every dispatch: most wrote nothing, and then the defer source is off already
	// (only a write outside a dispatch turns it on).
	if (dirty_.empty()) return;
	defer_.setEnabled(SD_EVENT_OFF);
	if (urgent || clock_() >= holdUntilUs_) {
		flush();
		return;
	}
	// Changes are frequent: these writes wait for the end of the window, with any that follow.
	if (!window_.enabled()) window_.setTime(holdUntilUs_);
}

void Tree::flush() {
	bool windowEnded = std::exchange(windowEnded_, false);
	lastFlushRemoved_ = false;
	if (dirty_.empty()) return;
	// The flush's CPU time, not its wall time: being preempted on a loaded machine must not
	// stretch the window.
	uint64_t start = coalescing_.dutyFactor ? clockUs(CLOCK_THREAD_CPUTIME_ID) : 0;
	std::vector<std::pair<const std::string*, Dirty>> ordered;
	ordered.reserve(dirty_.size());
	for (const auto& [path, d]: dirty_) ordered.emplace_back(&path, d);
	std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.second.order < b.second.order; });

	json patch = json::array();
	auto& ops = patch.get_ref<json::array_t&>();
	ops.reserve(ordered.size());
	for (const auto& [path, d]: ordered) {
		const json* now = find(*path);
		if (!now && !d.existed) continue;
		lastFlushRemoved_ |= !now;
		// Built in place: an initializer list copies every member twice.
		auto& op = ops.emplace_back(json::value_t::object).get_ref<json::object_t&>();
		op.emplace("op", now ? (d.existed ? "replace" : "add") : "remove");
		op.emplace("path", *path);
		if (now) op.emplace("value", *now);
	}
	dirty_.clear();
	fresh_ = false;
	defer_.setEnabled(SD_EVENT_OFF);
	window_.setEnabled(SD_EVENT_OFF);
	if (!patch.empty()) deliver(patch);
	std::vector<uint64_t> hooks;
	hooks.reserve(flushObservers_.size());
	for (const auto& [id, _]: flushObservers_) hooks.push_back(id);
	for (auto id: hooks) {
		auto it = flushObservers_.find(id);
		if (it == flushObservers_.end()) continue;
		try {
			auto hook = it->second;   // a copy: the hook may end its own subscription
			hook();
		} catch (const std::exception& e) {
			log::error("tree", "flush observer failed: {}", e.what());
		}
	}
	if (coalescing_.dutyFactor && !patch.empty()) {
		uint64_t cost = clockUs(CLOCK_THREAD_CPUTIME_ID) - start;
		// While changes are frequent (this flush ended a window), the window follows this
		// flush's cost. After a quiet moment it follows the median of the last three: one slow
		// flush among quick ones (preempted by the hypervisor, which this clock cannot tell from
		// running; a cold cache) would otherwise hold the next change, however rare changes are,
		// by up to 29 times its cost (docs/performance.md, "The relay floor for every D-Bus backend").
		uint64_t typical = cost;
		if (!windowEnded && lastCosts_[0])
			typical = std::max(std::min(cost, lastCosts_[0]), std::min(std::max(cost, lastCosts_[0]), lastCosts_[1]));
		lastCosts_[1] = lastCosts_[0] ? lastCosts_[0] : cost;
		lastCosts_[0] = cost;
		holdUntilUs_ = clock_() + std::min(typical * coalescing_.dutyFactor, coalescing_.maxWindowUs);
	}
}

void Tree::deliver(const json& patch) {
	++revision_;
	++delivering_;
	struct Done {
		int& count;
		~Done() { --count; }
	} done{delivering_};

	// An observer may unsubscribe others (a client closing); iterate over a snapshot of ids.
	std::vector<uint64_t> ids;
	ids.reserve(observers_.size());
	for (const auto& [id, _]: observers_) ids.push_back(id);
	for (auto id: ids) {
		auto it = observers_.find(id);
		if (it == observers_.end()) continue;
		try {
			it->second(revision_, patch);
		} catch (const std::exception& e) {
			log::error("tree", "observer failed: {}", e.what());
		}
	}
}

Tree::Subscription Tree::observe(Observer observer) {
	auto id = nextObserver_++;
	observers_.emplace(id, std::move(observer));
	return Subscription(this, id);
}

Tree::Subscription Tree::observeFlush(std::function<void()> observer) {
	auto id = nextObserver_++;
	flushObservers_.emplace(id, std::move(observer));
	return Subscription(this, id);
}

} // namespace qsd
