import QtQuick
import Qsd

// The bell: how many notifications are shown, and Do-Not-Disturb (the bell struck through).
// Click for the notification centre; middle-click turns Do-Not-Disturb on or off.
Chip {
    id: chip
    objectName: "notifications"
    readonly property var notifications: Qsd.notifications ?? null
    readonly property int count: notifications?.items?.count ?? 0
    readonly property bool dnd: notifications?.dnd === true

    visible: notifications?.available === true

    BellIcon {
        anchors.verticalCenter: parent.verticalCenter
        muted: chip.dnd
        color: chip.dnd ? Theme.dim : Theme.text
    }
    Label {
        visible: chip.count > 0
        text: chip.count
        color: chip.dnd ? Theme.dim : Theme.accent
        font.bold: true
    }
}
