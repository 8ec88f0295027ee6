// ClientSession: the bounded outbound queue, resync after overflow once the socket drains,
// subscription and topic limits, resources attached to a connection, the line limit.

#include "session_fixture.hpp"

#include <qsd/protocol/mirror.hpp>

using namespace qsd;
using namespace qsd::testing;
using json = nlohmann::json;

namespace {

class ClientTest: public ServerFixture {
protected:
	void SetUp() override {
		dispatcher.add("sub", [](const json& p, ClientSession& c) {
			return json::parse(c.subscribe(p.at("paths").get<std::vector<std::string>>(), p.value("throttleMs", 0)));
		});
		dispatcher.add("unsub", [](const json& p, ClientSession& c) {
			c.unsubscribe(p.at("id").get<uint64_t>());
			return json(true);
		});
		dispatcher.add("ping", [](const json&, ClientSession&) { return json("pong"); });
	}
};

json changesOf(const std::vector<json>& msgs, const char* method) {
	json out = json::array();
	for (const auto& m: msgs)
		if (m.is_object() && m.value("method", "") == method) out.push_back(m["params"]);
	return out;
}

} // namespace

TEST_F(ClientTest, LineTooLongIsAnsweredAndTheConnectionContinues) {
	ClientLimits limits;
	limits.maxLineBytes = 64;
	auto c = connect(limits);
	auto r = exchange(c, std::string(200, 'x'));
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0]["error"]["code"], -32600);
	EXPECT_EQ(r[0]["error"]["data"], (json{{"limit", "lineBytes"}, {"max", 64}}));
	r = exchange(c, R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
	EXPECT_EQ(r.at(0)["result"], "pong");
}

TEST_F(ClientTest, SlowSubscriberIsResyncedOnceItDrains) {
	ClientLimits limits;
	limits.maxQueuedBytes = 16 << 10;
	limits.maxQueuedMessages = 64;
	auto c = connect(limits, 4096);
	tree.set("/d/k", 0);
	tree.flush();
	auto r = exchange(c, R"({"jsonrpc":"2.0","id":1,"method":"sub","params":{"paths":["/d"]}})");
	ASSERT_EQ(r.size(), 1u);
	Mirror mirror;
	mirror.reset({"/d"}, r[0]["result"]["snapshot"], r[0]["result"]["revision"]);
	// The peer reads nothing while many batches happen.
	for (int i = 1; i <= 2000; ++i) {
		tree.set("/d/k", i);
		tree.set("/d/s" + std::to_string(i % 10), std::string(100, 'x'));
		tree.flush();
	}
	settle();
	auto st = c.session->stats();
	EXPECT_LE(st.queuedBytes, limits.maxQueuedBytes);
	EXPECT_LE(st.queuedMessages, limits.maxQueuedMessages);
	EXPECT_GE(st.droppedChanges, 1u);
	EXPECT_EQ(st.resyncs, 0u);   // not while the socket is full
	// Now it reads until nothing more comes.
	std::vector<json> all;
	for (int round = 0; round < 1000; ++round) {
		auto got = c.peer->read();
		settle();
		if (got.empty()) {
			got = c.peer->read();
			if (got.empty()) break;
		}
		all.insert(all.end(), got.begin(), got.end());
	}
	auto resyncs = changesOf(all, "tree.resync");
	ASSERT_EQ(resyncs.size(), 1u);
	EXPECT_EQ(c.session->stats().resyncs, 1u);
	for (const auto& m: all) {
		if (!m.is_object() || !m.contains("method")) continue;
		const auto& p = m["params"];
		if (m["method"] == "tree.resync") mirror.reset({"/d"}, p["snapshot"], p["revision"]);
		else EXPECT_NE(mirror.apply(p["revision"], p["changes"]), Mirror::Result::Gap);
	}
	EXPECT_EQ(mirror.document()["d"], tree.root()["d"]);
	EXPECT_EQ(mirror.revision(), tree.revision());
	// Back to a normal stream.
	tree.set("/d/k", -1);
	tree.flush();
	settle();
	auto more = changesOf(c.peer->read(), "tree.changed");
	ASSERT_EQ(more.size(), 1u);
	EXPECT_EQ(mirror.apply(more[0]["revision"], more[0]["changes"]), Mirror::Result::Applied);
	EXPECT_EQ(mirror.document()["d"], tree.root()["d"]);
}

