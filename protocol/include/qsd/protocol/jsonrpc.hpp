#pragma once
// JSON-RPC 2.0 message helpers shared by the daemon, qsctl and the QML client. No I/O here.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace qsd::rpc {

using json = nlohmann::json;

// The protocol number: bumped only for incompatible changes (docs/protocol.md, "Compatibility").
inline constexpr int PROTOCOL_VERSION = 1;

enum class ErrorCode : int {
	ParseError = -32700,
	InvalidRequest = -32600,
	MethodNotFound = -32601,
	InvalidParams = -32602,
	InternalError = -32603,
	// Application errors, documented in protocol/api/core.json.
	BackendUnavailable = -32000,
	NotFound = -32001,
	BackendFailed = -32002,
	LimitExceeded = -32003,
	PermissionDenied = -32004,
};

[[nodiscard]] const char* defaultMessage(ErrorCode code);

struct Error {
	ErrorCode code = ErrorCode::InternalError;
	std::string message;
	json data = nullptr;

	[[nodiscard]] json toJson() const;
};

// Thrown by parameter decoding and handlers; the dispatcher turns it into an error response.
struct RpcException : std::exception {
	explicit RpcException(Error e): error(std::move(e)) {}
	RpcException(ErrorCode code, std::string message, json data = nullptr)
	    : error{code, std::move(message), std::move(data)} {}
	[[nodiscard]] const char* what() const noexcept override { return error.message.c_str(); }
	Error error;
};

// Serialize one message as an NDJSON line (with the trailing '\n'). Never throws on invalid
// UTF-8: D-Bus and PipeWire strings are not guaranteed valid, so bad bytes become U+FFFD.
[[nodiscard]] std::string toLine(const json& message);
// The same without the newline.
[[nodiscard]] std::string dump(const json& value);

// Appends JSON text to `out` as dump() writes it, for a message assembled from parts that are
// serialized where they live: an answer that holds a part of the daemon's tree (a snapshot of
// it, tree.get) is written from the tree instead of from a copy of it in a json first, which
// for the whole tree was some 2 000 allocations of a few hundred kilobytes, made and freed
// for every subscriber, among the allocations that stay (what fragmented the daemon's heap).
class JsonWriter {
public:
	explicit JsonWriter(std::string& out);
	JsonWriter& value(const json& value);
	JsonWriter& key(std::string_view name);   // a member's name and its ':'
	JsonWriter& raw(std::string_view text) {  // text that is JSON already (punctuation, numbers)
		out_ += text;
		return *this;
	}

private:
	std::string& out_;
	nlohmann::detail::serializer<json> serializer_;
};

// The text of an answer to request `id` up to its result: the result's text and "}" after it
// make what dump(makeResult(id, result)) gives.
[[nodiscard]] std::string resultHead(const json& id);

[[nodiscard]] json makeRequest(const json& id, std::string_view method, json params = nullptr);
[[nodiscard]] json makeNotification(std::string_view method, json params = nullptr);
[[nodiscard]] json makeResult(const json& id, json result);
[[nodiscard]] json makeError(const json& id, const Error& error);

// Parse with the daemon's limits: malformed input or nesting deeper than maxDepth gives
// std::nullopt (a parse error), never an exception or unbounded recursion.
[[nodiscard]] std::optional<json> parse(std::string_view text, size_t maxDepth = 128);

// Nesting depth of the raw text (brackets outside strings), computed without recursion.
[[nodiscard]] size_t nestingDepth(std::string_view text);

// Typed access to `params` with errors that name the field (code -32602, data {param, expected}).
class Params {
public:
	explicit Params(const json& params);

	[[nodiscard]] const json& raw() const { return params_; }
	[[nodiscard]] bool has(const char* name) const;

	[[nodiscard]] std::string string(const char* name) const;
	[[nodiscard]] std::optional<std::string> optString(const char* name) const;
	[[nodiscard]] bool boolean(const char* name) const;
	[[nodiscard]] std::optional<bool> optBoolean(const char* name) const;
	[[nodiscard]] double number(const char* name) const;
	[[nodiscard]] std::optional<double> optNumber(const char* name) const;
	[[nodiscard]] int64_t integer(const char* name) const;
	[[nodiscard]] std::optional<int64_t> optInteger(const char* name) const;
	[[nodiscard]] const json& object(const char* name) const;
	[[nodiscard]] const json& array(const char* name) const;
	[[nodiscard]] const json& any(const char* name) const;

	[[noreturn]] static void fail(const char* name, const char* expected);

private:
	[[nodiscard]] const json* find(const char* name) const;
	const json& params_;
};

} // namespace qsd::rpc
