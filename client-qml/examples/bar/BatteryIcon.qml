import QtQuick

// A battery outline filled to a level of 0..1, with a bolt while charging.
Item {
    id: icon
    property real level: 0
    property bool charging: false
    readonly property color fill: charging ? Theme.good : level < 0.15 ? Theme.bad : level < 0.3 ? Theme.warn : Theme.text

    implicitWidth: 24
    implicitHeight: 12
    Rectangle {
        id: body
        width: parent.width - 3
        height: parent.height
        radius: 2.5
        color: "transparent"
        border.color: Theme.dim
        border.width: 1.2
        Rectangle {
            x: 2; y: 2
            height: parent.height - 4
            width: Math.max(0, (parent.width - 4) * Math.min(1, icon.level))
            radius: 1.2
            color: icon.fill
        }
    }
    Rectangle {
        x: body.width + 0.5
        anchors.verticalCenter: parent.verticalCenter
        width: 2; height: 5; radius: 1
        color: Theme.dim
    }
    Text {
        anchors.centerIn: body
        visible: icon.charging
        text: "\u26a1"
        color: Theme.background
        font.pixelSize: 10
        font.family: Theme.font
    }
}
