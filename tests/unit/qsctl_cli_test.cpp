// qsctl's pure parts: PATH normalisation, `call` argument parsing, value formatting, the
// describe/status renderers, the restart hold of `watch --reconnect` and the `--jq` filter (the
// socket side is covered by tests/integration/test_qsctl.py).

#include "hold.hpp"
#include "jqfilter.hpp"
#include "params.hpp"
#include "render.hpp"

#include <gtest/gtest.h>

using qsctl::json;

namespace {

json params(std::vector<std::string> args, const char* option = nullptr) {
	std::string error;
	auto p = qsctl::buildParams(option ? option : "", option != nullptr, args, error);
	EXPECT_TRUE(p.has_value()) << error;
	return p ? *p : json("error");
}

std::string paramsError(std::vector<std::string> args, const char* option = nullptr) {
	std::string error;
	auto p = qsctl::buildParams(option ? option : "", option != nullptr, args, error);
	EXPECT_FALSE(p.has_value());
	return error;
}

} // namespace

TEST(QsctlParams, NormalizePath) {
	EXPECT_EQ(qsctl::normalizePath(""), "");
	EXPECT_EQ(qsctl::normalizePath("/"), "");
	EXPECT_EQ(qsctl::normalizePath("/network/wifiEnabled"), "/network/wifiEnabled");
	EXPECT_EQ(qsctl::normalizePath("network/wifiEnabled"), "/network/wifiEnabled");
	EXPECT_EQ(qsctl::normalizePath("a~1b"), "/a~1b");
}

TEST(QsctlParams, ValuesAreJsonWhenTheyParse) {
	EXPECT_EQ(params({"enabled=true"}), (json{{"enabled", true}}));
	EXPECT_EQ(params({"volume=0.5"}), (json{{"volume", 0.5}}));
	EXPECT_EQ(params({"list=[1,\"a\"]"}), (json{{"list", {1, "a"}}}));
	EXPECT_EQ(params({"name=Home Wifi"}), (json{{"name", "Home Wifi"}}));
	EXPECT_EQ(params({"name=\"Home\""}), (json{{"name", "Home"}}));
	EXPECT_EQ(params({"empty="}), (json{{"empty", ""}}));
	EXPECT_EQ(params({"eq=a=b"}), (json{{"eq", "a=b"}}));
	EXPECT_EQ(params({"x=nul"}), (json{{"x", "nul"}}));
	EXPECT_EQ(params({"x=null"}), (json{{"x", nullptr}}));
}

TEST(QsctlParams, ForcedForms) {
	EXPECT_EQ(params({"ssid==1234"}), (json{{"ssid", "1234"}}));
	EXPECT_EQ(params({"ssid==true"}), (json{{"ssid", "true"}}));
	EXPECT_EQ(params({"ssid==="}), (json{{"ssid", "="}}));
	EXPECT_EQ(params({"n:=12"}), (json{{"n", 12}}));
	EXPECT_EQ(params({"o:={\"a\":1}"}), (json{{"o", {{"a", 1}}}}));
	EXPECT_NE(paramsError({"o:={"}).find("not valid JSON"), std::string::npos);
	EXPECT_NE(paramsError({"o:=word"}).find("'o'"), std::string::npos);
}

TEST(QsctlParams, ParamsOptionAndOverrides) {
	EXPECT_EQ(params({}), json());   // no params member at all
	EXPECT_EQ(params({}, "{\"a\":1}"), (json{{"a", 1}}));
	EXPECT_EQ(params({"a=2", "b=x"}, "{\"a\":1}"), (json{{"a", 2}, {"b", "x"}}));
	EXPECT_EQ(params({"a=1", "a=2"}), (json{{"a", 2}}));
	EXPECT_EQ(params({}, "[1,2]"), (json{1, 2}));
	paramsError({"a=1"}, "[1]");
	paramsError({}, "1");
	paramsError({}, "{");
	paramsError({"novalue"});
	paramsError({"=1"});
	paramsError({":=1"});
}

