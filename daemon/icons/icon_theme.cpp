#include "icon_theme.hpp"

#include "../files.hpp"
#include "../log.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include <dirent.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qsd::icons {

namespace {

// In the order a directory's files are preferred: PNG, then XPM (both raster), then SVG.
enum Ext : uint8_t { kPng = 0, kXpm = 1, kSvg = 2 };
constexpr const char* kExtNames[] = {".png", ".xpm", ".svg"};

// A private theme tree without index.theme is walked to this depth ("hicolor/48x48/apps" is
// depth 2 below the theme directory).
constexpr int kScanDepth = 3;
// One theme's files and directories, installed ones included: far above any real theme
// (Adwaita: 1715 names in 107 directories; hicolor's index lists 649 directories).
constexpr size_t kMaxInstalledDirs = 4096;
constexpr size_t kMaxInstalledNames = 65536;
// Directory entries read for one installed theme (Papirus, among the largest, has about 100 000
// files): what is listed is held until the index is made, so this bounds that too.
constexpr size_t kMaxInstalledEntries = 1u << 20;
// Names of one private tree (apps ship a few dozen).
constexpr size_t kMaxTreeNames = 4096;
constexpr size_t kMaxIndexBytes = 1u << 20;
constexpr size_t kMaxChain = 32;

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
	// readFile: a regular file of at most 1 MiB, opened without blocking (a FIFO in an item's
	// tree must not hang the daemon).
	auto text = readFile(path, kMaxIndexBytes);
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

// The extension of a file name qsd can show, or -1.
int extOf(std::string_view file) {
	if (file.size() < 5) return -1;
	auto tail = file.substr(file.size() - 4);
	for (int i = 0; i < 3; ++i)
		if (tail == kExtNames[i]) return i;
	return -1;
}

std::string join(const std::string& a, const std::string& b) { return b.empty() ? a : a.empty() ? b : a + "/" + b; }

// What a private tree was read from: a directory (or index.theme) that changes, or appears,
// makes it stale.
struct Stamp {
	std::string path;
	bool exists = false;
	dev_t dev = 0;
	ino_t ino = 0;
	timespec mtime{};

	static Stamp of(std::string path) {
		Stamp s;
		s.path = std::move(path);
		struct stat st{};
		if (::stat(s.path.c_str(), &st) == 0) {
			s.exists = true;
			s.dev = st.st_dev;
			s.ino = st.st_ino;
			s.mtime = st.st_mtim;
		}
		return s;
	}
	[[nodiscard]] bool same(const Stamp& o) const {
		return exists == o.exists && dev == o.dev && ino == o.ino && mtime.tv_sec == o.mtime.tv_sec &&
		       mtime.tv_nsec == o.mtime.tv_nsec;
	}
};

} // namespace

struct IconTheme::Directory {
	enum class Type { Fixed, Scalable, Threshold };
	std::string path;          // relative to the theme directory ("" for a flat directory)
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
	// The pixels of a raster image in this directory.
	[[nodiscard]] int pixels() const { return size * scale; }
};

namespace {
// One file of an icon: which directory of the tree, in which root, with which extension.
struct Hit {
	uint16_t dir;
	uint8_t root;
	uint8_t ext;
	bool operator<(const Hit& o) const { return std::tie(dir, root, ext) < std::tie(o.dir, o.root, o.ext); }
};
} // namespace

struct IconTheme::Tree {
	std::vector<std::string> inherits;
	std::vector<Directory> dirs;
	std::vector<std::string> roots;             // <base>/<theme> for each base that has it
	bool scanned = false;                       // files listed (installed themes: at first use)
	size_t entries = 0;                         // directory entries read
	size_t maxNames = kMaxInstalledNames;
	size_t maxEntries = kMaxInstalledEntries;
	bool truncated = false;

