#include "render.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

namespace qsctl {

namespace {

std::string dumpJson(const json& v, int indent = -1) {
	return v.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string pad(std::string s, size_t width) {
	if (s.size() < width) s.append(width - s.size(), ' ');
	return s;
}

// Resolves a local "$ref" ("#/components/schemas/X") against the document; one level.
const json& resolve(const json& doc, const json& node) {
	if (!node.is_object()) return node;
	auto it = node.find("$ref");
	if (it == node.end() || !it->is_string()) return node;
	const auto& ref = it->get_ref<const std::string&>();
	if (ref.rfind("#/", 0) != 0) return node;
	try {
		json::json_pointer ptr(ref.substr(1));
		if (doc.contains(ptr)) return doc.at(ptr);
	} catch (const json::exception&) {
	}
	return node;
}

std::string refName(const std::string& ref) {
	auto slash = ref.rfind('/');
	return slash == std::string::npos ? ref : ref.substr(slash + 1);
}

std::string numberText(const json& v) { return dumpJson(v); }

// A one-line summary of a JSON Schema: "string", "\"on\"|\"off\"", "Device", "number (0..1)".
std::string typeOf(const json& s) {
	if (!s.is_object()) return "any";
	if (auto it = s.find("$ref"); it != s.end() && it->is_string()) return refName(it->get<std::string>());
	if (auto it = s.find("const"); it != s.end()) return dumpJson(*it);
	if (auto it = s.find("enum"); it != s.end() && it->is_array()) {
		std::string out;
		for (const auto& v: *it) {
			if (!out.empty()) out += '|';
			out += dumpJson(v);
		}
		return out;
	}
	for (const char* key: {"oneOf", "anyOf"}) {
		if (auto it = s.find(key); it != s.end() && it->is_array()) {
			std::string out;
			for (const auto& v: *it) {
				if (!out.empty()) out += " | ";
				out += typeOf(v);
			}
			return out;
		}
	}
	std::string out = "any";
	if (auto it = s.find("type"); it != s.end()) {
		if (it->is_string()) {
			out = it->get<std::string>();
			if (out == "array") {
				if (auto items = s.find("items"); items != s.end()) out = typeOf(*items) + "[]";
			}
		} else if (it->is_array()) {
			out.clear();
			for (const auto& t: *it) {
				if (!out.empty()) out += '|';
				out += t.is_string() ? t.get<std::string>() : "?";
			}
		}
	}
	auto min = s.find("minimum"), max = s.find("maximum");
	if (min != s.end() || max != s.end())
		out += " (" + (min != s.end() ? numberText(*min) : "") + ".." + (max != s.end() ? numberText(*max) : "") + ")";
	return out;
}

std::string text(const json& obj, const char* key) {
	if (!obj.is_object()) return {};
	auto it = obj.find(key);
	return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Descriptions in the API document are long single lines: fill them to this width, which
// reads well in a terminal and in a pager.
constexpr size_t WIDTH = 100;

// Fills one paragraph (no newlines) into lines of at most `width` columns where words allow;
// the first line continues after `used` columns, the others start with `indent` spaces.
std::string fill(const std::string& text, size_t used, size_t indent, size_t width = WIDTH) {
	std::string out;
	size_t column = used;
	size_t i = 0;
	bool first = true;
	while (i < text.size()) {
		while (i < text.size() && text[i] == ' ') ++i;
		auto end = text.find(' ', i);
		if (end == std::string::npos) end = text.size();
		if (end == i) break;
		auto word = std::string_view(text).substr(i, end - i);
		if (!first && column + 1 + word.size() > width) {
			out += '\n';
			out.append(indent, ' ');
			column = indent;
		} else if (!first) {
			out += ' ';
			++column;
		}
		out += word;
		column += word.size();
		first = false;
		i = end;
	}
	return out;
}

// Multi-line text, each paragraph filled and indented by `indent` spaces.
std::string indented(const std::string& body, size_t indent) {
	std::string out, prefix(indent, ' ');
	size_t start = 0;
	while (start < body.size()) {
		auto nl = body.find('\n', start);
		auto line = body.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
		out += line.empty() ? "" : prefix + fill(line, indent, indent);
		out += '\n';
		if (nl == std::string::npos) break;
		start = nl + 1;
	}
	return out;
}

// Rows of "name  type  notes" with aligned columns.
struct Row {
	std::string name, type, notes;
};

std::string table(const std::vector<Row>& rows, size_t indent) {
	size_t w1 = 0, w2 = 0;
	for (const auto& r: rows) {
		w1 = std::max(w1, r.name.size());
		w2 = std::max(w2, r.type.size());
	}
	std::string out;
	for (const auto& r: rows) {
		std::string line = std::string(indent, ' ') + pad(r.name, w1 + 2);
		if (r.notes.empty()) {
			// Two columns: the second is the text that may need filling (a summary).
			line += fill(r.type, line.size(), indent + w1 + 2);
		} else {
			line = pad(line + r.type, indent + w1 + 2 + w2 + 2);
			line += fill(r.notes, line.size(), indent + w1 + 2 + w2 + 2);
		}
		while (!line.empty() && line.back() == ' ') line.pop_back();
		out += line + '\n';
	}
	return out;
}

// The properties of an object schema (after $ref resolution) as rows.
std::vector<Row> propertyRows(const json& doc, const json& schema) {
	std::vector<Row> rows;
	const auto& s = resolve(doc, schema);
	if (!s.is_object()) return rows;
	auto props = s.find("properties");
	if (props == s.end() || !props->is_object()) return rows;
	std::vector<std::string> required;
	if (auto r = s.find("required"); r != s.end() && r->is_array())
		for (const auto& v: *r)
			if (v.is_string()) required.push_back(v.get<std::string>());
	for (const auto& [name, prop]: props->items()) {
		bool req = std::find(required.begin(), required.end(), name) != required.end();
		std::string notes = text(prop, "description");
		if (!req) notes = notes.empty() ? "(optional)" : "(optional) " + notes;
		rows.push_back({name, typeOf(prop), notes});
	}
	return rows;
}

std::string firstLine(std::string s) {
	if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
	return s;
}

bool parseDateTime(const std::string& t, std::tm& tm, double& fraction) {
	int year, mon, day, hour, min, sec;
	int consumed = 0;
	if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &mon, &day, &hour, &min, &sec, &consumed) != 6)
		return false;
	tm = {};
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	fraction = 0;
	size_t i = size_t(consumed);
	if (i < t.size() && t[i] == '.') {
		double scale = 0.1;
		for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, scale /= 10) fraction += (t[i] - '0') * scale;
	}
	return i < t.size() && (t[i] == 'Z' || t[i] == 'z') && i + 1 == t.size();
}

} // namespace

