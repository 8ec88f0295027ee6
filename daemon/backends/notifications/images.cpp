#include "images.hpp"

#include "../../files.hpp"
#include "../tray/icon_store.hpp"
#include "../tray/mapping.hpp"
#include "../tray/pixmap.hpp"

#include <fmt/format.h>
#include <png.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qsd::notifications {

namespace {
// Icons are looked up for a popup's image: larger than a tray slot.
constexpr int kIconSize = 128;


StoredImage stored(const tray::IconRef& ref) { return {ref->path(), ref->url(), ref}; }

// The first `count` bytes of a regular file, read as files.hpp reads (never blocking on what a
// peer named); std::nullopt when it cannot be read.
std::optional<std::string> readHead(const std::string& path, size_t count) {
	int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) return std::nullopt;
	struct stat st{};
	std::string out(count, '\0');
	ssize_t n = -1;
	if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		do n = ::pread(fd, out.data(), count, 0);
		while (n < 0 && errno == EINTR);
	::close(fd);
	if (n < 0) return std::nullopt;
	out.resize(size_t(n));
	return out;
}

// A PNG of up to kMaxImageSide a side as RGBA (libpng's simplified API, which reports errors by
// its return value: no longjmp crosses this frame). The sides are checked here too, as libpng
// read them: the allocation below follows from them.
std::optional<Rgba> decodePng(const std::string& bytes) {
	png_image png{};
	png.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) return std::nullopt;
	png.format = PNG_FORMAT_RGBA;
	if (png.width == 0 || png.height == 0 || png.width > uint32_t(kMaxImageSide) || png.height > uint32_t(kMaxImageSide)) {
		png_image_free(&png);
		return std::nullopt;
	}
	Rgba out{int(png.width), int(png.height), std::vector<uint8_t>(PNG_IMAGE_SIZE(png))};
	if (!png_image_finish_read(&png, nullptr, out.pixels.data(), 0, nullptr)) {
		png_image_free(&png);
		return std::nullopt;
	}
	return out;
}
} // namespace

struct Images::Impl {
	icons::SharedTheme& theme;
	tray::IconStore store;
	Impl(icons::SharedTheme& t, std::string dir): theme(t), store(std::move(dir), {kMaxImageBytes, kMaxImageBytesPerSender}) {}
};

std::string Images::defaultDir() {
	const char* rt = std::getenv("XDG_RUNTIME_DIR");
	if (!rt || !*rt) return {};
	return std::string(rt) + "/qsd/notifications";
}

Images::Images(icons::SharedTheme& theme): impl_(std::make_unique<Impl>(theme, defaultDir())), dir_(impl_->store.dir()) {}

Images::~Images() = default;

std::optional<std::string> Images::iconUrl(const std::string& name) { return impl_->theme.url(name, kIconSize); }

Rgba Images::fitted(const Rgba& rgba) {
	if (rgba.width <= kStoredImageSide && rgba.height <= kStoredImageSide) return rgba;
	double f = double(kStoredImageSide) / std::max(rgba.width, rgba.height);
	auto image = tray::scaled(tray::Image{rgba.width, rgba.height, rgba.pixels}, std::max(1, int(rgba.width * f + 0.5)),
	                          std::max(1, int(rgba.height * f + 0.5)));
	return {image.width, image.height, std::move(image.rgba)};
}

std::optional<StoredImage> Images::storePixels(const Rgba& rgba, const std::string& sender) {
	auto fit = fitted(rgba);
	auto ref = impl_->store.put(tray::Image{fit.width, fit.height, std::move(fit.pixels)}, sender);
	if (!ref) return std::nullopt;
	return stored(ref);
}

Images::FileImage Images::storeFile(const std::string& path, uint64_t size, const std::string& sender) {
	using Kind = FileImage::Kind;
	// The whole file when it may be copied, else its first bytes (also when it grew past the
	// bound since it was looked at): the header is checked either way, as the file's URL is
	// published for a PNG too large to copy.
	std::optional<std::string> bytes;
	if (size <= kMaxImageFileBytes) bytes = readFile(path, kMaxImageFileBytes);
	bool whole = bytes.has_value();
	if (!whole) bytes = readHead(path, kPngHeadBytes);
	if (!bytes) return {};
	auto sides = pngSides(*bytes);
	if (!sides) return {};
	auto [width, height] = *sides;
	if (width == 0 || height == 0 || width > uint32_t(kMaxImageSide) || height > uint32_t(kMaxImageSide))
		return {Kind::Refused, std::nullopt,
		        width == 0 || height == 0 ? std::string("it has no PNG header")
		                                  : fmt::format("its header gives {}x{} pixels, beyond {} a side", width, height, kMaxImageSide)};
	if (!whole) return {};
	std::optional<StoredImage> out;
	if (width <= uint32_t(kStoredImageSide) && height <= uint32_t(kStoredImageSide)) {
		if (auto ref = impl_->store.putPng(std::vector<uint8_t>(bytes->begin(), bytes->end()), sender)) out = stored(ref);
	} else {
		// Larger than a popup shows it: decoded (at most kMaxImageSide a side, 64 MiB, as
		// image-data may be) and scaled down like pixels, so that no shell decodes more.
		auto decoded = decodePng(*bytes);
		if (!decoded) return {Kind::Refused, std::nullopt, "it cannot be decoded"};
		out = storePixels(*decoded, sender);
	}
	if (!out) return {};
	return {Kind::Stored, std::move(out), {}};
}

void Images::forget(const std::string& sender) { impl_->store.forget(sender); }

} // namespace qsd::notifications
