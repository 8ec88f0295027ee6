// The API description (protocol/api/*.json merged into one OpenRPC document) against itself and
// against the daemon: it must be well-formed, every reference must resolve, and the methods it
// describes must be exactly the methods the daemon registers, with the limits the daemon uses.

#include "daemon.hpp"
#include "temp_dir.hpp"

#include <qsd/protocol/api.hpp>
#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qsd::api::detail {
// Defined in the generated api_fragments.cpp: every protocol/api/*.json by file name.
const std::vector<std::pair<std::string_view, std::string_view>>& fragments();
}

using namespace qsd;
using qsd::testing::TempDir;
using json = nlohmann::json;

namespace {

const json& doc() { return api::openrpc(); }

json coreFragment() {
	for (const auto& [name, text]: api::detail::fragments())
		if (name == "core.json") return json::parse(text);
	ADD_FAILURE() << "core.json is not embedded";
	return json::object();
}

// Resolves a local reference ("#/components/schemas/X") in the merged document.
const json* resolve(const std::string& ref) {
	if (ref.rfind("#", 0) != 0) return nullptr;
	auto pointer = ref.substr(1);
	if (!pointer::isValid(pointer)) return nullptr;
	json::json_pointer ptr(pointer);
	if (!doc().contains(ptr)) return nullptr;
	return &doc().at(ptr);
}

// Every "$ref" anywhere in `node`, with the JSON Pointer of where it was found.
void collectRefs(const json& node, const std::string& at, std::vector<std::pair<std::string, std::string>>& out) {
	if (node.is_object()) {
		for (const auto& [key, value]: node.items()) {
			if (key == "$ref" && value.is_string()) out.emplace_back(at, value.get<std::string>());
			else collectRefs(value, pointer::join(at, key), out);
		}
	} else if (node.is_array()) {
		for (size_t i = 0; i < node.size(); ++i) collectRefs(node[i], at + "/" + std::to_string(i), out);
	}
}

std::vector<std::string> registeredMethods(bool debugApi) {
	TempDir dir;
	DaemonOptions options;
	options.debugApi = debugApi;
	options.server.socketPath = (dir.path / "qsd.sock").string();
	options.backends = std::vector<std::string>{};
	Daemon daemon(std::move(options));
	return daemon.dispatcher().methods();
}

std::set<std::string> names(const json& methods) {
	std::set<std::string> out;
	for (const auto& m: methods) out.insert(m.value("name", ""));
	return out;
}

} // namespace

TEST(TheApiDescription, IsAnOpenRpcDocumentWithTheProtocolNumberAsVersion) {
	const auto& d = doc();
	EXPECT_EQ(d.value("openrpc", ""), "1.2.6");
	ASSERT_TRUE(d.contains("info"));
	EXPECT_EQ(d["info"].value("title", ""), "qsd");
	EXPECT_EQ(d["info"].value("version", ""), std::to_string(rpc::PROTOCOL_VERSION));
	EXPECT_FALSE(d["info"].value("description", "").empty());
	ASSERT_TRUE(d["methods"].is_array());
	ASSERT_TRUE(d["components"]["schemas"].is_object());
	ASSERT_TRUE(d["components"]["errors"].is_object());
}

TEST(TheApiDescription, FragmentsUseOnlyTheMergedKeys) {
	const std::set<std::string> allowed = {"methods", "components", "x-events", "x-tree"};
	for (const auto& [name, text]: api::detail::fragments()) {
		auto fragment = json::parse(text, nullptr, false);
		ASSERT_FALSE(fragment.is_discarded()) << name << " is not JSON";
		ASSERT_TRUE(fragment.is_object()) << name;
		if (name == "core.json") continue;
		for (const auto& [key, _]: fragment.items()) EXPECT_TRUE(allowed.count(key)) << name << ": unknown key " << key;
		// Named: items() of a temporary would outlive it.
		const json components = fragment.value("components", json::object());
		for (const auto& [section, entries]: components.items()) {
			EXPECT_TRUE(section == "schemas" || section == "errors") << name << ": components." << section;
			// A fragment must not silently replace what core.json (or another fragment) defines.
			for (const auto& [key, _]: entries.items())
				EXPECT_FALSE(coreFragment()["components"][section].contains(key)) << name << " redefines components." << section << "." << key;
		}
	}
}