	// The index, flat: the names sorted and back to back in one string, name i being
	// names[nameAt[i], nameAt[i + 1]) with its files hits[first[i], first[i + 1]) in the
	// specification's order. A map of strings to vectors of files cost about 200 bytes per name
	// in small allocations (0.25 MiB for Adwaita); this costs the names' bytes and 12 per name.
	std::string names;
	std::vector<uint32_t> nameAt;
	std::vector<uint32_t> first;
	std::vector<Hit> hits;
	// What scan() listed, until freeze(): each file's stem is in pending_ (one string, not one
	// allocation per file), in the order listed.
	struct Listed {
		uint32_t at;
		uint32_t length;
		uint32_t order;
		Hit hit;
	};
	std::string pending_;
	std::vector<Listed> listed_;

	[[nodiscard]] size_t size() const { return nameAt.empty() ? 0 : nameAt.size() - 1; }
	[[nodiscard]] std::string_view name(size_t i) const { return {names.data() + nameAt[i], nameAt[i + 1] - nameAt[i]}; }

	// Lists directory `dir` of root `root`. Only names with an extension qsd shows are kept.
	void scan(const std::string& path, size_t dir, size_t root) {
		// opendir opens with O_DIRECTORY (a FIFO is refused) and O_NONBLOCK.
		DIR* d = ::opendir(path.c_str());
		if (!d) return;
		while (dirent* e = ::readdir(d)) {
			if (++entries > maxEntries) {
				truncated = true;
				break;
			}
			if (e->d_type != DT_REG && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) continue;
			std::string_view n(e->d_name);
			int ext = extOf(n);
			if (ext < 0) continue;
			listed_.push_back({uint32_t(pending_.size()), uint32_t(n.size() - 4), uint32_t(listed_.size()),
			                   {uint16_t(dir), uint8_t(root), uint8_t(ext)}});
			pending_.append(n.substr(0, n.size() - 4));
		}
		::closedir(d);
	}

	// Turns what scan() listed into the index. Beyond maxNames names, the first ones listed are
	// kept (the theme's directories in index.theme's order).
	void freeze() {
		auto stem = [this](const Listed& l) { return std::string_view(pending_.data() + l.at, l.length); };
		std::sort(listed_.begin(), listed_.end(), [&](const Listed& a, const Listed& b) {
			int c = stem(a).compare(stem(b));
			return c != 0 ? c < 0 : a.hit < b.hit;
		});
		// Each name's first listing, to choose which names stay when there are too many.
		std::vector<uint32_t> firstListed;
		for (size_t i = 0; i < listed_.size(); ++i) {
			if (i == 0 || stem(listed_[i]) != stem(listed_[i - 1])) firstListed.push_back(listed_[i].order);
			else firstListed.back() = std::min(firstListed.back(), listed_[i].order);
		}
		uint32_t cutoff = UINT32_MAX;   // names first listed at or after this are dropped
		if (firstListed.size() > maxNames) {
			truncated = true;
			auto sorted = firstListed;
			std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(maxNames), sorted.end());
			cutoff = sorted[maxNames];
		}
		names.clear();
		nameAt.clear();
		first.clear();
		hits.clear();
		size_t unique = 0;
		for (size_t i = 0; i < listed_.size(); ++i) {
			bool newName = i == 0 || stem(listed_[i]) != stem(listed_[i - 1]);
			if (newName) ++unique;
			if (firstListed[unique - 1] >= cutoff) continue;
			if (newName) {
				nameAt.push_back(uint32_t(names.size()));
				first.push_back(uint32_t(hits.size()));
				names.append(stem(listed_[i]));
			}
			hits.push_back(listed_[i].hit);
		}
		nameAt.push_back(uint32_t(names.size()));
		first.push_back(uint32_t(hits.size()));
		// Only directories that hold a file stay (hicolor's index lists 649, a system has a few
		// dozen of them); the hits keep their order.
		std::vector<uint16_t> renumbered(dirs.size(), UINT16_MAX);
		for (const auto& h: hits) renumbered[h.dir] = 0;
		std::vector<Directory> kept;
		for (size_t d = 0; d < dirs.size(); ++d)
			if (renumbered[d] == 0) {
				renumbered[d] = uint16_t(kept.size());
				kept.push_back(std::move(dirs[d]));
			}
		dirs = std::move(kept);
		for (auto& h: hits) h.dir = renumbered[h.dir];
		names.shrink_to_fit();
		nameAt.shrink_to_fit();
		first.shrink_to_fit();
		hits.shrink_to_fit();
		std::string().swap(pending_);
		std::vector<Listed>().swap(listed_);
		scanned = true;
	}

	// The index of `name`, or size() when it has none.
	[[nodiscard]] size_t indexOf(std::string_view n) const {
		size_t lo = 0, hi = size();
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (name(mid) < n) lo = mid + 1;
			else hi = mid;
		}
		return lo < size() && name(lo) == n ? lo : size();
	}

	// The file for `name` here, "" for none. Sized (a theme): the raster of the smallest size
	// at least `want` (else the largest), an SVG only without a raster, chosen by the
	// specification's size match and distance. Flat: the first raster, else the first SVG.
	// `onlyExt` restricts to one extension (a name that carries its own).
	[[nodiscard]] std::string find(const std::string& name, int want, bool sized, int onlyExt = -1) const {
		size_t i = indexOf(name);
		if (i == size()) return {};
		const Hit* raster = nullptr;
		int rasterPx = 0;
		const Hit* svg = nullptr;
		int svgDistance = INT_MAX;
		bool svgMatch = false;
		for (uint32_t k = first[i]; k < first[i + 1]; ++k) {
			const Hit& h = hits[k];
			if (onlyExt >= 0 && h.ext != onlyExt) continue;
			const auto& d = dirs[h.dir];
			if (h.ext != kSvg) {
				int px = d.pixels();
				bool better = !raster || (sized && (rasterPx < want ? px > rasterPx : px >= want && px < rasterPx));
				if (better) {
					raster = &h;
					rasterPx = px;
				}
			} else if (!svgMatch && (sized || !svg)) {
				if (sized && d.matches(want)) {
					svg = &h;
					svgMatch = true;
				} else if (int dist = sized ? d.distance(want) : 0; !svg || dist < svgDistance) {
					svg = &h;
					svgDistance = dist;
				}
			}
		}
		const Hit* h = raster ? raster : svg;
		if (!h) return {};
		std::string out = join(roots[h->root], dirs[h->dir].path);
		out += '/';
		out += name;
		out += kExtNames[h->ext];
		return out;
	}
};

