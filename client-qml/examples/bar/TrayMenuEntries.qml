pragma ComponentBehavior: Bound
import QtQuick

// The entries of one level of a DBusMenu ({id, label, enabled, visible, type, toggleType,
// toggleState, children}); a submenu's entries follow it, indented, while it is open.
Column {
    id: level
    // Plain properties, not required ones: a Loader sets them after creating a submenu's level.
    property var menu: null          // the TrayMenu: expanded, toggle(), activate()
    property var entries: []
    property int depth: 0
    // Labels line up: a column for check and radio marks when any entry of the level has one.
    readonly property bool marks: (entries ?? []).some(e => e.toggleType === "checkmark" || e.toggleType === "radio")

    Repeater {
        model: level.entries
        delegate: Column {
            id: entry
            required property var modelData
            readonly property bool submenu: (entry.modelData.children ?? []).length > 0
            readonly property bool open: entry.submenu && (level.menu?.expanded ?? {})[entry.modelData.id] === true
            width: level.width
            visible: entry.modelData.visible !== false

            Rectangle {
                visible: entry.modelData.type === "separator"
                width: parent.width
                height: 9
                color: "transparent"
                Rectangle { anchors.centerIn: parent; width: parent.width - 8; height: 1; color: Theme.border }
            }
            MenuRow {
                visible: entry.modelData.type !== "separator"
                width: parent.width
                enabled: entry.modelData.enabled !== false
                text: Names.menuLabel(entry.modelData.label)
                note: entry.submenu ? (entry.open ? "\u25be" : "\u25b8") : ""
                Item {
                    // Indent, then the checkbox or radio mark when the entry has one.
                    width: level.depth * 14 + (level.marks ? 14 : 0)
                    height: 14
                    Rectangle {
                        visible: entry.modelData.toggleType === "checkmark"
                        x: level.depth * 14
                        width: 14
                        height: 14
                        radius: 3
                        color: entry.modelData.toggleState === 1 ? Theme.accent : "transparent"
                        border.color: entry.modelData.toggleState === 1 ? Theme.accent : Theme.dim
                        border.width: 1.5
                        Label {
                            anchors.centerIn: parent
                            visible: entry.modelData.toggleState === 1
                            text: "\u2713"
                            color: Theme.background
                            font.pixelSize: 11
                            font.bold: true
                        }
                    }
                    Rectangle {
                        visible: entry.modelData.toggleType === "radio"
                        x: level.depth * 14
                        width: 14
                        height: 14
                        radius: 7
                        color: "transparent"
                        border.color: entry.modelData.toggleState === 1 ? Theme.accent : Theme.dim
                        border.width: 1.5
                        Rectangle {
                            anchors.centerIn: parent
                            visible: entry.modelData.toggleState === 1
                            width: 6
                            height: 6
                            radius: 3
                            color: Theme.accent
                        }
                    }
                }
                onClicked: entry.submenu ? level.menu.toggle(entry.modelData) : level.menu.activate(entry.modelData)
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
