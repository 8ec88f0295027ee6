import QtQuick

// A horizontal slider for a volume (0..1; the daemon allows more, the slider stops at 1).
// `moved(value)` while dragging; `value` follows the tree.
Item {
    id: slider
    property real value: 0
    property real level: -1     // a live level under the track (peak meter), -1 for none
    property bool muted: false
    signal moved(real value)

    implicitHeight: 22
    readonly property real shown: area.pressed ? area.dragValue : Math.max(0, Math.min(1, value))

    Rectangle {
        id: track
        anchors.verticalCenter: parent.verticalCenter
        width: parent.width
        height: 6
        radius: 3
        color: Theme.surface
        Rectangle {
            width: track.width * slider.shown
            height: parent.height
            radius: 3
            color: slider.muted ? Theme.dim : Theme.accent
        }
    }
    Rectangle {
        visible: slider.level >= 0
        anchors.top: track.bottom
        anchors.topMargin: 3
        width: track.width * Math.max(0, Math.min(1, slider.level))
        height: 2
        radius: 1
        color: Theme.good
    }
    Rectangle {
        x: track.width * slider.shown - width / 2
        anchors.verticalCenter: parent.verticalCenter
        width: 16
        height: 16
        radius: 8
        color: Theme.text
        border.color: Theme.background
        border.width: 2
    }
    MouseArea {
        id: area
        property real dragValue: 0
        anchors.fill: parent
        function update(mouseX) {
            dragValue = Math.max(0, Math.min(1, mouseX / width))
            slider.moved(dragValue)
        }
        onPressed: mouse => update(mouse.x)
        onPositionChanged: mouse => { if (pressed) update(mouse.x) }
    }
}