TEST_F(ClientTest, AllQueuesTogetherStayWithinTheServersBudgetLargestFirst) {
	ServerOptions options;
	options.maxQueuedBytesTotal = 96 << 10;
	Server small(loop, tree, dispatcher, options);
	ClientLimits limits;
	limits.maxQueuedBytes = 64 << 10;
	tree.set("/d/k", 0);
	tree.flush();
	auto sub = R"({"jsonrpc":"2.0","id":1,"method":"sub","params":{"paths":["/d"]}})";
	// Four that never read, and one that reads everything it is sent.
	std::vector<Connection> idle;
	for (int i = 0; i < 4; ++i) {
		idle.push_back(connect(limits, 4096, &small));
		ASSERT_EQ(exchange(idle.back(), sub).size(), 1u);
	}
	auto reader = connect(limits, 0, &small);
	auto first = exchange(reader, sub);
	ASSERT_EQ(first.size(), 1u);
	Mirror mirror;
	mirror.reset({"/d"}, first[0]["result"]["snapshot"], first[0]["result"]["revision"]);
	size_t peak = 0;
	for (int i = 1; i <= 1000; ++i) {
		tree.set("/d/k", i);
		tree.set("/d/s" + std::to_string(i % 10), std::string(200, 'x'));
		tree.flush();
		settle();
		peak = std::max(peak, small.queuedBytes());
		for (const auto& m: reader.peer->read()) {
			ASSERT_EQ(m["method"], "tree.changed");
			ASSERT_EQ(mirror.apply(m["params"]["revision"], m["params"]["changes"]), Mirror::Result::Applied);
		}
	}
	// Never over the budget by more than the line that crossed it; each idle one was shed (its
	// own budget alone would have let the four hold 256 KiB), the reader never.
	EXPECT_LE(peak, options.maxQueuedBytesTotal + 1024);
	for (auto& c: idle) EXPECT_GE(c.session->stats().droppedChanges, 1u);
	EXPECT_EQ(reader.session->stats().droppedChanges, 0u);
	EXPECT_EQ(mirror.document()["d"], tree.root()["d"]);
	// An idle one that reads at last gets a resync and equals the tree.
	auto& late = idle[0];
	std::vector<json> all;
	for (int round = 0; round < 1000; ++round) {
		auto got = late.peer->read();
		settle();
		if (got.empty() && (got = late.peer->read()).empty()) break;
		all.insert(all.end(), got.begin(), got.end());
	}
	ASSERT_EQ(changesOf(all, "tree.resync").size(), 1u);
	EXPECT_EQ(changesOf(all, "tree.resync")[0]["snapshot"]["/d"], tree.root()["d"]);
	idle.clear();
	reader = {};
	EXPECT_EQ(small.queuedBytes(), 0u);
}

TEST_F(ClientTest, ResponsesAreNeverDroppedAndReadingPausesOverBudget) {
	ClientLimits limits;
	limits.maxQueuedBytes = 8 << 10;
	limits.maxQueuedMessages = 16;
	auto c = connect(limits, 4096);
	std::string many;
	for (int i = 0; i < 500; ++i) many += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"ping"})" + "\n";
	c.peer->send(many);
	settle();
	// Reading paused mid-read: the rest of the requests wait, the queue stays within its budget
	// (plus the one answer that crossed it).
	EXPECT_LE(c.session->stats().queuedBytes, limits.maxQueuedBytes + 64);
	EXPECT_LE(c.session->stats().queuedMessages, limits.maxQueuedMessages + 1);
	std::vector<json> got;
	for (int round = 0; round < 1000 && got.size() < 500; ++round) {
		settle();
		auto r = c.peer->read();
		got.insert(got.end(), r.begin(), r.end());
	}
	ASSERT_EQ(got.size(), 500u);
	for (int i = 0; i < 500; ++i) EXPECT_EQ(got[size_t(i)]["id"], i);
}