TEST(TheApiDescription, DescribesEveryMethodCompletely) {
	std::set<std::string> seen;
	for (const auto& m: doc()["methods"]) {
		ASSERT_TRUE(m.contains("name") && m["name"].is_string()) << m.dump();
		const auto name = m["name"].get<std::string>();
		SCOPED_TRACE(name);
		EXPECT_TRUE(seen.insert(name).second) << "described twice";
		EXPECT_TRUE(std::regex_match(name, std::regex("^[a-z]+(\\.[a-z][A-Za-z]*)*$"))) << "not domain.verb";
		EXPECT_FALSE(m.value("summary", "").empty());
		EXPECT_EQ(m.value("paramStructure", ""), "by-name");
		ASSERT_TRUE(m.contains("params") && m["params"].is_array());
		std::set<std::string> params;
		for (const auto& p: m["params"]) {
			ASSERT_TRUE(p.contains("name") && p["name"].is_string()) << p.dump();
			EXPECT_TRUE(params.insert(p["name"].get<std::string>()).second) << "param twice: " << p["name"];
			EXPECT_TRUE(p.contains("required") && p["required"].is_boolean()) << p["name"];
			EXPECT_TRUE(p.contains("schema") && p["schema"].is_object()) << p["name"];
			EXPECT_FALSE(p.value("description", "").empty()) << p["name"];
		}
		ASSERT_TRUE(m.contains("result") && m["result"].is_object());
		EXPECT_TRUE(m["result"].contains("name") && m["result"]["name"].is_string());
		EXPECT_TRUE(m["result"].contains("schema") && m["result"]["schema"].is_object());
		ASSERT_TRUE(m.contains("errors") && m["errors"].is_array());
		for (const auto& e: m["errors"]) {
			const json* err = e.contains("$ref") ? resolve(e["$ref"].get<std::string>()) : &e;
			ASSERT_NE(err, nullptr) << e.dump();
			EXPECT_TRUE(err->contains("code") && (*err)["code"].is_number_integer()) << e.dump();
			EXPECT_TRUE(err->contains("message") && (*err)["message"].is_string()) << e.dump();
		}
		for (const auto& ex: m.value("examples", json::array())) {
			std::set<std::string> given;
			for (const auto& p: ex["params"]) {
				EXPECT_TRUE(params.count(p.value("name", ""))) << "example uses an undeclared param " << p.dump();
				given.insert(p.value("name", ""));
			}
			for (const auto& p: m["params"]) {
				if (!p.value("required", false)) continue;
				EXPECT_TRUE(given.count(p["name"].get<std::string>())) << "example lacks " << p["name"];
			}
		}
	}
}

TEST(TheApiDescription, ResolvesEveryReference) {
	std::vector<std::pair<std::string, std::string>> refs;
	collectRefs(doc(), "", refs);
	EXPECT_GT(refs.size(), 20u);
	for (const auto& [at, ref]: refs) EXPECT_NE(resolve(ref), nullptr) << at << ": " << ref << " does not resolve";
}

// What params are checked against: one description per method, each holding the schemas its
// params refer to, so that a method's description can be parsed alone at its first call.
TEST(TheMethodsCheckingDescriptions, AreOnePerMethodSortedAndResolveEveryReferenceInThemselves) {
	auto texts = api::detail::checkingTexts();
	std::set<std::string> described;
	size_t refCount = 0;
	for (size_t i = 0; i < texts.size(); ++i) {
		if (i) {
			EXPECT_LT(texts[i - 1].name, texts[i].name) << "not sorted, or twice";
		}
		described.insert(std::string(texts[i].name));
		json method = json::parse(texts[i].text);
		EXPECT_EQ(method["name"], texts[i].name);
		std::vector<std::pair<std::string, std::string>> refs;
		collectRefs(method, "", refs);
		refCount += refs.size();
		for (const auto& [at, ref]: refs) {
			ASSERT_EQ(ref.rfind("#/", 0), 0u) << texts[i].name << at;
			EXPECT_TRUE(method.contains(json::json_pointer(ref.substr(1))))
			    << texts[i].name << at << ": " << ref << " is not in the method's own description";
		}
	}
	EXPECT_EQ(described, names(doc()["methods"]));
	EXPECT_GT(refCount, 5u) << "params refer to shared schemas (JsonPointer, MediaLoopStatus, ...)";
}

