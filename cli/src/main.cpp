// qsctl: the command-line client of qsd. One socket round trip per command (watch: one
// subscription), blocking I/O, no polling; exit codes are part of the interface (see usage()).

#include "connection.hpp"
#include "hold.hpp"
#include "jqfilter.hpp"
#include "params.hpp"
#include "render.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <memory>
#include <poll.h>
#include <string>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using qsctl::Connection;
using qsctl::json;
using qsctl::Style;

enum Exit : int { Ok = 0, RpcFailed = 1, Usage = 2, NoConnection = 3, OutputFailed = 4 };

const char* const USAGE =
    "Usage: qsctl [OPTIONS] COMMAND [ARGS..]\n"
    "\n"
    "Reads and watches the desktop state served by qsd, and calls its methods.\n"
    "\n"
    "Commands:\n"
    "  get [PATH]                 print the value at PATH (default: the whole tree)\n"
    "  watch [PATH..]             print the current value, then one line per change\n"
    "  call METHOD [KEY=VALUE..]  call a method and print its result\n"
    "  describe [METHOD]          list the methods, or show one method's params, result, errors\n"
    "  status                     show the daemon's version, uptime, clients and backends\n"
    "\n"
    "PATH is a JSON Pointer such as /network/wifiEnabled; the leading '/' may be left out,\n"
    "and \"\" or \"/\" is the whole tree. watch with several paths prints {PATH: value} objects.\n"
    "\n"
    "Arguments of call:\n"
    "  KEY=VALUE    VALUE as JSON when it parses as JSON (true, 0.5, [1,2], \"x\"), else a string\n"
    "  KEY:=JSON    VALUE must be valid JSON\n"
    "  KEY==TEXT    VALUE is always the string TEXT (e.g. a network named 1234)\n"
    "\n"
    "Options:\n"
    "  -s, --socket PATH   qsd's socket (default: $QSD_SOCKET, else $XDG_RUNTIME_DIR/qsd/qsd.sock)\n"
    "  -r, --raw           strings without quotes, objects and arrays on one line (get, watch, call)\n"
    "  -c, --compact       JSON on one line (get, call)\n"
    "  -k, --keys          get: the names of an object's members, one per line\n"
    "  -j, --json          JSON instead of text for people (describe, status)\n"
    "  -p, --patch         watch: print the raw change batches instead of values\n"
    "  -R, --reconnect     watch: wait for qsd to start or restart instead of exiting\n"
    "  -n, --count N       watch: exit after printing N lines\n"
    "      --throttle MS   watch: at most one update per MS milliseconds\n"
    "      --jq FILTER     watch: print what the jq FILTER makes of each new value\n"
    "      --restart-grace MS\n"
    "                      watch --reconnect: after connecting, keep showing the last value of\n"
    "                      a path while its backend starts, for at most MS ms (default 3000)\n"
    "      --outlive-parent\n"
    "                      watch: keep running when the process that started qsctl exits\n"
    "      --params JSON   call: params as a JSON object or array ('-' reads stdin)\n"
    "  -t, --timeout SEC   wait at most SEC seconds for an answer (default 30)\n"
    "  -h, --help          print this help and exit\n"
    "      --version       print the version and exit\n"
    "\n"
    "Exit status: 0 success; 1 qsd answered with an error (printed on stderr);\n"
    "2 usage error; 3 cannot connect to qsd, connection lost, or no answer in time.\n";

[[noreturn]] void die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void die(int code, const char* fmt, ...) {
	std::fflush(stdout);
	std::fputs("qsctl: ", stderr);
	va_list ap;
	va_start(ap, fmt);
	std::vfprintf(stderr, fmt, ap);
	va_end(ap);
	std::fputc('\n', stderr);
	if (code == Usage) std::fputs("Try 'qsctl --help'.\n", stderr);
	std::exit(code);
}

