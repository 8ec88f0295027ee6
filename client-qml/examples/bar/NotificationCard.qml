pragma ComponentBehavior: Bound
import QtQuick
import Qsd

// One popup: the image, the application, the summary and body, a progress bar for the value
// hint, a bar for the time left, the actions as buttons, and × to dismiss it. A click on the card is the "default" action.
Rectangle {
    id: card
    required property var notification    // a node of /notifications/items
    readonly property bool critical: QsdNotifications.urgency.critical === notification?.urgency
    readonly property var actions: notification?.actions ?? []
    readonly property bool hasDefault: actions.some(a => a.key === "default")
    // Buttons: every action but the click on the card and the inline reply.
    readonly property var buttons: actions.filter(a => a.key !== "default" && a.key !== "inline-reply")
    readonly property string image: notification?.image ?? ""

    function invoke(key: string) {
        Qsd.call("notifications.invokeAction", { id: card.notification.id, action: key })
    }

    width: parent ? parent.width : 360
    height: content.implicitHeight + 26
    radius: 12
    color: Theme.background
    border.color: critical ? Theme.bad : Theme.border
    border.width: critical ? 1.5 : 1

    MouseArea {
        anchors.fill: parent
        enabled: card.hasDefault
        cursorShape: Qt.PointingHandCursor
        onClicked: card.invoke("default")
    }

    Row {
        id: content
        x: 12
        y: 12
        width: parent.width - 24
        spacing: 12

        Image {
            objectName: "notificationImage"
            visible: card.image !== ""
            width: 44
            height: 44
            source: card.image
            sourceSize.width: 88
            sourceSize.height: 88
            fillMode: Image.PreserveAspectFit
            smooth: true
            asynchronous: true
        }
        Column {
            width: content.width - (card.image !== "" ? 44 + content.spacing : 0)
            spacing: 3

            Item {
                width: parent.width
                height: 16
                Label {
                    width: parent.width - 24
                    text: card.notification?.appName ?? ""
                    color: card.critical ? Theme.bad : Theme.dim
                    font.pixelSize: Theme.fontSize - 2
                    elide: Text.ElideRight
                }
                Label {
                    objectName: "dismiss"
                    anchors.right: parent.right
                    text: "\u2715"
                    color: closeArea.containsMouse ? Theme.text : Theme.dim
                    font.pixelSize: Theme.fontSize - 1
                    MouseArea {
                        id: closeArea
                        anchors.fill: parent
                        anchors.margins: -6
                        hoverEnabled: true
                        onClicked: Qsd.call("notifications.dismiss", { id: card.notification.id })
                    }
                }
            }
            Label {
                width: parent.width
                text: card.notification?.summary ?? ""
                font.bold: true
                elide: Text.ElideRight
            }
            Label {
                width: parent.width
                visible: text !== ""
                text: card.notification?.bodyText ?? ""
                color: Theme.dim
                wrapMode: Text.Wrap
                maximumLineCount: 3
                elide: Text.ElideRight
            }
            // The value hint (notify-send -h int:value:40): a volume or brightness level, which a
            // script's stack tag keeps updating in this same card.
            Rectangle {
                objectName: "progress"
                visible: typeof card.notification?.value === "number"
                width: parent.width
                height: 10
                color: "transparent"
                Rectangle {
                    anchors.verticalCenter: parent.verticalCenter
                    width: parent.width
                    height: 5
                    radius: 2.5
                    color: Theme.surface
                    Rectangle {
                        width: parent.width * Math.max(0, Math.min(100, card.notification?.value ?? 0)) / 100
                        height: parent.height
                        radius: parent.radius
                        color: Theme.accent
                    }
                }
            }
            Row {
                visible: card.buttons.length > 0
                topPadding: 6
                spacing: 6
                Repeater {
                    model: card.buttons
                    delegate: Rectangle {
                        id: button
                        required property var modelData
                        width: buttonLabel.implicitWidth + 20
                        height: 24
                        radius: 7
                        color: buttonArea.containsMouse ? Theme.surfaceHover : Theme.surface
                        Label {
                            id: buttonLabel
                            anchors.centerIn: parent
                            text: button.modelData.label
                            font.pixelSize: Theme.fontSize - 1
                        }
                        MouseArea {
                            id: buttonArea
                            anchors.fill: parent
                            hoverEnabled: true
                            onClicked: card.invoke(button.modelData.key)
                        }
                    }
                }
            }
        }
    }

    // The time left until it expires; none for one that stays until it is closed.
    Rectangle {
        id: timeLeft
        objectName: "timeLeft"
        readonly property real created: Date.parse(card.notification?.createdAt ?? "")
        readonly property real expires: card.notification?.expiresAt ? Date.parse(card.notification.expiresAt) : NaN
        property real fraction: 1
        function restart() {
            anim.stop()
            if (isNaN(expires)) return
            var left = expires - Date.now()
            fraction = Math.max(0, Math.min(1, left / Math.max(1, expires - created)))
            anim.duration = Math.max(0, left)
            anim.start()
        }
        visible: !isNaN(expires)
        x: 12
        anchors.bottom: parent.bottom
        anchors.bottomMargin: 6
        width: (card.width - 24) * fraction
        height: 3
        radius: 1.5
        color: card.critical ? Theme.bad : Theme.accent
        onExpiresChanged: restart()
        Component.onCompleted: restart()
        NumberAnimation {
            id: anim
            target: timeLeft
            property: "fraction"
            to: 0
        }
    }
}
