import QtQuick
import Qsd

// One letter off: qmllint must report it.
Item {
    readonly property bool connected: QsdNetwork.deviceState.conected === Qsd.network?.devices?.wlan0?.state
}
