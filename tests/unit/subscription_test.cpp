// PathFilter: which changes of a batch a subscription sees, rewritten to apply to a document
// that holds only the subscribed subtrees. FilterGroups: one filter and one serialized line per
// distinct list of paths, whatever the number of subscribers.

#include "server/subscription.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <memory>

using qsd::PathFilter;
namespace rpc = qsd::rpc;
using json = nlohmann::json;

namespace {

json op(const char* o, const char* path, json value = nullptr) {
	json j = {{"op", o}, {"path", path}};
	if (std::string(o) != "remove") j["value"] = std::move(value);
	return j;
}

json run(PathFilter& f, const json& patch, const json& root) {
	json out = json::array();
	f.filter(patch, root, out);
	return out;
}

std::string snapshotText(const PathFilter& f, const json& root) {
	std::string text;
	rpc::JsonWriter out(text);
	f.writeSnapshot(root, out);
	return text;
}

json snapshot(const PathFilter& f, const json& root) { return json::parse(snapshotText(f, root)); }

} // namespace

TEST(PathFilter, SnapshotKeepsRequestOrderAndLeavesAbsentPathsOut) {
	json root = {{"a", {{"b", 1}}}, {"c", 2}};
	PathFilter f({"/c", "/missing", "/a/b", "", "/a/b"}, root);
	EXPECT_EQ(f.requested(), (std::vector<std::string>{"/c", "/missing", "/a/b", "", "/a/b"}));
	EXPECT_EQ(snapshot(f, root), (json{{"/c", 2}, {"/a/b", 1}, {"", root}}));
}

// Written from the tree, the snapshot's text is what a json holding it dumped: the same member
// order, a path asked for twice once, invalid UTF-8 replaced, escapes in keys and values.
TEST(PathFilter, SnapshotTextIsWhatItsJsonDumps) {
	json root = {{"a", {{"b", 1}, {"t", "x\xff\"\n"}}}, {"c", json::array({1.5, nullptr, true})}, {"q\"k", {{"é", "ü"}}}};
	PathFilter f({"/c", "/missing", "/a/b", "/q\"k", "/a", "/a/b", "/a/t"}, root);
	json expected = {{"/c", root["c"]}, {"/a/b", 1}, {"/q\"k", root["q\"k"]}, {"/a", root["a"]}, {"/a/t", root["a"]["t"]}};
	EXPECT_EQ(snapshotText(f, root), rpc::dump(expected));
	EXPECT_EQ(snapshotText(PathFilter({"/missing"}, root), root), "{}");
	EXPECT_EQ(snapshotText(PathFilter({""}, root), root), rpc::dump(json{{"", root}}));
}

TEST(PathFilter, OnlyChangesAtOrBelowTheSubscribedPaths) {
	json root = {{"a", {{"x", 1}}}, {"ab", 1}, {"b", 1}};
	PathFilter f({"/a"}, root);
	json patch = json::array({op("replace", "/ab", 2), op("replace", "/a/x", 2), op("add", "/b/y", 1), op("add", "/a/z", 3)});
	EXPECT_EQ(run(f, patch, root), json::array({op("replace", "/a/x", 2), op("add", "/a/z", 3)}));
}

TEST(PathFilter, RootSubscriptionSeesEverything) {
	json root = {{"a", 1}};
	PathFilter f({""}, root);
	json patch = json::array({op("add", "/a", 1), op("remove", "/b")});
	EXPECT_EQ(run(f, patch, root), patch);
}

TEST(PathFilter, NestedAndDuplicatePathsAreDeliveredOnce) {
	json root = {{"a", {{"b", {{"c", 1}}}}}};
	PathFilter f({"/a/b", "/a", "/a/b/c", "/a"}, root);
	json patch = json::array({op("replace", "/a/b/c", 2)});
	EXPECT_EQ(run(f, patch, root), patch);
	PathFilter g({"", "/a", "/a/b"}, root);
	EXPECT_EQ(run(g, patch, root), patch);
}

