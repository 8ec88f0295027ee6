import QtQuick
import Qsd

// The power profile (power-profiles-daemon); a click opens the profile menu.
Chip {
    id: chip
    objectName: "profile"
    readonly property var profiles: Qsd.power?.profiles ?? null
    readonly property string current: profiles?.profile ?? ""

    visible: profiles?.available === true

    Rectangle {
        anchors.verticalCenter: parent.verticalCenter
        width: 8
        height: 8
        radius: 4
        color: Names.profileColor(chip.current)
    }
    Label { text: Names.profile(chip.current) }
}
