#include "state.hpp"

#include <algorithm>
#include <cstdlib>

namespace qsd::notifications {

using json = nlohmann::json;

namespace {
constexpr int kVersion = 1;
} // namespace

std::optional<SavedState> parseState(const std::string& text, std::string* problems) {
	auto doc = json::parse(text, nullptr, false);
	if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
	SavedState s;
	std::string bad;
	auto note = [&](const char* field) { bad += bad.empty() ? field : std::string(", ") + field; };
	auto uint = [&](const char* field, auto& out, uint64_t max) {
		auto it = doc.find(field);
		if (it == doc.end()) return;
		if (it->is_number_unsigned() && it->template get<uint64_t>() <= max) out = static_cast<std::remove_reference_t<decltype(out)>>(it->template get<uint64_t>());
		else note(field);
	};
	auto boolean = [&](const char* field, bool& out) {
		auto it = doc.find(field);
		if (it == doc.end()) return;
		if (it->is_boolean()) out = it->get<bool>();
		else note(field);
	};
	uint("lastId", s.lastId, UINT32_MAX);
	uint("reservedId", s.reservedId, UINT32_MAX);
	boolean("clean", s.clean);
	boolean("dnd", s.dnd);
	uint("defaultTimeoutMs", s.defaultTimeoutMs, uint64_t(INT32_MAX));
	uint("historyLimit", s.historyLimit, kMaxHistoryLimit);
	if (auto it = doc.find("capabilities"); it != doc.end()) {
		std::optional<std::vector<std::string>> set;
		if (it->is_array() && std::all_of(it->begin(), it->end(), [](const json& v) { return v.is_string(); }))
			set = capabilitySet(it->get<std::vector<std::string>>());
		if (set) s.capabilities = std::move(*set);
		else note("capabilities");
	}
	auto entries = [&](const char* field, const char* entry, json& out) {
		auto it = doc.find(field);
		if (it == doc.end()) return;
		if (!it->is_array()) return note(field);
		for (auto& e: *it) {
			// An entry without its id cannot be shown; the others are checked when shown.
			if (e.is_object() && e.contains("id") && e["id"].is_number_unsigned() && e["id"].get<uint64_t>() >= 1 &&
			    e["id"].get<uint64_t>() <= UINT32_MAX)
				out.push_back(std::move(e));
			else note(entry);
		}
	};
	entries("history", "history entry", s.history);
	entries("shown", "shown entry", s.shown);
	if (problems) *problems = bad;
	return s;
}

std::string serializeState(const SavedState& s, const std::vector<const json*>& shownLastFirst, const std::vector<const json*>& newestFirst,
                           size_t maxBytes, size_t* written) {
	json doc = {{"version", kVersion},
	            {"lastId", s.lastId},
	            {"reservedId", s.reservedId},
	            {"clean", s.clean},
	            {"dnd", s.dnd},
	            {"defaultTimeoutMs", s.defaultTimeoutMs},
	            {"historyLimit", s.historyLimit},
	            {"capabilities", s.capabilities}};
	// The strings of the tree are valid UTF-8 already; replace keeps a write from ever failing.
	auto dump = [](const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); };
	auto head = dump(doc);
	head.pop_back();   // the closing brace: the entries go last
	head += ",\"shown\":[";
	const std::string middle = "],\"history\":[";
	const std::string tail = "]}\n";
	// Newest first, each entry dumped once, and no further than the budget: the cost of a write
	// is bounded by the budget too, however large history is in memory. Those shown are newer
	// than all history (a stop closes them last), and once one entry does not fit no older one
	// is written: what the file keeps is the newest, as a stop would leave history.
	std::vector<std::string> shown, history;
	size_t total = head.size() + middle.size() + tail.size();
	bool full = false;
	auto keep = [&](const std::vector<const json*>& entries, std::vector<std::string>& kept) {
		for (const json* entry: entries) {
			if (full) return;
			json e = *entry;
			for (const char* field: kRecomputedFields) e.erase(field);
			auto text = dump(e);
			if (total + text.size() + 1 > maxBytes) {
				full = true;
				return;
			}
			total += text.size() + 1;
			kept.push_back(std::move(text));
		}
	};
	keep(shownLastFirst, shown);
	keep(newestFirst, history);
	std::string out;
	out.reserve(total);
	auto append = [&](const std::vector<std::string>& kept) {
		for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
			if (it != kept.rbegin()) out += ',';
			out += *it;
		}
	};
	out += head;
	append(shown);
	out += middle;
	append(history);
	out += tail;
	if (written) *written = shown.size() + history.size();
	return out;
}

std::string serializeState(const SavedState& s, size_t maxBytes, size_t* written) {
	std::vector<const json*> shown, history;
	for (auto it = s.shown.rbegin(); it != s.shown.rend(); ++it) shown.push_back(&*it);
	for (auto it = s.history.rbegin(); it != s.history.rend(); ++it) history.push_back(&*it);
	return serializeState(s, shown, history, maxBytes, written);
}

uint32_t followingId(uint32_t id) { return id == UINT32_MAX ? 1 : id + 1; }

uint32_t firstId(const SavedState& s) {
	uint32_t last = s.clean ? s.lastId : std::max(s.lastId, s.reservedId);
	return followingId(last);
}

std::string statePath() {
	const char* state = std::getenv("XDG_STATE_HOME");
	if (state && *state == '/') return std::string(state) + "/qsd/notifications.json";
	const char* home = std::getenv("HOME");
	if (home && *home) return std::string(home) + "/.local/state/qsd/notifications.json";
	return {};
}

} // namespace qsd::notifications
