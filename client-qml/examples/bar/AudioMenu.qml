pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// The default output: a volume slider with a live level, mute, and the outputs to choose from.
MenuWindow {
    id: menu
    title: "Sound"
    readonly property var audio: Qsd.audio ?? null
    readonly property string sinkKey: audio?.defaultAudioSink ?? ""
    readonly property var sink: audio?.nodes?.get(sinkKey) ?? null
    readonly property bool muted: sink?.audio?.muted === true
    // Every output device (not the streams that play to them), by name.
    readonly property var sinks: (audio?.nodes?.values ?? [])
        .filter(n => n.type === sinkType)
        .sort((a, b) => (a.description ?? a.name ?? "").localeCompare(b.description ?? b.name ?? ""))

    // The applications playing to it: the streams its capturedFrom names (keys of /audio/nodes).
    readonly property var playing: (sink?.capturedFrom ?? [])
        .map(key => audio?.nodes?.get(key))
        .filter(n => n?.isStream === true)
        .map(n => n.application?.name || n.media?.name || n.name || "")

    // A constant in a property of its own: Qt 6.4's qmllint does not look inside the lambdas.
    readonly property string sinkType: QsdAudio.nodeType.audioSink

    function nameOf(node) { return node?.description || node?.nickname || node?.name || "" }

    // Peaks are published only while someone asks (and again after a daemon restart).
    QsdPeakMonitor { id: meter; node: menu.sinkKey; active: menu.open && menu.sinkKey !== "" }

    Label {
        leftPadding: 8
        width: parent.width
        elide: Text.ElideRight
        height: 22
        color: Theme.dim
        text: menu.nameOf(menu.sink)
    }
    Row {
        width: parent.width
        height: 34
        spacing: 10
        leftPadding: 8
        Rectangle {
            objectName: "mute"
            anchors.verticalCenter: parent.verticalCenter
            width: 28
            height: 28
            radius: 14
            color: muteArea.containsMouse ? Theme.surfaceHover : Theme.surface
            SpeakerIcon {
                anchors.centerIn: parent
                volume: menu.sink?.audio?.volume ?? 0
                muted: menu.muted
                color: menu.muted ? Theme.bad : Theme.text
            }
            MouseArea {
                id: muteArea
                anchors.fill: parent
                hoverEnabled: true
                onClicked: Qsd.call("audio.setMuted", { node: menu.sinkKey, muted: !menu.muted })
            }
        }
        VolumeSlider {
            objectName: "volumeSlider"
            anchors.verticalCenter: parent.verticalCenter
            width: parent.width - 28 - 10 - 8 - 44
            value: menu.sink?.audio?.volume ?? 0
            muted: menu.muted
            level: meter.effective ? meter.peak : -1
            onMoved: value => Qsd.call("audio.setVolume", { node: menu.sinkKey, volume: value })
        }
        Label {
            anchors.verticalCenter: parent.verticalCenter
            width: 40
            text: Math.round((menu.sink?.audio?.volume ?? 0) * 100) + "%"
            color: Theme.dim
        }
    }
    Label {
        visible: menu.playing.length > 0
        leftPadding: 8
        width: parent.width
        elide: Text.ElideRight
        height: 22
        color: Theme.dim
        font.pixelSize: Theme.fontSize - 1
        text: "\u266a " + menu.playing.join(", ")
    }
    Rectangle { width: parent.width; height: 1; color: Theme.border }
    Label {
        leftPadding: 8
        height: 24
        text: "Output"
        color: Theme.dim
        font.pixelSize: Theme.fontSize - 1
    }
    Repeater {
        model: menu.sinks
        delegate: MenuRow {
            id: row
            required property var modelData
            readonly property string key: Qsd.keyOf(row.modelData)
            readonly property bool selected: row.key === menu.sinkKey
            text: menu.nameOf(row.modelData)
            emphasized: selected
            Rectangle {
                width: 14
                height: 14
                radius: 7
                color: "transparent"
                border.color: row.selected ? Theme.accent : Theme.dim
                border.width: 1.5
                Rectangle {
                    anchors.centerIn: parent
                    visible: row.selected
                    width: 6
                    height: 6
                    radius: 3
                    color: Theme.accent
                }
            }
            onClicked: Qsd.call("audio.setPreferredDefault", { node: row.key })
        }
    }
}
