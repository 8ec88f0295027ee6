#include "tree.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace qsd;
using json = nlohmann::json;

namespace {

struct BatchRecorder {
	std::vector<std::pair<uint64_t, json>> batches;
	Tree::Subscription sub;
	explicit BatchRecorder(Tree& t) {
		sub = t.observe([this](uint64_t rev, const json& patch) { batches.emplace_back(rev, patch); });
	}
};

} // namespace

TEST(ATree, CoalescesWritesOfOneIterationIntoOneBatchWithOneRevision) {
	EventLoop loop;
	Tree tree(loop);
	BatchRecorder rec(tree);
	tree.set("/a/b", 1);
	tree.set("/a/c", 2);
	tree.set("/a/b", 3);
	tree.flush();
	ASSERT_EQ(rec.batches.size(), 1u);
	EXPECT_EQ(rec.batches[0].first, 1u);
	EXPECT_EQ(rec.batches[0].second, json::parse(R"([{"op":"add","path":"/a","value":{"b":3,"c":2}}])"));
}

TEST(ATree, IgnoresWritesOfEqualValues) {
	EventLoop loop;
	Tree tree(loop);
	tree.set("/x", {{"k", 1}});
	tree.flush();
	BatchRecorder rec(tree);
	tree.set("/x", {{"k", 1}});
	tree.update("/x", {{"k", 1}});
	tree.flush();
	EXPECT_TRUE(rec.batches.empty());
	EXPECT_EQ(tree.revision(), 1u);
}

TEST(ATree, ReportsReplaceForExistingAndRemoveForDeletedPaths) {
	EventLoop loop;
	Tree tree(loop);
	tree.set("/a", 1);
	tree.set("/b", 2);
	tree.flush();
	BatchRecorder rec(tree);
	tree.set("/a", 5);
	tree.remove("/b");
	tree.remove("/missing");
	tree.flush();
	ASSERT_EQ(rec.batches.size(), 1u);
	EXPECT_EQ(rec.batches[0].second,
	          json::parse(R"([{"op":"replace","path":"/a","value":5},{"op":"remove","path":"/b"}])"));
	// The server gives the heap back a second after a flush that removed something.
	EXPECT_TRUE(tree.lastFlushRemoved());
	tree.remove("/a");
	tree.set("/c", 1);
	tree.flush();
	EXPECT_TRUE(tree.lastFlushRemoved());
	tree.set("/d", 1);
	tree.remove("/d");   // added and gone in one batch: nothing was removed that was there
	tree.flush();
	EXPECT_FALSE(tree.lastFlushRemoved());
	tree.set("/c", 2);
	tree.flush();
	EXPECT_FALSE(tree.lastFlushRemoved());
}

TEST(ATree, SyncWritesOnlyTheFieldsThatChangedAndKeepsWhatItIsTold) {
	EventLoop loop;
	Tree tree(loop);
	tree.set("/d/n1", json::parse(R"({"name":"a","audio":{"volume":0.5,"muted":false},"old":1,"peak":0.3})"));
	tree.flush();
	BatchRecorder rec(tree);
	// A whole object republished: one replace for the changed leaf, a remove for the key that
	// went, nothing for equal fields, and the kept key stays.
	tree.sync("/d/n1", json::parse(R"({"name":"a","audio":{"volume":0.7,"muted":false},"new":[1,2]})"), {"peak"});
	tree.flush();
	ASSERT_EQ(rec.batches.size(), 1u);
	EXPECT_EQ(rec.batches[0].second, json::parse(R"([
		{"op":"remove","path":"/d/n1/old"},
		{"op":"replace","path":"/d/n1/audio/volume","value":0.7},
		{"op":"add","path":"/d/n1/new","value":[1,2]}])"));
	EXPECT_EQ(*tree.find("/d/n1/peak"), 0.3);
	// keep is for the top level only; a non-object on either side is a plain set.
	tree.sync("/d/n1/audio", json::parse(R"({"volume":0.7})"), {});
	tree.sync("/d/n2", 5);
	tree.flush();
	EXPECT_EQ(*tree.find("/d/n1/audio"), json::parse(R"({"volume":0.7})"));
	EXPECT_EQ(*tree.find("/d/n2"), 5);
	tree.sync("/d/n2", json::object({{"x", 1}}));
	tree.flush();
	EXPECT_EQ(rec.batches.back().second, json::parse(R"([{"op":"replace","path":"/d/n2","value":{"x":1}}])"));
}