TEST(TheMethodsCheckingDescriptions, AreParsedAtTheirFirstUseOnly) {
	size_t before = api::detail::parsedMethods();
	for (const auto& t: api::detail::checkingTexts()) EXPECT_TRUE(api::hasMethod(t.name));
	EXPECT_FALSE(api::hasMethod("no.suchMethod"));
	EXPECT_EQ(api::method("no.suchMethod"), nullptr);
	EXPECT_EQ(api::detail::parsedMethods(), before) << "hasMethod parses nothing";
	const json* first = api::method("audio.setVolume");
	ASSERT_NE(first, nullptr);
	size_t after = api::detail::parsedMethods();
	EXPECT_LE(after, before + 1);
	EXPECT_EQ(api::method("audio.setVolume"), first) << "kept, not parsed again";
	EXPECT_EQ(api::detail::parsedMethods(), after);
	EXPECT_LT(after, api::detail::checkingTexts().size()) << "one method, not all of them";
}

TEST(TheApiDescription, DocumentsEveryErrorCodeWithItsDefaultMessage) {
	const auto& errors = doc()["components"]["errors"];
	for (auto code: {rpc::ErrorCode::ParseError, rpc::ErrorCode::InvalidRequest, rpc::ErrorCode::MethodNotFound,
	                 rpc::ErrorCode::InvalidParams, rpc::ErrorCode::InternalError, rpc::ErrorCode::BackendUnavailable,
	                 rpc::ErrorCode::NotFound, rpc::ErrorCode::BackendFailed, rpc::ErrorCode::LimitExceeded,
	                 rpc::ErrorCode::PermissionDenied}) {
		bool found = false;
		for (const auto& [key, e]: errors.items()) {
			if (e.value("code", 0) != static_cast<int>(code)) continue;
			found = true;
			EXPECT_EQ(e.value("message", ""), rpc::defaultMessage(code)) << key;
			EXPECT_FALSE(e.value("x-description", "").empty()) << key;
			EXPECT_TRUE(e.contains("x-data-schema")) << key;
		}
		EXPECT_TRUE(found) << "error code " << static_cast<int>(code) << " is not documented";
	}
	for (const auto& [key, e]: errors.items()) {
		int code = e.value("code", 0);
		bool standard = code >= -32768 && code <= -32600;
		bool application = code >= -32099 && code <= -32000;
		EXPECT_TRUE(standard || application) << key << " has code " << code << " outside the JSON-RPC ranges";
	}
}

TEST(TheApiDescription, StatesTheLimitsTheDaemonEnforces) {
	const auto& l = doc()["x-limits"];
	ClientLimits client;
	DispatchLimits dispatch;
	ServerOptions server;
	EXPECT_EQ(l["lineBytes"]["value"], client.maxLineBytes);
	EXPECT_EQ(l["depth"]["value"], dispatch.maxDepth);
	EXPECT_EQ(l["batch"]["value"], dispatch.maxBatch);
	EXPECT_EQ(l["subscriptionsPerClient"]["value"], client.maxSubscriptions);
	EXPECT_EQ(l["pathsPerSubscription"]["value"], client.maxPathsPerSubscription);
	EXPECT_EQ(l["topicsPerClient"]["value"], client.maxEventTopics);
	EXPECT_EQ(l["pathsPerClient"]["value"], client.maxPathsPerConnection);
	EXPECT_EQ(l["pathBytesPerClient"]["value"], client.maxPathBytesPerConnection);
	EXPECT_EQ(l["pathsTotal"]["value"], server.filters.maxPaths);
	EXPECT_EQ(l["pathBytesTotal"]["value"], server.filters.maxPathBytes);
	EXPECT_EQ(l["batchAnswerBytes"]["value"], client.maxQueuedBytes);
	EXPECT_EQ(l["callsInFlight"]["value"], client.maxCallsInFlight);
	EXPECT_EQ(l["connections"]["value"], server.maxClients);
	EXPECT_EQ(l["outboundQueueBytes"]["value"], client.maxQueuedBytes);
	EXPECT_EQ(l["outboundQueueMessages"]["value"], client.maxQueuedMessages);
	EXPECT_EQ(l["outboundQueueBytesTotal"]["value"], server.maxQueuedBytesTotal);
	EXPECT_EQ(l["readBytesPerWakeup"]["value"], client.maxReadPerDispatch);
	for (const auto& [key, v]: l.items()) EXPECT_FALSE(v.value("description", "").empty()) << key;
	// The schemas repeat two of them.
	const json* subscribe = api::method("tree.subscribe");
	ASSERT_NE(subscribe, nullptr);
	EXPECT_EQ((*subscribe)["params"][0]["schema"]["maxItems"], client.maxPathsPerSubscription);
	EXPECT_EQ((*subscribe)["params"][1]["schema"]["maximum"], l["throttleMs"]["value"]);
}

