pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Window
import Qsd

// The popups: the notifications that may pop up (popup is false for those Do-Not-Disturb held
// back), newest first, in a column at the top right under the bar. A window of its own that
// takes no focus; in a Quickshell config, a PanelWindow anchored to the top right does the same.
Window {
    id: popups
    objectName: "popups"
    required property Window bar
    property int maximum: 4
    readonly property var shown: (Qsd.notifications?.items?.values ?? []).filter(n => n.popup === true)
        .sort((a, b) => b.id - a.id).slice(0, popups.maximum)

    transientParent: bar
    flags: Qt.Tool | Qt.FramelessWindowHint | Qt.WindowDoesNotAcceptFocus | Qt.WindowStaysOnTopHint
    color: "transparent"
    width: 380
    height: Math.max(1, column.implicitHeight)
    x: bar.x + bar.width - width - 8
    y: bar.y + bar.height + 8
    visible: shown.length > 0

    Column {
        id: column
        width: popups.width
        spacing: 8
        Repeater {
            model: popups.shown
            delegate: NotificationCard {
                required property var modelData
                notification: modelData
            }
        }
    }
}
