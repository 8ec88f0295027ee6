// The D-Bus building blocks every bus backend uses, against a private dbus-daemon: the
// NameOwnerChanged fan-out, a politely owned name, the ObjectManager mirror and property sets.
// The service side is a second connection in this process, on the same loop: its signals still
// cross the bus daemon. Checks that something did NOT happen wait for a later event that must
// come after it (the bus keeps one sender's order), never for a fixed time.

#include "private_bus.hpp"

#include "dbus/bus.hpp"
#include "dbus/bus_probe.hpp"
#include "dbus/call_set.hpp"
#include "dbus/guard.hpp"
#include "dbus/names.hpp"
#include "dbus/object_cache.hpp"
#include "dbus/owned_name.hpp"
#include "dbus/properties.hpp"
#include "dbus/raw.hpp"

#include <map>
#include <sys/socket.h>
#include <sys/un.h>
#include <set>
#include <vector>

using namespace qsd;
using namespace qsd::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kIface = "org.qsd.Test.Thing";

// An object with two properties: Level (changes are signalled with the value) and Name
// (changes are signalled as invalidated, as BlueZ does with RSSI).
struct Thing {
	std::unique_ptr<sdbus::IObject> object;
	uint32_t level = 1;
	std::string name = "first";
	int failReads = 0;   // reads of Name (and so GetAll) that fail from now on

	Thing(sdbus::IConnection& conn, const std::string& path) {
		object = sdbus::createObject(conn, path);
		object->registerProperty(kIface, "Level", "u", [this](sdbus::PropertyGetReply& r) { r << level; });
		sdbus::Flags invalidates;
		invalidates.set(sdbus::Flags::EMITS_INVALIDATION_SIGNAL);
		object->registerProperty(
		    kIface, "Name", "s",
		    [this](sdbus::PropertyGetReply& r) {
			    if (failReads > 0) {
				    --failReads;
				    throw sdbus::Error("org.qsd.Test.Error.Busy", "busy");
			    }
			    r << name;
		    },
		    invalidates);
		object->finishRegistration();
	}
};

class DbusKit: public PrivateSystemBus {
protected:
	void SetUp() override {
		PrivateSystemBus::SetUp();
		client = std::make_unique<BusConnection>(loop, BusConnection::Kind::System);
		service = std::make_unique<BusConnection>(loop, BusConnection::Kind::System);
	}
	void TearDown() override {
		client.reset();
		service.reset();
		PrivateSystemBus::TearDown();
	}

	// org.qsd.Cache, served by `service`: an ObjectManager at /org/qsd/Cache and a Thing at
	// /org/qsd/Cache/a.
	struct CacheService {
		std::unique_ptr<sdbus::IObject> root;
		std::unique_ptr<Thing> a;
	};
	CacheService serveCache() {
		auto& conn = service->connection();
		CacheService s;
		s.root = sdbus::createObject(conn, "/org/qsd/Cache");
		s.root->addObjectManager();
		s.a = std::make_unique<Thing>(conn, "/org/qsd/Cache/a");
		conn.requestName("org.qsd.Cache");
		return s;
	}
	std::string mirrorOfSlowService(const char* mode, std::chrono::microseconds timeout);

	EventLoop loop;
	std::unique_ptr<BusConnection> client;
	std::unique_ptr<BusConnection> service;
};

} // namespace

TEST_F(DbusKit, NameTrackerSharesOneRulePerNameAndFansOut) {
	auto& names = client->names();
	std::vector<std::string> exactA, exactB, ns, all;
	auto record = [](std::vector<std::string>& v) {
		return [&v](const std::string& name, const std::string&, const std::string& owner) {
			v.push_back(name + (owner.empty() ? " gone" : " owned"));
		};
	};
	auto w1 = names.watch("org.qsd.A", record(exactA));
	auto w2 = names.watch("org.qsd.A", record(exactB));
	auto w3 = names.watchNamespace("org.qsd", record(ns));
	auto w4 = names.watchAll(record(all));
	EXPECT_EQ(names.rules(), 3u);   // two watches of one name share its rule

	service->connection().requestName("org.qsd.A");
	service->connection().requestName("org.qsdx.B");
	ASSERT_TRUE(spin(loop, [&] { return all.size() >= 2 && std::count(all.begin(), all.end(), "org.qsdx.B owned"); }));
	EXPECT_EQ(exactA, std::vector<std::string>{"org.qsd.A owned"});
	EXPECT_EQ(exactB, std::vector<std::string>{"org.qsd.A owned"});
	// A namespace is the name and the names below it, not every name that starts alike.
	EXPECT_EQ(ns, std::vector<std::string>{"org.qsd.A owned"});

	// A dropped watch hears nothing more; its rule goes once no watch uses it.
	w2.reset();
	service->connection().releaseName("org.qsd.A");
	service->connection().releaseName("org.qsdx.B");
	ASSERT_TRUE(spin(loop, [&] { return std::count(all.begin(), all.end(), "org.qsdx.B gone"); }));
	EXPECT_EQ(exactA, (std::vector<std::string>{"org.qsd.A owned", "org.qsd.A gone"}));
	EXPECT_EQ(exactB, std::vector<std::string>{"org.qsd.A owned"});
	w1.reset();
	spin(loop, [&] { return names.rules() == 2; }, 1s);
	EXPECT_EQ(names.rules(), 2u);
}

