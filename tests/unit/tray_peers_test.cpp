// The watcher's bookkeeping of hosts per connection (daemon/backends/tray/peers.hpp).

#ifdef QSD_TRAY_BACKEND

#include "backends/tray/peers.hpp"

#include <gtest/gtest.h>

using namespace qsd::tray;

TEST(TrayHosts, KeptPerConnectionWithinItsLimit) {
	HostRegistry hosts;
	EXPECT_EQ(hosts.add(":1.5", "org.kde.StatusNotifierHost-5"), HostRegistry::Result::Added);
	EXPECT_EQ(hosts.add(":1.5", "org.kde.StatusNotifierHost-5"), HostRegistry::Result::Known);
	for (size_t i = 1; i < kMaxHostsPerConnection; ++i)
		EXPECT_EQ(hosts.add(":1.5", "org.nobody.Owns" + std::to_string(i)), HostRegistry::Result::Added);
	EXPECT_EQ(hosts.add(":1.5", "org.nobody.OwnsThisOne"), HostRegistry::Result::TooMany);
	EXPECT_EQ(hosts.size(), kMaxHostsPerConnection);
	// Another connection has its own share, even for the same name.
	EXPECT_EQ(hosts.add(":1.6", "org.kde.StatusNotifierHost-5"), HostRegistry::Result::Added);
	EXPECT_EQ(hosts.size(), kMaxHostsPerConnection + 1);
}

TEST(TrayHosts, GoWithTheirConnectionOrTheirName) {
	HostRegistry hosts;
	hosts.add(":1.5", "org.kde.StatusNotifierHost-5");
	hosts.add(":1.5", "org.nobody.Owns");
	hosts.add(":1.6", ":1.6");
	hosts.add(":1.7", "org.kde.StatusNotifierHost-5");
	// The name leaves: both registrations of it.
	EXPECT_EQ(hosts.nameLeft("org.kde.StatusNotifierHost-5").size(), 2u);
	EXPECT_EQ(hosts.of(":1.5"), 1u);
	EXPECT_EQ(hosts.of(":1.7"), 0u);
	// The connection leaves: what it registered, also names nobody ever owned.
	EXPECT_EQ(hosts.nameLeft(":1.5"), (std::vector<std::string>{"org.nobody.Owns"}));
	EXPECT_EQ(hosts.nameLeft(":1.6"), (std::vector<std::string>{":1.6"}));
	EXPECT_EQ(hosts.size(), 0u);
	EXPECT_TRUE(hosts.nameLeft(":1.9").empty());
}

#endif // QSD_TRAY_BACKEND
