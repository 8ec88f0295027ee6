// Tray icon pixels (daemon/backends/tray/pixmap.hpp, icon_store.hpp): which IconPixmap is used,
// ARGB32 in network byte order to RGBA, overlay composition, PNG round trips, and the
// content-addressed icon files that go when nothing refers to them.

#ifdef QSD_TRAY_BACKEND

#include "backends/tray/icon_store.hpp"
#include "backends/tray/pixmap.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace qsd::tray;
using qsd::testing::TempDir;
namespace fs = std::filesystem;

namespace {

Pixmap solid(int w, int h, uint8_t a, uint8_t r, uint8_t g, uint8_t b) {
	Pixmap p{w, h, {}};
	for (int i = 0; i < w * h; ++i) p.argb.insert(p.argb.end(), {a, r, g, b});
	return p;
}

size_t pngFiles(const fs::path& dir) {
	size_t n = 0;
	for (const auto& e: fs::directory_iterator(dir))
		if (e.path().extension() == ".png") ++n;
	return n;
}

// What a running qsd holds while its store lives: an exclusive flock() on the directory.
struct HeldLock {
	int fd;
	explicit HeldLock(const fs::path& dir): fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
		if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) throw std::runtime_error("cannot lock " + dir.string());
	}
	~HeldLock() { ::close(fd); }
	HeldLock(const HeldLock&) = delete;
	HeldLock& operator=(const HeldLock&) = delete;
};

} // namespace

TEST(TrayPixmap, ChoosesTheSmallestAtLeastTheTargetElseTheLargest) {
	std::vector<Pixmap> p = {solid(16, 16, 255, 0, 0, 0), solid(128, 128, 255, 0, 0, 0), solid(64, 64, 255, 0, 0, 0),
	                         solid(32, 32, 255, 0, 0, 0)};
	EXPECT_EQ(choosePixmap(p, 64), 2u);
	EXPECT_EQ(choosePixmap(p, 65), 1u);
	EXPECT_EQ(choosePixmap(p, 200), 1u);   // none is large enough: the largest
	EXPECT_EQ(choosePixmap(p, 1), 0u);
	// Both sides must reach the target: 96x32 does not cover 64.
	std::vector<Pixmap> wide = {solid(96, 32, 255, 0, 0, 0), solid(72, 72, 255, 0, 0, 0)};
	EXPECT_EQ(choosePixmap(wide, 64), 1u);
	// Invalid entries are never chosen.
	std::vector<Pixmap> bad = {Pixmap{64, 64, std::vector<uint8_t>(10)}, Pixmap{0, 0, {}}, solid(8, 8, 255, 0, 0, 0),
	                           Pixmap{2000, 1, std::vector<uint8_t>(8000)}};
	EXPECT_EQ(choosePixmap(bad, 64), 2u);
	EXPECT_FALSE(choosePixmap({}, 64));
	EXPECT_FALSE(choosePixmap({Pixmap{4, 4, {}}}, 64));
}

