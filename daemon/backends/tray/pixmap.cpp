#include "pixmap.hpp"

#include "../../files.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

namespace qsd::tray {

bool isValidPixmap(int32_t width, int32_t height, size_t bytes) {
	if (width <= 0 || height <= 0 || width > kMaxPixmapSide || height > kMaxPixmapSide) return false;
	return bytes == size_t(width) * size_t(height) * 4;
}

bool isValid(const Pixmap& p) { return isValidPixmap(p.width, p.height, p.argb.size()); }

bool PixmapChoice::offer(int32_t width, int32_t height, size_t bytes) {
	size_t i = offered_++;
	if (!isValidPixmap(width, height, bytes)) return false;
	int64_t area = int64_t(width) * height;
	if (width >= target_ && height >= target_ && (!bigEnough_ || area < bigEnoughArea_)) {
		bigEnough_ = i;
		bigEnoughArea_ = area;
	}
	if (!largest_ || area > largestArea_) {
		largest_ = i;
		largestArea_ = area;
	}
	return chosen() == i;
}

std::optional<size_t> choosePixmap(const std::vector<Pixmap>& pixmaps, int target) {
	PixmapChoice choice(target);
	for (const auto& p: pixmaps) (void)choice.offer(p.width, p.height, p.argb.size());
	return choice.chosen();
}

Image toRgba(const Pixmap& pixmap) {
	Image out;
	if (!isValid(pixmap)) return out;
	out.width = pixmap.width;
	out.height = pixmap.height;
	out.rgba.resize(pixmap.argb.size());
	const uint8_t* s = pixmap.argb.data();
	uint8_t* d = out.rgba.data();
	// Network byte order: each pixel is the bytes A, R, G, B whatever the host's endianness.
	for (size_t i = 0; i < pixmap.argb.size(); i += 4) {
		d[i] = s[i + 1];
		d[i + 1] = s[i + 2];
		d[i + 2] = s[i + 3];
		d[i + 3] = s[i];
	}
	return out;
}

Image scaled(const Image& image, int width, int height) {
	Image out;
	if (image.empty() || width <= 0 || height <= 0) return out;
	if (image.width == width && image.height == height) return image;
	out.width = width;
	out.height = height;
	out.rgba.resize(size_t(width) * size_t(height) * 4);
	auto px = [&](int x, int y) { return &image.rgba[(size_t(y) * size_t(image.width) + size_t(x)) * 4]; };
	double sx = double(image.width) / width, sy = double(image.height) / height;
	for (int y = 0; y < height; ++y) {
		double fy = std::clamp((y + 0.5) * sy - 0.5, 0.0, double(image.height - 1));
		int y0 = int(fy), y1 = std::min(y0 + 1, image.height - 1);
		double wy = fy - y0;
		for (int x = 0; x < width; ++x) {
			double fx = std::clamp((x + 0.5) * sx - 0.5, 0.0, double(image.width - 1));
			int x0 = int(fx), x1 = std::min(x0 + 1, image.width - 1);
			double wx = fx - x0;
			const uint8_t* c[4] = {px(x0, y0), px(x1, y0), px(x0, y1), px(x1, y1)};
			double w[4] = {(1 - wx) * (1 - wy), wx * (1 - wy), (1 - wx) * wy, wx * wy};
			// Interpolate premultiplied values, then divide: a transparent neighbour's colour
			// must not tint the edge.
			double a = 0, r = 0, g = 0, b = 0;
			for (int k = 0; k < 4; ++k) {
				double ak = c[k][3] * w[k];
				a += ak;
				r += c[k][0] * ak;
				g += c[k][1] * ak;
				b += c[k][2] * ak;
			}
			uint8_t* d = &out.rgba[(size_t(y) * size_t(width) + size_t(x)) * 4];
			if (a <= 0) {
				d[0] = d[1] = d[2] = d[3] = 0;
				continue;
			}
			d[0] = uint8_t(std::lround(std::clamp(r / a, 0.0, 255.0)));
			d[1] = uint8_t(std::lround(std::clamp(g / a, 0.0, 255.0)));
			d[2] = uint8_t(std::lround(std::clamp(b / a, 0.0, 255.0)));
			d[3] = uint8_t(std::lround(std::clamp(a, 0.0, 255.0)));
		}
	}
	return out;
}

void composeOver(Image& base, const Image& overlay) {
	if (base.empty() || overlay.empty()) return;
	Image top = scaled(overlay, base.width, base.height);
	for (size_t i = 0; i < base.rgba.size(); i += 4) {
		double sa = top.rgba[i + 3] / 255.0, da = base.rgba[i + 3] / 255.0;
		double oa = sa + da * (1 - sa);
		if (oa <= 0) {
			std::fill_n(&base.rgba[i], 4, uint8_t(0));
			continue;
		}
		for (int k = 0; k < 3; ++k) {
			double v = (top.rgba[i + k] * sa + base.rgba[i + k] * da * (1 - sa)) / oa;
			base.rgba[i + k] = uint8_t(std::lround(std::clamp(v, 0.0, 255.0)));
		}
		base.rgba[i + 3] = uint8_t(std::lround(oa * 255));
	}
}

std::string contentHash(const uint8_t* data, size_t size, uint64_t seed) {
	uint64_t h = 14695981039346656037ull ^ seed;
	for (size_t i = 0; i < size; ++i) {
		h ^= data[i];
		h *= 1099511628211ull;
	}
	return fmt::format("{:016x}", h);
}

std::string contentHash(const Image& image) {
	// The size is part of the content: the same bytes as 16x64 and 64x16 are two images.
	return contentHash(image.rgba.data(), image.rgba.size(), (uint64_t(uint32_t(image.width)) << 32) | uint32_t(image.height));
}

bool isPng(const std::vector<uint8_t>& bytes) {
	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	return bytes.size() >= 8 && std::memcmp(bytes.data(), sig, 8) == 0;
}

namespace {
void appendBytes(png_structp png, png_bytep data, png_size_t length) {
	auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
	out->insert(out->end(), data, data + length);
}
void flushNothing(png_structp) {}
// libpng reports errors by longjmp; these are the only frames it jumps over (no destructors).
void pngError(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void pngWarning(png_structp, png_const_charp) {}
} // namespace

namespace {
// The libpng calls, in a frame of their own that holds no C++ object: libpng reports errors by
// longjmp, which must not jump over destructors.
bool writePng(png_uint_32 width, png_uint_32 height, png_bytepp rows, std::vector<uint8_t>* out) {
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, pngError, pngWarning);
	if (!png) return false;
	png_infop info = png_create_info_struct(png);
	if (!info || setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, info ? &info : nullptr);
		return false;
	}
	png_set_write_fn(png, out, appendBytes, flushNothing);
	png_set_compression_level(png, 3);
	png_set_compression_mem_level(png, 4);
	png_set_compression_window_bits(png, 12);
	// One filter (Sub) rather than libpng's adaptive choice, which tries all five on every row:
	// that choice was half of qsd's instructions per pixmap NewIcon (docs/performance.md,
	// "Where qsd's share goes"), for files a few percent smaller.
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
	png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
	             PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	png_write_image(png, rows);
	png_write_end(png, nullptr);
	png_destroy_write_struct(&png, &info);
	return true;
}
} // namespace

