// An item's icon fields (daemon/backends/tray/icons.hpp): the overlay composed once per (icon,
// overlay) pair while an item shows it, and icon files larger than the pixmap limit left to the
// client instead of being decoded (an item once had qsd decode, compose and encode a 4096 px PNG
// on every NewIcon).

#ifdef QSD_TRAY_BACKEND

#include "backends/tray/icons.hpp"
#include "files.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace qsd::tray;
using qsd::fileUrl;
using qsd::testing::TempDir;
namespace fs = std::filesystem;

namespace {

Image solid(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
	Image i{w, h, {}};
	for (int k = 0; k < w * h; ++k) i.rgba.insert(i.rgba.end(), {r, g, b, 255});
	return i;
}

void writePng(const fs::path& path, const Image& image) {
	auto bytes = encodePng(image);
	ASSERT_TRUE(bytes);
	std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes->data()), std::streamsize(bytes->size()));
}

struct IconsFixture {
	TempDir tmp;
	IconTheme theme{[] {
		IconTheme::Options o;
		o.watch = false;
		return o;
	}()};
	std::unique_ptr<IconStore> store;
	std::unique_ptr<IconResolver> resolver;
	IconsFixture() {
		fs::create_directories(tmp.path / "run" / "icons");
		store = std::make_unique<IconStore>((tmp.path / "run" / "icons").string());
		resolver = std::make_unique<IconResolver>(theme, *store);
	}
	IconSources withOverlay(const fs::path& icon) {
		IconSources s;
		s.name = icon.string();
		Pixmap p{4, 4, {}};
		for (int k = 0; k < 16; ++k) p.argb.insert(p.argb.end(), {uint8_t(k < 4 ? 255 : 0), 255, 0, 0});   // one row
		s.overlayPixmaps = {p};
		return s;
	}
};

} // namespace

TEST(TrayIcons, AnOverlayIsComposedOncePerIconAndOverlay) {
	IconsFixture f;
	auto base = f.tmp.path / "base.png";
	writePng(base, solid(32, 32, 0, 0, 255));
	auto first = f.resolver->resolve(f.withOverlay(base));
	ASSERT_TRUE(first.icon.is_string());
	EXPECT_TRUE(first.overlayIcon.is_null());
	EXPECT_EQ(f.resolver->compositions(), 1u);
	// NewIcon again and again, the same icon and overlay: the same file, no new composition.
	for (int i = 0; i < 5; ++i) {
		auto again = f.resolver->resolve(f.withOverlay(base));
		EXPECT_EQ(again.icon, first.icon);
	}
	EXPECT_EQ(f.resolver->compositions(), 1u);
	// Another file in the icon's place is another icon.
	fs::remove(base);
	writePng(base, solid(32, 32, 0, 255, 0));
	auto changed = f.resolver->resolve(f.withOverlay(base));
	EXPECT_NE(changed.icon, first.icon);
	EXPECT_EQ(f.resolver->compositions(), 2u);
	// Once no item holds the composed file, it is composed anew (and written again).
	first = {};
	changed = {};
	auto later = f.resolver->resolve(f.withOverlay(base));
	EXPECT_EQ(f.resolver->compositions(), 3u);
	ASSERT_EQ(later.files.size(), 1u);
	EXPECT_TRUE(fs::exists(later.files[0]->path()));
}

TEST(TrayIcons, AnIconFileLargerThanThePixmapLimitIsNotDecoded) {
	IconsFixture f;
	auto big = f.tmp.path / "big.png";
	writePng(big, solid(kMaxPixmapSide + 1, 8, 9, 9, 9));
	auto r = f.resolver->resolve(f.withOverlay(big));
	// The file itself, with the overlay beside it for the client to layer.
	EXPECT_EQ(r.icon, fileUrl(big.string()));
	EXPECT_TRUE(r.overlayIcon.is_string());
	EXPECT_EQ(f.resolver->compositions(), 0u);
	EXPECT_FALSE(decodePngFile(big.string()));
	auto edge = f.tmp.path / "edge.png";
	writePng(edge, solid(kMaxPixmapSide, 8, 9, 9, 9));
	EXPECT_TRUE(decodePngFile(edge.string()));
}

#endif // QSD_TRAY_BACKEND
