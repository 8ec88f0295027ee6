#include "qsd/protocol/framing.hpp"

namespace qsd {

void LineReader::feed(std::string_view data, const std::function<void(std::string_view)>& onLine,
                      const std::function<void()>& onTooLong) {
	while (!data.empty()) {
		auto nl = data.find('\n');
		if (discarding_) {
			if (nl == std::string_view::npos) return;
			discarding_ = false;
			data.remove_prefix(nl + 1);
			continue;
		}
		auto lineEnd = nl == std::string_view::npos ? data.size() : nl;
		if (buffer_.size() + lineEnd > maxLineBytes_) {
			buffer_.clear();
			buffer_.shrink_to_fit();
			onTooLong();
			if (nl == std::string_view::npos) {
				discarding_ = true;
				return;
			}
			data.remove_prefix(nl + 1);
			continue;
		}
		if (nl == std::string_view::npos) {
			buffer_.append(data);
			return;
		}
		if (buffer_.empty()) {
			onLine(data.substr(0, nl));
		} else {
			buffer_.append(data.substr(0, nl));
			std::string line;
			line.swap(buffer_);
			onLine(line);
		}
		data.remove_prefix(nl + 1);
	}
}

} // namespace qsd
