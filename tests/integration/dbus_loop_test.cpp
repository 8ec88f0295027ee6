// The sdbus-c++ adapter on the daemon's sd-event loop, against a real service on a private
// dbus-daemon: an async property read, a signal, and a NameWatcher seeing the service vanish
// and return. Everything runs on this one thread; nothing here starts one.

#include "dbus/bus.hpp"
#include "dbus/call_set.hpp"
#include "dbus/name_watcher.hpp"
#include "dbus/variant.hpp"
#include "event_loop.hpp"
#include "private_bus.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace qsd;
using namespace std::chrono_literals;

namespace {

const char* UPOWER = "org.freedesktop.UPower";
const char* DISPLAY = "/org/freedesktop/UPower/devices/DisplayDevice";

// A private system bus with python-dbusmock's UPower template on it.
class PrivateBus: public qsd::testing::PrivateSystemBus {
protected:
	void SetUp() override {
		PrivateSystemBus::SetUp();
		if (HasFatalFailure()) return;
		startMock();
	}

	void startMock() {
		mockPid_ = qsd::testing::spawnChild({"/usr/bin/python3", "-m", "dbusmock", "--system", "-t", "upower"}, qsd::testing::kDevNull);
		ASSERT_EQ(std::system(("gdbus wait --system --timeout 15 " + std::string(UPOWER)).c_str()), 0);
		mock("SetupDisplayDevice 2 2 50.0 25.0 50.0 1.0 3600 0 true battery-good-symbolic 1");
	}

	void stopMock() { qsd::testing::stopChild(mockPid_); }

	void mock(const std::string& call) {
		qsd::testing::run("gdbus call --system -d org.freedesktop.UPower -o /org/freedesktop/UPower -m org.freedesktop.DBus.Mock." + call);
	}

	void TearDown() override {
		stopMock();
		PrivateSystemBus::TearDown();
	}

	pid_t mockPid_ = -1;
};

} // namespace

TEST_F(PrivateBus, ReadsAPropertyAsynchronouslyAndReceivesItsChangeSignal) {
	EventLoop loop;
	BusConnection bus(loop, BusConnection::Kind::System);
	auto proxy = sdbus::createProxy(bus.connection(), UPOWER, DISPLAY);

	std::optional<double> read;
	AsyncCall call(proxy->callMethodAsync("Get")
	                   .onInterface("org.freedesktop.DBus.Properties")
	                   .withArguments(std::string("org.freedesktop.UPower.Device"), std::string("Percentage"))
	                   .uponReplyInvoke([&](const sdbus::Error* e, sdbus::Variant v) {
		                   if (!e) read = dbus::asDouble(v);
	                   }));
	ASSERT_TRUE(spin(loop, [&] { return read.has_value(); }));
	EXPECT_DOUBLE_EQ(*read, 50.0);

	std::optional<double> signalled;
	auto match = bus.connection().addMatch(
	    std::string("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='") + DISPLAY + "'",
	    [&](sdbus::Message& m) {
		    std::string iface;
		    std::map<std::string, sdbus::Variant> changed;
		    m >> iface >> changed;
		    if (auto it = changed.find("Percentage"); it != changed.end()) signalled = dbus::asDouble(it->second);
	    });
	// The mock is poked from another process, so the signal really crosses the bus.
	mock(std::string("SetDeviceProperties ") + DISPLAY + " \"{'Percentage': <12.5>}\"");
	ASSERT_TRUE(spin(loop, [&] { return signalled.has_value(); }));
	EXPECT_DOUBLE_EQ(*signalled, 12.5);
}

TEST_F(PrivateBus, CancelledCallsNeverReachTheirOwner) {
	EventLoop loop;
	BusConnection bus(loop, BusConnection::Kind::System);
	auto proxy = sdbus::createProxy(bus.connection(), UPOWER, DISPLAY);
	bool delivered = false;
	{
		AsyncCall call(proxy->callMethodAsync("Get")
		                   .onInterface("org.freedesktop.DBus.Properties")
		                   .withArguments(std::string("org.freedesktop.UPower.Device"), std::string("Percentage"))
		                   .uponReplyInvoke([&](const sdbus::Error*, sdbus::Variant) { delivered = true; }));
	}
	spin(loop, [] { return false; }, 300ms);
	EXPECT_FALSE(delivered);
}

TEST_F(PrivateBus, NameWatcherSeesTheServiceVanishAndReturn) {
	EventLoop loop;
	BusConnection bus(loop, BusConnection::Kind::System);
	int appeared = 0, vanished = 0;
	NameWatcher watcher(bus, UPOWER, [&](const std::string&) { ++appeared; }, [&] { ++vanished; });
	ASSERT_TRUE(spin(loop, [&] { return appeared == 1; }));
	EXPECT_TRUE(watcher.present());

	stopMock();
	ASSERT_TRUE(spin(loop, [&] { return vanished == 1; }));
	EXPECT_FALSE(watcher.present());

	startMock();
	ASSERT_TRUE(spin(loop, [&] { return appeared == 2; }));
	EXPECT_TRUE(watcher.present());
}