TEST(TheApiDescription, DescribesTheNotificationsAndEventsTheCoreSends) {
	auto notifications = names(doc()["x-notifications"]);
	EXPECT_EQ(notifications, (std::set<std::string>{"tree.changed", "tree.resync", "event"}));
	for (const auto& n: doc()["x-notifications"])
		for (const auto& p: n["params"]) EXPECT_TRUE(p.contains("schema")) << n["name"] << "." << p.value("name", "");
	std::set<std::string> events;
	for (const auto& e: doc()["x-events"]) {
		EXPECT_TRUE(e.contains("name") && e.contains("summary") && e.contains("data")) << e.dump();
		EXPECT_TRUE(events.insert(e.value("name", "")).second) << "event twice: " << e.value("name", "");
	}
	EXPECT_TRUE(events.count("qsd.eventsDropped"));
}

TEST(TheApiDescription, DescribesEveryMethodTheDaemonRegistersWithTheDebugApi) {
	auto described = names(doc()["methods"]);
	for (const auto& m: registeredMethods(true)) EXPECT_TRUE(described.count(m)) << m << " is registered but not described";
}

TEST(TheApiDescription, DescribesOnlyCoreMethodsThatExist) {
	auto withDebug = registeredMethods(true);
	auto without = registeredMethods(false);
	std::set<std::string> all(withDebug.begin(), withDebug.end()), plain(without.begin(), without.end());
	auto core = coreFragment();
	ASSERT_FALSE(core["methods"].empty());
	for (const auto& m: core["methods"]) {
		auto name = m["name"].get<std::string>();
		bool debug = m.value("x-debug", false);
		EXPECT_TRUE(all.count(name)) << name << " is described but the daemon does not register it";
		EXPECT_EQ(plain.count(name) == 1, !debug) << name << ": x-debug does not match --debug-api";
	}
	for (const auto& m: {"hello", "tree.get", "tree.subscribe", "tree.unsubscribe", "events.subscribe", "rpc.discover"})
		EXPECT_TRUE(plain.count(m)) << m;
}

TEST(TheApiDescription, DescribesTheDaemonSubtreeTheDaemonWrites) {
	const auto& tree = doc()["components"]["schemas"]["Tree"];
	ASSERT_TRUE(tree["properties"].contains("daemon"));
	const json* schema = resolve(tree["properties"]["daemon"]["$ref"].get<std::string>());
	ASSERT_NE(schema, nullptr);

	TempDir dir;
	DaemonOptions options;
	options.server.socketPath = (dir.path / "qsd.sock").string();
	options.backends = std::vector<std::string>{};
	Daemon daemon(std::move(options));
	daemon.tree().flush();
	const json* written = daemon.tree().find("/daemon");
	ASSERT_NE(written, nullptr);

	std::set<std::string> keys, required, properties;
	for (const auto& [k, _]: written->items()) keys.insert(k);
	for (const auto& k: (*schema)["required"]) required.insert(k.get<std::string>());
	for (const auto& [k, _]: (*schema)["properties"].items()) properties.insert(k);
	EXPECT_EQ(keys, required);
	EXPECT_EQ(keys, properties);
	EXPECT_TRUE(std::regex_match((*written)["epoch"].get<std::string>(), std::regex((*resolve("#/components/schemas/Epoch"))["pattern"].get<std::string>())));
	EXPECT_TRUE(std::regex_match((*written)["startedAt"].get<std::string>(),
	                             std::regex("^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$")));
	EXPECT_EQ((*written)["protocol"], rpc::PROTOCOL_VERSION);

	// The backend states the schema lists are the ones the code can write.
	std::set<std::string> states;
	for (const auto& s: (*resolve("#/components/schemas/BackendState"))["enum"]) states.insert(s.get<std::string>());
	std::set<std::string> coded;
	for (auto s: {BackendState::Starting, BackendState::Running, BackendState::Unavailable, BackendState::Failed, BackendState::Stopped})
		coded.insert(toString(s));
	EXPECT_EQ(states, coded);
}

TEST(TheApiDescription, UsesAJsonPointerPatternThatAgreesWithTheParser) {
	std::regex pattern((*resolve("#/components/schemas/JsonPointer"))["pattern"].get<std::string>());
	for (std::string p: {"", "/", "/a", "/a/b", "/a~0b", "/a~1b", "//", "a", "/a~", "/a~2", "~0", "/é/x"})
		EXPECT_EQ(std::regex_match(p, pattern), pointer::isValid(p)) << "\"" << p << "\"";
}
