#pragma once
// Pure parts of the notification server: what a Notify call's values become in the tree. No
// I/O and no state; unit-tested in tests/unit/notifications_mapping_test.cpp and documented in
// docs/backends/notifications.md.

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qsd::notifications {

// The bounds a sender cannot exceed (docs/backends/notifications.md, "Bounds").
constexpr size_t kMaxSummaryBytes = 1024;
constexpr size_t kMaxBodyBytes = 16 * 1024;
constexpr size_t kMaxNameBytes = 256;        // app_name, category, desktop-entry, action keys and labels
constexpr size_t kMaxActions = 16;           // pairs kept of the actions array
constexpr size_t kMaxLiveItems = 1000;
constexpr size_t kMaxLivePerSender = 100;     // one application cannot push the others' out
constexpr size_t kDefaultHistoryLimit = 200;
constexpr size_t kMaxHistoryLimit = 1000;
constexpr int32_t kMaxImageSide = 4096;      // image-data beyond this (per side) is refused
constexpr int kStoredImageSide = 512;        // larger images are scaled down to fit
constexpr size_t kMaxImageFileBytes = 8u << 20;   // image-path files copied up to this size
constexpr size_t kMaxImageBytes = 64u << 20;          // the image files of the notifications shown
constexpr size_t kMaxImageBytesPerSender = 16u << 20; // ... and of those one connection sent
constexpr size_t kMaxHistoryImageBytes = 32u << 20;   // history's copies: the oldest lose theirs first
constexpr uint32_t kDefaultTimeoutMs = 5000;

// The capabilities GetCapabilities can answer, in the order it lists them. qsd keeps what a
// notification carries whatever it advertises; the list tells applications what the shells
// show (a shell without inline replies, or that shows plain text, says so with
// notifications.configure). Not here: "icon-multi" (qsd keeps one image) and "sound" (the sound
// hints are not kept).
constexpr std::array<std::string_view, 9> kCapabilities = {
    "actions", "action-icons", "body", "body-hyperlinks", "body-images", "body-markup", "icon-static", "persistence",
    "inline-reply"};
// What qsd advertises until a shell configures otherwise: all but action-icons and body-images.
[[nodiscard]] std::vector<std::string> defaultCapabilities();
// `names` as advertised: each once, in kCapabilities' order; nullopt when one is not in it.
[[nodiscard]] std::optional<std::vector<std::string>> capabilitySet(const std::vector<std::string>& names);

// The D-Bus urgency byte: 0 low, 1 normal, 2 critical; anything else is normal.
enum class Urgency { Low = 0, Normal = 1, Critical = 2 };
[[nodiscard]] Urgency urgencyFromByte(uint8_t value);
[[nodiscard]] const char* toString(Urgency urgency);

// NotificationClosed's reasons (specification 1.2) and their tree names.
enum class CloseReason : uint32_t { Expired = 1, Dismissed = 2, ClosedByApp = 3, Undefined = 4 };
[[nodiscard]] const char* toString(CloseReason reason);
[[nodiscard]] std::optional<CloseReason> closeReasonFromString(std::string_view name);

// Valid UTF-8: every byte that does not start or continue a well-formed sequence (overlong
// forms, surrogates and values above U+10FFFF included) becomes U+FFFD. NUL bytes too.
[[nodiscard]] std::string validUtf8(std::string_view text);
// Text to be shown: valid UTF-8 (as validUtf8) without the C0 control characters other than tab
// and line feed, and without DEL. They have no display value, and JSON writes each as a six-byte
// \u escape, so a sender could make every entry of the state file six times its bound.
[[nodiscard]] std::string displayText(std::string_view text);
// At most `maxBytes` of `text` (valid UTF-8), cut after the last whole character that fits,
// with "…" appended when something was cut. `cut` tells whether it was.
[[nodiscard]] std::string cutUtf8(std::string_view text, size_t maxBytes, bool* cut = nullptr);

// The body's markup (<b>, <i>, <u>, <a href>, <img>, as the specification allows, and any other
// tag) removed and entities decoded (&amp; &lt; &gt; &quot; &apos; &#N; &#xN;), for clients that
// show plain text. <br> becomes a line break. An '&' or '<' that starts nothing well-formed is
// kept as text. A numeric entity that is no Unicode scalar value (&#xD800;, &#0;) becomes
// U+FFFD. The result is display text (displayText): control characters, sent as such or as
// entities (&#1;), are dropped.
[[nodiscard]] std::string plainText(std::string_view markup);

struct Action {
	std::string key;
	std::string label;
};
// The actions array (key, label, key, label, ...) as pairs, in the sender's order. An odd last
// element, an empty key, a key seen before and pairs beyond kMaxActions are dropped and counted
// in `dropped`. Keys and labels are cut to kMaxNameBytes. Labels are display text; keys keep
// their control characters, as ActionInvoked gives the key back to the application.
[[nodiscard]] std::vector<Action> parseActions(const std::vector<std::string>& flat, size_t* dropped = nullptr);

// expire_timeout -> how long the notification is shown, in ms; std::nullopt: until closed.
// -1 (and any negative value) is the default, 0 never, else milliseconds. Critical
// notifications never expire on their own.
[[nodiscard]] std::optional<uint64_t> timeoutMs(int32_t expireTimeout, Urgency urgency, uint64_t defaultMs);

// image-data's (iiibiiay) fields.
struct RawImage {
	int32_t width = 0;
	int32_t height = 0;
	int32_t rowstride = 0;
	bool hasAlpha = false;
	int32_t bitsPerSample = 0;
	int32_t channels = 0;
	const uint8_t* data = nullptr;
	size_t size = 0;
};
// Straight RGBA, 4 bytes a pixel, rows top to bottom.
struct Rgba {
	int width = 0;
	int height = 0;
	std::vector<uint8_t> pixels;
};
// The image as RGBA, or why it is refused ("bits per sample is 16; only 8 is supported"): sides
// of 1..kMaxImageSide, 8 bits per sample, 3 channels without alpha or 4 with it, a rowstride of
// at least width × channels (longer rows are padding and skipped), and enough bytes (the last
// row need not be padded).
struct DecodedImage {
	std::optional<Rgba> image;
	std::string error;
};
[[nodiscard]] DecodedImage decodeImageData(const RawImage& raw);

// What image-path or app_icon names: a file (a file:// URI, percent-decoded, or an absolute
// path) or an icon name of the theme. An empty string names nothing; so does a URI of another
// scheme.
struct IconSpec {
	enum class Kind { None, File, Name } kind = Kind::None;
	std::string value;   // the path or the name
};
[[nodiscard]] IconSpec iconSpec(std::string_view text);

// The sides a PNG's header (IHDR, the first chunk) gives, from the file's first bytes: nullopt
// when `head` does not start with the PNG signature, {0, 0} when no well-formed IHDR follows it.
// Read before a file is decoded or copied: a tiny file can claim 30000 x 30000 pixels.
[[nodiscard]] std::optional<std::pair<uint32_t, uint32_t>> pngSides(std::string_view head);
constexpr size_t kPngHeadBytes = 24;   // the signature, IHDR's length and type, width and height

// The file a file:// URL of the tree names ("" when it is not one).
[[nodiscard]] std::string pathOfFileUrl(std::string_view url);

} // namespace qsd::notifications
