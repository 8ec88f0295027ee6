import QtQuick
import Qsd

// The active media player (/media/active: a playing one beats a paused one, then the latest):
// "title — artist", play/pause and next. A click on the text opens the player's popup.
Chip {
    id: chip
    objectName: "media"
    readonly property var media: Qsd.media ?? null
    readonly property string key: media?.active ?? ""
    readonly property var player: key !== "" ? media?.players?.get(key) ?? null : null
    readonly property bool playing: player?.playbackStatus === QsdMedia.playbackStatus.playing
    signal menuRequested()

    function text() {
        var title = player?.metadata?.title ?? ""
        var artists = (player?.metadata?.artists ?? []).join(", ")
        if (title === "") return player?.identity ?? key
        return artists === "" ? title : title + " — " + artists
    }
    function within(item, mouse) {
        var p = item.mapFromItem(chip, mouse.x, mouse.y)
        return p.x >= -4 && p.x <= item.width + 4 && p.y >= -6 && p.y <= item.height + 6
    }

    visible: media?.available === true && player !== null
    onClicked: mouse => {
        if (within(toggle, mouse)) Qsd.call("media.playPause", { player: key })
        else if (within(next, mouse)) Qsd.call("media.next", { player: key })
        else chip.menuRequested()
    }

    MediaGlyph {
        id: toggle
        objectName: "mediaPlayPause"
        anchors.verticalCenter: parent.verticalCenter
        kind: chip.playing ? "pause" : "play"
        color: chip.player?.canPause || chip.player?.canPlay ? Theme.text : Theme.dim
    }
    Label {
        width: Math.min(implicitWidth, 260)
        elide: Text.ElideRight
        text: chip.text()
        color: chip.playing ? Theme.text : Theme.dim
    }
    MediaGlyph {
        id: next
        objectName: "mediaNext"
        anchors.verticalCenter: parent.verticalCenter
        kind: "next"
        color: chip.player?.canGoNext ? Theme.text : Theme.dim
    }
}
