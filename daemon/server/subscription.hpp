#pragma once
// What one tree subscription sees: the changes of a batch under its paths, rewritten so that
// they apply to a document holding only the subscribed subtrees.

#include <nlohmann/json.hpp>

#include <forward_list>
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
	// {path: value} for each requested path that exists; absent paths are left out.
	[[nodiscard]] json snapshot(const json& root) const;
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

} // namespace qsd