namespace {
// A Get of the display device's percentage through a CallSet.
void getPercentage(dbus::CallSet& calls, sdbus::IProxy& proxy, std::string group, std::function<void(double)> done) {
	calls.start(std::move(group),
	            proxy.callMethodAsync("Get").onInterface("org.freedesktop.DBus.Properties")
	                .withArguments(std::string("org.freedesktop.UPower.Device"), std::string("Percentage")),
	            [done = std::move(done)](const sdbus::Error* e, sdbus::Variant v) {
		            if (!e) done(dbus::asDouble(v).value_or(-1));
	            });
}
} // namespace

TEST_F(PrivateBus, CallSetDeliversRepliesAndForgetsThem) {
	EventLoop loop;
	BusConnection bus(loop, BusConnection::Kind::System);
	auto proxy = sdbus::createProxy(bus.connection(), UPOWER, DISPLAY);
	dbus::CallSet calls("test");
	int replies = 0;
	for (int i = 0; i < 3; ++i) getPercentage(calls, *proxy, "a", [&](double p) { replies += p == 50.0; });
	EXPECT_EQ(calls.size(), 3u);
	EXPECT_EQ(calls.count("a"), 3u);
	ASSERT_TRUE(spin(loop, [&] { return replies == 3; }));
	EXPECT_EQ(calls.size(), 0u);
}

TEST_F(PrivateBus, CallSetCancelsOneGroupOrAPrefixAndKeepsTheRest) {
	EventLoop loop;
	BusConnection bus(loop, BusConnection::Kind::System);
	auto proxy = sdbus::createProxy(bus.connection(), UPOWER, DISPLAY);
	dbus::CallSet calls("test");
	std::vector<std::string> delivered;
	for (const char* g: {"dev:a", "dev:b", "other", "dev:a"})
		getPercentage(calls, *proxy, g, [&delivered, g = std::string(g)](double) { delivered.push_back(g); });
	calls.cancel("dev:b");
	EXPECT_EQ(calls.size(), 3u);
	calls.cancelPrefix("dev:");
	EXPECT_EQ(calls.size(), 1u);
	ASSERT_TRUE(spin(loop, [&] { return calls.size() == 0; }));
	spin(loop, [] { return false; }, 200ms);
	EXPECT_EQ(delivered, std::vector<std::string>{"other"});
}

TEST_F(PrivateBus, CallSetHandlerMayCancelItsOwnGroupAndThrow) {
	EventLoop loop;
	BusConnection bus(loop, BusConnection::Kind::System);
	auto proxy = sdbus::createProxy(bus.connection(), UPOWER, DISPLAY);
	dbus::CallSet calls("test");
	int first = 0, second = 0;
	// The first reply cancels its whole group, itself included, and then throws: the handler
	// must survive its own cancellation, the sibling must never run, and the throw is logged.
	getPercentage(calls, *proxy, "g", [&](double) {
		++first;
		calls.cancel("g");
		throw std::runtime_error("handler failed on purpose");
	});
	getPercentage(calls, *proxy, "g", [&](double) { ++second; });
	ASSERT_TRUE(spin(loop, [&] { return first == 1; }));
	spin(loop, [] { return false; }, 200ms);
	EXPECT_EQ(second, 0);
	EXPECT_EQ(calls.size(), 0u);
}

TEST_F(PrivateBus, CallSetCancelsEverythingWhenDestroyed) {
	EventLoop loop;
	BusConnection bus(loop, BusConnection::Kind::System);
	auto proxy = sdbus::createProxy(bus.connection(), UPOWER, DISPLAY);
	bool delivered = false;
	{
		dbus::CallSet calls("test");
		getPercentage(calls, *proxy, "g", [&](double) { delivered = true; });
		auto msg = proxy->createMethodCall("org.freedesktop.DBus.Properties", "GetAll");
		msg << std::string("org.freedesktop.UPower.Device");
		calls.start("raw", *proxy, msg, [&](sdbus::MethodReply*, const sdbus::Error*) { delivered = true; });
		EXPECT_EQ(calls.size(), 2u);
	}
	spin(loop, [] { return false; }, 300ms);
	EXPECT_FALSE(delivered);
}

TEST_F(PrivateBus, CallSetRawFormGivesTheReplyOrTheError) {
	EventLoop loop;
	BusConnection bus(loop, BusConnection::Kind::System);
	auto proxy = sdbus::createProxy(bus.connection(), UPOWER, DISPLAY);
	dbus::CallSet calls("test");
	std::optional<double> percentage;
	std::string error;
	auto get = proxy->createMethodCall("org.freedesktop.DBus.Properties", "GetAll");
	get << std::string("org.freedesktop.UPower.Device");
	calls.start("raw", *proxy, get, [&](sdbus::MethodReply* reply, const sdbus::Error* e) {
		ASSERT_EQ(e, nullptr);
		dbus::Properties props;
		*reply >> props;
		percentage = dbus::asDouble(props.at("Percentage"));
	});
	auto bad = proxy->createMethodCall("org.freedesktop.UPower.Device", "NoSuchMethod");
	calls.start("raw", *proxy, bad, [&](sdbus::MethodReply* reply, const sdbus::Error* e) {
		EXPECT_EQ(reply, nullptr);
		error = e ? e->getName() : "none";
	});
	ASSERT_TRUE(spin(loop, [&] { return percentage && !error.empty(); }));
	EXPECT_DOUBLE_EQ(*percentage, 50.0);
	EXPECT_EQ(error, "org.freedesktop.DBus.Error.UnknownMethod");
}
