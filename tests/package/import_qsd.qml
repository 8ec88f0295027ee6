// Run by tests/package/run with the qml runtime against the packaged qsd: `import Qsd` must
// resolve to the module the package installed, its generated constants must be there, and its
// client must reach the daemon. Prints one line and quits with 0; any failure exits with 1. The
// root is an Item because the qml runtime exits at once when a file creates no window (it shows
// an Item in one; QT_QPA_PLATFORM=offscreen).
import QtQuick
import Qsd

Item {
    readonly property bool ready: Qsd.connected && Qsd.daemon !== null

    function finish() {
        console.log("import Qsd:", "constant=" + QsdPower.deviceState.charging,
                    "daemon=" + Qsd.value("/daemon/version"))
        Qt.exit(0)
    }

    onReadyChanged: if (ready) finish()
    Component.onCompleted: if (ready) finish()

    // A deadline for the failure message, not a wait: success quits as soon as the mirror holds
    // the daemon's tree.
    readonly property Timer deadline: Timer {
        interval: 20000
        running: true
        onTriggered: {
            console.log("import Qsd: not connected after 20 s:", Qsd.error)
            Qt.exit(1)
        }
    }
}
