#include "dispatcher.hpp"

#include "client.hpp"
#include "../log.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

namespace qsd {

using json = nlohmann::json;
using rpc::ErrorCode;

// A batch answers once every member has completed, as one array (nothing if all were
// notifications), in the order they completed.
struct Batch {
	std::weak_ptr<ClientSession> client;
	size_t outstanding = 0;
	std::string responses;   // the members' answers so far, as text: "[a,b"
	bool sealed = false;     // all members dispatched
	bool sent = false;
	// Names this batch to the subscriptions made in it, whose notifications wait for its answer
	// (ClientSession::subscribe).
	uint64_t ticket = ++lastTicket;
	static inline uint64_t lastTicket = 0;

	void add(std::string_view response) {
		responses.push_back(responses.empty() ? '[' : ',');
		responses.append(response);
	}
	void maybeSend() {
		if (!sealed || outstanding > 0 || sent) return;
		sent = true;
		auto c = client.lock();
		if (!c) return;
		if (responses.empty()) {   // notifications only: no answer for anything to follow
			c->releaseHeld(ticket);
			return;
		}
		responses.push_back(']');
		responses.push_back('\n');
		c->sendResponseLine(std::exchange(responses, {}), ticket);
	}
};

// An id of a type JSON-RPC allows is echoed in the answer; any other is answered with null.
static bool echoable(const json& id) { return id.is_string() || id.is_number() || id.is_null(); }

namespace detail {
struct Completion {
	std::weak_ptr<ClientSession> client;
	json id;
	bool notification = false;
	bool done = false;
	std::shared_ptr<Batch> batch;
	std::string method;
	bool inFlight = false;   // counted by the client (callStarted) until it is answered

