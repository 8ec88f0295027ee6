import QtQuick

// A rounded, clickable piece of the bar holding a row of content.
Rectangle {
    id: chip
    default property alias content: row.data
    property bool highlighted: false
    signal clicked(var mouse)
    signal wheel(var wheel)

    implicitHeight: Theme.chipHeight
    implicitWidth: row.implicitWidth + 20
    radius: height / 2
    color: area.containsMouse || highlighted ? Theme.surfaceHover : Theme.surface

    Row {
        id: row
        anchors.centerIn: parent
        spacing: 6
    }
    MouseArea {
        id: area
        anchors.fill: parent
        hoverEnabled: true
        acceptedButtons: Qt.LeftButton | Qt.RightButton | Qt.MiddleButton
        onClicked: mouse => chip.clicked(mouse)
        onWheel: wheel => chip.wheel(wheel)
    }
}