struct IconTheme::Private {
	std::string key;
	Tree tree;
	std::vector<Stamp> stamps;
	uint64_t checked = 0;     // the pass it was last compared with its directories

	[[nodiscard]] bool stale() const {
		return std::any_of(stamps.begin(), stamps.end(), [](const Stamp& s) { return !s.same(Stamp::of(s.path)); });
	}
};

namespace {

void parseIndex(const Ini& ini, IconTheme::Tree& tree, size_t maxDirs) {
	auto head = ini.find("Icon Theme");
	if (head == ini.end()) return;
	if (auto it = head->second.find("Inherits"); it != head->second.end()) tree.inherits = splitList(it->second, ',');
	std::vector<std::string> dirs;
	for (const char* key: {"Directories", "ScaledDirectories"})
		if (auto it = head->second.find(key); it != head->second.end())
			for (auto& d: splitList(it->second, ',')) dirs.push_back(d);
	std::set<std::string> seen;
	for (const auto& d: dirs) {
		if (tree.dirs.size() >= maxDirs) break;
		if (!seen.insert(d).second) continue;
		auto sec = ini.find(d);
		if (sec == ini.end()) continue;
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
		tree.dirs.push_back(std::move(dir));
	}
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
			if (at != std::string::npos) dir.scale = std::clamp(std::atoi(part.c_str() + at + 1), 1, 16);
			dir.minSize = dir.maxSize = dir.size;
			return dir;
		}
	}
	return dir;
}