std::optional<std::vector<uint8_t>> encodePng(const Image& image) {
	if (image.empty() || image.rgba.size() != size_t(image.width) * size_t(image.height) * 4) return std::nullopt;
	// libpng's full API rather than its simplified one: icons are small, and zlib's default state
	// (a 32 KiB window and a 256 KiB hash) costs more to set up than a 64 px icon costs to
	// compress; this is on the path from an item's NewIcon to the tree.
	std::vector<uint8_t> out;
	out.reserve(image.rgba.size() / 2 + 128);
	std::vector<png_bytep> rows(size_t(image.height));
	for (int y = 0; y < image.height; ++y)
		rows[size_t(y)] = const_cast<png_bytep>(image.rgba.data() + size_t(y) * size_t(image.width) * 4);
	if (!writePng(png_uint_32(image.width), png_uint_32(image.height), rows.data(), &out)) return std::nullopt;
	return out;
}

namespace {
std::optional<Image> finishRead(png_image& png) {
	png.format = PNG_FORMAT_RGBA;
	// The pixmap limit: a 4096 px file decodes to 64 MiB, for an icon shown at 64 px.
	if (png.width == 0 || png.height == 0 || png.width > uint32_t(kMaxPixmapSide) || png.height > uint32_t(kMaxPixmapSide)) {
		png_image_free(&png);
		return std::nullopt;
	}
	Image out;
	out.width = int(png.width);
	out.height = int(png.height);
	out.rgba.resize(PNG_IMAGE_SIZE(png));
	if (!png_image_finish_read(&png, nullptr, out.rgba.data(), 0, nullptr)) {
		png_image_free(&png);
		return std::nullopt;
	}
	return out;
}
} // namespace

std::optional<Image> decodePng(const std::vector<uint8_t>& bytes) {
	if (!isPng(bytes)) return std::nullopt;
	png_image png{};
	png.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) return std::nullopt;
	return finishRead(png);
}

std::optional<Image> decodePngFile(const std::string& path) {
	// A 1024 px RGBA image deflates to at most about 4 MiB.
	auto text = readFile(path, 8u << 20);
	if (!text) return std::nullopt;
	return decodePng(std::vector<uint8_t>(text->begin(), text->end()));
}

} // namespace qsd::tray
