#pragma once
// The kernel's rfkill switches for Bluetooth, read from /dev/rfkill through an io source: on
// open the kernel sends one ADD event per switch, then a CHANGE event whenever a switch's soft
// or hard block changes, and DEL when it goes. Read-only but for one thing: lifting a soft block
// (RFKILL_OP_CHANGE written to the device), which the user may do where logind gave them the
// device (the uaccess tag of a local seat). Nothing here polls or blocks.
//
// For tests (and systems whose rfkill device is elsewhere) the device is $QSD_RFKILL and the
// switches' names are read from $QSD_RFKILL_SYSFS/rfkill<idx>/name. When the device is a Unix
// socket, qsd connects to it and uses the one connection both ways: events are read from it and
// unblock requests written to it, as a test's fake kernel expects them.

#include "mapping.hpp"

#include "../../event_loop.hpp"

#include <functional>
#include <string>
#include <vector>

namespace qsd::bluetooth {

class RfkillWatch {
public:
	struct Options {
		std::string device = "/dev/rfkill";
		std::string sysfs = "/sys/class/rfkill";
	};
	// $QSD_RFKILL and $QSD_RFKILL_SYSFS where they are set.
	static Options fromEnvironment();

	// `changed` runs after every event that changed the table, and when the device is lost.
	RfkillWatch(EventLoop& loop, Options options, std::function<void()> changed);
	~RfkillWatch();
	RfkillWatch(const RfkillWatch&) = delete;
	RfkillWatch& operator=(const RfkillWatch&) = delete;

	// Whether the device is open (its events are known).
	[[nodiscard]] bool available() const { return fd_ >= 0; }
	// Why it is not ("" while it is).
	[[nodiscard]] const std::string& error() const { return error_; }
	[[nodiscard]] const RfkillTable& table() const { return table_; }

	// Lifts switch `idx`'s soft block. 0 when the request was written, else the errno of the
	// failure (EACCES: the user may not). The table changes when the kernel reports it.
	[[nodiscard]] int unblock(uint32_t idx);

private:
	void open();
	void close(const std::string& why);
	void readable();
	std::string nameOf(uint32_t idx) const;

	EventLoop& loop_;
	Options options_;
	std::function<void()> changed_;
	int fd_ = -1;
	bool socket_ = false;
	EventSource io_;
	std::vector<uint8_t> pending_;   // a partial record (a socket may split them)
	RfkillTable table_;
	std::string error_;
};

} // namespace qsd::bluetooth
