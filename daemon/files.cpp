#include "files.hpp"

#include <cerrno>
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

} // namespace qsd
