#pragma once
// A collection of the tree (an object keyed by stable ids, e.g. /power/devices) as a list model
// for Repeater and ListView. Rows follow the keys in the daemon's order (sorted by id), or the
// order of an array of keys the tree holds beside it (/tray/order); a patch inserts, removes and
// moves rows, it never resets the model. A row of an object item holds the
// mirror's node for that item, nothing else: a change inside the item notifies the node's
// property and costs the model nothing.

#include <qabstractitemmodel.h>
#include <qobject.h>
#include <qqmlintegration.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qsd::qml {

class QsdClient;
class QsdNode;

class QsdListModel: public QAbstractListModel {
	Q_OBJECT
	QML_ANONYMOUS
	/// The JSON Pointer of the collection.
	Q_PROPERTY(QString path READ path CONSTANT)
	/// Number of rows (items in the collection; 0 while the path is absent or not an object).
	Q_PROPERTY(int count READ rowCount NOTIFY countChanged)

public:
	enum Roles {
		IdRole = Qt::UserRole + 1,
		NodeRole,
		ValueRole,
	};
	Q_ENUM(Roles)

	QsdListModel(QsdClient* client, std::string path, QObject* parent, std::string orderPath = {});

	[[nodiscard]] QString path() const { return QString::fromStdString(this->mPath); }
	[[nodiscard]] const std::string& jsonPath() const { return this->mPath; }
	// The JSON Pointer of the array of keys the rows follow; empty: key order.
	[[nodiscard]] const std::string& orderPath() const { return this->mOrderPath; }
	// The collection's node the rows were last brought in line with (nullptr: none).
	[[nodiscard]] QsdNode* collectionNode() const { return this->mNode; }

	[[nodiscard]] int rowCount(const QModelIndex& parent = QModelIndex()) const override;
	[[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
	[[nodiscard]] QHash<int, QByteArray> roleNames() const override;

	/// The row's id, or "" when out of range.
	Q_INVOKABLE [[nodiscard]] QString idAt(int row) const;
	/// The row of an id, or -1.
	Q_INVOKABLE [[nodiscard]] int indexOf(const QString& id) const;

	// Brings the rows in line with the collection's current value (nullptr: absent) and node:
	// row insertions and removals for keys that came and went, dataChanged only for leaf items
	// whose value changed or items that turned from a leaf into an object or back. Object items
	// are not compared: their nodes notify on their own.
	// With an order path, `order` is the array there (nullptr: absent): the rows take its order,
	// moving (beginMoveRows) rather than being removed and inserted again.
	void update(const nlohmann::json* collection, QsdNode* node, const nlohmann::json* order = nullptr);

signals:
	void countChanged();

private:
	struct Row {
		std::string id;
		bool object = false;
		nlohmann::json leaf;   // the value of a leaf item; null for an object item
	};

	void updateOrdered(const nlohmann::json& collection, const nlohmann::json* order);
	[[nodiscard]] Row makeRow(const std::string& id, const nlohmann::json& value) const;
	void refreshRow(size_t row, const nlohmann::json& value);

	QsdClient* mClient;
	std::string mPath;
	std::string mOrderPath;
	QsdNode* mNode = nullptr;
	std::vector<Row> mRows;
};

} // namespace qsd::qml
