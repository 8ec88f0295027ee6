#pragma once
// What outlives a restart: $XDG_STATE_HOME/qsd/notifications.json (else
// ~/.local/state/qsd/notifications.json) holds the history, Do-Not-Disturb, the settings and the
// id counter, and while qsd runs the notifications shown, which a stop puts in history and a
// crash does not: the next qsd does. Parsing and writing the document are pure and unit-tested;
// a document qsd cannot read is set aside (renamed *.bad) rather than lost.
//
// Ids are never reused, also after a crash: while qsd runs the file says `clean: false` and
// reserves ids up to `reservedId`; a start after a clean stop continues at lastId + 1, one after
// a crash at reservedId + 1. The reservation is renewed before it runs out.

#include "mapping.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qsd::notifications {

// Ids reserved ahead of the last one handed out while qsd runs.
constexpr uint32_t kIdReserve = 1u << 16;
// The state file qsd writes is at most this large: history's oldest entries are left out of it
// beyond that. One history entry can take tens of KiB (a 16 KiB body of characters JSON escapes),
// and the file is rewritten, synchronously, up to once a second.
constexpr size_t kMaxStateFileBytes = 4u << 20;
// What qsd reads back: far above what it writes, so that a file of an older qsd (which had no
// bound) is read too.
constexpr size_t kMaxStateReadBytes = 64u << 20;

struct SavedState {
	uint32_t lastId = 0;       // the highest id handed out
	uint32_t reservedId = 0;   // no id above lastId and up to this may have been handed out
	bool clean = true;         // written by a stop, not while running
	bool dnd = false;
	uint64_t defaultTimeoutMs = kDefaultTimeoutMs;
	uint64_t historyLimit = kDefaultHistoryLimit;
	std::vector<std::string> capabilities = defaultCapabilities();
	nlohmann::json history = nlohmann::json::array();   // tree entries, oldest closed first
	// The notifications shown when it was written (tree items), in the order a stop closes them.
	// A stop puts them in history before it writes (none here then); what a qsd that died left
	// here, the next one puts in history.
	nlohmann::json shown = nlohmann::json::array();
};

// The fields of a history entry the file does not keep, as they are computed again when it is
// read (restoreHistory): bodyText is plainText(body).
constexpr const char* kRecomputedFields[] = {"bodyText"};

// The document, or why it is not one (a field of the wrong type is replaced by its default and
// named in `problems`; only a document that is not a JSON object fails).
[[nodiscard]] std::optional<SavedState> parseState(const std::string& text, std::string* problems = nullptr);
// The document, with `state.shown` and `state.history` ignored: the entries are `shownLastFirst`
// (the last a stop would close first) and history's `newestFirst`, each list written oldest first,
// each entry without kRecomputedFields, and only as many as keep the whole within `maxBytes` (at
// least the rest of the document is written): the newest in the order a stop would leave them in
// history, so those shown before history. `written` says how many were, of both.
[[nodiscard]] std::string serializeState(const SavedState& state, const std::vector<const nlohmann::json*>& shownLastFirst,
                                         const std::vector<const nlohmann::json*>& newestFirst,
                                         size_t maxBytes = kMaxStateFileBytes, size_t* written = nullptr);
// The same with state.shown and state.history as the entries.
[[nodiscard]] std::string serializeState(const SavedState& state, size_t maxBytes = kMaxStateFileBytes, size_t* written = nullptr);
// The first id to hand out after a start with this state: never 0, never one handed out before.
[[nodiscard]] uint32_t firstId(const SavedState& state);
// The next id after `id` (wrapping past UINT32_MAX to 1).
[[nodiscard]] uint32_t followingId(uint32_t id);

// $XDG_STATE_HOME/qsd/notifications.json, or ~/.local/state/qsd/notifications.json; "" when
// neither variable is set.
[[nodiscard]] std::string statePath();

} // namespace qsd::notifications
