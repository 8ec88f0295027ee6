#pragma once
// Newline-delimited framing with a hard line-length limit.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace qsd {

class LineReader {
public:
	explicit LineReader(size_t maxLineBytes = 1 << 20): maxLineBytes_(maxLineBytes) {}

	// Feed bytes; onLine is called for every complete line (without its '\n'), in order.
	// A line longer than the limit is reported once through onTooLong, at its place in the
	// stream, as soon as the limit is crossed; its bytes are discarded up to the next '\n' and
	// reading resumes there, so one oversized request never costs more than the limit in memory.
	void feed(std::string_view data, const std::function<void(std::string_view)>& onLine,
	          const std::function<void()>& onTooLong);

	[[nodiscard]] size_t pending() const { return buffer_.size(); }
	[[nodiscard]] bool discarding() const { return discarding_; }

private:
	size_t maxLineBytes_;
	std::string buffer_;
	bool discarding_ = false;
};

} // namespace qsd
