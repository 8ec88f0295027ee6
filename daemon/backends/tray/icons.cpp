#include "icons.hpp"

#include "../../files.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

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
	if (!name.empty()) s.file = theme_.lookup(name, kDefaultIconSize, themePath);
	if (s.file.empty())
		if (auto i = choosePixmap(pixmaps, kDefaultIconSize)) s.image = toRgba(pixmaps[*i]);
	return s;
}

std::string IconResolver::identity(const Source& s) {
	if (s.file.empty()) return "p:" + contentHash(s.image);
	struct stat st{};
	if (::stat(s.file.c_str(), &st) != 0) return "f:" + s.file;
	return fmt::format("f:{}:{}:{}:{}.{}:{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, s.file);
}

json IconResolver::url(const Source& s, std::vector<IconRef>& files, const std::string& owner) {
	if (!s.file.empty()) return fileUrl(s.file);
	if (auto f = store_.put(s.image, owner)) {
		files.push_back(f);
		return f->url();
	}
	return nullptr;
}

ResolvedIcon IconResolver::resolve(const IconSources& src, const std::string& owner) {
	ResolvedIcon r;
	Source base;
	// While the item needs attention its attention variant is shown; without one, the normal icon.
	if (src.attention) base = pick(src.attentionName, src.attentionPixmaps, src.themePath);
	if (!base.found()) base = pick(src.name, src.pixmaps, src.themePath);
	Source overlay;
	if (!src.overlayName.empty() || !src.overlayPixmaps.empty()) overlay = pick(src.overlayName, src.overlayPixmaps, src.themePath);

	if (base.found() && overlay.found()) {
		// The same icon and overlay as before (an item that sends NewIcon again and again): the
		// file composed then, without decoding, composing and encoding again.
		auto key = identity(base) + '|' + identity(overlay);
		if (auto it = composed_.find(key); it != composed_.end()) {
			if (auto f = it->second.lock()) {
				r.files.push_back(f);
				r.icon = f->url();
				return r;
			}
			composed_.erase(it);
		}
		// Composing needs both as pixels: pixmaps, or theme PNGs decoded (up to 1024 px a side).
		// An SVG (or XPM, or a larger PNG) is not decoded here; then the overlay is given as its
		// own URL for the client to layer.
		Image pixels = base.image;
		if (pixels.empty() && endsWith(base.file, ".png"))
			if (auto d = decodePngFile(base.file)) pixels = std::move(*d);
		Image top = overlay.image;
		if (top.empty() && endsWith(overlay.file, ".png"))
			if (auto d = decodePngFile(overlay.file)) top = std::move(*d);
		if (!pixels.empty() && !top.empty()) {
			composeOver(pixels, top);
			++compositions_;
			Source composed;
			composed.image = std::move(pixels);
			r.icon = url(composed, r.files, owner);
			if (!r.files.empty()) {
				// Only files some item holds are worth remembering: the rest are pruned here.
				for (auto it = composed_.begin(); it != composed_.end();) it = it->second.expired() ? composed_.erase(it) : std::next(it);
				composed_[key] = r.files.back();
			}
			return r;
		}
		r.overlayIcon = url(overlay, r.files, owner);
	} else if (overlay.found()) {
		r.overlayIcon = url(overlay, r.files, owner);
	}
	if (base.found()) r.icon = url(base, r.files, owner);
	return r;
}

IconMemo IconResolver::beginMemo(const std::string& themePath) {
	IconMemo m;
	m.themePath = themePath;
	m.version = theme_.version(themePath);
	return m;
}

json IconResolver::menuIcon(const MenuProps& props, std::vector<IconRef>& files, const IconMemo& previous, IconMemo& next) {
	if (props.iconFile) {
		files.push_back(props.iconFile);
		return props.iconFile->url();
	}
	const auto& name = props.iconName;
	if (name.empty()) return nullptr;
	auto [slot, added] = next.files.try_emplace(name);
	if (added) {
		bool valid = previous.version == next.version && previous.themePath == next.themePath;
		auto known = valid ? previous.files.find(name) : previous.files.end();
		slot->second = known != previous.files.end() ? known->second : theme_.lookup(name, kDefaultIconSize, next.themePath);
	}
	return slot->second.empty() ? json(nullptr) : json(fileUrl(slot->second));
}

} // namespace qsd::tray
