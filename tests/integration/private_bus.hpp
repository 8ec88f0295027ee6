#pragma once
// A private dbus-daemon of type system for C++ integration tests, started per test, with a
// helper that runs the daemon's loop until a condition holds.

#include "event_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

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
		auto out = run("dbus-daemon --config-file=" + dir_ + "/bus.conf --fork --print-address=1 --print-pid=1");
		auto nl = out.find('\n');
		ASSERT_NE(nl, std::string::npos) << "dbus-daemon did not start";
		address_ = out.substr(0, nl);
		busPid_ = std::atoi(out.substr(nl + 1).c_str());
		setenv("DBUS_SYSTEM_BUS_ADDRESS", address_.c_str(), 1);
	}

	void TearDown() override {
		if (busPid_ > 0) kill(busPid_, SIGTERM);
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
