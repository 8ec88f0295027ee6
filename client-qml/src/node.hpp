#pragma once
// One object of the daemon's tree as a QML object: every field is a property that notifies on
// its own, nested objects are QsdNodes themselves, so `Qsd.power.displayDevice.percentage` is an
// ordinary binding.

#include <qhash.h>
#include <qobject.h>
#include <qqmlintegration.h>
#include <qqmlpropertymap.h>
#include <qstring.h>

#include <string>

namespace qsd::qml {

class QsdNode: public QQmlPropertyMap {
	Q_OBJECT
	QML_ANONYMOUS

public:
	QsdNode(std::string path, QObject* parent);

	[[nodiscard]] const std::string& path() const { return this->mPath; }

	// Stores values without emitting anything: the client writes every value of a batch first
	// and notifies afterwards, so no binding ever sees half a batch. One call per node and batch
	// also creates all new properties at once (one meta-object rebuild, not one per key).
	void storeSilently(const QVariantHash& values);
	// Emits the change notification of one property (after storeSilently).
	void notify(const QString& key);

	[[nodiscard]] QsdNode* child(const QString& key) const { return this->mChildren.value(key); }
	void setChild(const QString& key, QsdNode* child);
	QsdNode* takeChild(const QString& key) { return this->mChildren.take(key); }
	[[nodiscard]] const QHash<QString, QsdNode*>& children() const { return this->mChildren; }

protected:
	// Writes from QML are refused: the tree is the daemon's, changed through actions.
	QVariant updateValue(const QString& key, const QVariant& input) override;

private:
	std::string mPath;
	QHash<QString, QsdNode*> mChildren;
	// Property name -> notify signal index. QMetaObject::indexOfProperty is a linear scan, which
	// made notifying every key of a large object quadratic; rebuilt whenever a key is missing.
	QHash<QString, int> mNotifySignals;
};

} // namespace qsd::qml