std::string formatValue(const json& value, Style style) {
	std::string out;
	if (style == Style::Raw && value.is_string()) out = value.get<std::string>();
	else out = dumpJson(value, style == Style::Pretty ? 2 : -1);
	out += '\n';
	return out;
}

std::optional<double> parseRfc3339(const std::string& text) {
	std::tm tm{};
	double fraction = 0;
	if (!parseDateTime(text, tm, fraction)) return std::nullopt;
	auto t = ::timegm(&tm);
	if (t == time_t(-1)) return std::nullopt;
	return double(t) + fraction;
}

std::string formatDuration(double seconds) {
	if (!(seconds >= 0)) seconds = 0;
	auto s = static_cast<long long>(std::floor(seconds));
	long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
	char buf[64];
	if (d > 0) std::snprintf(buf, sizeof buf, "%lldd %lldh %lldm", d, h, m);
	else if (h > 0) std::snprintf(buf, sizeof buf, "%lldh %lldm %llds", h, m, sec);
	else if (m > 0) std::snprintf(buf, sizeof buf, "%lldm %llds", m, sec);
	else std::snprintf(buf, sizeof buf, "%llds", sec);
	return buf;
}

const json* findMethod(const json& doc, const std::string& name) {
	auto methods = doc.find("methods");
	if (methods == doc.end() || !methods->is_array()) return nullptr;
	for (const auto& m: *methods)
		if (text(m, "name") == name) return &m;
	return nullptr;
}

static std::vector<Row> methodRows(const json& doc, const std::string& prefix) {
	std::vector<Row> rows;
	auto methods = doc.find("methods");
	if (methods == doc.end() || !methods->is_array()) return rows;
	for (const auto& m: *methods) {
		auto name = text(m, "name");
		if (name.empty() || name.rfind(prefix, 0) != 0) continue;
		auto summary = text(m, "summary");
		if (summary.empty()) summary = firstLine(text(m, "description"));
		rows.push_back({name, summary, {}});
	}
	return rows;
}

std::string describeAll(const json& doc) {
	std::string out = "Methods:\n" + table(methodRows(doc, ""), 2);
	if (auto events = doc.find("x-events"); events != doc.end() && events->is_array() && !events->empty()) {
		std::vector<Row> rows;
		for (const auto& e: *events) rows.push_back({text(e, "name"), text(e, "summary"), {}});
		out += "\nEvents (events.subscribe):\n" + table(rows, 2);
	}
	out += "\nqsctl describe METHOD shows its params, result and errors.\n";
	return out;
}

std::string describePrefix(const json& doc, const std::string& prefix) {
	auto rows = methodRows(doc, prefix);
	return rows.empty() ? std::string() : table(rows, 0);
}