TEST(QsctlParams, Count) {
	EXPECT_EQ(qsctl::parseCount("10"), 10);
	EXPECT_EQ(qsctl::parseCount("0"), 0);
	EXPECT_FALSE(qsctl::parseCount("-1"));
	EXPECT_FALSE(qsctl::parseCount("1x"));
	EXPECT_FALSE(qsctl::parseCount(""));
}

TEST(QsctlRender, FormatValue) {
	using qsctl::Style;
	EXPECT_EQ(qsctl::formatValue("a \"b\"", Style::Raw), "a \"b\"\n");
	EXPECT_EQ(qsctl::formatValue("a", Style::Compact), "\"a\"\n");
	EXPECT_EQ(qsctl::formatValue(42, Style::Raw), "42\n");
	EXPECT_EQ(qsctl::formatValue(0.5, Style::Raw), "0.5\n");
	EXPECT_EQ(qsctl::formatValue(true, Style::Raw), "true\n");
	EXPECT_EQ(qsctl::formatValue(nullptr, Style::Raw), "null\n");
	EXPECT_EQ(qsctl::formatValue(json{{"b", 1}, {"a", {1, 2}}}, Style::Raw), "{\"a\":[1,2],\"b\":1}\n");
	EXPECT_EQ(qsctl::formatValue(json{{"a", 1}}, Style::Pretty), "{\n  \"a\": 1\n}\n");
	// Bytes that are not UTF-8 (an SSID) never make qsctl throw.
	EXPECT_EQ(qsctl::formatValue(std::string("x\xff"), Style::Compact), "\"x\xEF\xBF\xBD\"\n");
}

TEST(QsctlRender, TimesAndDurations) {
	EXPECT_EQ(qsctl::parseRfc3339("1970-01-01T00:00:10Z"), 10.0);
	EXPECT_DOUBLE_EQ(*qsctl::parseRfc3339("2026-12-03T08:24:01.507Z"), 1796286241.507);
	EXPECT_FALSE(qsctl::parseRfc3339("2026-12-03 08:24:01"));
	EXPECT_FALSE(qsctl::parseRfc3339("garbage"));
	EXPECT_EQ(qsctl::formatDuration(0), "0s");
	EXPECT_EQ(qsctl::formatDuration(59.9), "59s");
	EXPECT_EQ(qsctl::formatDuration(3725), "1h 2m 5s");
	EXPECT_EQ(qsctl::formatDuration(90061), "1d 1h 1m");
	EXPECT_EQ(qsctl::formatDuration(-5), "0s");
}

namespace {

const json DOC = json::parse(R"({
  "openrpc": "1.2.6",
  "methods": [
    {"name": "hello", "summary": "Greets"},
    {"name": "audio.setVolume", "summary": "Sets a node's volume",
     "description": "Changes the volume.\nThe new state arrives through the tree.",
     "params": [
       {"name": "node", "required": true, "schema": {"type": "string"}, "description": "A node id"},
       {"name": "volume", "required": true, "schema": {"type": "number", "minimum": 0, "maximum": 1.5}},
       {"name": "mode", "schema": {"enum": ["linear", "cubic"]}}
     ],
     "result": {"name": "result", "schema": {"$ref": "#/components/schemas/Ack"}},
     "errors": [{"$ref": "#/components/errors/NotFound"}, {"code": -32000, "message": "Backend unavailable"}]},
    {"name": "audio.setMuted", "summary": "Mutes"}
  ],
  "components": {
    "schemas": {"Ack": {"type": "object", "required": ["node"],
                        "properties": {"node": {"type": "string"}, "revision": {"type": "integer"}}}},
    "errors": {"NotFound": {"code": -32001, "message": "Not found"}}
  },
  "x-events": [{"name": "network.connectionFailed", "summary": "A connection attempt failed",
                "data": {"type": "object", "required": ["device"],
                         "properties": {"device": {"type": "string", "description": "The device id"}}}}]
})");

} // namespace

