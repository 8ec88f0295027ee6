#include "tree.hpp"

#include "log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

namespace qsd {

using json = nlohmann::json;

namespace {

std::string randomEpoch() {
	std::random_device rd;
	std::uniform_int_distribution<uint64_t> dist;
	return fmt::format("{:016x}", dist(rd));
}

std::vector<std::string> tokens(std::string_view path) {
	if (!pointer::isValid(path) || path.empty()) throw std::invalid_argument("invalid tree path: " + std::string(path));
	std::vector<std::string> out;
	json::json_pointer ptr{std::string(path)};
	// json_pointer unescapes; rebuild the token list from the front.
	while (!ptr.empty()) {
		out.push_back(ptr.back());
		ptr.pop_back();
	}
	std::reverse(out.begin(), out.end());
	return out;
}

} // namespace

Tree::Subscription& Tree::Subscription::operator=(Subscription&& o) noexcept {
	if (this != &o) {
		if (tree_) tree_->observers_.erase(id_);
		tree_ = o.tree_;
		id_ = o.id_;
		o.tree_ = nullptr;
	}
	return *this;
}

Tree::Subscription::~Subscription() {
	if (tree_) tree_->observers_.erase(id_);
}

Tree::Tree(EventLoop& loop): loop_(loop), epoch_(randomEpoch()) {
	// A post source runs after every dispatch of another source, so all writes made while
	// handling one event (a D-Bus message burst, one client request) become one batch.
	post_ = loop_.addPost([this] { flush(); }, "tree-flush");
	// Writes made outside any dispatch (start-up) have no dispatch to follow; this defer
	// source gives them one.
	defer_ = loop_.addDefer([this] { flush(); }, "tree-flush-startup");
	defer_.setEnabled(SD_EVENT_OFF);
}

const json* Tree::find(std::string_view path) const {
	if (!pointer::isValid(path)) return nullptr;
	if (path.empty()) return &root_;
	const json* node = &root_;
	for (const auto& t: tokens(path)) {
		if (!node->is_object()) return nullptr;
		auto it = node->find(t);
		if (it == node->end()) return nullptr;
		node = &*it;
	}
	return node;
}

void Tree::markDirty(const std::string& path, bool existed) {
	// Already covered by a dirty ancestor: its final value is taken at flush time.
	for (auto pos = path.rfind('/'); pos != std::string::npos && pos > 0; pos = path.rfind('/', pos - 1)) {
		if (dirty_.count(std::string_view(path).substr(0, pos))) return;
	}
	if (dirty_.count(path)) return;
	// Dirty descendants are subsumed by this path.
	auto first = dirty_.lower_bound(path + "/");
	auto last = dirty_.lower_bound(path + "0"); // '0' follows '/'
	dirty_.erase(first, last);
	dirty_.emplace(path, Dirty{existed, order_++});
	if (sd_event_get_state(loop_.raw()) != SD_EVENT_RUNNING) defer_.setEnabled(SD_EVENT_ONESHOT);
}

void Tree::set(std::string_view path, json value) {
	auto toks = tokens(path);
	json* node = &root_;
	std::string at;
	for (size_t i = 0; i < toks.size(); ++i) {
		at = pointer::join(at, toks[i]);
		bool last = i + 1 == toks.size();
		if (!node->is_object()) {
			// A scalar in the way is replaced by an object: the whole node changes.
			*node = json::object();
		}
		auto it = node->find(toks[i]);
		if (it == node->end()) {
			// The topmost missing node is the change; build the rest below it.
			markDirty(at, false);
			json& created = (*node)[toks[i]];
			json* cur = &created;
			for (size_t j = i + 1; j < toks.size(); ++j) cur = &(*cur)[toks[j]];
			*cur = std::move(value);
			return;
		}
		if (last) {
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

void Tree::remove(std::string_view path) {
	auto toks = tokens(path);
	json* node = &root_;
	for (size_t i = 0; i + 1 < toks.size(); ++i) {
		if (!node->is_object()) return;
		auto it = node->find(toks[i]);
		if (it == node->end()) return;
		node = &*it;
	}
	if (!node->is_object() || !node->contains(toks.back())) return;
	markDirty(std::string(path), true);
	node->erase(toks.back());
}

void Tree::flush() {
	if (dirty_.empty()) return;
	std::vector<std::pair<const std::string*, Dirty>> ordered;
	ordered.reserve(dirty_.size());
	for (const auto& [path, d]: dirty_) ordered.emplace_back(&path, d);
	std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.second.order < b.second.order; });

	json patch = json::array();
	for (const auto& [path, d]: ordered) {
		const json* now = find(*path);
		if (now) patch.push_back({{"op", d.existed ? "replace" : "add"}, {"path", *path}, {"value", *now}});
		else if (d.existed) patch.push_back({{"op", "remove"}, {"path", *path}});
	}
	dirty_.clear();
	defer_.setEnabled(SD_EVENT_OFF);
	if (patch.empty()) return;
	++revision_;

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

} // namespace qsd
