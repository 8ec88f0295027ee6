#include "node.hpp"

#include "client.hpp"

#include <qjsengine.h>
#include <qlogging.h>
#include <qmetaobject.h>

namespace qsd::qml {

QsdNode::QsdNode(std::string path, QObject* parent): QQmlPropertyMap(this, parent), mPath(std::move(path)) {}

QVariantList QsdNode::values() const {
	QVariantList out;
	out.reserve(static_cast<qsizetype>(this->mEntries.size()));
	for (const auto& entry: this->mEntries) {
		auto key = QString::fromStdString(entry);
		if (auto* node = this->mChildren.value(key)) out.append(QVariant::fromValue<QObject*>(node));
		else out.append(this->value(key));
	}
	return out;
}

QStringList QsdNode::keys() const {
	QStringList out;
	out.reserve(static_cast<qsizetype>(this->mEntries.size()));
	for (const auto& entry: this->mEntries) out.append(QString::fromStdString(entry));
	return out;
}

QVariant QsdNode::entry(const QString& key) const {
	if (!this->mEntries.count(key.toStdString())) return {};
	if (auto* node = this->mChildren.value(key)) return QVariant::fromValue<QObject*>(node);
	return this->value(key);
}

QJSValue QsdNode::getFunction() const {
	auto* client = qobject_cast<QsdClient*>(this->parent());
	return client ? client->lookupFunction() : QJSValue();
}

bool QsdNode::storeSilently(const QVariantHash& values) {
	auto before = this->mEntries.size();
	for (auto it = values.cbegin(); it != values.cend(); ++it) {
		if (it.value().isValid()) this->mEntries.insert(it.key().toStdString());
		else this->mEntries.erase(it.key().toStdString());
	}
	auto wasBlocked = this->blockSignals(true);
	this->insert(values);
	this->blockSignals(wasBlocked);
	return this->mEntries.size() != before;
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

void QsdNode::notifyEntries(bool countChanged) {
	emit this->valuesChanged();
	if (countChanged) emit this->countChanged();
}

QVariant QsdNodeLookup::entry(QObject* node, const QString& key) const {
	auto* n = qobject_cast<QsdNode*>(node);
	return n ? n->entry(key) : QVariant();
}

void QsdNode::setChild(const QString& key, QsdNode* child) { this->mChildren.insert(key, child); }

QVariant QsdNode::updateValue(const QString& key, const QVariant& /*input*/) {
	qWarning("Qsd: %s/%s is read-only; change it with an action (Qsd.call)", this->mPath.c_str(), qPrintable(key));
	return this->value(key);
}

} // namespace qsd::qml
