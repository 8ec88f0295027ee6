pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The offered power profiles as radio rows; who holds one, and why performance is degraded.
MenuWindow {
    id: menu
    title: "Power profile"
    readonly property var profiles: Qsd.power?.profiles ?? null
    readonly property var holds: profiles?.holds?.values ?? []

    Repeater {
        model: menu.profiles?.profiles ?? []
        delegate: MenuRow {
            id: row
            required property string modelData
            readonly property bool selected: row.modelData === menu.profiles?.profile
            text: Names.profile(row.modelData)
            emphasized: selected
            note: QsdPower.profile.performance === row.modelData && QsdPower.performanceDegradationReason.none !== menu.profiles?.degradationReason
                  ? "degraded" : ""
            Rectangle {
                width: 14
                height: 14
                radius: 7
                color: "transparent"
                border.color: row.selected ? Theme.accent : Theme.dim
                border.width: 1.5
                Rectangle {
                    anchors.centerIn: parent
                    visible: row.selected
                    width: 6
                    height: 6
                    radius: 3
                    color: Theme.accent
                }
            }
            onClicked: Qsd.call("power.setProfile", { profile: row.modelData })
        }
    }
    Repeater {
        model: menu.holds
        delegate: Label {
            required property var modelData
            width: parent ? parent.width : 0
            leftPadding: 8
            height: 22
            elide: Text.ElideRight
            color: Theme.dim
            font.pixelSize: Theme.fontSize - 2
            text: "Held by " + modelData.applicationId + (modelData.reason ? " (" + modelData.reason + ")" : "")
        }
    }
}
