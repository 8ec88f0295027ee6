import QtQuick
import QtTest
import Qsd

// The bluetooth domain through the QML module, against the bluez5 mock (run_services.py): the
// adapter and its devices with the generated constants, a discovery claim made by an element
// (again after qsd is killed with SIGKILL, released when inactive), and a question of qsd's
// pairing agent answered with Qsd.call.
TestCase {
    id: test
    name: "Bluetooth"

    QsdBluetoothDiscovery { id: discovery; adapter: Qsd.bluetooth?.defaultAdapter ?? ""; active: false }

    readonly property string headset: "hci0_00_1B_66_A1_B2_C3"
    readonly property string phonePath: "/org/bluez/hci0/dev_3C_28_6D_90_11_5E"

    function daemonValue(path) {
        var r = QsdDaemon.rpc("tree.get", { path: path })
        return r.result ? r.result.value : undefined
    }
    function count(action) { return parseInt(QsdDaemon.drive(action).output) }

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
        tryVerify(function() { return Qsd.bluetooth?.available === true }, 15000, "the bluetooth domain")
    }

    function test_1_theDomain() {
        compare(Qsd.bluetooth.defaultAdapter, "hci0")
        var adapter = Qsd.bluetooth.adapters.get("hci0")
        compare(adapter.state, QsdBluetooth.adapterState.enabled)
        compare(Qsd.bluetooth.devices.count, 4)
        var headset = Qsd.bluetooth.devices.get(test.headset)
        compare(headset.state, QsdBluetooth.deviceState.connected)
        compare(headset.battery, 0.8)
        compare(headset.alias, "WH-1000XM4")
        verify(headset.paired)
        compare(Qsd.keyOf(headset), test.headset)
    }

    function test_2_discoveryIsClaimedByTheElement() {
        compare(count("bt-discovery-starts"), 0)
        discovery.active = true
        tryVerify(function() { return discovery.effective }, 10000, "discovery claimed")
        verify(daemonValue("/bluetooth/adapters/hci0/discovering") === true)
        compare(count("bt-discovery-starts"), 1)
        // A new daemon knows nothing of the old one's claims: the element claims again.
        var epoch = Qsd.epoch
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000, "disconnect noticed")
        verify(!discovery.effective)
        // What bluetoothd does when an agent's owner leaves the bus.
        compare(QsdDaemon.drive("bt-forget-agents").code, 0)
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected && Qsd.epoch !== epoch }, 15000, "reconnected")
        tryVerify(function() { return discovery.effective }, 20000, "claimed again")
        compare(count("bt-discovery-starts"), 2)
        discovery.active = false
        tryVerify(function() { return daemonValue("/bluetooth/adapters/hci0/discovering") === false }, 10000, "released")
        compare(count("bt-discovery-stops"), 1)
    }

    function test_3_anAgentQuestionIsAnswered() {
        tryVerify(function() { return Qsd.bluetooth?.agent?.isDefault === true }, 15000, "qsd is the agent")
        var token = QsdDaemon.drive("bt-ask", [test.phonePath, "42"]).output.trim()
        tryVerify(function() { return (Qsd.bluetooth.agent.requests.count ?? 0) === 1 }, 10000, "the question")
        var request = Qsd.bluetooth.agent.requests.values[0]
        compare(request.kind, QsdBluetooth.agentRequestKind.requestConfirmation)
        compare(request.passkey, "000042")
        compare(request.device, "hci0_3C_28_6D_90_11_5E")
        var answered = null
        Qsd.call("bluetooth.answer", { request: request.id, accept: true }, function(err, result) { answered = err ?? result })
        tryVerify(function() { return answered !== null }, 10000)
        compare(answered.accepted, true)
        tryVerify(function() { return QsdDaemon.drive("bt-answer", [token]).output.trim() === "ok" }, 10000, "BlueZ got the answer")
        tryVerify(function() { return Qsd.bluetooth.agent.requests.count === 0 }, 10000)
    }
}
