#pragma once
// Images of notifications as files: icon names looked up in the daemon's icon theme, raw pixels
// written as PNG files, and PNG files named by image-path or app_icon copied (scaled down first
// when larger than a popup shows them), through the tray's icon store (IconStore).
// This file and images.cpp are the only ones that know the tray's types, so that a change of that
// code touches one place.
//
// Stored files live in $XDG_RUNTIME_DIR/qsd/notifications/ (content-addressed <hash>.png, emptied
// of an earlier run's files when an Images is made: the backend makes it once it owns the name,
// so a qsd waiting behind another one leaves that one's files alone) and are deleted when the
// last StoredImage holding one goes.

#include "mapping.hpp"

#include "../../icons/shared_theme.hpp"

#include <memory>
#include <optional>
#include <string>

namespace qsd::notifications {

struct StoredImage {
	std::string path;
	std::string url;
	std::shared_ptr<const void> hold;   // the file lives while a copy of this lives
};

class Images {
public:
	explicit Images(icons::SharedTheme& theme);
	~Images();
	Images(const Images&) = delete;
	Images& operator=(const Images&) = delete;

	// The theme's file for an icon name, as a file:// URL (the daemon's icon theme lookup: it
	// follows the installed themes, so an icon installed while qsd runs is found).
	[[nodiscard]] std::optional<std::string> iconUrl(const std::string& name);

	// The files are charged to `sender` (a connection's unique name): each one may hold
	// kMaxImageBytesPerSender, all of them kMaxImageBytes (docs/backends/notifications.md,
	// "Bounds"); an image beyond that is not stored (std::nullopt).
	// The pixels as a PNG file, scaled down to fit kStoredImageSide first.
	[[nodiscard]] std::optional<StoredImage> storePixels(const Rgba& image, const std::string& sender);
	// The pixels storePixels writes: `image` scaled down to fit kStoredImageSide, or as it is.
	[[nodiscard]] static Rgba fitted(const Rgba& image);
	// What became of a file image-path or app_icon names (a regular file; `size` from its stat).
	struct FileImage {
		enum class Kind {
			Stored,    // a PNG of up to kMaxImageFileBytes: copied, or scaled down to fit
			           // kStoredImageSide and written again when its header gives more
			Refused,   // a PNG whose header gives no sides, or sides beyond kMaxImageSide: not
			           // copied and not to be shown (a shell would decode it whatever its size)
			Other,     // another kind of file, a larger PNG, or no room: shown where it is
		} kind = Kind::Other;
		std::optional<StoredImage> stored;
		std::string why;   // Refused: why, for the log
	};
	[[nodiscard]] FileImage storeFile(const std::string& path, uint64_t size, const std::string& sender);
	// The sender has nothing shown any more: a refusal is logged again if it comes back.
	void forget(const std::string& sender);

	// Where the stored files are ("" without XDG_RUNTIME_DIR: nothing is stored).
	[[nodiscard]] const std::string& dir() const { return dir_; }
	// Where they go: $XDG_RUNTIME_DIR/qsd/notifications ("" without XDG_RUNTIME_DIR).
	[[nodiscard]] static std::string defaultDir();

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
	std::string dir_;
};

} // namespace qsd::notifications
