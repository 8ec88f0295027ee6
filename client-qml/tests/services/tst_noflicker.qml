import QtQuick
import QtTest
import Qsd

// A daemon restart does not flicker: while the new daemon's NetworkManager backend is starting,
// the client keeps showing the last state (no row removed, `available` stays true, the same
// nodes), then diffs; a real absence still shows.
TestCase {
    id: test
    name: "NoFlicker"

    property var devices: Qsd.model("/network/devices")
    property var networks: Qsd.model("/network/devices/wlan0/networks")
    SignalSpy { id: devicesRemoved; target: test.devices; signalName: "rowsRemoved" }
    SignalSpy { id: networksRemoved; target: test.networks; signalName: "rowsRemoved" }
    SignalSpy { id: networksInserted; target: test.networks; signalName: "rowsInserted" }

    readonly property bool networkAvailable: Qsd.network?.available === true
    property bool sawUnavailable: false
    onNetworkAvailableChanged: if (!networkAvailable) sawUnavailable = true
    readonly property string ssid: Qsd.network?.devices?.wlan0?.networks?.HomeNet?.name ?? ""

    function daemonValue(path) {
        var r = QsdDaemon.rpc("tree.get", { path: path })
        return r.result ? r.result.value : undefined
    }
    function nmState() { return daemonValue("/daemon/backends/nm/state") }
    function drive(action) { compare(QsdDaemon.drive(action).code, 0, action) }

    function restart() {
        var epoch = Qsd.epoch
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000, "disconnect noticed")
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected && Qsd.epoch !== epoch }, 15000, "reconnected to the new daemon")
    }

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
        tryVerify(function() { return networkAvailable }, 15000, "/network available")
        tryCompare(devices, "count", 2)
        tryVerify(function() { return networks.count >= 4 }, 10000)
    }

    function init() {
        devicesRemoved.clear()
        networksRemoved.clear()
        networksInserted.clear()
        sawUnavailable = false
    }

    function test_1_keptWhileTheBackendStarts() {
        // Generous: the test decides when the backend finishes starting.
        Qsd.restartGraceMs = 600000
        var wlan = Qsd.network.devices.wlan0
        var rows = networks.count
        drive("nm-freeze")   // NetworkManager does not answer: the new nm backend stays "starting"
        restart()
        compare(nmState(), QsdCore.backendState.starting)
        compare(Qsd.daemon.backends.nm.state, QsdCore.backendState.starting, "the client has the new daemon's state")
        // The daemon says {available: false}; the client still shows the last state.
        compare(daemonValue("/network"), { available: false })
        verify(networkAvailable)
        compare(ssid, "HomeNet")
        verify(Qsd.network.devices.wlan0 === wlan, "the same nodes")
        compare(devices.count, 2)
        compare(networks.count, rows)
        compare(Qsd.value("/network/available"), true)

        drive("nm-thaw")
        tryVerify(function() { return Qsd.daemon.backends.nm.state === QsdCore.backendState.running }, 20000, "running")
        // Then the daemon's state. Not at once: the backend is running before all of /network is
        // written (secretAgentRegistered comes when NetworkManager answers the agent's
        // registration), and the client gets those writes after the state.
        tryVerify(function() { return JSON.stringify(Qsd.value("/network")) === JSON.stringify(daemonValue("/network")) },
                  10000, "then the daemon's state")
        compare(devicesRemoved.count, 0)
        compare(networksRemoved.count, 0)
        compare(networksInserted.count, 0)
        verify(!sawUnavailable, "available never went false")
        verify(Qsd.network.devices.wlan0 === wlan, "the same nodes")
    }

    function test_2_graceOver() {
        Qsd.restartGraceMs = 300
        drive("nm-freeze")
        restart()
        // Starting for longer than the grace period: the absence shows.
        tryVerify(function() { return !networkAvailable }, 20000, "available false after the grace period")
        compare(devices.count, 0)
        verify(devicesRemoved.count >= 1)
        drive("nm-thaw")
        tryVerify(function() { return networkAvailable }, 20000)
        tryCompare(devices, "count", 2)
    }

    function test_3_realAbsenceShows() {
        Qsd.restartGraceMs = 600000
        var epoch = Qsd.epoch
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000)
        drive("nm-stop")   // NetworkManager is gone when the new daemon starts
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected && Qsd.epoch !== epoch }, 15000)
        // The backend is unavailable, not starting: no waiting for the (long) grace period.
        tryVerify(function() { return !networkAvailable }, 20000, "the absence shows")
        compare(Qsd.daemon.backends.nm.state, QsdCore.backendState.unavailable)
        compare(devices.count, 0)
        compare(Qsd.value("/network"), { available: false })
    }
}