// wire.cpp chooses while it reads, one entry at a time, and keeps only that one.
TEST(TrayPixmap, AChoiceMadeOneEntryAtATimeIsChoosePixmaps) {
	std::vector<std::vector<Pixmap>> lists = {
	    {solid(16, 16, 255, 0, 0, 0), solid(128, 128, 255, 0, 0, 0), solid(64, 64, 255, 0, 0, 0), solid(32, 32, 255, 0, 0, 0)},
	    {solid(96, 32, 255, 0, 0, 0), solid(72, 72, 255, 0, 0, 0), solid(72, 72, 255, 0, 0, 0)},
	    {Pixmap{64, 64, std::vector<uint8_t>(10)}, Pixmap{0, 0, {}}, solid(8, 8, 255, 0, 0, 0),
	     Pixmap{2000, 1, std::vector<uint8_t>(8000)}, Pixmap{1, 1, std::vector<uint8_t>(4 << 20)}},
	    {solid(8, 8, 255, 0, 0, 0), solid(16, 16, 255, 0, 0, 0), solid(256, 256, 255, 0, 0, 0), solid(64, 64, 255, 0, 0, 0)},
	    {},
	};
	for (int target: {1, 64, 65, 200}) {
		for (const auto& list: lists) {
			PixmapChoice choice(target);
			std::optional<size_t> last;   // the last entry offer() called the choice so far
			for (size_t i = 0; i < list.size(); ++i)
				if (choice.offer(list[i].width, list[i].height, list[i].argb.size())) last = i;
			EXPECT_EQ(choice.chosen(), choosePixmap(list, target));
			EXPECT_EQ(last, choice.chosen());
		}
	}
	EXPECT_FALSE(isValidPixmap(1, 1, 4 << 20));
	EXPECT_FALSE(isValidPixmap(1025, 1, 1025 * 4));
	EXPECT_TRUE(isValidPixmap(1024, 1024, 4 << 20));
}

TEST(TrayPixmap, ArgbInNetworkByteOrderBecomesRgba) {
	Pixmap p{2, 1, {0x80, 0x11, 0x22, 0x33, 0xff, 0xaa, 0xbb, 0xcc}};
	auto img = toRgba(p);
	EXPECT_EQ(img.width, 2);
	EXPECT_EQ(img.height, 1);
	EXPECT_EQ(img.rgba, (std::vector<uint8_t>{0x11, 0x22, 0x33, 0x80, 0xaa, 0xbb, 0xcc, 0xff}));
	EXPECT_TRUE(toRgba(Pixmap{2, 2, {1, 2, 3}}).empty());
}

