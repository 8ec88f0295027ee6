#include "mapping.hpp"

#include "wire.hpp"

#include "../../text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <set>

namespace qsd::notifications {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";   // U+FFFD
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";      // U+2026

void appendCodePoint(std::string& out, uint32_t cp) {
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
		out += kReplacement;
	} else if (cp < 0x80) {
		out += char(cp);
	} else if (cp < 0x800) {
		out += char(0xC0 | (cp >> 6));
		out += char(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		out += char(0xE0 | (cp >> 12));
		out += char(0x80 | ((cp >> 6) & 0x3F));
		out += char(0x80 | (cp & 0x3F));
	} else {
		out += char(0xF0 | (cp >> 18));
		out += char(0x80 | ((cp >> 12) & 0x3F));
		out += char(0x80 | ((cp >> 6) & 0x3F));
		out += char(0x80 | (cp & 0x3F));
	}
}

bool startsWithNoCase(std::string_view s, std::string_view prefix) {
	if (s.size() < prefix.size()) return false;
	for (size_t i = 0; i < prefix.size(); ++i)
		if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
	return true;
}

// The entity at `s` (which starts with '&'): its text and length, or nullopt when it is none.
std::optional<std::pair<std::string, size_t>> entityAt(std::string_view s) {
	auto semi = s.find(';');
	if (semi == std::string_view::npos || semi > 32) return std::nullopt;
	auto name = s.substr(1, semi - 1);
	static const std::pair<std::string_view, std::string_view> named[] = {
	    {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}, {"nbsp", "\xC2\xA0"}};
	for (const auto& [n, text]: named)
		if (name == n) return std::pair{std::string(text), semi + 1};
	if (name.size() < 2 || name[0] != '#') return std::nullopt;
	bool hex = name[1] == 'x' || name[1] == 'X';
	auto digits = name.substr(hex ? 2 : 1);
	if (digits.empty()) return std::nullopt;
	uint32_t cp = 0;
	for (char c: digits) {
		int d = -1;
		if (c >= '0' && c <= '9') d = c - '0';
		else if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
		else if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
		if (d < 0) return std::nullopt;
		cp = std::min<uint32_t>(cp * (hex ? 16 : 10) + uint32_t(d), 0x110000);   // saturates: still invalid
	}
	std::string out;
	appendCodePoint(out, cp);
	return std::pair{out, semi + 1};
}

int hexValue(char c) {
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

} // namespace

Urgency urgencyFromByte(uint8_t value) {
	if (value == 0) return Urgency::Low;
	if (value == 2) return Urgency::Critical;
	return Urgency::Normal;
}

const char* toString(Urgency urgency) {
	switch (urgency) {
	case Urgency::Low: return "low";
	case Urgency::Normal: return "normal";
	case Urgency::Critical: return "critical";
	}
	return "normal";
}

const char* toString(CloseReason reason) {
	switch (reason) {
	case CloseReason::Expired: return "expired";
	case CloseReason::Dismissed: return "dismissed";
	case CloseReason::ClosedByApp: return "closedByApp";
	case CloseReason::Undefined: return "undefined";
	}
	return "undefined";
}

std::vector<std::string> defaultCapabilities() {
	std::vector<std::string> out;
	for (auto c: kCapabilities)
		if (c != "action-icons" && c != "body-images") out.emplace_back(c);
	return out;
}

std::optional<std::vector<std::string>> capabilitySet(const std::vector<std::string>& names) {
	for (const auto& n: names)
		if (std::find(kCapabilities.begin(), kCapabilities.end(), n) == kCapabilities.end()) return std::nullopt;
	std::vector<std::string> out;
	for (auto c: kCapabilities)
		if (std::find(names.begin(), names.end(), c) != names.end()) out.emplace_back(c);
	return out;
}

std::optional<CloseReason> closeReasonFromString(std::string_view name) {
	for (auto r: {CloseReason::Expired, CloseReason::Dismissed, CloseReason::ClosedByApp, CloseReason::Undefined})
		if (name == toString(r)) return r;
	return std::nullopt;
}

std::string validUtf8(std::string_view text) {
	std::string out;
	out.reserve(text.size());
	for (size_t i = 0; i < text.size();) {
		size_t n = utf8SequenceAt(text, i);
		if (n == 0) {
			out += kReplacement;
			++i;
		} else {
			out.append(text.substr(i, n));
			i += n;
		}
	}
	return out;
}

std::string displayText(std::string_view text) {
	auto out = validUtf8(text);
	// In UTF-8 these bytes are only ever the characters themselves (never part of a sequence).
	std::erase_if(out, [](char c) {
		auto b = static_cast<unsigned char>(c);
		return (b < 0x20 && b != '\t' && b != '\n') || b == 0x7F;
	});
	return out;
}

std::string cutUtf8(std::string_view text, size_t maxBytes, bool* cut) {
	if (cut) *cut = text.size() > maxBytes;
	if (text.size() <= maxBytes) return std::string(text);
	size_t end = maxBytes;
	// Back to the start of the character that would be split.
	while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
	std::string out(text.substr(0, end));
	out += kEllipsis;
	return out;
}

std::string plainText(std::string_view markup) {
	std::string out;
	out.reserve(markup.size());
	for (size_t i = 0; i < markup.size();) {
		char c = markup[i];
		if (c == '<') {
			auto close = markup.find('>', i + 1);
			auto inner = close == std::string_view::npos ? std::string_view() : markup.substr(i + 1, close - i - 1);
			// A tag starts with a letter, '/' or '!' right after '<' ("a < b" is text).
			bool tag = !inner.empty() && (std::isalpha(static_cast<unsigned char>(inner[0])) || inner[0] == '/' || inner[0] == '!');
			if (!tag) {
				out += c;
				++i;
				continue;
			}
			if (startsWithNoCase(inner, "br") && (inner.size() == 2 || inner[2] == '/' || inner[2] == ' ')) out += '\n';
			i = close + 1;
			continue;
		}
		if (c == '&') {
			if (auto e = entityAt(markup.substr(i))) {
				out += e->first;
				i += e->second;
				continue;
			}
		}
		out += c;
		++i;
	}
	return displayText(out);
}

std::vector<Action> parseActions(const std::vector<std::string>& flat, size_t* dropped) {
	std::vector<Action> out;
	std::set<std::string> seen;
	size_t lost = flat.size() % 2;
	for (size_t i = 0; i + 1 < flat.size(); i += 2) {
		auto key = cutUtf8(validUtf8(flat[i]), kMaxNameBytes);
		if (key.empty() || out.size() >= kMaxActions || !seen.insert(key).second) {
			lost += 2;
			continue;
		}
		out.push_back({std::move(key), cutUtf8(displayText(flat[i + 1]), kMaxNameBytes)});
	}
	if (dropped) *dropped = lost;
	return out;
}

std::optional<uint64_t> timeoutMs(int32_t expireTimeout, Urgency urgency, uint64_t defaultMs) {
	if (urgency == Urgency::Critical || expireTimeout == 0) return std::nullopt;
	if (expireTimeout < 0) return defaultMs == 0 ? std::nullopt : std::optional<uint64_t>(defaultMs);
	return uint64_t(expireTimeout);
}

DecodedImage decodeImageData(const RawImage& raw) {
	auto refuse = [](std::string why) { return DecodedImage{std::nullopt, std::move(why)}; };
	if (raw.width <= 0 || raw.height <= 0 || raw.width > kMaxImageSide || raw.height > kMaxImageSide)
		return refuse(fmt::format("its size {}x{} is outside 1..{}", raw.width, raw.height, kMaxImageSide));
	if (raw.bitsPerSample != 8) return refuse(fmt::format("bits per sample is {}; only 8 is supported", raw.bitsPerSample));
	int32_t channels = raw.hasAlpha ? 4 : 3;
	if (raw.channels != channels)
		return refuse(fmt::format("{} channels {} alpha; expected {}", raw.channels, raw.hasAlpha ? "with" : "without", channels));
	int64_t row = int64_t(raw.width) * channels;
	if (raw.rowstride < row) return refuse(fmt::format("rowstride {} is shorter than a row of {} bytes", raw.rowstride, row));
	// The last row need not be padded (GdkPixbuf does not pad it).
	uint64_t needed = uint64_t(raw.rowstride) * uint64_t(raw.height - 1) + uint64_t(row);
	if (!raw.data || raw.size < needed) return refuse(fmt::format("{} bytes of pixels; {} needed", raw.size, needed));
	Rgba out;
	out.width = raw.width;
	out.height = raw.height;
	out.pixels.resize(size_t(raw.width) * size_t(raw.height) * 4);
	uint8_t* dst = out.pixels.data();
	for (int32_t y = 0; y < raw.height; ++y) {
		const uint8_t* src = raw.data + size_t(y) * size_t(raw.rowstride);
		for (int32_t x = 0; x < raw.width; ++x, src += channels, dst += 4) {
			dst[0] = src[0];
			dst[1] = src[1];
			dst[2] = src[2];
			dst[3] = raw.hasAlpha ? src[3] : 0xFF;
		}
	}
	return {std::move(out), {}};
}

IconSpec iconSpec(std::string_view text) {
	if (text.empty()) return {};
	if (text.rfind("file://", 0) == 0) {
		auto rest = text.substr(7);
		// file://host/path: only the local host is ours.
		if (!rest.empty() && rest[0] != '/') {
			auto slash = rest.find('/');
			auto host = rest.substr(0, slash);
			if (host != "localhost" || slash == std::string_view::npos) return {};
			rest = rest.substr(slash);
		}
		std::string path;
		for (size_t i = 0; i < rest.size(); ++i) {
			if (rest[i] == '%' && i + 2 < rest.size() && hexValue(rest[i + 1]) >= 0 && hexValue(rest[i + 2]) >= 0) {
				path += char(hexValue(rest[i + 1]) * 16 + hexValue(rest[i + 2]));
				i += 2;
			} else {
				path += rest[i];
			}
		}
		if (path.empty() || path.find('\0') != std::string::npos) return {};
		return {IconSpec::Kind::File, path};
	}
	if (text[0] == '/') return {IconSpec::Kind::File, std::string(text)};
	// Another scheme ("http://..."): not a file qsd can show.
	if (text.find("://") != std::string_view::npos) return {};
	return {IconSpec::Kind::Name, std::string(text)};
}

std::optional<std::pair<uint32_t, uint32_t>> pngSides(std::string_view head) {
	static constexpr std::string_view signature = "\x89PNG\r\n\x1a\n";
	if (head.substr(0, signature.size()) != signature) return std::nullopt;
	auto be32 = [&](size_t at) {
		uint32_t v = 0;
		for (size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<unsigned char>(head[at + k]);
		return v;
	};
	// The PNG specification: IHDR comes first, 13 bytes long.
	if (head.size() < kPngHeadBytes || be32(8) != 13 || head.substr(12, 4) != "IHDR") return std::pair(0u, 0u);
	return std::pair(be32(16), be32(20));
}

std::string pathOfFileUrl(std::string_view url) {
	auto spec = iconSpec(url);
	if (url.rfind("file://", 0) != 0 || spec.kind != IconSpec::Kind::File) return {};
	return spec.value;
}

std::optional<std::pair<std::string, std::string>> stackKey(const NotifyArgs& a) {
	// x-dunst-stack-tag wins over x-canonical-private-synchronous, whichever came first; an empty
	// tag stacks nothing (dunst's rule).
	const auto& tag = a.hints.stackTag && !a.hints.stackTag->empty() ? a.hints.stackTag : a.hints.synchronous;
	if (!tag || tag->empty()) return std::nullopt;
	return std::pair(cutUtf8(displayText(a.appName), kMaxNameBytes), cutUtf8(displayText(*tag), kMaxNameBytes));
}

NotifyText mapText(const NotifyArgs& a) {
	NotifyText t;
	// Control characters go before the text is cut: the bound is on what is kept.
	t.appName = cutUtf8(displayText(a.appName), kMaxNameBytes);
	t.actions = parseActions(a.actions, &t.droppedActions);
	t.droppedActions += a.extraActions;
	t.summary = cutUtf8(displayText(a.summary), kMaxSummaryBytes, &t.cutSummary);
	t.body = cutUtf8(displayText(a.body), kMaxBodyBytes, &t.cutBody);
	t.bodyText = plainText(t.body);
	auto name = [](const std::optional<std::string>& s) -> std::optional<std::string> {
		if (!s) return std::nullopt;
		return cutUtf8(displayText(*s), kMaxNameBytes);
	};
	t.category = name(a.hints.category);
	t.desktopEntry = name(a.hints.desktopEntry);
	t.replyPlaceholder = name(a.hints.replyPlaceholder);
	if (auto key = stackKey(a)) t.stackTag = std::move(key->second);
	if (a.hints.value) t.value = int(std::clamp<int64_t>(*a.hints.value, 0, 100));
	return t;
}

} // namespace qsd::notifications