TEST_F(DbusKit, OwnedNameWaitsBehindTheOwnerTakesOverAndReleases) {
	const std::string name = "org.qsd.Owned";
	service->connection().requestName(name);
	int changes = 0;
	auto owned = std::make_unique<dbus::OwnedName>(*client, name, [&] { ++changes; });
	auto& object = owned->exportObject("/org/qsd/Owned");
	object.registerMethod("org.qsd.Owned", "Ping", "", "s", [](sdbus::MethodCall call) {
		auto reply = call.createReply();
		reply << std::string("pong");
		reply.send();
	});
	object.finishRegistration();
	owned->request();
	ASSERT_TRUE(spin(loop, [&] { return owned->state() == dbus::OwnedName::State::Waiting && owned->otherPid(); }));
	EXPECT_EQ(owned->otherOwner(), service->connection().getUniqueName());
	EXPECT_EQ(*owned->otherPid(), uint32_t(::getpid()));

	// The owner leaves: the bus hands the name over, and the object answers on it.
	service->connection().releaseName(name);
	ASSERT_TRUE(spin(loop, [&] { return owned->owned(); }));
	EXPECT_TRUE(owned->otherOwner().empty());
	auto proxy = sdbus::createProxy(service->connection(), name, "/org/qsd/Owned");
	std::string answer;
	auto call = proxy->callMethodAsync("Ping").onInterface("org.qsd.Owned").uponReplyInvoke(
	    [&](const sdbus::Error* e, std::string s) { answer = e ? e->getName() : s; });
	ASSERT_TRUE(spin(loop, [&] { return !answer.empty(); }));
	EXPECT_EQ(answer, "pong");

	// A later program asking to replace qsd is refused: qsd never allows replacement.
	int r = -1;
	auto px = sdbus::createProxy(service->connection(), "org.freedesktop.DBus", "/org/freedesktop/DBus");
	auto req = px->callMethodAsync("RequestName").onInterface("org.freedesktop.DBus").withArguments(name, uint32_t(2 | 4))
	               .uponReplyInvoke([&](const sdbus::Error* e, uint32_t reply) { r = e ? 0 : int(reply); });
	ASSERT_TRUE(spin(loop, [&] { return r >= 0; }));
	EXPECT_EQ(r, 3);   // DBUS_REQUEST_NAME_REPLY_EXISTS
	EXPECT_TRUE(owned->owned());

	// Destroyed: the name is released at once (nobody is queued behind qsd: it has no owner).
	std::string owner = "?";
	auto watch = service->names().watch(name, [&](const std::string&, const std::string&, const std::string& o) { owner = o; });
	owned.reset();
	ASSERT_TRUE(spin(loop, [&] { return owner != "?"; }));
	EXPECT_EQ(owner, "");
}

