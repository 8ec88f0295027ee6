#pragma once
// JSON-RPC 2.0 dispatch: parse, validate, route batches and single requests to handlers, and
// deliver each response exactly once, even when a handler completes later (async D-Bus).

#include <qsd/protocol/jsonrpc.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qsd {

class ClientSession;

namespace detail {
struct Completion;
}

// Move-only completion handle of one request. Completing twice is ignored. Dropping it without
// completing sends an internal error, so no request is ever left without an answer.
class Responder {
public:
	explicit Responder(std::shared_ptr<detail::Completion> completion);
	Responder(Responder&&) noexcept = default;
	Responder& operator=(Responder&&) noexcept = default;
	Responder(const Responder&) = delete;
	Responder& operator=(const Responder&) = delete;
	~Responder();

	void result(nlohmann::json value);
	// A result written as text where it lives (rpc::JsonWriter), into the answer itself:
	// beginResult() gives the answer's text up to the result (empty for a notification, which
	// gets no answer), the handler appends the result's JSON, and endResult() sends it.
	[[nodiscard]] std::string beginResult() const;
	void endResult(std::string text);
	void error(rpc::Error error);
	void error(rpc::ErrorCode code, std::string message, nlohmann::json data = nullptr);
	[[nodiscard]] bool isNotification() const;
	// The batch the request is a member of (0: none): its answer is sent with the others', once
	// all are done.
	[[nodiscard]] uint64_t batchTicket() const;
	// The client that sent the request, or nullptr once it disconnected.
	[[nodiscard]] std::shared_ptr<ClientSession> client() const;

private:
	std::shared_ptr<detail::Completion> completion_;
	int uncaught_ = 0;
};

struct DispatchLimits {
	size_t maxBatch = 256;
	size_t maxDepth = 64;
};

class Dispatcher {
public:
	using json = nlohmann::json;
	// Returns the result; throws rpc::RpcException for an error response.
	using SyncHandler = std::function<json(const json& params, ClientSession& client)>;
	// Completes through the responder, now or later. May throw rpc::RpcException before
	// completing, which is answered like a synchronous error.
	using AsyncHandler = std::function<void(const json& params, Responder responder, ClientSession& client)>;

	explicit Dispatcher(DispatchLimits limits = {}): limits_(limits) {}

	// Duplicate names are a programming error (std::logic_error).
	void add(std::string method, SyncHandler handler);
	void addAsync(std::string method, AsyncHandler handler);
	void remove(std::string_view method);
	[[nodiscard]] bool has(std::string_view method) const;
	// The registered method names, sorted (checked against the API description by the tests).
	[[nodiscard]] std::vector<std::string> methods() const;

	// Handles one received line from `client` (which must be owned by a shared_ptr).
	void dispatch(ClientSession& client, std::string_view line);

	[[nodiscard]] const DispatchLimits& limits() const { return limits_; }

private:
	void dispatchOne(ClientSession& client, const json& message, std::shared_ptr<struct Batch> batch);

	DispatchLimits limits_;
	std::unordered_map<std::string, std::shared_ptr<const AsyncHandler>> handlers_;
};

// RAII registration of a backend's methods: removed from the dispatcher on destruction.
class MethodRegistration {
public:
	MethodRegistration() = default;
	MethodRegistration(Dispatcher& dispatcher, std::string method): dispatcher_(&dispatcher), method_(std::move(method)) {}
	MethodRegistration(MethodRegistration&& o) noexcept: dispatcher_(o.dispatcher_), method_(std::move(o.method_)) { o.dispatcher_ = nullptr; }
	MethodRegistration& operator=(MethodRegistration&& o) noexcept {
		if (this != &o) {
			if (dispatcher_) dispatcher_->remove(method_);
			dispatcher_ = o.dispatcher_;
			method_ = std::move(o.method_);
			o.dispatcher_ = nullptr;
		}
		return *this;
	}
	~MethodRegistration() {
		if (dispatcher_) dispatcher_->remove(method_);
	}

private:
	Dispatcher* dispatcher_ = nullptr;
	std::string method_;
};

} // namespace qsd
