// JSON-RPC helpers: typed params with errors naming the param, the depth-limited parser, and
// serialization that never throws on invalid UTF-8.

#include <qsd/protocol/jsonrpc.hpp>

#include <gtest/gtest.h>

#include <string>

using namespace qsd::rpc;
using json = nlohmann::json;

namespace {

// Runs f, which must throw an InvalidParams RpcException naming `param`.
template <typename F>
void expectInvalid(F&& f, const char* param, const char* expected = nullptr) {
	try {
		f();
		FAIL() << "no exception for " << param;
	} catch (const RpcException& e) {
		EXPECT_EQ(e.error.code, ErrorCode::InvalidParams);
		EXPECT_EQ(e.error.data["param"], param);
		if (expected) {
			EXPECT_EQ(e.error.data["expected"], expected);
		}
		EXPECT_NE(e.error.message.find(param), std::string::npos) << e.error.message;
	}
}

} // namespace

TEST(JsonRpc, ParamsTypedAccess) {
	json j = {{"s", "x"}, {"b", true}, {"n", 1.5}, {"i", 42}, {"f", 3.0}, {"o", {{"k", 1}}}, {"a", {1, 2}}, {"z", nullptr}};
	Params p(j);
	EXPECT_EQ(p.string("s"), "x");
	EXPECT_TRUE(p.boolean("b"));
	EXPECT_DOUBLE_EQ(p.number("n"), 1.5);
	EXPECT_EQ(p.integer("i"), 42);
	EXPECT_EQ(p.integer("f"), 3);   // an integral float is an integer
	EXPECT_EQ(p.object("o")["k"], 1);
	EXPECT_EQ(p.array("a").size(), 2u);
	EXPECT_TRUE(p.has("z"));
	EXPECT_FALSE(p.has("missing"));
	EXPECT_EQ(p.optString("z"), std::nullopt);   // null is absent for optionals
	EXPECT_EQ(p.optString("missing"), std::nullopt);
	EXPECT_EQ(p.optInteger("i"), 42);
	EXPECT_EQ(p.optBoolean("missing"), std::nullopt);
	EXPECT_EQ(p.optNumber("n"), 1.5);
	EXPECT_TRUE(p.any("z").is_null());
}

TEST(JsonRpc, ParamsErrorsNameTheParam) {
	json j = {{"s", 1}, {"b", "true"}, {"n", "1"}, {"i", 1.5}, {"big", 18446744073709551615ull}, {"o", json::array()},
	          {"a", json::object()}};
	Params p(j);
	expectInvalid([&] { (void)p.string("s"); }, "s", "a string");
	expectInvalid([&] { (void)p.string("missing"); }, "missing", "a string");
	expectInvalid([&] { (void)p.optString("s"); }, "s", "a string");
	expectInvalid([&] { (void)p.boolean("b"); }, "b", "a boolean");
	expectInvalid([&] { (void)p.optBoolean("b"); }, "b", "a boolean");
	expectInvalid([&] { (void)p.number("n"); }, "n", "a number");
	expectInvalid([&] { (void)p.integer("i"); }, "i", "an integer");
	expectInvalid([&] { (void)p.optInteger("i"); }, "i", "an integer");
	expectInvalid([&] { (void)p.integer("big"); }, "big", "an integer");
	expectInvalid([&] { (void)p.object("o"); }, "o", "an object");
	expectInvalid([&] { (void)p.array("a"); }, "a", "an array");
	expectInvalid([&] { (void)p.any("missing"); }, "missing", "present");
	// Params that are not an object have no members.
	json arr = {1, 2};
	Params q(arr);
	EXPECT_FALSE(q.has("0"));
	expectInvalid([&] { (void)q.string("path"); }, "path");
}

TEST(JsonRpc, IntegerBounds) {
	json j = {{"neg", -5}, {"huge", 1e300}, {"nan", std::nan("")}, {"max", 9007199254740991.0}, {"i64", INT64_MAX}};
	Params p(j);
	EXPECT_EQ(p.integer("neg"), -5);
	EXPECT_EQ(p.integer("i64"), INT64_MAX);
	expectInvalid([&] { (void)p.integer("huge"); }, "huge");
	expectInvalid([&] { (void)p.integer("nan"); }, "nan");
	expectInvalid([&] { (void)p.integer("max"); }, "max");   // beyond the exactly-representable range we accept
}

