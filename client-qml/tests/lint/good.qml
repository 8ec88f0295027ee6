import QtQuick
import Qsd

// Uses every kind of generated constant and every element the module has; qmllint must pass.
// A note on Qt 6.4's qmllint: it stops checking a binding at the first member access on a
// tree node (typed var), so a constant is checked when it comes first:
// `QsdNetwork.deviceState.connected === device.state`, not the other way round.
Item {
    id: root
    readonly property var device: Qsd.network?.devices?.wlan0 ?? null
    readonly property bool connected: QsdNetwork.deviceState.connected === device?.state
    readonly property bool wifi: QsdNetwork.deviceType.wifi === device?.type
    readonly property string performance: QsdPower.profile.performance
    readonly property string band: QsdNetwork.wifiBand._2_4GHz
    readonly property string running: QsdCore.backendState.running
    readonly property int batteries: Qsd.model("/power/devices").count
    readonly property string sinkType: QsdAudio.nodeType.audioSink
    readonly property string frontLeft: QsdAudio.channel.frontLeft
    readonly property string passive: QsdTray.itemStatus.passive
    readonly property string checkmark: QsdTray.menuEntryToggleType.checkmark
    readonly property string clicked: QsdTray.menuEvent.clicked
    readonly property var sink: Qsd.audio?.nodes?.get(Qsd.audio?.defaultAudioSink ?? "") ?? null

    QsdEvents {
        topics: [QsdNetwork.events.connectionFailed]
        onEvent: (topic, data) => console.log(topic, data.reason === QsdNetwork.connectionFailReason.noSecrets)
    }
    QsdProfileHold { profile: QsdPower.profile.performance; reason: "lint"; active: root.connected }
    QsdWifiScanner { device: "wlan0"; active: root.wifi }
    QsdPeakMonitor { id: meter; node: Qsd.audio?.defaultAudioSink ?? ""; active: false }
    QsdNode { id: battery; path: "/power/displayDevice" }
    readonly property real level: meter.peak + (battery.exists ? battery.node.percentage : 0)
}
