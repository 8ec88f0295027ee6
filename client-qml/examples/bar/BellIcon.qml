import QtQuick

// A bell, struck through while Do-Not-Disturb is on.
Canvas {
    id: icon
    property bool muted: false
    property color color: Theme.text

    implicitWidth: 16
    implicitHeight: 16
    onMutedChanged: requestPaint()
    onColorChanged: requestPaint()
    onPaint: {
        var ctx = getContext("2d")
        ctx.reset()
        ctx.fillStyle = icon.color
        ctx.strokeStyle = icon.color
        ctx.lineWidth = 1.5
        var w = width, h = height, c = w / 2
        ctx.beginPath()
        ctx.moveTo(c - 5.5, h - 4)
        ctx.quadraticCurveTo(c - 4.5, h - 6, c - 4.5, h - 8.5)
        ctx.lineTo(c - 4.5, 6.5)
        ctx.arc(c, 6.5, 4.5, Math.PI, 0)
        ctx.lineTo(c + 4.5, h - 8.5)
        ctx.quadraticCurveTo(c + 4.5, h - 6, c + 5.5, h - 4)
        ctx.closePath()
        ctx.fill()
        ctx.beginPath()
        ctx.arc(c, h - 2.5, 1.8, 0, 2 * Math.PI)
        ctx.fill()
        if (icon.muted) {
            ctx.strokeStyle = Theme.background
            ctx.lineWidth = 3.5
            ctx.beginPath()
            ctx.moveTo(1.5, 1.5); ctx.lineTo(w - 1.5, h - 1.5)
            ctx.stroke()
            ctx.strokeStyle = icon.color
            ctx.lineWidth = 1.5
            ctx.stroke()
        }
    }
}
