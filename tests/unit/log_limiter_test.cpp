// The limiter of lines a peer can cause at will (daemon/log.hpp).

#include "log.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <unistd.h>

TEST(LogLimiter, LetsABurstThroughPerWindowAndCountsTheRest) {
	qsd::log::Limiter limiter(3, 1000);
	uint64_t suppressed = 99;
	for (int i = 0; i < 3; ++i) {
		EXPECT_TRUE(limiter.allow(100 + uint64_t(i), suppressed));
		EXPECT_EQ(suppressed, 0u);
	}
	for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter.allow(200, suppressed));
	EXPECT_TRUE(limiter.allow(1200, suppressed));
	EXPECT_EQ(suppressed, 5u);
	EXPECT_TRUE(limiter.allow(1201, suppressed));
	EXPECT_EQ(suppressed, 0u);
}

// Peers' text goes into log lines (an item's name, an error a service chose): a newline in it
// must not start a line of its own, which journald would read as an entry at the priority its
// "<N>" says.
TEST(LogLine, IsOneLineWhateverThePeerSent) {
	using qsd::log::oneLine;
	EXPECT_EQ(oneLine("x\n<0>qsd: the disk is on fire"), "x\\n<0>qsd: the disk is on fire");
	EXPECT_EQ(oneLine("a\rb\tc\x1b[31m\x7f"), "a\\rb\\tc\\x1b[31m\\x7f");
	EXPECT_EQ(oneLine("no such method\n"), "no such method");   // dbus-python's errors end so
	EXPECT_EQ(oneLine("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
	EXPECT_EQ(oneLine("bad \xff\xc3 utf-8 \xed\xa0\x80"), "bad \\xff\\xc3 utf-8 \\xed\\xa0\\x80");
	EXPECT_EQ(oneLine(std::string_view("nul\0byte", 8)), "nul\\x00byte");
	auto cut = oneLine(std::string(5000, 'a'));
	EXPECT_EQ(cut, std::string(4096, 'a') + "... (904 more bytes)");
}

// Any category's lines are bounded: a peer that makes some path log in a loop does not fill the
// journal, nor reach journald's own limit, which would drop every line of qsd's.
TEST(LogLine, ACategoryLogsAtMost100LinesIn10Seconds) {
	char path[] = "/tmp/qsd-log-test.XXXXXX";
	int fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	unlink(path);
	int saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	for (int i = 0; i < 2000; ++i) qsd::log::info("log-test-a", "line {}", i);
	qsd::log::info("log-test-b", "another category");
	dup2(saved, STDERR_FILENO);
	close(saved);
	std::string text(1 << 20, '\0');
	text.resize(size_t(pread(fd, text.data(), text.size(), 0)));
	close(fd);
	size_t a = 0, pos = 0;
	while ((pos = text.find("log-test-a: line", pos)) != std::string::npos) ++a, ++pos;
	EXPECT_EQ(a, 100u);
	EXPECT_NE(text.find("log-test-a: line 99\n"), std::string::npos);
	EXPECT_EQ(text.find("log-test-a: line 100\n"), std::string::npos);
	EXPECT_NE(text.find("log-test-b: another category\n"), std::string::npos);
}