// sd-bus runs sdbus-c++'s callbacks from its C code: an exception other than an exported
// method's sdbus::Error that left one would leave the connection mid-dispatch, and every later
// dispatch would fail (EBUSY): the bus dead for every backend on it. guard.hpp's wrappers keep
// the connection working.
TEST_F(DbusKit, AnExceptionInACallbackLeavesTheConnectionWorking) {
	struct Handler {
		bool fail = true;
		void onCall(sdbus::MethodCall call) {
			if (fail) throw std::runtime_error("a defect");
			auto reply = call.createReply();
			reply << std::string("ok");
			reply.send();
		}
	} handler;
	auto object = sdbus::createObject(client->connection(), "/org/qsd/Guarded");
	object->registerMethod("org.qsd.Guarded", "Call", "", "s", dbus::exportedMethod("test", &handler, &Handler::onCall));
	object->finishRegistration();
	auto proxy = sdbus::createProxy(service->connection(), client->uniqueName(), "/org/qsd/Guarded");
	auto ask = [&] {
		std::string answer;
		auto call = proxy->callMethodAsync("Call").onInterface("org.qsd.Guarded").uponReplyInvoke(
		    [&](const sdbus::Error* e, std::string s) { answer = e ? e->getName() + ": " + e->getMessage() : s; });
		EXPECT_TRUE(spin(loop, [&] { return !answer.empty(); }));
		return answer;
	};
	EXPECT_EQ(ask(), "org.freedesktop.DBus.Error.Failed: a defect");
	handler.fail = false;
	EXPECT_EQ(ask(), "ok");

	// A kit reply handler (GetNameOwner's answer) runs a change handler that throws.
	service->connection().requestName("org.qsd.Taken");
	int changes = 0;
	dbus::OwnedName owned(*client, "org.qsd.Taken", [&] {
		++changes;
		throw std::runtime_error("a defect in a change handler");
	});
	ASSERT_TRUE(spin(loop, [&] { return changes > 0; }));
	EXPECT_EQ(ask(), "ok");
}

TEST_F(DbusKit, RawMessageReadsInBulkAndPeeksBeforeReading) {
	// A method that reads (ay, v) with sd-bus itself: the bytes in one read, the variant's type
	// looked at first and skipped when it is not the expected one.
	auto object = sdbus::createObject(service->connection(), "/org/qsd/Raw");
	object->registerMethod("org.qsd.Raw", "Take", "ayv", "us", [](sdbus::MethodCall call) {
		sd_bus_message* m = dbus::rawMessage(call);
		const void* data = nullptr;
		size_t size = 0;
		dbus::checkRead(sd_bus_message_read_array(m, 'y', &data, &size), "bytes");
		char type = 0;
		const char* contents = nullptr;
		dbus::checkRead(sd_bus_message_peek_type(m, &type, &contents), "variant");
		std::string what = contents ? contents : "";
		if (what == "s") {
			const char* s = nullptr;
			dbus::checkRead(sd_bus_message_enter_container(m, 'v', "s"), "variant");
			dbus::checkRead(sd_bus_message_read_basic(m, 's', &s), "string");
			what += "=" + std::string(s);
		} else {
			dbus::checkRead(sd_bus_message_skip(m, "v"), "variant");
		}
		auto reply = call.createReply();
		reply << uint32_t(size) << what;
		reply.send();
	});
	object->finishRegistration();
	auto proxy = sdbus::createProxy(client->connection(), service->connection().getUniqueName(), "/org/qsd/Raw");
	std::vector<std::string> answers;
	auto ask = [&](sdbus::Variant v) {
		return proxy->callMethodAsync("Take").onInterface("org.qsd.Raw").withArguments(std::vector<uint8_t>(1000, 7), v)
		    .uponReplyInvoke([&](const sdbus::Error* e, uint32_t n, std::string s) {
			    answers.push_back(e ? e->getName() : std::to_string(n) + " " + s);
		    });
	};
	auto a = ask(sdbus::Variant(std::string("text")));
	auto b = ask(sdbus::Variant(int32_t(3)));
	ASSERT_TRUE(spin(loop, [&] { return answers.size() == 2; }));
	EXPECT_EQ(answers[0], "1000 s=text");
	EXPECT_EQ(answers[1], "1000 i");
	EXPECT_THROW(dbus::checkRead(-EBADMSG, "x"), sdbus::Error);
}

