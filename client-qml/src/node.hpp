#pragma once
// One object of the daemon's tree as a QML object: every field is a property that notifies on
// its own, nested objects are QsdNodes themselves, so `Qsd.power.displayDevice.percentage` is an
// ordinary binding. Every node also has `values` and `count`, so a collection such as
// `Qsd.network.devices` can be bound as a whole (`values.filter(d => d.connected)`), and
// `get(key)`, which reaches every key, numbers included: JavaScript reads nodes["41"] (a PipeWire
// serial) as an array index, which a QObject does not have.

#include <qhash.h>
#include <qjsvalue.h>
#include <qobject.h>
#include <qqmlintegration.h>
#include <qqmlpropertymap.h>
#include <qstring.h>
#include <qvariant.h>

#include <set>
#include <string>

namespace qsd::qml {

class QsdNode: public QQmlPropertyMap {
	Q_OBJECT
	QML_ANONYMOUS
	/// The object's entries in key order (the daemon's order): the node of each object entry,
	/// the value of each leaf. Notifies when an entry is added or removed, or a leaf entry
	/// changes; not when something inside an entry's node changes. A key named `values` in the
	/// tree hides this property (read it with Qsd.value()).
	Q_PROPERTY(QVariantList values READ values NOTIFY valuesChanged)
	/// The number of entries. Notifies when it changes. A tree key named `count` hides it.
	Q_PROPERTY(int count READ count NOTIFY countChanged)
	/// get(key): the entry of a key (its node, or a leaf's value; undefined when absent), for
	/// every key, numbers included. A function (a property holding one) rather than an
	/// invokable, so that a binding calling it follows the entries: it reads `values`.
	Q_PROPERTY(QJSValue get READ getFunction CONSTANT)

public:
	QsdNode(std::string path, QObject* parent);

	[[nodiscard]] const std::string& path() const { return this->mPath; }

	[[nodiscard]] QVariantList values() const;
	[[nodiscard]] int count() const { return static_cast<int>(this->mEntries.size()); }
	[[nodiscard]] QJSValue getFunction() const;
	/// The keys present now, in key order (QQmlPropertyMap's keys() also lists removed keys).
	Q_INVOKABLE [[nodiscard]] QStringList keys() const;
	// The entry of a key: its node, a leaf's value, or an invalid QVariant (absent).
	[[nodiscard]] QVariant entry(const QString& key) const;

	// Stores values without emitting anything: the client writes every value of a batch first
	// and notifies afterwards, so no binding ever sees half a batch. One call per node and batch
	// also creates all new properties at once (one meta-object rebuild, not one per key).
	// An invalid QVariant removes the entry (the property stays, reading undefined).
	// Returns whether the number of entries changed.
	bool storeSilently(const QVariantHash& values);
	// Emits the change notification of one property (after storeSilently).
	void notify(const QString& key);
	// Emits valuesChanged (and countChanged when the count changed): after a batch wrote entries.
	void notifyEntries(bool countChanged);

	[[nodiscard]] QsdNode* child(const QString& key) const { return this->mChildren.value(key); }
	void setChild(const QString& key, QsdNode* child);
	QsdNode* takeChild(const QString& key) { return this->mChildren.take(key); }
	[[nodiscard]] const QHash<QString, QsdNode*>& children() const { return this->mChildren; }

signals:
	void valuesChanged();
	void countChanged();

protected:
	// Writes from QML are refused: the tree is the daemon's, changed through actions.
	QVariant updateValue(const QString& key, const QVariant& input) override;

private:
	std::string mPath;
	QHash<QString, QsdNode*> mChildren;
	// The keys present now, in the daemon's order (nlohmann sorts object keys by bytes, as
	// std::string compares them). The property map keeps removed keys as undefined properties.
	std::set<std::string> mEntries;
	// Property name -> notify signal index. QMetaObject::indexOfProperty is a linear scan, which
	// made notifying every key of a large object quadratic; rebuilt whenever a key is missing.
	QHash<QString, int> mNotifySignals;
};

// What QsdNode's `get` function calls (through a JS function that reads `values` first, so that
// bindings follow the entries). Not a QML type; one per client.
class QsdNodeLookup: public QObject {
	Q_OBJECT

public:
	using QObject::QObject;
	Q_INVOKABLE [[nodiscard]] QVariant entry(QObject* node, const QString& key) const;
};

} // namespace qsd::qml