	void complete(const json& response) { completeText(response.is_null() ? std::string() : rpc::dump(response)); }
	// `response` is the answer's text (empty for a notification's, which is not sent).
	void completeText(std::string response) {
		if (done) return;
		done = true;
		if (inFlight)
			if (auto c = client.lock()) c->callEnded();
		if (batch) {
			if (!notification) batch->add(response);
			--batch->outstanding;
			batch->maybeSend();
			return;
		}
		if (notification) return;
		response += '\n';
		if (auto c = client.lock()) c->sendResponseLine(std::move(response));
	}
};
} // namespace detail

Responder::Responder(std::shared_ptr<detail::Completion> completion)
    : completion_(std::move(completion)), uncaught_(std::uncaught_exceptions()) {}

Responder::~Responder() {
	if (!completion_ || completion_->done) return;
	// Unwinding from the handler: the dispatcher answers with the exception's error.
	if (std::uncaught_exceptions() > uncaught_) return;
	log::warning("rpc", "request {} was dropped without an answer", completion_->method);
	completion_->complete(rpc::makeError(completion_->id, {ErrorCode::InternalError, "The request was abandoned", nullptr}));
}

void Responder::result(json value) {
	if (!completion_) return;
	// A notification is never answered: its result is not even built (a flood of notifications
	// spent a fifth of its time on answers nobody would get).
	if (completion_->notification) return completion_->complete(nullptr);
	completion_->complete(rpc::makeResult(completion_->id, std::move(value)));
}

std::string Responder::beginResult() const {
	if (!completion_ || completion_->notification) return {};
	return rpc::resultHead(completion_->id);
}

void Responder::endResult(std::string text) {
	if (!completion_) return;
	if (completion_->notification) return completion_->complete(nullptr);
	text.push_back('}');
	completion_->completeText(std::move(text));
}

void Responder::error(rpc::Error e) {
	if (!completion_) return;
	if (completion_->notification) return completion_->complete(nullptr);
	completion_->complete(rpc::makeError(completion_->id, e));
}

void Responder::error(rpc::ErrorCode code, std::string message, json data) {
	error(rpc::Error{code, std::move(message), std::move(data)});
}

bool Responder::isNotification() const { return completion_ && completion_->notification; }

uint64_t Responder::batchTicket() const { return completion_ && completion_->batch ? completion_->batch->ticket : 0; }

std::shared_ptr<ClientSession> Responder::client() const {
	return completion_ ? completion_->client.lock() : nullptr;
}

void Dispatcher::add(std::string method, SyncHandler handler) {
	addAsync(std::move(method), [h = std::move(handler)](const json& params, Responder responder, ClientSession& client) {
		responder.result(h(params, client));
	});
}

void Dispatcher::addAsync(std::string method, AsyncHandler handler) {
	if (handlers_.count(method)) throw std::logic_error("duplicate method " + method);
	handlers_.emplace(std::move(method), std::make_shared<const AsyncHandler>(std::move(handler)));
}

void Dispatcher::remove(std::string_view method) { handlers_.erase(std::string(method)); }

bool Dispatcher::has(std::string_view method) const { return handlers_.count(std::string(method)) > 0; }

std::vector<std::string> Dispatcher::methods() const {
	std::vector<std::string> names;
	names.reserve(handlers_.size());
	for (const auto& [name, _]: handlers_) names.push_back(name);
	std::sort(names.begin(), names.end());
	return names;
}

void Dispatcher::dispatch(ClientSession& client, std::string_view line) {
	// Blank lines are keep-alives, not requests.
	if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
	if (rpc::nestingDepth(line) > limits_.maxDepth) {
		client.sendResponse(rpc::makeError(nullptr, {ErrorCode::ParseError, "Parse error: nesting too deep",
		                                             {{"limit", "depth"}, {"max", limits_.maxDepth}}}));
		return;
	}
	auto parsed = rpc::parse(line, limits_.maxDepth);
	if (!parsed) {
		client.sendResponse(rpc::makeError(nullptr, {ErrorCode::ParseError, "Parse error", nullptr}));
		return;
	}
	const json& message = *parsed;
	if (message.is_array()) {
		if (message.empty()) {
			client.sendResponse(rpc::makeError(nullptr, {ErrorCode::InvalidRequest, "Invalid Request: empty batch", nullptr}));
			return;
		}
		if (message.size() > limits_.maxBatch) {
			client.sendResponse(rpc::makeError(nullptr, {ErrorCode::InvalidRequest, "Invalid Request: batch too large",
			                                             {{"limit", "batch"}, {"max", limits_.maxBatch}}}));
			return;
		}
		auto batch = std::make_shared<Batch>();
		batch->client = client.weak();
		batch->outstanding = message.size();
		// The answers are built up in one line, which the connection's queue budget sees only
		// once whole: 256 rpc.discover in one 15 KB line made a 70 MB answer. Members that come
		// after the answers passed the budget are refused instead of run.
		size_t budget = client.limits().maxQueuedBytes;
		for (const auto& m: message) {
			if (batch->responses.size() < budget) {
				dispatchOne(client, m, batch);
				continue;
			}
			json id = m.is_object() && m.contains("id") && echoable(m["id"]) ? m["id"] : json();
			bool notification = m.is_object() && !m.contains("id");
			if (!notification)
				batch->add(rpc::dump(rpc::makeError(id, {ErrorCode::LimitExceeded, "The batch's answers are too large",
				                                         {{"limit", "batchAnswerBytes"}, {"max", budget}}})));
			--batch->outstanding;
		}
		batch->sealed = true;
		batch->maybeSend();
		return;
	}
	dispatchOne(client, message, nullptr);
}

void Dispatcher::dispatchOne(ClientSession& client, const json& message, std::shared_ptr<Batch> batch) {
	auto completion = std::make_shared<detail::Completion>();
	completion->client = client.weak();
	completion->batch = std::move(batch);

	auto invalid = [&](const char* why, json id) {
		completion->id = std::move(id);
		completion->complete(rpc::makeError(completion->id, {ErrorCode::InvalidRequest, std::string("Invalid Request: ") + why, nullptr}));
	};

	if (!message.is_object()) return invalid("not an object", nullptr);
	// The id is echoed only when it is of a valid type; otherwise the spec says null.
	json id = nullptr;
	bool hasId = message.contains("id");
	if (hasId) {
		const auto& i = message["id"];
		if (echoable(i)) id = i;
		else return invalid("id must be a string, a number or null", nullptr);
	}
	auto jr = message.find("jsonrpc");
	if (jr == message.end() || !jr->is_string() || *jr != "2.0") return invalid("jsonrpc must be \"2.0\"", id);
	auto m = message.find("method");
	if (m == message.end() || !m->is_string()) return invalid("method must be a string", id);
	auto p = message.find("params");
	if (p != message.end() && !p->is_object() && !p->is_array()) return invalid("params must be an object or an array", id);

	completion->id = id;
	completion->notification = !hasId;
	completion->method = m->get<std::string>();

	auto it = handlers_.find(completion->method);
	if (it == handlers_.end()) {
		completion->complete(rpc::makeError(id, {ErrorCode::MethodNotFound, "Method not found", {{"method", completion->method}}}));
		return;
	}
	static const json emptyParams = json::object();
	const json& params = p == message.end() ? emptyParams : *p;
	try {
		if (!params.is_object()) throw rpc::RpcException(ErrorCode::InvalidParams, "Invalid params: params must be an object", {{"param", "params"}, {"expected", "an object"}});
		// Hold the handler: it may unregister itself (a backend stopping) while running.
		auto handler = it->second;
		(*handler)(params, Responder(completion), client);
		if (!completion->done) {
			completion->inFlight = true;
			client.callStarted();
		}
	} catch (const rpc::RpcException& e) {
		completion->complete(rpc::makeError(id, e.error));
	} catch (const json::exception& e) {
		completion->complete(rpc::makeError(id, {ErrorCode::InvalidParams, std::string("Invalid params: ") + e.what(), nullptr}));
	} catch (const std::exception& e) {
		log::error("rpc", "method {} failed: {}", completion->method, e.what());
		completion->complete(rpc::makeError(id, {ErrorCode::InternalError, "Internal error", {{"what", e.what()}}}));
	}
}

} // namespace qsd
