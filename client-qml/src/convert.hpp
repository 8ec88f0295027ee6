#pragma once
// Conversions between the wire's JSON (nlohmann) and the QVariants QML sees.

#include <qvariant.h>

#include <nlohmann/json.hpp>

namespace qsd::qml {

// Objects become QVariantMap, arrays QVariantList, null a QVariant holding nullptr (QML null).
[[nodiscard]] QVariant toVariant(const nlohmann::json& value);

// The reverse, for call parameters. JS numbers arrive as doubles: integral ones within the
// 53-bit exact range become JSON integers, so `{count: 5}` is sent as 5, not 5.0.
[[nodiscard]] nlohmann::json fromVariant(const QVariant& value);

} // namespace qsd::qml
