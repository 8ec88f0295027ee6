#include "node.hpp"

#include <qlogging.h>
#include <qmetaobject.h>

namespace qsd::qml {

QsdNode::QsdNode(std::string path, QObject* parent): QQmlPropertyMap(this, parent), mPath(std::move(path)) {}

void QsdNode::storeSilently(const QVariantHash& values) {
	auto wasBlocked = this->blockSignals(true);
	this->insert(values);
	this->blockSignals(wasBlocked);
}

void QsdNode::notify(const QString& key) {
	auto it = this->mNotifySignals.constFind(key);
	if (it == this->mNotifySignals.cend()) {
		this->mNotifySignals.clear();
		const auto* meta = this->metaObject();
		for (auto i = meta->propertyOffset(); i < meta->propertyCount(); ++i) {
			auto property = meta->property(i);
			this->mNotifySignals.insert(QString::fromUtf8(property.name()), property.notifySignalIndex());
		}
		it = this->mNotifySignals.constFind(key);
		if (it == this->mNotifySignals.cend()) return;   // a key QQmlPropertyMap refused (clashes with a QObject member)
	}
	// QQmlPropertyMap's own properties notify through these dynamic signals; emitting one is
	// exactly what an ordinary insert() would have done, just later.
	if (*it >= 0) QMetaObject::activate(this, *it, nullptr);
}

void QsdNode::setChild(const QString& key, QsdNode* child) { this->mChildren.insert(key, child); }

QVariant QsdNode::updateValue(const QString& key, const QVariant& /*input*/) {
	qWarning("Qsd: %s/%s is read-only; change it with an action (Qsd.call)", this->mPath.c_str(), qPrintable(key));
	return this->value(key);
}

} // namespace qsd::qml
