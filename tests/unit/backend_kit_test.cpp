// The backend kit: the life cycle every backend shares, the order in which a method's request
// is checked (params against the API description, then availability, then the handler), the
// error mapping, client leases, and the retry backoff.

#include "helpers.hpp"
#include "session_fixture.hpp"

#include "backends/answer.hpp"
#include "backends/backend.hpp"
#include "backoff.hpp"
#include "retry.hpp"

#include <qsd/protocol/api.hpp>
#include <qsd/protocol/domains.hpp>

#include <gtest/gtest.h>

using namespace qsd;
using namespace qsd::testing;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Borrows two documented methods: power.setProfile {profile: enum} and power.releaseProfile
// {cookie: integer}, the latter declared not to need the service.
class KitBackend final: public Backend {
public:
	explicit KitBackend(BackendContext& context): Backend(context) {}
	~KitBackend() override { stop(); }
	std::string_view id() const override { return "kit"; }
	std::string_view root() const override { return "/kit"; }

	bool available = false;
	int handled = 0;
	int released = 0;
	std::function<void(Call&)> behaviour;

	void lease(ClientSession& client, const std::string& key) { grantLease(client, key, [this] { ++released; }); }
	using Backend::revokeLease;

private:
	void onStart() override { setState(BackendState::Starting); }
	void onStop() override {}
	std::span<const Method> methods() const override {
		static constexpr Method table[] = {
		    method<&KitBackend::setProfile>("power.setProfile"),
		    method<&KitBackend::releaseProfile>("power.releaseProfile", false),
		};
		return table;
	}
	std::optional<Unavailable> availability() const override {
		if (available) return std::nullopt;
		return Unavailable{"/kit/part", "the service is not on the bus"};
	}
	void setProfile(Call& c) {
		++handled;
		if (behaviour) behaviour(c);
		else c.result({{"profile", c.params().string("profile")}});
	}
	void releaseProfile(Call& c) {
		++handled;
		c.result({{"cookie", c.params().integer("cookie")}});
	}
};

class BadTable final: public Backend {
public:
	explicit BadTable(BackendContext& context): Backend(context) {}
	~BadTable() override { stop(); }
	std::string_view id() const override { return "bad"; }
	std::string_view root() const override { return "/bad"; }

private:
	void onStart() override {}
	void onStop() override {}
	std::span<const Method> methods() const override {
		static constexpr Method table[] = {method<&BadTable::nothing>("kit.undocumented")};
		return table;
	}
	void nothing(Call&) {}
};

class BackendKit: public ServerFixture {
protected:
	BackendKit(): context{loop, tree, dispatcher, server, nullptr, nullptr} {}

	json call(Connection& c, const std::string& method, const json& params) {
		auto out = exchange(c, rpc::dump(rpc::makeRequest(1, method, params)));
		EXPECT_EQ(out.size(), 1u);
		return out.empty() ? json() : out.front();
	}

	BackendContext context;
};

} // namespace

TEST_F(BackendKit, StartWritesTheRootAndRegistersTheTableStopTakesBothAway) {
	KitBackend b(context);
	b.start();
	settle();
	EXPECT_EQ(*tree.find("/kit"), json({{"available", false}}));
	EXPECT_EQ(tree.find("/daemon/backends/kit/state")->get<std::string>(), "starting");
	EXPECT_TRUE(dispatcher.has("power.setProfile"));
	EXPECT_TRUE(dispatcher.has("power.releaseProfile"));
	b.start();   // once
	b.stop();
	settle();
	EXPECT_EQ(tree.find("/kit"), nullptr);
	EXPECT_EQ(tree.find("/daemon/backends/kit/state")->get<std::string>(), "stopped");
	EXPECT_FALSE(dispatcher.has("power.setProfile"));
	b.start();   // and again after a stop
	EXPECT_TRUE(dispatcher.has("power.setProfile"));
}

// The clients hold a domain across a daemon restart while its backend starts, by the table in
// domains.hpp: a backend missing from it (qsctl's copy once lacked three) blanks its domain.
TEST_F(BackendKit, EveryBackendWritesTheDomainTheClientsTableNames) {
	for (const auto& info: builtinBackends()) {
		auto backend = info.create(context);
		EXPECT_EQ(backend->id(), info.id);
		auto root = backend->root();
		ASSERT_FALSE(root.empty());
		EXPECT_EQ(backendOfDomain(root.substr(1)), info.id) << root;
	}
}

TEST_F(BackendKit, AMethodMissingFromTheApiDescriptionIsRefusedAtStart) {
	BadTable b(context);
	EXPECT_THROW(b.start(), std::logic_error);
}

