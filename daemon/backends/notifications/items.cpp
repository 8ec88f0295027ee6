// Notifications from Notify to history: ids, the item in the tree, its images, expiry with one
// timer, the bound on live items, history with its own image copies, and the state file.

#include "notifications_backend.hpp"

#include "../../event_loop.hpp"
#include "../../files.hpp"
#include "../../log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

namespace qsd::notifications {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
constexpr uint64_t kSaveIntervalUs = 1'000'000;

json orNull(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

// mkdir -p with mode 0700 for what it creates.
bool makeDirs(const std::string& dir) {
	std::error_code ec;
	if (fs::is_directory(dir, ec)) return true;
	auto parent = fs::path(dir).parent_path();
	if (!parent.empty() && parent != fs::path(dir) && !makeDirs(parent.string())) return false;
	return ::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST;
}

// The state file as it is on disk.
struct FileState {
	bool exists = false;
	std::optional<SavedState> state;   // std::nullopt: there is none, or it cannot be used
	std::string unusable;              // why it cannot, for the log ("" when it can or is not there)
	std::string problems;              // fields of the wrong type, which took their defaults
};

FileState readState(const std::string& path) {
	FileState f;
	struct stat st{};
	if (::stat(path.c_str(), &st) != 0) {
		if (errno == ENOENT) return f;
		f.exists = true;
		f.unusable = fmt::format("it cannot be read: {}", std::strerror(errno));
		return f;
	}
	f.exists = true;
	if (auto text = readFile(path, kMaxStateReadBytes)) {
		f.state = parseState(*text, &f.problems);
		if (!f.state) f.unusable = "it is not a JSON object";
	} else if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > kMaxStateReadBytes) {
		f.unusable = fmt::format("it is larger than {} MiB", kMaxStateReadBytes >> 20);
	} else {
		f.unusable = S_ISREG(st.st_mode) ? fmt::format("it cannot be read: {}", std::strerror(errno)) : "it is not a regular file";
	}
	return f;
}
} // namespace

std::string NotificationsBackend::itemPath(uint32_t id) { return "/notifications/items/" + std::to_string(id); }
std::string NotificationsBackend::historyPath(uint32_t id) { return "/notifications/history/" + std::to_string(id); }

// ---------------------------------------------------------------------------------------------
// ids

uint32_t NotificationsBackend::allocateId() {
	uint32_t id = nextId_;
	// Only after 2^32 notifications can a candidate be taken; then it is skipped.
	while (live_.count(id) || history_.count(id)) id = followingId(id);
	nextId_ = followingId(id);
	lastId_ = id;
	if (!statePath_.empty() && !stateWarned_) {
		// The id must be on disk before it is handed out; normally the renewal below, at most
		// once a second, keeps the reservation ahead of the ids.
		if (lastId_ >= reservedId_) save(false);
		else if (reservedId_ - lastId_ < kIdReserve / 2) markDirty();
	}
	return id;
}

// ---------------------------------------------------------------------------------------------
// showing

