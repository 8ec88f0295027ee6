#pragma once
// The `Qsd` singleton: one connection to the daemon, one mirror of the subscribed tree (the
// protocol library's reducer), the tree as QsdNode objects and collections as list models,
// event delivery, queued calls while connecting, and the restart hold that keeps a domain's
// last state on screen while a new daemon's backend starts.

#include <qdatetime.h>
#include <qjsvalue.h>
#include <qlocalsocket.h>
#include <qobject.h>
#include <qpointer.h>
#include <qqmlintegration.h>
#include <qstringlist.h>
#include <qtimer.h>
#include <qvariant.h>

#include "listmodel.hpp"
#include "node.hpp"

#include <qsd/protocol/framing.hpp>
#include <qsd/protocol/mirror.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

class QQmlEngine;
class QJSEngine;

namespace qsd::qml {

class QsdEvents;

// Something that wants to hear when a part of the tree changed (QsdNode elements, claims).
class PathWatcher {
public:
	virtual ~PathWatcher() = default;
	// The JSON Pointer watched: notified when a change touches it, an ancestor or a descendant.
	[[nodiscard]] virtual std::string watchedPath() const = 0;
	// True: notified for the daemon's state (the mirror) even while a restart hold keeps the
	// old state on screen; false: notified for what the nodes show.
	[[nodiscard]] virtual bool watchesDaemon() const { return false; }
	virtual void watchedChanged() = 0;
};

class QsdClient: public QObject {
	Q_OBJECT
	QML_NAMED_ELEMENT(Qsd)
	QML_SINGLETON
	/// True while connected and the mirror holds the daemon's current state.
	Q_PROPERTY(bool connected READ connected NOTIFY connectedChanged)
	/// Revision of the last batch applied to the mirror (per epoch).
	Q_PROPERTY(double revision READ revision NOTIFY revisionChanged)
	/// The daemon instance's random id; it changes when the daemon restarts.
	Q_PROPERTY(QString epoch READ epoch NOTIFY epochChanged)
	/// Why the client is not connected (or the last protocol problem); "" when all is well.
	Q_PROPERTY(QString error READ error NOTIFY errorChanged)
	/// The daemon socket; default $QSD_SOCKET, else $XDG_RUNTIME_DIR/qsd/qsd.sock.
	Q_PROPERTY(QString socketPath READ socketPath WRITE setSocketPath NOTIFY socketPathChanged)
	/// The subscribed JSON Pointers; default [""] (the whole tree).
	Q_PROPERTY(QStringList paths READ paths WRITE setPaths NOTIFY pathsChanged)
	/// Event topics this client receives through the `event` signal, besides those of every
	/// QsdEvents element. Default [].
	Q_PROPERTY(QStringList eventTopics READ eventTopics WRITE setEventTopics NOTIFY eventTopicsChanged)
	/// After a reconnect, how long (ms) a domain keeps its last state while its new backend is
	/// still starting. Default 1000; 0 turns the restart hold off.
	Q_PROPERTY(int restartGraceMs READ restartGraceMs WRITE setRestartGraceMs NOTIFY restartGraceMsChanged)
	// The tree's objects are typed `var` for QML tooling: their properties are the daemon's
	// keys, which no static type lists, so qmllint must not check member access on them.
	/// The root of the mirrored tree (a QsdNode, never null; empty until the first snapshot).
	Q_PROPERTY(QVariant tree READ treeVariant CONSTANT)
	/// The top-level domains (QsdNode, or null while absent from the tree).
	Q_PROPERTY(QVariant daemon READ daemonVariant NOTIFY daemonChanged)
	Q_PROPERTY(QVariant network READ networkVariant NOTIFY networkChanged)
	Q_PROPERTY(QVariant power READ powerVariant NOTIFY powerChanged)
	Q_PROPERTY(QVariant audio READ audioVariant NOTIFY audioChanged)
	Q_PROPERTY(QVariant tray READ trayVariant NOTIFY trayChanged)
	Q_PROPERTY(QVariant wayland READ waylandVariant NOTIFY waylandChanged)
	Q_PROPERTY(QVariant media READ mediaVariant NOTIFY mediaChanged)
	Q_PROPERTY(QVariant notifications READ notificationsVariant NOTIFY notificationsChanged)
	Q_PROPERTY(QVariant bluetooth READ bluetoothVariant NOTIFY bluetoothChanged)
	Q_PROPERTY(QVariant debug READ debugVariant NOTIFY debugChanged)

public:
	using json = nlohmann::json;
	using Handler = std::function<void(const json* error, const json* result)>;

	explicit QsdClient(QObject* parent = nullptr);
	// The `event` signal is a name QML users expect; QObject::event(QEvent*) stays visible.
	using QObject::event;
	~QsdClient() override;

	static QsdClient* create(QQmlEngine* qmlEngine, QJSEngine* jsEngine);
	// The Qsd singleton of the engine a QML object lives in (nullptr outside QML).
	static QsdClient* of(QObject* object);

