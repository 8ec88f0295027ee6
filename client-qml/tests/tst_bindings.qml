import QtQuick
import QtTest
import Qsd

// Bindings on tree nodes follow the daemon, and a change notifies only the property it changes.
TestCase {
    id: test
    name: "Bindings"

    function callSync(method, params) {
        var out = { done: false }
        Qsd.call(method, params, function(err, res) { out.err = err; out.res = res; out.done = true })
        tryVerify(function() { return out.done }, 10000, method + " answered")
        return out
    }
    function set(path, value) {
        var r = callSync("debug.set", { path: path, value: value })
        compare(r.err, null, "debug.set " + path)
    }

    // Counts evaluations of each binding below without creating dependencies of its own.
    property var evals: ({})
    function seen(name, value) { evals[name] = (evals[name] || 0) + 1; return value }

    readonly property var domainValue: Qsd.debug ? Qsd.debug.b?.x : undefined
    property var watched: null
    readonly property var wa: seen("a", watched ? watched.a : undefined)
    readonly property var wb: seen("b", watched ? watched.b : undefined)
    readonly property var wd: seen("d", watched && watched.c ? watched.c.d : undefined)

    // Two values that the daemon always changes in one batch: a binding must never see them differ.
    property var pair: null
    property bool sawTornBatch: false
    readonly property bool pairEqual: pair && pair.x && pair.y ? pair.x.v === pair.y.v && pair.x.v === pair.w : true
    onPairEqualChanged: if (!pairEqual) sawTornBatch = true

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function test_1_bindingFollowsChanges() {
        set("/debug/b", { x: 1, y: "one" })
        tryCompare(test, "domainValue", 1)
        set("/debug/b/x", 2)
        tryCompare(test, "domainValue", 2)
        compare(Qsd.debug.b.y, "one")
        compare(Qsd.value("/debug/b"), { x: 2, y: "one" })
        compare(Qsd.node("/debug/b"), Qsd.debug.b, "node() returns the property's node")
        compare(Qsd.node("/debug/b/x"), null, "a leaf has no node")
        compare(Qsd.value("/debug/nothing"), undefined)
        verify(Qsd.revision > 0)
        verify(Qsd.epoch.length > 0)
        compare(Qsd.error, "")
        compare(Qsd.tree.debug, Qsd.debug)
        compare(Qsd.daemon.clients >= 1, true)
    }

    function test_2_onlyTheChangedPropertyNotifies() {
        set("/debug/n", { a: 1, b: 2, c: { d: 3, e: 4 } })
        tryVerify(function() { return Qsd.node("/debug/n") !== null })
        watched = Qsd.node("/debug/n")
        compare(wa, 1); compare(wb, 2); compare(wd, 3)
        var before = JSON.parse(JSON.stringify(evals))

        // A change of one leaf.
        set("/debug/n/a", 10)
        tryCompare(test, "wa", 10)
        compare(evals.a, before.a + 1, "a re-evaluated once")
        compare(evals.b, before.b, "sibling b not notified")
        compare(evals.d, before.d, "nested d not notified")

        // The daemon republishes the whole object with one nested leaf changed: the client
        // diffs, so only d notifies, and the node objects stay the same.
        var c = watched.c
        set("/debug/n", { a: 10, b: 2, c: { d: 5, e: 4 } })
        tryCompare(test, "wd", 5)
        compare(evals.a, before.a + 1, "a not notified by the republish")
        compare(evals.b, before.b, "b not notified by the republish")
        compare(evals.d, before.d + 1, "d notified once")
        compare(Qsd.node("/debug/n"), watched, "same node after a republish")
        compare(watched.c, c, "same nested node after a republish")
    }

    function test_3_removedObjectsAndComingBack() {
        set("/debug/gone", { v: 1 })
        watched = null
        tryVerify(function() { return Qsd.debug.gone !== undefined && Qsd.debug.gone.v === 1 })
        var r = callSync("debug.remove", { path: "/debug/gone" })
        compare(r.err, null)
        tryVerify(function() { return Qsd.debug.gone === undefined }, 5000, "removed object is undefined")
        compare(Qsd.node("/debug/gone"), null)
        set("/debug/gone", { v: 2 })
        tryVerify(function() { return Qsd.debug.gone !== undefined && Qsd.debug.gone.v === 2 }, 5000, "back")
    }

    function test_4_typesAreConverted() {
        set("/debug/t", { s: "x/y~z", i: 42, f: 0.25, t: true, n: null, l: [1, "two", { three: 3 }], "key/with~chars": 7 })
        tryVerify(function() { return Qsd.node("/debug/t") !== null })
        var t = Qsd.node("/debug/t")
        compare(t.s, "x/y~z"); compare(t.i, 42); compare(t.f, 0.25); compare(t.t, true)
        compare(t.n, null); compare(t.l, [1, "two", { three: 3 }])
        compare(t["key/with~chars"], 7)
        compare(Qsd.value("/debug/t/key~1with~0chars"), 7)
    }

    function test_5_noBindingSeesHalfABatch() {
        set("/debug/pair", { x: { v: 0 }, y: { v: 0 }, w: 0 })
        tryVerify(function() { return Qsd.node("/debug/pair") !== null })
        pair = Qsd.node("/debug/pair")
        verify(pairEqual)
        for (var i = 1; i <= 20; ++i)
            set("/debug/pair", { x: { v: i }, y: { v: i }, w: i })
        tryCompare(pair, "w", 20)
        compare(pair.x.v, 20)
        verify(!sawTornBatch, "a binding saw a half-applied batch")
    }
}
