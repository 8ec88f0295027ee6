import QtQuick

// A speaker with one to three waves for the volume, crossed out when muted.
Canvas {
    id: icon
    property real volume: 0
    property bool muted: false
    property color color: Theme.text

    implicitWidth: 18
    implicitHeight: 14
    onVolumeChanged: requestPaint()
    onMutedChanged: requestPaint()
    onColorChanged: requestPaint()
    onPaint: {
        var ctx = getContext("2d")
        ctx.reset()
        ctx.fillStyle = icon.color
        ctx.strokeStyle = icon.color
        ctx.lineWidth = 1.4
        var h = height, c = h / 2
        ctx.beginPath()
        ctx.moveTo(0, c - 2.5); ctx.lineTo(3.5, c - 2.5); ctx.lineTo(8, c - 6.5)
        ctx.lineTo(8, c + 6.5); ctx.lineTo(3.5, c + 2.5); ctx.lineTo(0, c + 2.5)
        ctx.closePath()
        ctx.fill()
        if (icon.muted) {
            ctx.beginPath()
            ctx.moveTo(11, c - 3.5); ctx.lineTo(17, c + 3.5)
            ctx.moveTo(17, c - 3.5); ctx.lineTo(11, c + 3.5)
            ctx.stroke()
            return
        }
        var waves = icon.volume <= 0 ? 0 : icon.volume < 0.34 ? 1 : icon.volume < 0.67 ? 2 : 3
        for (var i = 0; i < waves; ++i) {
            ctx.beginPath()
            ctx.arc(8, c, 3.5 + i * 3.2, -Math.PI / 3.2, Math.PI / 3.2)
            ctx.stroke()
        }
    }
}