// Writes and flushes at once: watch feeds pipes (bars, jq) that must see each line now.
void emit(const std::string& text) {
	if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
		// A closed pipe ends us quietly, like any filter (SIGPIPE when not ignored). Anything else
		// (a full disk, a closed standard output) is said, with a status of its own: it was 3,
		// which a script reads as "qsd is down".
		if (errno == EPIPE) std::exit(Ok);
		die(OutputFailed, "cannot write the output: %s", std::strerror(errno));
	}
}

struct Options {
	std::string socket;
	bool raw = false, compact = false, json = false, patch = false, reconnect = false, keys = false;
	bool outliveParent = false;
	long long count = 0;   // 0: unlimited
	long long throttleMs = -1;
	bool haveJq = false;
	std::string jq;
	long long restartGraceMs = 3000;   // the QML client's restartGraceMs
	bool haveParams = false;
	std::string params;
	int timeoutMs = 30000;
	std::string verb;
	std::vector<std::string> args;
	std::vector<std::string> given;   // long names of the options used, for per-verb checks
};

Options parseArgs(int argc, char** argv) {
	Options o;
	bool endOfOptions = false;
	for (int i = 1; i < argc; ++i) {
		std::string arg = argv[i];
		if (endOfOptions || arg.size() < 2 || arg[0] != '-') {
			(o.verb.empty() ? o.verb : o.args.emplace_back()) = arg;
			continue;
		}
		if (arg == "--") {
			endOfOptions = true;
			continue;
		}
		std::string name = arg, inlineValue;
		bool hasInline = false;
		if (arg.rfind("--", 0) == 0) {
			if (auto eq = arg.find('='); eq != std::string::npos) {
				name = arg.substr(0, eq);
				inlineValue = arg.substr(eq + 1);
				hasInline = true;
			}
		}
		auto is = [&](const char* shortName, const char* longName) {
			return (shortName && name == shortName) || name == longName;
		};
		auto value = [&]() -> std::string {
			if (hasInline) return inlineValue;
			if (i + 1 >= argc) die(Usage, "option %s needs a value", name.c_str());
			return argv[++i];
		};
		auto flag = [&](bool& target) {
			if (hasInline) die(Usage, "option %s takes no value", name.c_str());
			target = true;
		};
		if (is("-h", "--help")) {
			std::fputs(USAGE, stdout);
			std::exit(Ok);
		} else if (is(nullptr, "--version")) {
			std::printf("qsctl %s (protocol %d)\n", QSD_VERSION, qsd::rpc::PROTOCOL_VERSION);
			std::exit(Ok);
		} else if (is("-s", "--socket")) {
			o.socket = value();
			if (o.socket.empty()) die(Usage, "--socket needs a path");
		} else if (is("-r", "--raw")) {
			flag(o.raw);
		} else if (is("-c", "--compact")) {
			flag(o.compact);
		} else if (is("-k", "--keys")) {
			flag(o.keys);
		} else if (is("-j", "--json")) {
			flag(o.json);
		} else if (is("-p", "--patch")) {
			flag(o.patch);
		} else if (is("-R", "--reconnect")) {
			flag(o.reconnect);
		} else if (is("-n", "--count")) {
			auto v = qsctl::parseCount(value());
			if (!v || *v == 0) die(Usage, "--count needs a positive integer");
			o.count = *v;
		} else if (is(nullptr, "--throttle")) {
			auto v = qsctl::parseCount(value());
			if (!v || *v > 60000) die(Usage, "--throttle needs milliseconds from 0 to 60000");
			o.throttleMs = *v;
		} else if (is(nullptr, "--jq")) {
			o.jq = value();
			o.haveJq = true;
		} else if (is(nullptr, "--restart-grace")) {
			auto v = qsctl::parseCount(value());
			if (!v || *v > 60000) die(Usage, "--restart-grace needs milliseconds from 0 to 60000");
			o.restartGraceMs = *v;
		} else if (is(nullptr, "--outlive-parent")) {
			flag(o.outliveParent);
		} else if (is(nullptr, "--params")) {
			o.params = value();
			o.haveParams = true;
		} else if (is("-t", "--timeout")) {
			auto v = value();
			char* end = nullptr;
			double s = std::strtod(v.c_str(), &end);
			if (v.empty() || *end || !(s > 0) || s > 86400) die(Usage, "--timeout needs seconds (> 0)");
			o.timeoutMs = std::max(1, int(s * 1000));
		} else {
			die(Usage, "unknown option %s", arg.c_str());
		}
		// Stored by long name, e.g. "--raw", for the per-command checks.
		static const char* const longNames[][2] = {{"-s", "--socket"}, {"-r", "--raw"}, {"-c", "--compact"}, {"-k", "--keys"},
		                                           {"-j", "--json"},   {"-p", "--patch"}, {"-R", "--reconnect"},
		                                           {"-n", "--count"},  {"-t", "--timeout"}};
		std::string longName = name;
		for (const auto& pair: longNames)
			if (name == pair[0]) longName = pair[1];
		o.given.push_back(longName);
	}
	return o;
}

