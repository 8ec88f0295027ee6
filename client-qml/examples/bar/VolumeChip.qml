import QtQuick
import Qsd

// The default output's volume: scroll to change it, middle-click to mute, click for the menu.
Chip {
    id: chip
    objectName: "volume"
    readonly property var audio: Qsd.audio ?? null
    // /audio/defaultAudioSink is the key of the sink's node under /audio/nodes. Node keys are
    // numbers, which JavaScript reads as array indices (nodes["41"] is undefined on a QML
    // object): get() looks the node up, and follows it as nodes come and go.
    readonly property string sinkKey: audio?.defaultAudioSink ?? ""
    readonly property var sink: audio?.nodes?.get(sinkKey) ?? null
    readonly property real volume: sink?.audio?.volume ?? 0
    readonly property bool muted: sink?.audio?.muted === true

    function setVolume(volume) {
        Qsd.call("audio.setVolume", { node: sinkKey, volume: Math.max(0, Math.min(1, volume)) })
    }

    visible: audio?.available === true && (sink?.audio ?? null) !== null
    onWheel: wheel => setVolume(volume + (wheel.angleDelta.y > 0 ? 0.05 : -0.05))

    SpeakerIcon {
        anchors.verticalCenter: parent.verticalCenter
        volume: chip.volume
        muted: chip.muted
        color: chip.muted ? Theme.dim : Theme.text
    }
    Label {
        text: chip.muted ? "muted" : Math.round(chip.volume * 100) + "%"
        color: chip.muted ? Theme.dim : Theme.text
    }
}
