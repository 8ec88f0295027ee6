#include "media.hpp"

#include <qdatetime.h>

#include <qsd/protocol/mirror.hpp>

#include <algorithm>

namespace qsd::qml {

QsdMediaPosition::QsdMediaPosition(QObject* parent): QObject(parent) {
	this->mTimer.setInterval(1000);
	QObject::connect(&this->mTimer, &QTimer::timeout, this, &QsdMediaPosition::update);
}

QsdMediaPosition::~QsdMediaPosition() {
	if (this->mClient) this->mClient->removeWatcher(this);
}

void QsdMediaPosition::componentComplete() {
	this->mComplete = true;
	this->mClient = QsdClient::of(this);
	if (!this->mClient) {
		qWarning("QsdMediaPosition: not created by a QML engine; it shows nothing");
		return;
	}
	this->mClient->addWatcher(this);
	// A resync rebuilds the mirror without per-path changes.
	QObject::connect(this->mClient, &QsdClient::resynced, this, &QsdMediaPosition::read);
	this->read();
}

std::string QsdMediaPosition::watchedPath() const {
	if (this->mPlayer.isEmpty()) return "/media/players";
	return "/media/players/" + pointer::escape(this->mPlayer.toStdString());
}

void QsdMediaPosition::setPlayer(const QString& player) {
	if (player == this->mPlayer) return;
	this->mPlayer = player;
	emit this->playerChanged();
	this->read();
}

void QsdMediaPosition::setInterval(int ms) {
	ms = std::max(ms, 1);
	if (ms == this->mTimer.interval()) return;
	this->mTimer.setInterval(ms);
	emit this->intervalChanged();
}

void QsdMediaPosition::setEnabled(bool enabled) {
	if (enabled == this->mEnabled) return;
	this->mEnabled = enabled;
	emit this->enabledChanged();
	this->update();
	this->schedule();
}

void QsdMediaPosition::read() {
	if (!this->mComplete || !this->mClient) return;
	const nlohmann::json* p = this->mPlayer.isEmpty() ? nullptr : this->mClient->find(this->watchedPath());
	bool known = false, playing = false;
	double base = 0, rate = 1, length = 0;
	qint64 at = 0;
	if (p && p->is_object()) {
		auto num = [p](const char* key, double fallback) {
			auto it = p->find(key);
			return it != p->end() && it->is_number() ? it->get<double>() : fallback;
		};
		playing = p->value("playbackStatus", "") == "playing";
		rate = num("rate", 1);
		length = num("length", 0);
		auto pos = p->find("position");
		auto posAt = p->find("positionAt");
		if (pos != p->end() && pos->is_number() && posAt != p->end() && posAt->is_string()) {
			auto when = QDateTime::fromString(QString::fromStdString(posAt->get<std::string>()), Qt::ISODateWithMs);
			if (when.isValid()) {
				known = true;
				base = pos->get<double>();
				at = when.toMSecsSinceEpoch();
			}
		}
	}
	this->mBase = base;
	this->mBaseAtMs = at;
	this->mRate = rate;
	if (length != this->mLength) {
		this->mLength = length;
		emit this->lengthChanged();
	}
	if (known != this->mKnown) {
		this->mKnown = known;
		emit this->knownChanged();
	}
	if (playing != this->mPlaying) {
		this->mPlaying = playing;
		emit this->playingChanged();
	}
	this->update();
	this->schedule();
}

void QsdMediaPosition::update() {
	double now = 0;
	if (this->mKnown) {
		now = this->mBase;
		// Now, whether it ticks or not: not ticking, it is computed when the player's state changes
		// (and when it is enabled again).
		if (this->mPlaying)
			now += double(QDateTime::currentMSecsSinceEpoch() - this->mBaseAtMs) / 1000.0 * this->mRate;
		now = std::max(0.0, now);
		if (this->mLength > 0) now = std::min(now, this->mLength);
	}
	if (now != this->mPosition) {
		this->mPosition = now;
		emit this->positionChanged();
	}
}

void QsdMediaPosition::schedule() {
	bool run = this->mComplete && this->mEnabled && this->mPlaying && this->mKnown;
	if (run == this->mTimer.isActive()) return;
	if (run) {
		this->mTimer.start();
	} else {
		this->mTimer.stop();
	}
	emit this->tickingChanged();
}

} // namespace qsd::qml
