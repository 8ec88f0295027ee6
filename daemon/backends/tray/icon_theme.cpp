#include "icon_theme.hpp"

#include "../../files.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <sys/stat.h>

namespace qsd::tray {

namespace fs = std::filesystem;

namespace {

constexpr const char* kExtensions[] = {".png", ".svg", ".xpm"};
// A private theme tree without index.theme is walked to this depth and at most this many
// directories ("hicolor/48x48/apps" is depth 2 below the theme directory).
constexpr int kScanDepth = 3;
constexpr size_t kScanDirs = 512;

bool isFile(const std::string& path) {
	struct stat st{};
	return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool isDir(const std::string& path) {
	struct stat st{};
	return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string trim(std::string s) {
	auto notSpace = [](unsigned char c) { return !std::isspace(c); };
	s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
	s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
	return s;
}

std::vector<std::string> splitList(const std::string& s, char sep) {
	std::vector<std::string> out;
	size_t start = 0;
	while (start <= s.size()) {
		size_t end = s.find(sep, start);
		if (end == std::string::npos) end = s.size();
		auto item = trim(s.substr(start, end - start));
		if (!item.empty()) out.push_back(std::move(item));
		start = end + 1;
	}
	return out;
}

// A tiny INI reader: section -> key -> value (enough for index.theme, settings.ini, kdeglobals).
using Ini = std::map<std::string, std::map<std::string, std::string>>;

std::optional<Ini> readIni(const std::string& path) {
	auto text = readFile(path, 1u << 20);
	if (!text) return std::nullopt;
	Ini ini;
	std::string section;
	for (const auto& line: splitList(*text, '\n')) {   // trimmed, empty lines left out
		if (line[0] == '#' || line[0] == ';') continue;
		if (line.front() == '[' && line.back() == ']') {
			section = line.substr(1, line.size() - 2);
			continue;
		}
		auto eq = line.find('=');
		if (eq == std::string::npos) continue;
		ini[section][trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
	}
	return ini;
}

int toInt(const std::map<std::string, std::string>& m, const char* key, int fallback) {
	auto it = m.find(key);
	if (it == m.end()) return fallback;
	char* end = nullptr;
	long v = std::strtol(it->second.c_str(), &end, 10);
	return end == it->second.c_str() ? fallback : int(std::clamp(v, 0L, 100000L));
}

std::string env(const char* name) {
	const char* v = std::getenv(name);
	return v ? std::string(v) : std::string();
}

std::string configHome() {
	auto c = env("XDG_CONFIG_HOME");
	return c.empty() ? env("HOME") + "/.config" : c;
}

} // namespace

struct IconTheme::Directory {
	enum class Type { Fixed, Scalable, Threshold };
	std::string path;          // relative to the theme directory
	int size = 0;
	int scale = 1;
	Type type = Type::Threshold;
	int minSize = 0;
	int maxSize = 0;
	int threshold = 2;

	// The specification's DirectoryMatchesSize and DirectorySizeDistance, at scale 1.
	[[nodiscard]] bool matches(int want) const {
		if (scale != 1) return false;
		switch (type) {
		case Type::Fixed: return size == want;
		case Type::Scalable: return minSize <= want && want <= maxSize;
		case Type::Threshold: return size - threshold <= want && want <= size + threshold;
		}
		return false;
	}
	[[nodiscard]] int distance(int want) const {
		int lo = size * scale, hi = size * scale;
		if (type == Type::Scalable) {
			lo = minSize * scale;
			hi = maxSize * scale;
		} else if (type == Type::Threshold) {
			lo = (size - threshold) * scale;
			hi = (size + threshold) * scale;
		}
		if (want < lo) return lo - want;
		if (want > hi) return want - hi;
		return 0;
	}
};

struct IconTheme::Index {
	std::vector<std::string> inherits;
	std::vector<Directory> directories;
};

namespace {

std::unique_ptr<IconTheme::Index> parseIndex(const std::string& file) {
	auto ini = readIni(file);
	if (!ini) return nullptr;
	auto index = std::make_unique<IconTheme::Index>();
	const auto& head = (*ini)["Icon Theme"];
	if (auto it = head.find("Inherits"); it != head.end()) index->inherits = splitList(it->second, ',');
	std::vector<std::string> dirs;
	for (const char* key: {"Directories", "ScaledDirectories"})
		if (auto it = head.find(key); it != head.end())
			for (auto& d: splitList(it->second, ',')) dirs.push_back(d);
	std::set<std::string> seen;
	for (const auto& d: dirs) {
		if (!seen.insert(d).second) continue;
		auto sec = ini->find(d);
		if (sec == ini->end()) continue;
		IconTheme::Directory dir;
		dir.path = d;
		dir.size = toInt(sec->second, "Size", 0);
		dir.scale = std::max(1, toInt(sec->second, "Scale", 1));
		auto type = sec->second.count("Type") ? sec->second.at("Type") : std::string("Threshold");
		dir.type = type == "Fixed"      ? IconTheme::Directory::Type::Fixed
		           : type == "Scalable" ? IconTheme::Directory::Type::Scalable
		                                : IconTheme::Directory::Type::Threshold;
		dir.minSize = toInt(sec->second, "MinSize", dir.size);
		dir.maxSize = toInt(sec->second, "MaxSize", dir.size);
		dir.threshold = toInt(sec->second, "Threshold", 2);
		index->directories.push_back(std::move(dir));
	}
	return index;
}

// The size a directory of a private tree without index.theme stands for, from its path:
// "48x48", "48x48@2", "48" (KDE's "apps/48") or "scalable". Unknown names give a Fixed size 0
// (found, but the farthest from any wanted size).
IconTheme::Directory guessDirectory(const std::string& relative) {
	IconTheme::Directory dir;
	dir.path = relative;
	dir.type = IconTheme::Directory::Type::Fixed;
	for (const auto& part: splitList(relative, '/')) {
		if (part == "scalable") {
			dir.type = IconTheme::Directory::Type::Scalable;
			dir.size = 64;
			dir.minSize = 1;
			dir.maxSize = 4096;
			return dir;
		}
		auto x = part.find('x');
		std::string digits = x == std::string::npos ? part : part.substr(0, x);
		if (!digits.empty() && std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; }) && digits.size() < 6) {
			dir.size = std::stoi(digits);
			auto at = part.find('@');
			if (at != std::string::npos) dir.scale = std::max(1, std::atoi(part.c_str() + at + 1));
			dir.minSize = dir.maxSize = dir.size;
			return dir;
		}
	}
	return dir;
}

// The best of `candidates` (directory, file) for `size`: an exact match first, else the
// smallest distance; earlier candidates win ties (the order is the specification's).
std::string best(const std::vector<std::pair<const IconTheme::Directory*, std::string>>& candidates, int size) {
	const std::string* closest = nullptr;
	int minimal = INT_MAX;
	for (const auto& [dir, file]: candidates) {
		if (dir->matches(size)) return file;
		int d = dir->distance(size);
		if (d < minimal) {
			minimal = d;
			closest = &file;
		}
	}
	return closest ? *closest : std::string();
}

} // namespace

std::string IconTheme::currentTheme(std::string* source) {
	auto set = [&](const char* from) {
		if (source) *source = from;
	};
	if (auto t = env("QSD_ICON_THEME"); !t.empty()) {
		set("QSD_ICON_THEME");
		return t;
	}
	for (const char* gtk: {"gtk-3.0", "gtk-4.0"}) {
		if (auto ini = readIni(configHome() + "/" + gtk + "/settings.ini")) {
			auto& s = (*ini)["Settings"];
			if (auto it = s.find("gtk-icon-theme-name"); it != s.end() && !it->second.empty()) {
				set(gtk);
				auto v = it->second;
				if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
				return v;
			}
		}
	}
	if (auto ini = readIni(configHome() + "/kdeglobals")) {
		auto& s = (*ini)["Icons"];
		if (auto it = s.find("Theme"); it != s.end() && !it->second.empty()) {
			set("kdeglobals");
			return it->second;
		}
	}
	set("default");
	return "hicolor";
}

IconTheme::Options IconTheme::fromEnvironment(int size) {
	Options o;
	o.theme = currentTheme();
	o.size = size;
	auto home = env("HOME");
	if (!home.empty()) o.baseDirs.push_back(home + "/.icons");
	auto dataHome = env("XDG_DATA_HOME");
	if (dataHome.empty() && !home.empty()) dataHome = home + "/.local/share";
	if (!dataHome.empty()) o.baseDirs.push_back(dataHome + "/icons");
	auto dataDirs = env("XDG_DATA_DIRS");
	if (dataDirs.empty()) dataDirs = "/usr/local/share:/usr/share";
	for (const auto& d: splitList(dataDirs, ':')) o.baseDirs.push_back(d + "/icons");
	o.pixmapDirs.push_back("/usr/share/pixmaps");
	return o;
}

IconTheme::IconTheme(Options options): options_(std::move(options)) {
	// The chain: the theme, what it inherits (depth first, each once), hicolor last.
	std::set<std::string> seen;
	std::vector<std::string> stack;
	if (!options_.theme.empty() && options_.theme != "hicolor") stack.push_back(options_.theme);
	while (!stack.empty() && chain_.size() < 32) {
		auto t = stack.back();
		stack.pop_back();
		if (t == "hicolor" || !seen.insert(t).second) continue;
		chain_.push_back(t);
		if (const auto* idx = index(t))
			for (auto it = idx->inherits.rbegin(); it != idx->inherits.rend(); ++it) stack.push_back(*it);
	}
	chain_.push_back("hicolor");
}

IconTheme::~IconTheme() = default;

void IconTheme::clearCache() {
	cache_.clear();
	indexes_.clear();
}

const IconTheme::Index* IconTheme::index(const std::string& theme) {
	auto it = indexes_.find(theme);
	if (it != indexes_.end()) return it->second.get();
	std::unique_ptr<Index> found;
	for (const auto& base: options_.baseDirs) {
		auto file = base + "/" + theme + "/index.theme";
		if (isFile(file) && (found = parseIndex(file))) break;
	}
	return indexes_.emplace(theme, std::move(found)).first->second.get();
}

std::string IconTheme::lookupInTheme(const std::string& name, const std::string& theme, const std::vector<std::string>& bases) {
	const Index* idx = index(theme);
	if (!idx) return {};
	// Every file of this name in the theme's directories, in the specification's order
	// (directory, then base directory, then extension); the best size wins.
	std::vector<std::pair<const Directory*, std::string>> candidates;
	for (const auto& dir: idx->directories) {
		for (const auto& base: bases) {
			auto prefix = base + "/" + theme + "/" + dir.path + "/" + name;
			for (const char* ext: kExtensions)
				if (isFile(prefix + ext)) {
					if (dir.matches(options_.size)) return prefix + ext;
					candidates.emplace_back(&dir, prefix + ext);
				}
		}
	}
	return best(candidates, options_.size);
}

std::string IconTheme::lookupInTree(const std::string& name, const std::string& themeDir) {
	if (!isDir(themeDir)) return {};
	std::vector<Directory> dirs;
	if (auto own = parseIndex(themeDir + "/index.theme")) {
		dirs = std::move(own->directories);
	} else {
		// No index.theme: every directory below the theme directory, to kScanDepth levels.
		std::error_code ec;
		auto it = fs::recursive_directory_iterator(themeDir, fs::directory_options::skip_permission_denied, ec);
		for (; !ec && it != fs::recursive_directory_iterator() && dirs.size() < kScanDirs; it.increment(ec)) {
			if (it.depth() >= kScanDepth) it.disable_recursion_pending();
			if (!it->is_directory(ec)) continue;
			// The path below themeDir (fs::relative would resolve symlinks: a stat per component).
			dirs.push_back(guessDirectory(it->path().string().substr(themeDir.size() + 1)));
		}
		std::sort(dirs.begin(), dirs.end(), [](const Directory& a, const Directory& b) { return a.path < b.path; });
	}
	std::vector<std::pair<const Directory*, std::string>> candidates;
	for (const auto& dir: dirs) {
		auto prefix = themeDir + "/" + dir.path + "/" + name;
		for (const char* ext: kExtensions)
			if (isFile(prefix + ext)) candidates.emplace_back(&dir, prefix + ext);
	}
	return best(candidates, options_.size);
}

std::string IconTheme::lookup(const std::string& name, const std::string& themePath) {
	if (name.empty() || name.find('\0') != std::string::npos) return {};
	// Some items send a file instead of a name (an absolute path, often into /tmp).
	if (name[0] == '/') return isFile(name) ? name : std::string();
	if (name.find('/') != std::string::npos) return {};
	bool appTree = !themePath.empty() && themePath[0] == '/' && isDir(themePath);
	for (const auto& theme: chain_) {
		auto key = theme + '\n' + name;
		auto it = cache_.find(key);
		if (it == cache_.end()) it = cache_.emplace(key, lookupInTheme(name, theme, options_.baseDirs)).first;
		// A cached file that went away (a theme uninstalled) is looked up again next time.
		if (!it->second.empty()) {
			if (isFile(it->second)) return it->second;
			cache_.erase(it);
			auto again = lookupInTheme(name, theme, options_.baseDirs);
			if (!again.empty()) return cache_[key] = again;
		}
		// The item's own tree of this theme: never cached (apps write new icons into it).
		if (appTree)
			if (auto f = lookupInTree(name, themePath + "/" + theme); !f.empty()) return f;
	}
	// Flat: the item's directory, then the base directories and the pixmap directories.
	std::vector<std::string> flat;
	if (appTree) flat.push_back(themePath);
	flat.insert(flat.end(), options_.baseDirs.begin(), options_.baseDirs.end());
	flat.insert(flat.end(), options_.pixmapDirs.begin(), options_.pixmapDirs.end());
	for (const auto& dir: flat) {
		for (const char* ext: kExtensions)
			if (isFile(dir + "/" + name + ext)) return dir + "/" + name + ext;
		// A name that carries its extension already ("app.png").
		if (dir == themePath && isFile(dir + "/" + name)) return dir + "/" + name;
	}
	return {};
}

} // namespace qsd::tray
