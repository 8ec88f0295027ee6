#include "convert.hpp"

#include <qjsvalue.h>
#include <qmetatype.h>
#include <qvariant.h>

#include <cmath>

namespace qsd::qml {

QVariant toVariant(const nlohmann::json& value) {
	switch (value.type()) {
	case nlohmann::json::value_t::null: return QVariant::fromValue(nullptr);
	case nlohmann::json::value_t::boolean: return value.get<bool>();
	case nlohmann::json::value_t::number_integer: {
		auto v = value.get<int64_t>();
		// QML numbers are doubles; an int stays an int where it fits so comparisons are exact.
		if (v >= INT32_MIN && v <= INT32_MAX) return static_cast<int>(v);
		return static_cast<double>(v);
	}
	case nlohmann::json::value_t::number_unsigned: {
		auto v = value.get<uint64_t>();
		if (v <= INT32_MAX) return static_cast<int>(v);
		return static_cast<double>(v);
	}
	case nlohmann::json::value_t::number_float: return value.get<double>();
	case nlohmann::json::value_t::string: return QString::fromStdString(value.get_ref<const std::string&>());
	case nlohmann::json::value_t::array: {
		QVariantList list;
		list.reserve(static_cast<qsizetype>(value.size()));
		for (const auto& item: value) list.append(toVariant(item));
		return list;
	}
	case nlohmann::json::value_t::object: {
		QVariantMap map;
		for (const auto& [key, item]: value.items()) map.insert(QString::fromStdString(key), toVariant(item));
		return map;
	}
	case nlohmann::json::value_t::binary:
	case nlohmann::json::value_t::discarded: break;
	}
	return {};
}

nlohmann::json fromVariant(const QVariant& value) {
	if (!value.isValid() || value.isNull()) return nullptr;
	auto type = value.metaType().id();
	switch (type) {
	case QMetaType::Bool: return value.toBool();
	case QMetaType::Int:
	case QMetaType::Short:
	case QMetaType::Long:
	case QMetaType::LongLong: return value.toLongLong();
	case QMetaType::UInt:
	case QMetaType::UShort:
	case QMetaType::ULong:
	case QMetaType::ULongLong: return value.toULongLong();
	case QMetaType::Float:
	case QMetaType::Double: {
		auto d = value.toDouble();
		if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= 9007199254740992.0)
			return static_cast<int64_t>(d);
		if (!std::isfinite(d)) return nullptr;   // JSON has no NaN/Infinity
		return d;
	}
	case QMetaType::QString: return value.toString().toStdString();
	case QMetaType::QVariantList:
	case QMetaType::QStringList: {
		auto out = nlohmann::json::array();
		for (const auto& item: value.toList()) out.push_back(fromVariant(item));
		return out;
	}
	case QMetaType::QVariantMap: {
		auto out = nlohmann::json::object();
		auto map = value.toMap();
		for (auto it = map.cbegin(); it != map.cend(); ++it) out[it.key().toStdString()] = fromVariant(it.value());
		return out;
	}
	case QMetaType::QVariantHash: {
		auto out = nlohmann::json::object();
		auto hash = value.toHash();
		for (auto it = hash.cbegin(); it != hash.cend(); ++it) out[it.key().toStdString()] = fromVariant(it.value());
		return out;
	}
	default: break;
	}
	if (value.metaType() == QMetaType::fromType<QJSValue>()) {
		auto js = value.value<QJSValue>();
		// A function has no JSON form (JSON.stringify leaves it out), and its toVariant() is the
		// same QJSValue again: unwrapped once more and again, it overflowed the stack.
		if (js.isCallable()) return nullptr;
		auto inner = js.toVariant();
		if (inner.metaType() == QMetaType::fromType<QJSValue>()) return nullptr;
		return fromVariant(inner);
	}
	if (value.metaType() == QMetaType::fromType<std::nullptr_t>()) return nullptr;
	if (value.canConvert<QString>()) return value.toString().toStdString();
	return nullptr;
}

} // namespace qsd::qml
