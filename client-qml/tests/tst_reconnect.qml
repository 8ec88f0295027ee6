import QtQuick
import QtTest
import Qsd

// A daemon restart: the client reconnects, resubscribes, and its mirror equals the new
// daemon's tree; bindings made before the restart keep working.
TestCase {
    id: test
    name: "Reconnect"

    function callSync(method, params) {
        var out = { done: false }
        // The mirror as it was when the answer arrived: lines read after it (a later change) may
        // be applied before tryVerify looks again.
        Qsd.call(method, params, function(err, res) {
            out.err = err; out.res = res; out.done = true
            out.revision = Qsd.revision; out.mirror = JSON.stringify(Qsd.value(""))
        })
        tryVerify(function() { return out.done }, 10000, method + " answered")
        return out
    }

    readonly property var survivor: Qsd.debug?.survivor?.value

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function mirrorEqualsDaemon() {
        var r = callSync("tree.get", { path: "" })
        compare(r.err, null)
        // The answer follows every tree.changed sent before it on the same connection.
        compare(r.revision, r.res.revision, "mirror revision is the daemon's")
        compare(r.mirror, JSON.stringify(r.res.value), "mirror equals tree.get \"\"")
    }

    function test_killAndRestart() {
        compare(callSync("debug.set", { path: "/debug/survivor", value: { value: "before" } }).err, null)
        tryCompare(test, "survivor", "before")
        var epoch = Qsd.epoch

        // A request in flight when the daemon dies gets an error, not silence.
        var inflight = { done: false }
        Qsd.call("debug.flood", { count: 2000000, keys: 10, batch: 1 }, function(err, res) { inflight.err = err; inflight.done = true })
        wait(20)
        QsdDaemon.kill()
        tryVerify(function() { return !Qsd.connected }, 5000, "disconnect noticed")
        tryVerify(function() { return inflight.done }, 5000, "in-flight call answered")
        compare(inflight.err.code, -32099)
        verify(Qsd.error.length > 0, "error says why")

        // A call made now waits for the daemon (tst_queue.qml covers the queue).
        var waiting = { done: false }
        Qsd.call("hello", {}, function(err, res) { waiting.err = err; waiting.res = res; waiting.done = true })

        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 15000, "reconnected")
        verify(Qsd.epoch !== epoch, "a new daemon epoch")
        tryVerify(function() { return waiting.done }, 10000, "the waiting call was sent once connected")
        compare(waiting.err, null)
        compare(waiting.res.epoch, Qsd.epoch)
        compare(Qsd.error, "")
        // The new daemon has no /debug: the binding follows.
        tryCompare(test, "survivor", undefined)
        mirrorEqualsDaemon()

        // Changes made through another connection arrive; the old binding picks them up.
        compare(QsdDaemon.rpc("debug.set", { path: "/debug/survivor", value: { value: "after" } }).error, undefined)
        tryCompare(test, "survivor", "after")
        mirrorEqualsDaemon()
    }
}
