// NetworkManager backend: the secret agent. qsd exports org.freedesktop.NetworkManager.SecretAgent
// on its system-bus connection and registers it with NetworkManager's AgentManager (again after
// every NetworkManager restart). A GetSecrets call becomes a prompt in the tree only when a shell
// can answer it: a client holds network.handleSecrets and NetworkManager allows interaction.
// Otherwise it is refused at once with NoSecrets, so NetworkManager asks the next agent.
//
// Secrets pass through and are never kept: a prompt holds field names. What is overwritten, and
// what is not (docs/backends/nm.md, "What qsd does not do"): GetSecrets' connection is read
// without its secrets (nm::readConnection skips them), and the call and its reply are marked
// sensitive, so sd-bus overwrites their bodies when it frees them; the values of
// network.answerSecrets are copied once, into a map that is overwritten when the method returns,
// and written from there straight into the reply. The request's JSON text (the client's read
// buffer) and its parsed params belong to the server and are freed without being overwritten.
// qsd stores no secrets, so SaveSecrets and DeleteSecrets only succeed; it never calls
// DeleteSecrets or ClearSecrets on its own.

#include "nm_backend.hpp"

#include "../../dbus/guard.hpp"
#include "../../dbus/raw.hpp"
#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <cstdlib>
#include <cstring>

