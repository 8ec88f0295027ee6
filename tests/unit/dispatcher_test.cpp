// The Dispatcher over a real socketpair: sync and async handlers, exceptions, batches that
// complete later, abandoned responders, and registration lifetimes.

#include "session_fixture.hpp"

#include <optional>
#include <stdexcept>

using namespace qsd;
using namespace qsd::testing;
using json = nlohmann::json;

namespace {

class DispatcherTest: public ServerFixture {
protected:
	void SetUp() override {
		dispatcher.add("echo", [](const json& params, ClientSession&) { return params; });
		dispatcher.add("fail", [](const json&, ClientSession&) -> json {
			throw rpc::RpcException(rpc::ErrorCode::NotFound, "nothing", {{"path", "/x"}});
		});
		dispatcher.add("crash", [](const json&, ClientSession&) -> json { throw std::runtime_error("boom"); });
		dispatcher.add("typeerror", [](const json& params, ClientSession&) -> json { return params.at("missing").get<int>(); });
		dispatcher.addAsync("later", [this](const json&, Responder r, ClientSession&) { pending.push_back(std::move(r)); });
		dispatcher.addAsync("forget", [](const json&, Responder, ClientSession&) {});
	}
	std::vector<Responder> pending;
};

} // namespace

TEST_F(DispatcherTest, SyncResultAndErrors) {
	auto c = connect();
	auto r = exchange(c, R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}})");
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0], (json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", {{"a", 1}}}}));
	r = exchange(c, R"({"jsonrpc":"2.0","id":2,"method":"fail"})");
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0]["error"], (json{{"code", -32001}, {"message", "nothing"}, {"data", {{"path", "/x"}}}}));
	r = exchange(c, R"({"jsonrpc":"2.0","id":3,"method":"crash"})");
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0]["error"]["code"], -32603);
	EXPECT_EQ(r[0]["error"]["data"]["what"], "boom");
	r = exchange(c, R"({"jsonrpc":"2.0","id":4,"method":"typeerror"})");
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0]["error"]["code"], -32602);
	// Missing params are an empty object.
	r = exchange(c, R"({"jsonrpc":"2.0","id":5,"method":"echo"})");
	EXPECT_EQ(r.at(0)["result"], json::object());
}

TEST_F(DispatcherTest, AsyncCompletesLaterExactlyOnce) {
	auto c = connect();
	EXPECT_TRUE(exchange(c, R"({"jsonrpc":"2.0","id":"a","method":"later"})").empty());
	ASSERT_EQ(pending.size(), 1u);
	EXPECT_FALSE(pending[0].isNotification());
	EXPECT_EQ(pending[0].client().get(), c.session.get());
	pending[0].result(42);
	pending[0].result(43);                                  // ignored
	pending[0].error(rpc::ErrorCode::InternalError, "x");   // ignored
	settle();
	auto r = c.peer->read();
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0]["result"], 42);
	EXPECT_EQ(r[0]["id"], "a");
}

TEST_F(DispatcherTest, AbandonedResponderAnswersWithAnInternalError) {
	auto c = connect();
	auto r = exchange(c, R"({"jsonrpc":"2.0","id":9,"method":"forget"})");
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0]["id"], 9);
	EXPECT_EQ(r[0]["error"]["code"], -32603);
	// A notification that is abandoned gets nothing.
	EXPECT_TRUE(exchange(c, R"({"jsonrpc":"2.0","method":"forget"})").empty());
}

TEST_F(DispatcherTest, BatchWithAsyncMembersAnswersOnceAsOneArray) {
	auto c = connect();
	auto r = exchange(c, R"([{"jsonrpc":"2.0","id":1,"method":"later"},{"jsonrpc":"2.0","id":2,"method":"echo","params":{}},)"
	                     R"({"jsonrpc":"2.0","method":"later"},{"jsonrpc":"2.0","id":3,"method":"later"}])");
	EXPECT_TRUE(r.empty());   // waits for the async members
	ASSERT_EQ(pending.size(), 3u);
	EXPECT_TRUE(pending[1].isNotification());
	pending[2].error(rpc::ErrorCode::BackendFailed, "no", {{"name", "org.x.Err"}});
	pending[1].result(0);     // the notification: not in the answer
	settle();
	EXPECT_TRUE(c.peer->read().empty());
	pending[0].result("one");
	settle();
	r = c.peer->read();
	ASSERT_EQ(r.size(), 1u);
	ASSERT_TRUE(r[0].is_array());
	ASSERT_EQ(r[0].size(), 3u);
	std::map<int, json> byId;
	for (const auto& m: r[0]) byId[m["id"].get<int>()] = m;
	EXPECT_EQ(byId[1]["result"], "one");
	EXPECT_EQ(byId[2]["result"], json::object());
	EXPECT_EQ(byId[3]["error"]["data"]["name"], "org.x.Err");
}

TEST_F(DispatcherTest, CompletionAfterTheClientLeftIsHarmless) {
	auto c = connect();
	exchange(c, R"({"jsonrpc":"2.0","id":1,"method":"later"})");
	exchange(c, R"([{"jsonrpc":"2.0","id":2,"method":"later"},{"jsonrpc":"2.0","id":3,"method":"later"}])");
	ASSERT_EQ(pending.size(), 3u);
	c.session->close("test");
	c.session.reset();
	settle();
	EXPECT_EQ(pending[0].client(), nullptr);
	pending[0].result(1);
	pending[1].result(2);
	pending.clear();   // the rest is abandoned: nobody to answer
	settle();
}

TEST_F(DispatcherTest, Registration) {
	EXPECT_THROW(dispatcher.add("echo", [](const json&, ClientSession&) { return json(); }), std::logic_error);
	{
		dispatcher.add("temp", [](const json&, ClientSession&) { return json(1); });
		MethodRegistration reg(dispatcher, "temp");
		EXPECT_TRUE(dispatcher.has("temp"));
		MethodRegistration moved = std::move(reg);
		EXPECT_TRUE(dispatcher.has("temp"));
	}
	EXPECT_FALSE(dispatcher.has("temp"));
	auto c = connect();
	auto r = exchange(c, R"({"jsonrpc":"2.0","id":1,"method":"temp"})");
	EXPECT_EQ(r.at(0)["error"]["code"], -32601);
	EXPECT_EQ(r.at(0)["error"]["data"]["method"], "temp");
}

TEST_F(DispatcherTest, HandlerMayUnregisterItself) {
	dispatcher.add("once", [this](const json&, ClientSession&) {
		dispatcher.remove("once");
		return json("done");
	});
	auto c = connect();
	EXPECT_EQ(exchange(c, R"({"jsonrpc":"2.0","id":1,"method":"once"})").at(0)["result"], "done");
	EXPECT_EQ(exchange(c, R"({"jsonrpc":"2.0","id":2,"method":"once"})").at(0)["error"]["code"], -32601);
}

TEST_F(DispatcherTest, LimitsAndBlankLines) {
	auto c = connect();
	EXPECT_TRUE(exchange(c, "   \t\r").empty());
	std::string deep = std::string(65, '[') + std::string(65, ']');
	auto r = exchange(c, deep);
	EXPECT_EQ(r.at(0)["error"]["code"], -32700);
	EXPECT_EQ(r.at(0)["error"]["data"]["limit"], "depth");
	std::string batch = "[";
	for (int i = 0; i < 257; ++i) batch += std::string(i ? "," : "") + R"({"jsonrpc":"2.0","method":"echo"})";
	batch += "]";
	r = exchange(c, batch);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0]["error"]["data"]["limit"], "batch");
}
