#pragma once
// Writes to many sockets with one system call.
//
// A change that many clients subscribe to is written to each of their sockets. On this kind of
// machine a system call costs about as much as the write it makes (docs/performance.md, "One
// system call for the fan-out"), so the server hands the first write of every subscriber to
// one io_uring submission. The writes are MSG_DONTWAIT: each completes (or fails with EAGAIN)
// within the submission, so io_uring is used synchronously, from the loop's one thread, and
// starts no thread of its own. Where io_uring is absent or refused (an old kernel,
// kernel.io_uring_disabled, a seccomp filter, QSD_IO_URING=0), each write is a sendmsg of its own.

#include <sys/types.h>
#include <sys/uio.h>

#include <memory>
#include <span>

namespace qsd {

class SendBatch {
public:
	struct Write {
		int fd = -1;
		iovec iov[2]{};
		size_t iovCount = 0;
		ssize_t result = 0;   // set by send(): the bytes written, or -errno
	};

	// `allowRing` false: never io_uring (as QSD_IO_URING=0 asks).
	explicit SendBatch(bool allowRing);
	~SendBatch();
	SendBatch(const SendBatch&) = delete;
	SendBatch& operator=(const SendBatch&) = delete;

	// Writes each (MSG_NOSIGNAL | MSG_DONTWAIT) and sets its result; never blocks. Two writes or
	// more go through io_uring when it is available (made at the first such call).
	void send(std::span<Write> writes);
	// Whether the last call of send() with two writes or more used io_uring.
	[[nodiscard]] bool usedRing() const { return usedRing_; }

	// QSD_IO_URING: "0" turns io_uring off; unset or anything else leaves it on.
	[[nodiscard]] static bool allowedByEnvironment();

private:
	struct Ring;
	bool ring();
	void sendThroughRing(std::span<Write> writes);

	std::unique_ptr<Ring> ring_;
	bool allowRing_;
	bool usedRing_ = false;
};

} // namespace qsd