	[[nodiscard]] bool connected() const { return this->mConnected; }
	[[nodiscard]] double revision() const { return static_cast<double>(this->mMirror.revision()); }
	[[nodiscard]] QString epoch() const { return QString::fromStdString(this->mMirror.epoch()); }
	[[nodiscard]] QString error() const { return this->mError; }
	[[nodiscard]] QString socketPath() const { return this->mSocketPath; }
	void setSocketPath(const QString& path);
	[[nodiscard]] QStringList paths() const { return this->mPaths; }
	void setPaths(const QStringList& paths);
	[[nodiscard]] QStringList eventTopics() const { return this->mEventTopics; }
	void setEventTopics(const QStringList& topics);
	[[nodiscard]] int restartGraceMs() const { return this->mRestartGraceMs; }
	void setRestartGraceMs(int ms);

	[[nodiscard]] QsdNode* tree() const { return this->mRoot; }
	[[nodiscard]] QsdNode* domain(const char* name) const;
	[[nodiscard]] QVariant treeVariant() const { return QVariant::fromValue<QObject*>(this->mRoot); }
	[[nodiscard]] QVariant daemonVariant() const { return domainVariant("daemon"); }
	[[nodiscard]] QVariant networkVariant() const { return domainVariant("network"); }
	[[nodiscard]] QVariant powerVariant() const { return domainVariant("power"); }
	[[nodiscard]] QVariant audioVariant() const { return domainVariant("audio"); }
	[[nodiscard]] QVariant trayVariant() const { return domainVariant("tray"); }
	[[nodiscard]] QVariant waylandVariant() const { return domainVariant("wayland"); }
	[[nodiscard]] QVariant mediaVariant() const { return domainVariant("media"); }
	[[nodiscard]] QVariant notificationsVariant() const { return domainVariant("notifications"); }
	[[nodiscard]] QVariant bluetoothVariant() const { return domainVariant("bluetooth"); }
	[[nodiscard]] QVariant debugVariant() const { return domainVariant("debug"); }

	/// The node of the object at a JSON Pointer, or null when there is none (absent or a leaf).
	/// Evaluated once: for a binding that follows the path, use a QsdNode element.
	Q_INVOKABLE [[nodiscard]] QVariant node(const QString& path) const;
	/// The key a node has in its parent (unescaped: "wlan0", an SSID), or "" for the root or
	/// anything that is not a node. The item ids of `values` entries, for actions.
	Q_INVOKABLE [[nodiscard]] QString keyOf(const QVariant& node) const;
	/// The JSON Pointer of a node, or "" (the root, or not a node).
	Q_INVOKABLE [[nodiscard]] QString pathOf(const QVariant& node) const;
	/// A copy of the value at a JSON Pointer (objects as JS objects), or undefined when absent.
	/// Not a binding source: use node properties or a QsdNode element for bindings.
	Q_INVOKABLE [[nodiscard]] QVariant value(const QString& path) const;
	/// The list model of the collection at a JSON Pointer. One model per path (and order), kept
	/// for the client's lifetime, so it survives the path disappearing and coming back. Rows are
	/// in key order; with `orderPath` (the JSON Pointer of an array of keys, e.g. "/tray/order"),
	/// in that array's order, keys it does not list last in key order, and rows move as it changes.
	Q_INVOKABLE qsd::qml::QsdListModel* model(const QString& path, const QString& orderPath = QString());
	/// Sends a JSON-RPC request; callback(error, result) is called exactly once: error is null
	/// or {code, message, data}. Without a callback, errors are logged. Calls made while the
	/// client is connecting are queued (see docs/qml.md).
	Q_INVOKABLE void call(const QString& method, const QJSValue& params = QJSValue(), const QJSValue& callback = QJSValue());
	/// Closes the connection and connects again now (the backoff restarts).
	Q_INVOKABLE void reconnect();
	/// Testing only: stop reading the socket for ms milliseconds (ms <= 0: until
	/// resumeReading()), so the daemon's queue for this client overflows as for a slow client.
	Q_INVOKABLE void pauseReading(int ms = 0);
	Q_INVOKABLE void resumeReading();

	// ---- for the module's other types -------------------------------------------------------
	[[nodiscard]] QsdNode* nodeAt(const std::string& path) const;
	// The value at a path as the nodes show it (the restart hold's state where one holds).
	[[nodiscard]] const json* find(const std::string& path) const;
	// The value at a path in the daemon's current state (ignores the restart hold).
	[[nodiscard]] const json* findDaemon(const std::string& path) const { return this->mMirror.find(path); }
	// Sends a request on the current connection; false (nothing sent) while not connected.
	bool request(const std::string& method, json params, Handler handler);
	void addEvents(QsdEvents* events);
	void removeEvents(QsdEvents* events);
	void eventTopicsUpdated();   // a QsdEvents element's topics changed
	void addWatcher(PathWatcher* watcher);
	void removeWatcher(PathWatcher* watcher);
	// The function every node's `get` property holds (made once per client).
	[[nodiscard]] QJSValue lookupFunction() const;

signals:
	void connectedChanged();
	void revisionChanged();
	void epochChanged();
	void errorChanged();
	void socketPathChanged();
	void pathsChanged();
	void eventTopicsChanged();
	void restartGraceMsChanged();
	void daemonChanged();
	void networkChanged();
	void powerChanged();
	void audioChanged();
	void trayChanged();
	void waylandChanged();
	void mediaChanged();
	void notificationsChanged();
	void bluetoothChanged();
	void debugChanged();
	/// The mirror was (re)built from a snapshot: first subscription, reconnect or tree.resync.
	void resynced();
	/// A batch was applied (after every property notification of that batch).
	void changed();
	/// An event of a subscribed topic (eventTopics or a QsdEvents element's topics).
	void event(const QString& topic, const QVariant& data);

private:
	struct Pending {
		Handler handler;
	};