NotificationsBackend::Resolved NotificationsBackend::resolveIcon(const std::string& text, const std::string& sender) {
	auto spec = iconSpec(validUtf8(text));
	if (spec.kind == IconSpec::Kind::Name) {
		if (auto url = images_->iconUrl(spec.value)) return {*url, std::nullopt};
		return {};
	}
	if (spec.kind != IconSpec::Kind::File) return {};
	// Only regular files: opening a FIFO would block the loop, a device would never end.
	struct stat st{};
	if (::stat(spec.value.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
	// A PNG is copied (Chromium deletes its temporary file while the notification is shown);
	// any other file is shown where it is. A PNG whose header claims more than qsd would decode
	// is not shown at all: every shell would decode it.
	auto file = images_->storeFile(spec.value, uint64_t(st.st_size), sender);
	using Kind = Images::FileImage::Kind;
	if (file.kind == Kind::Stored) return {file.stored->url, std::move(file.stored)};
	if (file.kind == Kind::Refused) {
		warnOnce("png:" + sender, fmt::format("{} named the image {}, which qsd does not show: {}", sender, spec.value, file.why));
		return {};
	}
	return {fileUrl(spec.value), std::nullopt};
}

void NotificationsBackend::show(uint32_t id, bool replacing, NotifyArgs& a, const std::string& sender) {
	ensureImages();
	auto t = mapText(a);
	const auto& who = t.appName.empty() ? sender : t.appName;
	for (const auto& [hint, signature]: a.hints.wrongTypes)
		warnOnce("hint:" + hint + ":" + signature,
		         fmt::format("{} sent the hint \"{}\" as {}, which is not its type; the hint is ignored", who, hint, signature));
	if (t.droppedActions)
		warnOnce("actions:" + who, fmt::format("{} sent actions qsd dropped ({} elements: an odd one, empty or repeated keys, "
		                                       "or more than {} actions)", who, t.droppedActions, kMaxActions));
	if (t.cutSummary || t.cutBody)
		warnOnce("long:" + who, fmt::format("{} sent a {} longer than qsd keeps; it is cut", who, t.cutSummary ? "summary" : "body"));
	auto urgency = urgencyFromByte(a.hints.urgency.value_or(1));

	Live live;
	live.urgency = urgency;
	live.resident = a.hints.resident.value_or(false);
	live.transient = a.hints.transient.value_or(false);
	live.stack = stackKey(a);
	for (const auto& action: t.actions) live.actions.push_back(action.key);

	// image-data (and its older names) > image-path > app_icon.
	auto appIcon = resolveIcon(a.appIcon, sender);
	Resolved image;
	for (const auto& [hint, raw]: a.hints.images) {
		auto decoded = decodeImageData(raw);
		if (!decoded.image) {
			warnOnce("image:" + hint + ":" + who, fmt::format("{} sent {} qsd cannot use: {}; the hint is ignored", who, hint, decoded.error));
			continue;
		}
		if (auto stored = images_->storePixels(*decoded.image, sender)) image = {stored->url, std::move(stored)};
		break;
	}
	if (image.url.is_null() && a.hints.imagePath) image = resolveIcon(*a.hints.imagePath, sender);
	if (image.url.is_null()) image = appIcon;
	live.appIcon = std::move(appIcon.stored);
	live.image = std::move(image.stored);

	auto timeout = timeoutMs(a.expireTimeout, urgency, defaultTimeoutMs_);
	// The deadline and expiresAt from the same instant: loop.now() is when this loop iteration
	// woke, which on a busy machine is tens of ms before now, and a deadline counted from it
	// expired the notification that long before the expiresAt clients were told.
	auto now = std::chrono::system_clock::now();
	if (timeout) live.deadline = EventLoop::clock() + *timeout * 1000;

	json actionList = json::array();
	for (auto& action: t.actions) actionList.push_back({{"key", std::move(action.key)}, {"label", std::move(action.label)}});
	json item = {{"id", id},
	             {"appName", std::move(t.appName)},
	             {"appIcon", std::move(appIcon.url)},
	             {"summary", std::move(t.summary)},
	             {"body", std::move(t.body)},
	             {"bodyText", std::move(t.bodyText)},
	             {"actions", std::move(actionList)},
	             {"urgency", toString(urgency)},
	             {"category", orNull(t.category)},
	             {"desktopEntry", orNull(t.desktopEntry)},
	             {"actionIcons", a.hints.actionIcons.value_or(false)},
	             {"replyPlaceholder", orNull(t.replyPlaceholder)},
	             {"value", t.value ? json(*t.value) : json(nullptr)},
	             {"stackTag", orNull(t.stackTag)},
	             {"image", std::move(image.url)},
	             {"resident", live.resident},
	             {"transient", live.transient},
	             // Do-Not-Disturb holds back everything but what is critical.
	             {"popup", !dnd_ || urgency == Urgency::Critical},
	             {"createdAt", rfc3339(now)},
	             {"expiresAt", timeout ? json(rfc3339(now + std::chrono::milliseconds(*timeout))) : json(nullptr)}};

	auto& slot = live_[id];
	if (slot.deadline) deadlines_.erase({*slot.deadline, id});
	if (live.deadline) deadlines_.insert({*live.deadline, id});
	// A replacement belongs to whoever sent it (notify-send -r is a new connection each time).
	if (replacing && slot.sender != sender) {
		if (auto it = bySender_.find(slot.sender); it != bySender_.end() && (it->second.erase(id), it->second.empty())) {
			if (images_) images_->forget(slot.sender);
			bySender_.erase(it);
		}
	}
	live.sender = sender;
	auto& mine = bySender_[sender];
	mine.insert(id);
	// The replaced item's files go after the new ones are held: an unchanged image keeps its file.
	slot = std::move(live);
	if (replacing) context_.tree.sync(itemPath(id), item);
	else context_.tree.set(itemPath(id), std::move(item));
	if (!replacing) {
		evictOverflow(mine, kMaxLivePerSender, "from one connection");
		std::set<uint32_t> all;
		if (live_.size() > kMaxLiveItems)
			for (const auto& [i, _]: live_) all.insert(all.end(), i);
		evictOverflow(all, kMaxLiveItems, "in all");
	}
	armExpiry();
	// What is shown is in the state file too, for a crash (save); a burst is one write.
	markDirty();
}

// ---------------------------------------------------------------------------------------------
// closing

void NotificationsBackend::close(uint32_t id, CloseReason reason) {
	auto it = live_.find(id);
	if (it == live_.end()) return;
	emitSignal("NotificationClosed", id, uint32_t(reason));
	// Destroyed at the end: the stored files go once history has its own copies.
	Live live = std::move(it->second);
	live_.erase(it);
	if (auto s = bySender_.find(live.sender); s != bySender_.end() && (s->second.erase(id), s->second.empty())) {
		if (images_) images_->forget(live.sender);
		bySender_.erase(s);
	}
	if (live.deadline) deadlines_.erase({*live.deadline, id});
	auto path = itemPath(id);
	const json* shown = context_.tree.find(path);
	if (shown && !live.transient && historyLimit_ > 0) {
		json entry = *shown;
		entry["closedAt"] = rfc3339(std::chrono::system_clock::now());
		entry["closeReason"] = toString(reason);
		std::vector<std::string> files;
		std::string imageCopy;
		if (live.image) {
			imageCopy = historyCopy(id, "image", *live.image);
			entry["image"] = imageCopy.empty() ? json(nullptr) : json(fileUrl(imageCopy));
			if (!imageCopy.empty()) files.push_back(imageCopy);
		}
		if (live.appIcon) {
			auto copy = live.image && live.image->path == live.appIcon->path ? imageCopy : historyCopy(id, "icon", *live.appIcon);
			entry["appIcon"] = copy.empty() ? json(nullptr) : json(fileUrl(copy));
			if (!copy.empty() && copy != imageCopy) files.push_back(copy);
		}
		context_.tree.remove(path);
		addHistory(id, std::move(entry), std::move(files));
	} else {
		context_.tree.remove(path);
	}
	armExpiry();
	// Out of the file's `shown`, also when it is not kept in history (transient).
	markDirty();
	// After a flood, RSS would otherwise stay at its peak (glibc keeps freed heap mapped); the
	// server gives free pages back a second later, at most once a second.
	context_.server.heapFreed();
}

std::string NotificationsBackend::historyCopy(uint32_t id, const char* what, const StoredImage& image) {
	if (historyDir_.empty() || !makeDirs(historyDir_)) return {};
	auto path = fmt::format("{}/{}-{}.png", historyDir_, id, what);
	::unlink(path.c_str());
	// A second name for the same file: no bytes copied, and the store may delete its own name.
	if (::link(image.path.c_str(), path.c_str()) == 0) return path;
	auto bytes = readFile(image.path, kMaxImageFileBytes * 4);
	if (bytes && writeFileAtomically(path, *bytes)) return path;
	warnOnce("historyCopy", fmt::format("cannot keep a copy of {} in {}: {}", image.path, historyDir_, std::strerror(errno)));
	return {};
}

// expiresAt is a wall-clock time, the expiry a monotonic deadline. Once the wall clock is set (an
// NTP step; a resume from suspend, over which the deadline stood still while the wall clock ran
// on), each expiresAt is computed again from its deadline, as when it was sent: a timeout bar that
// runs down to it would show the notification gone, or staying, by the size of the step otherwise.
void NotificationsBackend::onClockChange() {
	using std::chrono::system_clock;
	auto wall = system_clock::now();
	uint64_t mono = EventLoop::clock();   // the same instant as `wall` (see show)
	for (const auto& [deadline, id]: deadlines_) {
		auto left = std::chrono::microseconds(deadline > mono ? deadline - mono : 0);
		context_.tree.set(itemPath(id) + "/expiresAt", rfc3339(wall + std::chrono::duration_cast<system_clock::duration>(left)));
	}
	// The file's `shown` has them as the tree does (history keeps expiresAt).
	if (!deadlines_.empty()) markDirty();
}

void NotificationsBackend::armExpiry() {
	if (!expiry_) return;
	if (deadlines_.empty()) expiry_.setEnabled(SD_EVENT_OFF);
	else expiry_.setTime(deadlines_.begin()->first);
}

void NotificationsBackend::expire() {
	auto now = context_.loop.now();
	while (!deadlines_.empty() && deadlines_.begin()->first <= now) close(deadlines_.begin()->second, CloseReason::Expired);
	armExpiry();
}

void NotificationsBackend::evictOverflow(const std::set<uint32_t>& ids, size_t max, const char* what) {
	if (ids.size() <= max) return;
	// `ids` may be the sender's own set, which close() changes: work on the victims' ids.
	std::vector<uint32_t> victims;
	size_t excess = ids.size() - max;
	for (auto id: ids)
		if (victims.size() < excess && live_.at(id).urgency != Urgency::Critical) victims.push_back(id);
	// Only when too many are critical, the oldest critical ones too.
	for (auto id: ids)
		if (victims.size() < excess && live_.at(id).urgency == Urgency::Critical) victims.push_back(id);
	warnOnce(std::string("overflow ") + what, fmt::format("more than {} notifications are shown {}; the oldest are closed as "
	                                                       "expired", max, what));
	for (auto id: victims) close(id, CloseReason::Expired);
}

// ---------------------------------------------------------------------------------------------
// history

void NotificationsBackend::addHistory(uint32_t id, json entry, std::vector<std::string> files) {
	if (auto old = history_.find(id); old != history_.end()) removeHistory(id);
	auto order = nextOrder_++;
	uint64_t bytes = 0;
	for (const auto& file: files) {
		struct stat st{};
		if (::stat(file.c_str(), &st) == 0) bytes += uint64_t(st.st_size);
	}
	history_[id] = Closed{order, std::move(files), bytes};
	historyOrder_[order] = id;
	historyImageBytes_ += bytes;
	context_.tree.set(historyPath(id), std::move(entry));
	trimHistory();
	// The copies live on $XDG_RUNTIME_DIR, a tmpfs shared with the whole session: the oldest
	// entries give theirs up first.
	for (auto it = historyOrder_.begin(); historyImageBytes_ > kMaxHistoryImageBytes && it != historyOrder_.end(); ++it) {
		if (history_.at(it->second).files.empty()) continue;
		warnOnce("historyImages", fmt::format("history's image files would take more than {} MiB; the oldest entries' "
		                                      "images are removed", kMaxHistoryImageBytes >> 20));
		dropHistoryImages(it->second);
	}
	markDirty();
}

void NotificationsBackend::dropHistoryImages(uint32_t id) {
	auto& closed = history_.at(id);
	auto path = historyPath(id);
	json gone = json::object();
	if (const json* entry = context_.tree.find(path))
		for (const char* field: {"image", "appIcon"})
			if (auto it = entry->find(field); it != entry->end() && it->is_string() &&
			                                  std::find(closed.files.begin(), closed.files.end(),
			                                            pathOfFileUrl(it->get<std::string>())) != closed.files.end())
				gone[field] = nullptr;
	// A qsd that is not the server leaves the files to the one that is (it names the same
	// copies); those nothing refers to go when it takes the name (removeStrayHistoryFiles).
	if (serving())
		for (const auto& file: closed.files) ::unlink(file.c_str());
	historyImageBytes_ -= closed.bytes;
	closed.bytes = 0;
	closed.files.clear();
	if (!gone.empty()) context_.tree.update(path, gone);
	markDirty();
}

void NotificationsBackend::removeHistory(uint32_t id) {
	auto it = history_.find(id);
	if (it == history_.end()) return;
	if (serving())   // as in dropHistoryImages
		for (const auto& file: it->second.files) ::unlink(file.c_str());
	historyImageBytes_ -= it->second.bytes;
	historyOrder_.erase(it->second.order);
	history_.erase(it);
	context_.tree.remove(historyPath(id));
	markDirty();
}

void NotificationsBackend::trimHistory() {
	while (history_.size() > historyLimit_ && !historyOrder_.empty()) removeHistory(historyOrder_.begin()->second);
}

// ---------------------------------------------------------------------------------------------
// the state file

void NotificationsBackend::loadState() {
	statePath_ = statePath();
	SavedState state;
	if (statePath_.empty()) {
		log::warning("notifications", "neither XDG_STATE_HOME nor HOME is set: history and ids are not kept across restarts");
	} else if (!makeDirs(fs::path(statePath_).parent_path().string())) {
		log::warning("notifications", "cannot create the directory of {}: {}; history is not kept", statePath_, std::strerror(errno));
		statePath_.clear();
	} else if (auto file = readState(statePath_); file.state) {
		state = std::move(*file.state);
		if (!file.problems.empty()) log::warning("notifications", "{}: ignored what is not valid: {}", statePath_, file.problems);
	}
	// Nothing is written here: the file belongs to whichever server has the name, which may be
	// another qsd. A file that cannot be used is set aside once this one has it (takeStateFromFile).
	dnd_ = state.dnd;
	defaultTimeoutMs_ = state.defaultTimeoutMs;
	historyLimit_ = state.historyLimit;
	capabilities_ = state.capabilities;
	nextId_ = firstId(state);

	auto highest = restoreHistory(state.history);
	if (highest >= nextId_ && highest != UINT32_MAX) nextId_ = highest + 1;
	lastId_ = nextId_ - 1;

	context_.tree.update(kRoot, {{"dnd", dnd_},
	                             {"defaultTimeoutMs", defaultTimeoutMs_},
	                             {"historyLimit", historyLimit_},
	                             {"capabilities", capabilities_}});
	if (!state.history.empty() || state.lastId)
		log::info("notifications", "{} notifications of history read back; ids continue at {}", history_.size(), nextId_);
}

uint32_t NotificationsBackend::restoreHistory(json& entries) {
	// History as it was left, oldest first. Image copies that are gone (the runtime directory
	// is emptied at log-out) are shown as null.
	uint32_t highest = 0;
	for (auto& entry: entries) {
		auto id = entry["id"].get<uint32_t>();
		// Fields added since the entry was written take the value they had then.
		if (!entry.contains("actionIcons")) entry["actionIcons"] = false;
		if (!entry.contains("replyPlaceholder")) entry["replyPlaceholder"] = nullptr;
		if (!entry.contains("value")) entry["value"] = nullptr;
		if (!entry.contains("stackTag")) entry["stackTag"] = nullptr;
		// Not in the file (kRecomputedFields): the plain text again from the markup.
		if (auto body = entry.find("body"); body != entry.end() && body->is_string())
			entry["bodyText"] = plainText(body->get<std::string>());
		std::vector<std::string> files;
		for (const char* field: {"image", "appIcon"}) {
			auto it = entry.find(field);
			if (it == entry.end() || !it->is_string()) continue;
			auto file = pathOfFileUrl(it->get<std::string>());
			bool ours = !historyDir_.empty() && file.rfind(historyDir_ + "/", 0) == 0;
			if (ours && ::access(file.c_str(), R_OK) != 0) *it = nullptr;
			else if (ours && std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
		}
		highest = std::max(highest, id);
		addHistory(id, std::move(entry), std::move(files));
	}
	return highest;
}

uint32_t NotificationsBackend::restoreShown(json& entries) {
	// As close() at a stop: nothing when history keeps nothing, a transient one not kept. An id
	// already in history was closed, and one this qsd shows is its own: neither is the dead
	// server's to close.
	if (historyLimit_ == 0) return 0;
	// The dead server's stored images are still in the store's directory, which this qsd's
	// store empties once it is made (takeStateFromFile runs before): history's copies are made
	// as close() makes them. A file that is gone (a reboot emptied the runtime directory) is null,
	// as a copy that cannot be made.
	const auto storeDir = Images::defaultDir();
	// When they went is not known; now is the first moment a qsd knew them closed.
	const auto closedAt = rfc3339(std::chrono::system_clock::now());
	json kept = json::array();
	for (auto& entry: entries) {
		auto id = entry["id"].get<uint32_t>();
		if (live_.count(id) || history_.count(id)) continue;
		if (auto t = entry.find("transient"); t != entry.end() && t->is_boolean() && t->get<bool>()) continue;
		entry["closedAt"] = closedAt;
		entry["closeReason"] = toString(CloseReason::Undefined);
		std::string imageFile, imageCopy;
		auto copyStored = [&](const char* field, const char* what) {
			auto it = entry.find(field);
			if (storeDir.empty() || it == entry.end() || !it->is_string()) return;
			auto file = pathOfFileUrl(it->get<std::string>());
			if (fs::path(file).parent_path() != fs::path(storeDir)) return;   // a theme's or the sender's file: as it is
			// One copy when image and appIcon are the same stored file, as in close().
			std::string copy = !imageFile.empty() && file == imageFile ? imageCopy
			                   : ::access(file.c_str(), R_OK) == 0 ? historyCopy(id, what, StoredImage{file, fileUrl(file), nullptr})
			                                                       : std::string();
			if (std::string_view(field) == "image") {
				imageFile = file;
				imageCopy = copy;
			}
			*it = copy.empty() ? json(nullptr) : json(fileUrl(copy));
		};
		copyStored("image", "image");
		copyStored("appIcon", "icon");
		kept.push_back(std::move(entry));
	}
	if (!kept.empty())
		log::info("notifications", "{} notifications shown when the last server ended without closing them are kept in history",
		          kept.size());
	// bodyText, the defaults of fields added since, the copies' files: as any history entry.
	return restoreHistory(kept);
}

void NotificationsBackend::removeStrayHistoryFiles() {
	if (historyDir_.empty()) return;
	std::set<std::string> referenced;
	for (const auto& [_, closed]: history_) referenced.insert(closed.files.begin(), closed.files.end());
	std::error_code ec;
	for (const auto& e: fs::directory_iterator(historyDir_, ec))
		if (!referenced.count(e.path().string())) fs::remove(e.path(), ec);
}

void NotificationsBackend::markDirty() {
	if (statePath_.empty() || !saveTimer_ || saveTimer_.enabled()) return;
	saveTimer_.setTime(std::max(context_.loop.now(), lastSave_ + kSaveIntervalUs));
}

void NotificationsBackend::save(bool clean) {
	// Only the server writes: a qsd waiting behind another one would overwrite that one's
	// history, settings and id counter with what it read at its start.
	if (statePath_.empty() || !serving()) return;
	SavedState state;
	state.lastId = lastId_;
	state.clean = clean;
	state.reservedId = clean ? lastId_ : uint32_t(std::min<uint64_t>(UINT32_MAX, uint64_t(lastId_) + kIdReserve));
	state.dnd = dnd_;
	state.defaultTimeoutMs = defaultTimeoutMs_;
	state.historyLimit = historyLimit_;
	state.capabilities = capabilities_;
	// What is shown, for the next qsd should this one die without closing it (restoreShown): what
	// a stop would keep in history (onBusStop closes by id, so the highest last), and no more than
	// history would keep. A stop closed them before it writes: a clean file has none, and none is
	// kept twice.
	std::vector<const json*> shownLastFirst;
	if (!clean)
		for (auto it = live_.rbegin(); it != live_.rend() && shownLastFirst.size() < historyLimit_; ++it)
			if (!it->second.transient)
				if (const auto* item = context_.tree.find(itemPath(it->first))) shownLastFirst.push_back(item);
	std::vector<const json*> newestFirst;
	newestFirst.reserve(historyOrder_.size());
	for (auto it = historyOrder_.rbegin(); it != historyOrder_.rend(); ++it)
		if (const auto* entry = context_.tree.find(historyPath(it->second))) newestFirst.push_back(entry);
	size_t written = 0;
	auto text = serializeState(state, shownLastFirst, newestFirst, kMaxStateFileBytes, &written);
	if (written < shownLastFirst.size() + newestFirst.size())
		warnOnce("stateFileBudget", fmt::format("history and the notifications shown would take more than {} MiB in {}; the "
		                                        "oldest entries are left out of the file (history's are shown until qsd stops)",
		                                        kMaxStateFileBytes >> 20, statePath_));
	lastSave_ = context_.loop.now();
	// The consequence: what a restart of qsd would lose.
	if (writeKeptFile(statePath_, text, stateWarned_, "notifications",
	                  "history, the notifications shown and Do-Not-Disturb would be lost if qsd restarts"))
		reservedId_ = state.reservedId;
}

void NotificationsBackend::takeStateFromFile() {
	if (statePath_.empty()) return;
	auto file = readState(statePath_);
	if (file.exists && !file.state) {
		// Kept for a person to look at rather than overwritten by the next write; the ids in it
		// cannot be read, so they start again after those of the state qsd has.
		auto bad = statePath_ + ".bad";
		if (::rename(statePath_.c_str(), bad.c_str()) == 0) {
			log::warning("notifications", "{} is not a state qsd can read ({}); it is kept as {} and qsd starts afresh", statePath_,
			             file.unusable, bad);
		} else {
			log::warning("notifications", "{} is not a state qsd can read ({}), and cannot be set aside as {}: {}; qsd leaves it "
			             "as it is and keeps no state this run", statePath_, file.unusable, bad, std::strerror(errno));
			statePath_.clear();
			return;
		}
	}
	if (file.state) {
		auto& state = *file.state;
		// Our own reservation is no one else's ids; another writer's is.
		bool died = !state.clean && state.reservedId != reservedId_;
		uint32_t last = state.lastId;
		if (died) last = std::max(last, state.reservedId);
		if (last >= nextId_ && last != UINT32_MAX) {
			nextId_ = last + 1;
			lastId_ = last;
		}
		if (waited_) adoptState(state);
		// The server before ended without a stop (a stop leaves nothing shown): what it showed
		// goes to history now, after the history it left. Their ids are within its reservation.
		if (died) {
			auto highest = restoreShown(state.shown);
			if (highest >= nextId_ && highest != UINT32_MAX) {
				nextId_ = highest + 1;
				lastId_ = highest;
			}
		}
	}
	// The reservation is on disk before the first id is handed out, and the file says qsd runs.
	save(false);
}

void NotificationsBackend::adoptState(SavedState& state) {
	// The server that had the name kept history, Do-Not-Disturb and the settings while this
	// one waited; what it left in the file is the state to go on with. History's entries are
	// replaced without touching their files (the file's entries name the same copies);
	// removeStrayHistoryFiles then removes those nothing refers to.
	dnd_ = state.dnd;
	defaultTimeoutMs_ = state.defaultTimeoutMs;
	historyLimit_ = state.historyLimit;
	capabilities_ = state.capabilities;
	history_.clear();
	historyOrder_.clear();
	historyImageBytes_ = 0;
	context_.tree.set("/notifications/history", json::object());
	auto highest = restoreHistory(state.history);
	if (highest >= nextId_ && highest != UINT32_MAX) {
		nextId_ = highest + 1;
		lastId_ = highest;
	}
	context_.tree.update(kRoot, {{"dnd", dnd_},
	                             {"defaultTimeoutMs", defaultTimeoutMs_},
	                             {"historyLimit", historyLimit_},
	                             {"capabilities", capabilities_}});
}

} // namespace qsd::notifications
