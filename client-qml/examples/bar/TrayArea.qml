pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The tray: one icon per StatusNotifierItem. Click activates, middle-click is the secondary
// action, right-click (or any click on a menu-only item) opens its menu, the wheel scrolls.
Row {
    id: area
    objectName: "tray"
    signal menuRequested(string item, Item icon)
    readonly property var items: Qsd.model("/tray/items")

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
            visible: icon.item?.status !== "passive"

            Image {
                anchors.fill: parent
                source: icon.item?.icon ?? ""
                sourceSize.width: 20
                sourceSize.height: 20
                smooth: true
                asynchronous: true
            }
            MouseArea {
                anchors.fill: parent
                acceptedButtons: Qt.LeftButton | Qt.RightButton | Qt.MiddleButton
                onClicked: mouse => {
                    var at = icon.mapToGlobal(mouse.x, mouse.y)
                    if (mouse.button === Qt.RightButton || icon.item?.onlyMenu === true)
                        area.menuRequested(icon.model.id, icon)
                    else if (mouse.button === Qt.MiddleButton)
                        Qsd.call("tray.secondaryActivate", { item: icon.model.id, x: Math.round(at.x), y: Math.round(at.y) })
                    else
                        Qsd.call("tray.activate", { item: icon.model.id, x: Math.round(at.x), y: Math.round(at.y) })
                }
                onWheel: wheel => Qsd.call("tray.scroll", {
                    item: icon.model.id,
                    delta: wheel.angleDelta.y !== 0 ? wheel.angleDelta.y : wheel.angleDelta.x,
                    orientation: wheel.angleDelta.y !== 0 ? "vertical" : "horizontal"
                })
            }
        }
    }
}
