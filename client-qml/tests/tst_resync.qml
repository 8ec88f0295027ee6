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

    // The subscriptions this connection can still open (the daemon allows 64): opened until one is
    // refused, then closed again.
    function slotsLeft() {
        var ids = []
        for (var i = 0; i < 70; ++i) {
            var r = callSync("tree.subscribe", { paths: ["/daemon/pid"] })
            if (r.err) {
                compare(r.err.code, -32003, "refused for the limit")
                break
            }
            ids.push(r.res.subscription)
        }
        for (var j = 0; j < ids.length; ++j) compare(callSync("tree.unsubscribe", { subscription: ids[j] }).err, null)
        return ids.length
    }

    // Qsd.paths changed twice before the daemon answered the first change: one snapshot, of the
    // paths wanted last, and no subscription left open behind it. Before, the first answer was
    // read against the second paths (an empty mirror for a round trip, a second resync) and its
    // subscription stayed open, its changes streamed to a client that dropped them.
    function test_pathsChangedTwiceInOneRoundTrip() {
        compare(callSync("debug.set", { path: "/debug/twice", value: 1 }).err, null)
        var before = slotsLeft()
        var seen = []
        var record = function() { seen.push(Qsd.daemon !== null) }
        Qsd.resynced.connect(record)
        Qsd.paths = ["/debug"]
        Qsd.paths = ["/daemon"]
        tryVerify(function() { return seen.length >= 1 && Qsd.daemon !== null && Qsd.debug === null }, 10000,
                  "the paths wanted last in the mirror")
        // Answered after every line the daemon sent before it: a second snapshot would be in.
        callSync("tree.get", { path: "/daemon/pid" })
        Qsd.resynced.disconnect(record)
        compare(seen, [true], "one snapshot, not empty")
        compare(slotsLeft(), before, "the superseded subscription was closed")
        Qsd.paths = [""]
        tryVerify(function() { return Qsd.debug !== null && Qsd.daemon !== null }, 10000, "the whole tree again")
    }
}
