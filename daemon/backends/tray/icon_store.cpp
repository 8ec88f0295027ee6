#include "icon_store.hpp"

#include "mapping.hpp"

#include "../../log.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qsd::tray {

namespace fs = std::filesystem;

IconFile::~IconFile() {
	if (auto store = store_.lock()) (*store)->released(name_, path_);
}

std::string IconStore::defaultDir() {
	const char* rt = std::getenv("XDG_RUNTIME_DIR");
	if (!rt || !*rt) return {};
	return std::string(rt) + "/qsd/icons";
}

IconStore::IconStore(std::string dir): dir_(std::move(dir)), self_(std::make_shared<IconStore*>(this)) {
	if (dir_.empty()) {
		log::warning("tray", "XDG_RUNTIME_DIR is not set: icons from pixmaps are not available");
		return;
	}
	// The parent ($XDG_RUNTIME_DIR/qsd) is the socket's directory: private to the user.
	auto parent = fs::path(dir_).parent_path().string();
	if (::mkdir(parent.c_str(), 0700) < 0 && errno != EEXIST) {
		log::warning("tray", "cannot create {}: {}; icons from pixmaps are not available", parent, std::strerror(errno));
		dir_.clear();
		return;
	}
	if (::mkdir(dir_.c_str(), 0700) < 0 && errno != EEXIST) {
		log::warning("tray", "cannot create {}: {}; icons from pixmaps are not available", dir_, std::strerror(errno));
		dir_.clear();
		return;
	}
	// Left over from an earlier run: nothing refers to them any more.
	std::error_code ec;
	for (const auto& e: fs::directory_iterator(dir_, ec)) {
		auto ext = e.path().extension();
		if (ext == ".png" || ext == ".tmp") fs::remove(e.path(), ec);
	}
}

// Handles that outlive the store (none should) no longer call back into it: self_ goes.
IconStore::~IconStore() = default;

IconRef IconStore::make(const std::string& name, const std::vector<uint8_t>* bytes, const Image* image) {
	if (auto it = live_.find(name); it != live_.end())
		if (auto f = it->second.lock()) return f;
	auto path = dir_ + "/" + name + ".png";
	struct stat st{};
	if (::stat(path.c_str(), &st) != 0) {
		std::optional<std::vector<uint8_t>> encoded;
		if (!bytes) {
			encoded = encodePng(*image);
			if (!encoded) {
				log::warning("tray", "encoding a {}x{} icon as PNG failed", image->width, image->height);
				return nullptr;
			}
			bytes = &*encoded;
		}
		auto tmp = path + ".tmp";
		int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		bool ok = fd >= 0;
		for (size_t off = 0; ok && off < bytes->size();) {
			auto n = ::write(fd, bytes->data() + off, bytes->size() - off);
			if (n < 0 && errno == EINTR) continue;
			ok = n > 0;
			off += ok ? size_t(n) : 0;
		}
		if (fd >= 0) ::close(fd);
		if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
			if (!warned_) log::warning("tray", "cannot write icon {}: {}", path, std::strerror(errno));
			warned_ = true;
			::unlink(tmp.c_str());
			return nullptr;
		}
	}
	auto file = std::make_shared<const IconFile>(std::weak_ptr<IconStore*>(self_), name, path, fileUrl(path));
	live_[name] = file;
	return file;
}

IconRef IconStore::put(const Image& image) {
	if (dir_.empty() || image.empty()) return nullptr;
	return make(contentHash(image), nullptr, &image);
}

IconRef IconStore::putPng(const std::vector<uint8_t>& png) {
	if (dir_.empty() || !isPng(png)) return nullptr;
	// A different seed than raw images: the same bytes as pixels and as a PNG are two files.
	return make(contentHash(png.data(), png.size(), 0x706e67), &png, nullptr);
}

void IconStore::released(const std::string& name, const std::string& path) {
	auto it = live_.find(name);
	// A newer handle for the same name (made after this one expired) keeps the file.
	if (it != live_.end() && it->second.expired()) live_.erase(it);
	else if (it != live_.end()) return;
	::unlink(path.c_str());
}

} // namespace qsd::tray
