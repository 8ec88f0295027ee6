#include "client.hpp"

#include "convert.hpp"
#include "listmodel.hpp"
#include "node.hpp"

#include <qjsengine.h>
#include <qlogging.h>
#include <qqmlengine.h>
#include <qset.h>

#include <qsd/protocol/jsonrpc.hpp>

#include <algorithm>
#include <unistd.h>

namespace qsd::qml {

namespace {

// Client-side error code for requests that cannot reach the daemon (no connection, or the
// connection was lost before the answer). Inside JSON-RPC's implementation-defined range and
// never used by the daemon.
constexpr int NOT_CONNECTED = -32099;

constexpr int BACKOFF_FIRST_MS = 100;
constexpr int BACKOFF_MAX_MS = 5000;

QString defaultSocketPath() {
	auto env = qEnvironmentVariable("QSD_SOCKET");
	if (!env.isEmpty()) return env;
	auto runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
	if (runtime.isEmpty()) runtime = QStringLiteral("/run/user/%1").arg(getuid());
	return runtime + QStringLiteral("/qsd/qsd.sock");
}

bool sameValue(const QVariant& a, const QVariant& b) {
	if (a.isValid() != b.isValid()) return false;
	if (!a.isValid()) return true;
	auto nullType = QMetaType::fromType<std::nullptr_t>();
	if (a.metaType() == nullType || b.metaType() == nullType) return a.metaType() == b.metaType();
	return a == b;
}

} // namespace

QsdClient::QsdClient(QObject* parent): QObject(parent), mSocketPath(defaultSocketPath()) {
	this->mRoot = new QsdNode(std::string(), this);
	QQmlEngine::setObjectOwnership(this->mRoot, QQmlEngine::CppOwnership);
	this->mNodes.emplace(std::string(), this->mRoot);

	this->mReconnectTimer.setSingleShot(true);
	QObject::connect(&this->mReconnectTimer, &QTimer::timeout, this, &QsdClient::openSocket);
	this->mResumeTimer.setSingleShot(true);
	QObject::connect(&this->mResumeTimer, &QTimer::timeout, this, &QsdClient::resumeReading);

	// Deferred, so that a socketPath or paths assignment made right after the singleton's
	// creation is the one used for the first connection.
	QMetaObject::invokeMethod(this, &QsdClient::openSocket, Qt::QueuedConnection);
}

QsdClient::~QsdClient() {
	if (this->mSocket) {
		QObject::disconnect(this->mSocket, nullptr, this, nullptr);
		this->mSocket->abort();
	}
}

QsdClient* QsdClient::create(QQmlEngine* /*qmlEngine*/, QJSEngine* jsEngine) {
	auto* client = new QsdClient();
	client->mEngine = jsEngine;
	return client;
}

void QsdClient::setSocketPath(const QString& path) {
	auto next = path.isEmpty() ? defaultSocketPath() : path;
	if (next == this->mSocketPath) return;
	this->mSocketPath = next;
	emit this->socketPathChanged();
	this->reconnect();
}

void QsdClient::setPaths(const QStringList& paths) {
	auto next = paths.isEmpty() ? QStringList {QString()} : paths;
	if (next == this->mPaths) return;
	this->mPaths = next;
	emit this->pathsChanged();
	if (this->mSocket && this->mSocket->state() == QLocalSocket::ConnectedState) {
		if (this->mSubscription != 0) this->send("tree.unsubscribe", {{"subscription", this->mSubscription}}, nullptr);
		this->mSubscription = 0;
		this->subscribe();
	}
}

// ---- connection ---------------------------------------------------------------------------

void QsdClient::openSocket() {
	this->mReconnectTimer.stop();
	if (this->mSocket) {
		QObject::disconnect(this->mSocket, nullptr, this, nullptr);
		this->mSocket->abort();
		this->mSocket->deleteLater();
		this->mSocket = nullptr;
		this->failPending(QStringLiteral("Connection to qsd closed before the answer"));
	}
	this->setConnected(false);
	this->mReader = LineReader(64 << 20);
	this->mSubscription = 0;

	this->mSocket = new QLocalSocket(this);
	if (this->mPaused) this->mSocket->setReadBufferSize(4096);
	QObject::connect(this->mSocket, &QLocalSocket::connected, this, &QsdClient::onSocketConnected);
	QObject::connect(this->mSocket, &QLocalSocket::disconnected, this, &QsdClient::onSocketDisconnected);
	QObject::connect(this->mSocket, &QLocalSocket::errorOccurred, this, &QsdClient::onSocketError);
	QObject::connect(this->mSocket, &QLocalSocket::readyRead, this, &QsdClient::onReadyRead);
	this->mSocket->connectToServer(this->mSocketPath);
}

void QsdClient::onSocketConnected() {
	this->mBackoffMs = 0;
	this->setError({});
	this->subscribe();
}

void QsdClient::onSocketDisconnected() {
	this->setConnected(false);
	this->failPending(QStringLiteral("Connection to qsd lost before the answer"));
	if (this->mError.isEmpty()) this->setError(QStringLiteral("Disconnected from %1").arg(this->mSocketPath));
	this->scheduleReconnect();
}

void QsdClient::onSocketError(QLocalSocket::LocalSocketError error) {
	if (error == QLocalSocket::PeerClosedError) return;   // disconnected() follows
	this->setError(QStringLiteral("Cannot connect to qsd at %1: %2").arg(this->mSocketPath, this->mSocket->errorString()));
	if (this->mSocket->state() != QLocalSocket::ConnectedState) {
		this->setConnected(false);
		this->scheduleReconnect();
	}
}

void QsdClient::scheduleReconnect() {
	if (this->mReconnectTimer.isActive()) return;
	this->mBackoffMs = this->mBackoffMs == 0 ? BACKOFF_FIRST_MS : std::min(this->mBackoffMs * 2, BACKOFF_MAX_MS);
	this->mReconnectTimer.start(this->mBackoffMs);
}

void QsdClient::reconnect() {
	this->mBackoffMs = 0;
	// Queued: reconnect() may be called from a callback running inside the line reader.
	QMetaObject::invokeMethod(this, &QsdClient::openSocket, Qt::QueuedConnection);
}

void QsdClient::pauseReading(int ms) {
	this->mPaused = true;
	// A bounded read buffer makes Qt stop reading the fd, so the backlog stays in the kernel
	// and then in the daemon's queue for this client: exactly what a slow client does.
	if (this->mSocket) this->mSocket->setReadBufferSize(4096);
	if (ms > 0) this->mResumeTimer.start(ms);
}

void QsdClient::resumeReading() {
	this->mResumeTimer.stop();
	if (!this->mPaused) return;
	this->mPaused = false;
	if (this->mSocket) this->mSocket->setReadBufferSize(0);
	QMetaObject::invokeMethod(this, &QsdClient::onReadyRead, Qt::QueuedConnection);
}

void QsdClient::setConnected(bool connected) {
	if (connected == this->mConnected) return;
	this->mConnected = connected;
	emit this->connectedChanged();
}

void QsdClient::setError(const QString& error) {
	if (error == this->mError) return;
	this->mError = error;
	emit this->errorChanged();
}

void QsdClient::subscribe() {
	json paths = json::array();
	for (const auto& path: this->mPaths) paths.push_back(path.toStdString());
	this->send("tree.subscribe", {{"paths", paths}}, [this](const json* error, const json* result) {
		if (error) {
			this->setError(QStringLiteral("tree.subscribe failed: %1")
			                   .arg(QString::fromStdString(error->value("message", std::string("unknown error")))));
			return;
		}
		try {
			this->mSubscription = result->at("subscription").get<uint64_t>();
			this->applySnapshot(result->at("snapshot"), result->at("revision").get<uint64_t>(),
			                    result->at("epoch").get<std::string>());
		} catch (const json::exception& e) {
			this->setError(QStringLiteral("Malformed tree.subscribe result: %1").arg(e.what()));
			return;
		}
		this->setConnected(true);
	});
}

// ---- messages -----------------------------------------------------------------------------

void QsdClient::onReadyRead() {
	if (this->mPaused || !this->mSocket) return;
	auto* socket = this->mSocket;
	while (socket == this->mSocket && !this->mPaused && socket->bytesAvailable() > 0) {
		auto data = socket->read(1 << 20);
		if (data.isEmpty()) break;
		this->mReader.feed(
		    std::string_view(data.constData(), static_cast<size_t>(data.size())),
		    [this](std::string_view line) { this->handleLine(line); },
		    [this] { this->setError(QStringLiteral("A message from qsd exceeded the line limit; resubscribing")); });
	}
}

void QsdClient::handleLine(std::string_view line) {
	auto message = rpc::parse(line);
	if (!message || !message->is_object()) {
		qWarning("Qsd: ignoring a malformed line from the daemon");
		return;
	}
	if (message->contains("method")) {
		const auto& method = (*message)["method"];
		if (method.is_string()) this->handleNotification(method.get<std::string>(), message->value("params", json::object()));
		return;
	}
	auto idIt = message->find("id");
	if (idIt == message->end() || !idIt->is_number_unsigned()) return;
	auto it = this->mPending.find(idIt->get<uint64_t>());
	if (it == this->mPending.end()) return;
	auto pending = std::move(it->second);
	this->mPending.erase(it);
	if (!pending.handler) return;
	if (auto err = message->find("error"); err != message->end()) pending.handler(&*err, nullptr);
	else {
		auto result = message->find("result");
		static const json NULL_RESULT = nullptr;
		pending.handler(nullptr, result != message->end() ? &*result : &NULL_RESULT);
	}
}

void QsdClient::handleNotification(const std::string& method, const json& params) {
	try {
		if (method == "tree.changed") {
			if (params.at("subscription").get<uint64_t>() != this->mSubscription || this->mSubscription == 0) return;
			this->applyChanges(params.at("revision").get<uint64_t>(), params.at("changes"));
		} else if (method == "tree.resync") {
			if (params.at("subscription").get<uint64_t>() != this->mSubscription || this->mSubscription == 0) return;
			this->applySnapshot(params.at("snapshot"), params.at("revision").get<uint64_t>(), this->mMirror.epoch());
		}
	} catch (const json::exception& e) {
		qWarning("Qsd: malformed %s notification (%s); resubscribing", method.c_str(), e.what());
		this->mSubscription = 0;
		this->subscribe();
	}
}

uint64_t QsdClient::send(const std::string& method, json params, Handler handler) {
	auto id = this->mNextId++;
	if (handler) this->mPending.emplace(id, Pending {std::move(handler)});
	auto line = rpc::toLine(rpc::makeRequest(id, method, std::move(params)));
	this->mSocket->write(line.data(), static_cast<qint64>(line.size()));
	return id;
}

void QsdClient::failPending(const QString& message) {
	auto pending = std::move(this->mPending);
	this->mPending.clear();
	json error = {{"code", NOT_CONNECTED}, {"message", message.toStdString()}};
	for (auto& [id, p]: pending)
		if (p.handler) p.handler(&error, nullptr);
}

void QsdClient::call(const QString& method, const QJSValue& params, const QJSValue& callback) {
	auto* engine = this->mEngine ? this->mEngine : qjsEngine(this);
	auto methodName = method.toStdString();
	auto deliver = [engine, callback, methodName](const json* error, const json* result) {
		if (!callback.isCallable() || !engine) {
			if (error)
				qWarning("Qsd: %s failed: %s", methodName.c_str(), rpc::dump(*error).c_str());
			return;
		}
		QJSValue errorValue(QJSValue::NullValue);
		QJSValue resultValue(QJSValue::UndefinedValue);
		if (error) errorValue = engine->toScriptValue(toVariant(*error));
		if (result) resultValue = engine->toScriptValue(toVariant(*result));
		auto returned = QJSValue(callback).call({errorValue, resultValue});
		if (returned.isError())
			qWarning("Qsd: the callback of %s threw: %s", methodName.c_str(), qPrintable(returned.toString()));
	};

	if (!this->mSocket || this->mSocket->state() != QLocalSocket::ConnectedState) {
		// Asynchronous like every other answer, so callers need one code path.
		auto socketPath = this->mSocketPath.toStdString();
		QMetaObject::invokeMethod(
		    this,
		    [deliver, socketPath] {
			    json error = {{"code", NOT_CONNECTED}, {"message", "Not connected to qsd"}, {"data", {{"socket", socketPath}}}};
			    deliver(&error, nullptr);
		    },
		    Qt::QueuedConnection);
		return;
	}
	json paramsJson = json::object();
	if (!params.isUndefined() && !params.isNull()) paramsJson = fromVariant(params.toVariant());
	this->send(methodName, std::move(paramsJson), deliver);
}

// ---- the mirror ---------------------------------------------------------------------------

void QsdClient::applySnapshot(const json& snapshot, uint64_t revision, const std::string& epoch) {
	auto oldRevision = this->mMirror.revision();
	auto oldEpoch = this->mMirror.epoch();
	std::vector<std::string> paths;
	for (const auto& path: this->mPaths) paths.push_back(path.toStdString());
	this->mMirror.reset(paths, snapshot, revision, epoch);

	// The nodes are diffed against the new document rather than rebuilt: after a reconnect only
	// what really changed notifies, and the models insert and remove rows instead of resetting.
	Batch batch;
	this->syncObject(batch, this->mRoot, this->mMirror.document());
	this->commit(batch, {std::string()}, oldRevision, oldEpoch);
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
	touched.reserve(changes.size());
	for (const auto& op: changes) {
		auto path = op.at("path").get<std::string>();
		touched.push_back(path);
		if (path.empty()) {
			this->syncObject(batch, this->mRoot, this->mMirror.document());
			continue;
		}
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
	this->commit(batch, touched, oldRevision, oldEpoch);
}

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

	auto& writes = batch.writes[parent];
	auto pendingIt = writes.constFind(qkey);
	auto current = pendingIt != writes.cend() ? *pendingIt : parent->value(qkey);
	if (sameValue(current, next)) return;
	if (pendingIt == writes.cend()) batch.notifications.emplace_back(parent, qkey);
	writes.insert(qkey, next);
}

void QsdClient::syncObject(Batch& batch, QsdNode* node, const json& object) {
	for (const auto& [key, value]: object.items()) this->syncEntry(batch, node, key, &value);
	for (const auto& key: node->keys()) {
		if (object.contains(key.toStdString())) continue;
		if (node->value(key).isValid() || node->child(key)) this->syncEntry(batch, node, key.toStdString(), nullptr);
	}
}

void QsdClient::dropNode(Batch& batch, QsdNode* node) {
	for (auto* child: node->children()) this->dropNode(batch, child);
	this->mNodes.erase(node->path());
	batch.dropped.push_back(node);
}

void QsdClient::commit(Batch& batch, const std::vector<std::string>& touched, uint64_t oldRevision, const std::string& oldEpoch) {
	// 1. Every value of the batch is stored before anything is emitted.
	QSet<QsdNode*> dropped(batch.dropped.begin(), batch.dropped.end());
	for (auto& [node, values]: batch.writes)
		if (!values.isEmpty() && !dropped.contains(node)) node->storeSilently(values);

	// 2. Models: rows are inserted and removed against the already complete state.
	for (auto& entry: this->mModels) {
		const auto& path = entry.first;   // a named reference: clang 14 cannot capture structured bindings
		auto affected = std::any_of(touched.begin(), touched.end(), [&path](const std::string& t) {
			return pointer::isWithin(t, path) || pointer::isWithin(path, t);
		});
		if (affected) entry.second->update(this->mMirror.find(path));
	}

	// 3. Property notifications, each property once.
	for (const auto& [node, key]: batch.notifications)
		if (!dropped.contains(node)) node->notify(key);

	// 4. The singleton's own properties.
	static const std::pair<const char*, void (QsdClient::*)()> DOMAINS[] = {
	    {"daemon", &QsdClient::daemonChanged}, {"network", &QsdClient::networkChanged},
	    {"power", &QsdClient::powerChanged},   {"audio", &QsdClient::audioChanged},
	    {"tray", &QsdClient::trayChanged},     {"wayland", &QsdClient::waylandChanged},
	    {"debug", &QsdClient::debugChanged},
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
	emit this->changed();

	for (auto* node: batch.dropped) node->deleteLater();
}

QsdNode* QsdClient::domain(const char* name) const { return this->mRoot->child(QString::fromLatin1(name)); }

QsdNode* QsdClient::nodeAt(const std::string& path) const {
	auto it = this->mNodes.find(path);
	return it != this->mNodes.end() ? it->second : nullptr;
}

QsdNode* QsdClient::node(const QString& path) const { return this->nodeAt(path.toStdString()); }

QVariant QsdClient::value(const QString& path) const {
	const auto* found = this->mMirror.find(path.toStdString());
	if (!found) return {};
	return toVariant(*found);
}

QsdListModel* QsdClient::model(const QString& path) {
	auto key = path.toStdString();
	if (auto it = this->mModels.find(key); it != this->mModels.end()) return it->second;
	auto* model = new QsdListModel(this, key, this);
	QQmlEngine::setObjectOwnership(model, QQmlEngine::CppOwnership);
	this->mModels.emplace(key, model);
	model->update(this->mMirror.find(key));
	return model;
}

} // namespace qsd::qml
