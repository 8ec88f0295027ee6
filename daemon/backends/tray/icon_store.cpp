#include "icon_store.hpp"

#include "../../files.hpp"

#include "mapping.hpp"

#include "../../log.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qsd::tray {

namespace fs = std::filesystem;

namespace {

// A store's lock is a flock() on its directory itself: nothing to make or remove beside it, and
// the kernel drops it when the process ends, however it ends. LOCK_NB: a held lock is an answer
// (another qsd runs), never a wait. O_NOFOLLOW: a link is nobody's directory.
int lockDir(const std::string& path, int* error) {
	int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*error = errno;
		return -1;
	}
	if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
		*error = errno;
		::close(fd);
		return -1;
	}
	return fd;
}

// The locked directory is still the one at `path`: not removed (by a qsd that took it for a
// leftover between our open and flock) nor replaced.
bool stillThere(int fd, const std::string& path) {
	struct stat held{}, now{};
	return ::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
	       held.st_ino == now.st_ino;
}

// The files a store writes (<hash>.png, <hash>.png.tmp); nothing else is touched.
void removeIconFiles(const std::string& dir) {
	std::error_code ec;
	for (const auto& e: fs::directory_iterator(dir, ec)) {
		auto ext = e.path().extension();
		if (ext == ".png" || ext == ".tmp") fs::remove(e.path(), ec);
	}
}

// The <preferred>-* directories whose lock nobody holds: their qsd is gone.
void removeLeftovers(const std::string& preferred, const std::string& mine) {
	auto parent = fs::path(preferred).parent_path();
	auto prefix = fs::path(preferred).filename().string() + "-";
	auto own = fs::path(mine).filename().string();
	std::error_code ec;
	for (const auto& e: fs::directory_iterator(parent, ec)) {
		auto name = e.path().filename().string();
		if (!name.starts_with(prefix) || name == own) continue;
		auto path = e.path().string();
		int error = 0;
		int fd = lockDir(path, &error);
		if (fd < 0) continue;   // held (its qsd runs), or not a directory
		if (stillThere(fd, path)) {
			removeIconFiles(path);
			if (::rmdir(path.c_str()) == 0) log::info("tray", "removed {}, left by a qsd that is gone", path);
			else log::warning("tray", "cannot remove {}, left by a qsd that is gone: {}", path, std::strerror(errno));
		}
		::close(fd);
	}
}

} // namespace

IconFile::~IconFile() {
	if (auto store = store_.lock()) (*store)->released(name_, path_, size_, owner_);
}

std::string IconStore::defaultDir() {
	const char* rt = std::getenv("XDG_RUNTIME_DIR");
	if (!rt || !*rt) return {};
	return std::string(rt) + "/qsd/icons";
}

IconStore::IconStore(std::string dir, Limits limits, Sharing sharing)
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
	if (sharing == Sharing::Instances && !claim()) {
		dir_.clear();
		return;
	}
	// Left over from an earlier run: nothing refers to them any more.
	removeIconFiles(dir_);
}

bool IconStore::claim() {
	auto preferred = dir_;
	int error = 0;
	lock_ = lockDir(preferred, &error);
	if (lock_ < 0 && error != EWOULDBLOCK) {
		// Locks do not work here: the files are written as if this qsd ran alone.
		log::warning("tray", "cannot lock {}: {}; another qsd running in this session would lose its icon files",
		             preferred, std::strerror(error));
		return true;
	}
	if (lock_ < 0) {
		// Another qsd runs and its tree points into `preferred`. A new directory is ours once it
		// is locked and still in place: one starting at the same moment may take it for a
		// leftover between mkdtemp and flock, and remove it.
		for (int attempt = 0; attempt < 8 && lock_ < 0; ++attempt) {
			std::string tmpl = preferred + "-XXXXXX";
			if (!::mkdtemp(tmpl.data())) {
				error = errno;
				break;
			}
			int fd = lockDir(tmpl, &error);
			if (fd >= 0 && stillThere(fd, tmpl)) {
				lock_ = fd;
				dir_ = tmpl;
				ownDir_ = true;
			} else if (fd >= 0) {
				::close(fd);
			}
		}
		if (lock_ < 0) {
			log::warning("tray", "{} is used by another qsd, and a directory beside it cannot be made: {}; icons from "
			             "pixmaps are not available", preferred, std::strerror(error));
			return false;
		}
		log::info("tray", "{} is used by another qsd: this one's icon files go to {}", preferred, dir_);
	}
	removeLeftovers(preferred, dir_);
	return true;
}

// Handles that outlive the store (none should) no longer call back into it: self_ goes. A store
// that holds its directory's lock removes the files it wrote, and the directory if it made it,
// before letting go: once the lock is released, another qsd may take the directory.
IconStore::~IconStore() {
	if (lock_ < 0) return;
	removeIconFiles(dir_);
	if (ownDir_ && ::rmdir(dir_.c_str()) != 0)
		log::warning("tray", "cannot remove {}: {}", dir_, std::strerror(errno));
	::close(lock_);
}

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
