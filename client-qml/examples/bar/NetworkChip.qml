import QtQuick
import Qsd

// The connection in use: a wired link with its speed, else the Wi-Fi network with its signal.
Chip {
    id: chip
    objectName: "network"
    // Networking.devices.values.find(...) in Quickshell: these re-evaluate when devices come and
    // go or the fields they read change, not on every change under /network.
    readonly property var devices: Qsd.network?.devices?.values ?? []
    readonly property var wired: devices.find(d => QsdNetwork.deviceType.wired === d.type && d.connected) ?? null
    readonly property var wifi: devices.find(d => QsdNetwork.deviceType.wifi === d.type) ?? null
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
