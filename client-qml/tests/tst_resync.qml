import QtQuick
import QtTest
import Qsd

// A client that reads too slowly: the daemon drops its queued changes and sends tree.resync;
// afterwards the mirror equals the daemon's tree exactly.
TestCase {
    id: test
    name: "Resync"

    SignalSpy { id: resyncs; target: Qsd; signalName: "resynced" }

    function callSync(method, params) {
        var out = { done: false }
        // The mirror as it was when the answer arrived: lines read after it (a later change) may
        // be applied before tryVerify looks again.
        Qsd.call(method, params, function(err, res) {
            out.err = err; out.res = res; out.done = true
            out.revision = Qsd.revision; out.mirror = JSON.stringify(Qsd.value(""))
        })
        tryVerify(function() { return out.done }, 30000, method + " answered")
        return out
    }

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function test_overflowResync() {
        compare(callSync("debug.set", { path: "/debug/flood", value: {} }).err, null)
        var flood = Qsd.node("/debug")
        resyncs.clear()
        Qsd.pauseReading()
        // 20 000 batches while the client reads nothing: more than the daemon queues per client.
        // The answer comes once all are written: a bound for a slow (sanitized, loaded) machine.
        var r = QsdDaemon.rpc("debug.flood", { count: 20000, keys: 50, batch: 1 }, 180000)
        compare(r.error, undefined)
        compare(r.result.writes, 20000)
        Qsd.resumeReading()
        tryVerify(function() { return resyncs.count >= 1 }, 60000, "a tree.resync arrived")

        var got = callSync("tree.get", { path: "" })
        compare(got.revision, got.res.revision)
        compare(got.mirror, JSON.stringify(got.res.value), "mirror exact after resync")
        compare(Qsd.debug.flood.k49, 19999)
        compare(Qsd.debug.flood.k0, 19950)
        compare(Qsd.node("/debug"), flood, "nodes survive a resync")
        verify(Qsd.connected)
    }
}