TEST(QsctlRender, DescribeAll) {
	auto out = qsctl::describeAll(DOC);
	EXPECT_NE(out.find("  hello            Greets\n"), std::string::npos) << out;
	EXPECT_NE(out.find("  audio.setVolume  Sets a node's volume\n"), std::string::npos) << out;
	EXPECT_NE(out.find("network.connectionFailed  A connection attempt failed"), std::string::npos) << out;
	EXPECT_EQ(qsctl::describePrefix(DOC, "audio."), "audio.setVolume  Sets a node's volume\naudio.setMuted   Mutes\n");
	EXPECT_EQ(qsctl::describePrefix(DOC, "nothing."), "");
}

TEST(QsctlRender, DescribeMethod) {
	EXPECT_FALSE(qsctl::describeMethod(DOC, "nope"));
	auto out = *qsctl::describeMethod(DOC, "audio.setVolume");
	EXPECT_EQ(out.rfind("audio.setVolume - Sets a node's volume\n", 0), 0u) << out;
	EXPECT_NE(out.find("  Changes the volume.\n  The new state arrives through the tree.\n"), std::string::npos) << out;
	EXPECT_NE(out.find("  node    string            A node id\n"), std::string::npos) << out;
	EXPECT_NE(out.find("  volume  number (0..1.5)\n"), std::string::npos) << out;
	EXPECT_NE(out.find("  mode    \"linear\"|\"cubic\"  (optional)\n"), std::string::npos) << out;
	EXPECT_NE(out.find("Result: Ack\n"), std::string::npos) << out;
	EXPECT_NE(out.find("  revision  integer  (optional)\n"), std::string::npos) << out;
	EXPECT_NE(out.find("  -32001  Not found\n"), std::string::npos) << out;
	EXPECT_NE(out.find("  -32000  Backend unavailable\n"), std::string::npos) << out;
	EXPECT_NE(out.find("Usage: qsctl call audio.setVolume node=VALUE volume=VALUE [mode=VALUE]\n"), std::string::npos) << out;
	auto hello = *qsctl::describeMethod(DOC, "hello");
	EXPECT_NE(hello.find("Params:\n  (none)\n"), std::string::npos) << hello;
}

TEST(QsctlRender, Status) {
	json daemon = {{"version", "0.1.0"},
	               {"protocol", 1},
	               {"pid", 42},
	               {"epoch", "abc"},
	               {"startedAt", "1970-01-01T00:00:00Z"},
	               {"clients", 3},
	               {"backends",
	                {{"nm", {{"state", "running"}, {"since", "1970-01-01T00:00:01Z"}, {"error", nullptr}}},
	                 {"upower", {{"state", "failed"}, {"since", "1970-01-01T00:01:00Z"}, {"error", "no bus"}}}}}};
	auto out = qsctl::renderStatus(daemon, 7, 3661);
	EXPECT_EQ(out,
	          "qsd 0.1.0, protocol 1, pid 42\n"
	          "epoch     abc (revision 7)\n"
	          "started   1970-01-01T00:00:00Z (up 1h 1m 1s)\n"
	          "clients   3\n"
	          "backends\n"
	          "  nm      running  since 1970-01-01T00:00:01Z (1h 1m 0s)\n"
	          "  upower  failed   since 1970-01-01T00:01:00Z (1h 0m 1s): no bus\n");
	daemon["backends"] = json::object();
	EXPECT_NE(qsctl::renderStatus(daemon, nullptr, 0).find("backends  none\n"), std::string::npos);
}

TEST(QsctlRender, DescribeError) {
	EXPECT_EQ(qsctl::describeError({{"code", -32001}, {"message", "No value at /x"}, {"data", {{"path", "/x"}}}}),
	          "No value at /x (code -32001): {\"path\":\"/x\"}");
	EXPECT_EQ(qsctl::describeError({{"code", -32601}, {"message", "Method not found"}}), "Method not found (code -32601)");
}