TEST(PathFilter, AncestorOperationsAreRestatedAtTheSubscribedPath) {
	json root = {{"a", {{"b", {{"c", 1}}}}}};
	PathFilter f({"/a/b/c"}, root);
	// The ancestor is replaced: the path's new value, as a replace (it existed).
	root = {{"a", {{"b", {{"c", 2}, {"d", 0}}}}}};
	EXPECT_EQ(run(f, json::array({op("replace", "/a", root["a"])}), root), json::array({op("replace", "/a/b/c", 2)}));
	// The ancestor goes away: a remove of the path.
	root = json::object();
	EXPECT_EQ(run(f, json::array({op("remove", "/a")}), root), json::array({op("remove", "/a/b/c")}));
	// Gone and still gone: nothing.
	root = {{"a", 5}};
	EXPECT_EQ(run(f, json::array({op("add", "/a", 5)}), root), json::array());
	// Back: an add.
	root = {{"a", {{"b", {{"c", 3}}}}}};
	EXPECT_EQ(run(f, json::array({op("replace", "/a", root["a"])}), root), json::array({op("add", "/a/b/c", 3)}));
}

TEST(PathFilter, AncestorChangeReachesEverySubscribedPathBelowIt) {
	json root = {{"a", {{"x", 1}, {"y", 2}}}};
	PathFilter f({"/a/x", "/a/y", "/a/z"}, root);
	root = {{"a", {{"x", 10}, {"z", 30}}}};
	EXPECT_EQ(run(f, json::array({op("replace", "/a", root["a"])}), root),
	          json::array({op("replace", "/a/x", 10), op("remove", "/a/y"), op("add", "/a/z", 30)}));
}

TEST(PathFilter, PresenceFollowsOperationsOnThePathItself) {
	json root = json::object();
	PathFilter f({"/p"}, root);
	root = {{"p", 1}};
	EXPECT_EQ(run(f, json::array({op("add", "/p", 1)}), root), json::array({op("add", "/p", 1)}));
	// Now present: an ancestor rewrite restates it as a replace.
	PathFilter g({"/p/q"}, json::object());
	root = {{"p", {{"q", 1}}}};
	EXPECT_EQ(run(g, json::array({op("add", "/p", root["p"])}), root), json::array({op("add", "/p/q", 1)}));
	root = {{"p", {{"q", 2}}}};
	EXPECT_EQ(run(g, json::array({op("replace", "/p", root["p"])}), root), json::array({op("replace", "/p/q", 2)}));
	root = {{"p", {{"q", 2}}}};
	EXPECT_EQ(run(g, json::array({op("remove", "/p/q")}), json{{"p", json::object()}}), json::array({op("remove", "/p/q")}));
	root = {{"p", {{"q", 3}}}};
	EXPECT_EQ(run(g, json::array({op("replace", "/p", root["p"])}), root), json::array({op("add", "/p/q", 3)}));
	// After a resync, presence is read again from the tree.
	g.resetPresence(json::object());
	root = {{"p", {{"q", 4}}}};
	EXPECT_EQ(run(g, json::array({op("add", "/p", root["p"])}), root), json::array({op("add", "/p/q", 4)}));
}

TEST(PathFilter, EscapedTokens) {
	json root = {{"a/b", {{"c~d", 1}}}};
	PathFilter f({"/a~1b/c~0d"}, root);
	EXPECT_EQ(snapshot(f, root), (json{{"/a~1b/c~0d", 1}}));
	EXPECT_EQ(run(f, json::array({op("replace", "/a~1b/c~0d", 2)}), root), json::array({op("replace", "/a~1b/c~0d", 2)}));
	EXPECT_EQ(run(f, json::array({op("replace", "/a~1b~0", 2)}), root), json::array());
}

