#include "rfkill.hpp"

#include "../../log.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace qsd::bluetooth {

RfkillWatch::Options RfkillWatch::fromEnvironment() {
	Options o;
	if (const char* d = std::getenv("QSD_RFKILL"); d && *d) o.device = d;
	if (const char* s = std::getenv("QSD_RFKILL_SYSFS"); s && *s) o.sysfs = s;
	return o;
}

RfkillWatch::RfkillWatch(EventLoop& loop, Options options, std::function<void()> changed)
    : loop_(loop), options_(std::move(options)), changed_(std::move(changed)) {
	open();
}

RfkillWatch::~RfkillWatch() {
	io_.reset();
	if (fd_ >= 0) ::close(fd_);
}

void RfkillWatch::open() {
	struct stat st{};
	if (::stat(options_.device.c_str(), &st) != 0) {
		error_ = options_.device + ": " + std::strerror(errno);
		log::info("bluetooth", "no rfkill events ({}): adapter states come from BlueZ alone", error_);
		return;
	}
	if (S_ISSOCK(st.st_mode)) {
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		if (options_.device.size() >= sizeof addr.sun_path) {
			error_ = options_.device + ": path too long";
			return;
		}
		std::memcpy(addr.sun_path, options_.device.c_str(), options_.device.size());
		int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		// A local socket connects at once or not at all.
		if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
			error_ = options_.device + ": " + std::strerror(errno);
			if (fd >= 0) ::close(fd);
			log::warning("bluetooth", "cannot connect to the rfkill socket {}", error_);
			return;
		}
		fd_ = fd;
		socket_ = true;
	} else {
		fd_ = ::open(options_.device.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd_ < 0) {
			error_ = options_.device + ": " + std::strerror(errno);
			log::info("bluetooth", "no rfkill events ({}): adapter states come from BlueZ alone", error_);
			return;
		}
	}
	error_.clear();
	io_ = loop_.addIo(fd_, EPOLLIN, [this](uint32_t) { readable(); }, "rfkill");
}

void RfkillWatch::close(const std::string& why) {
	io_.reset();
	if (fd_ >= 0) ::close(fd_);
	fd_ = -1;
	pending_.clear();
	error_ = why;
	log::warning("bluetooth", "rfkill events lost: {}", why);
	table_.clear();
	if (changed_) changed_();
}

std::string RfkillWatch::nameOf(uint32_t idx) const {
	std::ifstream f(options_.sysfs + "/rfkill" + std::to_string(idx) + "/name");
	std::string name;
	if (f) std::getline(f, name);
	return bounded(std::move(name), 64);
}

void RfkillWatch::readable() {
	bool changed = false;
	for (;;) {
		uint8_t buf[64 * kRfkillEventSize];
		ssize_t n = ::read(fd_, buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR) continue;
			if (errno == EAGAIN) break;
			close(std::strerror(errno));
			return;
		}
		if (n == 0) {
			close("the rfkill device was closed");
			return;
		}
		pending_.insert(pending_.end(), buf, buf + n);
		size_t whole = pending_.size() - pending_.size() % kRfkillEventSize;
		for (size_t at = 0; at < whole; at += kRfkillEventSize) {
			auto event = parseRfkillEvent(std::span<const uint8_t, kRfkillEventSize>(pending_.data() + at, kRfkillEventSize));
			// The name is the kernel's and never changes: read once, when the switch appears.
			std::string name;
			if (event.op != kRfkillOpDel && event.type == kRfkillTypeBluetooth && !table_.knows(event.idx))
				name = nameOf(event.idx);
			if (table_.apply(event, name)) {
				changed = true;
				log::debug("bluetooth", "rfkill {} ({}): soft {} hard {}", event.idx, name, event.soft, event.hard);
			}
		}
		// The real device hands out one record per read; a socket may end mid-record.
		pending_.erase(pending_.begin(), pending_.begin() + std::ptrdiff_t(whole));
	}
	if (changed && changed_) changed_();
}

int RfkillWatch::unblock(uint32_t idx) {
	auto record = rfkillChange(idx, false);
	if (socket_) {
		if (fd_ < 0) return ENOTCONN;
		ssize_t n = ::send(fd_, record.data(), record.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == ssize_t(record.size())) return 0;
		return n < 0 ? errno : EIO;
	}
	// A descriptor of its own: the one that reads is read-only, and writing needs the right the
	// reading does not (the uaccess ACL grants both to the seat's user).
	int fd = ::open(options_.device.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) return errno;
	ssize_t n = ::write(fd, record.data(), record.size());
	int err = n == ssize_t(record.size()) ? 0 : (n < 0 ? errno : EIO);
	::close(fd);
	return err;
}

} // namespace qsd::bluetooth
