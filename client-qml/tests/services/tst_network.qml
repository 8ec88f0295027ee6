import QtQuick
import QtTest
import Qsd

// /network from a real qsd against python-dbusmock's NetworkManager: the Quickshell idioms
// (devices.values.find, networks.values.filter) as bindings, the generated constants, and
// network.connectionFailed reaching a QsdEvents handler from the service itself.
TestCase {
    id: test
    name: "Network"

    // Networking.devices.values.find(d => d.type === DeviceType.Wifi) in Quickshell.
    readonly property var wifi: Qsd.network?.devices?.values.find(d => QsdNetwork.deviceType.wifi === d.type) ?? null
    readonly property var wired: Qsd.network?.devices?.values.find(d => QsdNetwork.deviceType.wired === d.type) ?? null
    readonly property var active: wifi?.networks.values.find(n => n.connected) ?? null
    readonly property var secured: wifi ? wifi.networks.values.filter(n => QsdNetwork.wifiSecurity.open !== n.security).map(n => n.name) : []

    property var failures: []
    QsdEvents {
        topics: [QsdNetwork.events.connectionFailed]
        onEvent: (topic, data) => test.failures.push(data)
    }

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
        tryVerify(function() { return Qsd.network?.available === true }, 15000, "/network available")
    }

    function test_1_devicesAndNetworks() {
        tryVerify(function() { return wifi !== null && wired !== null }, 10000)
        compare(wifi.name, "wlan0")
        compare(wifi.state, QsdNetwork.deviceState.connected)
        compare(wired.linkSpeed, 1000)
        verify(wired.hasLink)
        tryVerify(function() { return active !== null }, 10000)
        compare(active.name, "HomeNet")
        compare(active.signalStrength, 0.78)
        compare(secured, ["HomeNet", "Neighbour", "Office-Guest"])
        compare(wifi.networks.count, 4)
    }

    function test_2_connectionFailedEvent() {
        // Topics reach the daemon before this answer (requests are handled in order).
        var done = false
        Qsd.call("hello", {}, function() { done = true })
        tryVerify(function() { return done })
        compare(QsdDaemon.drive("nm-connection-failed", ["7"]).code, 0)   // NM_DEVICE_STATE_REASON_NO_SECRETS
        tryCompare(test.failures, "length", 1, 10000)
        compare(failures[0].device, "wlan0")
        compare(failures[0].network, "HomeNet")
        compare(failures[0].reason, QsdNetwork.connectionFailReason.noSecrets)
    }
}