TEST(QsctlRender, DescribeEvent) {
	EXPECT_FALSE(qsctl::describeEvent(DOC, "audio.setVolume"));
	auto out = *qsctl::describeEvent(DOC, "network.connectionFailed");
	EXPECT_EQ(out,
	          "network.connectionFailed (event) - A connection attempt failed\n"
	          "\n"
	          "Data: object\n"
	          "  device  string  The device id\n");
}

TEST(QsctlRender, LongTextIsFilled) {
	std::string words;
	for (int i = 0; i < 60; ++i) words += "word" + std::to_string(i) + " ";
	json doc = {{"methods", {{{"name", "m"}, {"summary", words}, {"description", words},
	                          {"params", {{{"name", "p"}, {"schema", {{"type", "string"}}}, {"description", words}}}}}}}};
	for (const auto& text: {qsctl::describeAll(doc), *qsctl::describeMethod(doc, "m")}) {
		size_t start = 0, lines = 0;
		while (start < text.size()) {
			auto nl = text.find('\n', start);
			EXPECT_LE(nl - start, 100u) << text.substr(start, nl - start);
			start = nl + 1;
			++lines;
		}
		EXPECT_GT(lines, 6u) << text;
	}
	// Continuation lines line up under their column.
	auto all = qsctl::describeAll(doc);
	EXPECT_NE(all.find("\n     word"), std::string::npos) << all;
}

// ---- watch --reconnect: the restart hold ------------------------------------------------------

namespace {

// /daemon/backends as a new daemon reports it; `since` 2026-12-03T08:24:01.000Z is 1796286241.
json backends(std::initializer_list<std::pair<const char*, const char*>> states) {
	json out = json::object();
	for (const auto& [id, state]: states)
		out[id] = {{"state", state}, {"since", "2026-12-03T08:24:01.000Z"}, {"error", nullptr}};
	return out;
}
constexpr double kSince = 1796286241.0;

} // namespace

TEST(QsctlHold, BackendsOfPaths) {
	EXPECT_EQ(qsctl::backendOfDomain("network"), "nm");
	EXPECT_EQ(qsctl::backendOfDomain("audio"), "pipewire");
	EXPECT_EQ(qsctl::backendOfDomain("daemon"), "");
	EXPECT_EQ(qsctl::backendsOfPath("/power/displayDevice/percentage"), std::vector<std::string>{"upower"});
	EXPECT_EQ(qsctl::backendsOfPath("/wayland"), std::vector<std::string>{"wayland"});
	EXPECT_TRUE(qsctl::backendsOfPath("/daemon/backends").empty());
	EXPECT_TRUE(qsctl::backendsOfPath("/debug/x").empty());
	EXPECT_TRUE(qsctl::backendsOfPath("/networks").empty());   // a domain is a whole token
	EXPECT_EQ(qsctl::backendsOfPath("").size(), 8u);           // the whole tree: every backend
	EXPECT_EQ(qsctl::backendsOfPath("/media/active"), std::vector<std::string>{"mpris"});
}

TEST(QsctlHold, HoldsAPathWhileItsBackendStarts) {
	qsctl::RestartHold hold(1000);
	auto b = backends({{"upower", "starting"}, {"nm", "running"}});
	hold.start({"/power/onBattery", "/network/wifiEnabled", "/daemon/version"}, &b, kSince + 0.2, 5000);
	EXPECT_TRUE(hold.held("/power/onBattery"));
	EXPECT_FALSE(hold.held("/network/wifiEnabled"));   // its backend is running
	EXPECT_FALSE(hold.held("/daemon/version"));        // no backend writes /daemon
	// The grace runs from the backend's `since`: 200 ms of it are gone.
	EXPECT_EQ(hold.timeoutMs(5000), 800);
	EXPECT_FALSE(hold.update(&b, 5100));
	EXPECT_EQ(hold.timeoutMs(5100), 700);

	// Running: released at once.
	b["upower"]["state"] = "running";
	EXPECT_TRUE(hold.update(&b, 5200));
	EXPECT_FALSE(hold.any());
	EXPECT_EQ(hold.timeoutMs(5200), -1);
}