// The directories below `root` (relative paths), to kScanDepth levels, within the budgets.
void walk(const std::string& root, const std::string& relative, int depth, std::vector<std::string>& out, size_t& entries,
          size_t maxEntries, size_t maxDirs) {
	DIR* d = ::opendir(join(root, relative).c_str());
	if (!d) return;
	std::vector<std::string> subdirs;
	while (dirent* e = ::readdir(d)) {
		if (++entries > maxEntries) break;
		std::string_view n(e->d_name);
		if (n == "." || n == "..") continue;
		bool dir = e->d_type == DT_DIR;
		if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) dir = isDir(join(join(root, relative), std::string(n)));
		if (dir) subdirs.push_back(join(relative, std::string(n)));
	}
	::closedir(d);
	std::sort(subdirs.begin(), subdirs.end());
	for (const auto& s: subdirs) {
		if (out.size() >= maxDirs || entries > maxEntries) return;
		out.push_back(s);
		if (depth + 1 < kScanDepth) walk(root, s, depth + 1, out, entries, maxEntries, maxDirs);
	}
}

void buildPrivate(IconTheme::Private& p, const std::string& dir, bool flat);

} // namespace

// ---------------------------------------------------------------------------------------------
// the environment

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

std::vector<std::pair<std::string, std::string>> IconTheme::settingsFiles() {
	if (!env("QSD_ICON_THEME").empty()) return {};
	auto config = configHome();
	return {{config + "/gtk-3.0", "settings.ini"}, {config + "/gtk-4.0", "settings.ini"}, {config, "kdeglobals"}};
}

IconTheme::Options IconTheme::fromEnvironment(std::string* source) {
	Options o;
	o.theme = currentTheme(source);
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

// ---------------------------------------------------------------------------------------------

IconTheme::IconTheme(Options options): options_(std::move(options)) {
	// A root is numbered in a byte; nobody has more than a handful of base directories.
	if (options_.baseDirs.size() > 128) options_.baseDirs.resize(128);
	if (options_.pixmapDirs.size() > 64) options_.pixmapDirs.resize(64);
	if (options_.watch) {
		inotify_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (inotify_ < 0)
			log::warning("icons", "cannot watch the icon themes ({}): icons installed while qsd runs are found after a restart",
			             std::strerror(errno));
	}
}

IconTheme::~IconTheme() {
	if (inotify_ >= 0) ::close(inotify_);
}

uint64_t IconTheme::currentPass() { return options_.pass ? options_.pass() : ++lookups_; }

const std::vector<std::string>& IconTheme::chain() {
	ensureChain();
	return chain_;
}

void IconTheme::ensureChain() {
	if (chainValid_) return;
	chainValid_ = true;
	chain_.clear();
	// The theme and what it inherits (depth first, each once), then the platform default and
	// what it inherits (GTK always adds Adwaita: gtkicontheme.c, insert_theme(DEFAULT_ICON_THEME)),
	// hicolor last, as the specification requires.
	std::set<std::string> seen{"hicolor"};
	auto add = [&](const std::string& start, bool needInstalled) {
		std::vector<std::string> stack{start};
		while (!stack.empty() && chain_.size() < kMaxChain) {
			auto t = stack.back();
			stack.pop_back();
			if (t.empty() || t.find('/') != std::string::npos || !seen.insert(t).second) continue;
			// index.theme only: the chain is made (and logged) at start, with no item yet, and a
			// theme's files (hundreds of KiB of index for Adwaita) wait for the first lookup.
			Tree* tree = installed(t, false);
			if (!tree && needInstalled) continue;
			chain_.push_back(t);
			if (tree)
				for (auto it = tree->inherits.rbegin(); it != tree->inherits.rend(); ++it) stack.push_back(*it);
		}
	};
	add(options_.theme, false);
	for (const auto& t: options_.fallbackThemes) add(t, true);
	chain_.push_back("hicolor");
}

// ---------------------------------------------------------------------------------------------
// watching the installed themes

void IconTheme::watch(const std::string& path, bool files, const std::string& dirName) {
	if (inotify_ < 0) return;
	// inotify gives a directory watched already its watch descriptor again: no map of paths is
	// needed to find it (it cost more than the index itself for hicolor's hundreds of
	// directories).
	int wd = ::inotify_add_watch(inotify_, path.c_str(),
	                             IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF |
	                                 IN_MOVE_SELF | IN_ONLYDIR);
	if (wd < 0) {
		if (errno == ENOENT || errno == ENOTDIR) watchMissing(path);
		return;
	}
	auto it = watches_.find(wd);
	if (it == watches_.end()) {
		if (watches_.size() >= kMaxWatches) {
			::inotify_rm_watch(inotify_, wd);
			if (!watchesFull_)
				log::warning("icons", "more than {} directories under the icon themes: icons installed in some of them are found after a restart",
				             kMaxWatches);
			watchesFull_ = true;
			return;
		}
		it = watches_.emplace(wd, Watch{}).first;
	}
	auto& w = it->second;
	if (files) w.files = true;
	else if (dirName.empty()) w.anyDir = true;
	else if (std::find(w.dirNames.begin(), w.dirNames.end(), dirName) == w.dirNames.end()) w.dirNames.push_back(dirName);
}

void IconTheme::watchMissing(const std::string& path) {
	// A directory that does not exist yet: its nearest existing ancestor is watched for the one
	// subdirectory that leads to it (~/.local/share for "icons"), not for everything else there.
	auto slash = path.rfind('/');
	if (slash == std::string::npos || slash == 0) return;
	auto parent = path.substr(0, slash);
	watch(parent, false, path.substr(slash + 1));
}

bool IconTheme::readEvents() {
	if (inotify_ < 0) return false;
	bool changed = false;
	alignas(inotify_event) char buf[8192];
	for (;;) {
		ssize_t n = ::read(inotify_, buf, sizeof buf);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break;
		for (ssize_t at = 0; at < n;) {
			const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
			at += ssize_t(sizeof(inotify_event) + e->len);
			if (e->mask & IN_Q_OVERFLOW) {
				changed = true;
				continue;
			}
			if (e->mask & IN_IGNORED) continue;   // a watch removed (by us, or its directory went)
			auto w = watches_.find(e->wd);
			if (w == watches_.end()) continue;
			if (w->second.files || (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF))) changed = true;
			else if ((e->mask & IN_ISDIR) && (w->second.anyDir || (e->len && std::find(w->second.dirNames.begin(), w->second.dirNames.end(), std::string_view(e->name)) != w->second.dirNames.end()))) changed = true;
		}
	}
	if (changed) dropInstalled();
	return changed;
}

