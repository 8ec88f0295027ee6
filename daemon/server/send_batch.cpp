#include "send_batch.hpp"

#include "../log.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef QSD_HAVE_IO_URING
#include <liburing.h>
#endif

namespace qsd {

namespace {

ssize_t sendOne(const SendBatch::Write& w) {
	msghdr msg{};
	msg.msg_iov = const_cast<iovec*>(w.iov);
	msg.msg_iovlen = w.iovCount;
	for (;;) {
		ssize_t n = ::sendmsg(w.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0) return n;
		if (errno != EINTR) return -errno;
	}
}

} // namespace

#ifdef QSD_HAVE_IO_URING
// 64 writes per submission: the rings take 4 pages, and a bigger fan-out is a few submissions.
constexpr unsigned kRingEntries = 64;

struct SendBatch::Ring {
	io_uring ring{};
	std::vector<msghdr> messages = std::vector<msghdr>(kRingEntries);
	std::vector<char> completed = std::vector<char>(kRingEntries);   // per submission, by index
	~Ring() { io_uring_queue_exit(&ring); }
};
#else
struct SendBatch::Ring {};
#endif

SendBatch::SendBatch(bool allowRing): allowRing_(allowRing) {}

SendBatch::~SendBatch() = default;

bool SendBatch::allowedByEnvironment() {
	const char* v = std::getenv("QSD_IO_URING");
	return !v || std::strcmp(v, "0") != 0;
}

bool SendBatch::ring() {
#ifdef QSD_HAVE_IO_URING
	if (ring_) return true;
	if (!allowRing_) return false;
	allowRing_ = false;   // one attempt: a refusal does not change while qsd runs
	io_uring made{};
	// SUBMIT_ALL: a write that cannot be made does not hold back the others. COOP_TASKRUN: the
	// loop's thread reaps its own completions, no interrupt needed.
	int rc = io_uring_queue_init(kRingEntries, &made, IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN);
	if (rc == -EINVAL) rc = io_uring_queue_init(kRingEntries, &made, 0);   // a kernel before 5.19
	if (rc < 0) {
		log::info("server", "io_uring is not available ({}): a write system call per subscriber", std::strerror(-rc));
		return false;
	}
	ring_ = std::make_unique<Ring>();
	ring_->ring = made;   // plain data: the rings' mappings and fd, now owned by Ring
	log::debug("server", "writes to several subscribers go out in one io_uring submission");
	return true;
#else
	return false;
#endif
}

void SendBatch::send(std::span<Write> writes) {
	usedRing_ = false;
	if (writes.size() >= 2 && ring()) {
		sendThroughRing(writes);
		return;
	}
	for (auto& w: writes) w.result = sendOne(w);
}

void SendBatch::sendThroughRing(std::span<Write> writes) {
#ifdef QSD_HAVE_IO_URING
	usedRing_ = true;
	auto& r = ring_->ring;
	for (size_t done = 0; done < writes.size();) {
		size_t count = std::min<size_t>(writes.size() - done, kRingEntries);
		auto& completed = ring_->completed;
		std::fill(completed.begin(), completed.end(), 0);
		for (size_t i = 0; i < count; ++i) {
			auto& w = writes[done + i];
			auto& m = ring_->messages[i];
			m = msghdr{};
			m.msg_iov = w.iov;
			m.msg_iovlen = w.iovCount;
			// Never null: every earlier submission was reaped whole, so the ring is empty.
			io_uring_sqe* sqe = io_uring_get_sqe(&r);
			io_uring_prep_sendmsg(sqe, w.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
			io_uring_sqe_set_data64(sqe, i);
		}
		size_t seen = 0;
		int rc = io_uring_submit_and_wait(&r, unsigned(count));
		for (;;) {
			unsigned head = 0;
			unsigned reaped = 0;
			io_uring_cqe* cqe = nullptr;
			io_uring_for_each_cqe(&r, head, cqe) {
				size_t i = size_t(io_uring_cqe_get_data64(cqe));
				if (i < count && !completed[i]) {
					completed[i] = 1;
					writes[done + i].result = cqe->res;
					++seen;
				}
				++reaped;
			}
			io_uring_cq_advance(&r, reaped);
			if (seen == count) break;
			if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
				// Not expected of a ring that works: stop using it. What was not written is
				// reported failed (its connection closes) rather than written twice.
				log::error("server", "io_uring failed ({}): back to a write system call per subscriber", std::strerror(-rc));
				for (size_t i = 0; i < count; ++i)
					if (!completed[i]) writes[done + i].result = -EIO;
				for (size_t i = done + count; i < writes.size(); ++i) writes[i].result = sendOne(writes[i]);
				ring_.reset();
				return;
			}
			// MSG_DONTWAIT writes complete within their submission; this only runs after an
			// interruption, or on a kernel that submitted only part of them.
			rc = io_uring_sq_ready(&r) > 0 ? io_uring_submit_and_wait(&r, unsigned(count - seen))
			                               : io_uring_wait_cqe_nr(&r, &cqe, unsigned(count - seen));
		}
		done += count;
	}
#else
	(void)writes;
#endif
}

} // namespace qsd
