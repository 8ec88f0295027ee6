#pragma once
// Reading small files (an icon theme's index.theme, a PNG, /proc/<pid>/comm) with plain read(2).
// Why not <fstream>: iostreams page in libstdc++'s locale machinery, about half a MiB of RSS
// for a daemon that reads a few small files (docs/performance.md, "memory").

#include <cstddef>
#include <optional>
#include <string>

namespace qsd {

// The whole file, or std::nullopt when it cannot be opened or read or is larger than `limit`.
[[nodiscard]] std::optional<std::string> readFile(const std::string& path, size_t limit = 16u << 20);

} // namespace qsd
