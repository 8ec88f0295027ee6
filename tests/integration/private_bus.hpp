#pragma once
// A private dbus-daemon of type system for C++ integration tests, started per test, with a
// helper that runs the daemon's loop until a condition holds.

#include "event_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace qsd::testing {

inline std::string run(const std::string& cmd) {
	std::string out;
	FILE* p = popen(cmd.c_str(), "r");
	if (!p) return out;
	char buf[512];
	while (fgets(buf, sizeof buf, p)) out += buf;
	pclose(p);
	return out;
}

inline constexpr int kDevNull = -2;

// Starts `argv` as a child that gets SIGTERM when this test program dies, however it dies (a
// ctest timeout kills the program, not what it started), with `outFd` as its stdout (-1: the
// program's own; kDevNull) and every other descriptor above stderr closed; returns its pid.
inline pid_t spawnChild(const std::vector<std::string>& argv, int outFd = -1) {
	std::vector<char*> args;   // made before fork: the child only calls what is safe after it
	for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
	args.push_back(nullptr);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid != 0) return pid;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent) _exit(127);   // the test program died before prctl
	if (outFd == kDevNull) outFd = open("/dev/null", O_WRONLY);
	if (outFd >= 0) dup2(outFd, STDOUT_FILENO);
	for (int fd = STDERR_FILENO + 1; fd < 1024; ++fd) close(fd);
	execvp(args[0], args.data());
	_exit(127);
}

inline void stopChild(pid_t& pid) {
	if (pid <= 0) return;
	kill(pid, SIGTERM);
	waitpid(pid, nullptr, 0);
	pid = -1;
}

class PrivateSystemBus: public ::testing::Test {
protected:
	void SetUp() override {
		char tmpl[] = "/tmp/qsd-dbus-test.XXXXXX";
		dir_ = mkdtemp(tmpl);
		std::ofstream(dir_ + "/bus.conf")
		    << "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
		       " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
		       "<busconfig>\n  <type>system</type>\n  <keep_umask/>\n  <listen>unix:path="
		    << dir_
		    << "/bus</listen>\n  <auth>EXTERNAL</auth>\n  <policy context=\"default\">\n    <allow user=\"*\"/>\n"
		       "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n    <allow eavesdrop=\"true\"/>\n"
		       "    <allow own=\"*\"/>\n  </policy>\n</busconfig>\n";
		// Not --fork: a daemon forked away would outlive a test program that is killed.
		int fds[2];
		ASSERT_EQ(pipe(fds), 0);
		busPid_ = spawnChild({"dbus-daemon", "--config-file=" + dir_ + "/bus.conf", "--nofork", "--print-address=1"}, fds[1]);
		close(fds[1]);
		FILE* out = fdopen(fds[0], "r");
		char line[512] = {};
		bool got = out && fgets(line, sizeof line, out);
		if (out) fclose(out);
		ASSERT_TRUE(got) << "dbus-daemon did not start";
		address_ = line;
		while (!address_.empty() && address_.back() == '\n') address_.pop_back();
		setenv("DBUS_SYSTEM_BUS_ADDRESS", address_.c_str(), 1);
	}

	void TearDown() override {
		stopChild(busPid_);
		std::system(("rm -rf " + dir_).c_str());
	}

	// Runs the loop until done() or the timeout.
	static bool spin(EventLoop& loop, const std::function<bool()>& done,
	                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
		auto deadline = std::chrono::steady_clock::now() + timeout;
		while (!done()) {
			if (std::chrono::steady_clock::now() > deadline) return false;
			sd_event_run(loop.raw(), 50'000);
		}
		return true;
	}

	std::string dir_, address_;
	pid_t busPid_ = -1;
};

} // namespace qsd::testing
