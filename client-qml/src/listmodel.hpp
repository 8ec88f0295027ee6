#pragma once
// A collection of the tree (an object keyed by stable ids, e.g. /power/devices) as a list model
// for Repeater and ListView. Rows follow the keys in the daemon's order (sorted by id); a patch
// inserts and removes rows, it never resets the model.

#include <qabstractitemmodel.h>
#include <qobject.h>
#include <qqmlintegration.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qsd::qml {

class QsdClient;

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

	QsdListModel(QsdClient* client, std::string path, QObject* parent);

	[[nodiscard]] QString path() const { return QString::fromStdString(this->mPath); }
	[[nodiscard]] const std::string& jsonPath() const { return this->mPath; }

	[[nodiscard]] int rowCount(const QModelIndex& parent = QModelIndex()) const override;
	[[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
	[[nodiscard]] QHash<int, QByteArray> roleNames() const override;

	/// The row's id, or "" when out of range.
	Q_INVOKABLE [[nodiscard]] QString idAt(int row) const;
	/// The row of an id, or -1.
	Q_INVOKABLE [[nodiscard]] int indexOf(const QString& id) const;

	// Brings the rows in line with the collection's current value (nullptr: absent), with
	// row insertions, removals and dataChanged only for what differs.
	void update(const nlohmann::json* collection);

signals:
	void countChanged();

private:
	struct Row {
		std::string id;
		nlohmann::json value;
	};

	QsdClient* mClient;
	std::string mPath;
	std::vector<Row> mRows;
};

} // namespace qsd::qml