TEST(ATree, AnAddThenRemoveInOneBatchIsNoChangeAtAll) {
	EventLoop loop;
	Tree tree(loop);
	BatchRecorder rec(tree);
	tree.set("/tmp/x", 1);
	tree.remove("/tmp");
	tree.flush();
	EXPECT_TRUE(rec.batches.empty());
	EXPECT_EQ(tree.revision(), 0u);
}

TEST(ATree, ShortLivedObjectsLeaveNothingPending) {
	// A flood of objects that come and go within one batch holds nothing until the flush.
	EventLoop loop;
	Tree tree(loop);
	tree.set("/items/keep", 1);
	tree.flush();
	BatchRecorder rec(tree);
	for (int i = 0; i < 1000; ++i) {
		tree.set("/items/" + std::to_string(i), {{"n", i}});
		tree.remove("/items/" + std::to_string(i));
	}
	EXPECT_FALSE(tree.pending());
	// One that existed before the batch is still reported as removed.
	tree.remove("/items/keep");
	tree.set("/items/keep", 2);
	tree.remove("/items/keep");
	EXPECT_TRUE(tree.pending());
	tree.flush();
	ASSERT_EQ(rec.batches.size(), 1u);
	EXPECT_EQ(rec.batches[0].second, json::parse(R"([{"op":"remove","path":"/items/keep"}])"));
}

TEST(ATree, EscapesKeysWithSlashAndTilde) {
	EventLoop loop;
	Tree tree(loop);
	tree.set("/n/a~1b~0c", "v");
	tree.flush();
	ASSERT_NE(tree.find("/n/a~1b~0c"), nullptr);
	EXPECT_EQ(tree.root()["n"]["a/b~c"], "v");
}

TEST(ATree, RefusesTheRootAndInvalidPointers) {
	EventLoop loop;
	Tree tree(loop);
	EXPECT_THROW(tree.set("", 1), std::invalid_argument);
	EXPECT_THROW(tree.set("no-slash", 1), std::invalid_argument);
	EXPECT_THROW(tree.set("/bad~2", 1), std::invalid_argument);
}

TEST(ATree, EpochIsRandomPerInstance) {
	EventLoop loop;
	Tree a(loop), b(loop);
	EXPECT_NE(a.epoch(), b.epoch());
	EXPECT_EQ(a.epoch().size(), 16u);
}

// Property: for random write sequences, snapshot(r0) + every batch's patch == snapshot(r1).
TEST(ATree, PatchesReproduceTheTreeForRandomWriteSequences) {
	std::mt19937 rng(12345);
	const char* keys[] = {"a", "b", "c", "d~e", "f/g"};
	auto randomPath = [&] {
		std::string p;
		int depth = 1 + int(rng() % 3);
		for (int i = 0; i < depth; ++i) {
			std::string k = keys[rng() % 5];
			std::string esc;
			for (char c: k) esc += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
			p += "/" + esc;
		}
		return p;
	};
	auto randomValue = [&]() -> json {
		switch (rng() % 4) {
		case 0: return int(rng() % 3);
		case 1: return std::string(1, char('x' + rng() % 3));
		case 2: return json{{"a", int(rng() % 2)}};
		default: return json::object();
		}
	};
	for (int round = 0; round < 300; ++round) {
		EventLoop loop;
		Tree tree(loop);
		for (int i = 0; i < 20; ++i) tree.set(randomPath(), randomValue());
		tree.flush();
		json mirror = tree.root();
		uint64_t rev = tree.revision();
		BatchRecorder rec(tree);
		for (int batch = 0; batch < 10; ++batch) {
			int writes = 1 + int(rng() % 8);
			for (int w = 0; w < writes; ++w) {
				switch (rng() % 3) {
				case 0: tree.set(randomPath(), randomValue()); break;
				case 1: tree.remove(randomPath()); break;
				default: {
					auto p = randomPath();
					auto* v = tree.find(p);
					if (!v || v->is_object()) tree.update(p, {{"a", int(rng() % 2)}, {"z", 1}});
					break;
				}
				}
			}
			tree.flush();
		}
		for (const auto& [r, patch]: rec.batches) {
			ASSERT_GT(r, rev);
			rev = r;
			mirror = mirror.patch(patch);
		}
		ASSERT_EQ(mirror, tree.root()) << "round " << round;
	}
}
