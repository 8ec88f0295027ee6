pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The VPN and WireGuard profiles (/network/profiles), each with a switch:
// network.activateProfile when off, network.deactivateProfile when on. A profile that needs a
// password or key asks for it through the secret prompt. Hidden when there is none.
Column {
    id: section
    readonly property var profiles: (Qsd.network?.profiles?.values ?? [])
        .filter(p => p.type === vpnType || p.type === wireguardType)
        .sort((a, b) => a.id.localeCompare(b.id))
    // Constants in properties of their own: Qt 6.4's qmllint does not look inside the lambdas.
    readonly property string vpnType: QsdNetwork.profileType.vpn
    readonly property string wireguardType: QsdNetwork.profileType.wireguard
    readonly property string connecting: QsdNetwork.connectionState.connecting
    readonly property string disconnecting: QsdNetwork.connectionState.disconnecting

    visible: profiles.length > 0
    width: parent.width
    spacing: 2

    component Switch: Rectangle {
        id: track
        property bool on: false
        property bool busy: false
        width: 28
        height: 16
        radius: 8
        color: on ? Theme.good : Theme.surface
        border.color: on ? Theme.good : Theme.border
        opacity: busy ? 0.6 : 1
        Rectangle {
            x: track.on ? track.width - width - 2 : 2
            anchors.verticalCenter: parent.verticalCenter
            width: 12
            height: 12
            radius: 6
            color: track.on ? Theme.background : Theme.dim
        }
    }

    Rectangle { width: parent.width; height: 1; color: Theme.border }
    Label {
        leftPadding: 8
        height: 26
        text: "VPN"
        color: Theme.dim
        font.bold: true
    }
    Repeater {
        model: section.profiles
        delegate: MenuRow {
            id: row
            required property var modelData
            readonly property bool changing: modelData.state === section.connecting || modelData.state === section.disconnecting
            text: row.modelData.id
            emphasized: row.modelData.active
            note: row.changing ? "…" : row.modelData.vpnService ?? ""
            Switch {
                on: row.modelData.active
                busy: row.changing
            }
            onClicked: Qsd.call(row.modelData.active ? "network.deactivateProfile" : "network.activateProfile",
                                { profile: row.modelData.uuid })
        }
    }
}
