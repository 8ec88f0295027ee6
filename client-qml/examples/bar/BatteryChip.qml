import QtQuick
import Qsd

// The battery: level, charging state and the time left (UPower's display device).
Chip {
    id: chip
    objectName: "battery"
    readonly property var device: Qsd.power?.displayDevice ?? null
    readonly property real level: device?.percentage ?? 0
    readonly property bool charging: QsdPower.deviceState.charging === device?.state
    readonly property bool full: QsdPower.deviceState.fullyCharged === device?.state

    readonly property string remaining: {
        if (charging && (device?.timeToFull ?? 0) > 0) return Names.duration(device.timeToFull) + " to full"
        if (!charging && !full && (device?.timeToEmpty ?? 0) > 0) return Names.duration(device.timeToEmpty) + " left"
        return full ? "full" : ""
    }

    visible: Qsd.power?.available === true && device !== null && device.isPresent === true

    BatteryIcon {
        anchors.verticalCenter: parent.verticalCenter
        level: chip.level
        charging: chip.charging
    }
    Label { text: Math.round(chip.level * 100) + "%" }
    Label {
        visible: chip.remaining !== ""
        text: chip.remaining
        color: Theme.dim
    }
}
