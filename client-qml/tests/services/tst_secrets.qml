import QtQuick
import QtTest
import Qsd

// A shell answering NetworkManager's requests for secrets: QsdSecretPrompter holds the claim,
// python-dbusmock's NetworkManager asks qsd's agent (driver.py nm-ask-secrets), the request shows
// in Qsd.network.secretRequests with the generated constants, and the answer reaches
// NetworkManager exactly. The claim is made again after qsd is killed with SIGKILL; without it,
// NetworkManager is told NoSecrets at once. /network/profiles lists the VPN profiles.
TestCase {
    id: test
    name: "Secrets"

    QsdSecretPrompter { id: prompter }

    readonly property var requests: Qsd.network?.secretRequests?.values ?? []
    readonly property var vpns: (Qsd.network?.profiles?.values ?? []).filter(p => QsdNetwork.profileType.vpn === p.type)

    function reply(token) {
        var out = QsdDaemon.drive("nm-agent-reply", [token]).output
        return JSON.parse(out)
    }
    function ask() {
        var r = QsdDaemon.drive("nm-ask-secrets", ["Neighbour"])
        compare(r.code, 0, r.output)
        return r.output
    }

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
        tryVerify(function() { return Qsd.network?.available === true }, 15000, "/network available")
    }

    function test_1_promptedAndAnswered() {
        tryVerify(function() { return prompter.effective }, 10000, "the claim is held")
        tryVerify(function() { return Qsd.network.secretAgentRegistered === true }, 15000, "the agent is registered")
        var token = ask()
        tryVerify(function() { return requests.length === 1 }, 10000, "the request is in the tree")
        var request = requests[0]
        compare(request.type, QsdNetwork.secretType.wifi)
        compare(request.reason, QsdNetwork.secretReason.missing)
        compare(request.ssid, "Neighbour")
        compare(request.fields.length, 1)
        compare(request.fields[0].key, "psk")
        compare(reply(token).state, "pending")
        var key = Qsd.keyOf(request)
        var answered = null
        Qsd.call("network.answerSecrets", { request: key, secrets: { psk: "swordfish rising" } },
                 function(err, result) { answered = err ? err : result })
        tryVerify(function() { return answered !== null }, 10000)
        compare(answered.request, key)
        tryVerify(function() { return reply(token).state === "ok" }, 10000, "NetworkManager has the answer")
        compare(JSON.stringify(reply(token).secrets), JSON.stringify({ "802-11-wireless-security": { psk: "swordfish rising" } }))
        tryVerify(function() { return requests.length === 0 }, 10000, "the request is gone")
    }

    function test_2_claimedAgainAfterKill9() {
        var epoch = Qsd.epoch
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000, "disconnect noticed")
        verify(!prompter.effective)
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected && Qsd.epoch !== epoch }, 15000, "reconnected to the new daemon")
        tryVerify(function() { return prompter.effective }, 15000, "the claim is made again")
        var token = ask()
        tryVerify(function() { return requests.length === 1 }, 10000, "the new daemon prompts")
        Qsd.call("network.cancelSecrets", { request: Qsd.keyOf(requests[0]) })
        tryVerify(function() { return reply(token).state === "error" }, 10000)
        compare(reply(token).error, "org.freedesktop.NetworkManager.SecretAgent.UserCanceled")
    }

    function test_3_noClaimNoPrompt() {
        prompter.active = false
        verify(!prompter.effective)
        var done = false
        Qsd.call("hello", {}, function() { done = true })   // the release is handled by then
        tryVerify(function() { return done }, 10000)
        var r = QsdDaemon.drive("nm-ask-secrets-once", ["Neighbour"])
        compare(r.code, 0, r.output)
        compare(JSON.parse(r.output).error, "org.freedesktop.NetworkManager.SecretAgent.NoSecrets")
        compare(requests.length, 0)
    }

    function test_4_vpnProfiles() {
        tryVerify(function() { return vpns.length === 1 }, 10000)
        compare(vpns[0].id, "Work VPN")
        compare(vpns[0].vpnService, "openvpn")
        verify(vpns[0].active)
        verify(Qsd.network.vpnActive)
    }
}