TEST_F(ClientTest, HeldRequestsAreAnsweredAfterTheClientStopsWriting) {
	ClientLimits limits;
	limits.maxQueuedBytes = 4 << 10;
	limits.maxQueuedMessages = 8;
	limits.maxLineBytes = 128;
	auto c = connect(limits, 4096);
	std::string many;
	for (int i = 0; i < 300; ++i) {
		many += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"ping"})" + "\n";
		if (i == 150) many += std::string(300, 'x') + "\n";   // a too-long line among them, answered in order
	}
	c.peer->send(many);
	::shutdown(c.peer->fd, SHUT_WR);   // everything is sent; the client only reads now
	std::vector<json> got;
	for (int round = 0; round < 1000 && got.size() < 301; ++round) {
		settle();
		auto r = c.peer->read();
		got.insert(got.end(), r.begin(), r.end());
	}
	ASSERT_EQ(got.size(), 301u);
	for (size_t i = 0; i < 301; ++i) {
		if (i == 151) {
			EXPECT_EQ(got[i]["error"]["data"]["limit"], "lineBytes");
			continue;
		}
		EXPECT_EQ(got[i]["id"], i < 151 ? int(i) : int(i) - 1);
	}
	settle();
	EXPECT_TRUE(c.session->closing());   // then the session ends
}

TEST_F(ClientTest, SubscriptionLimitsAndUnknownIds) {
	ClientLimits limits;
	limits.maxSubscriptions = 2;
	limits.maxPathsPerSubscription = 3;
	auto c = connect(limits);
	auto& s = *c.session;
	auto a = json::parse(s.subscribe({"/a"}, 0));
	s.subscribe({"/b"}, 0);
	try {
		s.subscribe({"/c"}, 0);
		FAIL();
	} catch (const rpc::RpcException& e) {
		EXPECT_EQ(e.error.code, rpc::ErrorCode::LimitExceeded);
		EXPECT_EQ(e.error.data["limit"], "subscriptions");
	}
	s.unsubscribe(a["subscription"]);
	EXPECT_THROW(s.subscribe({"/a", "/b", "/c", "/d"}, 0), rpc::RpcException);
	EXPECT_EQ(s.subscriptionCount(), 1u);
	try {
		s.unsubscribe(12345);
		FAIL();
	} catch (const rpc::RpcException& e) {
		EXPECT_EQ(e.error.code, rpc::ErrorCode::NotFound);
	}
}

TEST_F(ClientTest, EventTopics) {
	auto c = connect();
	auto& s = *c.session;
	EXPECT_FALSE(s.wantsEvent("network.x"));
	s.setEventTopics({"network.*", "tray.itemActivated"});
	EXPECT_TRUE(s.wantsEvent("network.connectionFailed"));
	EXPECT_TRUE(s.wantsEvent("tray.itemActivated"));
	EXPECT_FALSE(s.wantsEvent("network"));
	EXPECT_FALSE(s.wantsEvent("networkx.y"));
	EXPECT_FALSE(s.wantsEvent("tray.other"));
	s.setEventTopics({"*"});
	EXPECT_TRUE(s.wantsEvent("anything"));
	ClientLimits limits;
	limits.maxEventTopics = 1;
	auto d = connect(limits);
	EXPECT_THROW(d.session->setEventTopics({"a", "b"}), rpc::RpcException);
}

