#include "elements.hpp"

#include <qlogging.h>

namespace qsd::qml {

// ---- QsdEvents ----------------------------------------------------------------------------

QsdEvents::~QsdEvents() {
	if (this->mClient) this->mClient->removeEvents(this);
}

void QsdEvents::componentComplete() {
	this->mClient = QsdClient::of(this);
	if (!this->mClient) {
		qWarning("QsdEvents: not created by a QML engine; it receives nothing");
		return;
	}
	this->mClient->addEvents(this);
}

void QsdEvents::setTopics(const QStringList& topics) {
	if (topics == this->mTopics) return;
	this->mTopics = topics;
	emit this->topicsChanged();
	if (this->mClient) this->mClient->eventTopicsUpdated();
}

void QsdEvents::setEnabled(bool enabled) {
	if (enabled == this->mEnabled) return;
	this->mEnabled = enabled;
	emit this->enabledChanged();
	if (this->mClient) this->mClient->eventTopicsUpdated();
}

bool QsdEvents::matches(const QString& topic) const {
	for (const auto& pattern: this->mTopics) {
		if (pattern == topic || pattern == QStringLiteral("*")) return true;
		// "domain.*": every topic starting with "domain." (as the daemon matches them).
		if (pattern.endsWith(QStringLiteral(".*")) && topic.startsWith(QStringView(pattern).chopped(1))) return true;
	}
	return false;
}

// ---- QsdNode { path } ---------------------------------------------------------------------

QsdNodeRef::~QsdNodeRef() {
	if (this->mClient) this->mClient->removeWatcher(this);
}

void QsdNodeRef::componentComplete() {
	this->mClient = QsdClient::of(this);
	if (!this->mClient) {
		qWarning("QsdNode: not created by a QML engine; it follows nothing");
		return;
	}
	this->mClient->addWatcher(this);
	this->refresh(true);
}

void QsdNodeRef::setPath(const QString& path) {
	if (path == this->mPath) return;
	this->mPath = path;
	emit this->pathChanged();
	this->refresh(true);
}

QVariant QsdNodeRef::value() const {
	if (!this->mClient) return {};
	return this->mClient->value(this->mPath);
}

void QsdNodeRef::refresh(bool valueTouched) {
	if (!this->mClient) return;
	auto key = this->mPath.toStdString();
	auto* node = this->mClient->nodeAt(key);
	auto exists = this->mClient->find(key) != nullptr;
	if (node != this->mNode) {
		this->mNode = node;
		emit this->nodeChanged();
	}
	if (exists != this->mExists) {
		this->mExists = exists;
		emit this->existsChanged();
	}
	if (valueTouched) emit this->valueChanged();
}

} // namespace qsd::qml