// Options that only make sense for some commands are refused elsewhere, so a typo'd script
// fails loudly instead of silently ignoring what it asked for.
void checkOptions(const Options& o, std::initializer_list<const char*> allowed) {
	static const char* const global[] = {"--socket", "--timeout"};
	for (const auto& g: o.given) {
		bool ok = std::find_if(std::begin(global), std::end(global), [&](const char* n) { return g == n; }) != std::end(global) ||
		          std::find_if(allowed.begin(), allowed.end(), [&](const char* n) { return g == n; }) != allowed.end();
		if (!ok) die(Usage, "option %s does not apply to '%s'", g.c_str(), o.verb.c_str());
	}
	if (o.raw && o.compact) die(Usage, "--raw and --compact cannot be combined");
	if (o.raw && o.patch) die(Usage, "--raw and --patch cannot be combined");
}

Style style(const Options& o) { return o.raw ? Style::Raw : o.compact ? Style::Compact : Style::Pretty; }

std::string socketPathOrDie(const Options& o) {
	auto path = qsctl::resolveSocketPath(o.socket);
	if (path.empty()) die(NoConnection, "cannot find qsd's socket: XDG_RUNTIME_DIR is not set (use --socket or QSD_SOCKET)");
	return path;
}

void connectOrDie(Connection& conn, const Options& o) {
	auto path = socketPathOrDie(o);
	conn.setTimeout(o.timeoutMs);
	if (!conn.open(path)) die(NoConnection, "cannot connect to %s: %s (is qsd running?)", path.c_str(), conn.error().c_str());
}

// One request, one answer: the result, or an exit with the right code.
json roundTrip(Connection& conn, const Options& o, const std::string& method, json params) {
	auto id = conn.request(method, std::move(params));
	json response;
	if (id < 0) {
		// qsd may have refused the connection before it could take the request (its limit):
		// its answer, id null, is still to be read.
		std::string sendError = conn.error();
		if (conn.response(-1, response, 200) != Connection::Status::Message)
			die(NoConnection, "cannot send to qsd: %s", sendError.c_str());
	} else switch (conn.response(id, response, o.timeoutMs)) {
	case Connection::Status::Message: break;
	case Connection::Status::Timeout: die(NoConnection, "no answer from qsd within %g s", o.timeoutMs / 1000.0);
	case Connection::Status::Eof:
	case Connection::Status::Error:
	case Connection::Status::Hangup: die(NoConnection, "connection to qsd lost: %s", conn.error().c_str());
	}
	if (auto e = response.find("error"); e != response.end())
		die(RpcFailed, "%s: %s", method.c_str(), qsctl::describeError(*e).c_str());
	return response.value("result", json());
}

