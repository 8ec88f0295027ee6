#include "images.hpp"

#include "../../files.hpp"
#include "../tray/icon_store.hpp"
#include "../tray/mapping.hpp"
#include "../tray/pixmap.hpp"

#include <algorithm>
#include <cstdlib>

namespace qsd::notifications {

namespace {
// Icons are looked up for a popup's image: larger than a tray slot.
constexpr int kIconSize = 128;


StoredImage stored(const tray::IconRef& ref) { return {ref->path(), ref->url(), ref}; }
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

std::optional<StoredImage> Images::storePngFile(const std::string& path, const std::string& sender) {
	auto bytes = readFile(path, kMaxImageFileBytes);
	if (!bytes) return std::nullopt;
	auto ref = impl_->store.putPng(std::vector<uint8_t>(bytes->begin(), bytes->end()), sender);
	if (!ref) return std::nullopt;
	return stored(ref);
}

void Images::forget(const std::string& sender) { impl_->store.forget(sender); }

} // namespace qsd::notifications
