#include "qsd/protocol/jsonrpc.hpp"

#include <cmath>
#include <limits>

namespace qsd::rpc {

const char* defaultMessage(ErrorCode code) {
	switch (code) {
	case ErrorCode::ParseError: return "Parse error";
	case ErrorCode::InvalidRequest: return "Invalid Request";
	case ErrorCode::MethodNotFound: return "Method not found";
	case ErrorCode::InvalidParams: return "Invalid params";
	case ErrorCode::InternalError: return "Internal error";
	case ErrorCode::BackendUnavailable: return "Backend unavailable";
	case ErrorCode::NotFound: return "Not found";
	case ErrorCode::BackendFailed: return "Backend call failed";
	case ErrorCode::LimitExceeded: return "Limit exceeded";
	case ErrorCode::PermissionDenied: return "Permission denied";
	}
	return "Error";
}

json Error::toJson() const {
	json e = {{"code", static_cast<int>(code)}, {"message", message.empty() ? defaultMessage(code) : message}};
	if (!data.is_null()) e["data"] = data;
	return e;
}

std::string dump(const json& value) {
	return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

JsonWriter::JsonWriter(std::string& out)
    : out_(out), serializer_(nlohmann::detail::output_adapter<char>(out), ' ', json::error_handler_t::replace) {}

namespace {
// Whether nlohmann's serializer writes `text` unchanged between its quotes: printable ASCII
// without '"' and '\\'. It escapes those and control characters, and checks UTF-8 past 0x7F
// byte by byte (about 30 instructions a byte), which made most of a whole-tree snapshot's cost:
// icons' data URLs and paths, names and labels are plain.
bool plainText(std::string_view text) {
	for (unsigned char c: text)
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return false;
	return true;
}
} // namespace

// The same text as json::dump(), compact, with invalid UTF-8 replaced (dump()'s error handler
// here): objects and arrays are walked here so that their plain strings and member names are
// copied as they are; anything else is nlohmann's to write.
JsonWriter& JsonWriter::value(const json& value) {
	switch (value.type()) {
	case json::value_t::object: {
		out_ += '{';
		bool first = true;
		for (const auto& [name, member]: value.get_ref<const json::object_t&>()) {
			if (!first) out_ += ',';
			first = false;
			key(name);
			this->value(member);
		}
		out_ += '}';
		return *this;
	}
	case json::value_t::array: {
		out_ += '[';
		bool first = true;
		for (const auto& element: value.get_ref<const json::array_t&>()) {
			if (!first) out_ += ',';
			first = false;
			this->value(element);
		}
		out_ += ']';
		return *this;
	}
	case json::value_t::string:
		if (const auto& text = value.get_ref<const std::string&>(); plainText(text)) {
			out_ += '"';
			out_ += text;
			out_ += '"';
			return *this;
		}
		break;
	default:
		break;
	}
	serializer_.dump(value, false, false, 0);
	return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
	if (plainText(name)) {
		out_ += '"';
		out_ += name;
		out_ += '"';
	} else {
		serializer_.dump(json(name), false, false, 0);
	}
	out_ += ':';
	return *this;
}

std::string resultHead(const json& id) {
	// makeResult's members in nlohmann's order (sorted): id, jsonrpc, result.
	std::string text;
	JsonWriter(text).raw(R"({"id":)").value(id).raw(R"(,"jsonrpc":"2.0","result":)");
	return text;
}

std::string toLine(const json& message) {
	auto line = dump(message);
	line.push_back('\n');
	return line;
}

json makeRequest(const json& id, std::string_view method, json params) {
	json m = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
	if (!params.is_null()) m["params"] = std::move(params);
	return m;
}

json makeNotification(std::string_view method, json params) {
	json m = {{"jsonrpc", "2.0"}, {"method", method}};
	if (!params.is_null()) m["params"] = std::move(params);
	return m;
}

json makeResult(const json& id, json result) {
	return {{"jsonrpc", "2.0"}, {"result", std::move(result)}, {"id", id}};
}

json makeError(const json& id, const Error& error) {
	return {{"jsonrpc", "2.0"}, {"error", error.toJson()}, {"id", id}};
}

size_t nestingDepth(std::string_view text) {
	size_t depth = 0, maxDepth = 0;
	bool inString = false, escaped = false;
	for (char c: text) {
		if (inString) {
			if (escaped) escaped = false;
			else if (c == '\\') escaped = true;
			else if (c == '"') inString = false;
			continue;
		}
		switch (c) {
		case '"': inString = true; break;
		case '[':
		case '{':
			if (++depth > maxDepth) maxDepth = depth;
			break;
		case ']':
		case '}':
			if (depth > 0) --depth;
			break;
		default: break;
		}
	}
	return maxDepth;
}

std::optional<json> parse(std::string_view text, size_t maxDepth) {
	// nlohmann's parser and destructor recurse per nesting level; refuse deep input before
	// parsing so a 100 000-deep line cannot exhaust the stack.
	if (nestingDepth(text) > maxDepth) return std::nullopt;
	auto j = json::parse(text.begin(), text.end(), nullptr, false);
	if (j.is_discarded()) return std::nullopt;
	return j;
}

Params::Params(const json& params): params_(params) {}

const json* Params::find(const char* name) const {
	if (!params_.is_object()) return nullptr;
	auto it = params_.find(name);
	if (it == params_.end()) return nullptr;
	return &*it;
}

bool Params::has(const char* name) const { return find(name) != nullptr; }

void Params::fail(const char* name, const char* expected) {
	throw RpcException(ErrorCode::InvalidParams,
	                   std::string("Invalid params: '") + name + "' must be " + expected,
	                   json{{"param", name}, {"expected", expected}});
}

std::string Params::string(const char* name) const {
	auto v = find(name);
	if (!v || !v->is_string()) fail(name, "a string");
	return v->get<std::string>();
}

std::optional<std::string> Params::optString(const char* name) const {
	auto v = find(name);
	if (!v || v->is_null()) return std::nullopt;
	if (!v->is_string()) fail(name, "a string");
	return v->get<std::string>();
}

bool Params::boolean(const char* name) const {
	auto v = find(name);
	if (!v || !v->is_boolean()) fail(name, "a boolean");
	return v->get<bool>();
}

std::optional<bool> Params::optBoolean(const char* name) const {
	auto v = find(name);
	if (!v || v->is_null()) return std::nullopt;
	if (!v->is_boolean()) fail(name, "a boolean");
	return v->get<bool>();
}

double Params::number(const char* name) const {
	auto v = find(name);
	if (!v || !v->is_number()) fail(name, "a number");
	return v->get<double>();
}

std::optional<double> Params::optNumber(const char* name) const {
	auto v = find(name);
	if (!v || v->is_null()) return std::nullopt;
	if (!v->is_number()) fail(name, "a number");
	return v->get<double>();
}

static bool integral(const json& v) {
	if (v.is_number_integer()) return true;
	if (!v.is_number_float()) return false;
	double d = v.get<double>();
	return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15;
}

int64_t Params::integer(const char* name) const {
	auto v = find(name);
	if (!v || !integral(*v)) fail(name, "an integer");
	if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
		fail(name, "an integer");
	return v->is_number_float() ? int64_t(v->get<double>()) : v->get<int64_t>();
}

std::optional<int64_t> Params::optInteger(const char* name) const {
	auto v = find(name);
	if (!v || v->is_null()) return std::nullopt;
	return integer(name);
}

const json& Params::object(const char* name) const {
	auto v = find(name);
	if (!v || !v->is_object()) fail(name, "an object");
	return *v;
}

const json& Params::array(const char* name) const {
	auto v = find(name);
	if (!v || !v->is_array()) fail(name, "an array");
	return *v;
}

const json& Params::any(const char* name) const {
	auto v = find(name);
	if (!v) fail(name, "present");
	return *v;
}

} // namespace qsd::rpc