int cmdGet(const Options& o) {
	checkOptions(o, {"--raw", "--compact", "--keys"});
	if (o.args.size() > 1) die(Usage, "get takes at most one PATH");
	if (o.keys && (o.raw || o.compact)) die(Usage, "--keys cannot be combined with --raw or --compact");
	auto path = qsctl::normalizePath(o.args.empty() ? "" : o.args[0]);
	Connection conn;
	connectOrDie(conn, o);
	auto result = roundTrip(conn, o, "tree.get", {{"path", path}});
	const auto& value = result.value("value", json());
	if (!o.keys) {
		emit(qsctl::formatValue(value, style(o)));
		return Ok;
	}
	// Listing a collection ("qsctl get -k /network/devices") and shell completion.
	std::string out;
	if (value.is_object())
		for (const auto& [key, member]: value.items()) out += key + '\n';
	else if (value.is_array())
		for (size_t i = 0; i < value.size(); ++i) out += std::to_string(i) + '\n';
	emit(out);
	return Ok;
}

int cmdCall(const Options& o) {
	checkOptions(o, {"--raw", "--compact", "--params"});
	if (o.args.empty()) die(Usage, "call needs a METHOD");
	std::string paramsText = o.params;
	if (o.haveParams && paramsText == "-") {
		paramsText.clear();
		char buf[4096];
		size_t n;
		while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) paramsText.append(buf, n);
	}
	std::string error;
	auto params = qsctl::buildParams(paramsText, o.haveParams, {o.args.begin() + 1, o.args.end()}, error);
	if (!params) die(Usage, "%s", error.c_str());
	Connection conn;
	connectOrDie(conn, o);
	auto result = roundTrip(conn, o, o.args[0], std::move(*params));
	emit(qsctl::formatValue(result, style(o)));
	return Ok;
}

int cmdDescribe(const Options& o) {
	checkOptions(o, {"--json"});
	if (o.args.size() > 1) die(Usage, "describe takes at most one METHOD");
	Connection conn;
	connectOrDie(conn, o);
	auto doc = roundTrip(conn, o, "rpc.discover", nullptr);
	if (o.args.empty()) {
		emit(o.json ? qsctl::formatValue(doc, Style::Pretty) : qsctl::describeAll(doc));
		return Ok;
	}
	const auto& name = o.args[0];
	if (const json* m = qsctl::findMethod(doc, name)) {
		emit(o.json ? qsctl::formatValue(*m, Style::Pretty) : *qsctl::describeMethod(doc, name));
		return Ok;
	}
	if (auto event = qsctl::describeEvent(doc, name)) {
		if (o.json) {
			for (const auto& e: doc["x-events"])
				if (e.value("name", "") == name) emit(qsctl::formatValue(e, Style::Pretty));
		} else {
			emit(*event);
		}
		return Ok;
	}
	// "network" or "network." lists that domain's methods.
	auto prefix = name.empty() || name.back() == '.' ? name : name + ".";
	auto listing = qsctl::describePrefix(doc, prefix);
	if (listing.empty()) die(RpcFailed, "no method '%s' (qsctl describe lists them)", name.c_str());
	if (o.json) {
		json methods = json::array();
		for (const auto& m: doc["methods"])
			if (m.value("name", "").rfind(prefix, 0) == 0) methods.push_back(m);
		emit(qsctl::formatValue(methods, Style::Pretty));
	} else {
		emit(listing);
	}
	return Ok;
}

int cmdStatus(const Options& o) {
	checkOptions(o, {"--json"});
	if (!o.args.empty()) die(Usage, "status takes no arguments");
	Connection conn;
	connectOrDie(conn, o);
	auto result = roundTrip(conn, o, "tree.get", {{"path", "/daemon"}});
	const auto& daemon = result.value("value", json::object());
	if (o.json) {
		emit(qsctl::formatValue(daemon, Style::Pretty));
	} else {
		timespec now{};
		clock_gettime(CLOCK_REALTIME, &now);
		emit(qsctl::renderStatus(daemon, result.value("revision", json()), double(now.tv_sec) + now.tv_nsec / 1e9));
	}
	return Ok;
}

