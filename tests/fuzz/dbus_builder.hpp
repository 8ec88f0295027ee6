#pragma once
// Builds D-Bus messages out of a fuzzer's input, for the targets that read what peers send:
// sd-bus appends every value, so each message is well-formed D-Bus (what the bus delivers) of
// any shape the input picks. A target derives from ValueBuilder to add the structs of its own
// interface (customValue) and keeps the rest.

#include <fuzzer/FuzzedDataProvider.h>
#include <sdbus-c++/sdbus-c++.h>
#include <systemd/sd-bus.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace sdbus {
// Exported by libsdbus-c++ (a message on a pseudo connection, as its Variant uses), not declared
// in its public headers.
PlainMessage createPlainMessage();
} // namespace sdbus

namespace qsd::fuzz {

// The sd_bus_message under an sdbus::Message (as the readers reach it).
struct Raw: sdbus::Message {
	static sd_bus_message* of(const sdbus::Message& m) { return static_cast<sd_bus_message*>(m.*(&Raw::msg_)); }
};

// A broken invariant: the target stops, and libFuzzer keeps the input that did it.
[[noreturn]] inline void die(const char* target, const std::string& what) {
	std::fprintf(stderr, "%s: %s\n", target, what.c_str());
	std::abort();
}

// sd-bus refuses what no peer could send either (a message over its size limit, nesting past its
// depth, a string that is not UTF-8): that input is skipped.
struct Unbuildable {};
inline void ok(int r) {
	if (r < 0) throw Unbuildable{};
}

// A message of the given content, sealed and rewound for reading.
inline sdbus::PlainMessage sealed(const std::function<void(sd_bus_message*)>& fill) {
	auto msg = sdbus::createPlainMessage();
	fill(Raw::of(msg));
	msg.seal();
	msg.rewind(true);
	return msg;
}

class ValueBuilder {
public:
	// `types`: the signatures a variant may hold; `path`: the object path an 'o' mostly is.
	ValueBuilder(FuzzedDataProvider& in, std::vector<std::string> types, std::string path)
	    : in_(in), types_(std::move(types)), path_(std::move(path)) {}
	virtual ~ValueBuilder() = default;
	ValueBuilder(const ValueBuilder&) = delete;
	ValueBuilder& operator=(const ValueBuilder&) = delete;

	// Text of any characters: the input's bytes, each one above ASCII made a character of one
	// to four bytes (the bus carries valid UTF-8 only, and sd-bus refuses to append anything
	// else, so raw bytes would mostly build nothing).
	std::string text(size_t max = 64) {
		std::string raw = in_.ConsumeRandomLengthString(max), out;
		for (unsigned char c: raw) {
			if (c < 0x80) {
				out += char(c);
				continue;
			}
			// 0x80..0xFF spread over U+0080..U+10FFFF, surrogates moved past.
			uint32_t cp = 0x80 + (c - 0x80) * 0x2200;
			if (cp >= 0xD800 && cp <= 0xDFFF) cp += 0x800;
			if (cp < 0x800) {
				out += char(0xC0 | (cp >> 6));
			} else if (cp < 0x10000) {
				out += char(0xE0 | (cp >> 12));
				out += char(0x80 | ((cp >> 6) & 0x3F));
			} else {
				out += char(0xF0 | (cp >> 18));
				out += char(0x80 | ((cp >> 12) & 0x3F));
				out += char(0x80 | ((cp >> 6) & 0x3F));
			}
			out += char(0x80 | (cp & 0x3F));
		}
		return out;
	}
	size_t count(size_t max) { return in_.ConsumeIntegralInRange<size_t>(0, max); }

	// A value of type `sig`, depth-limited: the basic types but h, ay, ai, as, aas, ao, a{sv},
	// aa{sv}, a{ss}, v, and what customValue adds.
	void value(sd_bus_message* m, const std::string& sig, int depth) {
		if (customValue(m, sig, depth)) return;
		// A string is sometimes kilobytes long, past the bounds texts are cut to.
		if (sig == "s") {
			std::string s = in_.ConsumeIntegralInRange(0, 31) ? std::string() : longRun();
			s += text();
			ok(sd_bus_message_append_basic(m, 's', s.c_str()));
		} else if (sig == "b") {
			int b = in_.ConsumeBool();
			ok(sd_bus_message_append_basic(m, 'b', &b));
		} else if (sig == "i") integer<int32_t>(m, 'i');
		else if (sig == "u") integer<uint32_t>(m, 'u');
		else if (sig == "x") integer<int64_t>(m, 'x');
		else if (sig == "t") integer<uint64_t>(m, 't');
		else if (sig == "n") integer<int16_t>(m, 'n');
		else if (sig == "q") integer<uint16_t>(m, 'q');
		else if (sig == "y") integer<uint8_t>(m, 'y');
		else if (sig == "d") {
			double v = in_.ConsumeFloatingPoint<double>();
			ok(sd_bus_message_append_basic(m, 'd', &v));
		} else if (sig == "o") ok(sd_bus_message_append_basic(m, 'o', in_.ConsumeBool() ? path_.c_str() : "/"));
		else if (sig == "g") ok(sd_bus_message_append_basic(m, 'g', "a{sv}"));
		else if (sig == "ay") bytes(m);
		else if (sig == "v") variant(m, depth + 1);
		else if (sig == "a{sv}") {
			ok(sd_bus_message_open_container(m, 'a', "{sv}"));
			for (size_t n = depth > 3 ? 0 : count(4); n > 0; --n) {
				ok(sd_bus_message_open_container(m, 'e', "sv"));
				ok(sd_bus_message_append_basic(m, 's', text().c_str()));
				variant(m, depth + 1);
				ok(sd_bus_message_close_container(m));
			}
			ok(sd_bus_message_close_container(m));
		}
		else if (sig == "a{ss}") {
			ok(sd_bus_message_open_container(m, 'a', "{ss}"));
			for (size_t n = depth > 3 ? 0 : count(4); n > 0; --n) {
				ok(sd_bus_message_open_container(m, 'e', "ss"));
				ok(sd_bus_message_append_basic(m, 's', text().c_str()));
				ok(sd_bus_message_append_basic(m, 's', text().c_str()));
				ok(sd_bus_message_close_container(m));
			}
			ok(sd_bus_message_close_container(m));
		} else if (sig.size() >= 2 && sig[0] == 'a') {
			// ai, as, aas, ao, aa{sv}: an array of the element type.
			std::string element = sig.substr(1);
			ok(sd_bus_message_open_container(m, 'a', element.c_str()));
			size_t most = element.size() == 1 ? 8 : 4;
			for (size_t n = depth > 3 ? 0 : count(most); n > 0; --n) value(m, element, depth + 1);
			ok(sd_bus_message_close_container(m));
		}
	}

