#pragma once
// Declarative, reconnect-proof requests: state a client asks the daemon for, which the daemon
// keeps only for the asking connection (a power-profile hold, a Wi-Fi scanner, a peak meter).
// Each element asks while it is active, asks again after every reconnect (and when the service
// behind the action comes back after refusing as unavailable), and stops asking when it becomes
// inactive or is destroyed.

#include <qobject.h>
#include <qpointer.h>
#include <qqmlintegration.h>
#include <qqmlparserstatus.h>
#include <qvariant.h>

#include "client.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qsd::qml {

class QsdClaim: public QObject, public QQmlParserStatus, public PathWatcher {
	Q_OBJECT
	QML_ANONYMOUS
	Q_INTERFACES(QQmlParserStatus)
	/// Whether the element asks for its claim. Default true.
	Q_PROPERTY(bool active READ active WRITE setActive NOTIFY activeChanged)
	/// True while the daemon has the claim in effect for this client.
	Q_PROPERTY(bool effective READ effective NOTIFY effectiveChanged)
	/// Why the last request was refused ("" after a success). A refusal because the service is
	/// not there (yet) is retried when it appears.
	Q_PROPERTY(QString error READ error NOTIFY errorChanged)

public:
	explicit QsdClaim(QObject* parent = nullptr): QObject(parent) {}
	~QsdClaim() override;

	[[nodiscard]] bool active() const { return this->mActive; }
	void setActive(bool active);
	[[nodiscard]] bool effective() const { return this->mState == State::Effective; }
	[[nodiscard]] QString error() const { return this->mError; }

	void classBegin() override {}
	void componentComplete() override;
	[[nodiscard]] bool watchesDaemon() const override { return true; }
	void watchedChanged() override;

	// The answer to the request engage() made.
	void granted();
	void refused(const nlohmann::json& error);

signals:
	void activeChanged();
	void effectiveChanged();
	void errorChanged();

protected:
	enum class State { Idle, Pending, Effective, Failed };

	// Every required property is set.
	[[nodiscard]] virtual bool configured() const = 0;
	// The daemon has what the claim is about (its service is there, the target exists).
	[[nodiscard]] virtual bool targetPresent() const = 0;
	// Sends the request; its answer comes through granted()/refused().
	virtual void engage() = 0;
	// Stops asking (the connection is up).
	virtual void disengage() = 0;
	// The connection was lost: the daemon forgot the claim with it; nothing to send.
	virtual void forget() {}
	// The daemon ended the claim with its target (a node that went, PipeWire restarting), and
	// says nothing of it: forgotten without a request, and Failed until the target is back,
	// when it is asked for again.
	virtual void targetLost();

	// A property the request depends on changed: ask again with the new values.
	void reconfigure();
	[[nodiscard]] QsdClient* client() const { return this->mClient; }
	[[nodiscard]] State state() const { return this->mState; }

	// Subclasses call this from their destructor (engage/disengage are theirs).
	void shutdown();

private:
	void settle();
	void setState(State state);
	void setError(const QString& error);
	void onConnectedChanged();

	QPointer<QsdClient> mClient;
	bool mActive = true;
	bool mComplete = false;
	bool mPresent = false;
	bool mRoseWhilePending = false;
	bool mShutDown = false;
	State mState = State::Idle;
	QString mError;
};

// QsdProfileHold { profile: QsdPower.profile.performance; reason: "game"; active: gameRunning }
class QsdProfileHold: public qsd::qml::QsdClaim {
	Q_OBJECT
	QML_ELEMENT
	/// The profile to hold: "powerSaver", "balanced" or "performance".
	Q_PROPERTY(QString profile READ profile WRITE setProfile NOTIFY profileChanged)
	/// Why, for people (power-profiles-daemon shows it). Default "".
	Q_PROPERTY(QString reason READ reason WRITE setReason NOTIFY reasonChanged)
	/// Who holds it, e.g. "org.example.Shell". Default: the daemon's default ("qsd").
	Q_PROPERTY(QString applicationId READ applicationId WRITE setApplicationId NOTIFY applicationIdChanged)

public:
	explicit QsdProfileHold(QObject* parent = nullptr): QsdClaim(parent) {}
	~QsdProfileHold() override;

	[[nodiscard]] QString profile() const { return this->mProfile; }
	void setProfile(const QString& profile);
	[[nodiscard]] QString reason() const { return this->mReason; }
	void setReason(const QString& reason);
	[[nodiscard]] QString applicationId() const { return this->mApplicationId; }
	void setApplicationId(const QString& id);