TEST_F(BackendKit, ParamsAreCheckedBeforeAvailabilityAndAvailabilityBeforeTheHandler) {
	KitBackend b(context);
	b.start();
	auto c = connect();
	// Unavailable, but the params are wrong: -32602 naming them, as in every backend.
	auto r = call(c, "power.setProfile", json::object());
	EXPECT_EQ(r["error"]["code"], -32602);
	EXPECT_EQ(r["error"]["data"]["param"], "profile");
	r = call(c, "power.setProfile", {{"profile", 3}});
	EXPECT_EQ(r["error"]["data"]["expected"], "a string");
	r = call(c, "power.setProfile", {{"profile", "turbo"}});
	EXPECT_EQ(r["error"]["code"], -32602);
	EXPECT_NE(r["error"]["data"]["supported"].size(), 0u);
	EXPECT_EQ(b.handled, 0);
	// Good params, no service: -32000 with the same payload whatever the backend.
	r = call(c, "power.setProfile", {{"profile", "balanced"}});
	EXPECT_EQ(r["error"]["code"], -32000);
	EXPECT_EQ(r["error"]["data"], json({{"backend", "kit"}, {"path", "/kit/part"}, {"reason", "the service is not on the bus"}}));
	EXPECT_EQ(b.handled, 0);
	// A method that does not need the service runs anyway.
	r = call(c, "power.releaseProfile", {{"cookie", 4}});
	EXPECT_EQ(r["result"], json({{"cookie", 4}}));
	b.available = true;
	r = call(c, "power.setProfile", {{"profile", "balanced"}});
	EXPECT_EQ(r["result"], json({{"profile", "balanced"}}));
	EXPECT_EQ(b.handled, 2);
}

TEST_F(BackendKit, ADBusErrorThrownWhileSendingIsTheBackendsFailure) {
	KitBackend b(context);
	b.available = true;
	b.start();
	auto c = connect();
	b.behaviour = [](Call&) { throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", "no such name"); };
	auto r = call(c, "power.setProfile", {{"profile", "balanced"}});
	EXPECT_EQ(r["error"]["code"], -32002);
	EXPECT_EQ(r["error"]["data"]["backend"], "kit");
	EXPECT_EQ(r["error"]["data"]["name"], "org.freedesktop.DBus.Error.InvalidArgs");
	// The same once the handler made its answer: answered once, with the error.
	b.behaviour = [](Call& call) {
		auto a = call.answer();
		throw rpc::RpcException(rpc::ErrorCode::NotFound, "nothing here", {{"param", "profile"}});
	};
	r = call(c, "power.setProfile", {{"profile", "balanced"}});
	EXPECT_EQ(r["error"]["code"], -32001);
	// An answer kept by a pending call answers later, and only once.
	std::shared_ptr<Answer> kept;
	b.behaviour = [&](Call& call) { kept = call.answer(); };
	c.peer->send(rpc::dump(rpc::makeRequest(7, "power.setProfile", {{"profile", "balanced"}})) + "\n");
	settle();
	EXPECT_TRUE(c.peer->read().empty());
	kept->result({{"late", true}});
	kept->result({{"twice", true}});
	settle();
	auto out = c.peer->read();
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0]["result"], json({{"late", true}}));
	// Dropped unanswered (its service went away): -32000 naming the service.
	b.behaviour = [&](Call& call) { kept = call.answer("org.example.Service"); };
	c.peer->send(rpc::dump(rpc::makeRequest(8, "power.setProfile", {{"profile", "balanced"}})) + "\n");
	settle();
	kept.reset();
	settle();
	out = c.peer->read();
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0]["error"]["code"], -32000);
	EXPECT_EQ(out[0]["error"]["data"]["service"], "org.example.Service");
}

TEST_F(BackendKit, ALeaseEndsOnceWhenRevokedReplacedOrTheClientGoes) {
	KitBackend b(context);
	b.start();
	auto c1 = connect();
	auto c2 = connect();
	b.lease(*c1.session, "kit.a");
	b.lease(*c1.session, "kit.b");
	b.lease(*c2.session, "kit.a");
	EXPECT_TRUE(KitBackend::revokeLease(*c1.session, "kit.a"));
	EXPECT_EQ(b.released, 1);
	EXPECT_FALSE(KitBackend::revokeLease(*c1.session, "kit.a"));
	EXPECT_EQ(b.released, 1);
	b.lease(*c1.session, "kit.b");   // replacing releases the old one
	EXPECT_EQ(b.released, 2);
	c1.session.reset();   // the client goes: its remaining lease ends
	EXPECT_EQ(b.released, 3);
	b.stop();   // leases outlive a stopped backend without reaching it
	c2.session.reset();
	EXPECT_EQ(b.released, 3);
}

