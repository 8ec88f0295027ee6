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
	if (auto store = store_.lock()) (*store)->released(name_, path_, size_, owner_);
}

std::string IconStore::defaultDir() {
	const char* rt = std::getenv("XDG_RUNTIME_DIR");
	if (!rt || !*rt) return {};
	return std::string(rt) + "/qsd/icons";
}

IconStore::IconStore(std::string dir, Limits limits)
    : dir_(std::move(dir)), limits_(limits), self_(std::make_shared<IconStore*>(this)) {
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

bool IconStore::fits(size_t size, const std::string& owner) {
	auto o = owners_.find(owner);
	size_t has = o == owners_.end() ? 0 : o->second.bytes;
	if (has + size > limits_.maxOwnerBytes) {
		if (o == owners_.end()) o = owners_.emplace(owner, Owner{}).first;
		if (!o->second.warned)
			log::warning("tray", "{}: its icon files would take more than {} KiB; the rest are not written (no icon)",
			             owner.empty() ? std::string("an icon") : owner, limits_.maxOwnerBytes >> 10);
		o->second.warned = true;
		return false;
	}
	if (bytes_ + size > limits_.maxBytes) {
		if (!fullWarned_)
			log::warning("tray", "the icon files take {} KiB, the limit: new ones are not written until some are released",
			             bytes_ >> 10);
		fullWarned_ = true;
		return false;
	}
	return true;
}

IconRef IconStore::make(const std::string& name, const std::vector<uint8_t>* bytes, const Image* image, const std::string& owner) {
	if (auto it = live_.find(name); it != live_.end())
		if (auto f = it->second.lock()) return f;
	auto path = dir_ + "/" + name + ".png";
	std::optional<std::vector<uint8_t>> encoded;
	if (!bytes) {
		encoded = encodePng(*image);
		if (!encoded) {
			log::warning("tray", "encoding a {}x{} icon as PNG failed", image->width, image->height);
			return nullptr;
		}
		bytes = &*encoded;
	}
	if (!fits(bytes->size(), owner)) return nullptr;
	// A regular file of that name (left by a handle that expired a moment ago) has the content;
	// anything else is replaced.
	struct stat st{};
	if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || size_t(st.st_size) != bytes->size()) {
		auto tmp = path + ".tmp";
		// O_EXCL and O_NOFOLLOW: whatever else is at that name (a FIFO, a link) is not written through.
		::unlink(tmp.c_str());
		int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
	bytes_ += bytes->size();
	owners_[owner].bytes += bytes->size();
	auto file = std::make_shared<const IconFile>(std::weak_ptr<IconStore*>(self_), name, path, fileUrl(path), bytes->size(), owner);
	live_[name] = file;
	return file;
}

IconRef IconStore::put(const Image& image, const std::string& owner) {
	if (dir_.empty() || image.empty()) return nullptr;
	return make(contentHash(image), nullptr, &image, owner);
}

IconRef IconStore::putPng(const std::vector<uint8_t>& png, const std::string& owner) {
	if (dir_.empty() || !isPng(png)) return nullptr;
	// A different seed than raw images: the same bytes as pixels and as a PNG are two files.
	return make(contentHash(png.data(), png.size(), 0x706e67), &png, nullptr, owner);
}

void IconStore::forget(const std::string& owner) {
	auto o = owners_.find(owner);
	if (o == owners_.end()) return;
	if (o->second.bytes == 0) owners_.erase(o);
	else o->second.warned = false;
}

size_t IconStore::bytesOf(const std::string& owner) const {
	auto o = owners_.find(owner);
	return o == owners_.end() ? 0 : o->second.bytes;
}

void IconStore::released(const std::string& name, const std::string& path, size_t size, const std::string& owner) {
	bytes_ -= size;
	if (auto o = owners_.find(owner); o != owners_.end()) {
		o->second.bytes -= size;
		// Its refusals were logged: keep that until the owner is forgotten.
		if (o->second.bytes == 0 && !o->second.warned) owners_.erase(o);
	}
	// Room again: the next time the store fills up is logged too.
	if (bytes_ < limits_.maxBytes / 2) fullWarned_ = false;
	auto it = live_.find(name);
	// A newer handle for the same name (made after this one expired) keeps the file.
	if (it != live_.end() && it->second.expired()) live_.erase(it);
	else if (it != live_.end()) return;
	::unlink(path.c_str());
}

} // namespace qsd::tray