TEST_F(DbusKit, PropertySetLoadsMergesAndTellsInvalidation) {
	service->connection().requestName("org.qsd.Props");
	Thing thing(service->connection(), "/org/qsd/Props/a");
	auto proxy = sdbus::createProxy(client->connection(), "org.qsd.Props", "/org/qsd/Props/a");
	dbus::CallSet calls("test");
	dbus::PropertySet set(kIface);
	bool loaded = false;
	set.load(calls, "p", *proxy, [&](const sdbus::Error* e) { loaded = !e; });
	ASSERT_TRUE(spin(loop, [&] { return loaded; }));
	EXPECT_EQ(dbus::asUint(*set.find("Level")), 1u);

	std::vector<dbus::PropertySet::Change> changes;
	auto match = client->connection().addMatch(
	    "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='/org/qsd/Props/a'",
	    [&](sdbus::Message& m) {
		    if (auto c = set.apply(m)) changes.push_back(*c);
	    });
	thing.level = 7;
	thing.object->emitPropertiesChangedSignal(kIface, {"Level"});
	thing.name = "second";
	thing.object->emitPropertiesChangedSignal(kIface, {"Name"});
	ASSERT_TRUE(spin(loop, [&] { return changes.size() == 2; }));
	EXPECT_EQ(changes[0].names, std::vector<std::string>{"Level"});
	EXPECT_FALSE(changes[0].invalidated);
	EXPECT_EQ(dbus::asUint(*set.find("Level")), 7u);
	EXPECT_EQ(changes[1].names, std::vector<std::string>{"Name"});
	EXPECT_TRUE(changes[1].invalidated);
	EXPECT_EQ(set.find("Name"), nullptr);   // gone until read again
	loaded = false;
	set.load(calls, "p", *proxy, [&](const sdbus::Error* e) { loaded = !e; });
	ASSERT_TRUE(spin(loop, [&] { return loaded; }));
	EXPECT_EQ(dbus::asString(*set.find("Name")), "second");
}

TEST_F(DbusKit, ObjectCacheMirrorsTheObjectsThroughRestarts) {
	const std::string svc = "org.qsd.Cache";
	auto& conn = service->connection();
	auto root = sdbus::createObject(conn, "/org/qsd/Cache");
	root->addObjectManager();
	auto a = std::make_unique<Thing>(conn, "/org/qsd/Cache/a");
	conn.requestName(svc);

	dbus::CallSet calls("test");
	int ready = 0, lost = 0;
	std::vector<std::string> events;
	std::vector<uint64_t> levels;
	dbus::ObjectCache* mirror = nullptr;
	dbus::ObjectCache::Hooks hooks;
	hooks.ready = [&] { ++ready; };
	hooks.lost = [&] { ++lost; };
	hooks.added = [&](const std::string& path, const std::vector<std::string>&) { events.push_back("added " + path); };
	hooks.removed = [&](const std::string& path, const std::vector<std::string>&) { events.push_back("removed " + path); };
	hooks.changed = [&](const std::string& path, const std::string&, const std::vector<std::string>& names) {
		for (const auto& n: names) events.push_back("changed " + path + " " + n);
		if (const auto* v = mirror->property(path, kIface, "Level")) levels.push_back(dbus::asUint(*v).value_or(0));
	};
	dbus::ObjectCache cache(*client, calls, {svc, "/org/qsd/Cache", "/org/qsd/Cache", {}, "test"}, hooks);
	mirror = &cache;
	ASSERT_TRUE(spin(loop, [&] { return ready == 1; }));
	ASSERT_NE(cache.properties("/org/qsd/Cache/a", kIface), nullptr);
	EXPECT_EQ(dbus::asUint(*cache.property("/org/qsd/Cache/a", kIface, "Level")), 1u);

	// A new object, a value change, an invalidated value read again, an object removed.
	auto b = std::make_unique<Thing>(conn, "/org/qsd/Cache/b");
	b->object->emitInterfacesAddedSignal({kIface});
	a->level = 5;
	a->object->emitPropertiesChangedSignal(kIface, {"Level"});
	a->name = "renamed";
	a->object->emitPropertiesChangedSignal(kIface, {"Name"});
	b->object->emitInterfacesRemovedSignal({kIface});
	b.reset();
	ASSERT_TRUE(spin(loop, [&] {
		return std::count(events.begin(), events.end(), "removed /org/qsd/Cache/b") &&
		       cache.property("/org/qsd/Cache/a", kIface, "Name") != nullptr;
	}));
	EXPECT_EQ(events[0], "added /org/qsd/Cache/b");
	EXPECT_EQ(events[1], "changed /org/qsd/Cache/a Level");
	EXPECT_EQ(dbus::asUint(*cache.property("/org/qsd/Cache/a", kIface, "Level")), 5u);
	EXPECT_EQ(dbus::asString(*cache.property("/org/qsd/Cache/a", kIface, "Name")), "renamed");
	EXPECT_EQ(cache.object("/org/qsd/Cache/b"), nullptr);
	EXPECT_TRUE(std::count(events.begin(), events.end(), "changed /org/qsd/Cache/a Name"));

	// The service leaves: the mirror empties. It comes back: read again from scratch.
	conn.releaseName(svc);
	ASSERT_TRUE(spin(loop, [&] { return lost == 1; }));
	EXPECT_TRUE(cache.objects().empty());
	EXPECT_FALSE(cache.ready());
	a->level = 9;
	conn.requestName(svc);
	ASSERT_TRUE(spin(loop, [&] { return ready == 2; }));
	EXPECT_EQ(dbus::asUint(*cache.property("/org/qsd/Cache/a", kIface, "Level")), 9u);

	// Signals from anyone but the owner are not the service's.
	auto other = std::make_unique<BusConnection>(loop, BusConnection::Kind::System);
	auto impostor = sdbus::createObject(other->connection(), "/org/qsd/Cache/a");
	impostor->registerProperty(kIface, "Level", "u", [](sdbus::PropertyGetReply& r) { r << uint32_t(666); });
	impostor->finishRegistration();
	impostor->emitPropertiesChangedSignal(kIface, {"Level"});
	a->level = 10;   // then the owner's change, which must come through alone
	a->object->emitPropertiesChangedSignal(kIface, {"Level"});
	ASSERT_TRUE(spin(loop, [&] { return dbus::asUint(*cache.property("/org/qsd/Cache/a", kIface, "Level")) == 10u; }));
	EXPECT_EQ(std::count(levels.begin(), levels.end(), 666u), 0);
}

