pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The active player's popup: cover art, the track, a seek bar whose position ticks locally
// (QsdMediaPosition: a timer only while this is open and the player plays, no daemon traffic),
// and previous / play-pause / next.
MenuWindow {
    id: menu
    required property string player
    readonly property var media: Qsd.media?.players?.get(player) ?? null
    readonly property var track: media?.metadata ?? null
    title: media?.identity ?? player

    QsdMediaPosition {
        id: position
        player: menu.player
        interval: 500
        enabled: menu.open
    }
    function clock(seconds) {
        var s = Math.floor(seconds)
        return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0")
    }

    Row {
        spacing: 12
        width: parent ? parent.width : 0
        height: 96
        Rectangle {
            width: 96
            height: 96
            radius: 8
            color: Theme.surface
            clip: true
            Image {
                objectName: "mediaArt"
                anchors.fill: parent
                visible: source !== ""
                source: menu.track?.artUrl ?? ""
                fillMode: Image.PreserveAspectCrop
                asynchronous: true
            }
        }
        Column {
            width: parent.width - 108
            anchors.verticalCenter: parent.verticalCenter
            spacing: 2
            Label {
                width: parent.width
                elide: Text.ElideRight
                font.bold: true
                text: menu.track?.title ?? "Nothing playing"
            }
            Label {
                width: parent.width
                elide: Text.ElideRight
                text: (menu.track?.artists ?? []).join(", ")
            }
            Label {
                width: parent.width
                elide: Text.ElideRight
                color: Theme.dim
                font.pixelSize: Theme.fontSize - 2
                text: menu.track?.album ?? ""
            }
        }
    }

    // The seek bar: the position against the length; a click goes there.
    Item {
        id: seek
        objectName: "seekBar"
        width: parent ? parent.width : 0
        height: 30
        readonly property real fraction: position.length > 0 ? position.position / position.length : 0
        Rectangle {
            id: rail
            y: 10
            width: parent.width
            height: 6
            radius: 3
            color: Theme.surface
            Rectangle {
                width: rail.width * Math.max(0, Math.min(1, seek.fraction))
                height: parent.height
                radius: 3
                color: Theme.accent
            }
        }
        Label {
            anchors.left: parent.left
            y: 18
            font.pixelSize: Theme.fontSize - 2
            color: Theme.dim
            text: menu.clock(position.position)
        }
        Label {
            anchors.right: parent.right
            y: 18
            font.pixelSize: Theme.fontSize - 2
            color: Theme.dim
            text: position.length > 0 ? menu.clock(position.length) : ""
        }
        MouseArea {
            anchors.fill: rail
            anchors.margins: -6
            enabled: menu.media?.canSeek === true && position.length > 0
            onClicked: mouse => Qsd.call("media.setPosition",
                                         { player: menu.player, position: mouse.x / width * position.length })
        }
    }

    Row {
        anchors.horizontalCenter: parent ? parent.horizontalCenter : undefined
        spacing: 28
        height: 34
        Repeater {
            model: [
                { kind: "previous", method: "media.previous", allowed: menu.media?.canGoPrevious === true },
                { kind: menu.media?.playbackStatus === QsdMedia.playbackStatus.playing ? "pause" : "play",
                  method: "media.playPause", allowed: menu.media?.canPause === true },
                { kind: "next", method: "media.next", allowed: menu.media?.canGoNext === true },
            ]
            delegate: Rectangle {
                id: button
                required property var modelData
                width: 34
                height: 34
                radius: 17
                color: area.containsMouse ? Theme.surfaceHover : Theme.surface
                MediaGlyph {
                    anchors.centerIn: parent
                    kind: button.modelData.kind
                    color: button.modelData.allowed ? Theme.text : Theme.dim
                }
                MouseArea {
                    id: area
                    anchors.fill: parent
                    hoverEnabled: true
                    enabled: button.modelData.allowed
                    onClicked: Qsd.call(button.modelData.method, { player: menu.player })
                }
            }
        }
    }
}
