#include "files.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace qsd {

std::optional<std::string> readFile(const std::string& path, size_t limit) {
	int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0) return std::nullopt;
	std::string out;
	char buf[8192];
	for (;;) {
		ssize_t n = ::read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR) continue;
		if (n < 0 || out.size() + size_t(n) > limit) {
			::close(fd);
			return std::nullopt;
		}
		if (n == 0) break;
		out.append(buf, size_t(n));
	}
	::close(fd);
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

} // namespace qsd
