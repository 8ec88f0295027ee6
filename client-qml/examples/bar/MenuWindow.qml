import QtQuick
import QtQuick.Window

// A menu under a chip of the bar: a popup window (an xdg_popup under Wayland), shown while
// `open` is true. In a Quickshell config, a PopupWindow anchored to the chip does the same.
Window {
    id: menu
    required property Window bar
    required property Item anchorItem
    property bool open: false
    property string title: ""
    default property alias content: column.data
    signal dismissed()

    transientParent: bar
    flags: Qt.Popup | Qt.FramelessWindowHint
    color: "transparent"
    width: Theme.menuWidth
    height: frame.height
    visible: open

    onOpenChanged: {
        if (!open) return
        // Under the chip, kept inside the bar.
        var at = anchorItem.mapToItem(null, 0, 0)
        x = bar.x + Math.max(6, Math.min(at.x + anchorItem.width - width, bar.width - width - 6))
        y = bar.y + bar.height + 4
    }
    // The window system closes a popup on a click elsewhere.
    onVisibleChanged: if (!visible && open) dismissed()

    Rectangle {
        id: frame
        width: menu.width
        height: column.implicitHeight + 24
        radius: 12
        color: Theme.background
        border.color: Theme.border

        Column {
            id: column
            x: 12
            y: 12
            width: parent.width - 24
            spacing: 2

            Label {
                visible: menu.title !== ""
                text: menu.title
                font.bold: true
                height: 26
            }
        }
    }
}