void IconTheme::dropInstalled() {
	installed_.clear();
	flat_.reset();
	chainValid_ = false;
	for (const auto& [wd, _]: watches_) ::inotify_rm_watch(inotify_, wd);
	watches_.clear();
	watchesFull_ = false;
	++generation_;
}

// ---------------------------------------------------------------------------------------------
// installed themes

IconTheme::Tree* IconTheme::installed(const std::string& theme, bool scan) {
	auto it = installed_.find(theme);
	if (it == installed_.end()) {
		auto tree = std::make_unique<Tree>();
		buildInstalled(*tree, theme);
		if (tree->roots.empty()) tree.reset();
		it = installed_.emplace(theme, std::move(tree)).first;
	}
	Tree* t = it->second.get();
	if (t && scan && !t->scanned) {
		// The files are listed at the first lookup, not when the chain is made. Each directory
		// is watched before it is read, so nothing created in between is missed.
		for (size_t d = 0; d < t->dirs.size(); ++d)
			for (size_t r = 0; r < t->roots.size(); ++r) {
				auto path = join(t->roots[r], t->dirs[d].path);
				watch(path, true);
				t->scan(path, d, r);
			}
		t->freeze();
		if (t->truncated) log::warning("icons", "icon theme {} has more than {} icons; the rest are not found", theme, t->maxNames);
	}
	return t;
}

void IconTheme::buildInstalled(Tree& tree, const std::string& theme) {
	// Every base directory is watched whether or not it has the theme: a theme installed (or a
	// flat icon put there) later is a change.
	for (const auto& base: options_.baseDirs) watch(base, true);
	std::optional<Ini> ini;
	// The first index.theme found is the theme's; its directories are searched in every base.
	for (const auto& base: options_.baseDirs)
		if ((ini = readIni(base + "/" + theme + "/index.theme"))) break;
	if (!ini) return;
	parseIndex(*ini, tree, kMaxInstalledDirs);
	for (const auto& base: options_.baseDirs) {
		auto root = base + "/" + theme;
		if (!isDir(root)) continue;
		watch(root, true);
		tree.roots.push_back(root);
	}
}

