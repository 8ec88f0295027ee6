#include "listmodel.hpp"

#include "client.hpp"
#include "convert.hpp"

#include <qsd/protocol/mirror.hpp>

#include <unordered_set>

namespace qsd::qml {

QsdListModel::QsdListModel(QsdClient* client, std::string path, QObject* parent, std::string orderPath)
    : QAbstractListModel(parent), mClient(client), mPath(std::move(path)), mOrderPath(std::move(orderPath)) {}

QsdListModel::Row QsdListModel::makeRow(const std::string& id, const nlohmann::json& value) const {
	auto object = value.is_object();
	return Row {id, object, object ? nlohmann::json() : value};
}

// Same id on both sides. An object item is the same node for as long as it is an object; only
// leaves are compared (cheap: a leaf is one value or a small array).
void QsdListModel::refreshRow(size_t row, const nlohmann::json& value) {
	auto& current = this->mRows[row];
	auto object = value.is_object();
	if (object != current.object) {
		current = this->makeRow(current.id, value);
		auto index = this->index(static_cast<int>(row));
		emit this->dataChanged(index, index, {NodeRole, ValueRole});
	} else if (!object && current.leaf != value) {
		current.leaf = value;
		auto index = this->index(static_cast<int>(row));
		emit this->dataChanged(index, index, {ValueRole});
	}
}

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

void QsdListModel::update(const nlohmann::json* collection, QsdNode* node, const nlohmann::json* order) {
	static const nlohmann::json EMPTY = nlohmann::json::object();
	if (!collection || !collection->is_object()) collection = &EMPTY;
	this->mNode = node;
	auto oldCount = this->mRows.size();
	if (!this->mOrderPath.empty()) {
		this->updateOrdered(*collection, order);
		if (this->mRows.size() != oldCount) emit this->countChanged();
		return;
	}
	auto makeRow = [this](const std::string& id, const nlohmann::json& value) { return this->makeRow(id, value); };

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
		this->refreshRow(row, it.value());
		++row;
		++it;
	}
	if (this->mRows.size() != oldCount) emit this->countChanged();
}

// The rows in the order array's order: its keys that the collection has (each once), then the
// collection's other keys in key order. Rows that went are removed, rows that stay are moved
// (never removed and inserted again: their delegates stay), new ones inserted.
void QsdListModel::updateOrdered(const nlohmann::json& collection, const nlohmann::json* order) {
	std::vector<std::string> target;
	std::unordered_set<std::string> listed;
	if (order && order->is_array())
		for (const auto& k: *order)
			if (k.is_string() && collection.contains(k.get_ref<const std::string&>()) &&
			    listed.insert(k.get<std::string>()).second)
				target.push_back(k.get<std::string>());
	for (const auto& [k, _]: collection.items())
		if (!listed.count(k)) target.push_back(k);
	std::unordered_set<std::string> wanted(target.begin(), target.end());

	// Removals, from the end, a contiguous run at a time.
	for (size_t end = this->mRows.size(); end > 0;) {
		if (wanted.count(this->mRows[end - 1].id)) {
			--end;
			continue;
		}
		size_t first = end - 1;
		while (first > 0 && !wanted.count(this->mRows[first - 1].id)) --first;
		this->beginRemoveRows({}, static_cast<int>(first), static_cast<int>(end - 1));
		this->mRows.erase(this->mRows.begin() + static_cast<ptrdiff_t>(first), this->mRows.begin() + static_cast<ptrdiff_t>(end));
		this->endRemoveRows();
		end = first;
	}
	// Then each position in turn: the row is there, moves up from further down, or is new.
	for (size_t i = 0; i < target.size(); ++i) {
		const auto& id = target[i];
		const auto& value = collection.at(id);
		if (i < this->mRows.size() && this->mRows[i].id == id) {
			this->refreshRow(i, value);
			continue;
		}
		size_t j = i + 1;
		while (j < this->mRows.size() && this->mRows[j].id != id) ++j;
		if (j < this->mRows.size()) {
			this->beginMoveRows({}, static_cast<int>(j), static_cast<int>(j), {}, static_cast<int>(i));
			Row moved = std::move(this->mRows[j]);
			this->mRows.erase(this->mRows.begin() + static_cast<ptrdiff_t>(j));
			this->mRows.insert(this->mRows.begin() + static_cast<ptrdiff_t>(i), std::move(moved));
			this->endMoveRows();
			this->refreshRow(i, value);
			continue;
		}
		this->beginInsertRows({}, static_cast<int>(i), static_cast<int>(i));
		this->mRows.insert(this->mRows.begin() + static_cast<ptrdiff_t>(i), this->makeRow(id, value));
		this->endInsertRows();
	}
}

} // namespace qsd::qml
