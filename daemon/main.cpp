// qsd: the desktop system-state daemon.

#include "daemon.hpp"
#include "log.hpp"

#include <qsd/protocol/domains.hpp>

#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/resource.h>

namespace {

void usage(FILE* out) {
	std::fprintf(out,
	             "Usage: qsd [OPTIONS]\n"
	             "\n"
	             "Serves the desktop's system state as one JSON tree over a Unix socket (JSON-RPC 2.0).\n"
	             "\n"
	             "Options:\n"
	             "  -s, --socket PATH     listen on PATH (default: $QSD_SOCKET, else $XDG_RUNTIME_DIR/qsd/qsd.sock;\n"
	             "                        a socket passed by systemd socket activation wins)\n"
	             "      --backends LIST   start only these backends (comma-separated ids; empty: none)\n"
	             "      --debug-api       enable the debug.* methods (write under /debug; for tests and benchmarks)\n"
	             "      --max-clients N   connections accepted at once (default 1024)\n"
	             "  -v, --verbose         debug logging (also QSD_DEBUG=1)\n"
	             "      --version         print the version and exit\n"
	             "  -h, --help            print this help and exit\n");
}

std::vector<std::string> splitList(const std::string& s) {
	std::vector<std::string> out;
	size_t start = 0;
	while (start <= s.size()) {
		auto comma = s.find(',', start);
		auto item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
		if (!item.empty()) out.push_back(item);
		if (comma == std::string::npos) break;
		start = comma + 1;
	}
	return out;
}

// Many clients each hold an fd; the soft limit of 1024 would be reached before our own limit.
void raiseFdLimit() {
	rlimit rl{};
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

} // namespace

int main(int argc, char** argv) {
	qsd::log::init();
	qsd::DaemonOptions options;
	std::string socketPath;
	for (int i = 1; i < argc; ++i) {
		std::string arg = argv[i];
		auto value = [&](const char* name) -> std::string {
			auto eq = arg.find('=');
			if (eq != std::string::npos) return arg.substr(eq + 1);
			if (i + 1 >= argc) {
				std::fprintf(stderr, "qsd: %s needs a value\n", name);
				std::exit(2);
			}
			return argv[++i];
		};
		auto is = [&](const char* name) { return arg == name || arg.rfind(std::string(name) + "=", 0) == 0; };
		if (arg == "-h" || arg == "--help") {
			usage(stdout);
			return 0;
		} else if (arg == "--version") {
			std::printf("qsd %s (protocol %d)\n", QSD_VERSION, qsd::rpc::PROTOCOL_VERSION);
			return 0;
		} else if (arg == "-v" || arg == "--verbose") {
			qsd::log::setVerbose(true);
		} else if (arg == "--debug-api") {
			options.debugApi = true;
		} else if (arg == "-s" || is("--socket")) {
			socketPath = value("--socket");
		} else if (is("--backends")) {
			options.backends = splitList(value("--backends"));
			// A typo would silently leave a backend out: an id that names no backend at all is a
			// usage error. One this build leaves out (WITH_NM=OFF...) is only logged (Daemon).
			for (const auto& id: *options.backends) {
				bool known = std::any_of(qsd::kDomainBackends.begin(), qsd::kDomainBackends.end(),
				                         [&](const qsd::DomainBackend& d) { return d.backend == id; });
				if (!known) {
					std::string ids;
					for (const auto& d: qsd::kDomainBackends) ids += (ids.empty() ? "" : ", ") + std::string(d.backend);
					std::fprintf(stderr, "qsd: --backends: no backend is called \"%s\" (the backends: %s)\n", id.c_str(),
					             ids.c_str());
					return 2;
				}
			}
		} else if (is("--max-clients")) {
			auto text = value("--max-clients");
			char* end = nullptr;
			errno = 0;
			unsigned long n = std::strtoul(text.c_str(), &end, 10);
			// 0 would refuse every connection; strtoul reads "abc" as 0 and "-1" as ULONG_MAX.
			if (text.empty() || *end != '\0' || errno != 0 || n < 1 || n > 1'000'000 || text[0] == '-') {
				std::fprintf(stderr, "qsd: --max-clients needs a number from 1 to 1000000, not \"%s\"\n", text.c_str());
				return 2;
			}
			options.server.maxClients = n;
		} else {
			std::fprintf(stderr, "qsd: unknown option %s\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}

	int n = sd_listen_fds(1);
	if (n > 1) {
		qsd::log::error("qsd", "expected one socket from systemd, got {}", n);
		return 1;
	}
	if (n == 1) {
		options.server.activatedFd = SD_LISTEN_FDS_START;
	} else {
		if (socketPath.empty()) {
			if (const char* env = std::getenv("QSD_SOCKET"); env && *env) socketPath = env;
		}
		if (socketPath.empty()) {
			const char* rt = std::getenv("XDG_RUNTIME_DIR");
			if (!rt || !*rt) {
				qsd::log::error("qsd", "XDG_RUNTIME_DIR is not set; pass --socket PATH");
				return 1;
			}
			socketPath = std::string(rt) + "/qsd/qsd.sock";
		}
		options.server.socketPath = socketPath;
	}
	raiseFdLimit();

	try {
		qsd::Daemon daemon(std::move(options));
		return daemon.run();
	} catch (const std::exception& e) {
		qsd::log::error("qsd", "{}", e.what());
		return 1;
	}
}