	// A variant holding a value of a random type (a string when deep enough).
	void variant(sd_bus_message* m, int depth) {
		std::string sig = depth > 4 ? "s" : pick(types_);
		ok(sd_bus_message_open_container(m, 'v', sig.c_str()));
		value(m, sig, depth);
		ok(sd_bus_message_close_container(m));
	}

	// An a{sv} whose keys are mostly from `keys` (else random) and whose values `entry` appends
	// for the key it is given.
	void properties(sd_bus_message* m, const std::vector<std::string>& keys, size_t most,
	                const std::function<void(const std::string&)>& entry) {
		ok(sd_bus_message_open_container(m, 'a', "{sv}"));
		for (size_t n = count(most); n > 0; --n) {
			ok(sd_bus_message_open_container(m, 'e', "sv"));
			std::string key = in_.ConsumeIntegralInRange(0, 7) ? pick(keys) : text();
			ok(sd_bus_message_append_basic(m, 's', key.c_str()));
			entry(key);
			ok(sd_bus_message_close_container(m));
		}
		ok(sd_bus_message_close_container(m));
	}

	// A variant of the type `expected` mostly, of any type sometimes.
	void variantOf(sd_bus_message* m, const std::string& expected, int depth) {
		std::string sig = in_.ConsumeIntegralInRange(0, 3) ? expected : pick(types_);
		ok(sd_bus_message_open_container(m, 'v', sig.c_str()));
		value(m, sig, depth);
		ok(sd_bus_message_close_container(m));
	}

	// Bytes: mostly few, sometimes up to 64 KiB, rarely up to maxBytes_ (the budgets of icon data
	// are megabytes, and every megabyte slows the sanitized target down); sometimes a PNG
	// signature first.
	void bytes(sd_bus_message* m) {
		int kind = in_.ConsumeIntegralInRange(0, 63);
		size_t n = in_.ConsumeIntegralInRange<size_t>(0, kind == 0 ? maxBytes_ : kind < 8 ? std::min<size_t>(maxBytes_, 64u << 10) : 64);
		std::vector<uint8_t> b(n, in_.ConsumeIntegral<uint8_t>());
		static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
		if (n >= sizeof png && in_.ConsumeBool()) std::copy(std::begin(png), std::end(png), b.begin());
		ok(sd_bus_message_append_array(m, 'y', b.data(), b.size()));
	}

	// Bytes of one character (of one to three bytes): mostly up to 2 KiB, sometimes 20 KB.
	std::string longRun() {
		static const char* const characters[] = {"a", "\xC3\xA9", "\xE2\x80\xA6"};
		std::string one = characters[in_.ConsumeIntegralInRange(0, 2)], out;
		size_t bytes = in_.ConsumeIntegralInRange<size_t>(0, in_.ConsumeIntegralInRange(0, 7) ? 2048 : 20000);
		for (size_t n = bytes / one.size(); n > 0; --n) out += one;
		return out;
	}

	std::string pick(const std::vector<std::string>& from) {
		return from[in_.ConsumeIntegralInRange<size_t>(0, from.size() - 1)];
	}

protected:
	// Appends a value of a signature the target knows better (a struct of its interface);
	// false leaves `sig` to value().
	virtual bool customValue(sd_bus_message* /*m*/, const std::string& /*sig*/, int /*depth*/) { return false; }

	template <typename T>
	void integer(sd_bus_message* m, char type) {
		T v = in_.ConsumeIntegral<T>();
		ok(sd_bus_message_append_basic(m, type, &v));
	}

	FuzzedDataProvider& in_;
	// Megabytes by default: the budgets of icon data are counted in them.
	size_t maxBytes_ = 3u << 20;

private:
	std::vector<std::string> types_;
	std::string path_;
};

} // namespace qsd::fuzz
