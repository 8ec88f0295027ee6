// LineReader: NDJSON framing with a hard line-length limit.

#include <qsd/protocol/framing.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

using qsd::LineReader;

namespace {

struct Collect {
	std::vector<std::string> lines;
	std::vector<size_t> tooLongAt;   // index in `lines` where each oversized line was reported

	void feed(LineReader& r, std::string_view data) {
		r.feed(data, [this](std::string_view l) { lines.emplace_back(l); }, [this] { tooLongAt.push_back(lines.size()); });
	}
};

} // namespace

TEST(Framing, LinesInOneFeed) {
	LineReader r(100);
	Collect c;
	c.feed(r, "a\nbb\n\nccc\n");
	EXPECT_EQ(c.lines, (std::vector<std::string>{"a", "bb", "", "ccc"}));
	EXPECT_EQ(r.pending(), 0u);
	EXPECT_TRUE(c.tooLongAt.empty());
}

TEST(Framing, SplitAnywhereGivesTheSameLines) {
	const std::string stream = "{\"jsonrpc\":\"2.0\",\"id\":1}\n{\"x\":[1,2,3]}\nlast\n";
	for (size_t step = 1; step <= stream.size(); ++step) {
		LineReader r(100);
		Collect c;
		for (size_t i = 0; i < stream.size(); i += step) c.feed(r, std::string_view(stream).substr(i, step));
		EXPECT_EQ(c.lines, (std::vector<std::string>{"{\"jsonrpc\":\"2.0\",\"id\":1}", "{\"x\":[1,2,3]}", "last"})) << step;
	}
}

TEST(Framing, PartialLineIsKeptUntilItsNewline) {
	LineReader r(100);
	Collect c;
	c.feed(r, "abc");
	EXPECT_TRUE(c.lines.empty());
	EXPECT_EQ(r.pending(), 3u);
	c.feed(r, "def");
	EXPECT_EQ(r.pending(), 6u);
	c.feed(r, "\ng");
	EXPECT_EQ(c.lines, (std::vector<std::string>{"abcdef"}));
	EXPECT_EQ(r.pending(), 1u);
}

TEST(Framing, LineAtTheLimitIsAccepted) {
	LineReader r(10);
	Collect c;
	c.feed(r, std::string(10, 'x') + "\n");
	ASSERT_EQ(c.lines.size(), 1u);
	EXPECT_EQ(c.lines[0].size(), 10u);
	EXPECT_TRUE(c.tooLongAt.empty());
	// The same, assembled from pieces.
	c.feed(r, std::string(4, 'y'));
	c.feed(r, std::string(6, 'y'));
	c.feed(r, "\n");
	ASSERT_EQ(c.lines.size(), 2u);
	EXPECT_EQ(c.lines[1], std::string(10, 'y'));
	EXPECT_TRUE(c.tooLongAt.empty());
}

TEST(Framing, OversizedLineIsReportedOnceAndReadingResumes) {
	LineReader r(10);
	Collect c;
	c.feed(r, "ok\n" + std::string(11, 'x') + "\nnext\n");
	EXPECT_EQ(c.lines, (std::vector<std::string>{"ok", "next"}));
	EXPECT_EQ(c.tooLongAt, (std::vector<size_t>{1}));   // at its place in the stream
	EXPECT_FALSE(r.discarding());
}

TEST(Framing, OversizedLineAcrossFeedsIsReportedAsSoonAsTheLimitIsCrossed) {
	LineReader r(10);
	Collect c;
	c.feed(r, std::string(8, 'x'));
	EXPECT_TRUE(c.tooLongAt.empty());
	c.feed(r, std::string(8, 'x'));   // 16 > 10, no newline yet
	EXPECT_EQ(c.tooLongAt.size(), 1u);
	EXPECT_TRUE(r.discarding());
	EXPECT_EQ(r.pending(), 0u);        // nothing of it is kept
	for (int i = 0; i < 1000; ++i) c.feed(r, std::string(1000, 'z'));
	EXPECT_EQ(c.tooLongAt.size(), 1u);
	EXPECT_EQ(r.pending(), 0u);
	c.feed(r, "zzz\nafter\n");
	EXPECT_FALSE(r.discarding());
	EXPECT_EQ(c.lines, (std::vector<std::string>{"after"}));
	EXPECT_EQ(c.tooLongAt.size(), 1u);
}

TEST(Framing, TwoOversizedLinesInARow) {
	LineReader r(4);
	Collect c;
	c.feed(r, "aaaaaa\nbbbbbbb\ncc\n");
	EXPECT_EQ(c.tooLongAt, (std::vector<size_t>{0, 0}));
	EXPECT_EQ(c.lines, (std::vector<std::string>{"cc"}));
}

TEST(Framing, OversizedEndingExactlyAtAFeedBoundary) {
	LineReader r(4);
	Collect c;
	c.feed(r, "aaaaa");   // crosses the limit, discarding
	c.feed(r, "\n");      // the end of the oversized line
	c.feed(r, "ok\n");
	EXPECT_EQ(c.tooLongAt.size(), 1u);
	EXPECT_EQ(c.lines, (std::vector<std::string>{"ok"}));
}

TEST(Framing, BinaryBytesPassThrough) {
	LineReader r(100);
	Collect c;
	std::string bin("\x00\xff\xfe\r\x01", 5);
	c.feed(r, bin + "\n");
	ASSERT_EQ(c.lines.size(), 1u);
	EXPECT_EQ(c.lines[0], bin);
}
