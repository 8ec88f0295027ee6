#pragma once
// Raster images for tray icons: choosing one of an item's IconPixmap sizes, converting the
// SNI's ARGB32 (network byte order) to RGBA, composing an overlay, and PNG in and out (libpng).
// Pure functions on memory, unit-tested in tests/unit/tray_pixmap_test.cpp.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qsd::tray {

// One entry of an a(iiay) pixmap array as the item sent it: width, height, and width*height
// pixels of ARGB32 in network byte order (A, R, G, B bytes), not premultiplied.
struct Pixmap {
	int32_t width = 0;
	int32_t height = 0;
	std::vector<uint8_t> argb;
};

// Straight (not premultiplied) RGBA, 4 bytes per pixel, rows top to bottom.
struct Image {
	int width = 0;
	int height = 0;
	std::vector<uint8_t> rgba;

	[[nodiscard]] bool empty() const { return width <= 0 || height <= 0; }
};

// The icon size qsd aims for, in pixels: large enough for a 32 px tray slot at scale 2.
constexpr int kDefaultIconSize = 64;
// Pixmaps larger than this (per side) are ignored: an item cannot make qsd allocate gigabytes.
constexpr int32_t kMaxPixmapSide = 1024;

// A pixmap qsd can use: positive sides up to kMaxPixmapSide and exactly width*height*4 bytes.
[[nodiscard]] bool isValid(const Pixmap& p);

// A pixmap of that size and that many bytes of data is one qsd can use (isValid).
[[nodiscard]] bool isValidPixmap(int32_t width, int32_t height, size_t bytes);

// The index of the best-fitting pixmap for a `target` px icon: the smallest (by area) whose
// width and height are both at least `target`; if none is that large, the largest. Invalid
// entries are never chosen. std::nullopt when there is no valid entry.
[[nodiscard]] std::optional<size_t> choosePixmap(const std::vector<Pixmap>& pixmaps, int target);

// choosePixmap's choice made one entry at a time, without the entries: wire.cpp chooses while it
// reads an a(iiay), and copies only the entry chosen (a property held seven 4 MiB entries that
// were never usable, for as long as the item lived).
class PixmapChoice {
public:
	explicit PixmapChoice(int target): target_(target) {}
	// Offers the next entry; true when it is the choice so far (invalid ones never are).
	bool offer(int32_t width, int32_t height, size_t bytes);
	// The index of the entry chosen, among those offered.
	[[nodiscard]] std::optional<size_t> chosen() const { return bigEnough_ ? bigEnough_ : largest_; }

private:
	int target_;
	size_t offered_ = 0;
	std::optional<size_t> bigEnough_;   // the smallest that covers the target
	int64_t bigEnoughArea_ = 0;
	std::optional<size_t> largest_;
	int64_t largestArea_ = 0;
};

// ARGB32 in network byte order -> RGBA. An invalid pixmap gives an empty image.
[[nodiscard]] Image toRgba(const Pixmap& pixmap);

// Bilinear resampling to width x height (alpha-weighted, so transparent pixels do not bleed
// their colour into the edges).
[[nodiscard]] Image scaled(const Image& image, int width, int height);

// Paints `overlay` over the whole of `base` (scaled to base's size first), source-over.
void composeOver(Image& base, const Image& overlay);

// A 64-bit FNV-1a hash as 16 lowercase hex digits: the content address of icon files.
[[nodiscard]] std::string contentHash(const uint8_t* data, size_t size, uint64_t seed = 0);
[[nodiscard]] std::string contentHash(const Image& image);

// PNG encoding and decoding through libpng's simplified API. std::nullopt on failure, and for
// images larger than kMaxPixmapSide a side (not decoded at all).
[[nodiscard]] std::optional<std::vector<uint8_t>> encodePng(const Image& image);
[[nodiscard]] std::optional<Image> decodePng(const std::vector<uint8_t>& bytes);
[[nodiscard]] std::optional<Image> decodePngFile(const std::string& path);
// True when the bytes start with the PNG signature.
[[nodiscard]] bool isPng(const std::vector<uint8_t>& bytes);

} // namespace qsd::tray