TEST(QsctlHold, AnyStateButStartingEndsTheHold) {
	for (const char* state: {"running", "unavailable", "failed", "stopped"}) {
		qsctl::RestartHold hold(1000);
		auto b = backends({{"pipewire", "starting"}});
		hold.start({"/audio"}, &b, kSince, 0);
		ASSERT_TRUE(hold.held("/audio"));
		b["pipewire"]["state"] = state;
		EXPECT_TRUE(hold.update(&b, 10)) << state;
		EXPECT_FALSE(hold.held("/audio")) << state;
	}
}

TEST(QsctlHold, TheGracePeriodEnds) {
	qsctl::RestartHold hold(1000);
	auto b = backends({{"nm", "starting"}});
	hold.start({"/network"}, &b, kSince, 0);
	EXPECT_EQ(hold.timeoutMs(0), 1000);
	EXPECT_FALSE(hold.update(&b, 999));
	EXPECT_TRUE(hold.update(&b, 1000));
	EXPECT_FALSE(hold.held("/network"));

	// A backend that has been starting for longer than the grace is not waited for at all.
	hold.start({"/network"}, &b, kSince + 1.5, 0);
	EXPECT_FALSE(hold.any());
	// A clock behind the daemon's counts as no time gone.
	hold.start({"/network"}, &b, kSince - 3, 0);
	EXPECT_EQ(hold.timeoutMs(0), 1000);
}

TEST(QsctlHold, NothingIsHeldWithoutAReasonToWait) {
	auto b = backends({{"nm", "starting"}});
	qsctl::RestartHold off(0);
	off.start({"/network"}, &b, kSince, 0);
	EXPECT_FALSE(off.any());
	qsctl::RestartHold hold(1000);
	hold.start({"/audio"}, &b, kSince, 0);   // the daemon does not run a PipeWire backend
	EXPECT_FALSE(hold.any());
	hold.start({"/network"}, nullptr, kSince, 0);   // backend states unknown
	EXPECT_FALSE(hold.any());
	json broken = {{"nm", {{"state", 3}}}};
	hold.start({"/network"}, &broken, kSince, 0);
	EXPECT_FALSE(hold.any());
}

TEST(QsctlHold, TheWholeTreeWaitsForEveryBackend) {
	qsctl::RestartHold hold(1000);
	auto b = backends({{"nm", "starting"}, {"upower", "starting"}, {"tray", "running"}});
	hold.start({""}, &b, kSince, 0);
	EXPECT_TRUE(hold.held(""));
	b["nm"]["state"] = "running";
	EXPECT_FALSE(hold.update(&b, 1));
	EXPECT_TRUE(hold.held(""));
	b["upower"]["state"] = "unavailable";
	EXPECT_TRUE(hold.update(&b, 2));
	EXPECT_FALSE(hold.held(""));
}

// ---- watch --jq ---------------------------------------------------------------------------

namespace {

std::unique_ptr<qsctl::JqFilter> jq(const std::string& program) {
	std::string error;
	auto f = qsctl::JqFilter::compile(program, error);
	EXPECT_TRUE(f) << error;
	return f;
}

} // namespace