	[[nodiscard]] std::string watchedPath() const override { return "/power/profiles"; }

signals:
	void profileChanged();
	void reasonChanged();
	void applicationIdChanged();

protected:
	[[nodiscard]] bool configured() const override { return !this->mProfile.isEmpty(); }
	[[nodiscard]] bool targetPresent() const override;
	void engage() override;
	void disengage() override;
	void forget() override;

private:
	QString mProfile;
	QString mReason;
	QString mApplicationId;
	uint64_t mCookie = 0;
	uint64_t mGeneration = 0;   // bumps when an answer in flight is no longer wanted
};

// A claim that is a per-connection switch the daemon counts across clients
// (network.setScannerEnabled {device, enabled}, audio.monitorPeaks {node, enabled},
// network.handleSecrets {enabled}). Elements of
// one client asking for the same target share one request (see QsdLeases).
class QsdSwitchClaim: public qsd::qml::QsdClaim {
	Q_OBJECT
	QML_ANONYMOUS

public:
	using QsdClaim::QsdClaim;

protected:
	// The method, its target params (without the switch) and the switch's param name.
	[[nodiscard]] virtual std::string method() const = 0;
	[[nodiscard]] virtual nlohmann::json target() const = 0;
	void engage() override;
	void disengage() override;
	void forget() override { this->mLease.clear(); }
	void targetLost() override;

private:
	std::string mLease;   // the lease key while engaged
};

// QsdWifiScanner { device: "wlan0"; active: menu.visible }
class QsdWifiScanner: public qsd::qml::QsdSwitchClaim {
	Q_OBJECT
	QML_ELEMENT
	/// The Wi-Fi device id: a key of /network/devices (its interface name).
	Q_PROPERTY(QString device READ device WRITE setDevice NOTIFY deviceChanged)

public:
	explicit QsdWifiScanner(QObject* parent = nullptr): QsdSwitchClaim(parent) {}
	~QsdWifiScanner() override;

	[[nodiscard]] QString device() const { return this->mDevice; }
	void setDevice(const QString& device);
	[[nodiscard]] std::string watchedPath() const override { return "/network"; }

signals:
	void deviceChanged();

protected:
	[[nodiscard]] bool configured() const override { return !this->mDevice.isEmpty(); }
	[[nodiscard]] bool targetPresent() const override;
	[[nodiscard]] std::string method() const override { return "network.setScannerEnabled"; }
	[[nodiscard]] nlohmann::json target() const override { return {{"device", this->mDevice.toStdString()}}; }

private:
	QString mDevice;
};

// QsdSecretPrompter { active: true }: this shell answers NetworkManager's requests for secrets
// (/network/secretRequests, network.answerSecrets / network.cancelSecrets) while active.
class QsdSecretPrompter: public qsd::qml::QsdSwitchClaim {
	Q_OBJECT
	QML_ELEMENT

public:
	explicit QsdSecretPrompter(QObject* parent = nullptr): QsdSwitchClaim(parent) {}
	~QsdSecretPrompter() override;

	[[nodiscard]] std::string watchedPath() const override { return "/network/available"; }

protected:
	[[nodiscard]] bool configured() const override { return true; }
	[[nodiscard]] bool targetPresent() const override;
	[[nodiscard]] std::string method() const override { return "network.handleSecrets"; }
	[[nodiscard]] nlohmann::json target() const override { return nlohmann::json::object(); }
};

// A switch claim on one node of /audio/nodes (audio.monitorPeaks, audio.watchProperties): the
// node param, the claim made while the node is there, and the node's fields read again whenever
// the mirror changes under it (another client may hold the same claim already).
class QsdNodeClaim: public qsd::qml::QsdSwitchClaim {
	Q_OBJECT
	QML_ANONYMOUS
	/// The node: a key of /audio/nodes.
	Q_PROPERTY(QString node READ node WRITE setNode NOTIFY nodeChanged)

public:
	using QsdSwitchClaim::QsdSwitchClaim;

	[[nodiscard]] QString node() const { return this->mNode; }
	void setNode(const QString& node);
	[[nodiscard]] std::string watchedPath() const override;
	void watchedChanged() override;
	void componentComplete() override;

signals:
	void nodeChanged();

protected:
	[[nodiscard]] bool configured() const override { return !this->mNode.isEmpty(); }
	[[nodiscard]] bool targetPresent() const override;
	[[nodiscard]] nlohmann::json target() const override { return {{"node", this->mNode.toStdString()}}; }
	// The node's object in the mirror, or nullptr.
	[[nodiscard]] const nlohmann::json* nodeValue() const;
	// Reads the element's own fields from nodeValue().
	virtual void read() = 0;

private:
	QString mNode;
};

