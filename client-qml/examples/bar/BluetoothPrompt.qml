pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// One question of qsd's pairing agent (/bluetooth/agent/requests/<id>), answered with
// bluetooth.answer: a passkey to confirm, or to type on the other device; a PIN code or passkey
// to enter; an authorization. Any shell may answer; the first answer wins.
Column {
    id: prompt
    required property var request
    readonly property string kind: request?.kind ?? ""
    readonly property var device: Qsd.bluetooth?.devices?.get(request?.device ?? "") ?? null
    readonly property string name: device?.alias ?? device?.address ?? (request?.device ?? "")
    readonly property string code: request?.passkey ?? request?.pinCode ?? ""
    readonly property bool confirms: QsdBluetooth.agentRequestKind.requestConfirmation === kind
    readonly property bool shows: QsdBluetooth.agentRequestKind.displayPasskey === kind
                                  || QsdBluetooth.agentRequestKind.displayPinCode === kind
    readonly property bool asksPin: QsdBluetooth.agentRequestKind.requestPinCode === kind
    readonly property bool asksPasskey: QsdBluetooth.agentRequestKind.requestPasskey === kind
    property string problem: ""

    width: parent ? parent.width : 280
    spacing: 6
    topPadding: 4
    bottomPadding: 6

    function title(kind: string, name: string): string {
        if (QsdBluetooth.agentRequestKind.requestConfirmation === kind) return "Pair with " + name + "?"
        if (QsdBluetooth.agentRequestKind.displayPasskey === kind) return "Type this passkey on " + name
        if (QsdBluetooth.agentRequestKind.displayPinCode === kind) return "Type this PIN on " + name
        if (QsdBluetooth.agentRequestKind.requestPinCode === kind) return "PIN code for " + name
        if (QsdBluetooth.agentRequestKind.requestPasskey === kind) return "The passkey " + name + " shows"
        if (QsdBluetooth.agentRequestKind.authorizeService === kind) return "Allow " + name + " to use a service?"
        return "Allow " + name + " to pair?"
    }
    function answer(accept: bool) {
        var params = { request: prompt.request.id, accept: accept }
        if (accept && prompt.asksPin) params.pinCode = input.text
        if (accept && prompt.asksPasskey) params.passkey = parseInt(input.text, 10)
        Qsd.call("bluetooth.answer", params, (err, result) => { if (err) prompt.problem = err.message })
    }

    component Button: Rectangle {
        id: button
        property alias text: label.text
        property bool primary: false
        signal clicked()
        width: label.implicitWidth + 28
        height: 30
        radius: 7
        color: primary ? (area.containsMouse ? Qt.lighter(Theme.accent, 1.1) : Theme.accent)
                       : (area.containsMouse ? Theme.surfaceHover : Theme.surface)
        Label {
            id: label
            anchors.centerIn: parent
            color: button.primary ? Theme.background : Theme.text
            font.bold: button.primary
        }
        MouseArea {
            id: area
            anchors.fill: parent
            hoverEnabled: true
            onClicked: button.clicked()
        }
    }

    Label {
        width: parent.width
        leftPadding: 8
        rightPadding: 8
        wrapMode: Text.Wrap
        font.bold: true
        text: prompt.title(prompt.kind, prompt.name)
    }
    // The passkey both sides show, as people compare it: "123 456".
    Label {
        objectName: "bluetoothPasskey"
        visible: prompt.code !== "" && (prompt.confirms || prompt.shows)
        anchors.horizontalCenter: parent.horizontalCenter
        text: prompt.code.length === 6 ? prompt.code.slice(0, 3) + " " + prompt.code.slice(3) : prompt.code
        font.pixelSize: 28
        font.letterSpacing: 2
        color: Theme.accent
    }
    Label {
        visible: QsdBluetooth.agentRequestKind.displayPasskey === prompt.kind
        leftPadding: 8
        color: Theme.dim
        text: (prompt.request?.entered ?? 0) + " of 6 digits typed"
    }
    Label {
        visible: QsdBluetooth.agentRequestKind.authorizeService === prompt.kind
        leftPadding: 8
        color: Theme.dim
        font.pixelSize: Theme.fontSize - 2
        text: prompt.request?.service ?? ""
    }
    Rectangle {
        visible: prompt.asksPin || prompt.asksPasskey
        x: 8
        width: parent.width - 16
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
            color: Theme.text
            font.family: Theme.font
            font.pixelSize: Theme.fontSize
            maximumLength: prompt.asksPasskey ? 6 : 16
            inputMethodHints: prompt.asksPasskey ? Qt.ImhDigitsOnly : Qt.ImhNone
            onAccepted: prompt.answer(true)
        }
    }
    Label {
        visible: prompt.problem !== ""
        leftPadding: 8
        color: Theme.warn
        text: prompt.problem
    }
    Row {
        x: 8
        spacing: 8
        Button {
            primary: true
            text: prompt.shows ? "Done" : prompt.confirms ? "Confirm" : prompt.asksPin || prompt.asksPasskey ? "Pair" : "Allow"
            onClicked: prompt.answer(true)
        }
        Button {
            visible: !prompt.shows
            text: prompt.confirms || prompt.asksPin || prompt.asksPasskey ? "Reject" : "Deny"
            onClicked: prompt.answer(false)
        }
    }
}
