#pragma once
// Text that peers send, bounded before qsd keeps it.

#include <cstddef>
#include <string_view>

namespace qsd {

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