TEST(Backoff, DoublesUpToItsCapAndGivesUpAfterMaxTries) {
	Backoff b({100ms, 1s, 6});
	std::vector<int64_t> ms;
	while (auto d = b.next()) ms.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(*d).count());
	EXPECT_EQ(ms, (std::vector<int64_t>{100, 200, 400, 800, 1000, 1000}));
	EXPECT_TRUE(b.exhausted());
	b.reset();
	EXPECT_EQ(b.next(), Backoff::Delay(100ms));
	Backoff fixed({50ms, 50ms, 3});
	EXPECT_EQ(fixed.next(), Backoff::Delay(50ms));
	EXPECT_EQ(fixed.next(), Backoff::Delay(50ms));
	EXPECT_EQ(fixed.next(), Backoff::Delay(50ms));
	EXPECT_EQ(fixed.next(), std::nullopt);
	Backoff forever({1s, 60s, 0});
	for (int i = 0; i < 100; ++i) ASSERT_TRUE(forever.next());
	EXPECT_EQ(forever.next(), Backoff::Delay(60s));
}

TEST(Rfc3339, IsUtcWithMilliseconds) {
	auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796286446131));
	EXPECT_EQ(rfc3339(t), "2026-12-03T08:27:26.131Z");
	EXPECT_EQ(rfc3339(std::chrono::system_clock::time_point(std::chrono::microseconds(999'999))), "1970-01-01T00:00:00.999Z");
}

TEST(Retry, ArmsOneTryPerFailureUntilThePolicyGivesUp) {
	EventLoop loop;
	Retry retry({1ms, 4ms, 3});
	int tries = 0;
	std::vector<int64_t> delays;
	while (auto d = retry.schedule(loop, [&] { ++tries; }, "test-retry")) {
		delays.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(*d).count());
		EXPECT_TRUE(retry.pending());
		int before = tries;
		ASSERT_TRUE(runUntil(loop, [&] { return tries > before; }));
		EXPECT_FALSE(retry.pending());
	}
	EXPECT_EQ(delays, (std::vector<int64_t>{1, 2, 4}));
	EXPECT_EQ(tries, 3);
	EXPECT_TRUE(retry.exhausted());
	EXPECT_FALSE(retry.pending());   // giving up arms nothing
	retry.reset();
	EXPECT_EQ(retry.failures(), 0u);
	EXPECT_EQ(retry.schedule(loop, [] {}, "test-retry"), Backoff::Delay(1ms));
	retry.reset();   // a success drops the pending try
	EXPECT_FALSE(retry.pending());
}

TEST(Retry, ItsFailuresAreLoggedAtTheFirstLevelAtEachDoublingOfTheirCount) {
	EventLoop loop;
	Retry retry({1s, 30s, 0});   // as dbus::kAskAgain: never gives up
	std::vector<unsigned> loud;
	for (unsigned n = 1; n <= 120; ++n) {   // an hour of a hung service, and more
		ASSERT_TRUE(retry.schedule(loop, [] {}, "test-retry"));
		if (retry.level() == log::Level::Warning) loud.push_back(n);
		else EXPECT_EQ(retry.level(), log::Level::Debug);
		EXPECT_EQ(retry.level(log::Level::Info) == log::Level::Info, retry.level() == log::Level::Warning);
	}
	EXPECT_EQ(loud, (std::vector<unsigned>{1, 2, 4, 8, 16, 32, 64}));
	retry.reset();   // a success: the next failure is news again
	ASSERT_TRUE(retry.schedule(loop, [] {}, "test-retry"));
	EXPECT_EQ(retry.level(), log::Level::Warning);
	EXPECT_EQ(wholeSeconds(*retry.schedule(loop, [] {}, "test-retry")), 2);
}

TEST(Retry, APendingTryIsReplacedDroppedOrGoesWithItsOwner) {
	EventLoop loop;
	int first = 0, second = 0, gone = 0, last = 0;
	Retry retry({1ms, 60s, 0});
	ASSERT_TRUE(retry.schedule(loop, [&] { ++first; }, "test-retry"));    // due after 1 ms
	ASSERT_TRUE(retry.schedule(loop, [&] { ++second; }, "test-retry"));   // after 2 ms, in its place
	ASSERT_TRUE(runUntil(loop, [&] { return second == 1; }));
	EXPECT_EQ(first, 0);   // it was due first: it would have run before the second
	{
		Retry owned({1ms, 1ms, 0});
		ASSERT_TRUE(owned.schedule(loop, [&] { ++gone; }, "test-retry"));
	}
	ASSERT_TRUE(retry.schedule(loop, [&] { ++first; }, "test-retry"));   // 4 ms
	retry.cancel();                                                        // dropped, count kept
	EXPECT_EQ(retry.failures(), 3u);
	ASSERT_EQ(retry.schedule(loop, [&] { ++last; }, "test-retry"), Backoff::Delay(8ms));
	ASSERT_TRUE(runUntil(loop, [&] { return last == 1; }));
	EXPECT_EQ(gone, 0);    // due 7 ms before: its owner took it along
	EXPECT_EQ(first, 0);   // due 4 ms before: cancelled
}
