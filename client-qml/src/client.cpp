#include "client.hpp"

#include "common.hpp"
#include "convert.hpp"
#include "elements.hpp"

#include <qjsengine.h>
#include <qlogging.h>
#include <qqmlengine.h>

#include <qsd/protocol/jsonrpc.hpp>

#include <algorithm>
#include <unistd.h>
#include <utility>

namespace qsd::qml {

namespace {

constexpr int BACKOFF_FIRST_MS = 100;
constexpr int BACKOFF_MAX_MS = 5000;
// Calls made while connecting wait this long for the connection, and are queued only while the
// daemon has been unreachable for less than this; later ones fail at once.
constexpr qint64 QUEUE_MS = 5000;
constexpr size_t QUEUE_MAX = 256;

QString defaultSocketPath() {
	auto env = qEnvironmentVariable("QSD_SOCKET");
	if (!env.isEmpty()) return env;
	auto runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
	if (runtime.isEmpty()) runtime = QStringLiteral("/run/user/%1").arg(getuid());
	return runtime + QStringLiteral("/qsd/qsd.sock");
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
	this->mQueueTimer.setSingleShot(true);
	QObject::connect(&this->mQueueTimer, &QTimer::timeout, this, &QsdClient::expireQueue);
	this->mHoldTimer.setSingleShot(true);
	QObject::connect(&this->mHoldTimer, &QTimer::timeout, this, [this] { this->releaseHolds(); });
	this->mUnreachableSince = nowMs();   // the first connection is being sought: calls queue

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

QsdClient* QsdClient::of(QObject* object) {
	auto* engine = qmlEngine(object);
	if (!engine) return nullptr;
	static const int typeId = qmlTypeId("Qsd", 1, 0, "Qsd");
	return engine->singletonInstance<QsdClient*>(typeId);
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

void QsdClient::setEventTopics(const QStringList& topics) {
	if (topics == this->mEventTopics) return;
	this->mEventTopics = topics;
	emit this->eventTopicsChanged();
	this->eventTopicsUpdated();
}

void QsdClient::setRestartGraceMs(int ms) {
	ms = std::max(0, ms);
	if (ms == this->mRestartGraceMs) return;
	this->mRestartGraceMs = ms;
	emit this->restartGraceMsChanged();
}

// ---- connection ---------------------------------------------------------------------------

void QsdClient::openSocket() {
	this->mReconnectTimer.stop();
	if (this->mSocket) {
		QObject::disconnect(this->mSocket, nullptr, this, nullptr);
		this->mSocket->abort();
		this->mSocket->deleteLater();
		this->mSocket = nullptr;
		// Not connected before the calls out are failed: a caller that retries from its error
		// handler is queued, and claims see the connection gone before their refusals.
		this->lostConnection();
		this->setConnected(false);
		this->failPending(QStringLiteral("Connection to qsd closed before the answer"));
	}
	this->setConnected(false);
	this->mReader = LineReader(64 << 20);
	this->mSubscription = 0;
	this->mSubscribing = false;
	this->mSubscribeAgain = false;

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
	this->mUnreachableSince = 0;
	this->setError({});
	this->subscribe();
	this->mSubscribedTopics.clear();
	this->subscribeEvents();
	this->flushQueue();
}

void QsdClient::onSocketDisconnected() {
	this->lostConnection();
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

void QsdClient::lostConnection() {
	if (this->mUnreachableSince == 0) this->mUnreachableSince = nowMs();
}

// One tree.subscribe out at a time. One asked for while another is out (paths changed twice in
// a round trip) is sent when that one answers, with the paths of then, and the answer it
// supersedes is unsubscribed: before, each answer was taken in turn, an empty mirror flashed (the
// first snapshot read against the second paths) and every superseded subscription stayed open,
// its changes streamed to a client that dropped them, counted against its queue.
void QsdClient::subscribe() {
	if (this->mSubscribing) {
		this->mSubscribeAgain = true;
		return;
	}
	this->mSubscribing = true;
	json paths = json::array();
	for (const auto& path: this->mPaths) paths.push_back(path.toStdString());
	this->send("tree.subscribe", {{"paths", paths}}, [this](const json* error, const json* result) {
		this->mSubscribing = false;
		bool again = std::exchange(this->mSubscribeAgain, false);
		// The connection went: subscribed again once connected.
		if (error && error->value("code", 0) == NOT_CONNECTED) return;
		if (again) {
			if (result && result->is_object())
				if (auto it = result->find("subscription"); it != result->end() && it->is_number_unsigned())
					this->send("tree.unsubscribe", {{"subscription", it->get<uint64_t>()}}, nullptr);
			this->subscribe();
			return;
		}
		if (error) {
			this->setError(QStringLiteral("tree.subscribe failed: %1")
			                   .arg(QString::fromStdString(error->value("message", std::string("unknown error")))));
			return;
		}
		try {
			this->mSubscription = result->at("subscription").get<uint64_t>();
			this->applySnapshot(result->at("snapshot"), result->at("revision").get<uint64_t>(),
			                    result->at("epoch").get<std::string>(), !this->mConnected);
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
			this->applySnapshot(params.at("snapshot"), params.at("revision").get<uint64_t>(), this->mMirror.epoch(), false);
		} else if (method == "event") {
			auto topic = QString::fromStdString(params.at("topic").get<std::string>());
			auto it = params.find("data");
			this->deliverEvent(topic, it != params.end() ? toVariant(*it) : QVariant::fromValue(nullptr));
		}
	} catch (const json::exception& e) {
		qWarning("Qsd: malformed %s notification (%s); resubscribing", method.c_str(), e.what());
		if (this->mSubscription != 0) this->send("tree.unsubscribe", {{"subscription", this->mSubscription}}, nullptr);
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

void QsdClient::call(const QString& method, const QJSValue& givenParams, const QJSValue& givenCallback) {
	auto* engine = this->mEngine ? this->mEngine : qjsEngine(this);
	auto methodName = method.toStdString();
	// call(method, callback): params left out, as the documentation allows.
	bool paramsOmitted = givenParams.isCallable() && (givenCallback.isUndefined() || givenCallback.isNull());
	QJSValue params = paramsOmitted ? QJSValue() : givenParams;
	QJSValue callback = paramsOmitted ? givenParams : givenCallback;
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

	json paramsJson = json::object();
	if (!params.isUndefined() && !params.isNull()) paramsJson = fromVariant(params.toVariant());
	if (this->mSocket && this->mSocket->state() == QLocalSocket::ConnectedState) {
		this->send(methodName, std::move(paramsJson), deliver);
		return;
	}
	// Connecting, and not for long: the call waits for the connection (a shell's
	// Component.onCompleted runs before the first connection is up).
	auto now = nowMs();
	if (this->mUnreachableSince != 0 && now - this->mUnreachableSince < QUEUE_MS && this->mQueue.size() < QUEUE_MAX) {
		this->mQueue.push_back({methodName, std::move(paramsJson), deliver, now + QUEUE_MS});
		if (!this->mQueueTimer.isActive()) this->mQueueTimer.start(static_cast<int>(QUEUE_MS));
		return;
	}
	// Asynchronous like every other answer, so callers need one code path.
	auto socketPath = this->mSocketPath.toStdString();
	auto full = this->mQueue.size() >= QUEUE_MAX;
	QMetaObject::invokeMethod(
	    this,
	    [deliver, socketPath, full] {
		    json error = {{"code", NOT_CONNECTED},
		                  {"message", full ? "Not connected to qsd (too many calls waiting)" : "Not connected to qsd"},
		                  {"data", {{"socket", socketPath}}}};
		    deliver(&error, nullptr);
	    },
	    Qt::QueuedConnection);
}

void QsdClient::flushQueue() {
	this->mQueueTimer.stop();
	auto queue = std::move(this->mQueue);
	this->mQueue.clear();
	for (auto& q: queue) this->send(q.method, std::move(q.params), std::move(q.handler));
}

void QsdClient::expireQueue() {
	auto now = nowMs();
	auto socketPath = this->mSocketPath.toStdString();
	while (!this->mQueue.empty() && this->mQueue.front().deadline <= now) {
		auto q = std::move(this->mQueue.front());
		this->mQueue.pop_front();
		json error = {{"code", NOT_CONNECTED},
		              {"message", "Not connected to qsd"},
		              {"data", {{"socket", socketPath}, {"waitedMs", QUEUE_MS}}}};
		q.handler(&error, nullptr);
	}
	if (!this->mQueue.empty()) this->mQueueTimer.start(static_cast<int>(std::max<qint64>(1, this->mQueue.front().deadline - now)));
}

bool QsdClient::request(const std::string& method, json params, Handler handler) {
	if (!this->mSocket || this->mSocket->state() != QLocalSocket::ConnectedState) return false;
	this->send(method, std::move(params), std::move(handler));
	return true;
}

// ---- nodes' get(key) -----------------------------------------------------------------------

QJSValue QsdClient::lookupFunction() const {
	if (!this->mLookupFunction.isUndefined()) return this->mLookupFunction;
	auto* engine = this->mEngine ? this->mEngine : qjsEngine(this);
	if (!engine) return {};
	auto* lookup = new QsdNodeLookup(const_cast<QsdClient*>(this));
	QQmlEngine::setObjectOwnership(lookup, QQmlEngine::CppOwnership);
	// A function, not an invokable: reading `values` makes a binding that calls get() depend on
	// the node's entries (an invokable's reads are not tracked), so `nodes.get(key)` in a
	// binding follows the key coming and going. String(key) accepts numbers: get(41).
	auto make = engine->evaluate(QStringLiteral(
	    "(function (lookup) {\n"
	    "    return function get(key) {\n"
	    "        this.values;\n"
	    "        return lookup.entry(this, String(key));\n"
	    "    };\n"
	    "})"));
	this->mLookupFunction = make.call({engine->newQObject(lookup)});
	if (this->mLookupFunction.isError())
		qWarning("Qsd: cannot make the nodes' get(): %s", qPrintable(this->mLookupFunction.toString()));
	return this->mLookupFunction;
}

// ---- events -------------------------------------------------------------------------------

void QsdClient::addEvents(QsdEvents* events) {
	this->mEvents.emplace_back(events);
	this->eventTopicsUpdated();
}

void QsdClient::removeEvents(QsdEvents* events) {
	std::erase_if(this->mEvents, [events](const QPointer<QsdEvents>& e) { return e.isNull() || e == events; });
	this->eventTopicsUpdated();
}

void QsdClient::eventTopicsUpdated() {
	if (this->mEventsScheduled) return;
	this->mEventsScheduled = true;
	// Coalesced: elements created together (one component) cost one events.subscribe.
	QMetaObject::invokeMethod(this, &QsdClient::subscribeEvents, Qt::QueuedConnection);
}

void QsdClient::subscribeEvents() {
	this->mEventsScheduled = false;
	if (!this->mSocket || this->mSocket->state() != QLocalSocket::ConnectedState) return;   // sent once connected
	auto topics = this->mEventTopics;
	for (const auto& events: this->mEvents)
		if (events && events->isEnabled()) topics += events->topics();
	topics.removeAll(QString());
	topics.sort();
	topics.removeDuplicates();
	if (topics == this->mSubscribedTopics) return;
	this->mSubscribedTopics = topics;
	json list = json::array();
	for (const auto& topic: topics) list.push_back(topic.toStdString());
	this->send("events.subscribe", {{"topics", list}}, [](const json* error, const json*) {
		if (error) qWarning("Qsd: events.subscribe failed: %s", rpc::dump(*error).c_str());
	});
}

void QsdClient::deliverEvent(const QString& topic, const QVariant& data) {
	emit this->event(topic, data);
	// A copy: a handler may create or destroy QsdEvents elements.
	auto listeners = this->mEvents;
	for (const auto& events: listeners)
		if (events && events->isEnabled() && events->matches(topic)) emit events->event(topic, data);
}

} // namespace qsd::qml
