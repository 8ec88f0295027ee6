pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// NetworkManager's requests for secrets (/network/secretRequests), the oldest first: a Wi-Fi
// password that is missing or was wrong, a VPN's password or token, a WireGuard key. The bar
// holds the claim (QsdSecretPrompter), so NetworkManager asks it rather than failing with
// noSecrets. Each secret field gets an entry; Enter or Connect answers (network.answerSecrets),
// Cancel refuses (network.cancelSecrets: NetworkManager stops the activation). A value the
// daemon refuses (a Wi-Fi password NetworkManager would not take) is asked for again.
Column {
    id: prompt
    readonly property var request: (Qsd.network?.secretRequests?.values ?? [])
        .slice().sort((a, b) => a.createdAt.localeCompare(b.createdAt))[0] ?? null
    readonly property string requestId: request ? Qsd.keyOf(request) : ""
    readonly property var fields: (request?.fields ?? []).filter(f => f.secret)
    readonly property string reasonMissing: QsdNetwork.secretReason.missing
    property string problem: ""
    property var typed: ({})            // what the entries above the last hold, by field key
    signal asked()                      // a new request: the menu shows it

    visible: request !== null
    width: parent.width
    spacing: 6
    topPadding: 6

    onRequestIdChanged: {
        problem = ""
        typed = {}
        last.text = ""
        if (requestId !== "") {
            asked()
            focusLater.start()
        }
    }
    function submit() {
        var secrets = Object.assign({}, typed)
        secrets[prompt.fields[prompt.fields.length - 1].key] = last.text
        var id = requestId
        Qsd.call("network.answerSecrets", { request: id, secrets: secrets }, (err, result) => {
            if (err && id === prompt.requestId) prompt.problem = err.message
        })
    }

    QsdSecretPrompter {}

    // A secret entry without a button, for all but the last field.
    component Entry: Rectangle {
        id: box
        required property var modelData
        readonly property string key: modelData.key
        property alias text: input.text
        function forceActiveFocus() { input.forceActiveFocus() }
        width: prompt.width
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
            font.family: Theme.font
            font.pixelSize: Theme.fontSize
            clip: true
            onTextChanged: prompt.typed[box.key] = text
            onAccepted: prompt.submit()
        }
        Label {
            anchors.fill: parent
            anchors.leftMargin: 10
            visible: input.text === "" && !input.activeFocus
            text: box.modelData.label
            color: Theme.dim
        }
    }

    Rectangle { width: parent.width; height: 1; color: Theme.border }
    Label {
        leftPadding: 8
        width: parent.width
        elide: Text.ElideRight
        text: (prompt.fields[0]?.label ?? "Password") + " for " + (prompt.request?.ssid ?? prompt.request?.profileName ?? "")
        font.bold: true
    }
    Label {
        leftPadding: 8
        width: parent.width
        wrapMode: Text.Wrap
        text: prompt.problem !== "" ? prompt.problem
            : prompt.request?.message ?? (prompt.reasonMissing === prompt.request?.reason ? "A password is needed"
                                                                                         : "The password was not accepted")
        color: Theme.warn
        font.pixelSize: Theme.fontSize - 1
    }
    Repeater {
        id: entries
        model: prompt.fields.slice(0, -1)
        delegate: Entry {}
    }
    PasswordField {
        id: last
        width: parent.width
        placeholder: prompt.fields[prompt.fields.length - 1]?.label ?? "Password"
        onAccepted: prompt.submit()
    }
    MenuRow {
        text: "Cancel"
        noteColor: Theme.dim
        onClicked: Qsd.call("network.cancelSecrets", { request: prompt.requestId })
    }

    // Once the entries for the new request exist: the first one to type into.
    Timer {
        id: focusLater
        interval: 0
        onTriggered: {
            var first = entries.count > 0 ? entries.itemAt(0) : null
            if (first) first.forceActiveFocus()
            else last.focusInput()
        }
    }
}
