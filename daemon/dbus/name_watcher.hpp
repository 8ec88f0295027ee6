#pragma once
// Watches a D-Bus name: onAppeared when it gets an owner (also at start if it has one),
// onVanished when it loses it. The match is installed once, in the constructor; the initial
// owner is asked asynchronously.

#include "bus.hpp"

#include <functional>
#include <string>

namespace qsd {

class NameWatcher {
public:
	NameWatcher(sdbus::IConnection& connection, std::string name, std::function<void(const std::string& owner)> onAppeared,
	            std::function<void()> onVanished);
	~NameWatcher();
	NameWatcher(const NameWatcher&) = delete;
	NameWatcher& operator=(const NameWatcher&) = delete;

	[[nodiscard]] bool present() const { return !owner_.empty(); }
	[[nodiscard]] const std::string& owner() const { return owner_; }
	[[nodiscard]] const std::string& name() const { return name_; }

private:
	void ownerChanged(const std::string& owner);

	std::string name_;
	std::function<void(const std::string&)> onAppeared_;
	std::function<void()> onVanished_;
	std::string owner_;
	std::unique_ptr<sdbus::IProxy> bus_;
	sdbus::Slot match_;
	AsyncCall initial_;
	bool sawSignal_ = false;
};

} // namespace qsd