// QsdPeakMonitor { node: Qsd.audio?.defaultAudioSink ?? ""; active: popup.visible }
class QsdPeakMonitor: public qsd::qml::QsdNodeClaim {
	Q_OBJECT
	QML_ELEMENT
	/// Per channel, 0..1 (/audio/nodes/<node>/peaks); [] while not monitored.
	Q_PROPERTY(QVariantList peaks READ peaks NOTIFY peaksChanged)
	/// The largest of peaks (/audio/nodes/<node>/peak); 0 while not monitored.
	Q_PROPERTY(double peak READ peak NOTIFY peakChanged)
	/// The channel of each entry of peaks ("frontLeft", "frontRight", ... as QsdAudio.channel
	/// names them; /audio/nodes/<node>/peakChannels); [] while not monitored.
	Q_PROPERTY(QStringList channels READ channels NOTIFY channelsChanged)

public:
	explicit QsdPeakMonitor(QObject* parent = nullptr): QsdNodeClaim(parent) {}
	~QsdPeakMonitor() override;

	[[nodiscard]] QVariantList peaks() const { return this->mPeaks; }
	[[nodiscard]] double peak() const { return this->mPeak; }
	[[nodiscard]] QStringList channels() const { return this->mChannels; }

signals:
	void peaksChanged();
	void peakChanged();
	void channelsChanged();

protected:
	[[nodiscard]] std::string method() const override { return "audio.monitorPeaks"; }
	void read() override;

private:
	QVariantList mPeaks;
	double mPeak = 0;
	QStringList mChannels;
};

// QsdNodeProperties { node: stream.key; active: details.visible }: every PipeWire property of
// the node (audio.watchProperties), Quickshell's PwNode.properties under a PwObjectTracker.
class QsdNodeProperties: public qsd::qml::QsdNodeClaim {
	Q_OBJECT
	QML_ELEMENT
	/// Every property PipeWire holds for the node, as strings (/audio/nodes/<node>/properties);
	/// empty while nobody watches it.
	Q_PROPERTY(QVariantMap properties READ properties NOTIFY propertiesChanged)

public:
	explicit QsdNodeProperties(QObject* parent = nullptr): QsdNodeClaim(parent) {}
	~QsdNodeProperties() override;

	[[nodiscard]] QVariantMap properties() const { return this->mProperties; }

signals:
	void propertiesChanged();

protected:
	[[nodiscard]] std::string method() const override { return "audio.watchProperties"; }
	void read() override;

private:
	QVariantMap mProperties;
};

// QsdBluetoothDiscovery { adapter: Qsd.bluetooth?.defaultAdapter ?? ""; active: menu.visible }
class QsdBluetoothDiscovery: public qsd::qml::QsdSwitchClaim {
	Q_OBJECT
	QML_ELEMENT
	/// The adapter: a key of /bluetooth/adapters ("hci0").
	Q_PROPERTY(QString adapter READ adapter WRITE setAdapter NOTIFY adapterChanged)

public:
	explicit QsdBluetoothDiscovery(QObject* parent = nullptr): QsdSwitchClaim(parent) {}
	~QsdBluetoothDiscovery() override;

	[[nodiscard]] QString adapter() const { return this->mAdapter; }
	void setAdapter(const QString& adapter);
	[[nodiscard]] std::string watchedPath() const override { return "/bluetooth"; }

signals:
	void adapterChanged();

protected:
	[[nodiscard]] bool configured() const override { return !this->mAdapter.isEmpty(); }
	[[nodiscard]] bool targetPresent() const override;
	[[nodiscard]] std::string method() const override { return "bluetooth.setDiscovering"; }
	[[nodiscard]] nlohmann::json target() const override { return {{"adapter", this->mAdapter.toStdString()}}; }

private:
	QString mAdapter;
};

// The switches of one client, shared by its claims: the daemon keeps one flag per connection
// and target, so two scanners for wlan0 in one shell must not switch each other off. A child
// object of the client; cleared when the connection goes (the daemon forgot them all).
class QsdLeases: public QObject {
	Q_OBJECT

public:
	static QsdLeases* of(QsdClient* client);

	// Adds a holder to the lease of (method, target); sends the switch-on when the lease is not
	// granted or asked already. Returns the lease key.
	std::string acquire(QsdSwitchClaim* claim, const std::string& method, const nlohmann::json& target);
	// Removes a holder; the last one switches the lease off.
	void release(QsdSwitchClaim* claim, const std::string& key);
	// The daemon ended the lease itself (its target went): forgotten without a request; a later
	// acquire asks again.
	void lost(const std::string& key) { this->mLeases.erase(key); }

private:
	explicit QsdLeases(QsdClient* client);
	struct Lease {
		std::string method;
		nlohmann::json target;
		std::vector<QPointer<QsdSwitchClaim>> holders;
		enum class State { Idle, Pending, Granted, Failed } state = State::Idle;
		nlohmann::json error;
		uint64_t generation = 0;
	};
	void send(const std::string& key);

	QsdClient* mClient;
	std::map<std::string, Lease> mLeases;
	uint64_t mGeneration = 0;   // of the last request: a lease lost and made again does not take an earlier one's answer
};

} // namespace qsd::qml
