import QtQuick
import Qsd

// The default adapter: off, blocked, or the connected device with its battery.
Chip {
    id: chip
    objectName: "bluetooth"
    // Bluetooth.defaultAdapter in Quickshell.
    readonly property string adapterKey: Qsd.bluetooth?.defaultAdapter ?? ""
    readonly property var adapter: adapterKey !== "" ? (Qsd.bluetooth?.adapters?.get(adapterKey) ?? null) : null
    readonly property var connected: (Qsd.bluetooth?.devices?.values ?? []).filter(d => d.connected && d.adapter === adapterKey)
    readonly property var first: connected.length > 0 ? connected[0] : null
    readonly property bool on: QsdBluetooth.adapterState.enabled === (adapter?.state ?? "")
    readonly property bool blocked: QsdBluetooth.adapterState.blocked === (adapter?.state ?? "")

    visible: Qsd.bluetooth?.available === true && adapter !== null

    BluetoothIcon {
        anchors.verticalCenter: parent.verticalCenter
        color: chip.blocked ? Theme.bad : chip.on ? Theme.accent : Theme.dim
    }
    Label {
        text: chip.first ? (chip.first.alias ?? chip.first.address)
            : chip.blocked ? "Blocked" : chip.on ? "On" : "Off"
        color: chip.first ? Theme.text : Theme.dim
    }
    Label {
        visible: chip.connected.length > 1
        color: Theme.dim
        text: "+" + (chip.connected.length - 1)
    }
    BatteryIcon {
        visible: typeof chip.first?.battery === "number"
        anchors.verticalCenter: parent.verticalCenter
        level: chip.first?.battery ?? 0
    }
}
