#pragma once
// Small helpers shared by the module's sources.

#include <qdeadlinetimer.h>

namespace qsd::qml {

// Client-side error code for requests that cannot reach the daemon (no connection, or the
// connection was lost before the answer). Inside JSON-RPC's implementation-defined range and
// never used by the daemon.
constexpr int NOT_CONNECTED = -32099;
// The daemon's "backend unavailable" error: the service behind an action is not there (yet).
constexpr int BACKEND_UNAVAILABLE = -32000;

// Monotonic milliseconds.
inline qint64 nowMs() { return QDeadlineTimer::current().deadline(); }

} // namespace qsd::qml
