#pragma once
// The PNG files qsd writes for tray icons that are not theme files (IconPixmap, composed
// overlays, DBusMenu icon-data), in one private directory ($XDG_RUNTIME_DIR/qsd/icons).
//
// Files are content-addressed (<hash>.png), so an unchanged icon keeps its URL and two items
// with the same image share one file. Each file is held by shared handles: the items whose
// published state mentions it. When the last handle goes, the file is deleted, so the directory
// holds exactly the icons the tree refers to. Files are written to a temporary name and renamed,
// so a client never reads half a file.

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
	IconFile(std::weak_ptr<IconStore*> store, std::string name, std::string path, std::string url)
	    : store_(std::move(store)), name_(std::move(name)), path_(std::move(path)), url_(std::move(url)) {}
	~IconFile();
	IconFile(const IconFile&) = delete;
	IconFile& operator=(const IconFile&) = delete;

	[[nodiscard]] const std::string& path() const { return path_; }
	[[nodiscard]] const std::string& url() const { return url_; }

private:
	std::weak_ptr<IconStore*> store_;   // expired once the store is gone
	std::string name_;
	std::string path_;
	std::string url_;
};

using IconRef = std::shared_ptr<const IconFile>;

class IconStore {
public:
	// `dir` is created (0700) if missing, and emptied of the PNG files an earlier run left.
	// An empty `dir` disables the store: every put gives nullptr.
	explicit IconStore(std::string dir);
	~IconStore();
	IconStore(const IconStore&) = delete;
	IconStore& operator=(const IconStore&) = delete;

	// The file for this image (written now unless a live handle or the file already has it).
	[[nodiscard]] IconRef put(const Image& image);
	// The file for these PNG bytes (DBusMenu icon-data); nullptr when they are not a PNG.
	[[nodiscard]] IconRef putPng(const std::vector<uint8_t>& png);

	[[nodiscard]] const std::string& dir() const { return dir_; }
	[[nodiscard]] size_t size() const { return live_.size(); }
	[[nodiscard]] bool enabled() const { return !dir_.empty(); }

	// The default directory: $XDG_RUNTIME_DIR/qsd/icons ("" without XDG_RUNTIME_DIR).
	static std::string defaultDir();

private:
	friend class IconFile;
	IconRef make(const std::string& name, const std::vector<uint8_t>* bytes, const Image* image);
	void released(const std::string& name, const std::string& path);

	std::string dir_;
	std::shared_ptr<IconStore*> self_;
	std::map<std::string, std::weak_ptr<const IconFile>> live_;
	bool warned_ = false;
};

} // namespace qsd::tray