// An invalidated value whose GetAll fails (the service busy): the backend hears that it is
// unknown, and it is read again until the read answers. Before, the failed read left the old
// value shown until the property changed again.
TEST_F(DbusKit, ObjectCacheReadsAnInvalidatedValueAgainAfterAFailedRead) {
	auto served = serveCache();
	auto& a = served.a;

	dbus::CallSet calls("test");
	int ready = 0;
	std::vector<std::string> seen;   // Name as the cache held it at each hook that named it
	dbus::ObjectCache* mirror = nullptr;
	dbus::ObjectCache::Hooks hooks;
	hooks.ready = [&] { ++ready; };
	hooks.changed = [&](const std::string& path, const std::string&, const std::vector<std::string>& names) {
		if (!std::count(names.begin(), names.end(), "Name")) return;
		const auto* v = mirror->property(path, kIface, "Name");
		seen.push_back(v ? dbus::asString(*v).value_or("?") : "(unknown)");
	};
	dbus::ObjectCache cache(*client, calls, {"org.qsd.Cache", "/org/qsd/Cache", "/org/qsd/Cache", {}, "test"}, hooks);
	mirror = &cache;
	ASSERT_TRUE(spin(loop, [&] { return ready == 1; }));

	a->name = "renamed";
	a->failReads = 2;
	a->object->emitPropertiesChangedSignal(kIface, {"Name"});
	ASSERT_TRUE(spin(loop, [&] { return !seen.empty() && seen.back() == "renamed"; }));
	EXPECT_EQ(seen, (std::vector<std::string>{"(unknown)", "renamed"}));
	EXPECT_EQ(a->failReads, 0);

	// The read and its six retries fail: the cache gives up (0.25 + 0.5 + 1 + 2 + 4 + 8 s). A later
	// invalidation starts afresh: kept used up, its failed read was never asked again.
	seen.clear();
	a->failReads = 7;
	a->object->emitPropertiesChangedSignal(kIface, {"Name"});
	ASSERT_TRUE(spin(loop, [&] { return a->failReads == 0; }, 30s));
	// Sent after the last read's error: the cache has read that error when this comes.
	a->name = "third";
	a->failReads = 1;
	a->object->emitPropertiesChangedSignal(kIface, {"Name"});
	ASSERT_TRUE(spin(loop, [&] { return !seen.empty() && seen.back() == "third"; })) << ::testing::PrintToString(seen);
	EXPECT_EQ(seen, (std::vector<std::string>{"(unknown)", "(unknown)", "third"}));
}

