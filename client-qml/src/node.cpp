#include "node.hpp"

#include "client.hpp"

#include <qjsengine.h>
#include <qlogging.h>
#include <qmetaobject.h>
#include <qpointer.h>

// Qt's private API, as QQmlPropertyMap uses it: a dynamic meta-object (QObject's own hook for
// objects whose properties change at run time) and the builder that makes one.
#include <private/qmetaobjectbuilder_p.h>
#include <private/qobject_p.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace qsd::qml {

namespace {

using Guard = QPointer<QsdNode>;

// The names QQmlPropertyMap refuses (members every node has). Such an entry is kept all the
// same, without a property: get(), values and keys() reach it.
bool canBeProperty(std::string_view key) {
	static constexpr std::string_view RESERVED[] = {"keys", "valueChanged", "QObject", "destroyed", "deleteLater"};
	return key.find('\0') == std::string_view::npos && std::find(std::begin(RESERVED), std::end(RESERVED), key) == std::end(RESERVED);
}

// A node is stored through a guard: the nodes a batch drops are deleted one after the other, and
// one read between two deletions must see null, not a dangling pointer.
QVariant storable(const QVariant& value) {
	if (value.metaType() == QMetaType::fromType<QObject*>())
		if (auto* node = qobject_cast<QsdNode*>(value.value<QObject*>())) return QVariant::fromValue(Guard(node));
	return value;
}

QVariant visible(const QVariant& stored) {
	if (stored.metaType() == QMetaType::fromType<Guard>()) return QVariant::fromValue<QObject*>(stored.value<Guard>().data());
	return stored;
}

} // namespace

// The node's fields: one property (type QVariant, notify signal `__<n>()`, as QQmlPropertyMap
// names them) per key ever stored, in the order the keys arrived; a removed key keeps its
// property, which reads undefined. The names live only in the built meta-object.
class NodeMetaObject final: public QAbstractDynamicMetaObject {
public:
	explicit NodeMetaObject(QsdNode* node): mNode(node) { this->addProperties({}); }
	~NodeMetaObject() override { std::free(this->mBuilt); }
	NodeMetaObject(const NodeMetaObject&) = delete;
	NodeMetaObject& operator=(const NodeMetaObject&) = delete;

	int metaCall(QObject* object, QMetaObject::Call call, int id, void** argv) override;

	// QMetaObject::indexOfProperty asks a dynamic meta-object for a name it lacks. A binding
	// that reads a key before it exists gets a property (reading undefined) whose signal it
	// follows, so it sees the key arrive, as with QQmlPropertyMap.
	int createProperty(const char* name, const char* /*type*/) override {
		std::string_view key(name);
		if (!canBeProperty(key)) return -1;
		this->addProperties({QByteArray(name)});
		return this->propertyOffset() + static_cast<int>(this->values.size()) - 1;
	}

	[[nodiscard]] std::string_view nameAt(int index) const { return this->property(this->propertyOffset() + index).name(); }

	// The property of a key, or -1.
	[[nodiscard]] int indexOf(std::string_view key) const {
		auto it = std::lower_bound(this->order.begin(), this->order.end(), key,
		                           [this](int index, std::string_view k) { return this->nameAt(index) < k; });
		return it != this->order.end() && this->nameAt(*it) == key ? *it : -1;
	}

	[[nodiscard]] const QVariant* unlistedValue(std::string_view key) const {
		auto it = std::lower_bound(this->unlisted.begin(), this->unlisted.end(), key,
		                           [](const auto& entry, std::string_view k) { return entry.first < k; });
		return it != this->unlisted.end() && it->first == key ? &it->second : nullptr;
	}

	QVariant& unlistedSlot(std::string_view key) {
		auto it = std::lower_bound(this->unlisted.begin(), this->unlisted.end(), key,
		                           [](const auto& entry, std::string_view k) { return entry.first < k; });
		if (it == this->unlisted.end() || it->first != key) it = this->unlisted.emplace(it, std::string(key), QVariant());
		return it->second;
	}

	// Every entry present, in key order (bytes, as the daemon orders them).
	template<typename F>
	void forEach(F f) const {
		auto u = this->unlisted.begin();
		for (auto index: this->order) {
			auto name = this->nameAt(index);
			for (; u != this->unlisted.end() && std::string_view(u->first) < name; ++u)
				if (u->second.isValid()) f(std::string_view(u->first), u->second);
			if (this->values[static_cast<size_t>(index)].isValid()) f(name, this->values[static_cast<size_t>(index)]);
		}
		for (; u != this->unlisted.end(); ++u)
			if (u->second.isValid()) f(std::string_view(u->first), u->second);
	}

