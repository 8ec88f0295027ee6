#include "answer.hpp"
#include "backend.hpp"

#include "../log.hpp"
#include "../server/client.hpp"

#include <qsd/protocol/api.hpp>

#include <array>
#include <chrono>
#include <ctime>
#include <stdexcept>

#include <fmt/format.h>

namespace qsd {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::RpcException;

const char* toString(BackendState state) {
	switch (state) {
	case BackendState::Starting: return "starting";
	case BackendState::Running: return "running";
	case BackendState::Unavailable: return "unavailable";
	case BackendState::Failed: return "failed";
	case BackendState::Stopped: return "stopped";
	}
	return "unknown";
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
	auto secs = std::time_t(ms / 1000);
	std::tm tm{};
	gmtime_r(&secs, &tm);
	char buf[32];
	std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	return fmt::format("{}.{:03d}Z", buf, int(ms % 1000));
}

std::string nowRfc3339() { return rfc3339(std::chrono::system_clock::now()); }

// ---------------------------------------------------------------------------------------------
// life cycle

void Backend::start() {
	if (started_) return;
	started_ = true;
	alive_ = std::make_shared<Backend*>(this);
	context_.tree.set(root(), initialRoot());
	registerMethods();
	onStart();
}

void Backend::stop() {
	if (!started_) return;
	started_ = false;
	// Leases and loop-owned callbacks made before now no longer reach this backend.
	alive_.reset();
	registrations_.clear();
	onStop();
	context_.tree.remove(root());
	setState(BackendState::Stopped);
}

void Backend::setState(BackendState state, std::string error) {
	if (state == state_ && error == error_) return;
	state_ = state;
	error_ = std::move(error);
	json entry = {{"state", toString(state)}, {"since", nowRfc3339()},
	              {"error", error_.empty() ? json(nullptr) : json(error_)}};
	context_.tree.set("/daemon/backends/" + std::string(id()), std::move(entry));
}

void Backend::emitEvent(const std::string& topic, const json& data) { context_.server.emitEvent(topic, data); }

RpcException Backend::unavailable(const Unavailable& why) const {
	return RpcException(ErrorCode::BackendUnavailable, fmt::format("{} is unavailable: {}", why.path, why.why),
	                    {{"backend", std::string(id())}, {"path", why.path}, {"reason", why.why}});
}

// ---------------------------------------------------------------------------------------------
// methods

void Backend::registerMethods() {
	for (const auto& m: methods()) {
		// A method the API description does not have is a bug caught at the first start: every
		// method is documented, and its params are checked against that description, which is
		// parsed at the method's first call (api::method): most methods are never called.
		if (!api::hasMethod(m.name)) throw std::logic_error("method " + std::string(m.name) + " is not in protocol/api");
		context_.dispatcher.addAsync(std::string(m.name),
		                             [this, &m](const json& params, Responder responder, ClientSession& client) {
			                             api::checkParams(*api::method(m.name), params);
			                             dispatch(m, params, std::move(responder), client);
		                             });
		registrations_.emplace_back(context_.dispatcher, std::string(m.name));
	}
}

// The order every method follows: params (checked by the caller against the API description),
// then availability, then the handler, whose lookups and calls may still fail. An sdbus::Error
// thrown while a call is being sent (a peer with an invalid name, a connection that broke) is
// the backend's failure, -32002 with its name, wherever it is thrown.
void Backend::dispatch(const Method& m, const json& params, Responder responder, ClientSession& client) {
	if (m.needsService) {
		if (auto why = precondition()) throw unavailable(*why);
		if (auto why = availability()) throw unavailable(*why);
	}
	Call call(*this, params, std::move(responder), client);
	try {
		m.invoke(*this, call);
	} catch (const RpcException& e) {
		call.fail(e.error);
	} catch (const sdbus::Error& e) {
		call.fail({ErrorCode::BackendFailed, e.getMessage().empty() ? e.getName() : e.getMessage(),
		           {{"backend", std::string(id())}, {"name", e.getName()}, {"message", e.getMessage()}}});
	}
}

// ---------------------------------------------------------------------------------------------
// Call

Call::Call(Backend& backend, const json& params, Responder responder, ClientSession& client)
    : backend_(backend), raw_(params), params_(params), client_(client), responder_(std::move(responder)) {}

Call::~Call() = default;

std::shared_ptr<Answer> Call::answer(std::string service) {
	if (!answer_) {
		if (!responder_) throw std::logic_error("Call::answer after takeResponder");
		answer_ = std::make_shared<Answer>(std::move(*responder_), std::string(backend_.id()),
		                                   service.empty() ? backend_.service() : std::move(service));
		responder_.reset();
	}
	return answer_;
}

void Call::result(json value) { answer()->result(std::move(value)); }

Responder Call::takeResponder() {
	if (!responder_) throw std::logic_error("Call::takeResponder twice, or after answer");
	Responder r = std::move(*responder_);
	responder_.reset();
	return r;
}

void Call::fail(rpc::Error error) {
	if (answer_) {
		if (answer_->done()) return;
		answer_->error(error.code, std::move(error.message), std::move(error.data));
	} else if (responder_) {
		responder_->error(std::move(error));
		responder_.reset();
	} else {
		// The handler took the responder and failed afterwards: the dispatcher answers with the
		// error (a later answer through the taken responder is ignored).
		throw RpcException(std::move(error));
	}
}

// ---------------------------------------------------------------------------------------------
// leases

namespace {
struct Lease {
	std::weak_ptr<Backend*> owner;
	std::function<void()> release;
	Lease(std::weak_ptr<Backend*> o, std::function<void()> r): owner(std::move(o)), release(std::move(r)) {}
	Lease(const Lease&) = delete;
	Lease& operator=(const Lease&) = delete;
	~Lease() {
		if (owner.expired() || !release) return;
		try {
			release();
		} catch (const std::exception& e) {
			log::error("qsd", "releasing a client's lease failed: {}", e.what());
		}
	}
};
} // namespace

void Backend::grantLease(ClientSession& client, const std::string& key, std::function<void()> release) {
	client.attach(key, std::make_shared<Lease>(alive_, std::move(release)));
}

bool Backend::revokeLease(ClientSession& client, const std::string& key) { return client.detach(key); }

// ---------------------------------------------------------------------------------------------
// the table

std::span<const BackendInfo> builtinBackends() {
	static const auto table = std::to_array<BackendInfo>({
#ifdef QSD_WITH_NM
	    {"nm", createNmBackend},
#endif
#ifdef QSD_WITH_UPOWER
	    {"upower", createUpowerBackend},
#endif
#ifdef QSD_WITH_PIPEWIRE
	    {"pipewire", createPipewireBackend},
#endif
#ifdef QSD_WITH_TRAY
	    {"tray", createTrayBackend},
#endif
#ifdef QSD_WITH_WAYLAND
	    {"wayland", createWaylandBackend},
#endif
#ifdef QSD_WITH_MPRIS
	    {"mpris", createMprisBackend},
#endif
#ifdef QSD_WITH_NOTIFICATIONS
	    {"notifications", createNotificationsBackend},
#endif
#ifdef QSD_WITH_BLUETOOTH
	    {"bluetooth", createBluetoothBackend},
#endif
	    {"", nullptr},
	});
	// The sentinel keeps the array non-empty when no backend is compiled in.
	return std::span<const BackendInfo>(table.data(), table.size() - 1);
}

} // namespace qsd