TEST(JsonRpc, ParseAndDepthLimit) {
	EXPECT_TRUE(parse(R"({"a":[1,{"b":2}]})").has_value());
	EXPECT_FALSE(parse("{").has_value());
	EXPECT_FALSE(parse("").has_value());
	EXPECT_FALSE(parse("{} {}").has_value());
	std::string deep = std::string(10, '[') + std::string(10, ']');
	EXPECT_TRUE(parse(deep, 10).has_value());
	EXPECT_FALSE(parse(deep, 9).has_value());
	// Far beyond any stack: refused before parsing, no recursion.
	std::string veryDeep = std::string(1000000, '[') + std::string(1000000, ']');
	EXPECT_FALSE(parse(veryDeep).has_value());
	EXPECT_FALSE(parse(std::string(1000000, '{')).has_value());
	// Brackets inside strings do not count; escaped quotes do not end a string.
	EXPECT_EQ(nestingDepth(R"({"a":"[[[[{{{{"})"), 1u);
	EXPECT_EQ(nestingDepth(R"({"a":"\"[[[["})"), 1u);
	EXPECT_EQ(nestingDepth(R"(["\\",[[]]])"), 3u);
	EXPECT_EQ(nestingDepth("]]]][["), 2u);
	// Invalid UTF-8 is not JSON.
	EXPECT_FALSE(parse("\"\xff\"").has_value());
	EXPECT_FALSE(parse(R"("\ud800")").has_value());
	EXPECT_TRUE(parse(R"("\ud83d\ude00")").has_value());
}

TEST(JsonRpc, ToLineNeverThrowsOnInvalidUtf8) {
	json j = {{"s", std::string("a\xff\xfe" "b\xc3")}, {std::string("k\x80"), 1}};
	std::string line;
	ASSERT_NO_THROW(line = toLine(j));
	ASSERT_FALSE(line.empty());
	EXPECT_EQ(line.back(), '\n');
	EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);
	// The output is valid UTF-8 JSON: a strict parse succeeds, bad bytes became U+FFFD.
	json back;
	ASSERT_NO_THROW(back = json::parse(line));
	EXPECT_EQ(back["s"], "a\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD");
	EXPECT_TRUE(back.contains("k\xEF\xBF\xBD"));
	EXPECT_NO_THROW((void)dump(j));
	// Newlines inside strings are escaped: one message is one line.
	EXPECT_EQ(toLine(json("a\nb")), "\"a\\nb\"\n");
}

TEST(JsonRpc, MessageShapes) {
	EXPECT_EQ(makeRequest(1, "hello"), (json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "hello"}}));
	EXPECT_EQ(makeRequest("x", "m", {{"a", 1}})["params"]["a"], 1);
	EXPECT_FALSE(makeNotification("tree.changed").contains("id"));
	EXPECT_EQ(makeResult(nullptr, 5), (json{{"jsonrpc", "2.0"}, {"result", 5}, {"id", nullptr}}));
	auto e = makeError(7, {ErrorCode::NotFound, "", nullptr});
	EXPECT_EQ(e["error"]["code"], -32001);
	EXPECT_EQ(e["error"]["message"], "Not found");   // the default message
	EXPECT_FALSE(e["error"].contains("data"));         // null data is left out
	auto d = Error{ErrorCode::InvalidParams, "bad", {{"param", "x"}}}.toJson();
	EXPECT_EQ(d["data"]["param"], "x");
	EXPECT_EQ(d["message"], "bad");
	for (auto code: {ErrorCode::ParseError, ErrorCode::InvalidRequest, ErrorCode::MethodNotFound, ErrorCode::InvalidParams,
	                 ErrorCode::InternalError, ErrorCode::BackendUnavailable, ErrorCode::NotFound, ErrorCode::BackendFailed,
	                 ErrorCode::LimitExceeded, ErrorCode::PermissionDenied})
		EXPECT_STRNE(defaultMessage(code), "Error");
}

// An answer assembled as text (tree.get, tree.subscribe: written from the tree) is the text of
// the answer a json result would have given.
TEST(JsonRpc, ResultTextIsWhatTheResultsMessageDumps) {
	json result = {{"revision", 7}, {"value", {{"b", "x\xff"}, {"a", json::array({1, 2.5, nullptr})}}}};
	std::string text;
	JsonWriter(text).raw(R"({"revision":)").value(7).raw(R"(,"value":)").value(result["value"]).raw("}");
	EXPECT_EQ(text, dump(result));
	for (const json& id: {json(1), json("req-\"1\""), json(nullptr), json(-3)})
		EXPECT_EQ(resultHead(id) + text + "}", dump(makeResult(id, result))) << id;
	std::string keyed;
	JsonWriter(keyed).raw("{").key("p\"é\xfe").value(true).raw("}");
	EXPECT_EQ(keyed, dump(json{{"p\"é\xfe", true}}));
}

// JsonWriter copies plain strings and member names as they are and leaves the rest to
// nlohmann's serializer: every kind of value, and every byte a string can hold, comes out as
// dump() writes it.
TEST(JsonRpc, WriterTextIsWhatDumpWritesForEveryKindOfValue) {
	std::string everyByte;
	for (int c = 0; c < 256; ++c) everyByte.push_back(char(c));
	std::vector<json> values = {
	    nullptr, true, false, 0, -1, 42u, 18446744073709551615u, -9223372036854775807 - 1, 0.1, 1e300, -0.0, 2.5,
	    "", "plain text: paths /usr/share/icons, data:image/png;base64,iVBORw0KGgo=", "quote \" and \\ backslash",
	    "tab\tnewline\ncr\rbell\x07nul", std::string("nul\0inside", 10), "del \x7f", "é ü 日本 🎵", "bad \xff\xfe utf-8",
	    "truncated \xe6\x97", everyByte, json::object(), json::array(), json::array({json::object(), json::array()}),
	    json{{"b", 1}, {"a", {{"nested", json::array({"x", 2, nullptr, {{"k\n", "v\""}}})}}}, {"\x01", everyByte}},
	};
	for (const auto& v: values) {
		std::string text;
		JsonWriter(text).value(v);
		EXPECT_EQ(text, dump(v)) << dump(v);
	}
	std::string all;
	JsonWriter(all).value(json(values));
	EXPECT_EQ(all, dump(json(values)));
	for (int c = 0; c < 256; ++c) {
		std::string name = "k" + std::string(1, char(c));
		std::string keyed;
		JsonWriter(keyed).raw("{").key(name).value(c).raw("}");
		EXPECT_EQ(keyed, dump(json{{name, c}})) << c;
	}
}