// A service that never answers its first GetManagedObjects, as one busy while the system starts
// would not in time (with the argument "fail": answers it with an error), and answers the next
// with one object; org.qsd.Test.Control.Asked counts the calls. A process of its own: sd-bus
// serves ObjectManager itself and refuses a vtable of it.
constexpr const char* kSlowService = R"(
import sys, dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
class Root(dbus.service.Object):
    asked = 0
    held = []
    @dbus.service.method("org.freedesktop.DBus.ObjectManager", out_signature="a{oa{sa{sv}}}",
                         async_callbacks=("ok", "fail"))
    def GetManagedObjects(self, ok, fail):
        Root.asked += 1
        if Root.asked == 1 and sys.argv[1:] == ["fail"]:
            fail(dbus.exceptions.DBusException("not ready", name="org.freedesktop.DBus.Error.Failed"))
            return
        if Root.asked == 1:
            Root.held.append(ok)
            return
        props = dbus.Dictionary({"Level": dbus.UInt32(7)}, signature="sv")
        ok(dbus.Dictionary({"/org/qsd/Slow/a": dbus.Dictionary({"org.qsd.Test.Thing": props}, signature="sa{sv}")},
                           signature="oa{sa{sv}}"))
    @dbus.service.method("org.qsd.Test.Control", out_signature="u")
    def Asked(self):
        return Root.asked
root = Root(bus, "/org/qsd/Slow")
name = dbus.service.BusName("org.qsd.Slow", bus)
GLib.MainLoop().run()
)";

// Runs kSlowService (with `mode`) and mirrors it: the mirror must be filled by asking again.
// Returns how often GetManagedObjects was asked, as gdbus prints it.
std::string DbusKit::mirrorOfSlowService(const char* mode, std::chrono::microseconds timeout) {
	std::vector<std::string> argv{"/usr/bin/python3", "-c", kSlowService};
	if (*mode) argv.emplace_back(mode);
	pid_t slow = spawnChild(argv);
	EXPECT_EQ(std::system("gdbus wait --system --timeout 15 org.qsd.Slow"), 0);
	dbus::CallSet calls("test");
	int ready = 0;
	dbus::ObjectCache::Hooks hooks;
	hooks.ready = [&] { ++ready; };
	dbus::ObjectCache::Options options{"org.qsd.Slow", "/org/qsd/Slow", "/org/qsd/Slow", {}, "test"};
	options.timeout = timeout;
	{
		dbus::ObjectCache cache(*client, calls, options, hooks);
		EXPECT_TRUE(spin(loop, [&] { return ready == 1; }));
		const auto* level = cache.property("/org/qsd/Slow/a", kIface, "Level");
		EXPECT_NE(level, nullptr);
		if (level) {
			EXPECT_EQ(dbus::asUint(*level), 7u);
		}
	}
	auto asked = run("gdbus call --system -d org.qsd.Slow -o /org/qsd/Slow -m org.qsd.Test.Control.Asked");
	stopChild(slow);
	return asked;
}

// The cache asks again (a second later) instead of staying empty until the service restarts.
TEST_F(DbusKit, ObjectCacheAsksAgainWhenGetManagedObjectsTimesOut) {
	// The first call never gets an answer; a later one could miss this too on a loaded machine,
	// and is then asked again after 2 s, 4 s... within spin()'s 10 s.
	auto asked = mirrorOfSlowService("", 500ms);
	EXPECT_NE(asked, "(uint32 1,)\n") << "asked once: the answer did not come from asking again";
	EXPECT_EQ(asked.rfind("(uint32 ", 0), 0u) << asked;
}

// The same when the first answer is an error (a service not ready yet): before, it was only
// logged, and the mirror stayed empty until the service restarted.
TEST_F(DbusKit, ObjectCacheAsksAgainWhenGetManagedObjectsFails) {
	EXPECT_EQ(mirrorOfSlowService("fail", 0us), "(uint32 2,)\n");
}

