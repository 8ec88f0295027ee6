import QtQuick
import QtTest
import Qsd

// /power from a real qsd with its UPower backend, against python-dbusmock's UPower (started by
// run_services.py); driver.py changes the mock and the bindings must follow.
TestCase {
    id: test
    name: "UPower"

    readonly property var display: Qsd.power?.displayDevice
    readonly property var displayPercentage: display?.percentage
    readonly property var batteryPercentage: Qsd.power?.devices?.BAT0?.percentage
    readonly property var batteryState: Qsd.power?.devices?.BAT0?.state
    property var devices: Qsd.model("/power/devices")

    function step(name) {
        var r = QsdDaemon.drive("battery", [name])
        compare(r.code, 0, r.output)
    }

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
        tryVerify(function() { return Qsd.power?.available === true }, 10000, "/power available")
    }

    function test_1_batteryAsBindingAndModel() {
        tryCompare(test, "displayPercentage", 0.735, 10000)
        compare(display.state, QsdPower.deviceState.discharging)
        compare(display.timeToEmpty, 7200)
        compare(Qsd.power.onBattery, true)
        tryCompare(test, "batteryPercentage", 0.735, 10000)
        tryCompare(devices, "count", 1)
        compare(devices.idAt(0), "BAT0")
        compare(Qsd.node("/power/devices/BAT0"), Qsd.power.devices.BAT0)
    }

    function test_2_changeFollows() {
        step("charge")
        tryCompare(test, "batteryPercentage", 0.42, 10000)
        tryCompare(test, "batteryState", QsdPower.deviceState.charging, 10000)
    }

    function test_3_deviceRemovedAndAdded() {
        var removed = { count: 0 }
        var conn = function() { removed.count++ }
        devices.rowsRemoved.connect(conn)
        step("unplug")
        tryCompare(devices, "count", 0, 10000)
        compare(removed.count, 1)
        compare(batteryPercentage, undefined)
        step("plug")
        tryCompare(devices, "count", 1, 10000)
        tryCompare(test, "batteryPercentage", 0.5, 10000)
        devices.rowsRemoved.disconnect(conn)
    }
}
