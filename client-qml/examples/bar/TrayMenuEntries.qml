pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The entries of one level of a DBusMenu ({id, label, enabled, visible, type, toggleType,
// toggleState, icon, shortcut, submenu, children}); a submenu's entries follow it, indented,
// while it is open. Labels come without DBusMenu's "_" access-key marks (the daemon strips them).
Column {
    id: level
    // Plain properties, not required ones: a Loader sets them after creating a submenu's level.
    property var menu: null          // the TrayMenu: expanded, toggle(), activate()
    property var entries: []
    property int depth: 0
    // Labels line up: a column for check and radio marks when any entry of the level has one,
    // and one for icons when any has an icon.
    readonly property bool marks: (entries ?? []).some(e => e.toggleType === checkmark || e.toggleType === radio)
    // Constants in properties of their own: Qt 6.4's qmllint does not look inside the lambdas.
    readonly property string checkmark: QsdTray.menuEntryToggleType.checkmark
    readonly property string radio: QsdTray.menuEntryToggleType.radio
    readonly property bool icons: (entries ?? []).some(e => (e.icon ?? "") !== "")

    Repeater {
        model: level.entries
        delegate: Column {
            id: entry
            required property var modelData
            readonly property bool separator: QsdTray.menuEntryType.separator === entry.modelData.type
            readonly property bool submenu: entry.modelData.submenu === true
            readonly property bool open: entry.submenu && (level.menu?.expanded ?? {})[entry.modelData.id] === true
            readonly property int toggleState: entry.modelData.toggleState ?? -1
            width: level.width
            visible: entry.modelData.visible !== false

            Rectangle {
                visible: entry.separator
                width: parent.width
                height: 9
                color: "transparent"
                Rectangle { anchors.centerIn: parent; width: parent.width - 8; height: 1; color: Theme.border }
            }
            MenuRow {
                objectName: "trayMenuEntry"
                visible: !entry.separator
                width: parent.width
                enabled: entry.modelData.enabled !== false
                text: entry.modelData.label ?? ""
                note: entry.submenu ? (entry.open ? "\u25be" : "\u25b8") : (entry.modelData.shortcut ?? "").replace("Control", "Ctrl")
                Item {
                    // Indent, then the checkbox or radio mark when the entry has one.
                    width: level.depth * 14 + (level.marks ? 14 : 0)
                    height: 14
                    anchors.verticalCenter: parent.verticalCenter
                    Rectangle {
                        objectName: "checkmark"
                        visible: entry.modelData.toggleType === level.checkmark
                        x: level.depth * 14
                        width: 14
                        height: 14
                        radius: 3
                        color: entry.toggleState === 1 ? Theme.accent : "transparent"
                        border.color: entry.toggleState === 1 ? Theme.accent : Theme.dim
                        border.width: 1.5
                        Label {
                            anchors.centerIn: parent
                            visible: entry.toggleState === 1
                            text: "\u2713"
                            color: Theme.background
                            font.pixelSize: 11
                            font.bold: true
                        }
                    }
                    Rectangle {
                        objectName: "radio"
                        visible: entry.modelData.toggleType === level.radio
                        x: level.depth * 14
                        width: 14
                        height: 14
                        radius: 7
                        color: "transparent"
                        border.color: entry.toggleState === 1 ? Theme.accent : Theme.dim
                        border.width: 1.5
                        Rectangle {
                            anchors.centerIn: parent
                            visible: entry.toggleState === 1
                            width: 6
                            height: 6
                            radius: 3
                            color: Theme.accent
                        }
                    }
                }
                Image {
                    objectName: "trayMenuIcon"
                    visible: level.icons
                    anchors.verticalCenter: parent.verticalCenter
                    width: 16
                    height: 16
                    source: entry.modelData.icon ?? ""
                    sourceSize.width: 32
                    sourceSize.height: 32
                    opacity: entry.modelData.enabled !== false ? 1 : 0.45
                    smooth: true
                    mipmap: true
                }
                onClicked: entry.submenu ? level.menu.toggle(entry.modelData.id) : level.menu.activate(entry.modelData.id)
            }
            Loader {
                // A component cannot contain itself; a Loader can.
                active: entry.open
                visible: active
                width: parent.width
                source: "TrayMenuEntries.qml"
                onLoaded: {
                    item.menu = level.menu
                    item.entries = Qt.binding(() => entry.modelData.children ?? [])
                    item.depth = level.depth + 1
                }
            }
        }
    }
}
