import QtQuick
import QtTest
import Qsd

// Calls made before the first connection (Component.onCompleted) or while the daemon restarts
// wait for the connection; once the daemon has been unreachable for longer than the wait,
// calls fail at once.
TestCase {
    id: test
    name: "Queue"
    // The tests run once the window shows, after Component.onCompleted below.
    when: windowShown

    property bool connectedWhenCalled: true
    property var early: null
    Component.onCompleted: {
        // Before the client has connected: the singleton connects from the event loop.
        test.connectedWhenCalled = Qsd.connected
        Qsd.call("debug.set", { path: "/debug/early", value: 1 }, function(err, res) {
            test.early = { err: err, res: res }
        })
    }

    function callAsync(method, params) {
        var out = { done: false }
        Qsd.call(method, params, function(err, res) { out.err = err; out.res = res; out.done = true })
        return out
    }

    function initTestCase() {
        QsdDaemon.start()
    }

    function test_1_callFromComponentOnCompleted() {
        compare(connectedWhenCalled, false, "the call was made before the connection")
        tryVerify(function() { return early !== null }, 10000, "answered")
        compare(early.err, null)
        compare(early.res, { path: "/debug/early" })
        tryCompare(Qsd, "connected", true)
        compare(Qsd.value("/debug/early"), 1)
    }

    function test_2_callDuringARestart() {
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000, "disconnect noticed")
        var during = callAsync("debug.set", { path: "/debug/during", value: 2 })
        wait(20)
        verify(!during.done, "the call waits for the daemon")
        verify(QsdDaemon.start())
        tryVerify(function() { return during.done }, 10000, "answered by the new daemon")
        compare(during.err, null)
        tryCompare(Qsd, "connected", true)
        compare(Qsd.value("/debug/during"), 2)
    }

    function test_3_unreachableForLongFailsFast() {
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000, "disconnect noticed")
        // This call waits the whole wait (about 5 s) and then fails.
        var waited = callAsync("hello")
        tryVerify(function() { return waited.done }, 20000, "the waiting call gave up")
        compare(waited.err.code, -32099)
        compare(waited.err.message, "Not connected to qsd")
        // The daemon has now been unreachable for longer than the wait: no more waiting.
        var fast = callAsync("hello")
        wait(20)
        verify(fast.done, "failed at once")
        compare(fast.err.code, -32099)
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 15000, "reconnected")
        var after = callAsync("hello")
        tryVerify(function() { return after.done }, 10000)
        compare(after.err, null)
    }
}
