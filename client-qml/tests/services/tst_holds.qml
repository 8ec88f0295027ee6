import QtQuick
import QtTest
import Qsd

// Declarative holds survive the daemon: a power-profile hold and a Wi-Fi scanner made by
// elements are made again after qsd is killed with SIGKILL and restarted, and released when the
// elements become inactive or are destroyed. Checked through another connection (the daemon's
// own state), not through this client's mirror, which may keep showing the old state while the
// new daemon starts.
TestCase {
    id: test
    name: "Holds"

    readonly property string holdKey: "org.example.Bar:performance"

    QsdProfileHold {
        id: hold
        profile: QsdPower.profile.performance
        reason: "rendering"
        applicationId: "org.example.Bar"
    }
    QsdWifiScanner { id: scanner; device: "wlan0" }
    QsdWifiScanner { id: scanner2; device: "wlan0"; active: false }

    function daemonValue(path) {
        var r = QsdDaemon.rpc("tree.get", { path: path })
        return r.result ? r.result.value : undefined
    }
    function daemonHolds() { return daemonValue("/power/profiles/holds") ?? {} }
    function scanning() { return daemonValue("/network/devices/wlan0/scannerEnabled") === true }
    function count(action) { return parseInt(QsdDaemon.drive(action).output) }
    function roundTrip() {
        var done = false
        Qsd.call("hello", {}, function() { done = true })
        tryVerify(function() { return done }, 10000)
    }

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function test_1_madeWhileActive() {
        tryVerify(function() { return hold.effective }, 15000, "the hold is in effect")
        tryVerify(function() { return daemonHolds()[holdKey] !== undefined }, 15000, "the hold is in /power/profiles/holds")
        compare(daemonHolds()[holdKey].reason, "rendering")
        compare(hold.error, "")
        tryVerify(function() { return scanner.effective }, 15000, "the scanner is on")
        verify(scanning())
        compare(count("ppd-hold-calls"), 1)
    }

    function test_2_madeAgainAfterKill9() {
        var epoch = Qsd.epoch
        var scans = count("nm-scan-requests")
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000, "disconnect noticed")
        verify(!hold.effective)
        verify(!scanner.effective)
        // What power-profiles-daemon does when a holder leaves the bus.
        compare(QsdDaemon.drive("ppd-forget-holds").code, 0)
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected && Qsd.epoch !== epoch }, 15000, "reconnected to the new daemon")
        tryVerify(function() { return daemonHolds()[holdKey] !== undefined }, 20000, "the hold is made again")
        compare(count("ppd-hold-calls"), 2)
        tryVerify(function() { return hold.effective }, 10000)
        tryVerify(scanning, 20000, "the scanner is on again")
        tryVerify(function() { return count("nm-scan-requests") > scans }, 20000, "the new daemon scans")
        // The daemon's answer to the scanner's request reaches this client after NetworkManager
        // counted the scan: wait for the answer itself.
        tryVerify(function() { return scanner.effective }, 10000, "the scanner is in effect again")
    }

    function test_3_releasedWhenInactive() {
        // Two scanners for one device share the daemon's switch: one stopping keeps it on.
        scanner2.active = true
        tryVerify(function() { return scanner2.effective }, 10000)
        scanner.active = false
        verify(!scanner.effective)
        verify(scanner2.effective)
        roundTrip()   // a wrong switch-off, sent before this on the same connection, is handled by now
        verify(scanning(), "still on for the other scanner")
        scanner2.active = false
        tryVerify(function() { return !scanning() }, 10000, "the last scanner switched it off")

        hold.active = false
        verify(!hold.effective)
        tryVerify(function() { return daemonHolds()[holdKey] === undefined }, 10000, "released")
        tryVerify(function() { return count("ppd-release-calls") >= 1 }, 10000)
    }

    function test_4_releasedWhenDestroyedAndRemadeWhenChanged() {
        var made = Qt.createQmlObject('import Qsd; QsdProfileHold { profile: "powerSaver"; reason: "dynamic"; applicationId: "org.example.Dyn" }', test)
        tryVerify(function() { return made.effective }, 10000)
        tryVerify(function() { return daemonHolds()["org.example.Dyn:powerSaver"] !== undefined }, 10000)
        made.profile = QsdPower.profile.balanced
        tryVerify(function() { return daemonHolds()["org.example.Dyn:balanced"] !== undefined }, 10000, "held with the new profile")
        tryVerify(function() { return daemonHolds()["org.example.Dyn:powerSaver"] === undefined }, 10000, "the old one released")
        made.destroy()
        tryVerify(function() { return daemonHolds()["org.example.Dyn:balanced"] === undefined }, 10000, "released on destruction")
    }

    function test_5_refusalIsReported() {
        var bad = Qt.createQmlObject('import Qsd; QsdProfileHold { profile: "turbo" }', test)
        tryVerify(function() { return bad.error !== "" }, 10000)
        verify(!bad.effective)
        verify(bad.error.indexOf("-32602") >= 0, bad.error)
        bad.destroy()
    }
}
