// The core methods (hello, tree.*, events.subscribe, rpc.discover) and the debug API.

#include "daemon.hpp"
#include "log.hpp"

#include <qsd/protocol/api.hpp>
#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <map>
#include <memory>

namespace qsd {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;

namespace {

std::string validPath(const Params& p, const char* name) {
	auto path = p.string(name);
	if (!pointer::isValid(path)) Params::fail(name, "a JSON Pointer (\"\" or \"/a/b\", with ~0 and ~1 escapes)");
	return path;
}

// A debug.flood in flight.
struct Flood {
	Tree& tree;
	std::string path;
	int64_t count, keys, batch, done = 0;
	uint64_t startRevision;
	Responder responder;
	EventSource step;
};

} // namespace

std::vector<MethodRegistration> registerCoreMethods(Daemon& d) {
	auto& disp = d.dispatcher();
	auto& tree = d.tree();
	std::vector<MethodRegistration> regs;
	auto add = [&](const char* name, Dispatcher::SyncHandler h) {
		disp.add(name, std::move(h));
		regs.emplace_back(disp, name);
	};

	add("hello", [&d, &tree](const json& params, ClientSession&) {
		Params p(params);
		(void)p.optString("client");
		if (auto want = p.optInteger("protocol"); want && *want != rpc::PROTOCOL_VERSION)
			throw RpcException(ErrorCode::InvalidParams, "Unsupported protocol version",
			                   {{"param", "protocol"}, {"supported", rpc::PROTOCOL_VERSION}});
		tree.flush();
		json caps = {"tree", "events", "batch", "resync", "throttle"};
		if (d.debugApi()) caps.push_back("debug");
		for (const auto& id: d.backendIds()) caps.push_back("backend:" + id);
		return json{{"protocol", rpc::PROTOCOL_VERSION},
		            {"version", QSD_VERSION},
		            {"epoch", tree.epoch()},
		            {"revision", tree.revision()},
		            {"capabilities", caps}};
	});

	auto addAsync = [&](const char* name, Dispatcher::AsyncHandler h) {
		disp.addAsync(name, std::move(h));
		regs.emplace_back(disp, name);
	};

	// The value is written from the tree, not copied out of it first (rpc::JsonWriter).
	addAsync("tree.get", [&tree](const json& params, Responder responder, ClientSession&) {
		Params p(params);
		auto path = validPath(p, "path");
		tree.flush();
		const json* v = tree.find(path);
		if (!v) throw RpcException(ErrorCode::NotFound, "No value at " + (path.empty() ? std::string("\"\"") : path), {{"path", path}});
		auto text = responder.beginResult();
		rpc::JsonWriter(text).raw(R"({"revision":)").value(tree.revision()).raw(R"(,"value":)").value(*v).raw("}");
		responder.endResult(std::move(text));
	});

	addAsync("tree.subscribe", [](const json& params, Responder responder, ClientSession& client) {
		Params p(params);
		const auto& arr = p.array("paths");
		if (arr.empty()) Params::fail("paths", "a non-empty array of JSON Pointers");
		std::vector<std::string> paths;
		for (const auto& v: arr) {
			if (!v.is_string() || !pointer::isValid(v.get_ref<const std::string&>()))
				Params::fail("paths", "an array of JSON Pointers");
			paths.push_back(v.get<std::string>());
		}
		int64_t throttle = p.optInteger("throttleMs").value_or(0);
		if (throttle < 0 || throttle > 60000) Params::fail("throttleMs", "an integer from 0 to 60000");
		responder.endResult(client.subscribe(std::move(paths), uint64_t(throttle), responder.beginResult(), responder.batchTicket()));
	});

	add("tree.unsubscribe", [](const json& params, ClientSession& client) {
		Params p(params);
		auto id = p.integer("subscription");
		if (id <= 0)
			throw RpcException(ErrorCode::NotFound, "No such subscription", {{"param", "subscription"}, {"subscription", id}});
		client.unsubscribe(uint64_t(id));
		return json{{"subscription", id}};
	});

	add("events.subscribe", [](const json& params, ClientSession& client) {
		Params p(params);
		const auto& arr = p.array("topics");
		std::vector<std::string> topics;
		for (const auto& v: arr) {
			if (!v.is_string() || v.get_ref<const std::string&>().empty()) Params::fail("topics", "an array of topic names");
			topics.push_back(v.get<std::string>());
		}
		client.setEventTopics(topics);
		return json{{"topics", topics}};
	});

	// The whole description is about 0.3 MiB of JSON text, which qsd does not keep for a call that
	// tools make once: it is built at the first call and kept, as text, until 30 s after the last
	// one. A client that asks again and again then costs a copy of the text per request: as a
	// json copied and dumped per call, a batch of 256 took 1.2 s of the loop that every other
	// client waited for.
	struct Discover {
		std::string text;
		EventSource forget;
	};
	auto discover = std::make_shared<Discover>();
	discover->forget = d.loop().addIdleTimer([cache = discover.get()] { std::string().swap(cache->text); }, "rpc-discover-cache");
	addAsync("rpc.discover", [discover, &d](const json&, Responder responder, ClientSession&) {
		if (responder.isNotification()) return responder.result(nullptr);
		if (discover->text.empty()) {
			auto doc = api::document();
			// The limit this daemon runs with (qsd --max-clients), not the default the file names.
			doc["x-limits"]["connections"]["value"] = d.server().maxClients();
			discover->text = rpc::dump(doc);
		}
		auto& loop = d.loop();
		discover->forget.setTime(loop.now() + 30'000'000);
		auto text = responder.beginResult();
		text += discover->text;
		responder.endResult(std::move(text));
	});

	return regs;
}

std::vector<MethodRegistration> registerDebugMethods(Daemon& d) {
	auto& disp = d.dispatcher();
	auto& tree = d.tree();
	std::vector<MethodRegistration> regs;

	auto debugPath = [](const Params& p) {
		auto path = validPath(p, "path");
		if (!pointer::isWithin(path, "/debug") || path == "/debug")
			Params::fail("path", "a JSON Pointer below /debug");
		return path;
	};

	disp.add("debug.set", [&tree, debugPath](const json& params, ClientSession&) {
		Params p(params);
		auto path = debugPath(p);
		tree.set(path, p.any("value"));
		return json{{"path", path}};
	});
	regs.emplace_back(disp, "debug.set");

	disp.add("debug.remove", [&tree, debugPath](const json& params, ClientSession&) {
		Params p(params);
		auto path = debugPath(p);
		if (!tree.find(path)) throw RpcException(ErrorCode::NotFound, "No value at " + path, {{"path", path}});
		tree.remove(path);
		return json{{"path", path}};
	});
	regs.emplace_back(disp, "debug.remove");

	disp.add("debug.emit", [&d](const json& params, ClientSession&) {
		Params p(params);
		auto topic = p.string("topic");
		d.server().emitEvent(topic, p.has("data") ? p.any("data") : json(nullptr));
		return json{{"topic", topic}};
	});
	regs.emplace_back(disp, "debug.emit");

	// Writes `count` values under `path`, cycling over `keys` leaves, `batch` writes per loop
	// iteration (each iteration is one flushed batch). Answers when the last batch is flushed.
	// The floods in flight belong to the method, not to their own timers: one still running
	// when the daemon stops is freed with the method (held by its timer, it would keep the
	// loop, and the client it answers, alive past the end).
	auto floods = std::make_shared<std::map<Flood*, std::unique_ptr<Flood>>>();
	disp.addAsync("debug.flood", [&d, &tree, debugPath, floods](const json& params, Responder responder,
	                                                              ClientSession&) {
		Params p(params);
		json withDefault = params;
		// Given as null, as left out (protocol.md, Messages).
		if (!withDefault.contains("path") || withDefault["path"].is_null()) withDefault["path"] = "/debug/flood";
		Params q(withDefault);
		auto path = debugPath(q);
		auto count = p.optInteger("count").value_or(1000);
		auto keys = p.optInteger("keys").value_or(1);
		auto batch = p.optInteger("batch").value_or(1);
		if (count < 1 || count > 10'000'000) Params::fail("count", "an integer from 1 to 10000000");
		if (keys < 1 || keys > 1'000'000) Params::fail("keys", "an integer from 1 to 1000000");
		if (batch < 1 || batch > 10'000'000) Params::fail("batch", "an integer from 1 to 10000000");

		auto owned = std::make_unique<Flood>(Flood{tree, path, count, keys, batch, 0, tree.revision(), std::move(responder), {}});
		Flood* flood = owned.get();
		floods->emplace(flood, std::move(owned));
		// One step per loop iteration, each flushed as its own batch. A timer that is already due,
		// not a defer source: sd-event does not poll for I/O while a defer source is pending, so
		// a re-armed defer would starve every client until the flood ends.
		// The timer cannot outlive the flood, nor the flood the map: plain pointers.
		flood->step = d.loop().addIdleTimer([flood, all = floods.get(), &loop = d.loop()] {
			auto& f = *flood;
			for (int64_t i = 0; i < f.batch && f.done < f.count; ++i, ++f.done)
				f.tree.set(f.path + "/k" + std::to_string(f.done % f.keys), f.done);
			// Each step is one batch, whatever else the loop dispatches in between.
			f.tree.flush();
			if (f.done < f.count) {
				f.step.setTime(loop.now());
				return;
			}
			f.responder.result({{"writes", f.count}, {"revision", f.tree.revision()}, {"batches", f.tree.revision() - f.startRevision}});
			all->erase(flood);   // frees the flood and this timer: nothing of either is used after it
		}, "debug-flood");
		flood->step.setTime(d.loop().now());
	});
	regs.emplace_back(disp, "debug.flood");

	return regs;
}

} // namespace qsd
