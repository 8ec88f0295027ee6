// readFile (daemon/files.hpp): only regular files, never blocking, within a limit. Paths come
// from peers (an item's IconThemePath): a FIFO there once hung the daemon in open() for good.
// writeFileAtomically: replacing a file so that a reader never sees half of it.

#include "files.hpp"
#include "helpers.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace qsd;
using qsd::testing::TempDir;
namespace fs = std::filesystem;

using qsd::testing::finishes;

TEST(ReadFile, ReadsARegularFileWithinItsLimit) {
	TempDir d;
	std::ofstream(d.path / "f") << "hello";
	EXPECT_EQ(readFile((d.path / "f").string()), "hello");
	EXPECT_EQ(readFile((d.path / "f").string(), 5), "hello");
	EXPECT_EQ(readFile((d.path / "f").string(), 4), std::nullopt);
	EXPECT_EQ(readFile((d.path / "missing").string()), std::nullopt);
	// A directory is not a file.
	EXPECT_EQ(readFile(d.path.string()), std::nullopt);
	// /proc files say they are empty; they are read up to the limit all the same.
	auto comm = readFile("/proc/self/comm", 4096);
	ASSERT_TRUE(comm);
	EXPECT_FALSE(comm->empty());
}

TEST(ReadFile, NeverOpensAFifoOrADevice) {
	TempDir d;
	auto fifo = (d.path / "fifo").string();
	ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
	EXPECT_TRUE(finishes([&] { return !readFile(fifo) && !readFile("/dev/zero") && !readFile("/dev/null"); }));
	// Through a symbolic link as well.
	fs::create_symlink(fifo, d.path / "link");
	EXPECT_TRUE(finishes([&] { return !readFile((d.path / "link").string()); }));
}

TEST(Files, WriteAtomicallyReplacesAndReadsBack) {
	TempDir dir;
	auto file = (dir.path / "state.json").string();
	ASSERT_TRUE(qsd::writeFileAtomically(file, "first"));
	EXPECT_EQ(qsd::readFile(file), "first");
	ASSERT_TRUE(qsd::writeFileAtomically(file, std::string(100000, 'x')));
	EXPECT_EQ(qsd::readFile(file)->size(), 100000u);
	struct stat st{};
	ASSERT_EQ(::stat(file.c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0600u);
	// No temporary file is left behind.
	EXPECT_FALSE(fs::exists(file + ".tmp"));
	EXPECT_EQ(qsd::readFile(file, 10), std::nullopt);   // larger than the limit
}

TEST(Files, AFailedWriteLeavesTheOldFile) {
	TempDir dir;
	auto file = (dir.path / "state.json").string();
	ASSERT_TRUE(qsd::writeFileAtomically(file, "kept"));
	std::string error;
	EXPECT_FALSE(qsd::writeFileAtomically((dir.path / "missing" / "x.json").string(), "lost", &error));
	EXPECT_FALSE(error.empty());
	// A directory where the temporary file would go: the rename target is untouched.
	fs::create_directory(file + ".tmp");
	EXPECT_FALSE(qsd::writeFileAtomically(file, "new", &error));
	EXPECT_EQ(qsd::readFile(file), "kept");
}

TEST(Files, FileUrlsArePercentEncoded) {
	EXPECT_EQ(fileUrl("/usr/share/icons/hicolor/48x48/apps/firefox.png"), "file:///usr/share/icons/hicolor/48x48/apps/firefox.png");
	EXPECT_EQ(fileUrl("/tmp/my icons/a#b%.png"), "file:///tmp/my%20icons/a%23b%25.png");
	EXPECT_EQ(fileUrl("/tmp/\xc3\xa9.png"), "file:///tmp/%C3%A9.png");
}
