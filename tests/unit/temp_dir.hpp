#pragma once
// A private directory for one test (mkdtemp below the system's temporary directory), removed
// with everything in it when the test ends.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace qsd::testing {

struct TempDir {
	std::filesystem::path path;

	TempDir() {
		std::string tmpl = (std::filesystem::temp_directory_path() / "qsd-test.XXXXXX").string();
		if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
		path = tmpl;
	}
	~TempDir() {
		std::error_code ec;
		std::filesystem::remove_all(path, ec);
	}
	TempDir(const TempDir&) = delete;
	TempDir& operator=(const TempDir&) = delete;

	// Writes `content` to `rel` below the directory, making the directories on the way; its path.
	std::filesystem::path file(const std::filesystem::path& rel, const std::string& content = "x") const {
		auto p = path / rel;
		std::filesystem::create_directories(p.parent_path());
		std::ofstream(p) << content;
		return p;
	}
};

} // namespace qsd::testing
