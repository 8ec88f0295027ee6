// SendBatch writes many sockets' first writes in one io_uring submission, or one sendmsg each
// where io_uring is not to be used. Both ways must give every write the result a sendmsg of
// its own would have: all bytes, a partial count, EAGAIN on a full socket, EPIPE on a closed
// peer; and more writes than the ring holds.

#include "server/send_batch.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace qsd;

namespace {

struct Pair {
	int writer = -1;
	int reader = -1;
	Pair() {
		int sv[2];
		if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) throw std::runtime_error("socketpair");
		writer = sv[0];
		reader = sv[1];
	}
	~Pair() {
		if (writer >= 0) ::close(writer);
		if (reader >= 0) ::close(reader);
	}
	Pair(const Pair&) = delete;
	Pair& operator=(const Pair&) = delete;
	std::string readAll() const {
		std::string out;
		char buf[65536];
		for (;;) {
			ssize_t n = ::read(reader, buf, sizeof buf);
			if (n <= 0) return out;
			out.append(buf, size_t(n));
		}
	}
	// Writes until the socket takes no more; returns how much it took.
	size_t fill() const {
		std::string chunk(4096, 'f');
		size_t total = 0;
		for (;;) {
			ssize_t n = ::send(writer, chunk.data(), chunk.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n <= 0) return total;
			total += size_t(n);
		}
	}
};

SendBatch::Write writeOf(const Pair& p, std::string& shared, std::string& own) {
	SendBatch::Write w;
	w.fd = p.writer;
	w.iov[0] = {shared.data(), shared.size()};
	w.iov[1] = {own.data(), own.size()};
	w.iovCount = 2;
	return w;
}

class ASendBatch: public ::testing::TestWithParam<bool> {
protected:
	SendBatch batch{GetParam()};
	// With io_uring allowed, a batch that did not use it means the kernel refused it: the
	// results are still checked, and the test says which way it went.
	void noteWay() {
		if (GetParam() && !batch.usedRing()) std::printf("io_uring unavailable here: checked the sendmsg path\n");
		if (!GetParam()) {
			EXPECT_FALSE(batch.usedRing());
		}
	}
};

} // namespace

TEST_P(ASendBatch, WritesBothPartsToEverySocketInOrder) {
	std::vector<std::unique_ptr<Pair>> pairs;
	std::string shared = R"({"jsonrpc":"2.0","method":"tree.changed","params":{"changes":[],"revision":7,"subscription":)";
	std::vector<std::string> own;
	// More than one submission holds (64), and a last one that is not full.
	constexpr size_t kSockets = 150;
	for (size_t i = 0; i < kSockets; ++i) {
		pairs.push_back(std::make_unique<Pair>());
		own.push_back(std::to_string(i) + "}}\n");
	}
	std::vector<SendBatch::Write> writes;
	for (size_t i = 0; i < kSockets; ++i) writes.push_back(writeOf(*pairs[i], shared, own[i]));
	batch.send(writes);
	noteWay();
	for (size_t i = 0; i < kSockets; ++i) {
		EXPECT_EQ(writes[i].result, ssize_t(shared.size() + own[i].size())) << i;
		EXPECT_EQ(pairs[i]->readAll(), shared + own[i]) << i;
	}
}

TEST_P(ASendBatch, GivesEachWriteItsOwnResult) {
	Pair ok, full, gone, partial, ok2;
	std::string shared = "shared part ";
	std::string own = "own part\n";
	full.fill();
	::close(gone.reader);
	gone.reader = -1;
	// Room for part of a big write only.
	size_t room = partial.fill();
	ASSERT_GT(room, 0u);
	std::string drained(8192, '\0');
	ASSERT_EQ(::read(partial.reader, drained.data(), drained.size()), ssize_t(drained.size()));
	std::string big(room, 'b');

	std::vector<SendBatch::Write> writes{writeOf(ok, shared, own), writeOf(full, shared, own), writeOf(gone, shared, own),
	                                     writeOf(partial, shared, big), writeOf(ok2, shared, own)};
	batch.send(writes);
	noteWay();
	EXPECT_EQ(writes[0].result, ssize_t(shared.size() + own.size()));
	EXPECT_EQ(writes[1].result, -EAGAIN);
	EXPECT_EQ(writes[2].result, -EPIPE);
	EXPECT_GT(writes[3].result, 0);
	EXPECT_LT(writes[3].result, ssize_t(shared.size() + big.size()));
	EXPECT_EQ(writes[4].result, ssize_t(shared.size() + own.size()));
	EXPECT_EQ(ok.readAll(), shared + own);
	EXPECT_EQ(ok2.readAll(), shared + own);
}

TEST_P(ASendBatch, WritesASingleWriteWithoutTheRing) {
	Pair p;
	std::string shared = "a", own = "b\n";
	std::vector<SendBatch::Write> writes{writeOf(p, shared, own)};
	batch.send(writes);
	EXPECT_FALSE(batch.usedRing());
	EXPECT_EQ(writes[0].result, 3);
	EXPECT_EQ(p.readAll(), "ab\n");
}

INSTANTIATE_TEST_SUITE_P(IoUringOrNot, ASendBatch, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "IoUring" : "Sendmsg"; });