namespace {

// A subscription as FilterGroups sees it: records the line heads it is handed.
struct Recorder final: qsd::ChangeSink {
	std::vector<std::shared_ptr<const std::string>> heads;
	std::vector<uint64_t> revisions;
	std::function<void()> also;
	void onChanges(const qsd::FilteredBatch& batch) override {
		heads.push_back(batch.head());
		revisions.push_back(batch.revision());
		if (also) also();
	}
	// The operations of the last line, parsed back.
	[[nodiscard]] json lastChanges() const {
		return json::parse(*heads.back() + qsd::FilteredBatch::tail(1)).at("params").at("changes");
	}
};

class FilterGroupsTest: public ::testing::Test {
protected:
	qsd::EventLoop loop;
	qsd::Tree tree{loop};
	qsd::FilterGroups groups{tree};
};

} // namespace

TEST_F(FilterGroupsTest, OneBufferPerDistinctPathsSharedByEverySubscriber) {
	tree.set("/a/x", 0);
	tree.set("/b/y", 0);
	tree.flush();
	Recorder a1, a2, a3, b, all;
	auto m1 = groups.join({"/a"}, a1);
	auto m2 = groups.join({"/a"}, a2);
	auto m3 = groups.join({"/a"}, a3);
	auto mb = groups.join({"/b"}, b);
	auto mall = groups.join({""}, all);
	EXPECT_EQ(groups.groupCount(), 3u);

	tree.set("/a/x", 1);
	tree.flush();
	ASSERT_EQ(a1.heads.size(), 1u);
	ASSERT_EQ(a2.heads.size(), 1u);
	ASSERT_EQ(a3.heads.size(), 1u);
	EXPECT_TRUE(b.heads.empty());
	// The same buffer, not equal copies; "" selected the same operations of the batch, so it
	// reuses the buffer too.
	EXPECT_EQ(a1.heads[0].get(), a2.heads[0].get());
	EXPECT_EQ(a1.heads[0].get(), a3.heads[0].get());
	ASSERT_EQ(all.heads.size(), 1u);
	EXPECT_EQ(all.heads[0].get(), a1.heads[0].get());
	// Completed by a subscription's tail, it is exactly the line a notification would be.
	EXPECT_EQ(*a1.heads[0] + qsd::FilteredBatch::tail(17),
	          qsd::rpc::toLine(qsd::rpc::makeNotification(
	              "tree.changed", {{"changes", json::array({{{"op", "replace"}, {"path", "/a/x"}, {"value", 1}}})},
	                               {"revision", tree.revision()},
	                               {"subscription", 17}})));

	// One batch with changes under both: "" sees more than "/a", so its own buffer.
	tree.set("/a/x", 2);
	tree.set("/b/y", 2);
	tree.flush();
	ASSERT_EQ(a1.heads.size(), 2u);
	ASSERT_EQ(b.heads.size(), 1u);
	ASSERT_EQ(all.heads.size(), 2u);
	EXPECT_EQ(a1.heads[1].get(), a3.heads[1].get());
	EXPECT_NE(all.heads[1].get(), a1.heads[1].get());
	EXPECT_NE(b.heads[0].get(), a1.heads[1].get());
	EXPECT_EQ(a1.lastChanges(), json::array({{{"op", "replace"}, {"path", "/a/x"}, {"value", 2}}}));
	EXPECT_EQ(b.lastChanges(), json::array({{{"op", "replace"}, {"path", "/b/y"}, {"value", 2}}}));
	EXPECT_EQ(all.lastChanges().size(), 2u);

	// A group goes with its last member.
	m1 = {};
	m2 = {};
	EXPECT_EQ(groups.groupCount(), 3u);
	m3 = {};
	EXPECT_EQ(groups.groupCount(), 2u);
	tree.set("/a/x", 3);
	tree.flush();
	EXPECT_EQ(a1.heads.size(), 2u);
	EXPECT_EQ(all.heads.size(), 3u);
}

