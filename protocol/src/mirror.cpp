#include "qsd/protocol/mirror.hpp"

#include <algorithm>

namespace qsd {

namespace pointer {

std::string escape(std::string_view token) {
	std::string out;
	out.reserve(token.size());
	for (char c: token) {
		if (c == '~') out += "~0";
		else if (c == '/') out += "~1";
		else out += c;
	}
	return out;
}

std::string join(std::string_view parent, std::string_view token) {
	std::string out(parent);
	out += '/';
	out += escape(token);
	return out;
}

bool isWithin(std::string_view path, std::string_view prefix) {
	if (prefix.empty()) return true;
	if (path.size() < prefix.size() || path.compare(0, prefix.size(), prefix) != 0) return false;
	return path.size() == prefix.size() || path[prefix.size()] == '/';
}

bool isValid(std::string_view path) {
	if (path.empty()) return true;
	if (path.front() != '/') return false;
	for (size_t i = 0; i < path.size(); ++i) {
		if (path[i] != '~') continue;
		if (i + 1 >= path.size() || (path[i + 1] != '0' && path[i + 1] != '1')) return false;
	}
	return true;
}

} // namespace pointer

void Mirror::reset(const std::vector<std::string>& paths, const json& snapshot, uint64_t revision, std::string epoch) {
	document_ = json::object();
	paths_ = paths;
	revision_ = revision;
	if (!epoch.empty()) epoch_ = std::move(epoch);
	for (const auto& path: paths) {
		// A path within another subscribed one is that one's content, as the daemon's filter
		// treats it (patches name the outer path only): a placeholder object made for its
		// parent would hide the outer path's value (a scalar there, or nothing).
		bool covered = std::any_of(paths.begin(), paths.end(),
		                           [&](const std::string& other) { return other != path && pointer::isWithin(path, other); });
		if (covered) continue;
		if (path.empty()) {
			if (snapshot.contains("")) document_ = snapshot.at("");
			continue;
		}
		json::json_pointer ptr(path);
		// Parents exist as objects so that an "add" of a path that appears later applies.
		auto parent = ptr.parent_pointer();
		if (!document_.contains(parent) || !document_.at(parent).is_object()) document_[parent] = json::object();
		if (snapshot.is_object() && snapshot.contains(path)) document_[ptr] = snapshot.at(path);
	}
}

Mirror::Result Mirror::apply(uint64_t revision, const json& changes) {
	if (revision <= revision_) return Result::Stale;
	try {
		document_.patch_inplace(changes);
	} catch (const json::exception&) {
		return Result::Gap;
	}
	revision_ = revision;
	return Result::Applied;
}

const nlohmann::json* Mirror::find(const std::string& path) const {
	try {
		json::json_pointer ptr(path);
		if (!document_.contains(ptr)) return nullptr;
		return &document_.at(ptr);
	} catch (const json::exception&) {
		return nullptr;
	}
}

} // namespace qsd
