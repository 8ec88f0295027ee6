import QtQuick

// A password entry with a button; `accepted(text)` on Enter or on the button.
Row {
    id: field
    property alias text: input.text
    property string placeholder: "Password"
    signal accepted(string text)
    function focusInput() { input.forceActiveFocus() }

    spacing: 6
    Rectangle {
        width: field.width - button.width - field.spacing
        height: 30
        radius: 7
        color: Theme.surface
        border.color: input.activeFocus ? Theme.accent : Theme.border
        TextInput {
            id: input
            anchors.fill: parent
            anchors.leftMargin: 10
            anchors.rightMargin: 10
            verticalAlignment: TextInput.AlignVCenter
            echoMode: TextInput.Password
            color: Theme.text
            selectionColor: Theme.accent
            font.family: Theme.font
            font.pixelSize: Theme.fontSize
            clip: true
            onAccepted: field.accepted(text)
        }
        Label {
            anchors.fill: parent
            anchors.leftMargin: 10
            visible: input.text === "" && !input.activeFocus
            text: field.placeholder
            color: Theme.dim
        }
    }
    Rectangle {
        id: button
        width: 82
        height: 30
        radius: 7
        color: buttonArea.containsMouse ? Qt.lighter(Theme.accent, 1.1) : Theme.accent
        Label {
            anchors.centerIn: parent
            text: "Connect"
            color: Theme.background
            font.bold: true
        }
        MouseArea {
            id: buttonArea
            anchors.fill: parent
            hoverEnabled: true
            onClicked: field.accepted(input.text)
        }
    }
}
