pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The notification centre under the bell: Do-Not-Disturb, the latest closed notifications
// (newest first), and buttons that dismiss what is shown and clear the history.
MenuWindow {
    id: menu
    title: "Notifications"
    readonly property var notifications: Qsd.notifications ?? null
    readonly property bool dnd: notifications?.dnd === true
    readonly property int shownCount: notifications?.items?.count ?? 0
    // history's values, newest closed first; a few of them.
    readonly property var recent: (notifications?.history?.values ?? []).slice()
        .sort((a, b) => Date.parse(b.closedAt) - Date.parse(a.closedAt)).slice(0, 5)

    MenuRow {
        objectName: "dndRow"
        text: "Do not disturb"
        note: menu.dnd ? "only critical ones pop up" : ""
        Rectangle {
            objectName: "dndSwitch"
            width: 28
            height: 16
            radius: 8
            color: menu.dnd ? Theme.accent : Theme.surface
            border.color: menu.dnd ? Theme.accent : Theme.dim
            Rectangle {
                x: menu.dnd ? parent.width - width - 3 : 3
                anchors.verticalCenter: parent.verticalCenter
                width: 10
                height: 10
                radius: 5
                color: menu.dnd ? Theme.background : Theme.dim
            }
        }
        onClicked: Qsd.call("notifications.setDnd", { enabled: !menu.dnd })
    }
    Label {
        visible: menu.recent.length > 0
        text: "Earlier"
        color: Theme.dim
        font.pixelSize: Theme.fontSize - 2
        height: 24
        leftPadding: 8
    }
    Repeater {
        model: menu.recent
        delegate: MenuRow {
            id: row
            required property var modelData
            text: (row.modelData.appName !== "" ? row.modelData.appName + ": " : "") + row.modelData.summary
            note: Qt.formatTime(new Date(Date.parse(row.modelData.closedAt)), "hh:mm")
            Item {
                width: 16
                height: 16
                Image {
                    anchors.fill: parent
                    visible: source !== ""
                    source: row.modelData.image ?? row.modelData.appIcon ?? ""
                    sourceSize.width: 32
                    sourceSize.height: 32
                    fillMode: Image.PreserveAspectFit
                    asynchronous: true
                }
                // Without an image: a dot in the colour of its urgency.
                Rectangle {
                    visible: (row.modelData.image ?? row.modelData.appIcon ?? null) === null
                    anchors.centerIn: parent
                    width: 8
                    height: 8
                    radius: 4
                    color: QsdNotifications.urgency.critical === row.modelData.urgency ? Theme.bad : Theme.dim
                }
            }
            onClicked: Qsd.call("notifications.removeFromHistory", { id: row.modelData.id })
        }
    }
    MenuRow {
        visible: menu.shownCount > 0
        text: "Dismiss all"
        note: menu.shownCount + " shown"
        onClicked: Qsd.call("notifications.dismissAll", {})
    }
    MenuRow {
        enabled: menu.recent.length > 0
        text: "Clear history"
        onClicked: Qsd.call("notifications.clearHistory", {})
    }
}
