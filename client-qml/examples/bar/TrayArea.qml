pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The tray: one icon per StatusNotifierItem (passive ones hidden). Click activates, middle-click
// is the secondary action, right-click (or any click on a menu-only item) opens its menu, the
// wheel scrolls.
Row {
    id: area
    objectName: "tray"
    signal menuRequested(string item, Item icon)
    // In Quickshell's order (category, then id), as /tray/order has it.
    readonly property var items: Qsd.model("/tray/items", "/tray/order")
    // The key of the first shown item that has a menu ("" when none).
    readonly property string firstMenuItem: Qsd.keyOf((Qsd.tray?.items?.values ?? [])
        .find(i => i.hasMenu === true && i.status !== passive) ?? null)
    // A constant in a property of its own: Qt 6.4's qmllint does not look inside the lambdas.
    readonly property string passive: QsdTray.itemStatus.passive

    function scroll(item: string, dx: real, dy: real) {
        Qsd.call("tray.scroll", {
            item: item,
            delta: Math.round(dy !== 0 ? dy : dx),
            orientation: dy !== 0 ? QsdTray.scrollOrientation.vertical : QsdTray.scrollOrientation.horizontal
        })
    }

    spacing: 8
    visible: Qsd.tray?.available === true && items.count > 0

    Repeater {
        model: area.items
        delegate: Item {
            id: icon
            required property var model
            readonly property var item: icon.model.node
            width: 20
            height: 20
            anchors.verticalCenter: parent ? parent.verticalCenter : undefined
            // Passive: the item says it may be hidden. Any other status, even one the
            // specification does not name, is shown.
            visible: icon.item?.status !== area.passive

            Image {
                objectName: "trayIcon"
                anchors.fill: parent
                source: icon.item?.icon ?? ""
                sourceSize.width: 40
                sourceSize.height: 40
                smooth: true
                mipmap: true
                asynchronous: true
            }
            // An overlay qsd could not compose into the icon (an SVG): drawn over it.
            Image {
                anchors.right: parent.right
                anchors.bottom: parent.bottom
                width: 10
                height: 10
                visible: source !== ""
                source: icon.item?.overlayIcon ?? ""
                sourceSize.width: 20
                sourceSize.height: 20
            }
            Rectangle {
                // Needs attention: a dot under the icon.
                visible: QsdTray.itemStatus.needsAttention === icon.item?.status
                anchors.horizontalCenter: parent.horizontalCenter
                anchors.top: parent.bottom
                anchors.topMargin: 1
                width: 4
                height: 4
                radius: 2
                color: Theme.warn
            }
            MouseArea {
                anchors.fill: parent
                acceptedButtons: Qt.LeftButton | Qt.RightButton | Qt.MiddleButton
                onClicked: mouse => {
                    var at = icon.mapToGlobal(mouse.x, mouse.y)
                    var where = { item: icon.model.id, x: Math.round(at.x), y: Math.round(at.y) }
                    if (mouse.button === Qt.RightButton || icon.item?.onlyMenu === true) {
                        // Without a DBusMenu, the application shows its own menu.
                        if (icon.item?.hasMenu === true) area.menuRequested(icon.model.id, icon)
                        else Qsd.call("tray.contextMenu", where)
                    } else if (mouse.button === Qt.MiddleButton) {
                        Qsd.call("tray.secondaryActivate", where)
                    } else {
                        // An item without Activate (libayatana-appindicator's) answers
                        // handled: false; its menu is what a click on it opens.
                        Qsd.call("tray.activate", where, (err, result) => {
                            if (!err && result.handled === false && icon.item?.hasMenu === true)
                                area.menuRequested(icon.model.id, icon)
                        })
                    }
                }
                onWheel: wheel => area.scroll(icon.model.id, wheel.angleDelta.x, wheel.angleDelta.y)
            }
        }
    }
}