TEST_F(FilterGroupsTest, RestatedOperationsAreSharedAndNeverMistakenForAnotherFiltersOwn) {
	tree.set("/a/x", 1);
	tree.set("/a/y", 1);
	tree.flush();
	Recorder x1, x2, y;
	auto m1 = groups.join({"/a/x"}, x1);
	auto m2 = groups.join({"/a/x"}, x2);
	auto my = groups.join({"/a/y"}, y);
	// The ancestor is rewritten: each filter restates its own path.
	tree.set("/a", json{{"x", 2}, {"y", 3}});
	tree.flush();
	ASSERT_EQ(x1.heads.size(), 1u);
	ASSERT_EQ(y.heads.size(), 1u);
	EXPECT_EQ(x1.heads[0].get(), x2.heads[0].get());
	EXPECT_EQ(x1.lastChanges(), json::array({{{"op", "replace"}, {"path", "/a/x"}, {"value", 2}}}));
	EXPECT_EQ(y.lastChanges(), json::array({{{"op", "replace"}, {"path", "/a/y"}, {"value", 3}}}));
}

TEST_F(FilterGroupsTest, ASubscriberJoiningLaterSeesPresenceAsAFreshFilterWould) {
	tree.set("/p/q", 1);
	tree.flush();
	Recorder early, late;
	auto m1 = groups.join({"/p/q"}, early);
	tree.remove("/p/q");
	tree.flush();
	auto m2 = groups.join({"/p/q"}, late);
	tree.set("/p", json{{"q", 2}});
	tree.flush();
	ASSERT_EQ(late.heads.size(), 1u);
	EXPECT_EQ(late.heads[0].get(), early.heads.back().get());
	EXPECT_EQ(late.lastChanges(), json::array({{{"op", "add"}, {"path", "/p/q"}, {"value", 2}}}));
}

TEST_F(FilterGroupsTest, MembersMayLeaveWhileABatchIsBeingDelivered) {
	Recorder first, second, third;
	auto m1 = groups.join({"/a"}, first);
	auto m2 = std::make_unique<qsd::FilterGroups::Membership>(groups.join({"/a"}, second));
	auto m3 = groups.join({"/a"}, third);
	// The first one's handling ends the second's subscription and its own.
	first.also = [&] {
		m2.reset();
		m1 = {};
	};
	tree.set("/a/x", 1);
	tree.flush();
	EXPECT_EQ(first.heads.size(), 1u);
	EXPECT_TRUE(second.heads.empty());
	EXPECT_EQ(third.heads.size(), 1u);
	third.also = [&] { m3 = {}; };   // the last member leaves from inside the group's delivery
	tree.set("/a/x", 2);
	tree.flush();
	EXPECT_EQ(third.heads.size(), 2u);
	EXPECT_EQ(groups.groupCount(), 0u);   // the emptied group was removed after the batch
	tree.set("/a/x", 3);
	tree.flush();
	EXPECT_EQ(third.heads.size(), 2u);
	Recorder again;
	auto m4 = groups.join({"/b"}, again);
	EXPECT_EQ(groups.groupCount(), 1u);
}

TEST_F(FilterGroupsTest, AGroupEmptiedAndJoinedAgainDuringABatchStays) {
	Recorder leaver, comer, other;
	std::optional<qsd::FilterGroups::Membership> later;
	auto m1 = groups.join({"/a"}, leaver);
	// Another group's delivery comes later in the same batch: a member of it joins the
	// emptied group again before the batch ends.
	auto m2 = groups.join({"/b"}, other);
	leaver.also = [&] { m1 = {}; };
	other.also = [&] {
		if (!later) later.emplace(groups.join({"/a"}, comer));
	};
	tree.set("/a/x", 1);
	tree.set("/b/x", 1);
	tree.flush();
	EXPECT_EQ(groups.groupCount(), 2u);
	tree.set("/a/x", 2);
	tree.flush();
	ASSERT_EQ(comer.heads.size(), 1u);
	EXPECT_EQ(comer.lastChanges(), json::array({{{"op", "replace"}, {"path", "/a/x"}, {"value", 2}}}));
}