TEST_F(ClientTest, AttachedResourcesGoAwayWithTheConnection) {
	auto c = connect();
	auto res = std::make_shared<int>(1);
	std::weak_ptr<int> watch = res;
	c.session->attach("hold", std::move(res));
	EXPECT_TRUE(c.session->detach("hold"));
	EXPECT_FALSE(c.session->detach("hold"));
	EXPECT_TRUE(watch.expired());
	auto res2 = std::make_shared<int>(2);
	watch = res2;
	c.session->attach("hold", std::move(res2));
	c.session.reset();   // disconnect
	EXPECT_TRUE(watch.expired());
}

TEST_F(ClientTest, UnsubscribeDropsQueuedChangesOfThatStream) {
	ClientLimits limits;
	auto c = connect(limits, 4096);
	auto r = exchange(c, R"({"jsonrpc":"2.0","id":1,"method":"sub","params":{"paths":["/q"]}})");
	uint64_t id = r.at(0)["result"]["subscription"];
	for (int i = 0; i < 200; ++i) {
		tree.set("/q/v", std::string(200, char('a' + i % 26)));
		tree.flush();
	}
	settle();
	EXPECT_GT(c.session->stats().queuedMessages, 0u);
	c.session->unsubscribe(id);
	EXPECT_LE(c.session->stats().queuedMessages, 1u);   // at most a half-written one
}

namespace {

// Everything the peer can read now, as bytes.
std::string readRaw(const Peer& peer) {
	std::string out;
	char chunk[65536];
	for (ssize_t n; (n = ::read(peer.fd, chunk, sizeof chunk)) > 0;) out.append(chunk, size_t(n));
	return out;
}

} // namespace

TEST_F(ClientTest, EverySubscriberGetsExactlyItsOwnLineWhetherItsPathsAreSharedOrNot) {
	tree.set("/a/x", 0);
	tree.set("/a/y", 0);
	tree.set("/b/z", 0);
	tree.flush();
	struct Sub {
		Connection c;
		std::vector<std::string> paths;
		uint64_t id = 0;
		std::unique_ptr<PathFilter> reference;   // what this subscription alone would see
		std::string expected;
	};
	std::vector<std::vector<std::string>> pathSets = {{"/a"}, {"/a"}, {"/a"}, {"/b"}, {"/b", "/a"}, {""}, {"/a/x"}, {"/a/x"}, {"/a/x", "/b/z"}};
	std::vector<Sub> subs;
	for (size_t i = 0; i < pathSets.size(); ++i) {
		Sub s{connect(), pathSets[i]};
		// Some sessions have another subscription first, so ids differ between sessions.
		for (size_t k = 0; k < i % 3; ++k) s.c.session->subscribe({"/elsewhere"}, 0);
		s.id = json::parse(s.c.session->subscribe(s.paths, 0))["subscription"];
		s.reference = std::make_unique<PathFilter>(s.paths, tree.root());
		subs.push_back(std::move(s));
	}
	EXPECT_EQ(server.filterGroups().groupCount(), 7u);   // {"/a"}, {"/b"}, {"/b","/a"}, {""}, {"/a/x"}, {"/a/x","/b/z"}, {"/elsewhere"}
	auto observer = tree.observe([&](uint64_t revision, const json& patch) {
		for (auto& s: subs) {
			json changes = json::array();
			s.reference->filter(patch, tree.root(), changes);
			if (changes.empty()) continue;
			s.expected += rpc::toLine(
			    rpc::makeNotification("tree.changed", {{"changes", changes}, {"revision", revision}, {"subscription", s.id}}));
		}
	});
	// Leaves, an ancestor rewritten (restated at /a/x), removed and back, and a batch of both.
	tree.set("/a/x", 1);
	tree.flush();
	tree.set("/b/z", "zz");
	tree.flush();
	tree.set("/a", json{{"x", {{"deep", true}}}, {"w", 1}});
	tree.flush();
	tree.remove("/a/x");
	tree.flush();
	tree.set("/a/x", 5);
	tree.set("/b/n", nullptr);
	tree.flush();
	settle();
	for (auto& s: subs) {
		SCOPED_TRACE(json(s.paths).dump());
		EXPECT_FALSE(s.expected.empty());
		EXPECT_EQ(readRaw(*s.c.peer), s.expected);
	}
}

