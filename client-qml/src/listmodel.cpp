#include "listmodel.hpp"

#include "client.hpp"
#include "convert.hpp"

#include <qsd/protocol/mirror.hpp>

namespace qsd::qml {

QsdListModel::QsdListModel(QsdClient* client, std::string path, QObject* parent)
    : QAbstractListModel(parent), mClient(client), mPath(std::move(path)) {}

int QsdListModel::rowCount(const QModelIndex& parent) const {
	if (parent.isValid()) return 0;
	return static_cast<int>(this->mRows.size());
}

QVariant QsdListModel::data(const QModelIndex& index, int role) const {
	if (!index.isValid() || index.row() < 0 || index.row() >= this->rowCount()) return {};
	const auto& row = this->mRows[static_cast<size_t>(index.row())];
	switch (role) {
	case Qt::DisplayRole:
	case IdRole: return QString::fromStdString(row.id);
	case NodeRole: {
		if (!row.object) return QVariant::fromValue<QObject*>(nullptr);
		return QVariant::fromValue<QObject*>(this->mClient->nodeAt(pointer::join(this->mPath, row.id)));
	}
	case ValueRole:
		// The item's node itself for an object item (shared with the mirror, never copied).
		if (row.object) return QVariant::fromValue<QObject*>(this->mClient->nodeAt(pointer::join(this->mPath, row.id)));
		return toVariant(row.leaf);
	default: return {};
	}
}

QHash<int, QByteArray> QsdListModel::roleNames() const {
	return {{IdRole, "id"}, {NodeRole, "node"}, {ValueRole, "value"}};
}

QString QsdListModel::idAt(int row) const {
	if (row < 0 || row >= this->rowCount()) return {};
	return QString::fromStdString(this->mRows[static_cast<size_t>(row)].id);
}

int QsdListModel::indexOf(const QString& id) const {
	auto key = id.toStdString();
	for (size_t i = 0; i < this->mRows.size(); ++i)
		if (this->mRows[i].id == key) return static_cast<int>(i);
	return -1;
}

void QsdListModel::update(const nlohmann::json* collection, QsdNode* node) {
	static const nlohmann::json EMPTY = nlohmann::json::object();
	if (!collection || !collection->is_object()) collection = &EMPTY;
	this->mNode = node;
	auto oldCount = this->mRows.size();
	auto makeRow = [](const std::string& id, const nlohmann::json& value) {
		auto object = value.is_object();
		return Row {id, object, object ? nlohmann::json() : value};
	};

	// Both sides are sorted by id (nlohmann keeps object keys in a std::map), so one merge walk
	// finds every removal, insertion and change; contiguous runs become one begin/end pair.
	size_t row = 0;
	auto it = collection->begin();
	while (row < this->mRows.size() || it != collection->end()) {
		if (it == collection->end() || (row < this->mRows.size() && this->mRows[row].id < it.key())) {
			auto last = row;
			while (last + 1 < this->mRows.size() && (it == collection->end() || this->mRows[last + 1].id < it.key())) ++last;
			this->beginRemoveRows({}, static_cast<int>(row), static_cast<int>(last));
			this->mRows.erase(this->mRows.begin() + static_cast<ptrdiff_t>(row), this->mRows.begin() + static_cast<ptrdiff_t>(last) + 1);
			this->endRemoveRows();
			continue;
		}
		if (row >= this->mRows.size() || it.key() < this->mRows[row].id) {
			std::vector<Row> added;
			while (it != collection->end() && (row >= this->mRows.size() || it.key() < this->mRows[row].id)) {
				added.push_back(makeRow(it.key(), it.value()));
				++it;
			}
			auto first = static_cast<int>(row);
			this->beginInsertRows({}, first, first + static_cast<int>(added.size()) - 1);
			this->mRows.insert(this->mRows.begin() + static_cast<ptrdiff_t>(row), std::make_move_iterator(added.begin()),
			                   std::make_move_iterator(added.end()));
			this->endInsertRows();
			row += added.size();
			continue;
		}
		// Same id on both sides. An object item is the same node for as long as it is an
		// object; only leaves are compared (cheap: a leaf is one value or a small array).
		auto& current = this->mRows[row];
		auto object = it.value().is_object();
		if (object != current.object) {
			current = makeRow(current.id, it.value());
			auto index = this->index(static_cast<int>(row));
			emit this->dataChanged(index, index, {NodeRole, ValueRole});
		} else if (!object && current.leaf != it.value()) {
			current.leaf = it.value();
			auto index = this->index(static_cast<int>(row));
			emit this->dataChanged(index, index, {ValueRole});
		}
		++row;
		++it;
	}
	if (this->mRows.size() != oldCount) emit this->countChanged();
}

} // namespace qsd::qml
