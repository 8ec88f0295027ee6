// The limiter of lines a peer can cause at will (daemon/log.hpp).

#include "log.hpp"

#include <gtest/gtest.h>

TEST(LogLimiter, LetsABurstThroughPerWindowAndCountsTheRest) {
	qsd::log::Limiter limiter(3, 1000);
	uint64_t suppressed = 99;
	for (int i = 0; i < 3; ++i) {
		EXPECT_TRUE(limiter.allow(100 + uint64_t(i), suppressed));
		EXPECT_EQ(suppressed, 0u);
	}
	for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter.allow(200, suppressed));
	EXPECT_TRUE(limiter.allow(1200, suppressed));
	EXPECT_EQ(suppressed, 5u);
	EXPECT_TRUE(limiter.allow(1201, suppressed));
	EXPECT_EQ(suppressed, 0u);
}
