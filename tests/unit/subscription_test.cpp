// PathFilter: which changes of a batch a subscription sees, rewritten to apply to a document
// that holds only the subscribed subtrees.

#include "server/subscription.hpp"

#include <gtest/gtest.h>

using qsd::PathFilter;
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

} // namespace

TEST(PathFilter, SnapshotKeepsRequestOrderAndLeavesAbsentPathsOut) {
	json root = {{"a", {{"b", 1}}}, {"c", 2}};
	PathFilter f({"/c", "/missing", "/a/b", "", "/a/b"}, root);
	EXPECT_EQ(f.requested(), (std::vector<std::string>{"/c", "/missing", "/a/b", "", "/a/b"}));
	EXPECT_EQ(f.snapshot(root), (json{{"/c", 2}, {"/a/b", 1}, {"", root}}));
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
	EXPECT_EQ(f.snapshot(root), (json{{"/a~1b/c~0d", 1}}));
	EXPECT_EQ(run(f, json::array({op("replace", "/a~1b/c~0d", 2)}), root), json::array({op("replace", "/a~1b/c~0d", 2)}));
	EXPECT_EQ(run(f, json::array({op("replace", "/a~1b~0", 2)}), root), json::array());
}
