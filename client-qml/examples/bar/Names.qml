pragma Singleton
import QtQuick
import Qsd

// Words for the tree's values, shared by the bar's parts.
QtObject {
    function profile(profile: string): string {
        if (QsdPower.profile.powerSaver === profile) return "Power saver"
        if (QsdPower.profile.performance === profile) return "Performance"
        if (QsdPower.profile.balanced === profile) return "Balanced"
        return "Unknown"
    }
    function profileColor(profile: string): color {
        if (QsdPower.profile.powerSaver === profile) return Theme.good
        if (QsdPower.profile.performance === profile) return Theme.bad
        return Theme.accent
    }
    function security(security: string): string {
        if (QsdNetwork.wifiSecurity.open === security) return "open"
        if (QsdNetwork.wifiSecurity.owe === security) return "OWE"
        if (QsdNetwork.wifiSecurity.sae === security) return "WPA3"
        if (QsdNetwork.wifiSecurity.wpa2Psk === security || QsdNetwork.wifiSecurity.wpaPsk === security) return "WPA2"
        if (QsdNetwork.wifiSecurity.unknown === security) return ""
        return "802.1X"
    }
    // Whether network.connect can ask for a password (WPA-PSK and SAE networks only).
    function takesPassword(security: string): bool {
        return QsdNetwork.wifiSecurity.wpa2Psk === security || QsdNetwork.wifiSecurity.wpaPsk === security
            || QsdNetwork.wifiSecurity.sae === security
    }
    function duration(seconds: real): string {
        var h = Math.floor(seconds / 3600), m = Math.round((seconds % 3600) / 60)
        return h > 0 ? h + " h " + (m < 10 ? "0" : "") + m : m + " min"
    }
}