// Wakes a reconnecting watch as soon as something happens in the socket's directory (qsd
// binding its socket), with a timeout as the backstop for what inotify cannot see (a stale
// socket file, a directory that does not exist yet). Armed before each connect attempt, so a
// socket created between a failed attempt and the wait is never missed.
class SocketWatch {
public:
	explicit SocketWatch(const std::string& socketPath) {
		auto slash = socketPath.rfind('/');
		std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : socketPath.substr(0, slash);
		fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		if (fd_ >= 0 && inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ATTRIB) < 0) {
			::close(fd_);
			fd_ = -1;
		}
	}
	~SocketWatch() {
		if (fd_ >= 0) ::close(fd_);
	}
	SocketWatch(const SocketWatch&) = delete;
	SocketWatch& operator=(const SocketWatch&) = delete;

	enum class Woken { Directory, Timeout, Hangup };
	// Waits for a change in the directory, the timeout, or the hang-up of `hangupFd` (-1: none).
	Woken wait(int timeoutMs, int hangupFd) {
		pollfd p[2] = {{fd_, POLLIN, 0}, {hangupFd, 0, 0}};
		if (::poll(p, 2, timeoutMs) <= 0) return Woken::Timeout;
		if (p[1].revents & (POLLERR | POLLHUP)) return Woken::Hangup;
		if (!p[0].revents) return Woken::Timeout;
		char buf[4096];
		while (::read(fd_, buf, sizeof buf) > 0) {
		}
		return Woken::Directory;
	}

private:
	int fd_ = -1;
};

// The process that started qsctl, read first thing in main(): if another one is the parent by
// the time the parent-death signal is armed, the first one died in between.
pid_t gParent = 0;
char** gArgv = nullptr;
// watch --jq's filter. A watch ends through std::exit, which skips the destructors of locals but
// not those of statics: jq's state is torn down then (and leak checkers, which cannot follow
// jq's pointer to the end of its stack, see nothing left behind).
std::unique_ptr<qsctl::JqFilter> gFilter;

#ifdef QSCTL_JQ_COMPANION
// qsctl is linked without libjq (loading it would slow every command down): qsctl-jq, this
// program linked with it, takes the watch over in this same process. QSCTL_JQ_COMPANION is its
// installed place relative to qsctl's ("../libexec/qsd/qsctl-jq").
[[noreturn]] void execJqCompanion() {
	std::vector<std::string> candidates;
	char self[PATH_MAX];
	if (auto n = ::readlink("/proc/self/exe", self, sizeof self - 1); n > 0) {
		std::string dir(self, size_t(n));
		dir = dir.substr(0, dir.rfind('/') + 1);
		candidates.push_back(dir + "qsctl-jq");
		candidates.push_back(dir + QSCTL_JQ_COMPANION);
	}
	for (const auto& c: candidates) ::execv(c.c_str(), gArgv);
	die(Usage, "--jq: cannot run qsctl-jq (next to qsctl, or at %s from it): %s", QSCTL_JQ_COMPANION, std::strerror(errno));
}
#endif

// A watch ends with the process that started it. Bars run a module as `sh -c COMMAND` and,
// when they restart, end that shell at most; a watch left behind would reconnect for ever.
void exitWithParent() {
	// SIGTERM's default action ends us. An ignored or blocked SIGTERM is inherited through exec:
	// restore it.
	struct sigaction current{};
	if (sigaction(SIGTERM, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) std::signal(SIGTERM, SIG_DFL);
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &term, nullptr);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) return;
	// The signal is armed for the parent we have now: had the first one died before this, we
	// would belong to a reaper that never sends it.
	if (getppid() != gParent) std::exit(Ok);
}