IconTheme::Tree* IconTheme::flatInstalled() {
	if (!flat_) {
		flat_ = std::make_unique<Tree>();
		flat_->dirs.emplace_back();
		for (const auto& d: options_.baseDirs) flat_->roots.push_back(d);
		for (const auto& d: options_.pixmapDirs) flat_->roots.push_back(d);
		for (size_t r = 0; r < flat_->roots.size(); ++r) {
			watch(flat_->roots[r], true);
			flat_->scan(flat_->roots[r], 0, r);
		}
		flat_->freeze();
	}
	return flat_.get();
}

bool IconTheme::isInstalledRoot(const std::string& dir, const std::string& theme) {
	Tree* t = installed(theme);
	return t && std::find(t->roots.begin(), t->roots.end(), dir) != t->roots.end();
}

// ---------------------------------------------------------------------------------------------
// an item's own trees

namespace {

void buildPrivate(IconTheme::Private& p, const std::string& dir, bool flat) {
	p.tree = IconTheme::Tree();
	p.tree.maxNames = kMaxTreeNames;
	p.tree.maxEntries = IconTheme::kMaxPrivateEntries;
	p.stamps.clear();
	p.stamps.push_back(Stamp::of(dir));
	if (!p.stamps.back().exists || !isDir(dir)) return;
	p.tree.roots.push_back(dir);
	std::vector<std::string> dirs;
	if (flat) {
		dirs.emplace_back();
		p.tree.dirs.emplace_back();
	} else {
		p.stamps.push_back(Stamp::of(dir + "/index.theme"));
		if (auto ini = readIni(dir + "/index.theme")) {
			parseIndex(*ini, p.tree, IconTheme::kMaxPrivateDirs);
			p.tree.inherits.clear();
		} else {
			// No index.theme: every directory below the theme directory, to kScanDepth levels.
			walk(dir, "", 0, dirs, p.tree.entries, p.tree.maxEntries, IconTheme::kMaxPrivateDirs);
			for (const auto& d: dirs) p.tree.dirs.push_back(guessDirectory(d));
		}
	}
	for (size_t d = 0; d < p.tree.dirs.size(); ++d) {
		auto path = join(dir, p.tree.dirs[d].path);
		if (!p.tree.dirs[d].path.empty()) p.stamps.push_back(Stamp::of(path));
		p.tree.scan(path, d, 0);
	}
	p.tree.freeze();
}

} // namespace

IconTheme::Tree* IconTheme::privateTree(const std::string& key, const std::string& dir, bool flat) {
	auto pass = currentPass();
	if (auto it = privateByKey_.find(key); it != privateByKey_.end()) {
		private_.splice(private_.begin(), private_, it->second);
		auto& p = *private_.front();
		if (p.checked != pass) {
			p.checked = pass;
			if (p.stale()) {
				privateNames_ -= p.tree.size();
				buildPrivate(p, dir, flat);
				privateNames_ += p.tree.size();
				++generation_;
			}
		}
		return p.tree.roots.empty() ? nullptr : &p.tree;
	}
	auto p = std::make_unique<Private>();
	p->key = key;
	p->checked = pass;
	buildPrivate(*p, dir, flat);
	if (p->tree.truncated)
		log::info("icons", "{}: more than {} entries or {} icons; the rest are not searched", dir, kMaxPrivateEntries, kMaxTreeNames);
	privateNames_ += p->tree.size();
	private_.push_front(std::move(p));
	privateByKey_[key] = private_.begin();
	// The least recently used go first; the one just made stays.
	while (private_.size() > 1 && (private_.size() > kMaxPrivateTrees || privateNames_ > kMaxPrivateNames)) {
		privateNames_ -= private_.back()->tree.size();
		privateByKey_.erase(private_.back()->key);
		private_.pop_back();
	}
	auto& front = *private_.front();
	return front.tree.roots.empty() ? nullptr : &front.tree;
}

