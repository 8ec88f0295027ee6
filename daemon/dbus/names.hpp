#pragma once
// NameOwnerChanged, fanned out. One match per distinct rule on the connection — an exact name
// (arg0='org.bluez'), a namespace (arg0namespace='org.mpris.MediaPlayer2': the name itself and
// every name below it) or every name — however many watchers share it, and each message is
// decoded once. A watch is RAII; a rule whose last watch went is removed on the next loop pass
// (never from inside its own callback).
//
// Adding a rule is a blocking AddMatch in sdbus-c++ 1.2: create watches at start-up. A watch on
// a rule that already exists costs nothing on the bus.

#include "bus.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace qsd {

class NameTracker {
public:
	// name, old owner ("" when it had none), new owner ("" when it has none now)
	using Handler = std::function<void(const std::string& name, const std::string& oldOwner, const std::string& newOwner)>;

	class Watch {
	public:
		Watch() = default;
		Watch(NameTracker* tracker, std::string rule, uint64_t id): tracker_(tracker), rule_(std::move(rule)), id_(id) {}
		Watch(Watch&& o) noexcept: tracker_(o.tracker_), rule_(std::move(o.rule_)), id_(o.id_) { o.tracker_ = nullptr; }
		Watch& operator=(Watch&& o) noexcept;
		~Watch() { reset(); }
		Watch(const Watch&) = delete;
		Watch& operator=(const Watch&) = delete;
		void reset();
		explicit operator bool() const { return tracker_ != nullptr; }

	private:
		NameTracker* tracker_ = nullptr;
		std::string rule_;
		uint64_t id_ = 0;
	};

	explicit NameTracker(BusConnection& bus);
	~NameTracker();
	NameTracker(const NameTracker&) = delete;
	NameTracker& operator=(const NameTracker&) = delete;

	[[nodiscard]] Watch watch(const std::string& name, Handler handler);
	// `prefix` and every name below it ("org.mpris.MediaPlayer2.mpv", not "org.mpris.MediaPlayer2x").
	[[nodiscard]] Watch watchNamespace(const std::string& prefix, Handler handler);
	[[nodiscard]] Watch watchAll(Handler handler);

	// How many rules are installed on the bus (for tests).
	[[nodiscard]] size_t rules() const { return rules_.size(); }

private:
	struct Rule {
		sdbus::Slot slot;
		std::map<uint64_t, std::shared_ptr<Handler>> handlers;
		bool warned = false;
	};
	Watch add(std::string rule, Handler handler);
	void remove(const std::string& rule, uint64_t id);
	void dispatch(const std::string& rule, sdbus::Message& msg);
	void sweep();

	BusConnection& bus_;
	std::map<std::string, Rule> rules_;
	uint64_t next_ = 1;
	EventSource sweeper_;
};

} // namespace qsd