namespace qsd::nm {

namespace {
constexpr const char* kNoSecrets = "org.freedesktop.NetworkManager.SecretAgent.NoSecrets";
constexpr const char* kUserCanceled = "org.freedesktop.NetworkManager.SecretAgent.UserCanceled";
constexpr const char* kAgentCanceled = "org.freedesktop.NetworkManager.SecretAgent.AgentCanceled";
constexpr const char* kAccessDenied = "org.freedesktop.DBus.Error.AccessDenied";
constexpr const char* kInvalidArgs = "org.freedesktop.DBus.Error.InvalidArgs";
constexpr const char* kLeaseKey = "network.secrets";

void sendError(sdbus::MethodCall& call, const char* name, const std::string& message) {
	try {
		call.createErrorReply(sdbus::Error(name, message)).send();
	} catch (const sdbus::Error& e) {
		log::info("nm", "answering the secret agent's caller failed: {}", e.getMessage());
	}
}

// Overwrites a secret's bytes before its memory is given back.
void wipe(std::string& s) {
	if (!s.empty()) explicit_bzero(s.data(), s.size());
	s.clear();
}
} // namespace

// ---------------------------------------------------------------------------------------------
// the D-Bus side

void NmBackend::exportAgent() {
	// For tests only (--debug-api): a shorter wait than NetworkManager's 120 s.
	if (const char* ms = std::getenv("QSD_DEBUG_NM_SECRET_TIMEOUT_MS"); ms && context_.debug)
		if (auto v = std::strtoull(ms, nullptr, 10); v > 0) secretTimeout_ = std::chrono::milliseconds(v);
	agent_ = sdbus::createObject(conn(), kAgentPath);
	agent_->registerMethod(kAgentIface, "GetSecrets", "a{sa{sv}}osasu",
	                       {"connection", "connection_path", "setting_name", "hints", "flags"}, "a{sa{sv}}", {"secrets"},
	                       dbus::exportedMethod("nm", this, &NmBackend::onGetSecrets));
	agent_->registerMethod(kAgentIface, "CancelGetSecrets", "os", {"connection_path", "setting_name"}, "", {},
	                       dbus::exportedMethod("nm", this, &NmBackend::onCancelGetSecrets));
	agent_->registerMethod(kAgentIface, "SaveSecrets", "a{sa{sv}}o", {"connection", "connection_path"}, "", {},
	                       dbus::exportedMethod("nm", this, &NmBackend::onStoreSecrets));
	agent_->registerMethod(kAgentIface, "DeleteSecrets", "a{sa{sv}}o", {"connection", "connection_path"}, "", {},
	                       dbus::exportedMethod("nm", this, &NmBackend::onStoreSecrets));
	agent_->finishRegistration();
}

void NmBackend::registerAgent() {
	if (!cache_ || cache_->owner().empty() || agentRegistered_ || agentRegistering_) return;
	agentRetry_.cancel();
	agentRegistering_ = true;
	std::string owner = cache_->owner();
	call(
	    kAgentManagerPath, kAgentManagerIface, "RegisterWithCapabilities",
	    [](sdbus::MethodCall& m) { m << std::string(kAgentId) << uint32_t(nm::kAgentCapabilityVpnHints); },
	    [this, owner](sdbus::MethodReply*, const sdbus::Error* e) {
		    agentRegistering_ = false;
		    if (!cache_ || cache_->owner() != owner) return;
		    if (!e) {
			    agentRegistered_ = true;
			    agentRetry_.reset();
			    log::info("nm", "the secret agent is registered with NetworkManager ({})", owner);
			    if (ready_) context_.tree.set(std::string(kRoot) + "/secretAgentRegistered", true);
			    return;
		    }
		    // Most often NetworkManager is still starting (or a mock adds its AgentManager late).
		    if (!agentRetry_.schedule(context_.loop, [this] { registerAgent(); }, "nm-agent-register")) {
			    log::warning("nm", "NetworkManager refused the secret agent: {}: {}", e->getName(), e->getMessage());
			    return;
		    }
		    log::at(agentRetry_.level(log::Level::Info), "nm", "registering the secret agent failed ({}); trying again",
		            e->getName());
	    });
}

void NmBackend::unregisterAgent() {
	if (!agentRegistered_ || !cache_) return;
	agentRegistered_ = false;
	// Sent without waiting: qsd is stopping, and NetworkManager drops the agent with the
	// connection anyway.
	try {
		auto& px = cache_->proxy(kAgentManagerPath);
		auto m = px.createMethodCall(kAgentManagerIface, "Unregister");
		m.dontExpectReply();
		px.callMethod(m);
	} catch (const sdbus::Error& e) {
		log::debug("nm", "unregistering the secret agent failed: {}", e.getMessage());
	}
}

// Any program on the system bus can call qsd's connection; only NetworkManager may ask it for
// secrets or hand it secrets to save.
bool NmBackend::fromNetworkManager(sdbus::MethodCall& call) {
	auto sender = call.getSender();
	if (cache_ && !cache_->owner().empty() && cache_->owner() == sender) return true;
	log::info("nm", "refused a secret agent call ({}) from {}, which is not NetworkManager", call.getMemberName(), sender);
	sendError(call, kAccessDenied, "only NetworkManager may call this secret agent");
	return false;
}

void NmBackend::onGetSecrets(sdbus::MethodCall call) {
	// The connection may carry secrets (system-owned ones, a VPN's vpn.secrets), and the reply
	// will: sd-bus overwrites a sensitive message's body when it frees it, and a reply created
	// from this call is sensitive too.
	sd_bus_message_sensitive(dbus::rawMessage(call));
	if (!fromNetworkManager(call)) return;
	nm::SecretPrompt prompt;
	sdbus::ObjectPath path;
	uint32_t flags = 0;
	try {
		// Only the names and types the prompt needs are read: the secrets are skipped unread.
		auto connection = nm::readConnection(call);
		std::string setting;
		std::vector<std::string> hints;
		call >> path >> setting >> hints >> flags;
		prompt = nm::secretPrompt(connection, setting, hints, flags);
	} catch (const sdbus::Error& e) {
		return sendError(call, kInvalidArgs, "GetSecrets takes (a{sa{sv}} o s as u): " + e.getMessage());
	}
	std::string refused;
	if (!(flags & nm::kSecretsAllowInteraction)) refused = "NetworkManager does not allow prompting";
	else if (secretHolders_.empty()) refused = "no client prompts for secrets";
	else if (prompt.fields.empty()) refused = "nothing qsd knows how to ask for in " + prompt.setting;
	else if (requests_.size() >= kMaxSecretRequests) refused = "too many secret requests are pending";
	if (!refused.empty()) {
		log::debug("nm", "no secrets for {} ({}): {}", prompt.profileName, prompt.setting, refused);
		return sendError(call, kNoSecrets, refused);
	}

	auto id = "r" + std::to_string(nextRequest_++);
	SecretRequest r{id, call, path, std::move(prompt), nowRfc3339(), {}};
	r.timeout = context_.loop.addTimer(secretTimeout_, [this, id] {
		auto expired = id;   // finishRequest destroys this timer, and with it this lambda
		finishRequest(expired, kNoSecrets, "no client answered in time");
	}, "nm-secret-timeout");
	auto value = nm::promptJson(r.prompt, id, r.createdAt);
	log::info("nm", "NetworkManager asks for secrets of {} ({}): request {}", r.prompt.profileName, r.prompt.setting, id);
	// Once per request: the fields left out are a profile's (or a plugin's) doing, and the shell
	// answers the rest; NetworkManager asks again if it needed them.
	if (r.prompt.droppedFields > 0)
		log::warning("nm", "secret request {} leaves out {} fields: a request asks for at most {}, keys of at most {} bytes", id,
		             r.prompt.droppedFields, nm::kMaxSecretFields, nm::kMaxSecretKeyBytes);
	requests_.emplace(id, std::move(r));
	// Before the domain is complete, maybeReady() writes it with the others.
	if (ready_) context_.tree.set(pointer::join(kSecretRequests, id), value);
	emitEvent("network.secretsRequested", value);
}

void NmBackend::onCancelGetSecrets(sdbus::MethodCall call) {
	if (!fromNetworkManager(call)) return;
	sdbus::ObjectPath path;
	std::string setting;
	try {
		call >> path >> setting;
	} catch (const sdbus::Error& e) {
		return sendError(call, kInvalidArgs, "CancelGetSecrets takes (o s): " + e.getMessage());
	}
	std::vector<std::string> ids;
	for (const auto& [id, r]: requests_)
		if (r.connectionPath == path && r.prompt.setting == setting) ids.push_back(id);
	for (const auto& id: ids) {
		log::info("nm", "NetworkManager withdrew secret request {}", id);
		finishRequest(id, kAgentCanceled, "NetworkManager cancelled the request");
	}
	try {
		call.createReply().send();
	} catch (const sdbus::Error& e) {
		log::info("nm", "answering CancelGetSecrets failed: {}", e.getMessage());
	}
}

// SaveSecrets and DeleteSecrets: qsd keeps no secrets, so there is nothing to save or delete.
void NmBackend::onStoreSecrets(sdbus::MethodCall call) {
	if (!fromNetworkManager(call)) return;
	try {
		call.createReply().send();
	} catch (const sdbus::Error& e) {
		log::info("nm", "answering {} failed: {}", call.getMemberName(), e.getMessage());
	}
}

// Answers the request's GetSecrets with an error and forgets it.
void NmBackend::finishRequest(const std::string& id, const char* error, const std::string& why) {
	auto it = requests_.find(id);
	if (it == requests_.end()) return;
	auto call = it->second.call;
	requests_.erase(it);
	if (ready_) context_.tree.remove(pointer::join(kSecretRequests, id));
	if (error == std::string_view(kNoSecrets)) log::info("nm", "secret request {}: no secrets ({})", id, why);
	sendError(call, error, why);
}

// NetworkManager left: nobody is waiting for the answers any more.
void NmBackend::dropRequests() {
	requests_.clear();
}

void NmBackend::secretsReleased(uint64_t token) {
	secretHolders_.erase(token);
	if (!secretHolders_.empty()) return;
	// Nobody can answer any more: NetworkManager asks the next agent.
	std::vector<std::string> ids;
	for (const auto& [id, _]: requests_) ids.push_back(id);
	for (const auto& id: ids) finishRequest(id, kNoSecrets, "no client prompts for secrets any more");
}

json NmBackend::requestsJson() const {
	json out = json::object();
	for (const auto& [id, r]: requests_) out[id] = nm::promptJson(r.prompt, id, r.createdAt);
	return out;
}

// ---------------------------------------------------------------------------------------------
// the methods

NmBackend::SecretRequest& NmBackend::request(const Params& p) {
	auto id = p.string("request");
	auto it = requests_.find(id);
	if (it == requests_.end())
		throw RpcException(ErrorCode::NotFound, "No secret request " + id + " in /network/secretRequests",
		                   {{"param", "request"}, {"request", id}});
	return it->second;
}

void NmBackend::handleSecrets(Call& c) {
	bool on = c.params().boolean("enabled");
	if (on) {
		auto token = nextSecretToken_++;
		secretHolders_.insert(token);
		// Replacing an earlier claim of this client releases that one (after this one counts).
		grantLease(c.client(), kLeaseKey, [this, token] { secretsReleased(token); });
	} else {
		revokeLease(c.client(), kLeaseKey);
	}
	c.result({{"enabled", on}});
}

void NmBackend::answerSecrets(Call& c) {
	auto& r = request(c.params());
	std::map<std::string, std::string> secrets;
	struct Wipe {
		std::map<std::string, std::string>& s;
		~Wipe() {
			for (auto& [_, v]: s) wipe(v);
		}
	} wiped{secrets};
	// Copied once, from the params' own string into the map (no temporary left behind).
	for (const auto& [key, value]: c.params().object("secrets").items())
		secrets.emplace(key, value.get_ref<const std::string&>());
	if (auto problem = nm::secretsProblem(r.prompt, secrets))
		throw RpcException(ErrorCode::InvalidParams, "Invalid params: " + problem->param + " must be " + problem->expected,
		                   {{"param", problem->param}, {"expected", problem->expected}, {"request", r.id}});
	auto id = r.id;
	auto call = r.call;
	auto reply = call.createReply();
	// Inherited from the call; said again, since the reply is what holds the values.
	sd_bus_message_sensitive(dbus::rawMessage(reply));
	nm::writeSecretsReply(reply, r.prompt, secrets);
	requests_.erase(id);
	if (ready_) context_.tree.remove(pointer::join(kSecretRequests, id));
	log::info("nm", "secret request {} answered", id);
	reply.send();   // an sdbus::Error here answers -32002
	c.result({{"request", id}});
}

void NmBackend::cancelSecrets(Call& c) {
	auto id = request(c.params()).id;
	log::info("nm", "secret request {} cancelled by a client", id);
	finishRequest(id, kUserCanceled, "the user cancelled the request");
	c.result({{"request", id}});
}

} // namespace qsd::nm
