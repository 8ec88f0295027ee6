#pragma once
// One object of the daemon's tree as a QML object: every field is a property that notifies on
// its own, nested objects are QsdNodes themselves, so `Qsd.power.displayDevice.percentage` is an
// ordinary binding. Every node also has `values` and `count`, so a collection such as
// `Qsd.network.devices` can be bound as a whole (`values.filter(d => d.connected)`), and
// `get(key)`, which reaches every key, numbers included: JavaScript reads nodes["41"] (a PipeWire
// serial) as an array index, which a QObject does not have.
//
// The fields are properties of a meta-object of the node's own (what QQmlPropertyMap does),
// built without keeping a QMetaObjectBuilder per node: the builder is most of what a
// QQmlPropertyMap costs per field, and the node's property names are already in the built
// meta-object, so a new one is built from them when keys are added (docs/performance.md).

#include <qhash.h>
#include <qjsvalue.h>
#include <qobject.h>
#include <qqmlintegration.h>
#include <qstring.h>
#include <qstringlist.h>
#include <qvariant.h>

#include <string>
#include <string_view>

namespace qsd::qml {

class NodeMetaObject;

class QsdNode: public QObject {
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
	[[nodiscard]] int count() const;
	[[nodiscard]] QJSValue getFunction() const;
	/// The keys present now, in key order.
	Q_INVOKABLE [[nodiscard]] QStringList keys() const;
	// The entry of a key: its node, a leaf's value, or an invalid QVariant (absent).
	[[nodiscard]] QVariant entry(const QString& key) const;
	// The same for a UTF-8 key (what the mirror holds).
	[[nodiscard]] QVariant value(std::string_view key) const;
	[[nodiscard]] QVariant value(const QString& key) const {
		auto utf8 = key.toUtf8();
		return this->value(std::string_view(utf8.constData(), static_cast<size_t>(utf8.size())));
	}

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

private:
	std::string mPath;
	QHash<QString, QsdNode*> mChildren;
	// Owned by QObject (its dynamic meta-object), which deletes it after `destroyed`, so the
	// values it holds stay readable for as long as QML can reach the node.
	NodeMetaObject* mMeta;
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
