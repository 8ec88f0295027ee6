#pragma once
// The client-side reducer: one mirror of the subscribed parts of the daemon's tree, fed by the
// result of tree.subscribe, tree.changed and tree.resync. qsctl and client-qml both use it, so
// there is exactly one implementation of "apply a change stream".

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qsd {

class Mirror {
public:
	using json = nlohmann::json;

	enum class Result {
		Applied,   // the patch was applied; document() is the daemon's state at revision()
		Stale,     // revision not newer than the mirror's: ignored
		Gap,       // a revision was skipped or the patch did not apply: resubscribe
	};

	// From the tree.subscribe result {subscription, epoch, revision, snapshot} (or a
	// tree.resync {subscription, revision, snapshot}); paths are the subscribed JSON Pointers.
	// Parents of every path exist as objects; a path absent from the snapshot is absent.
	void reset(const std::vector<std::string>& paths, const json& snapshot, uint64_t revision,
	           std::string epoch = {});

	// Apply one tree.changed {revision, changes}. Revisions are per daemon batch, and a
	// subscriber only sees the batches that touch its paths, so any newer revision is fine;
	// continuity is guaranteed by the daemon, which sends tree.resync when it dropped changes.
	Result apply(uint64_t revision, const json& changes);

	[[nodiscard]] const json& document() const { return document_; }
	[[nodiscard]] uint64_t revision() const { return revision_; }
	[[nodiscard]] const std::string& epoch() const { return epoch_; }
	[[nodiscard]] const std::vector<std::string>& paths() const { return paths_; }

	// Value at a JSON Pointer, or nullptr when absent.
	[[nodiscard]] const json* find(const std::string& pointer) const;

private:
	json document_ = json::object();
	std::vector<std::string> paths_;
	uint64_t revision_ = 0;
	std::string epoch_;
};

// JSON Pointer helpers (RFC 6901) used throughout.
namespace pointer {
// Escape one reference token: '~' -> "~0", '/' -> "~1".
[[nodiscard]] std::string escape(std::string_view token);
[[nodiscard]] std::string join(std::string_view parent, std::string_view token);
// True when `path` equals `prefix` or lies below it ("" is the root, above everything).
[[nodiscard]] bool isWithin(std::string_view path, std::string_view prefix);
// Syntactically valid: "" or a sequence of "/token" with only ~0 and ~1 escapes.
[[nodiscard]] bool isValid(std::string_view path);
} // namespace pointer

} // namespace qsd
