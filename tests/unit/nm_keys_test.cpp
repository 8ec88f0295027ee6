// The pure rules behind network.connect's security and psk params and the scanner's timing
// (daemon/backends/nm/mapping.hpp).

#include "backends/nm/mapping.hpp"

#include <gtest/gtest.h>

using namespace qsd::nm;

TEST(NmSecurityNames, RoundTripEveryNamedType) {
	for (auto s: {Security::Wpa3SuiteB192, Security::Sae, Security::Wpa2Eap, Security::Wpa2Psk, Security::WpaEap,
	              Security::WpaPsk, Security::StaticWep, Security::DynamicWep, Security::Leap, Security::Owe, Security::Open})
		EXPECT_EQ(securityFromName(securityName(s)), s) << securityName(s);
	EXPECT_EQ(securityFromName("unknown"), std::nullopt);
	EXPECT_EQ(securityFromName("WPA2"), std::nullopt);
	EXPECT_EQ(securityFromName(""), std::nullopt);
}

TEST(NmSecurityNames, KeyManagementOfTheTypesQsdSetsUp) {
	EXPECT_EQ(keyMgmtFor(Security::Open), "");
	EXPECT_EQ(keyMgmtFor(Security::Owe), "owe");
	EXPECT_EQ(keyMgmtFor(Security::WpaPsk), "wpa-psk");
	EXPECT_EQ(keyMgmtFor(Security::Wpa2Psk), "wpa-psk");
	EXPECT_EQ(keyMgmtFor(Security::Sae), "sae");
	for (auto s: {Security::Wpa3SuiteB192, Security::Wpa2Eap, Security::WpaEap, Security::StaticWep, Security::DynamicWep,
	              Security::Leap, Security::Unknown})
		EXPECT_EQ(keyMgmtFor(s), std::nullopt) << securityName(s);
}

TEST(NmPsk, PassphrasesAndRawKeys) {
	EXPECT_EQ(pskProblem("12345678"), std::nullopt);
	EXPECT_EQ(pskProblem(std::string(63, 'x')), std::nullopt);
	EXPECT_EQ(pskProblem("correct horse battery staple ~!@#$%^&*()"), std::nullopt);
	EXPECT_EQ(pskProblem(std::string(64, 'a')), std::nullopt);
	EXPECT_EQ(pskProblem("0123456789ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef"), std::nullopt);
	EXPECT_NE(pskProblem("1234567"), std::nullopt);                  // too short
	EXPECT_NE(pskProblem(""), std::nullopt);
	EXPECT_NE(pskProblem(std::string(65, 'a')), std::nullopt);       // too long
	EXPECT_NE(pskProblem(std::string(64, 'g')), std::nullopt);       // 64 characters, not hex
	EXPECT_NE(pskProblem(std::string(63, 'a') + " "), std::nullopt); // 64, a space
	// NetworkManager counts bytes and checks no characters (nm_utils_wpa_psk_valid).
	EXPECT_EQ(pskProblem("caf\xc3\xa9 au lait"), std::nullopt);
	EXPECT_EQ(pskProblem("p\xc3\xa4ssw\xc3\xb6rd-123"), std::nullopt);
	EXPECT_EQ(pskProblem("p\xc3\xa4ssw\xc3\xb6"), std::nullopt);           // 6 characters, 8 bytes
	EXPECT_NE(pskProblem("p\xc3\xa4ss"), std::nullopt);                  // 5 bytes
	EXPECT_NE(pskProblem(std::string(62, 'a') + "\xc3\xa4"), std::nullopt); // 63 characters, 64 bytes, not hex
	EXPECT_EQ(pskProblem("tab\there!"), std::nullopt);
	EXPECT_NE(pskProblem(std::string("nul\0byte!", 9)), std::nullopt);   // a D-Bus string would end there
	// SAE (WPA3): any non-empty password.
	EXPECT_EQ(pskProblem("1234567", "sae"), std::nullopt);
	EXPECT_EQ(pskProblem("x", "sae"), std::nullopt);
	EXPECT_EQ(pskProblem(std::string(100, 'g'), "sae"), std::nullopt);
	EXPECT_NE(pskProblem("", "sae"), std::nullopt);
	EXPECT_NE(pskProblem(std::string("nul\0byte!", 9), "sae"), std::nullopt);
	EXPECT_NE(pskProblem("1234567", "wpa-psk"), std::nullopt);
}

TEST(NmScanDelay, DueAfterTheIntervalSinceTheNewerOfTheLastScanAndTheLastRequest) {
	const int64_t interval = 10000;
	EXPECT_EQ(scanDelayMs(std::nullopt, std::nullopt, 50000, interval), 0);   // nothing known
	EXPECT_EQ(scanDelayMs(-1, std::nullopt, 50000, interval), 0);             // NetworkManager: never
	EXPECT_EQ(scanDelayMs(48000, std::nullopt, 50000, interval), 8000);       // scanned 2 s ago
	EXPECT_EQ(scanDelayMs(40000, std::nullopt, 50000, interval), 0);          // exactly due
	EXPECT_EQ(scanDelayMs(30000, std::nullopt, 50000, interval), 0);
	EXPECT_EQ(scanDelayMs(30000, 45000, 50000, interval), 5000);              // we asked 5 s ago
	EXPECT_EQ(scanDelayMs(49000, 45000, 50000, interval), 9000);              // a scan after our request
	EXPECT_EQ(scanDelayMs(-1, 45000, 50000, interval), 5000);
	EXPECT_EQ(scanDelayMs(60000, std::nullopt, 50000, interval), 0);          // from the future: due
}