TEST_F(DbusKit, ObjectCacheForgetsASubtreeAndBoundsItsProxies) {
	const std::string svc = "org.qsd.Cache";
	auto& conn = service->connection();
	auto root = sdbus::createObject(conn, "/org/qsd/Cache");
	root->addObjectManager();
	auto a = std::make_unique<Thing>(conn, "/org/qsd/Cache/a");
	auto ax = std::make_unique<Thing>(conn, "/org/qsd/Cache/a/x");
	auto ay = std::make_unique<Thing>(conn, "/org/qsd/Cache/a/y");
	auto ab = std::make_unique<Thing>(conn, "/org/qsd/Cache/ab");
	conn.requestName(svc);

	dbus::CallSet calls("test");
	int ready = 0;
	std::vector<std::string> added, removed;
	dbus::ObjectCache::Hooks hooks;
	hooks.ready = [&] { ++ready; };
	hooks.added = [&](const std::string& path, const std::vector<std::string>&) { added.push_back(path); };
	hooks.removed = [&](const std::string& path, const std::vector<std::string>&) { removed.push_back(path); };
	dbus::ObjectCache cache(*client, calls, {svc, "/org/qsd/Cache", "/org/qsd/Cache", {}, "test"}, hooks);
	ASSERT_TRUE(spin(loop, [&] { return ready == 1; }));

	// The objects below a/ go; a itself and its neighbour ab (a prefix, not a child) stay.
	auto gone = cache.forgetBelow("/org/qsd/Cache/a");
	EXPECT_EQ(gone, (std::vector<std::string>{"/org/qsd/Cache/a/x", "/org/qsd/Cache/a/y"}));
	EXPECT_NE(cache.object("/org/qsd/Cache/a"), nullptr);
	EXPECT_NE(cache.object("/org/qsd/Cache/ab"), nullptr);
	EXPECT_EQ(cache.object("/org/qsd/Cache/a/x"), nullptr);
	EXPECT_TRUE(removed.empty());
	// Announced again, it comes back with what it has now.
	ax->level = 7;
	ax->object->emitInterfacesAddedSignal({kIface});
	ASSERT_TRUE(spin(loop, [&] { return cache.object("/org/qsd/Cache/a/x") != nullptr; }));
	EXPECT_EQ(dbus::asUint(*cache.property("/org/qsd/Cache/a/x", kIface, "Level")), 7u);
	EXPECT_EQ(added, std::vector<std::string>{"/org/qsd/Cache/a/x"});

	// Objects that come and go, each called once (a proxy each): the proxies of removed objects
	// are kept only up to the bound.
	size_t before = cache.proxyCount();
	const size_t n = dbus::ObjectCache::kRetiredProxies + 20;
	for (size_t i = 0; i < n; ++i) {
		auto path = "/org/qsd/Cache/t" + std::to_string(i);
		auto t = std::make_unique<Thing>(conn, path);
		t->object->emitInterfacesAddedSignal({kIface});
		ASSERT_TRUE(spin(loop, [&] { return cache.object(path) != nullptr; }));
		(void)cache.proxy(path);
		t->object->emitInterfacesRemovedSignal({kIface});
		ASSERT_TRUE(spin(loop, [&] { return cache.object(path) == nullptr; }));
	}
	EXPECT_EQ(cache.proxyCount(), before + dbus::ObjectCache::kRetiredProxies);
}

TEST_F(DbusKit, ObjectCacheKeepsOnlyTheInterfacesAndPropertiesAskedFor) {
	const std::string svc = "org.qsd.Cache";
	constexpr const char* kOther = "org.qsd.Test.Other";
	auto& conn = service->connection();
	auto root = sdbus::createObject(conn, "/org/qsd/Cache");
	root->addObjectManager();
	auto a = std::make_unique<Thing>(conn, "/org/qsd/Cache/a");
	// An object with only an interface the cache is not asked for (BlueZ's GATT objects).
	uint32_t otherLevel = 1;
	auto other = sdbus::createObject(conn, "/org/qsd/Cache/a/gatt");
	other->registerProperty(kOther, "Level", "u", [&](sdbus::PropertyGetReply& r) { r << otherLevel; });
	other->finishRegistration();
	conn.requestName(svc);

	dbus::CallSet calls("test");
	int ready = 0;
	std::vector<std::string> events;
	dbus::ObjectCache::Hooks hooks;
	hooks.ready = [&] { ++ready; };
	hooks.added = [&](const std::string& path, const std::vector<std::string>&) { events.push_back("added " + path); };
	hooks.changed = [&](const std::string& path, const std::string&, const std::vector<std::string>& names) {
		for (const auto& n: names) events.push_back("changed " + path + " " + n);
	};
	dbus::ObjectCache::Options options{svc, "/org/qsd/Cache", "/org/qsd/Cache", {}, "test"};
	options.interfaces = {{kIface, {"Level"}}};
	dbus::ObjectCache cache(*client, calls, options, hooks);
	ASSERT_TRUE(spin(loop, [&] { return ready == 1; }));
	EXPECT_NE(cache.property("/org/qsd/Cache/a", kIface, "Level"), nullptr);
	EXPECT_EQ(cache.property("/org/qsd/Cache/a", kIface, "Name"), nullptr);
	EXPECT_EQ(cache.object("/org/qsd/Cache/a/gatt"), nullptr);

	// Changes of what is not kept run no hook; the object of another interface never appears.
	a->name = "renamed";
	a->object->emitPropertiesChangedSignal(kIface, {"Name"});
	other->emitInterfacesAddedSignal({kOther});
	otherLevel = 2;
	other->emitPropertiesChangedSignal(kOther, {"Level"});
	a->level = 4;   // then a change that is kept, which must come through alone
	a->object->emitPropertiesChangedSignal(kIface, {"Level"});
	ASSERT_TRUE(spin(loop, [&] { return dbus::asUint(*cache.property("/org/qsd/Cache/a", kIface, "Level")) == 4u; }));
	EXPECT_EQ(events, std::vector<std::string>{"changed /org/qsd/Cache/a Level"});
	EXPECT_EQ(cache.object("/org/qsd/Cache/a/gatt"), nullptr);
	EXPECT_EQ(cache.property("/org/qsd/Cache/a", kIface, "Name"), nullptr);
}

