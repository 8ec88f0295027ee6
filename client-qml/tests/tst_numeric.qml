import QtQuick
import QtTest
import Qsd

// Keys that are numbers (PipeWire's serials under /audio/nodes, /audio/links, /audio/devices):
// JavaScript reads nodes["41"] as an array index, which a QObject does not have. get(key) reaches
// them, in a binding too; values, keys(), models, QsdNode { path } and Qsd.node() take them as
// they are.
TestCase {
    id: test
    name: "Numeric"

    function callSync(method, params) {
        var out = { done: false }
        Qsd.call(method, params, function(err, res) { out.err = err; out.res = res; out.done = true })
        tryVerify(function() { return out.done }, 10000, method + " answered")
        return out
    }
    function set(path, value) { compare(callSync("debug.set", { path: path, value: value }).err, null, "debug.set " + path) }
    function remove(path) { compare(callSync("debug.remove", { path: path }).err, null, "debug.remove " + path) }

    property var evals: ({ picked: 0, leaf: 0 })
    function seen(name, value) { evals[name]++; return value }

    // As a bar binds the default sink: the key comes from another field of the tree.
    readonly property string key: Qsd.debug?.current ?? ""
    readonly property var picked: seen("picked", Qsd.debug?.nodes?.get(key) ?? null)
    readonly property string pickedName: picked?.name ?? ""
    readonly property var leaf: seen("leaf", Qsd.debug?.levels?.get(3))
    QsdNode { id: ref; path: "/debug/nodes/" + test.key }

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function test_1_getReachesNumericKeys() {
        set("/debug/nodes", { "41": { name: "speakers", volume: 0.5 }, "100": { name: "headset", volume: 1 } })
        tryVerify(function() { return Qsd.debug?.nodes !== undefined })
        var nodes = Qsd.debug.nodes
        // The trap get() avoids.
        compare(nodes["41"], undefined, "a numeric key is an array index to JavaScript")
        verify(nodes.get("41") !== undefined)
        compare(nodes.get("41").name, "speakers")
        compare(nodes.get(41).name, "speakers", "a number is taken as its decimal string")
        verify(nodes.get("41") === Qsd.node("/debug/nodes/41"), "the same node as everywhere")
        compare(nodes.get("100").volume, 1)
        compare(nodes.get("7"), undefined, "an absent key")
        // Any key, and leaves too.
        verify(Qsd.debug.get("nodes") === nodes)
        set("/debug/flag", true)
        tryVerify(function() { return Qsd.debug.get("flag") === true })
        compare(Qsd.keyOf(nodes.get("41")), "41")
        compare(Qsd.pathOf(nodes.get(100)), "/debug/nodes/100")
    }

    function test_2_valuesKeysModelsAndElements() {
        var nodes = Qsd.debug.nodes
        // The daemon's order: keys sorted as strings ("100" before "41").
        compare(nodes.keys(), ["100", "41"])
        compare(nodes.count, 2)
        compare(nodes.values.map(function(n) { return n.name }), ["headset", "speakers"])
        verify(nodes.values[1] === nodes.get("41"))
        var model = Qsd.model("/debug/nodes")
        compare(model.count, 2)
        compare(model.idAt(1), "41")
        compare(model.indexOf("41"), 1)
        compare(Qsd.value("/debug/nodes")["41"].name, "speakers", "a copy is a plain JS object")

        set("/debug/current", "41")
        tryCompare(test, "pickedName", "speakers")
        verify(ref.node === nodes.get("41"), "QsdNode { path } with a numeric key")
        compare(ref.value.volume, 0.5)
    }

    function test_3_getInABindingFollowsTheKey() {
        // Bound before the key exists: it picks the node up when it appears.
        set("/debug/current", "7")
        tryCompare(test, "picked", null)
        compare(ref.node, null)
        set("/debug/nodes/7", { name: "hdmi", volume: 0.2 })
        tryCompare(test, "pickedName", "hdmi")
        verify(ref.node === picked)
        compare(Qsd.debug.nodes.keys(), ["100", "41", "7"])

        // A change inside the node notifies its own property, not the lookup.
        var before = evals.picked
        set("/debug/nodes/7/volume", 0.3)
        tryCompare(picked, "volume", 0.3)
        compare(evals.picked, before, "a field inside the entry does not re-evaluate get()")

        // It goes: the binding follows, and keys() does not list it (unlike QQmlPropertyMap's).
        remove("/debug/nodes/7")
        tryCompare(test, "picked", null)
        compare(ref.node, null)
        compare(Qsd.debug.nodes.keys(), ["100", "41"])
        compare(Qsd.debug.nodes.count, 2)
        compare(Qsd.model("/debug/nodes").count, 2)

        // Removed and added in one batch: the same count, yet the lookup follows.
        set("/debug/current", "41")
        tryCompare(test, "pickedName", "speakers")
        set("/debug/nodes", { "100": { name: "headset", volume: 1 }, "42": { name: "speakers2", volume: 0.5 } })
        tryCompare(test, "picked", null)
        set("/debug/current", "42")
        tryCompare(test, "pickedName", "speakers2")
    }

    function test_4_leafEntries() {
        set("/debug/levels", { "3": 0.25, "12": 0.5 })
        tryCompare(test, "leaf", 0.25)
        set("/debug/levels/3", 0.75)
        tryCompare(test, "leaf", 0.75)
        remove("/debug/levels/3")
        tryCompare(test, "leaf", undefined)
        compare(Qsd.debug.levels.values, [0.5])
    }
}