TEST_F(ClientTest, SharedLinesCountInFullAgainstEachQueueAndASlowReaderIsCutAlone) {
	ClientLimits small;
	small.maxQueuedBytes = 16 << 10;
	small.maxQueuedMessages = 64;
	auto slow = connect(small, 4096);
	auto fast = connect();
	tree.set("/d/k", 0);
	tree.flush();
	auto r = exchange(slow, R"({"jsonrpc":"2.0","id":1,"method":"sub","params":{"paths":["/d"]}})");
	ASSERT_EQ(r.size(), 1u);
	Mirror slowMirror;
	slowMirror.reset({"/d"}, r[0]["result"]["snapshot"], r[0]["result"]["revision"]);
	r = exchange(fast, R"({"jsonrpc":"2.0","id":1,"method":"sub","params":{"paths":["/d"]}})");
	ASSERT_EQ(r.size(), 1u);
	Mirror fastMirror;
	fastMirror.reset({"/d"}, r[0]["result"]["snapshot"], r[0]["result"]["revision"]);
	EXPECT_EQ(server.filterGroups().groupCount(), 1u);
	// The slow peer reads nothing; the fast one reads as it goes. Each line is over 200 bytes.
	std::vector<json> fastGot;
	bool sawQueue = false;
	for (int i = 1; i <= 400; ++i) {
		tree.set("/d/k", i);
		tree.set("/d/s", std::string(200, char('a' + i % 26)));
		tree.flush();
		settle();
		auto st = slow.session->stats();
		EXPECT_LE(st.queuedBytes, small.maxQueuedBytes);
		EXPECT_LE(st.queuedMessages, small.maxQueuedMessages);
		// Each queued line counts at its full size, shared or not.
		if (st.queuedMessages > 1) {
			sawQueue = true;
			EXPECT_GE(st.queuedBytes, (st.queuedMessages - 1) * 200);
		}
		auto got = fast.peer->read();
		fastGot.insert(fastGot.end(), got.begin(), got.end());
	}
	EXPECT_TRUE(sawQueue);
	EXPECT_GE(slow.session->stats().droppedChanges, 1u);
	// The fast subscriber got every batch, in order, and nothing else.
	EXPECT_EQ(changesOf(fastGot, "tree.resync").size(), 0u);
	auto fastChanges = changesOf(fastGot, "tree.changed");
	EXPECT_EQ(fastChanges.size(), 400u);
	for (const auto& p: fastChanges) EXPECT_EQ(fastMirror.apply(p["revision"], p["changes"]), Mirror::Result::Applied);
	EXPECT_EQ(fastMirror.document()["d"], tree.root()["d"]);
	EXPECT_EQ(fast.session->stats().droppedChanges, 0u);
	// The slow one catches up through one resync.
	std::vector<json> all;
	for (int round = 0; round < 1000; ++round) {
		auto got = slow.peer->read();
		settle();
		if (got.empty()) {
			got = slow.peer->read();
			if (got.empty()) break;
		}
		all.insert(all.end(), got.begin(), got.end());
	}
	ASSERT_EQ(changesOf(all, "tree.resync").size(), 1u);
	for (const auto& m: all) {
		if (!m.is_object() || !m.contains("method")) continue;
		const auto& p = m["params"];
		if (m["method"] == "tree.resync") slowMirror.reset({"/d"}, p["snapshot"], p["revision"]);
		else EXPECT_NE(slowMirror.apply(p["revision"], p["changes"]), Mirror::Result::Gap);
	}
	EXPECT_EQ(slowMirror.document()["d"], tree.root()["d"]);
	slow.session.reset();
	fast.session.reset();
	EXPECT_EQ(server.filterGroups().groupCount(), 0u);
}
