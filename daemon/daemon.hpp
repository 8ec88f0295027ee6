#pragma once
// Owns everything, in the order it is built and torn down: loop, tree, dispatcher, server,
// D-Bus connections, backends.

#include "backends/backend.hpp"
#include "backoff.hpp"
#include "dbus/bus.hpp"
#include "dbus/bus_probe.hpp"
#include "event_loop.hpp"
#include "server/dispatcher.hpp"
#include "server/server.hpp"
#include "tree.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qsd {

struct DaemonOptions {
	ServerOptions server;
	bool debugApi = false;
	// Backends to start; std::nullopt = all compiled in.
	std::optional<std::vector<std::string>> backends;
};

class Daemon {
public:
	explicit Daemon(DaemonOptions options);
	~Daemon();
	Daemon(const Daemon&) = delete;
	Daemon& operator=(const Daemon&) = delete;

	// Listens, reports READY=1, starts the backends and runs until SIGTERM/SIGINT (0) or until a
	// bus connection is lost (kExitBusLost). Returns the exit code.
	int run();
	static constexpr int kExitBusLost = 3;
	// How long a bus may take to answer its first question (BusProbe) before the backends on it
	// are failed; it is asked again meanwhile (kBusRetry), and they start when it answers.
	static constexpr std::chrono::seconds kBusAnswerTimeout{10};
	static constexpr Backoff::Policy kBusRetry{std::chrono::seconds(5), std::chrono::seconds(60)};

	[[nodiscard]] EventLoop& loop() { return loop_; }
	[[nodiscard]] Tree& tree() { return tree_; }
	[[nodiscard]] Dispatcher& dispatcher() { return dispatcher_; }
	[[nodiscard]] Server& server() { return *server_; }
	[[nodiscard]] bool debugApi() const { return options_.debugApi; }
	[[nodiscard]] std::vector<std::string> backendIds() const;

private:
	struct BusSlot {
		BusConnection::Kind kind;
		std::unique_ptr<BusConnection> connection;
		std::unique_ptr<BusProbe> probe;
		std::string error;         // why the backends on it cannot use it ("" once connected)
		bool pending = true;       // not answered yet, nor known to be out of reach
		Backoff retry{kBusRetry};
		EventSource retryTimer;
	};
	void askBus(BusSlot& bus);
	void busAnswered(BusSlot& bus, BusProbe::Result result, const std::string& why);
	void startBackends();

	DaemonOptions options_;
	EventLoop loop_;
	Tree tree_;
	Dispatcher dispatcher_;
	std::unique_ptr<Server> server_;
	BusSlot systemBus_{BusConnection::Kind::System};
	BusSlot sessionBus_{BusConnection::Kind::Session};
	// Before the backends and their context: they hold subscriptions to it.
	std::unique_ptr<icons::SharedTheme> icons_;
	std::unique_ptr<BackendContext> context_;
	std::vector<std::unique_ptr<Backend>> backends_;
	std::vector<MethodRegistration> methods_;
};

// The core and debug methods (core_methods.cpp).
std::vector<MethodRegistration> registerCoreMethods(Daemon& daemon);
std::vector<MethodRegistration> registerDebugMethods(Daemon& daemon);

} // namespace qsd
