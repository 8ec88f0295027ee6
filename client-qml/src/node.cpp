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
	const auto* meta = this->metaObject();
	auto index = meta->indexOfProperty(key.toUtf8().constData());
	if (index < 0) return;   // a key QQmlPropertyMap refused (it clashes with a QObject member)
	auto signal = meta->property(index).notifySignalIndex();
	// QQmlPropertyMap's own properties notify through these dynamic signals; emitting one is
	// exactly what an ordinary insert() would have done, just later.
	if (signal >= 0) QMetaObject::activate(this, signal, nullptr);
}

void QsdNode::setChild(const QString& key, QsdNode* child) { this->mChildren.insert(key, child); }

QVariant QsdNode::updateValue(const QString& key, const QVariant& /*input*/) {
	qWarning("Qsd: %s/%s is read-only; change it with an action (Qsd.call)", this->mPath.c_str(), qPrintable(key));
	return this->value(key);
}

} // namespace qsd::qml
