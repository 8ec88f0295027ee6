#include "files.hpp"

#include "log.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qsd {

namespace {
struct Fd {
	int fd;
	~Fd() {
		if (fd >= 0) ::close(fd);
	}
};
} // namespace

std::optional<std::string> readFile(const std::string& path, size_t limit) {
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, for ever.
	// O_NOCTTY: a terminal named by a peer must not become our controlling terminal.
	Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
	if (f.fd < 0) return std::nullopt;
	struct stat st{};
	// Only regular files: a FIFO, socket or device reads forever or blocks. The size is checked
	// first, and reading stops at the limit anyway (the file may grow, and /proc files say 0).
	if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode) || size_t(st.st_size) > limit) return std::nullopt;
	std::string out;
	out.reserve(size_t(st.st_size));
	char buf[8192];
	for (;;) {
		ssize_t n = ::read(f.fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR) continue;
		if (n < 0 || out.size() + size_t(n) > limit) return std::nullopt;
		if (n == 0) break;
		out.append(buf, size_t(n));
	}
	return out;
}

bool writeFileAtomically(const std::string& path, std::string_view data, std::string* error) {
	auto tmp = path + ".tmp";
	auto fail = [&](int fd) {
		int e = errno;
		if (fd >= 0) ::close(fd);
		::unlink(tmp.c_str());
		if (error) *error = std::strerror(e);
		return false;
	};
	int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) return fail(-1);
	for (size_t off = 0; off < data.size();) {
		ssize_t n = ::write(fd, data.data() + off, data.size() - off);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) return fail(fd);
		off += size_t(n);
	}
	if (::close(fd) != 0) return fail(-1);
	if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(-1);
	return true;
}

std::string fileUrl(std::string_view path) {
	static const char* hex = "0123456789ABCDEF";
	std::string out = "file://";
	for (unsigned char c: path) {
		if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == ',' || c == '=' ||
		    c == '@' || c == ':') {
			out += char(c);
		} else {
			out += '%';
			out += hex[c >> 4];
			out += hex[c & 15];
		}
	}
	return out;
}

bool writeKeptFile(const std::string& path, std::string_view data, bool& failed, const char* area,
                   const char* consequence) {
	std::string error;
	if (writeFileAtomically(path, data, &error)) {
		failed = false;
		return true;
	}
	if (!std::exchange(failed, true)) log::warning(area, "cannot write {}: {} ({})", path, error, consequence);
	return false;
}

} // namespace qsd