TEST(QsctlJq, PrintsEachOutputAsJqDoes) {
	if (!qsctl::JqFilter::available()) GTEST_SKIP() << "built without libjq";
	auto f = jq(R"({text: "\(.percentage * 100 | round)%", class: .state}, .percentage, .state)");
	json battery = {{"percentage", 0.875}, {"state", "discharging"}};
	auto r = f->run(battery, false);
	EXPECT_TRUE(r.errors.empty());
	EXPECT_EQ(r.outputs, (std::vector<std::string>{R"({"text":"88%","class":"discharging"})", "0.875", R"("discharging")"}));
	// --raw: strings as they are (jq -r); everything else is still JSON.
	r = f->run(battery, true);
	EXPECT_EQ(r.outputs, (std::vector<std::string>{R"({"text":"88%","class":"discharging"})", "0.875", "discharging"}));
	// A string with a newline stays one output; the caller adds the line end.
	EXPECT_EQ(jq(R"("a\nb")")->run(nullptr, true).outputs, std::vector<std::string>{"a\nb"});
	EXPECT_EQ(jq(R"("a\nb")")->run(nullptr, false).outputs, std::vector<std::string>{R"("a\nb")"});
	// No output at all.
	EXPECT_TRUE(jq("empty")->run(battery, false).outputs.empty());
	// Unicode passes through.
	EXPECT_EQ(jq(".")->run("Café 直", true).outputs, std::vector<std::string>{"Café 直"});
}

TEST(QsctlJq, RuntimeErrorsAreReportedAndTheOutputsBeforeThemKept) {
	if (!qsctl::JqFilter::available()) GTEST_SKIP() << "built without libjq";
	auto f = jq(R"(.a, (.b * 100), .c)");
	auto r = f->run({{"a", 1}, {"b", nullptr}, {"c", 3}}, false);
	EXPECT_EQ(r.outputs, std::vector<std::string>{"1"});
	ASSERT_EQ(r.errors.size(), 1u);
	EXPECT_EQ(r.errors[0], "jq: error: null (null) and number (100) cannot be multiplied");
	// The same filter runs again on the next value.
	r = f->run({{"a", 1}, {"b", 2}, {"c", 3}}, false);
	EXPECT_TRUE(r.errors.empty());
	EXPECT_EQ(r.outputs, (std::vector<std::string>{"1", "200", "3"}));
	// error() with a non-string, and halt_error's message as it is.
	EXPECT_EQ(jq(R"(error({a: 1}))")->run(nullptr, false).errors,
	          std::vector<std::string>{R"(jq: error: {"a":1} (not a string))"});
	EXPECT_EQ(jq(R"("stop\n" | halt_error)")->run(nullptr, false).errors, std::vector<std::string>{"stop"});
	r = jq("1, halt, 2")->run(nullptr, false);
	EXPECT_EQ(r.outputs, std::vector<std::string>{"1"});
	EXPECT_TRUE(r.errors.empty());
	// The value is the only input.
	r = jq("input")->run(1, false);
	EXPECT_TRUE(r.outputs.empty());
	EXPECT_EQ(r.errors.size(), 1u);   // as `jq -n input` says it
	EXPECT_EQ(jq("[., inputs]")->run(1, false).outputs, std::vector<std::string>{"[1]"});
	// After a halt the next run starts afresh.
	auto h = jq("if . then halt else 7 end");
	EXPECT_TRUE(h->run(true, false).outputs.empty());
	EXPECT_EQ(h->run(false, false).outputs, std::vector<std::string>{"7"});
}

TEST(QsctlJq, AProgramThatDoesNotCompileIsRefusedWithJqsMessage) {
	if (!qsctl::JqFilter::available()) GTEST_SKIP() << "built without libjq";
	std::string error;
	EXPECT_FALSE(qsctl::JqFilter::compile(".a |||", error));
	EXPECT_NE(error.find("syntax error"), std::string::npos) << error;
	EXPECT_NE(error.find("compile error"), std::string::npos) << error;
	EXPECT_FALSE(qsctl::JqFilter::compile("nosuchfunction(1)", error));
	EXPECT_NE(error.find("nosuchfunction/1 is not defined"), std::string::npos) << error;
}
