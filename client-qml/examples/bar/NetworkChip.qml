import QtQuick
import Qsd

// The connection in use: a wired link with its speed, else the Wi-Fi network with its signal.
Chip {
    id: chip
    objectName: "network"
    // Networking.devices.values.find(...) in Quickshell: these re-evaluate when devices come and
    // go or the fields they read change, not on every change under /network.
    readonly property var devices: Qsd.network?.devices?.values ?? []
    readonly property var wired: devices.find(d => d.type === wiredType && d.connected) ?? null
    readonly property var wifi: devices.find(d => d.type === wifiType) ?? null
    // Constants in properties of their own: Qt 6.4's qmllint does not look inside the lambdas.
    readonly property string wiredType: QsdNetwork.deviceType.wired
    readonly property string wifiType: QsdNetwork.deviceType.wifi
    readonly property var active: wifi?.networks?.values.find(n => n.connected) ?? null

    visible: Qsd.network?.available === true

    Label {
        visible: chip.wired !== null
        text: "\u21c5 " + (chip.wired?.name ?? "")
    }
    Label {
        visible: chip.wired !== null && (chip.wired?.linkSpeed ?? 0) > 0
        color: Theme.dim
        text: (chip.wired?.linkSpeed ?? 0) >= 1000 ? (chip.wired.linkSpeed / 1000) + " Gb/s" : (chip.wired?.linkSpeed ?? 0) + " Mb/s"
    }
    SignalBars {
        visible: chip.wired === null
        anchors.verticalCenter: parent.verticalCenter
        strength: chip.active?.signalStrength ?? 0
        color: chip.active ? Theme.text : Theme.dim
    }
    Label {
        visible: chip.wired === null
        text: chip.active ? chip.active.name
            : chip.wifi && Qsd.network?.wifiEnabled === true ? "Disconnected"
            : chip.wifi ? "Wi-Fi off" : "Offline"
        color: chip.active ? Theme.text : Theme.dim
    }
    Label {
        visible: chip.wired === null && chip.active !== null
        color: Theme.dim
        text: Math.round((chip.active?.signalStrength ?? 0) * 100) + "%"
    }
}