// The daemon asks each bus from its loop before connecting (docs/architecture.md, "Start-up and
// the buses"): a bus that answers, one that is not there, and one that accepts the connection
// and never answers, which must neither block the loop nor its exit.
TEST_F(DbusKit, BusProbeTellsAnAnsweringBusARefusedOneAndOneThatDoesNotAnswer) {
	struct Outcome {
		bool done = false;
		BusProbe::Result result = BusProbe::Result::Answered;
		std::string why;
	};
	auto ask = [&](Outcome& out, std::chrono::microseconds timeout) {
		return std::make_unique<BusProbe>(loop, BusConnection::Kind::System, timeout,
		                                  [&out](BusProbe::Result r, const std::string& why) {
			                                  out = {true, r, why};
		                                  });
	};

	Outcome answered;
	auto probe = ask(answered, 5s);
	EXPECT_FALSE(answered.done);   // never from the constructor
	ASSERT_TRUE(spin(loop, [&] { return answered.done; }));
	EXPECT_EQ(answered.result, BusProbe::Result::Answered);

	setenv("DBUS_SYSTEM_BUS_ADDRESS", ("unix:path=" + dir_ + "/nothing-here").c_str(), 1);
	Outcome refused;
	probe = ask(refused, 5s);
	ASSERT_TRUE(spin(loop, [&] { return refused.done; }));
	EXPECT_EQ(refused.result, BusProbe::Result::Refused);
	EXPECT_FALSE(refused.why.empty());

	// A socket that queues connections and never reads them: a stopped bus daemon.
	std::string silent = dir_ + "/silent";
	int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);   // accept4() below must not wait
	ASSERT_GE(fd, 0);
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", silent.c_str());
	ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
	ASSERT_EQ(::listen(fd, 8), 0);
	setenv("DBUS_SYSTEM_BUS_ADDRESS", ("unix:path=" + silent).c_str(), 1);
	Outcome silence;
	probe = ask(silence, 300ms);
	ASSERT_TRUE(spin(loop, [&] { return silence.done; }));
	EXPECT_EQ(silence.result, BusProbe::Result::NoAnswer);
	EXPECT_EQ(silence.why, "no answer within 300 ms");

	// A bus daemon that closes the connection (exiting, refusing to authenticate): sd-bus ends
	// the pending call itself, which is no answer either.
	Outcome closed;
	probe = ask(closed, 60s);
	ASSERT_TRUE(spin(loop, [&] {
		if (int peer = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC); peer >= 0) ::close(peer);
		return closed.done;
	}));
	EXPECT_EQ(closed.result, BusProbe::Result::NoAnswer);
	EXPECT_FALSE(closed.why.empty());

	// Still waiting for the silent bus when the loop exits: the exit does not wait for it
	// (sd-bus flushes a bus it opened when its loop exits, unless told not to).
	Outcome pending;
	probe = ask(pending, 60s);
	auto started = std::chrono::steady_clock::now();
	loop.exit(0);
	loop.run();
	EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
	EXPECT_FALSE(pending.done);
	probe.reset();
	::close(fd);
	setenv("DBUS_SYSTEM_BUS_ADDRESS", address_.c_str(), 1);
}
