import QtQuick

// One clickable line of a menu: something on the left, a label, a note on the right.
Rectangle {
    id: row
    property alias text: label.text
    property alias note: note.text
    property alias noteColor: note.color
    property bool enabled: true
    property bool emphasized: false
    default property alias leading: lead.data
    signal clicked()

    width: parent ? parent.width : 200
    height: 30
    radius: 7
    color: area.containsMouse && enabled ? Theme.surfaceHover : "transparent"

    Row {
        id: lead
        x: 8
        anchors.verticalCenter: parent.verticalCenter
        spacing: 6
    }
    Label {
        id: label
        x: lead.children.length > 0 ? lead.x + lead.width + 10 : 8
        width: note.x - x - 8
        height: parent.height
        elide: Text.ElideRight
        color: row.enabled ? Theme.text : Theme.dim
        font.bold: row.emphasized
    }
    Label {
        id: note
        x: parent.width - width - 8
        height: parent.height
        color: Theme.dim
        font.pixelSize: Theme.fontSize - 2
    }
    MouseArea {
        id: area
        anchors.fill: parent
        hoverEnabled: true
        enabled: row.enabled
        onClicked: row.clicked()
    }
}