TEST(TrayPixmap, OverlayIsScaledAndComposedSourceOver) {
	auto base = toRgba(solid(4, 4, 255, 255, 0, 0));
	Image overlay{2, 2, {0, 0, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};   // top-left blue
	composeOver(base, overlay);
	auto px = [&](int x, int y) {
		const uint8_t* d = &base.rgba[size_t(y * 4 + x) * 4];
		return std::vector<uint8_t>(d, d + 4);
	};
	EXPECT_EQ(px(0, 0), (std::vector<uint8_t>{0, 0, 255, 255}));
	EXPECT_EQ(px(3, 3), (std::vector<uint8_t>{255, 0, 0, 255}));
	// Half-transparent over transparent keeps its colour and alpha.
	Image clear{1, 1, {0, 0, 0, 0}};
	composeOver(clear, Image{1, 1, {10, 20, 30, 128}});
	EXPECT_EQ(clear.rgba, (std::vector<uint8_t>{10, 20, 30, 128}));
	// Scaling a transparent neighbour does not darken the edge.
	auto s = scaled(Image{2, 1, {200, 100, 50, 255, 0, 0, 0, 0}}, 4, 1);
	EXPECT_EQ(s.rgba[0], 200);
	EXPECT_EQ(s.rgba[4], 200);   // partly transparent, same colour
	EXPECT_LT(s.rgba[7], 255);
}

TEST(TrayPixmap, PngRoundTrip) {
	auto img = toRgba(solid(3, 2, 200, 1, 2, 3));
	auto png = encodePng(img);
	ASSERT_TRUE(png);
	EXPECT_TRUE(isPng(*png));
	auto back = decodePng(*png);
	ASSERT_TRUE(back);
	EXPECT_EQ(back->width, 3);
	EXPECT_EQ(back->height, 2);
	EXPECT_EQ(back->rgba, img.rgba);
	EXPECT_FALSE(decodePng({1, 2, 3}));
	EXPECT_FALSE(encodePng(Image{}));
}

TEST(TrayPixmap, ContentHashDependsOnSizeAndBytes) {
	Image a{2, 1, std::vector<uint8_t>(8, 7)}, b{1, 2, std::vector<uint8_t>(8, 7)};
	EXPECT_NE(contentHash(a), contentHash(b));
	EXPECT_EQ(contentHash(a), contentHash(Image{2, 1, std::vector<uint8_t>(8, 7)}));
	EXPECT_EQ(contentHash(a).size(), 16u);
}

TEST(TrayIconStore, FilesAreContentAddressedSharedAndRemovedWhenUnused) {
	TempDir tmp;
	auto dir = tmp.path / "qsd" / "icons";
	fs::create_directories(dir);
	std::ofstream(dir / "stale.png") << "left over";
	IconStore store(dir.string());
	EXPECT_EQ(pngFiles(dir), 0u);   // an earlier run's files are gone

	auto red = toRgba(solid(8, 8, 255, 255, 0, 0));
	auto f1 = store.put(red);
	ASSERT_TRUE(f1);
	EXPECT_EQ(f1->path(), (dir / (contentHash(red) + ".png")).string());
	EXPECT_EQ(f1->url(), "file://" + f1->path());
	auto decoded = decodePngFile(f1->path());
	ASSERT_TRUE(decoded);
	EXPECT_EQ(decoded->rgba, red.rgba);
	auto f2 = store.put(red);
	EXPECT_EQ(f1, f2);   // one file, shared
	auto blue = store.put(toRgba(solid(8, 8, 255, 0, 0, 255)));
	EXPECT_EQ(pngFiles(dir), 2u);
	f1.reset();
	EXPECT_TRUE(fs::exists(f2->path()));
	auto path = f2->path();
	f2.reset();
	EXPECT_FALSE(fs::exists(path));   // the last reference went
	EXPECT_EQ(store.size(), 1u);
	// icon-data: PNG bytes as they are; anything else is refused.
	auto bytes = *encodePng(red);
	auto data = store.putPng(bytes);
	ASSERT_TRUE(data);
	std::ifstream in(data->path(), std::ios::binary);
	std::vector<uint8_t> written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	EXPECT_EQ(written, bytes);
	EXPECT_FALSE(store.putPng({1, 2, 3}));
	EXPECT_FALSE(IconStore("").put(red));
}

TEST(TrayIconStore, FilesAreBoundedInAllAndPerItem) {
	TempDir tmp;
	auto dir = tmp.path / "icons";
	IconStore store(dir.string(), {.maxBytes = 3000, .maxOwnerBytes = 2000});
	auto png = [](uint8_t seed) {
		std::vector<uint8_t> p = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
		p.resize(900, seed);
		return p;
	};
	auto a1 = store.putPng(png(1), "a");
	auto a2 = store.putPng(png(2), "a");
	ASSERT_TRUE(a1 && a2);
	EXPECT_EQ(store.bytesOf("a"), 1800u);
	// Over the item's share: refused, the others' shares are not touched.
	EXPECT_FALSE(store.putPng(png(3), "a"));
	// A file that exists already costs nothing more.
	EXPECT_EQ(store.putPng(png(1), "b"), a1);
	auto b1 = store.putPng(png(4), "b");
	ASSERT_TRUE(b1);
	EXPECT_EQ(store.bytes(), 2700u);
	// Over the whole store's.
	EXPECT_FALSE(store.putPng(png(5), "c"));
	EXPECT_EQ(pngFiles(dir), 3u);
	// What no item holds is deleted, and its room is free again.
	a2.reset();
	EXPECT_EQ(store.bytes(), 1800u);
	EXPECT_EQ(pngFiles(dir), 2u);
	EXPECT_TRUE(store.putPng(png(5), "c"));
	store.forget("a");
	a1.reset();
	b1.reset();
	EXPECT_EQ(store.bytesOf("a"), 0u);
}

TEST(TrayIconStore, WhatIsInTheWayOfAFileIsReplacedNotWrittenThrough) {
	TempDir tmp;
	auto dir = tmp.path / "icons";
	IconStore store(dir.string());
	auto red = toRgba(solid(8, 8, 255, 255, 0, 0));
	auto name = contentHash(red);
	// A FIFO where the temporary file goes, and one where the file goes: opening either for
	// writing would wait for a reader.
	ASSERT_EQ(::mkfifo((dir / (name + ".png.tmp")).c_str(), 0600), 0);
	ASSERT_EQ(::mkfifo((dir / (name + ".png")).c_str(), 0600), 0);
	auto f = store.put(red);
	ASSERT_TRUE(f);
	EXPECT_TRUE(fs::is_regular_file(f->path()));
	EXPECT_EQ(decodePngFile(f->path())->rgba, red.rgba);
}

TEST(TrayIconStore, ASecondInstanceWritesIntoADirectoryOfItsOwnAndLeavesTheFirstOnesFiles) {
	TempDir tmp;
	auto dir = tmp.path / "qsd" / "icons";
	auto first = tmp.file("qsd/icons/0123456789abcdef.png", "the first qsd's icon");
	auto red = toRgba(solid(8, 8, 255, 255, 0, 0));
	std::string own;
	{
		HeldLock running(dir);
		IconStore store(dir.string(), {}, IconStore::Sharing::Instances);
		ASSERT_TRUE(store.enabled());
		own = store.dir();
		EXPECT_EQ(fs::path(own).parent_path(), dir.parent_path());
		EXPECT_TRUE(fs::path(own).filename().string().starts_with("icons-")) << own;
		EXPECT_TRUE(fs::exists(first));
		auto f = store.put(red);
		ASSERT_TRUE(f);
		EXPECT_EQ(fs::path(f->path()).parent_path(), fs::path(own));
		EXPECT_EQ(f->url(), "file://" + f->path());
		// A third one, meanwhile, leaves both alone.
		IconStore third(dir.string(), {}, IconStore::Sharing::Instances);
		EXPECT_NE(third.dir(), own);
		EXPECT_TRUE(fs::exists(first));
		EXPECT_TRUE(fs::exists(f->path()));
	}
	// Gone with its store, files and all; the first one's file stays.
	EXPECT_FALSE(fs::exists(own));
	EXPECT_TRUE(fs::exists(first));
	// Nobody holds the directory any more: the next store takes it and empties it.
	{
		IconStore store(dir.string(), {}, IconStore::Sharing::Instances);
		EXPECT_EQ(store.dir(), dir.string());
		EXPECT_FALSE(fs::exists(first));
		auto f = store.put(red);
		ASSERT_TRUE(f);
		EXPECT_EQ(fs::path(f->path()).parent_path(), dir);
	}
	EXPECT_TRUE(fs::exists(dir));
	EXPECT_EQ(pngFiles(dir), 0u);
}

TEST(TrayIconStore, TheDirectoriesOfInstancesThatAreGoneAreRemovedNotThoseOfRunningOnes) {
	TempDir tmp;
	auto dir = tmp.path / "qsd" / "icons";
	auto stale = tmp.file("qsd/icons-crashed/0123456789abcdef.png", "left by a qsd that crashed");
	auto live = tmp.file("qsd/icons-running/0123456789abcdef.png", "a running qsd's icon");
	auto other = tmp.file("qsd/notifications-x/0123456789abcdef.png", "not the tray's");
	HeldLock running(live.parent_path());
	IconStore store(dir.string(), {}, IconStore::Sharing::Instances);
	EXPECT_EQ(store.dir(), dir.string());
	EXPECT_FALSE(fs::exists(stale.parent_path()));
	EXPECT_TRUE(fs::exists(live));
	EXPECT_TRUE(fs::exists(other));
	// A second store (the first holds icons) removes nothing of the running ones either.
	IconStore second(dir.string(), {}, IconStore::Sharing::Instances);
	EXPECT_NE(second.dir(), dir.string());
	EXPECT_TRUE(fs::exists(live));
	EXPECT_TRUE(fs::exists(second.dir()));
}

#endif // QSD_TRAY_BACKEND
