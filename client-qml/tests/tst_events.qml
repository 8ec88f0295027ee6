import QtQuick
import QtTest
import Qsd

// Events reach QML: the Qsd.event signal for Qsd.eventTopics, QsdEvents elements for theirs,
// and both again after the daemon restarts (the client subscribes to its topics again).
TestCase {
    id: test
    name: "Events"

    property var received: []
    property var fromSingleton: []

    QsdEvents {
        id: failures
        topics: [QsdNetwork.events.connectionFailed, "test.*"]
        onEvent: (topic, data) => test.received.push({ topic: topic, data: data })
    }

    Connections {
        target: Qsd
        function onEvent(topic, data) { test.fromSingleton.push(topic) }
    }

    function callSync(method, params) {
        var out = { done: false }
        Qsd.call(method, params, function(err, res) { out.err = err; out.res = res; out.done = true })
        tryVerify(function() { return out.done }, 10000, method + " answered")
        return out
    }

    // The client's events.subscribe is sent on its own connection before this call, so once
    // the call is answered the daemon has the topics (requests are handled in order).
    function topicsSettled() {
        wait(1)   // lets a coalesced events.subscribe go out first
        compare(callSync("hello").err, null)
    }

    function emitEvent(topic, data) {
        compare(QsdDaemon.rpc("debug.emit", { topic: topic, data: data }).error, undefined)
    }

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
        topicsSettled()
    }

    function init() {
        received = []
        fromSingleton = []
    }

    function test_1_elementReceivesItsTopics() {
        emitEvent("network.connectionFailed", { device: "wlan0", network: "Home", reason: "noSecrets" })
        tryCompare(test.received, "length", 1)
        compare(received[0].topic, "network.connectionFailed")
        compare(received[0].data, { device: "wlan0", network: "Home", reason: "noSecrets" })
        // A pattern, and a topic nobody asked for (never delivered).
        emitEvent("other.thing", { n: 0 })
        emitEvent("test.ping", { n: 1 })
        tryCompare(test.received, "length", 2)
        compare(received[1].topic, "test.ping")
        compare(received[1].data.n, 1)
        // The singleton sees every event the client receives.
        compare(fromSingleton, ["network.connectionFailed", "test.ping"])
    }

    function test_2_eventTopicsOfTheSingleton() {
        Qsd.eventTopics = ["solo.*"]
        topicsSettled()
        emitEvent("solo.one", 7)
        tryCompare(test.fromSingleton, "length", 1)
        compare(fromSingleton[0], "solo.one")
        compare(received.length, 0, "the element's topics do not include solo.*")
        Qsd.eventTopics = []
        topicsSettled()
    }

    function test_3_disabledAndDynamicElements() {
        failures.enabled = false
        topicsSettled()
        emitEvent("test.ping", { n: 2 })
        // A second element created now, with an overlapping topic, marks when the event arrived.
        var later = Qt.createQmlObject('import Qsd; QsdEvents { topics: ["test.pong"] }', test)
        var pongs = []
        later.event.connect(function(topic, data) { pongs.push(data) })
        topicsSettled()
        emitEvent("test.pong", "p")
        tryCompare(pongs, "length", 1)
        compare(pongs[0], "p")
        compare(received.length, 0, "a disabled element receives nothing")
        later.destroy()
        failures.enabled = true
        topicsSettled()
    }

    function test_4_resubscribedAfterRestart() {
        var epoch = Qsd.epoch
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000, "disconnect noticed")
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected && Qsd.epoch !== epoch }, 15000, "reconnected to the new daemon")
        topicsSettled()
        emitEvent("network.connectionFailed", { device: "wlan0", network: "Cafe", reason: "wifiAuthTimeout" })
        tryCompare(test.received, "length", 1, 10000)
        compare(received[0].data.network, "Cafe")
    }
}
