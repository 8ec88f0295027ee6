// org.bluez.Agent1, exported on qsd's system-bus connection: BlueZ's questions during pairing
// and for incoming connections become /bluetooth/agent/requests/<id>, answered by any client
// with bluetooth.answer. The D-Bus call is kept and answered then, so no client ever blocks the
// daemon: a question nobody answers is cancelled after the timeout.

#include "bluetooth_backend.hpp"

#include "../../dbus/guard.hpp"
#include "../../log.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace qsd::bluetooth {

namespace {
constexpr const char* kRejected = "org.bluez.Error.Rejected";
constexpr const char* kCanceled = "org.bluez.Error.Canceled";
constexpr std::size_t kMaxUuidBytes = 64;
} // namespace

void BluetoothBackend::exportAgent() {
	agent_ = sdbus::createObject(conn(), kAgentPath);
	// Every handler catches everything: only sdbus::Error may leave a callback of sd-bus (it
	// becomes the error reply); anything else would unwind through C (dbus/guard.hpp). The
	// requests also pass on what they are asking for.
	auto ask = [this](const char* method, const char* in, const char* out, AgentKind kind) {
		agent_->registerMethod(kAgentIface, method, in, out, [this, kind](sdbus::MethodCall call) {
			try {
				onAgentCall(std::move(call), kind);
			} catch (const sdbus::Error&) {
				throw;
			} catch (const std::exception& e) {
				log::warning("bluetooth", "agent call failed: {}", e.what());
				throw sdbus::Error(kRejected, e.what());
			}
		});
	};
	ask("RequestPinCode", "o", "s", AgentKind::RequestPinCode);
	ask("DisplayPinCode", "os", "", AgentKind::DisplayPinCode);
	ask("RequestPasskey", "o", "u", AgentKind::RequestPasskey);
	ask("DisplayPasskey", "ouq", "", AgentKind::DisplayPasskey);
	ask("RequestConfirmation", "ou", "", AgentKind::RequestConfirmation);
	ask("RequestAuthorization", "o", "", AgentKind::RequestAuthorization);
	ask("AuthorizeService", "os", "", AgentKind::AuthorizeService);
	agent_->registerMethod(kAgentIface, "Cancel", "", "",
	                       dbus::exportedMethod("bluetooth", this, &BluetoothBackend::onAgentCancel, "org.bluez.Error.Failed"));
	agent_->registerMethod(kAgentIface, "Release", "", "",
	                       dbus::exportedMethod("bluetooth", this, &BluetoothBackend::onAgentRelease, "org.bluez.Error.Failed"));
	agent_->finishRegistration();
}

void BluetoothBackend::registerAgent() {
	if (!cache_ || !ready_) return;
	agentRetry_.cancel();
	auto& manager = cache_->proxy(kBluezPath);
	calls_.start("agent",
	             manager.callMethodAsync("RegisterAgent").onInterface(kAgentManagerIface).withTimeout(dbus::kBusyTimeout)
	                 .withArguments(sdbus::ObjectPath(kAgentPath), std::string("KeyboardDisplay")),
	             [this](const sdbus::Error* e) {
		             // AlreadyExists: BlueZ still has this path from this connection; it is ours (a
		             // RegisterAgent that timed out may also have been done after all).
		             if (e && e->getName() != "org.bluez.Error.AlreadyExists") return agentFailed("RegisterAgent", *e);
		             agentRegistered_ = true;
		             agentError_ = nullptr;
		             publishAgent();
		             auto& manager = cache_->proxy(kBluezPath);
		             calls_.start("agent",
		                          manager.callMethodAsync("RequestDefaultAgent").onInterface(kAgentManagerIface)
		                              .withTimeout(dbus::kBusyTimeout).withArguments(sdbus::ObjectPath(kAgentPath)),
		                          [this](const sdbus::Error* e) {
			                          if (e) return agentFailed("RequestDefaultAgent", *e);
			                          log::info("bluetooth", "the pairing agent is registered (KeyboardDisplay, default)");
			                          agentDefault_ = true;
			                          agentRetry_.reset();
			                          publishAgent();
		                          });
	             });
}

// A refusal is shown in /bluetooth/agent/error and stays; a call BlueZ did not answer in time
// is shown too, and the whole registration is made again (dbus::kAskAgain).
void BluetoothBackend::agentFailed(const char* method, const sdbus::Error& e) {
	agentError_ = {{"name", e.getName()}, {"message", e.getMessage()}};
	publishAgent();
	if (!dbus::timedOut(e)) {
		log::warning("bluetooth", "{} failed: {}: {}", method, e.getName(), e.getMessage());
		return;
	}
	auto delay = agentRetry_.schedule(context_.loop, [this] { registerAgent(); }, "bluetooth-agent-register");
	log::at(agentRetry_.level(), "bluetooth", "{}: BlueZ did not answer in time; registering the agent again in {} s",
	        method, wholeSeconds(*delay));
}

bool BluetoothBackend::fromBluez(sdbus::MethodCall& call) {
	// Any program on the bus can call an exported object: only BlueZ's questions are BlueZ's.
	return cache_ && !cache_->owner().empty() && call.getSender() == cache_->owner();
}

