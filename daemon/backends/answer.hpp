#pragma once
// Answers one JSON-RPC request of a backend action exactly once: with the outcome of the call
// that carries it out, or — when that call is cancelled because its service went away, which
// destroys the handler that owns this Answer — with BackendUnavailable naming the service.
// Shared by every handler of one request through a std::shared_ptr.

#include "../server/dispatcher.hpp"

#include <sdbus-c++/Error.h>

#include <string>

namespace qsd {

class Answer {
public:
	Answer(Responder responder, std::string backend, std::string service)
	    : responder_(std::move(responder)), backend_(std::move(backend)), service_(std::move(service)) {}
	Answer(const Answer&) = delete;
	Answer& operator=(const Answer&) = delete;
	~Answer() {
		if (!done_)
			responder_.error(rpc::ErrorCode::BackendUnavailable, service_ + " went away before answering",
			                 {{"backend", backend_}, {"service", service_}});
	}

	void result(nlohmann::json value) {
		if (done_) return;
		done_ = true;
		responder_.result(std::move(value));
	}
	// A D-Bus error reply: BackendFailed with the error's name, so a client can tell
	// org.freedesktop.NetworkManager.PermissionDenied from a timeout.
	void failed(const sdbus::Error& e) {
		error(rpc::ErrorCode::BackendFailed, e.getMessage().empty() ? e.getName() : e.getMessage(),
		      {{"backend", backend_}, {"name", e.getName()}, {"message", e.getMessage()}});
	}
	void error(rpc::ErrorCode code, std::string message, nlohmann::json data = nullptr) {
		if (done_) return;
		done_ = true;
		responder_.error(code, std::move(message), std::move(data));
	}
	[[nodiscard]] bool done() const { return done_; }

private:
	Responder responder_;
	std::string backend_;
	std::string service_;
	bool done_ = false;
};

} // namespace qsd
