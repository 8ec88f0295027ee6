#include "subscription.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>

namespace qsd {

using json = nlohmann::json;

namespace {
const json* lookup(const json& root, const std::string& path) {
	if (path.empty()) return &root;
	json::json_pointer ptr(path);
	if (!root.contains(ptr)) return nullptr;
	return &root.at(ptr);
}
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

json PathFilter::snapshot(const json& root) const {
	json snap = json::object();
	for (const auto& p: requested_)
		if (const json* v = lookup(root, p)) snap[p] = *v;
	return snap;
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

} // namespace qsd