namespace {
// An IconThemePath qsd searches: absolute, of a sane length, without its trailing slashes.
std::string usablePath(const std::string& themePath) {
	if (themePath.empty() || themePath[0] != '/' || themePath.size() > IconTheme::kMaxPathBytes ||
	    themePath.find('\0') != std::string::npos)
		return {};
	auto p = themePath;
	while (p.size() > 1 && p.back() == '/') p.pop_back();
	return p;
}
} // namespace

void IconTheme::forget(const std::string& themePath) {
	// The trees are kept under the path as lookups use it (usablePath: "/x/" is "/x"). A path
	// lookups do not search has no trees, and "" must not become the prefix "/" of every one.
	auto app = usablePath(themePath);
	if (app.empty()) return;
	auto prefix = app + "/";
	for (auto it = private_.begin(); it != private_.end();) {
		const auto& key = (*it)->key;
		// Its flat directory, and its trees (<path>/<theme>; not those of a path below it).
		bool tree = key.compare(0, prefix.size(), prefix) == 0 && key.find_first_of("/\n", prefix.size()) == std::string::npos;
		if (key == app + "\n" || tree) {
			privateNames_ -= (*it)->tree.size();
			privateByKey_.erase(key);
			it = private_.erase(it);
		} else {
			++it;
		}
	}
}

void IconTheme::setTheme(std::string theme) {
	options_.theme = std::move(theme);
	dropInstalled();
}

void IconTheme::forgetAll() {
	private_.clear();
	privateByKey_.clear();
	privateNames_ = 0;
}

void IconTheme::clearCache() {
	dropInstalled();
	forgetAll();
}

IconTheme::Stats IconTheme::stats() const {
	size_t themes = 0;
	for (const auto& [_, t]: installed_) themes += t && t->scanned;
	return {themes, private_.size(), privateNames_, watches_.size()};
}

// ---------------------------------------------------------------------------------------------
// lookup


uint64_t IconTheme::version(const std::string& themePath) {
	auto app = usablePath(themePath);
	if (!app.empty()) {
		ensureChain();
		for (const auto& theme: chain_)
			if (!isInstalledRoot(app + "/" + theme, theme)) (void)privateTree(app + "/" + theme, app + "/" + theme, false);
		(void)privateTree(app + "\n", app, true);
	}
	return generation_;
}

std::string IconTheme::lookup(const std::string& name, int want, const std::string& themePath) {
	// Refused before anything is built from them: a name is one file name (a peer's 256 KiB
	// name once made thousands of 256 KiB candidate paths per lookup).
	if (name.empty() || name.find('\0') != std::string::npos) return {};
	// Some items send a file instead of a name (an absolute path, often into /tmp).
	if (name[0] == '/') return name.size() <= kMaxPathBytes && isFile(name) ? name : std::string();
	if (name.size() > kMaxNameBytes || name.find('/') != std::string::npos) return {};
	auto app = usablePath(themePath);
	ensureChain();
	for (const auto& theme: chain_) {
		if (Tree* t = installed(theme))
			if (auto f = t->find(name, want, true); !f.empty()) return f;
		// The item's own tree of this theme, unless it is an installed one (already searched).
		if (app.empty()) continue;
		auto dir = app + "/" + theme;
		if (isInstalledRoot(dir, theme)) continue;
		if (Tree* t = privateTree(dir, dir, false))
			if (auto f = t->find(name, want, true); !f.empty()) return f;
	}
	// Flat: the item's directory, then the base directories and the pixmap directories.
	int ext = extOf(name);
	auto stem = ext >= 0 ? name.substr(0, name.size() - 4) : std::string();
	if (!app.empty()) {
		bool installedDir = std::find(options_.baseDirs.begin(), options_.baseDirs.end(), app) != options_.baseDirs.end() ||
		                    std::find(options_.pixmapDirs.begin(), options_.pixmapDirs.end(), app) != options_.pixmapDirs.end();
		if (!installedDir)
			if (Tree* t = privateTree(app + "\n", app, true)) {
				if (auto f = t->find(name, want, false); !f.empty()) return f;
				// A name that carries its extension ("app.png") is a file of the item's directory.
				if (ext >= 0)
					if (auto f = t->find(stem, want, false, ext); !f.empty()) return f;
			}
	}
	return flatInstalled()->find(name, want, false);
}

} // namespace qsd::icons
