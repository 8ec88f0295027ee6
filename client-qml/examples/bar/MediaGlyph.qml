import QtQuick

// The media controls' symbols, drawn: "play", "pause", "next", "previous".
Canvas {
    id: glyph
    property string kind: "play"
    property color color: Theme.text
    implicitWidth: 14
    implicitHeight: 14
    onKindChanged: requestPaint()
    onColorChanged: requestPaint()

    onPaint: {
        var g = getContext("2d")
        g.reset()
        g.fillStyle = glyph.color
        var w = width, h = height
        function triangle(x0, x1) {   // pointing right from x0 to x1 (left when x1 < x0)
            g.beginPath()
            g.moveTo(x0, h * 0.1)
            g.lineTo(x1, h / 2)
            g.lineTo(x0, h * 0.9)
            g.closePath()
            g.fill()
        }
        if (kind === "play") triangle(w * 0.2, w * 0.9)
        else if (kind === "pause") {
            g.fillRect(w * 0.2, h * 0.1, w * 0.22, h * 0.8)
            g.fillRect(w * 0.58, h * 0.1, w * 0.22, h * 0.8)
        } else if (kind === "next") {
            triangle(w * 0.1, w * 0.72)
            g.fillRect(w * 0.74, h * 0.1, w * 0.16, h * 0.8)
        } else if (kind === "previous") {
            triangle(w * 0.9, w * 0.28)
            g.fillRect(w * 0.1, h * 0.1, w * 0.16, h * 0.8)
        }
    }
}
