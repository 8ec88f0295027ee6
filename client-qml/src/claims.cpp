#include "claims.hpp"

#include "common.hpp"

#include <qlogging.h>

#include <qsd/protocol/jsonrpc.hpp>

#include <algorithm>

namespace qsd::qml {

using json = nlohmann::json;

namespace {

QString errorText(const json& error) {
	auto message = error.is_object() && error.contains("message") && error["message"].is_string()
	                   ? QString::fromStdString(error["message"].get<std::string>())
	                   : QStringLiteral("unknown error");
	auto code = error.is_object() && error.contains("code") && error["code"].is_number_integer() ? error["code"].get<int>() : 0;
	return QStringLiteral("%1 (%2)").arg(message).arg(code);
}

bool isTrue(const json* value) { return value && value->is_boolean() && value->get<bool>(); }

} // namespace

// ---- QsdClaim -----------------------------------------------------------------------------

QsdClaim::~QsdClaim() {
	if (this->mClient && !this->mShutDown) this->mClient->removeWatcher(this);
}

void QsdClaim::shutdown() {
	if (this->mShutDown) return;
	this->mShutDown = true;
	if (!this->mClient) return;
	this->mClient->removeWatcher(this);
	QObject::disconnect(this->mClient, nullptr, this, nullptr);
	if (this->mState != State::Idle && this->mClient->connected()) this->disengage();
	this->mState = State::Idle;
}

void QsdClaim::componentComplete() {
	this->mComplete = true;
	this->mClient = QsdClient::of(this);
	if (!this->mClient) {
		qWarning("%s: not created by a QML engine; it asks for nothing", this->metaObject()->className());
		return;
	}
	this->mClient->addWatcher(this);
	QObject::connect(this->mClient, &QsdClient::connectedChanged, this, &QsdClaim::onConnectedChanged);
	this->mPresent = this->targetPresent();
	this->settle();
}

void QsdClaim::setActive(bool active) {
	if (active == this->mActive) return;
	this->mActive = active;
	emit this->activeChanged();
	this->settle();
}

void QsdClaim::reconfigure() {
	if (!this->mComplete || !this->mClient) return;
	if (this->mState != State::Idle && this->mClient->connected()) this->disengage();
	this->setState(State::Idle);
	this->mPresent = this->targetPresent();
	this->settle();
}

void QsdClaim::settle() {
	if (!this->mComplete || !this->mClient || this->mShutDown) return;
	auto want = this->mActive && this->configured() && this->mClient->connected();
	if (want && this->mState == State::Idle) {
		this->mRoseWhilePending = false;
		this->setState(State::Pending);
		this->engage();
	} else if (!want && this->mState != State::Idle) {
		if (this->mClient->connected()) this->disengage();
		this->setState(State::Idle);
	}
}

void QsdClaim::onConnectedChanged() {
	if (!this->mClient->connected()) {
		// The daemon dropped everything this connection asked for.
		this->forget();
		this->setState(State::Idle);
		return;
	}
	this->mPresent = this->targetPresent();
	this->settle();
}

void QsdClaim::watchedChanged() {
	auto present = this->targetPresent();
	auto rose = present && !this->mPresent;
	this->mPresent = present;
	if (!rose) return;
	if (this->mState == State::Pending) this->mRoseWhilePending = true;
	if (this->mState == State::Failed) {
		// Refused while the service or the target was missing: it is there now.
		this->setState(State::Idle);
		this->settle();
	}
}

void QsdClaim::targetLost() {
	if (this->mState != State::Effective && this->mState != State::Pending) return;
	this->forget();
	this->setState(State::Failed);
}

void QsdClaim::granted() {
	if (this->mState != State::Pending) return;
	this->setError({});
	this->setState(State::Effective);
}

void QsdClaim::refused(const json& error) {
	if (this->mState != State::Pending) return;
	this->setError(errorText(error));
	this->setState(State::Failed);
	// The target appeared while the request was on its way (a new daemon's backend finished
	// starting): the refusal is stale, ask again.
	if (this->mRoseWhilePending && this->targetPresent()) {
		this->mRoseWhilePending = false;
		this->setState(State::Idle);
		this->settle();
	}
}

void QsdClaim::setState(State state) {
	if (state == this->mState) return;
	auto wasEffective = this->mState == State::Effective;
	this->mState = state;
	if (wasEffective != (state == State::Effective)) emit this->effectiveChanged();
}

void QsdClaim::setError(const QString& error) {
	if (error == this->mError) return;
	this->mError = error;
	emit this->errorChanged();
}

// ---- QsdProfileHold -----------------------------------------------------------------------

QsdProfileHold::~QsdProfileHold() { this->shutdown(); }

void QsdProfileHold::setProfile(const QString& profile) {
	if (profile == this->mProfile) return;
	this->mProfile = profile;
	emit this->profileChanged();
	this->reconfigure();
}

void QsdProfileHold::setReason(const QString& reason) {
	if (reason == this->mReason) return;
	this->mReason = reason;
	emit this->reasonChanged();
	this->reconfigure();
}

void QsdProfileHold::setApplicationId(const QString& id) {
	if (id == this->mApplicationId) return;
	this->mApplicationId = id;
	emit this->applicationIdChanged();
	this->reconfigure();
}

bool QsdProfileHold::targetPresent() const { return isTrue(this->client()->findDaemon("/power/profiles/available")); }

void QsdProfileHold::engage() {
	json params = {{"profile", this->mProfile.toStdString()}};
	if (!this->mReason.isEmpty()) params["reason"] = this->mReason.toStdString();
	if (!this->mApplicationId.isEmpty()) params["applicationId"] = this->mApplicationId.toStdString();
	auto generation = ++this->mGeneration;
	QPointer<QsdProfileHold> self(this);
	QPointer<QsdClient> client(this->client());
	this->client()->request("power.holdProfile", params, [self, client, generation](const json* error, const json* result) {
		uint64_t cookie = 0;
		if (result && result->is_object() && result->contains("cookie") && (*result)["cookie"].is_number_unsigned())
			cookie = (*result)["cookie"].get<uint64_t>();
		if (!self || self->mGeneration != generation) {
			// No longer wanted (inactive, destroyed or changed while the request was out).
			if (cookie != 0 && client) client->request("power.releaseProfile", {{"cookie", cookie}}, nullptr);
			return;
		}
		if (error) {
			self->refused(*error);
			return;
		}
		self->mCookie = cookie;
		self->granted();
	});
}

void QsdProfileHold::disengage() {
	++this->mGeneration;
	if (this->mCookie != 0) this->client()->request("power.releaseProfile", {{"cookie", this->mCookie}}, nullptr);
	this->mCookie = 0;
}

void QsdProfileHold::forget() {
	++this->mGeneration;
	this->mCookie = 0;
}

// ---- switches (scanner, peak monitor) -----------------------------------------------------

void QsdSwitchClaim::engage() { this->mLease = QsdLeases::of(this->client())->acquire(this, this->method(), this->target()); }

void QsdSwitchClaim::disengage() {
	if (this->mLease.empty()) return;
	QsdLeases::of(this->client())->release(this, this->mLease);
	this->mLease.clear();
}

void QsdSwitchClaim::targetLost() {
	if (!this->mLease.empty()) QsdLeases::of(this->client())->lost(this->mLease);
	QsdClaim::targetLost();
}

QsdWifiScanner::~QsdWifiScanner() { this->shutdown(); }

void QsdWifiScanner::setDevice(const QString& device) {
	if (device == this->mDevice) return;
	this->mDevice = device;
	emit this->deviceChanged();
	this->reconfigure();
}

bool QsdWifiScanner::targetPresent() const {
	if (!isTrue(this->client()->findDaemon("/network/available"))) return false;
	const auto* device = this->client()->findDaemon("/network/devices/" + pointer::escape(this->mDevice.toStdString()));
	return device && device->is_object();
}

QsdSecretPrompter::~QsdSecretPrompter() { this->shutdown(); }

bool QsdSecretPrompter::targetPresent() const { return isTrue(this->client()->findDaemon("/network/available")); }

void QsdNodeClaim::setNode(const QString& node) {
	if (node == this->mNode) return;
	this->mNode = node;
	emit this->nodeChanged();
	this->reconfigure();
	this->read();
}

std::string QsdNodeClaim::watchedPath() const {
	if (this->mNode.isEmpty()) return "/audio/available";
	return "/audio/nodes/" + pointer::escape(this->mNode.toStdString());
}

bool QsdNodeClaim::targetPresent() const {
	const auto* node = this->nodeValue();
	return node && node->is_object();
}

const nlohmann::json* QsdNodeClaim::nodeValue() const {
	if (!this->client() || this->mNode.isEmpty()) return nullptr;
	return this->client()->findDaemon(this->watchedPath());
}

void QsdNodeClaim::componentComplete() {
	QsdSwitchClaim::componentComplete();
	this->read();   // another client may hold the same claim already
}

void QsdNodeClaim::watchedChanged() {
	// PipeWire's backend ends a node's monitor or watch when the node goes (and every one when
	// PipeWire restarts, whose serials, the node keys, start again): kept effective, the claim
	// showed no peaks and never asked again when a node of that key came back.
	if (!this->targetPresent()) this->targetLost();
	QsdSwitchClaim::watchedChanged();
	this->read();
}

QsdPeakMonitor::~QsdPeakMonitor() { this->shutdown(); }

void QsdPeakMonitor::read() {
	QVariantList peaks;
	double peak = 0;
	QStringList channels;
	if (const auto* node = this->nodeValue(); node && node->is_object()) {
		if (auto it = node->find("peaks"); it != node->end() && it->is_array())
			for (const auto& v: *it) peaks.append(v.is_number() ? v.get<double>() : 0.0);
		if (auto it = node->find("peak"); it != node->end() && it->is_number()) peak = it->get<double>();
		if (auto it = node->find("peakChannels"); it != node->end() && it->is_array())
			for (const auto& v: *it) channels.append(v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString());
	}
	if (channels != this->mChannels) {
		this->mChannels = channels;
		emit this->channelsChanged();
	}
	if (peaks != this->mPeaks) {
		this->mPeaks = peaks;
		emit this->peaksChanged();
	}
	if (peak != this->mPeak) {
		this->mPeak = peak;
		emit this->peakChanged();
	}
}

QsdNodeProperties::~QsdNodeProperties() { this->shutdown(); }

void QsdNodeProperties::read() {
	QVariantMap properties;
	if (const auto* node = this->nodeValue(); node && node->is_object())
		if (auto it = node->find("properties"); it != node->end() && it->is_object())
			for (const auto& [k, v]: it->items())
				properties.insert(QString::fromStdString(k), v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString());
	if (properties != this->mProperties) {
		this->mProperties = properties;
		emit this->propertiesChanged();
	}
}

QsdBluetoothDiscovery::~QsdBluetoothDiscovery() { this->shutdown(); }

void QsdBluetoothDiscovery::setAdapter(const QString& adapter) {
	if (adapter == this->mAdapter) return;
	this->mAdapter = adapter;
	emit this->adapterChanged();
	this->reconfigure();
}

bool QsdBluetoothDiscovery::targetPresent() const {
	if (!isTrue(this->client()->findDaemon("/bluetooth/available"))) return false;
	const auto* adapter = this->client()->findDaemon("/bluetooth/adapters/" + pointer::escape(this->mAdapter.toStdString()));
	return adapter && adapter->is_object();
}

// ---- QsdLeases ----------------------------------------------------------------------------

QsdLeases::QsdLeases(QsdClient* client): QObject(client), mClient(client) {
	this->setObjectName(QStringLiteral("qsd-leases"));
	QObject::connect(client, &QsdClient::connectedChanged, this, [this] {
		// The daemon forgot every switch with the connection; the claims ask again.
		if (!this->mClient->connected()) this->mLeases.clear();
	});
}

QsdLeases* QsdLeases::of(QsdClient* client) {
	if (auto* leases = client->findChild<QsdLeases*>(QStringLiteral("qsd-leases"), Qt::FindDirectChildrenOnly)) return leases;
	return new QsdLeases(client);
}

std::string QsdLeases::acquire(QsdSwitchClaim* claim, const std::string& method, const json& target) {
	auto key = method + " " + target.dump();
	auto& lease = this->mLeases[key];
	if (lease.method.empty()) {
		lease.method = method;
		lease.target = target;
	}
	std::erase_if(lease.holders, [](const QPointer<QsdSwitchClaim>& h) { return h.isNull(); });
	if (std::find(lease.holders.begin(), lease.holders.end(), claim) == lease.holders.end()) lease.holders.emplace_back(claim);
	switch (lease.state) {
	case Lease::State::Granted:
		// Answered through the event loop, as every request's answer is.
		QMetaObject::invokeMethod(claim, [claim] { claim->granted(); }, Qt::QueuedConnection);
		break;
	case Lease::State::Pending: break;
	case Lease::State::Idle:
	case Lease::State::Failed: this->send(key); break;
	}
	return key;
}

void QsdLeases::release(QsdSwitchClaim* claim, const std::string& key) {
	auto it = this->mLeases.find(key);
	if (it == this->mLeases.end()) return;
	auto& lease = it->second;
	std::erase_if(lease.holders, [claim](const QPointer<QsdSwitchClaim>& h) { return h.isNull() || h == claim; });
	if (!lease.holders.empty()) return;
	if (lease.state == Lease::State::Pending || lease.state == Lease::State::Granted) {
		auto params = lease.target;
		params["enabled"] = false;
		this->mClient->request(lease.method, params, nullptr);
	}
	this->mLeases.erase(it);
}

void QsdLeases::send(const std::string& key) {
	auto& lease = this->mLeases.at(key);
	auto generation = lease.generation = ++this->mGeneration;
	lease.state = Lease::State::Pending;
	auto params = lease.target;
	params["enabled"] = true;
	QPointer<QsdLeases> self(this);
	auto sent = this->mClient->request(lease.method, params, [self, key, generation](const json* error, const json*) {
		if (!self) return;
		auto it = self->mLeases.find(key);
		if (it == self->mLeases.end() || it->second.generation != generation) return;
		auto& lease = it->second;
		lease.state = error ? Lease::State::Failed : Lease::State::Granted;
		auto holders = lease.holders;
		for (const auto& holder: holders) {
			if (!holder) continue;
			if (error) holder->refused(*error);
			else holder->granted();
		}
	});
	if (!sent) lease.state = Lease::State::Idle;
}

} // namespace qsd::qml
