// A status bar over qsd in plain Qt Quick: battery, power profile, network with a Wi-Fi menu,
// Bluetooth with its menu, volume with an output menu, the tray with its menus, the active media
// player, and notifications: a bell with the notification centre, and popups at the top right. Run it with
//   QML_IMPORT_PATH=<build>/client-qml/qml /usr/lib/qt6/bin/qml bar.qml
// Every part binds to the tree; a part whose domain the daemon does not have stays hidden.
import QtQuick
import QtQuick.Window
import Qsd

Window {
    id: bar
    width: 1280
    height: Theme.barHeight
    visible: true
    color: Theme.background
    title: "qsd bar"

    // The menu shown under its chip: "", "wifi", "profile", "audio", "tray", "media", "notifications" or "bluetooth".
    property string openMenu: ""
    property string trayItem: ""
    readonly property var menus: ["wifi", "profile", "audio", "tray", "media", "notifications", "bluetooth"]
    function toggle(name) { openMenu = openMenu === name ? "" : name }
    // The parts shown now, by name (the render test checks them).
    function visibleSections() {
        var shown = []
        for (var part of [media, tray, volume, network, bluetooth, profile, battery, bell, popups])
            if (part.visible) shown.push(part.objectName)
        return shown
    }

    // Left: the time, and the daemon when it is away.
    Row {
        anchors.left: parent.left
        anchors.leftMargin: 10
        anchors.verticalCenter: parent.verticalCenter
        spacing: 8

        Label {
            id: clock
            property date now: new Date()
            text: Qt.formatDateTime(now, "ddd d MMM   hh:mm")
            font.bold: true
            Timer {
                interval: 1000
                running: true
                repeat: true
                onTriggered: clock.now = new Date()
            }
        }
        Chip {
            visible: !Qsd.connected
            color: Theme.surface
            Rectangle {
                anchors.verticalCenter: parent.verticalCenter
                width: 8
                height: 8
                radius: 4
                color: Theme.bad
            }
            Label {
                text: Qsd.error === "" ? "connecting to qsd…" : "qsd is away, reconnecting…"
                color: Theme.dim
            }
        }
    }

    // Right: the tray, then the status chips.
    Row {
        anchors.right: parent.right
        anchors.rightMargin: 8
        anchors.verticalCenter: parent.verticalCenter
        spacing: 6

        MediaChip {
            id: media
            highlighted: bar.openMenu === "media"
            onMenuRequested: bar.toggle("media")
        }
        TrayArea {
            id: tray
            anchors.verticalCenter: parent.verticalCenter
            rightPadding: 6
            onMenuRequested: (item, icon) => {
                bar.trayItem = item
                bar.openMenu = "tray"
            }
        }
        VolumeChip {
            id: volume
            highlighted: bar.openMenu === "audio"
            onClicked: mouse => {
                if (mouse.button === Qt.MiddleButton) Qsd.call("audio.setMuted", { node: volume.sinkKey, muted: !volume.muted })
                else bar.toggle("audio")
            }
        }
        NetworkChip {
            id: network
            highlighted: bar.openMenu === "wifi"
            onClicked: bar.toggle("wifi")
        }
        BluetoothChip {
            id: bluetooth
            highlighted: bar.openMenu === "bluetooth"
            onClicked: bar.toggle("bluetooth")
        }
        ProfileChip {
            id: profile
            highlighted: bar.openMenu === "profile"
            onClicked: bar.toggle("profile")
        }
        BatteryChip { id: battery }
        NotificationChip {
            id: bell
            highlighted: bar.openMenu === "notifications"
            onClicked: mouse => {
                if (mouse.button === Qt.MiddleButton) Qsd.call("notifications.setDnd", { enabled: !bell.dnd })
                else bar.toggle("notifications")
            }
        }
    }

    WifiMenu {
        bar: bar
        anchorItem: network
        device: network.wifi
        open: bar.openMenu === "wifi" && network.visible
        onDismissed: bar.openMenu = ""
        onWantsOpen: bar.openMenu = "wifi"
    }
    ProfileMenu {
        bar: bar
        anchorItem: profile
        open: bar.openMenu === "profile" && profile.visible
        onDismissed: bar.openMenu = ""
    }
    AudioMenu {
        bar: bar
        anchorItem: volume
        open: bar.openMenu === "audio" && volume.visible
        onDismissed: bar.openMenu = ""
    }
    MediaMenu {
        bar: bar
        anchorItem: media
        player: media.key
        open: bar.openMenu === "media" && media.visible
        onDismissed: bar.openMenu = ""
    }
    NotificationPopups {
        id: popups
        bar: bar
    }
    NotificationMenu {
        bar: bar
        anchorItem: bell
        open: bar.openMenu === "notifications" && bell.visible
        onDismissed: bar.openMenu = ""
    }
    TrayMenu {
        bar: bar
        anchorItem: tray
        // Opened from the renderer without a click: the first item with a menu.
        itemKey: bar.trayItem !== "" ? bar.trayItem : tray.firstMenuItem
        open: bar.openMenu === "tray" && tray.visible
        onDismissed: bar.openMenu = ""
    }
    BluetoothMenu {
        bar: bar
        anchorItem: bluetooth
        open: bar.openMenu === "bluetooth" && bluetooth.visible
        onDismissed: bar.openMenu = ""
    }
}