TEST(FilterGroupsLimits, PathsOfAllGroupsAreBoundedAndSharedListsCountOnce) {
	qsd::EventLoop loop;
	qsd::Tree tree{loop};
	qsd::FilterGroups groups{tree, {.maxPaths = 3, .maxPathBytes = 8}};
	Recorder a, b, c, d;
	auto ma = groups.join({"/a", "/b"}, a);
	auto mb = groups.join({"/a", "/b"}, b);   // the same list: its filter is shared
	EXPECT_EQ(groups.pathCount(), 2u);
	EXPECT_EQ(groups.pathBytes(), 4u);
	auto limit = [&](std::vector<std::string> paths) -> std::string {
		try {
			auto m = groups.join(std::move(paths), c);
		} catch (const qsd::rpc::RpcException& e) {
			EXPECT_EQ(e.error.code, qsd::rpc::ErrorCode::LimitExceeded);
			return e.error.data.at("limit").get<std::string>();
		}
		return "";
	};
	EXPECT_EQ(limit({"/c", "/d"}), "allPaths");
	EXPECT_EQ(limit({"/long"}), "allPathBytes");
	EXPECT_EQ(groups.groupCount(), 1u);
	{
		auto md = groups.join({"/c"}, d);
		EXPECT_EQ(groups.pathCount(), 3u);
	}
	EXPECT_EQ(groups.pathCount(), 2u);
	ma = {};
	mb = {};
	EXPECT_EQ(groups.pathCount(), 0u);
	EXPECT_EQ(groups.pathBytes(), 0u);
	EXPECT_EQ(limit({"/long"}), "");
}

// Members leave through their slots, and the holes they leave go once they are half of the
// group: whatever the order of leaving and joining, each batch reaches exactly the members
// there, in the order they joined.
TEST_F(FilterGroupsTest, MembersLeavingInAnyOrderLeaveTheOthersInTheirOrder) {
	constexpr int kCount = 300;
	std::vector<int> order;   // who was handed each batch, in the order handed
	std::vector<std::unique_ptr<Recorder>> sinks;
	std::vector<std::optional<qsd::FilterGroups::Membership>> members(kCount * 2);
	for (int i = 0; i < kCount * 2; ++i) {
		sinks.push_back(std::make_unique<Recorder>());
		sinks.back()->also = [&order, i] { order.push_back(i); };
	}
	std::vector<int> expected;
	auto check = [&](int value) {
		order.clear();
		tree.set("/a/x", value);
		tree.flush();
		EXPECT_EQ(order, expected) << "batch " << value;
	};
	auto join = [&](int i) {
		members[size_t(i)].emplace(groups.join({"/a"}, *sinks[size_t(i)]));
		expected.push_back(i);
	};
	auto leave = [&](int i) {
		members[size_t(i)].reset();
		std::erase(expected, i);
	};
	for (int i = 0; i < kCount; ++i) join(i);
	check(1);
	for (int i = 0; i < kCount; i += 3) leave(i);   // a third, spread: holes stay
	check(2);
	for (int i = 1; i < kCount / 2; i += 3) leave(i);   // past half: the holes go
	check(3);
	for (int i = kCount; i < kCount + 50; ++i) join(i);   // new members after the survivors
	check(4);
	// Leaving from inside a delivery: the first member handed the batch ends the subscriptions
	// of the even-numbered others, which are then not handed the rest of it.
	int first = expected.front();
	sinks[size_t(first)]->also = [&, first, there = expected] {
		order.push_back(first);
		for (int i: there)
			if (i != first && i % 2 == 0) members[size_t(i)].reset();
	};
	std::erase_if(expected, [&](int i) { return i != first && i % 2 == 0; });
	check(5);
	sinks[size_t(first)]->also = [&order, first] { order.push_back(first); };
	check(6);
	for (int i: std::vector<int>(expected)) leave(i);
	EXPECT_EQ(groups.groupCount(), 0u);
}