	// Builds the meta-object again with these properties added (with invalid values). The builder
	// is thrown away: kept, it would cost more than everything else per field.
	void addProperties(const std::vector<QByteArray>& added) {
		QMetaObjectBuilder builder;
		builder.setSuperClass(&QsdNode::staticMetaObject);
		builder.setClassName(QsdNode::staticMetaObject.className());
		builder.setFlags(DynamicMetaObject);
		auto existing = static_cast<int>(this->values.size());
		auto add = [&builder](const QByteArray& name, int index) {
			auto signal = builder.addSignal("__" + QByteArray::number(index) + "()");
			builder.addProperty(name, "QVariant", QMetaType::fromType<QVariant>(), signal.index());
		};
		for (int i = 0; i < existing; ++i) {
			auto name = this->nameAt(i);
			add(QByteArray(name.data(), static_cast<qsizetype>(name.size())), i);
		}
		for (size_t i = 0; i < added.size(); ++i) add(added[i], existing + static_cast<int>(i));
		auto* built = builder.toMetaObject();
		// Signal connections and QML's lookups hold this object, never the built one, so it stays
		// the meta-object of the node; only what it points to changes (as in QQmlOpenMetaObject).
		*static_cast<QMetaObject*>(this) = *built;
		std::free(this->mBuilt);
		this->mBuilt = built;

		this->values.resize(this->values.size() + added.size());
		auto middle = this->order.size();
		for (size_t i = 0; i < added.size(); ++i) this->order.push_back(existing + static_cast<int>(i));
		auto byName = [this](int a, int b) { return this->nameAt(a) < this->nameAt(b); };
		std::sort(this->order.begin() + static_cast<std::ptrdiff_t>(middle), this->order.end(), byName);
		std::inplace_merge(this->order.begin(), this->order.begin() + static_cast<std::ptrdiff_t>(middle), this->order.end(), byName);
	}

	std::vector<QVariant> values;   // by property, a node through its guard; invalid: absent
	std::vector<int> order;         // the properties by name
	// Entries whose key cannot be a property, by key.
	std::vector<std::pair<std::string, QVariant>> unlisted;
	int count = 0;   // entries present

private:
	QsdNode* mNode;
	QMetaObject* mBuilt = nullptr;
};

int NodeMetaObject::metaCall(QObject* object, QMetaObject::Call call, int id, void** argv) {
	if (id >= this->propertyOffset()) {
		auto index = static_cast<size_t>(id - this->propertyOffset());
		switch (call) {
		case QMetaObject::ReadProperty:
			*static_cast<QVariant*>(argv[0]) = index < this->values.size() ? visible(this->values[index]) : QVariant();
			return -1;
		case QMetaObject::WriteProperty:
			// The tree is the daemon's, changed through actions.
			qWarning("Qsd: %s/%s is read-only; change it with an action (Qsd.call)", this->mNode->path().c_str(),
			         this->property(id).name());
			return -1;
		case QMetaObject::ResetProperty:
		case QMetaObject::RegisterPropertyMetaType:
		case QMetaObject::BindableProperty: return -1;
		default: break;
		}
	}
	if (call == QMetaObject::InvokeMetaMethod && id >= this->methodOffset()) {
		QMetaObject::activate(object, id, nullptr);
		return -1;
	}
	return object->qt_metacall(call, id, argv);
}

QsdNode::QsdNode(std::string path, QObject* parent): QObject(parent), mPath(std::move(path)), mMeta(new NodeMetaObject(this)) {
	this->d_ptr->metaObject = this->mMeta;
}

QVariantList QsdNode::values() const {
	QVariantList out;
	out.reserve(this->mMeta->count);
	this->mMeta->forEach([&out](std::string_view, const QVariant& value) { out.append(visible(value)); });
	return out;
}

int QsdNode::count() const { return this->mMeta->count; }

QStringList QsdNode::keys() const {
	QStringList out;
	out.reserve(this->mMeta->count);
	this->mMeta->forEach([&out](std::string_view key, const QVariant&) {
		out.append(QString::fromUtf8(key.data(), static_cast<qsizetype>(key.size())));
	});
	return out;
}

QVariant QsdNode::entry(const QString& key) const { return this->value(key); }

QVariant QsdNode::value(std::string_view key) const {
	if (auto index = this->mMeta->indexOf(key); index >= 0) return visible(this->mMeta->values[static_cast<size_t>(index)]);
	const auto* unlisted = this->mMeta->unlistedValue(key);
	return unlisted ? visible(*unlisted) : QVariant();
}

QJSValue QsdNode::getFunction() const {
	auto* client = qobject_cast<QsdClient*>(this->parent());
	return client ? client->lookupFunction() : QJSValue();
}

bool QsdNode::storeSilently(const QVariantHash& values) {
	auto& meta = *this->mMeta;
	auto before = meta.count;
	std::vector<QByteArray> added;
	std::vector<QVariant> addedValues;
	for (auto it = values.cbegin(); it != values.cend(); ++it) {
		auto key = it.key().toUtf8();
		std::string_view name(key.constData(), static_cast<size_t>(key.size()));
		auto value = storable(it.value());
		QVariant* slot = nullptr;
		if (!canBeProperty(name)) {
			slot = &meta.unlistedSlot(name);
		} else if (auto index = meta.indexOf(name); index >= 0) {
			slot = &meta.values[static_cast<size_t>(index)];
		} else {
			if (value.isValid()) {
				added.push_back(std::move(key));
				addedValues.push_back(std::move(value));
			}
			continue;
		}
		meta.count += static_cast<int>(value.isValid()) - static_cast<int>(slot->isValid());
		*slot = std::move(value);
	}
	if (!added.empty()) {
		auto first = meta.values.size();
		meta.addProperties(added);
		for (size_t i = 0; i < addedValues.size(); ++i) meta.values[first + i] = std::move(addedValues[i]);
		meta.count += static_cast<int>(addedValues.size());
	}
	return meta.count != before;
}

void QsdNode::notify(const QString& key) {
	auto utf8 = key.toUtf8();
	auto index = this->mMeta->indexOf(std::string_view(utf8.constData(), static_cast<size_t>(utf8.size())));
	if (index < 0) return;   // an entry without a property (its key names a member of every node)
	// Each property's own signal: exactly what writing it would have emitted, just later.
	QMetaObject::activate(this, this->mMeta->methodOffset() + index, nullptr);
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

} // namespace qsd::qml
