#pragma once
// The base of the backends whose service is on D-Bus (NetworkManager, UPower, the tray, and
// those to come). On top of Backend's life cycle it owns what each of them needs once:
//   - the bus-or-Failed decision: without its bus the backend is Failed with the bus's own error;
//   - the CallSet of its pending calls, cancelled on stop, and the PropertyReader that degrades
//     wrongly typed properties and logs each once;
//   - signal matches whose handlers cannot throw into sd-bus: a malformed message is logged
//     once per match (then at debug level) and dropped;
//   - the proxy reaper: a proxy whose call may be running is destroyed on the next loop pass,
//     never from inside its own callback.
// Matches are added in onBusStart() only (AddMatch is a blocking call in sdbus-c++ 1.2).

#include "backend.hpp"

#include "../dbus/call_set.hpp"
#include "../dbus/variant.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qsd {

class BusBackend: public Backend {
public:
	enum class Bus { System, Session };

	~BusBackend() override;

protected:
	BusBackend(BackendContext& context, Bus bus, std::string logName);

	// Called by onStart() once the bus connection is there (state Starting): install matches,
	// watch names, enumerate. Without the bus the backend is Failed and this is not called.
	virtual void onBusStart() = 0;
	// Called by onStop() after every pending call was cancelled and every match removed: drop
	// the backend's state (its subtree is removed by stop()).
	virtual void onBusStop() = 0;

	// Requests need the bus (checked before the backend's own availability()).
	[[nodiscard]] std::optional<Unavailable> precondition() const final;

	[[nodiscard]] bool connected() const { return conn_ != nullptr; }
	[[nodiscard]] sdbus::IConnection& conn() const { return *conn_; }
	[[nodiscard]] BusConnection& bus() const { return *bus_; }
	[[nodiscard]] const std::string& logName() const { return log_; }

	// Adds a match for the backend's life. The handler may throw sdbus::Error (a message of the
	// wrong shape) or std::exception: logged as "malformed <what>", once per match.
	void match(const std::string& rule, std::function<void(sdbus::Message&)> handler, std::string what);
	// Destroys `proxy` on the next loop pass (a call of it may be running now).
	void bury(std::unique_ptr<sdbus::IProxy> proxy);

	dbus::CallSet calls_;
	dbus::PropertyReader reader_;

private:
	void onStart() final;
	void onStop() final;
	void onBusesChanged() final;
	void attach();

	struct Match;
	Bus which_;
	std::string log_;
	BusConnection* bus_ = nullptr;
	sdbus::IConnection* conn_ = nullptr;
	std::vector<std::unique_ptr<Match>> matches_;
	std::vector<std::unique_ptr<sdbus::IProxy>> graveyard_;
	EventSource reaper_;
};

} // namespace qsd
