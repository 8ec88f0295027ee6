// The mirror as QML objects: snapshots and change batches diffed into the nodes and models,
// notifications in a fixed order, and the restart hold (a domain keeps its last state while a
// new daemon's backend starts, so a restart does not flicker).

#include "client.hpp"
#include "common.hpp"
#include "convert.hpp"

#include <qsd/protocol/domains.hpp>

#include <qlogging.h>
#include <qqmlengine.h>
#include <qset.h>

#include <algorithm>

namespace qsd::qml {

namespace {

bool sameValue(const QVariant& a, const QVariant& b) {
	if (a.isValid() != b.isValid()) return false;
	if (!a.isValid()) return true;
	auto nullType = QMetaType::fromType<std::nullptr_t>();
	if (a.metaType() == nullType || b.metaType() == nullType) return a.metaType() == b.metaType();
	return a == b;
}

// The first reference token of a pointer, escaped as it is ("/network/devices" -> "network");
// "" for the root. Domain names need no escaping.
std::string domainOf(const std::string& path) {
	if (path.size() < 2) return {};
	auto slash = path.find('/', 1);
	return path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
}

std::string_view backendOf(std::string_view domain) { return qsd::backendOfDomain(domain); }

} // namespace

// ---- snapshots and changes ----------------------------------------------------------------

void QsdClient::applySnapshot(const json& snapshot, uint64_t revision, const std::string& epoch, bool afterConnect) {
	auto oldRevision = this->mMirror.revision();
	auto oldEpoch = this->mMirror.epoch();
	// What each domain shows now, in case a new daemon's backend is still starting.
	std::map<std::string, json> previous;
	if (afterConnect && this->mEverSubscribed && this->mRestartGraceMs > 0)
		for (const auto& entry: kDomainBackends)
			if (const auto* shown = this->find("/" + std::string(entry.domain))) previous.emplace(entry.domain, *shown);

	std::vector<std::string> paths;
	for (const auto& path: this->mPaths) paths.push_back(path.toStdString());
	this->mMirror.reset(paths, snapshot, revision, epoch);
	this->mEverSubscribed = true;
	if (afterConnect) {
		this->mHeld.clear();
		this->holdDomains(previous);
	}

	// The nodes are diffed against the new document rather than rebuilt: after a reconnect only
	// what really changed notifies, and the models insert and remove rows instead of resetting.
	Batch batch;
	this->syncRoot(batch);
	this->commit(batch, {std::string()}, {std::string()}, oldRevision, oldEpoch);
	emit this->resynced();
}

void QsdClient::applyChanges(uint64_t revision, const json& changes) {
	auto oldRevision = this->mMirror.revision();
	auto oldEpoch = this->mMirror.epoch();
	auto result = this->mMirror.apply(revision, changes);
	if (result == Mirror::Result::Stale) return;
	if (result == Mirror::Result::Gap) {
		qWarning("Qsd: a change of revision %llu did not apply to the mirror; resubscribing",
		         static_cast<unsigned long long>(revision));
		this->send("tree.unsubscribe", {{"subscription", this->mSubscription}}, nullptr);
		this->mSubscription = 0;
		this->subscribe();
		return;
	}

	Batch batch;
	std::vector<std::string> touched;
	std::vector<std::string> daemonTouched;
	touched.reserve(changes.size());
	daemonTouched.reserve(changes.size());
	auto released = this->takeReleasedHolds();
	for (const auto& op: changes) {
		auto path = op.at("path").get<std::string>();
		daemonTouched.push_back(path);
		if (path.empty()) {
			touched.push_back(path);
			this->syncRoot(batch);
			continue;
		}
		// A held domain keeps showing its old state; a domain released now is synced whole below.
		auto domain = domainOf(path);
		if (this->mHeld.count(domain) || std::find(released.begin(), released.end(), domain) != released.end()) continue;
		touched.push_back(path);
		// The property that changed is `key` of the object at `parent`; when that object is
		// new in this batch, the change is the creation of an ancestor's property instead.
		json::json_pointer target(path);
		auto key = target.back();
		auto parent = target.parent_pointer();
		auto nodeIt = this->mNodes.find(parent.to_string());
		while (nodeIt == this->mNodes.end()) {
			key = parent.back();
			parent = parent.parent_pointer();
			nodeIt = this->mNodes.find(parent.to_string());
		}
		this->syncEntry(batch, nodeIt->second, key, this->mMirror.find(pointer::join(nodeIt->second->path(), key)));
	}
	for (const auto& domain: released) {
		this->syncEntry(batch, this->mRoot, domain, this->mMirror.find("/" + domain));
		touched.push_back("/" + domain);
	}
	this->commit(batch, touched, daemonTouched, oldRevision, oldEpoch);
}

// ---- diffing into the nodes ---------------------------------------------------------------

void QsdClient::syncEntry(Batch& batch, QsdNode* parent, const std::string& key, const json* value) {
	auto qkey = QString::fromStdString(key);
	QVariant next;
	auto* child = parent->child(qkey);
	if (value && value->is_object()) {
		if (!child) {
			auto path = pointer::join(parent->path(), key);
			child = new QsdNode(path, this);
			QQmlEngine::setObjectOwnership(child, QQmlEngine::CppOwnership);
			this->mNodes.emplace(path, child);
			parent->setChild(qkey, child);
		}
		this->syncObject(batch, child, *value);
		next = QVariant::fromValue<QObject*>(child);
	} else {
		if (child) {
			parent->takeChild(qkey);
			this->dropNode(batch, child);
		}
		if (value) next = toVariant(*value);
	}

	auto writesIt = batch.writes.find(parent);
	const QVariantHash* writes = writesIt != batch.writes.end() ? &writesIt->second : nullptr;
	auto pendingIt = writes ? writes->constFind(qkey) : QVariantHash::const_iterator();
	auto pending = writes && pendingIt != writes->cend();
	auto current = pending ? *pendingIt : parent->value(std::string_view(key));
	if (sameValue(current, next)) return;
	if (!pending) batch.notifications.emplace_back(parent, qkey);
	batch.writes[parent].insert(qkey, next);
}

void QsdClient::syncObject(Batch& batch, QsdNode* node, const json& object) {
	for (const auto& [key, value]: object.items()) this->syncEntry(batch, node, key, &value);
	for (const auto& key: node->keys()) {
		if (object.contains(key.toStdString())) continue;
		if (node->value(key).isValid() || node->child(key)) this->syncEntry(batch, node, key.toStdString(), nullptr);
	}
}

void QsdClient::syncRoot(Batch& batch) {
	const auto& document = this->mMirror.document();
	for (const auto& [key, value]: document.items())
		if (!this->mHeld.count(key)) this->syncEntry(batch, this->mRoot, key, &value);
	for (const auto& key: this->mRoot->keys()) {
		auto name = key.toStdString();
		if (document.contains(name) || this->mHeld.count(name)) continue;
		if (this->mRoot->value(key).isValid() || this->mRoot->child(key)) this->syncEntry(batch, this->mRoot, name, nullptr);
	}
}

void QsdClient::dropNode(Batch& batch, QsdNode* node) {
	for (auto* child: node->children()) this->dropNode(batch, child);
	this->mNodes.erase(node->path());
	batch.dropped.push_back(node);
}

void QsdClient::commit(Batch& batch, const std::vector<std::string>& touched, const std::vector<std::string>& daemonTouched,
                       uint64_t oldRevision, const std::string& oldEpoch) {
	// 1. Every value of the batch is stored before anything is emitted.
	QSet<QsdNode*> dropped(batch.dropped.begin(), batch.dropped.end());
	std::vector<std::pair<QsdNode*, bool>> entries;   // nodes whose entries changed, and whether their count did
	for (auto& [node, values]: batch.writes)
		if (!values.isEmpty() && !dropped.contains(node)) entries.emplace_back(node, node->storeSilently(values));

	// 2. Models: rows are inserted and removed against the already complete state. A model
	// has work only when its collection's own entries were written or its node came or went;
	// a change inside an item is the item node's business.
	// An ordered model also follows its order array, an entry of its parent node.
	auto written = [&](QsdNode* node) {
		auto writes = node ? batch.writes.find(node) : batch.writes.end();
		return writes != batch.writes.end() && !writes->second.isEmpty();
	};
	for (auto& entry: this->mModels) {
		auto* model = entry.second;
		const auto& path = model->jsonPath();
		auto* node = this->nodeAt(path);
		bool orderWritten = false;
		if (!model->orderPath().empty()) {
			const auto& order = model->orderPath();
			orderWritten = written(this->nodeAt(order.substr(0, order.rfind('/'))));
		}
		if (node != model->collectionNode() || written(node) || orderWritten)
			model->update(this->find(path), node, model->orderPath().empty() ? nullptr : this->find(model->orderPath()));
	}

	// 3. Property notifications, each property once; then `values`/`count` of the nodes whose
	// entries changed.
	for (const auto& [node, key]: batch.notifications)
		if (!dropped.contains(node)) node->notify(key);
	for (const auto& [node, countChanged]: entries) node->notifyEntries(countChanged);

	// 4. The singleton's own properties.
	static const std::pair<const char*, void (QsdClient::*)()> DOMAINS[] = {
	    {"daemon", &QsdClient::daemonChanged}, {"network", &QsdClient::networkChanged},
	    {"power", &QsdClient::powerChanged},   {"audio", &QsdClient::audioChanged},
	    {"tray", &QsdClient::trayChanged},     {"wayland", &QsdClient::waylandChanged},
	    {"media", &QsdClient::mediaChanged},   {"debug", &QsdClient::debugChanged},
	    {"notifications", &QsdClient::notificationsChanged},
	    {"bluetooth", &QsdClient::bluetoothChanged},
	};
	for (const auto& [name, signal]: DOMAINS) {
		auto* now = this->domain(name);
		auto& last = this->mDomains[name];
		if (now == last) continue;
		last = now;
		emit(this->*signal)();
	}
	if (this->mMirror.epoch() != oldEpoch) emit this->epochChanged();
	if (this->mMirror.revision() != oldRevision) emit this->revisionChanged();

	// 5. Elements that follow a path (QsdNode elements, claims). A copy: a watcher may add or
	// remove watchers.
	auto watchers = this->mWatchers;
	for (auto* watcher: watchers) {
		if (std::find(this->mWatchers.begin(), this->mWatchers.end(), watcher) == this->mWatchers.end()) continue;
		auto path = watcher->watchedPath();
		const auto& list = watcher->watchesDaemon() ? daemonTouched : touched;
		auto hit = std::any_of(list.begin(), list.end(), [&path](const std::string& t) {
			return pointer::isWithin(t, path) || pointer::isWithin(path, t);
		});
		if (hit) watcher->watchedChanged();
	}
	emit this->changed();

	for (auto* node: batch.dropped) node->deleteLater();
}

// ---- the restart hold ---------------------------------------------------------------------

void QsdClient::holdDomains(const std::map<std::string, json>& previous) {
	auto now = nowMs();
	auto wallNow = QDateTime::currentMSecsSinceEpoch();
	for (const auto& [domain, shown]: previous) {
		const auto* next = this->mMirror.find("/" + domain);
		if (next && *next == shown) continue;   // nothing would change
		auto backend = std::string(backendOf(domain));
		auto statusPath = "/daemon/backends/" + backend;
		auto statusVisible = std::any_of(this->mMirror.paths().begin(), this->mMirror.paths().end(),
		                                 [&statusPath](const std::string& p) { return pointer::isWithin(statusPath, p); });
		qint64 remaining = this->mRestartGraceMs;
		if (statusVisible) {
			if (const auto* status = this->mMirror.find(statusPath); status && status->is_object()) {
				auto state = status->find("state");
				// running: the new state is complete, diff now; unavailable, failed, stopped: the
				// absence is real and shows.
				if (state == status->end() || !state->is_string() || *state != "starting") continue;
				auto since = status->find("since");
				if (since != status->end() && since->is_string()) {
					auto started = QDateTime::fromString(QString::fromStdString(since->get<std::string>()), Qt::ISODateWithMs);
					if (started.isValid()) remaining -= std::max<qint64>(0, wallNow - started.toMSecsSinceEpoch());
				}
			}
			// No status yet: the backend has not reported; it gets the whole grace period.
		} else {
			// Backend states are not subscribed: the domain's own `available` decides.
			if (next && next->is_object()) {
				auto available = next->find("available");
				if (available != next->end() && available->is_boolean() && available->get<bool>()) continue;
			}
		}
		if (remaining <= 0) continue;
		this->mHeld[domain] = Held {backend, shown, now + remaining};
	}
	this->armHoldTimer();
}

std::vector<std::string> QsdClient::takeReleasedHolds() {
	std::vector<std::string> released;
	auto now = nowMs();
	for (auto it = this->mHeld.begin(); it != this->mHeld.end();) {
		const auto& [domain, held] = *it;
		auto release = now >= held.deadline;
		if (!release) {
			auto statusPath = "/daemon/backends/" + held.backend;
			if (const auto* status = this->mMirror.find(statusPath); status && status->is_object()) {
				auto state = status->find("state");
				release = state != status->end() && (!state->is_string() || *state != "starting");
			} else if (const auto* next = this->mMirror.find("/" + domain); next && next->is_object()) {
				auto available = next->find("available");
				release = available != next->end() && available->is_boolean() && available->get<bool>();
			}
		}
		if (release) {
			released.push_back(domain);
			it = this->mHeld.erase(it);
		} else {
			++it;
		}
	}
	this->armHoldTimer();
	return released;
}

void QsdClient::releaseHolds() {
	auto released = this->takeReleasedHolds();
	if (released.empty()) return;
	Batch batch;
	std::vector<std::string> touched;
	for (const auto& domain: released) {
		this->syncEntry(batch, this->mRoot, domain, this->mMirror.find("/" + domain));
		touched.push_back("/" + domain);
	}
	auto revision = this->mMirror.revision();
	this->commit(batch, touched, {}, revision, this->mMirror.epoch());
}

void QsdClient::armHoldTimer() {
	if (this->mHeld.empty()) {
		this->mHoldTimer.stop();
		return;
	}
	auto next = std::min_element(this->mHeld.begin(), this->mHeld.end(),
	                             [](const auto& a, const auto& b) { return a.second.deadline < b.second.deadline; });
	this->mHoldTimer.start(static_cast<int>(std::max<qint64>(1, next->second.deadline - nowMs())));
}

bool QsdClient::isHeld(const std::string& path) const { return !this->mHeld.empty() && this->mHeld.count(domainOf(path)); }

// ---- reading the view ---------------------------------------------------------------------

const nlohmann::json* QsdClient::find(const std::string& path) const {
	if (this->isHeld(path)) {
		const auto& held = this->mHeld.at(domainOf(path));
		auto slash = path.find('/', 1);
		if (slash == std::string::npos) return &held.value;
		try {
			json::json_pointer rest(path.substr(slash));
			return held.value.contains(rest) ? &held.value.at(rest) : nullptr;
		} catch (const json::exception&) {
			return nullptr;
		}
	}
	return this->mMirror.find(path);
}

nlohmann::json QsdClient::viewDocument() const {
	auto document = this->mMirror.document();
	for (const auto& [domain, held]: this->mHeld) document[domain] = held.value;
	return document;
}

QsdNode* QsdClient::domain(const char* name) const { return this->mRoot->child(QString::fromLatin1(name)); }

QsdNode* QsdClient::nodeAt(const std::string& path) const {
	auto it = this->mNodes.find(path);
	return it != this->mNodes.end() ? it->second : nullptr;
}

QVariant QsdClient::node(const QString& path) const { return QVariant::fromValue<QObject*>(this->nodeAt(path.toStdString())); }

QString QsdClient::pathOf(const QVariant& node) const {
	auto* n = qobject_cast<QsdNode*>(node.value<QObject*>());
	return n ? QString::fromStdString(n->path()) : QString();
}

QString QsdClient::keyOf(const QVariant& node) const {
	auto* n = qobject_cast<QsdNode*>(node.value<QObject*>());
	if (!n || n->path().empty()) return {};
	try {
		return QString::fromStdString(json::json_pointer(n->path()).back());
	} catch (const json::exception&) {
		return {};
	}
}

QVariant QsdClient::value(const QString& path) const {
	auto key = path.toStdString();
	if (key.empty() && !this->mHeld.empty()) return toVariant(this->viewDocument());
	const auto* found = this->find(key);
	if (!found) return {};
	return toVariant(*found);
}

QsdListModel* QsdClient::model(const QString& path, const QString& orderPath) {
	auto collection = path.toStdString();
	auto order = orderPath.toStdString();
	// One model per (path, order): the key joins them with a byte no JSON Pointer holds.
	auto key = order.empty() ? collection : collection + '\0' + order;
	if (auto it = this->mModels.find(key); it != this->mModels.end()) return it->second;
	auto* model = new QsdListModel(this, collection, this, order);
	QQmlEngine::setObjectOwnership(model, QQmlEngine::CppOwnership);
	this->mModels.emplace(key, model);
	model->update(this->find(collection), this->nodeAt(collection), order.empty() ? nullptr : this->find(order));
	return model;
}

void QsdClient::addWatcher(PathWatcher* watcher) { this->mWatchers.push_back(watcher); }

void QsdClient::removeWatcher(PathWatcher* watcher) { std::erase(this->mWatchers, watcher); }

} // namespace qsd::qml