// Standard output when it is a pipe or a socket: its reader going away (a bar that was
// restarted, `| head -1`) is noticed while we wait, not at the next write. -1 otherwise.
int outputHangupFd() {
	struct stat st{};
	if (::fstat(STDOUT_FILENO, &st) != 0) return -1;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ? STDOUT_FILENO : -1;
}

int64_t monotonicMs() {
	timespec t{};
	clock_gettime(CLOCK_MONOTONIC, &t);
	return int64_t(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

double wallSeconds() {
	timespec t{};
	clock_gettime(CLOCK_REALTIME, &t);
	return double(t.tv_sec) + t.tv_nsec / 1e9;
}

int cmdWatch(const Options& o) {
	checkOptions(o, {"--raw", "--patch", "--reconnect", "--count", "--throttle", "--jq", "--restart-grace", "--outlive-parent"});
	if (o.haveJq && o.patch) die(Usage, "--jq and --patch cannot be combined");
	bool graceGiven = std::find(o.given.begin(), o.given.end(), "--restart-grace") != o.given.end();
	if (graceGiven && (!o.reconnect || o.patch)) die(Usage, "--restart-grace applies to watch --reconnect without --patch");
	std::vector<std::string> paths;
	for (const auto& a: o.args) paths.push_back(qsctl::normalizePath(a));
	if (paths.empty()) paths.emplace_back();
	auto& filter = gFilter;
#ifdef QSCTL_JQ_COMPANION
	if (o.haveJq && !qsctl::JqFilter::available()) {
		// Armed now, the parent-death signal carries over into the companion.
		if (!o.outliveParent) exitWithParent();
		execJqCompanion();
	}
#endif
	if (o.haveJq) {
		std::string error;
		filter = qsctl::JqFilter::compile(o.jq, error);
		if (!filter) die(Usage, "--jq: %s", error.c_str());
	}
	auto socketPath = socketPathOrDie(o);
	const Style lineStyle = o.raw ? Style::Raw : Style::Compact;
	if (!o.outliveParent) exitWithParent();
	const int hangupFd = outputHangupFd();

	Connection conn;
	conn.setTimeout(o.timeoutMs);
	conn.watchHangup(hangupFd);
	qsd::Mirror mirror;
	int64_t subscription = -1;
	long long printed = 0;
	// The restart hold reads the backends' states, subscribed together with the paths.
	const bool holding = o.reconnect && !o.patch && o.restartGraceMs > 0 && paths.size() < 256;
	std::vector<std::string> subscribed = paths;
	if (holding) subscribed.emplace_back("/daemon/backends");
	qsctl::RestartHold hold(int(o.restartGraceMs));
	auto backends = [&]() { return holding ? mirror.find("/daemon/backends") : nullptr; };
	std::optional<json> last;         // the value shown last: printed, or given to the filter
	std::optional<std::string> lastOutput;   // --jq: the text of the filter's last output

	auto print = [&](const std::string& text) {
		emit(text);
		if (o.count && ++printed >= o.count) std::exit(Ok);
	};
	auto line = [&](const json& value) { print(qsctl::formatValue(value, lineStyle)); };
	// What a path shows: the daemon's value, or while held the one shown before (none yet:
	// nothing is shown).
	auto shown = [&](const std::string& path) -> std::optional<json> {
		if (hold.held(path)) {
			if (!last) return std::nullopt;
			if (paths.size() == 1) return *last;
			auto it = last->find(path);
			return it == last->end() ? std::nullopt : std::optional<json>(*it);
		}
		const json* v = mirror.find(path);
		return v ? *v : json();
	};
	auto current = [&]() -> std::optional<json> {
		if (paths.size() == 1) return shown(paths[0]);
		json out = json::object();
		for (const auto& p: paths) {
			auto v = shown(p);
			if (!v) return std::nullopt;
			out[p] = std::move(*v);
		}
		return out;
	};
	// A new value: its line, or what the filter makes of it when that differs from the last.
	auto show = [&](const json& value) {
		if (!filter) {
			line(value);
			return;
		}
		auto result = filter->run(value, o.raw, o.count ? size_t(o.count - printed) : SIZE_MAX);
		// jq's errors are the filter's, not the watch's: said, and the watch goes on.
		for (const auto& e: result.errors) std::fprintf(stderr, "qsctl: %s\n", e.c_str());
		if (result.outputs.empty()) return;
		std::string text;
		for (const auto& out: result.outputs) text += out + '\n';
		if (lastOutput == text) return;
		lastOutput = text;
		for (const auto& out: result.outputs) print(out + '\n');
	};
	auto printIfChanged = [&] {
		auto value = current();
		if (!value || (last && *last == *value)) return;
		show(*value);
		last = std::move(*value);
	};

	// Subscribes on the open connection. False, with `why`, when the connection failed or qsd
	// refused it (its connection limit: with --reconnect, tried again later).
	std::string why;
	auto subscribe = [&]() -> bool {
		json params = {{"paths", subscribed}};
		if (o.throttleMs >= 0) params["throttleMs"] = o.throttleMs;
		auto id = conn.request("tree.subscribe", params);
		json response;
		// A request qsd could not take may still have its refusal to read (id null).
		auto sendError = conn.error();
		auto status = id < 0 ? conn.response(-1, response, 200) : conn.response(id, response, o.timeoutMs);
		if (id < 0 && status != Connection::Status::Message) {
			why = "cannot send to qsd: " + sendError;
			return false;
		}
		if (status == Connection::Status::Hangup) std::exit(Ok);
		if (status == Connection::Status::Timeout) {
			char text[64];
			std::snprintf(text, sizeof text, "no answer from qsd within %g s", o.timeoutMs / 1000.0);
			why = text;
			return false;
		}
		if (status != Connection::Status::Message) {
			why = conn.error();
			return false;
		}
		if (auto e = response.find("error"); e != response.end()) {
			// Answered with id null: the connection itself was refused.
			if (o.reconnect && response.value("id", json(0)).is_null()) {
				why = qsctl::describeError(*e);
				return false;
			}
			die(RpcFailed, "tree.subscribe: %s", qsctl::describeError(*e).c_str());
		}
		const auto& r = response["result"];
		subscription = r.value("subscription", int64_t(-1));
		mirror.reset(subscribed, r.value("snapshot", json::object()), r.value("revision", uint64_t(0)), r.value("epoch", ""));
		if (o.patch) {
			line({{"epoch", mirror.epoch()}, {"revision", mirror.revision()}, {"snapshot", r.value("snapshot", json::object())}});
			return true;
		}
		if (holding) hold.start(paths, backends(), wallSeconds(), monotonicMs());
		printIfChanged();
		return true;
	};

	int backoffMs = 50;
	bool announced = false;
	std::unique_ptr<SocketWatch> watch;
	for (;;) {
		if (!conn.isOpen()) {
			hold.clear();
			if (o.reconnect && !watch) watch = std::make_unique<SocketWatch>(socketPath);
			if (!conn.open(socketPath)) {
				if (!o.reconnect)
					die(NoConnection, "cannot connect to %s: %s (is qsd running?)", socketPath.c_str(), conn.error().c_str());
				if (!announced)
					std::fprintf(stderr, "qsctl: cannot connect to %s: %s; waiting for qsd\n", socketPath.c_str(), conn.error().c_str());
				announced = true;
				// The socket file appears at bind(), a moment before listen(): after a wake-up
				// retry soon, then back off again.
				switch (watch->wait(backoffMs, hangupFd)) {
				case SocketWatch::Woken::Hangup: std::exit(Ok);
				case SocketWatch::Woken::Directory: backoffMs = 10; break;
				case SocketWatch::Woken::Timeout: backoffMs = std::min(backoffMs * 2, 2000); break;
				}
				continue;
			}
			if (!subscribe()) {
				conn.close();
				if (!o.reconnect) die(NoConnection, "connection to qsd lost: %s", why.c_str());
				// Connected, then refused or dropped before the snapshot (qsd at its connection
				// limit): tried again after the same back-off, not at once, which spun both
				// processes and filled qsd's log.
				if (!announced) std::fprintf(stderr, "qsctl: qsd did not serve the watch: %s; trying again\n", why.c_str());
				announced = true;
				if (!watch) watch = std::make_unique<SocketWatch>(socketPath);
				if (watch->wait(backoffMs, hangupFd) == SocketWatch::Woken::Hangup) std::exit(Ok);
				backoffMs = std::min(backoffMs * 2, 2000);
				continue;
			}
			watch.reset();
			backoffMs = 50;
			announced = false;
			continue;
		}

		json msg;
		auto status = conn.next(msg, hold.timeoutMs(monotonicMs()));
		if (status == Connection::Status::Hangup) std::exit(Ok);
		if (status == Connection::Status::Timeout) {
			// A grace period is over.
			if (hold.update(backends(), monotonicMs())) printIfChanged();
			continue;
		}
		if (status != Connection::Status::Message) {
			conn.close();
			if (!o.reconnect) die(NoConnection, "connection to qsd lost: %s", conn.error().c_str());
			std::fprintf(stderr, "qsctl: connection to qsd lost; reconnecting\n");
			announced = true;
			continue;
		}
		if (!msg.is_object() || !msg.contains("method") || !msg["params"].is_object()) continue;
		const auto& method = msg["method"];
		const auto& params = msg["params"];
		if (params.value("subscription", int64_t(-2)) != subscription) continue;
		auto revision = params.value("revision", uint64_t(0));
		if (method == "tree.changed") {
			const auto& changes = params.value("changes", json::array());
			if (o.patch) {
				line({{"revision", revision}, {"changes", changes}});
				continue;
			}
			if (mirror.apply(revision, changes) == qsd::Mirror::Result::Gap) {
				// Never expected (the daemon resyncs rather than skip); start over cleanly.
				(void)conn.request("tree.unsubscribe", {{"subscription", subscription}});
				if (!subscribe()) conn.close();
				continue;
			}
			hold.update(backends(), monotonicMs());
			printIfChanged();
		} else if (method == "tree.resync") {
			const auto& snapshot = params.value("snapshot", json::object());
			if (o.patch) {
				line({{"revision", revision}, {"resync", true}, {"snapshot", snapshot}});
				continue;
			}
			mirror.reset(subscribed, snapshot, revision);
			hold.update(backends(), monotonicMs());
			printIfChanged();
		}
	}
}

} // namespace

int main(int argc, char** argv) {
	// A closed standard stream would be the next socket's number: the output went to qsd as
	// requests (a value holding a JSON-RPC request was run by it). Each is held by /dev/null,
	// read-only, so that a write to a closed stdout still fails (status 4), as it would have.
	for (int fd = 0; fd <= 2; ++fd)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int null = ::open("/dev/null", O_RDONLY);
			if (null >= 0 && null != fd) {
				::dup2(null, fd);
				::close(null);
			}
		}
	gParent = getppid();
	gArgv = argv;
	auto o = parseArgs(argc, argv);
	if (o.verb.empty()) die(Usage, "missing COMMAND (get, watch, call, describe, status)");
	if (o.verb == "help") {
		std::fputs(USAGE, stdout);
		return Ok;
	}
	if (o.verb == "get") return cmdGet(o);
	if (o.verb == "watch") return cmdWatch(o);
	if (o.verb == "call") return cmdCall(o);
	if (o.verb == "describe") return cmdDescribe(o);
	if (o.verb == "status") return cmdStatus(o);
	die(Usage, "unknown command '%s' (get, watch, call, describe, status)", o.verb.c_str());
}
