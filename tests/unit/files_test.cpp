// daemon/files.hpp: reading a file whole, and replacing one so that a reader never sees half.

#include "files.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include <sys/stat.h>

namespace fs = std::filesystem;

namespace {
struct TempDir {
	fs::path path;
	TempDir() {
		std::string tmpl = (fs::temp_directory_path() / "qsd-files-test.XXXXXX").string();
		if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
		path = tmpl;
	}
	~TempDir() {
		std::error_code ec;
		fs::remove_all(path, ec);
	}
};
} // namespace

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