void BluetoothBackend::replyEmpty(const sdbus::MethodCall& call) {
	if (call.doesntExpectReply()) return;
	try {
		call.createReply().send();
	} catch (const sdbus::Error& e) {
		log::debug("bluetooth", "an agent reply could not be sent: {}", e.getMessage());
	}
}

void BluetoothBackend::replyError(const sdbus::MethodCall& call, const char* name, const std::string& message) {
	if (call.doesntExpectReply()) return;
	try {
		call.createErrorReply(sdbus::Error(name, message)).send();
	} catch (const sdbus::Error& e) {
		log::debug("bluetooth", "an agent reply could not be sent: {}", e.getMessage());
	}
}

json BluetoothBackend::requestJson(const AgentRequest& r) const {
	return {{"id", r.id},         {"device", r.device},   {"kind", agentKindName(r.kind)}, {"passkey", r.passkey},
	        {"pinCode", r.pinCode}, {"entered", r.entered}, {"service", r.service},          {"createdAt", r.createdAt}};
}

void BluetoothBackend::onAgentCall(sdbus::MethodCall call, AgentKind kind) {
	if (!fromBluez(call)) {
		log::info("bluetooth", "{} called the pairing agent and is not BlueZ: refused", call.getSender());
		throw sdbus::Error("org.freedesktop.DBus.Error.AccessDenied", "only BlueZ may call this agent");
	}
	sdbus::ObjectPath devicePath;
	call >> devicePath;
	auto id = deviceId(devicePath);
	if (!id) throw sdbus::Error(kRejected, "not a BlueZ device: " + std::string(devicePath));
	AgentRequest r;
	r.kind = kind;
	r.device = id->key;
	r.devicePath = devicePath;
	switch (kind) {
	case AgentKind::DisplayPinCode: {
		std::string pin;
		call >> pin;
		r.pinCode = bounded(std::move(pin), 16);
		break;
	}
	case AgentKind::DisplayPasskey:
	case AgentKind::RequestConfirmation: {
		uint32_t passkey = 0;
		call >> passkey;
		auto text = passkeyText(passkey);
		if (!text) throw sdbus::Error(kRejected, fmt::format("passkey {} has more than six digits", passkey));
		r.passkey = *text;
		if (kind == AgentKind::DisplayPasskey) {
			uint16_t entered = 0;
			call >> entered;
			r.entered = entered;
			// BlueZ calls again as keys are typed on the other side (entered 1, 2, ...): the request
			// on screen is updated in place. Another passkey, or one with nothing typed, is another
			// pairing attempt (the last one failed): a new request below, with its event and its
			// own 60 s. (A keypress "cleared" also reports 0 with the same passkey; it cannot be
			// told from a new attempt, and showing it anew loses nothing.)
			if (entered != 0) {
				for (auto& [n, old]: requests_) {
					if (old.kind != AgentKind::DisplayPasskey || old.device != r.device || old.passkey != r.passkey) continue;
					old.entered = r.entered;
					context_.tree.set(std::string(kRequests) + "/" + old.id, requestJson(old));
					replyEmpty(call);
					return;
				}
			}
		}
		break;
	}
	case AgentKind::AuthorizeService: {
		std::string uuid;
		call >> uuid;
		r.service = bounded(std::move(uuid), kMaxUuidBytes);
		break;
	}
	default: break;
	}
	if (answeredAtOnce(kind)) {
		// One thing shown per device: what BlueZ shows now replaces what it showed for an earlier
		// attempt. Shown requests wait for no answer, so they take no room from questions; they
		// have a bound of their own, the oldest making room (peers pairing in a loop).
		endDisplayOf(r.device, "replaced by a new one");
		auto isShown = [](const auto& q) { return answeredAtOnce(q.second.kind); };
		if (size_t(std::count_if(requests_.begin(), requests_.end(), isShown)) >= kMaxDisplayRequests) {
			// requests_ is in the order they came: the first shown one is the oldest.
			auto oldest = std::find_if(requests_.begin(), requests_.end(), isShown);
			endRequest(oldest->first, "too many are shown at once; this was the oldest");
		}
	} else if (waitingRequests() >= kMaxAgentRequests) {
		// A misbehaving peer calling in a loop must not grow the daemon: questions beyond the bound
		// are refused at once (BlueZ itself asks one at a time).
		if (!requestsWarned_)
			log::warning("bluetooth", "{} agent requests are waiting: further ones are rejected until some are answered",
			             kMaxAgentRequests);
		requestsWarned_ = true;
		throw sdbus::Error(kRejected, "too many requests are waiting for an answer");
	}
	uint64_t n = nextRequest_++;
	r.id = std::to_string(n);
	r.createdAt = nowRfc3339();
	r.call = call;
	if (answeredAtOnce(kind)) {
		replyEmpty(call);
		r.replied = true;
	}
	r.timer = context_.loop.addTimer(agentTimeout_, [this, n] { endRequest(n, "nobody answered in time"); }, "bluetooth-agent");
	auto value = requestJson(r);
	log::info("bluetooth", "agent request {}: {} for {}", r.id, agentKindName(kind), r.device);
	requests_.emplace(n, std::move(r));
	context_.tree.set(std::string(kRequests) + "/" + std::to_string(n), value);
	emitEvent("bluetooth.agentRequest", value);
}

