#pragma once
// Reading small files (an icon theme's index.theme, a PNG, /proc/<pid>/comm) with plain read(2),
// and writing one so that a reader sees the old content or the new, never half of it.
// Why not <fstream>: iostreams page in libstdc++'s locale machinery, about half a MiB of RSS
// for a daemon that reads a few small files (docs/performance.md, "memory").
//
// Many of these paths come from peers (a tray item's IconThemePath, an icon file it names), so
// a read must never block the loop: a FIFO or a device put where a file is expected would hang
// open() or read() for good. Files are opened with O_NONBLOCK, checked with fstat to be regular
// files, and read up to a limit (docs/architecture.md, "Hostile peers").

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace qsd {

// The whole file, or std::nullopt when it cannot be opened or read, is not a regular file, or is
// larger than `limit`.
[[nodiscard]] std::optional<std::string> readFile(const std::string& path, size_t limit = 16u << 20);

// Writes `data` to `path` (mode 0600) through a temporary file in the same directory renamed over
// it. False, with errno's text in `error`, when it could not (the old file is then untouched).
bool writeFileAtomically(const std::string& path, std::string_view data, std::string* error = nullptr);

// writeFileAtomically for a file qsd writes again and again (a backend's state for its next run):
// a failure is logged once, as a warning of `area` saying what it costs (`consequence`), until a
// write works again; `failed` is the caller's memory of that. False when the write failed.
bool writeKeptFile(const std::string& path, std::string_view data, bool& failed, const char* area,
                   const char* consequence);

// A file path as a file:// URL, percent-encoding what RFC 3986 does not allow in a path.
[[nodiscard]] std::string fileUrl(std::string_view path);

} // namespace qsd
