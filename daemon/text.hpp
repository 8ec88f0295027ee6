#pragma once
// Text that peers send, bounded before qsd keeps it.

#include <cstddef>
#include <string_view>

namespace qsd {

// The length of the well-formed UTF-8 sequence at `i` (Unicode's table 3-7), 0 when there is
// none (a stray byte, an overlong form, a surrogate, past U+10FFFF, or NUL).
[[nodiscard]] inline size_t utf8SequenceAt(std::string_view s, size_t i) {
	auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
	unsigned char c = b(i);
	if (c >= 0x01 && c <= 0x7F) return 1;
	auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
		return k < s.size() && b(k) >= lo && b(k) <= hi;
	};
	if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
	if (c == 0xE0) return cont(i + 1, 0xA0) && cont(i + 2) ? 3 : 0;
	if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(i + 1) && cont(i + 2) ? 3 : 0;
	if (c == 0xED) return cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0;
	if (c == 0xF0) return cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
	if (c >= 0xF1 && c <= 0xF3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
	if (c == 0xF4) return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
	return 0;
}

// The longest prefix of `s` of at most `max` bytes that does not end inside a UTF-8 character
// (a character that does not fit whole is left out). Bytes that are not UTF-8 are counted as
// they come: what the protocol writes replaces them.
[[nodiscard]] inline std::string_view cutAtCharacter(std::string_view s, size_t max) {
	if (s.size() <= max) return s;
	size_t end = max;
	// Back up over continuation bytes (10xxxxxx) to the start of the character that does not fit.
	while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
	return s.substr(0, end);
}

} // namespace qsd
