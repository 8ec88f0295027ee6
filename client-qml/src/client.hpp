#pragma once
// The `Qsd` singleton: one connection to the daemon, one mirror of the subscribed tree (the
// protocol library's reducer), the tree as QsdNode objects and collections as list models.

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
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

class QQmlEngine;
class QJSEngine;

namespace qsd::qml {

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
	/// The root of the mirrored tree (never null; empty until the first snapshot).
	Q_PROPERTY(qsd::qml::QsdNode* tree READ tree CONSTANT)
	/// The top-level domains (null while absent from the tree).
	Q_PROPERTY(qsd::qml::QsdNode* daemon READ daemon NOTIFY daemonChanged)
	Q_PROPERTY(qsd::qml::QsdNode* network READ network NOTIFY networkChanged)
	Q_PROPERTY(qsd::qml::QsdNode* power READ power NOTIFY powerChanged)
	Q_PROPERTY(qsd::qml::QsdNode* audio READ audio NOTIFY audioChanged)
	Q_PROPERTY(qsd::qml::QsdNode* tray READ tray NOTIFY trayChanged)
	Q_PROPERTY(qsd::qml::QsdNode* wayland READ wayland NOTIFY waylandChanged)
	Q_PROPERTY(qsd::qml::QsdNode* debug READ debug NOTIFY debugChanged)

public:
	explicit QsdClient(QObject* parent = nullptr);
	~QsdClient() override;

	static QsdClient* create(QQmlEngine* qmlEngine, QJSEngine* jsEngine);

	[[nodiscard]] bool connected() const { return this->mConnected; }
	[[nodiscard]] double revision() const { return static_cast<double>(this->mMirror.revision()); }
	[[nodiscard]] QString epoch() const { return QString::fromStdString(this->mMirror.epoch()); }
	[[nodiscard]] QString error() const { return this->mError; }
	[[nodiscard]] QString socketPath() const { return this->mSocketPath; }
	void setSocketPath(const QString& path);
	[[nodiscard]] QStringList paths() const { return this->mPaths; }
	void setPaths(const QStringList& paths);

	[[nodiscard]] QsdNode* tree() const { return this->mRoot; }
	[[nodiscard]] QsdNode* daemon() const { return this->domain("daemon"); }
	[[nodiscard]] QsdNode* network() const { return this->domain("network"); }
	[[nodiscard]] QsdNode* power() const { return this->domain("power"); }
	[[nodiscard]] QsdNode* audio() const { return this->domain("audio"); }
	[[nodiscard]] QsdNode* tray() const { return this->domain("tray"); }
	[[nodiscard]] QsdNode* wayland() const { return this->domain("wayland"); }
	[[nodiscard]] QsdNode* debug() const { return this->domain("debug"); }

	/// The node of the object at a JSON Pointer, or null when there is none (absent or a leaf).
	Q_INVOKABLE [[nodiscard]] qsd::qml::QsdNode* node(const QString& path) const;
	/// A copy of the value at a JSON Pointer (objects as JS objects), or undefined when absent.
	/// Not a binding source: use node properties for bindings.
	Q_INVOKABLE [[nodiscard]] QVariant value(const QString& path) const;
	/// The list model of the collection at a JSON Pointer. One model per path, kept for the
	/// client's lifetime, so it survives the path disappearing and coming back.
	Q_INVOKABLE qsd::qml::QsdListModel* model(const QString& path);
	/// Sends a JSON-RPC request; callback(error, result) is called exactly once: error is null
	/// or {code, message, data}. Without a callback, errors are logged.
	Q_INVOKABLE void call(const QString& method, const QJSValue& params = QJSValue(), const QJSValue& callback = QJSValue());
	/// Closes the connection and connects again now (the backoff restarts).
	Q_INVOKABLE void reconnect();
	/// Testing only: stop reading the socket for ms milliseconds (ms <= 0: until
	/// resumeReading()), so the daemon's queue for this client overflows as for a slow client.
	Q_INVOKABLE void pauseReading(int ms = 0);
	Q_INVOKABLE void resumeReading();

	// For the list models.
	[[nodiscard]] QsdNode* nodeAt(const std::string& path) const;

signals:
	void connectedChanged();
	void revisionChanged();
	void epochChanged();
	void errorChanged();
	void socketPathChanged();
	void pathsChanged();
	void daemonChanged();
	void networkChanged();
	void powerChanged();
	void audioChanged();
	void trayChanged();
	void waylandChanged();
	void debugChanged();
	/// The mirror was (re)built from a snapshot: first subscription, reconnect or tree.resync.
	void resynced();
	/// A batch was applied (after every property notification of that batch).
	void changed();

private:
	using json = nlohmann::json;
	using Handler = std::function<void(const json* error, const json* result)>;

	struct Pending {
		Handler handler;
	};

	// A write collected during a sync, applied before any notification.
	struct Batch {
		std::unordered_map<QsdNode*, QVariantHash> writes;
		std::vector<std::pair<QsdNode*, QString>> notifications;
		std::vector<QsdNode*> dropped;
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
	void failPending(const QString& message);
	uint64_t send(const std::string& method, json params, Handler handler);

	void applySnapshot(const json& snapshot, uint64_t revision, const std::string& epoch);
	void applyChanges(uint64_t revision, const json& changes);
	void syncEntry(Batch& batch, QsdNode* parent, const std::string& key, const json* value);
	void syncObject(Batch& batch, QsdNode* node, const json& object);
	void dropNode(Batch& batch, QsdNode* node);
	void commit(Batch& batch, const std::vector<std::string>& touched, uint64_t oldRevision, const std::string& oldEpoch);
	[[nodiscard]] QsdNode* domain(const char* name) const;

	QJSEngine* mEngine = nullptr;
	QLocalSocket* mSocket = nullptr;
	QTimer mReconnectTimer;
	QTimer mResumeTimer;
	int mBackoffMs = 0;
	bool mPaused = false;
	bool mConnected = false;
	QString mError;
	QString mSocketPath;
	QStringList mPaths {QString()};
	LineReader mReader {64 << 20};
	Mirror mMirror;
	uint64_t mSubscription = 0;
	uint64_t mNextId = 1;
	std::map<uint64_t, Pending> mPending;
	QsdNode* mRoot = nullptr;
	std::unordered_map<std::string, QsdNode*> mNodes;
	std::unordered_map<std::string, QsdListModel*> mModels;
	std::map<std::string, QsdNode*> mDomains;   // last notified value of each domain property
};

} // namespace qsd::qml