	// A call made while connecting, sent once connected or failed at its deadline.
	struct Queued {
		std::string method;
		json params;
		Handler handler;
		qint64 deadline;   // monotonic ms (nowMs())
	};

	// A write collected during a sync, applied before any notification.
	struct Batch {
		std::unordered_map<QsdNode*, QVariantHash> writes;
		std::vector<std::pair<QsdNode*, QString>> notifications;
		std::vector<QsdNode*> dropped;
	};

	// A domain shown with its last state while the new daemon's backend starts (restart hold).
	struct Held {
		std::string backend;   // its backend id ("" when the domain has none)
		json value;            // what the nodes show
		qint64 deadline;       // monotonic ms: released then at the latest
	};

	void openSocket();
	void onSocketConnected();
	void onSocketDisconnected();
	void onSocketError(QLocalSocket::LocalSocketError error);
	void onReadyRead();
	void handleLine(std::string_view line);
	void handleNotification(const std::string& method, const json& params);
	void scheduleReconnect();
	void setConnected(bool connected);
	void setError(const QString& error);
	void subscribe();
	void subscribeEvents();
	void deliverEvent(const QString& topic, const QVariant& data);
	void failPending(const QString& message);
	void lostConnection();
	void flushQueue();
	void expireQueue();
	uint64_t send(const std::string& method, json params, Handler handler);
	[[nodiscard]] QVariant domainVariant(const char* name) const {
		return QVariant::fromValue<QObject*>(this->domain(name));
	}

	// The mirror and its nodes (sync.cpp).
	void applySnapshot(const json& snapshot, uint64_t revision, const std::string& epoch, bool afterConnect);
	void applyChanges(uint64_t revision, const json& changes);
	void syncEntry(Batch& batch, QsdNode* parent, const std::string& key, const json* value);
	void syncObject(Batch& batch, QsdNode* node, const json& object);
	void syncRoot(Batch& batch);
	void dropNode(Batch& batch, QsdNode* node);
	void commit(Batch& batch, const std::vector<std::string>& touched, const std::vector<std::string>& daemonTouched,
	            uint64_t oldRevision, const std::string& oldEpoch);
	void holdDomains(const std::map<std::string, json>& previous);
	// Ends the holds whose backend is no longer starting or whose grace period is over.
	std::vector<std::string> takeReleasedHolds();
	void releaseHolds();   // the same, as a batch of its own (the timer's)
	void armHoldTimer();
	[[nodiscard]] bool isHeld(const std::string& path) const;
	[[nodiscard]] json viewDocument() const;

	QJSEngine* mEngine = nullptr;
	mutable QJSValue mLookupFunction;
	QLocalSocket* mSocket = nullptr;
	QTimer mReconnectTimer;
	QTimer mResumeTimer;
	QTimer mQueueTimer;
	QTimer mHoldTimer;
	int mBackoffMs = 0;
	bool mPaused = false;
	bool mConnected = false;
	bool mEverSubscribed = false;
	QString mError;
	QString mSocketPath;
	QStringList mPaths {QString()};
	QStringList mEventTopics;
	QStringList mSubscribedTopics;
	bool mEventsScheduled = false;
	// Longer than a backend may stay `starting` for what its service has (the tray and MPRIS wait
	// up to 2 s for the items and players there at start): a shorter hold ended before them.
	int mRestartGraceMs = 3000;
	LineReader mReader {64 << 20};
	Mirror mMirror;
	uint64_t mSubscription = 0;
	bool mSubscribing = false;      // a tree.subscribe is out (subscribe())
	bool mSubscribeAgain = false;   // ... and another was asked for meanwhile
	uint64_t mNextId = 1;
	std::map<uint64_t, Pending> mPending;
	std::deque<Queued> mQueue;
	qint64 mUnreachableSince = 0;   // monotonic ms when the daemon was last lost (or first sought)
	QsdNode* mRoot = nullptr;
	std::unordered_map<std::string, QsdNode*> mNodes;
	std::unordered_map<std::string, QsdListModel*> mModels;
	std::map<std::string, QsdNode*> mDomains;   // last notified value of each domain property
	std::map<std::string, Held> mHeld;          // domain key -> held state
	std::vector<QPointer<QsdEvents>> mEvents;
	std::vector<PathWatcher*> mWatchers;
};

} // namespace qsd::qml
