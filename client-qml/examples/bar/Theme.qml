pragma Singleton
import QtQuick

// Colours and sizes shared by the bar's parts.
QtObject {
    readonly property color background: "#1b1d27"
    readonly property color surface: "#2a2d3b"
    readonly property color surfaceHover: "#363a4c"
    readonly property color border: "#3c4055"
    readonly property color text: "#e4e6f0"
    readonly property color dim: "#8d92a8"
    readonly property color accent: "#7aa2f7"
    readonly property color good: "#9ece6a"
    readonly property color warn: "#e0af68"
    readonly property color bad: "#f7768e"
    readonly property string font: "DejaVu Sans"
    readonly property int fontSize: 13
    readonly property int barHeight: 34
    readonly property int chipHeight: 26
    readonly property int menuWidth: 300
}
