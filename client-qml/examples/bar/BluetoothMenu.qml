pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// Bluetooth: the adapter's switch, the pairing agent's questions (BluetoothPrompt), the paired
// devices with their battery (a click connects or disconnects), and "Pair new device": the
// devices discovery finds, while that list is open.
MenuWindow {
    id: menu
    title: "Bluetooth"
    readonly property string adapterKey: Qsd.bluetooth?.defaultAdapter ?? ""
    readonly property var adapter: adapterKey !== "" ? (Qsd.bluetooth?.adapters?.get(adapterKey) ?? null) : null
    readonly property var devices: (Qsd.bluetooth?.devices?.values ?? []).filter(d => d.adapter === adapterKey)
    readonly property var paired: devices.filter(d => d.paired)
        .sort((a, b) => (b.connected - a.connected) || (a.alias ?? "").localeCompare(b.alias ?? ""))
    // Nearest first; a device that gives no name is listed by its address.
    readonly property var found: devices.filter(d => !d.paired)
        .sort((a, b) => (b.rssi ?? -999) - (a.rssi ?? -999))
    readonly property var requests: Qsd.bluetooth?.agent?.requests?.values ?? []
    readonly property bool on: QsdBluetooth.adapterState.enabled === (adapter?.state ?? "")
    readonly property string connectingState: QsdBluetooth.deviceState.connecting
    readonly property string disconnectingState: QsdBluetooth.deviceState.disconnecting
    property bool pairNew: false

    onOpenChanged: if (!open) pairNew = false

    // Discovery runs while the list of new devices is open (again after a daemon restart), and
    // stops when it closes: the daemon counts every shell's claim.
    QsdBluetoothDiscovery { adapter: menu.adapterKey; active: menu.open && menu.pairNew && menu.on }

    function stateText(state: string): string {
        if (QsdBluetooth.adapterState.blocked === state) return "Blocked by rfkill"
        if (QsdBluetooth.adapterState.enabling === state) return "Turning on…"
        if (QsdBluetooth.adapterState.disabling === state) return "Turning off…"
        if (QsdBluetooth.adapterState.enabled === state) return "Bluetooth is on"
        return "Bluetooth is off"
    }
    function deviceNote(d: var): string {
        if (d.state === connectingState) return "connecting…"
        if (d.state === disconnectingState) return "disconnecting…"
        var battery = typeof d.battery === "number" ? Math.round(d.battery * 100) + "%  " : ""
        return battery + (d.connected ? "connected" : "")
    }
    function toggle(d: var) {
        var key = Qsd.keyOf(d)
        Qsd.call(d.connected ? "bluetooth.disconnect" : "bluetooth.connect", { device: key })
    }

    MenuRow {
        text: menu.stateText(menu.adapter?.state ?? "")
        note: menu.on ? "turn off" : "turn on"
        noteColor: Theme.accent
        onClicked: Qsd.call("bluetooth.setEnabled", { adapter: menu.adapterKey, enabled: !menu.on })
    }

    Repeater {
        model: menu.requests
        delegate: Column {
            id: asked
            required property var modelData
            width: menu.width - 24
            Rectangle { width: parent.width; height: 1; color: Theme.border }
            BluetoothPrompt { request: asked.modelData }
        }
    }

    Rectangle { width: parent.width; height: 1; color: Theme.border; visible: menu.paired.length > 0 }
    Repeater {
        model: menu.paired
        delegate: MenuRow {
            id: row
            required property var modelData
            text: row.modelData.alias ?? row.modelData.address
            emphasized: row.modelData.connected
            note: menu.deviceNote(row.modelData)
            noteColor: row.modelData.connected ? Theme.good : Theme.dim
            Image {
                visible: row.modelData.iconUrl !== null
                width: 18
                height: 18
                sourceSize.width: 36
                sourceSize.height: 36
                source: row.modelData.iconUrl ?? ""
                anchors.verticalCenter: parent.verticalCenter
            }
            onClicked: menu.toggle(row.modelData)
        }
    }

    Rectangle { width: parent.width; height: 1; color: Theme.border }
    MenuRow {
        text: "Pair new device"
        enabled: menu.on
        note: !menu.pairNew ? "›" : menu.adapter?.discovering === true ? "searching…" : ""
        noteColor: menu.pairNew ? Theme.accent : Theme.dim
        onClicked: menu.pairNew = !menu.pairNew
    }
    Repeater {
        model: menu.pairNew ? menu.found : []
        delegate: MenuRow {
            id: newRow
            required property var modelData
            text: newRow.modelData.alias ?? newRow.modelData.address
            note: newRow.modelData.pairing ? "pairing…" : "pair"
            noteColor: Theme.accent
            onClicked: Qsd.call("bluetooth.pair", { device: Qsd.keyOf(newRow.modelData) })
        }
    }
    Label {
        visible: menu.pairNew && menu.found.length === 0
        leftPadding: 8
        height: 26
        color: Theme.dim
        text: menu.adapter?.discovering === true ? "Looking for devices…" : "No devices found"
    }
}
