pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The Wi-Fi networks in range, strongest first, with a password prompt for networks that need
// one: asked before connecting to a secured network without a saved profile, and when
// NetworkManager reports that the password was missing or wrong (network.connectionFailed);
// the VPN profiles with a switch each; and NetworkManager's own requests for secrets.
MenuWindow {
    id: menu
    title: "Wi-Fi"
    required property var device        // the Wi-Fi device node, or null
    readonly property string deviceId: Qsd.keyOf(device)
    readonly property var networks: (device?.networks?.values ?? [])
        .filter(n => n.visible !== false)
        .sort((a, b) => (b.connected - a.connected) || (b.signalStrength - a.signalStrength))
    property string prompting: ""       // the network id asking for a password
    property string problem: ""
    signal wantsOpen()

    function choose(network) {
        var id = Qsd.keyOf(network)
        if (network.connected) {
            Qsd.call("network.disconnect", { device: deviceId, network: id })
        } else if (network.known || !Names.takesPassword(network.security)) {
            Qsd.call("network.connect", { device: deviceId, network: id })
        } else {
            ask(id, "")
        }
    }
    function ask(id, why) {
        prompting = id
        problem = why
        password.text = ""
        password.focusInput()
    }
    // network.connectionFailed: ask again, or say why. Typed parameters let qmllint check the
    // constants in the body.
    function failed(device: string, network: string, reason: string) {
        if (device !== deviceId) return
        if (QsdNetwork.connectionFailReason.noSecrets === reason) ask(network, "A password is needed")
        else if (QsdNetwork.connectionFailReason.wifiNetworkLost === reason) problem = network + " is out of range"
        else ask(network, "The password was not accepted")
        wantsOpen()
    }
    function connectWith(psk) {
        var id = prompting
        Qsd.call("network.connect", { device: deviceId, network: id, psk: psk }, (err, result) => {
            if (err) ask(id, err.message)
            else prompting = ""
        })
    }

    // Scans while the menu is open (and again after a daemon restart), so the list is fresh.
    QsdWifiScanner { device: menu.deviceId; active: menu.open && menu.deviceId !== "" }

    QsdEvents {
        topics: [QsdNetwork.events.connectionFailed]
        onEvent: (topic, data) => menu.failed(data.device, data.network, data.reason)
    }

    MenuRow {
        text: Qsd.network?.wifiEnabled === true ? "Wi-Fi is on" : "Wi-Fi is off"
        note: Qsd.network?.wifiEnabled === true ? "turn off" : "turn on"
        noteColor: Theme.accent
        onClicked: Qsd.call("network.setWifiEnabled", { enabled: Qsd.network?.wifiEnabled !== true })
    }
    Rectangle { width: parent.width; height: 1; color: Theme.border }

    Repeater {
        model: menu.networks
        delegate: MenuRow {
            id: row
            required property var modelData
            text: row.modelData.name
            emphasized: row.modelData.connected
            note: row.modelData.connected ? "connected" : row.modelData.stateChanging ? "connecting…" : Names.security(row.modelData.security)
            noteColor: row.modelData.connected ? Theme.good : Theme.dim
            SignalBars {
                anchors.verticalCenter: parent.verticalCenter
                strength: row.modelData.signalStrength
                color: row.modelData.connected ? Theme.accent : Theme.text
            }
            onClicked: menu.choose(row.modelData)
        }
    }
    Label {
        visible: menu.networks.length === 0
        leftPadding: 8
        height: 26
        color: Theme.dim
        text: menu.device ? "No networks in range" : "No Wi-Fi device"
    }

    VpnSection {}
    // NetworkManager's own requests for secrets (a saved network's password that is missing or
    // wrong, a VPN's): the menu opens to show them.
    SecretPrompt { onAsked: menu.wantsOpen() }

    // The password prompt.
    Column {
        visible: menu.prompting !== ""
        width: parent.width
        spacing: 6
        topPadding: 6
        Rectangle { width: parent.width; height: 1; color: Theme.border }
        Label {
            leftPadding: 8
            text: "Password for " + menu.prompting
            font.bold: true
        }
        Label {
            visible: menu.problem !== ""
            leftPadding: 8
            text: menu.problem
            color: Theme.warn
            font.pixelSize: Theme.fontSize - 1
        }
        PasswordField {
            id: password
            width: parent.width
            onAccepted: psk => menu.connectWith(psk)
        }
    }
}