std::optional<std::string> describeMethod(const json& doc, const std::string& name) {
	const json* m = findMethod(doc, name);
	if (!m) return std::nullopt;
	std::string out = name;
	if (auto summary = text(*m, "summary"); !summary.empty()) out += " - " + summary;
	out = fill(out, 0, 2) + '\n';
	if (auto description = text(*m, "description"); !description.empty()) out += '\n' + indented(description, 2);

	std::vector<Row> params;
	std::string usage = "qsctl call " + name;
	if (auto ps = m->find("params"); ps != m->end() && ps->is_array()) {
		for (const auto& p0: *ps) {
			const auto& p = resolve(doc, p0);
			auto pname = text(p, "name");
			bool required = p.value("required", false);
			std::string type = p.contains("schema") ? typeOf(p["schema"]) : "any";
			auto notes = text(p, "description");
			if (notes.empty()) notes = text(p, "summary");
			if (!required) notes = notes.empty() ? "(optional)" : "(optional) " + notes;
			params.push_back({pname, type, notes});
			usage += required ? " " + pname + "=VALUE" : " [" + pname + "=VALUE]";
		}
	}
	out += "\nParams:\n";
	out += params.empty() ? "  (none)\n" : table(params, 2);

	if (auto r = m->find("result"); r != m->end() && r->is_object()) {
		const auto& result = resolve(doc, *r);
		std::string type = result.contains("schema") ? typeOf(result["schema"]) : "any";
		out += "\nResult: " + type;
		if (auto d = text(result, "description"); !d.empty()) out += " - " + firstLine(d);
		out += '\n';
		if (result.contains("schema")) out += table(propertyRows(doc, result["schema"]), 2);
	}

	if (auto es = m->find("errors"); es != m->end() && es->is_array() && !es->empty()) {
		std::vector<Row> rows;
		for (const auto& e0: *es) {
			const auto& e = resolve(doc, e0);
			std::string code = e.contains("code") ? dumpJson(e["code"]) : "?";
			rows.push_back({code, text(e, "message"), {}});
		}
		out += "\nErrors:\n" + table(rows, 2);
	}
	out += "\nUsage: " + usage + '\n';
	return out;
}

std::optional<std::string> describeEvent(const json& doc, const std::string& name) {
	auto events = doc.find("x-events");
	if (events == doc.end() || !events->is_array()) return std::nullopt;
	for (const auto& e: *events) {
		if (text(e, "name") != name) continue;
		std::string out = name + " (event)";
		if (auto summary = text(e, "summary"); !summary.empty()) out += " - " + summary;
		out = fill(out, 0, 2) + '\n';
		if (auto description = text(e, "description"); !description.empty()) out += '\n' + indented(description, 2);
		if (e.contains("data")) {
			out += "\nData: " + typeOf(e["data"]) + '\n';
			out += table(propertyRows(doc, e["data"]), 2);
		}
		return out;
	}
	return std::nullopt;
}

std::string renderStatus(const json& daemon, const json& revision, double now) {
	auto str = [&](const char* key) { return daemon.contains(key) ? (daemon[key].is_string() ? daemon[key].get<std::string>() : dumpJson(daemon[key])) : std::string("?"); };
	std::string out = "qsd " + str("version") + ", protocol " + str("protocol");
	if (daemon.contains("pid")) out += ", pid " + str("pid");
	out += '\n';
	std::vector<Row> rows;
	std::string epoch = str("epoch");
	if (!revision.is_null()) epoch += " (revision " + dumpJson(revision) + ")";
	rows.push_back({"epoch", epoch, {}});
	auto started = str("startedAt");
	if (auto t = parseRfc3339(started)) started += " (up " + formatDuration(now - *t) + ")";
	rows.push_back({"started", started, {}});
	rows.push_back({"clients", str("clients"), {}});
	const json* backends = daemon.contains("backends") ? &daemon["backends"] : nullptr;
	bool none = !backends || !backends->is_object() || backends->empty();
	rows.push_back({"backends", none ? "none" : "", {}});
	out += table(rows, 0);
	if (none) return out;
	std::vector<Row> brows;
	for (const auto& [id, b]: backends->items()) {
		std::string state = b.is_object() && b.contains("state") && b["state"].is_string() ? b["state"].get<std::string>() : "?";
		std::string notes;
		if (b.is_object() && b.contains("since") && b["since"].is_string()) {
			auto since = b["since"].get<std::string>();
			notes = "since " + since;
			if (auto t = parseRfc3339(since)) notes += " (" + formatDuration(now - *t) + ")";
		}
		if (b.is_object() && b.contains("error") && !b["error"].is_null()) {
			const auto& e = b["error"];
			notes += (notes.empty() ? "" : ": ") + (e.is_string() ? e.get<std::string>() : dumpJson(e));
		}
		brows.push_back({id, state, notes});
	}
	out += table(brows, 2);
	return out;
}

std::string describeError(const json& error) {
	if (!error.is_object()) return dumpJson(error);
	std::string out = text(error, "message");
	if (out.empty()) out = "error";
	if (error.contains("code")) out += " (code " + dumpJson(error["code"]) + ")";
	if (error.contains("data") && !error["data"].is_null()) out += ": " + dumpJson(error["data"]);
	return out;
}

} // namespace qsctl
