#pragma once
// The PNG files qsd writes for tray icons that are not theme files (IconPixmap, composed
// overlays, DBusMenu icon-data), in one private directory ($XDG_RUNTIME_DIR/qsd/icons).
//
// Files are content-addressed (<hash>.png), so an unchanged icon keeps its URL and two items
// with the same image share one file. Each file is held by shared handles: the items whose
// published state mentions it. When the last handle goes, the file is deleted, so the directory
// holds exactly the icons the tree refers to. Files are written to a temporary name and renamed,
// so a client never reads half a file.
//
// The directory is on $XDG_RUNTIME_DIR, a RAM-backed tmpfs shared with every socket of the
// session, and items decide what goes in it (one sent 40 MiB of menu icon-data): the files take
// at most Limits::maxBytes in all and Limits::maxOwnerBytes per owner, the peer the caller names:
// the D-Bus connection that serves a tray item or sent a notification (the owner whose icon first
// made the file is charged for it). A file that does not fit is not written; the caller's field
// degrades to no icon, and the refusal is logged once per owner and once per time the store fills
// up (docs/architecture.md, "Hostile peers").
//
// Several qsd may run in one session (a second one on another socket, a test instance), each a
// tray host with icon files of its own that its tree points to. With Sharing::Instances a store
// holds an exclusive flock() on its directory itself for as long as it lives (the kernel drops
// it however the process ends): the store that gets the lock on `dir` uses it; one that finds
// it held makes a directory of its own beside it (<dir>-XXXXXX, locked the same way) and removes
// it when it goes. Whoever starts removes the <dir>-* directories nobody holds a lock on: the
// leftovers of instances that crashed or were killed. So no store deletes another running one's
// files, and the files of the dead do not pile up.

#include "pixmap.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qsd::tray {

class IconStore;

// One icon file; deleted when the last handle to it is destroyed.
class IconFile {
public:
	IconFile(std::weak_ptr<IconStore*> store, std::string name, std::string path, std::string url, size_t size,
	         std::string owner)
	    : store_(std::move(store)), name_(std::move(name)), path_(std::move(path)), url_(std::move(url)), size_(size),
	      owner_(std::move(owner)) {}
	~IconFile();
	IconFile(const IconFile&) = delete;
	IconFile& operator=(const IconFile&) = delete;

	[[nodiscard]] const std::string& path() const { return path_; }
	[[nodiscard]] const std::string& url() const { return url_; }
	[[nodiscard]] size_t size() const { return size_; }

private:
	std::weak_ptr<IconStore*> store_;   // expired once the store is gone
	std::string name_;
	std::string path_;
	std::string url_;
	size_t size_;                       // bytes on disk, charged to owner_
	std::string owner_;
};

using IconRef = std::shared_ptr<const IconFile>;

struct IconStoreLimits {
	size_t maxBytes = 32u << 20;        // every file together
	size_t maxOwnerBytes = 4u << 20;    // the files one owner (a connection) made
};

class IconStore {
public:
	using Limits = IconStoreLimits;
	enum class Sharing {
		Alone,       // the caller made sure no other store uses `dir`
		Instances,   // other qsd may be running with the same `dir`: see above
	};

	// `dir` is created (0700) if missing, and emptied of the PNG files an earlier run left
	// (with Sharing::Instances: when this store holds its lock; else a directory of its own is
	// used, see dir()). An empty `dir` disables the store: every put gives nullptr.
	explicit IconStore(std::string dir, Limits limits = {}, Sharing sharing = Sharing::Alone);
	~IconStore();
	IconStore(const IconStore&) = delete;
	IconStore& operator=(const IconStore&) = delete;

	// The file for this image, for `owner` (a connection's unique name): a live file of the same content, or
	// one written now when it fits the limits; nullptr otherwise.
	[[nodiscard]] IconRef put(const Image& image, const std::string& owner = {});
	// The file for these PNG bytes (DBusMenu icon-data); nullptr when they are not a PNG.
	[[nodiscard]] IconRef putPng(const std::vector<uint8_t>& png, const std::string& owner = {});
	// The owner is gone: its refusal is logged again if it comes back.
	void forget(const std::string& owner);

	// Where the files are: `dir`, or with Sharing::Instances possibly <dir>-XXXXXX.
	[[nodiscard]] const std::string& dir() const { return dir_; }
	[[nodiscard]] size_t size() const { return live_.size(); }
	[[nodiscard]] size_t bytes() const { return bytes_; }
	[[nodiscard]] size_t bytesOf(const std::string& owner) const;
	[[nodiscard]] bool enabled() const { return !dir_.empty(); }
	[[nodiscard]] const Limits& limits() const { return limits_; }

	// The default directory: $XDG_RUNTIME_DIR/qsd/icons ("" without XDG_RUNTIME_DIR).
	static std::string defaultDir();

private:
	friend class IconFile;
	IconRef make(const std::string& name, const std::vector<uint8_t>* bytes, const Image* image, const std::string& owner);
	[[nodiscard]] bool fits(size_t size, const std::string& owner);
	void released(const std::string& name, const std::string& path, size_t size, const std::string& owner);
	[[nodiscard]] bool claim();

	std::string dir_;
	int lock_ = -1;          // Sharing::Instances: dir_ opened and flock()ed
	bool ownDir_ = false;    // dir_ is <dir>-XXXXXX, removed with the store
	Limits limits_;
	std::shared_ptr<IconStore*> self_;
	std::map<std::string, std::weak_ptr<const IconFile>> live_;
	size_t bytes_ = 0;
	struct Owner {
		size_t bytes = 0;
		bool warned = false;
	};
	std::map<std::string, Owner> owners_;
	bool warned_ = false;
	bool fullWarned_ = false;
};

} // namespace qsd::tray