void BluetoothBackend::endRequest(uint64_t n, const char* reason) {
	auto it = requests_.find(n);
	if (it == requests_.end()) return;
	auto r = std::move(it->second);
	requests_.erase(it);
	if (waitingRequests() < kMaxAgentRequests) requestsWarned_ = false;
	if (!r.replied) replyError(r.call, kCanceled, reason);
	log::info("bluetooth", "agent request {} ended: {}", r.id, reason);
	context_.tree.remove(std::string(kRequests) + "/" + r.id);
}

size_t BluetoothBackend::waitingRequests() const {
	size_t n = 0;
	for (const auto& [_, r]: requests_) n += r.replied ? 0 : 1;
	return n;
}

void BluetoothBackend::endRequestsOf(const std::string& deviceKey, const char* reason) {
	std::vector<uint64_t> ids;
	for (const auto& [n, r]: requests_)
		if (r.device == deviceKey) ids.push_back(n);
	for (auto n: ids) endRequest(n, reason);
}

void BluetoothBackend::endDisplayOf(const std::string& deviceKey, const char* reason) {
	std::vector<uint64_t> ids;
	for (const auto& [n, r]: requests_)
		if (r.device == deviceKey && answeredAtOnce(r.kind)) ids.push_back(n);
	for (auto n: ids) endRequest(n, reason);
}

void BluetoothBackend::cancelAllRequests(const char* reason) {
	std::vector<uint64_t> ids;
	for (const auto& [n, _]: requests_) ids.push_back(n);
	for (auto n: ids) endRequest(n, reason);
}

void BluetoothBackend::onAgentCancel(sdbus::MethodCall call) {
	if (!fromBluez(call)) throw sdbus::Error("org.freedesktop.DBus.Error.AccessDenied", "only BlueZ may call this agent");
	// BlueZ gave up on its question (its own timeout, the pairing failed or was cancelled): it
	// waits for no answer to it any more. Only a question is cancelled: what BlueZ shows
	// (DisplayPasskey, DisplayPinCode) waited for no answer, and another device's passkey still
	// being typed is not ended by this one's cancel. A shown request ends with its pairing.
	std::vector<uint64_t> ids;
	for (auto& [n, r]: requests_) {
		if (answeredAtOnce(r.kind)) continue;
		r.replied = true;
		ids.push_back(n);
	}
	for (auto n: ids) endRequest(n, "BlueZ cancelled it");
	replyEmpty(call);
}

void BluetoothBackend::onAgentRelease(sdbus::MethodCall call) {
	if (!fromBluez(call)) throw sdbus::Error("org.freedesktop.DBus.Error.AccessDenied", "only BlueZ may call this agent");
	log::info("bluetooth", "BlueZ released the pairing agent");
	agentRegistered_ = false;
	agentDefault_ = false;
	cancelAllRequests("BlueZ released the agent");
	publishAgent();
	replyEmpty(call);
}

void BluetoothBackend::answer(Call& c) {
	const auto& p = c.params();
	auto id = p.string("request");
	bool accept = p.boolean("accept");
	uint64_t n = 0;
	auto it = requests_.end();
	for (auto i = requests_.begin(); i != requests_.end(); ++i)
		if (i->second.id == id) it = i, n = i->first;
	if (it == requests_.end())
		throw rpc::RpcException(rpc::ErrorCode::NotFound, "No agent request " + id, {{"param", "request"}, {"request", id}});
	auto& r = it->second;
	json result = {{"request", id}, {"accepted", accept}};
	if (r.replied) {
		// A display request: BlueZ has its answer; the client dismissed what was shown.
		endRequest(n, "dismissed");
		return c.result(result);
	}
	if (!accept) {
		replyError(r.call, kRejected, "rejected by the user");
	} else if (r.kind == AgentKind::RequestPinCode) {
		auto pin = p.optString("pinCode");
		if (!pin || !isPinCode(*pin)) rpc::Params::fail("pinCode", "1 to 16 printable ASCII characters, to accept a requestPinCode");
		if (!r.call.doesntExpectReply()) {
			auto reply = r.call.createReply();
			reply << *pin;
			reply.send();
		}
	} else if (r.kind == AgentKind::RequestPasskey) {
		auto passkey = p.optInteger("passkey");
		if (!passkey || *passkey < 0 || *passkey > 999999) rpc::Params::fail("passkey", "an integer 0..999999, to accept a requestPasskey");
		if (!r.call.doesntExpectReply()) {
			auto reply = r.call.createReply();
			reply << uint32_t(*passkey);
			reply.send();
		}
	} else {
		replyEmpty(r.call);
	}
	r.replied = true;
	endRequest(n, accept ? "accepted" : "rejected");
	c.result(result);
}

} // namespace qsd::bluetooth
