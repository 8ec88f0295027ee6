import QtQuick

// The Bluetooth mark (the runes Hagall and Bjarkan), drawn: the bar's font has no Runic.
Canvas {
    id: icon
    property color color: Theme.text
    implicitWidth: 10
    implicitHeight: 16
    onColorChanged: requestPaint()
    onPaint: {
        var ctx = getContext("2d")
        var w = width, h = height
        ctx.reset()
        ctx.strokeStyle = icon.color
        ctx.lineWidth = 1.6
        ctx.lineJoin = "round"
        ctx.lineCap = "round"
        ctx.beginPath()
        ctx.moveTo(0.1 * w, 0.28 * h)
        ctx.lineTo(0.9 * w, 0.72 * h)
        ctx.lineTo(0.5 * w, 0.95 * h)
        ctx.lineTo(0.5 * w, 0.05 * h)
        ctx.lineTo(0.9 * w, 0.28 * h)
        ctx.lineTo(0.1 * w, 0.72 * h)
        ctx.stroke()
    }
}
