// A small status bar over qsd, in plain Qt Quick: run it with
//   QML_IMPORT_PATH=<build>/client-qml/qml /usr/lib/qt6/bin/qml bar.qml
// Every section binds to the tree; sections for domains the daemon does not have stay hidden.
import QtQuick
import QtQuick.Window
import Qsd

Window {
    id: bar
    width: 1100
    height: 34
    visible: true
    color: "#1e1f29"
    title: "qsd bar"

    readonly property color fg: "#e6e6e6"
    readonly property color dim: "#8a8fa3"
    readonly property color good: "#50fa7b"
    readonly property color warn: "#f1fa8c"
    readonly property color bad: "#ff5555"
    readonly property color accent: "#8be9fd"

    // A rounded chip holding a row of content.
    component Chip: Rectangle {
        default property alias content: row.data
        height: 24
        width: row.implicitWidth + 16
        radius: 12
        color: "#2c2e3b"
        Row {
            id: row
            anchors.centerIn: parent
            spacing: 6
        }
    }
    component Label: Text {
        color: "#e6e6e6"
        font.pixelSize: 13
        anchors.verticalCenter: parent ? parent.verticalCenter : undefined
    }
    component Dot: Rectangle {
        width: 8; height: 8; radius: 4
        anchors.verticalCenter: parent ? parent.verticalCenter : undefined
    }

    function stateColor(state) {
        switch (state) {
        case "running": return bar.good
        case "starting": return bar.warn
        default: return bar.bad
        }
    }

    Row {
        anchors.verticalCenter: parent.verticalCenter
        anchors.left: parent.left
        anchors.leftMargin: 6
        spacing: 6

        // The daemon itself.
        Chip {
            Dot { color: Qsd.connected ? bar.good : bar.bad }
            Label {
                text: Qsd.connected ? "qsd " + (Qsd.daemon?.version ?? "") : "qsd offline"
                font.bold: true
            }
            Label {
                visible: Qsd.connected
                color: bar.dim
                text: (Qsd.daemon?.clients ?? 0) + (Qsd.daemon?.clients === 1 ? " client" : " clients")
            }
            Label {
                visible: !Qsd.connected && Qsd.error !== ""
                color: bar.dim
                text: "reconnecting…"
            }
        }

        // One chip per backend, coloured by its state.
        Repeater {
            model: Qsd.model("/daemon/backends")
            delegate: Chip {
                id: backend
                required property var model
                Dot { color: bar.stateColor(backend.model.node?.state) }
                Label { text: backend.model.id }
                Label {
                    visible: backend.model.node?.state !== "running"
                    color: bar.dim
                    text: backend.model.node?.state ?? ""
                }
            }
        }

        // Battery, when the daemon has /power with a battery.
        Chip {
            id: battery
            readonly property var device: Qsd.power?.displayDevice
            readonly property real level: device?.percentage ?? 0
            visible: Qsd.power?.available === true && device !== undefined && device !== null
            Rectangle {
                width: 26; height: 12; radius: 2
                anchors.verticalCenter: parent.verticalCenter
                color: "transparent"
                border.color: bar.fg
                Rectangle {
                    x: 2; y: 2; height: parent.height - 4
                    width: (parent.width - 4) * Math.max(0, Math.min(1, battery.level))
                    color: battery.level < 0.15 ? bar.bad : battery.level < 0.3 ? bar.warn : bar.good
                }
            }
            Label { text: Math.round(battery.level * 100) + "%" }
            Label {
                color: bar.dim
                text: battery.device?.state === "charging" ? "charging" : (Qsd.power?.onBattery ? "on battery" : "")
            }
        }

        // Network, when the daemon has /network.
        Chip {
            visible: Qsd.network?.available === true
            Label { text: Qsd.network?.wifiEnabled ? "wifi on" : "wifi off" }
            Repeater {
                model: Qsd.model("/network/devices")
                delegate: Label {
                    id: netdev
                    required property var model
                    color: netdev.model.node?.connected ? bar.accent : bar.dim
                    text: netdev.model.id
                }
            }
        }

        // Whatever sits under /debug (the demo and the tests write there).
        Repeater {
            model: Qsd.model("/debug")
            delegate: Chip {
                id: entry
                required property var model
                Label { color: bar.dim; text: entry.model.id }
                Label {
                    color: bar.accent
                    text: entry.model.node ? "{" + Object.keys(entry.model.value).length + "}" : JSON.stringify(entry.model.value)
                }
            }
        }
    }

    // Right side: revision and epoch, handy when watching the daemon.
    Row {
        anchors.verticalCenter: parent.verticalCenter
        anchors.right: parent.right
        anchors.rightMargin: 8
        spacing: 6
        Label { color: bar.dim; text: Qsd.connected ? "rev " + Qsd.revision : "" }
        Label { color: bar.dim; text: Qsd.epoch.substring(0, 8) }
    }
}
