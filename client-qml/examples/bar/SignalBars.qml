pragma ComponentBehavior: Bound
import QtQuick

// Four bars, lit up to a strength of 0..1.
Item {
    id: bars
    property real strength: 0
    property color color: Theme.text
    readonly property int lit: strength <= 0 ? 0 : Math.min(4, Math.ceil(strength * 4))

    implicitWidth: 16
    implicitHeight: 12
    Repeater {
        model: 4
        Rectangle {
            required property int index
            width: 3
            height: 3 + index * 3
            x: index * 4.3
            y: bars.height - height
            radius: 1
            color: index < bars.lit ? bars.color : Theme.border
        }
    }
}
