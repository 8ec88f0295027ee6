#include "icons.hpp"

namespace qsd::tray {

using json = nlohmann::json;

namespace {
bool endsWith(const std::string& s, const char* suffix) {
	std::string_view x(suffix);
	return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}
} // namespace

IconResolver::Source IconResolver::pick(const std::string& name, const std::vector<Pixmap>& pixmaps,
                                        const std::string& themePath) {
	Source s;
	// A name the theme knows wins over pixmaps (the item's own intent, and the user's theme).
	if (!name.empty()) s.file = theme_.lookup(name, themePath);
	if (s.file.empty())
		if (auto i = choosePixmap(pixmaps, theme_.options().size)) s.image = toRgba(pixmaps[*i]);
	return s;
}

json IconResolver::url(const Source& s, std::vector<IconRef>& files) {
	if (!s.file.empty()) return fileUrl(s.file);
	if (auto f = store_.put(s.image)) {
		files.push_back(f);
		return f->url();
	}
	return nullptr;
}

ResolvedIcon IconResolver::resolve(const IconSources& src) {
	ResolvedIcon r;
	Source base;
	// While the item needs attention its attention variant is shown; without one, the normal icon.
	if (src.attention) base = pick(src.attentionName, src.attentionPixmaps, src.themePath);
	if (!base.found()) base = pick(src.name, src.pixmaps, src.themePath);
	Source overlay;
	if (!src.overlayName.empty() || !src.overlayPixmaps.empty()) overlay = pick(src.overlayName, src.overlayPixmaps, src.themePath);

	if (base.found() && overlay.found()) {
		// Composing needs both as pixels: pixmaps, or theme PNGs decoded. An SVG (or XPM) cannot
		// be rasterised here; then the overlay is given as its own URL for the client to layer.
		Image pixels = base.image;
		if (pixels.empty() && endsWith(base.file, ".png"))
			if (auto d = decodePngFile(base.file)) pixels = std::move(*d);
		Image top = overlay.image;
		if (top.empty() && endsWith(overlay.file, ".png"))
			if (auto d = decodePngFile(overlay.file)) top = std::move(*d);
		if (!pixels.empty() && !top.empty()) {
			composeOver(pixels, top);
			Source composed;
			composed.image = std::move(pixels);
			r.icon = url(composed, r.files);
			return r;
		}
		r.overlayIcon = url(overlay, r.files);
	} else if (overlay.found()) {
		r.overlayIcon = url(overlay, r.files);
	}
	if (base.found()) r.icon = url(base, r.files);
	return r;
}

json IconResolver::menuIcon(const std::string& name, const std::vector<uint8_t>& data, const std::string& themePath,
                            std::vector<IconRef>& files) {
	if (!data.empty())
		if (auto f = store_.putPng(data)) {
			files.push_back(f);
			return f->url();
		}
	if (!name.empty())
		if (auto file = theme_.lookup(name, themePath); !file.empty()) return fileUrl(file);
	return nullptr;
}

} // namespace qsd::tray
