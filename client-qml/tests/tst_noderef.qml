import QtQuick
import QtTest
import Qsd

// QsdNode { path } follows a path that does not exist yet: a binding made before the object
// appears picks it up, follows a replacement and goes back to null when it goes.
TestCase {
    id: test
    name: "NodeRef"

    QsdNode { id: later; path: "/debug/later/item" }
    QsdNode { id: leaf; path: "/debug/later/item/level" }
    readonly property var level: later.node?.level
    readonly property bool there: later.exists
    property int nodeChanges: 0
    Connections { target: later; function onNodeChanged() { test.nodeChanges++ } }

    function callSync(method, params) {
        var out = { done: false }
        Qsd.call(method, params, function(err, res) { out.err = err; out.res = res; out.done = true })
        tryVerify(function() { return out.done }, 10000, method + " answered")
        return out
    }
    function set(path, value) { compare(callSync("debug.set", { path: path, value: value }).err, null, "debug.set " + path) }
    function remove(path) { compare(callSync("debug.remove", { path: path }).err, null, "debug.remove " + path) }

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function test_1_boundBeforeThePathExists() {
        compare(later.node, null)
        compare(level, undefined)
        verify(!there)
        compare(Qsd.node("/debug/later/item"), null, "node() is a one-time lookup")
        set("/debug/later", { item: { level: 3 } })
        tryCompare(test, "level", 3)
        verify(there)
        verify(later.node === Qsd.node("/debug/later/item"))
        compare(later.value, { level: 3 })
        compare(leaf.value, 3, "a leaf's value")
        compare(leaf.node, null, "a leaf has no node")
        verify(leaf.exists)
        set("/debug/later/item/level", 4)
        tryCompare(test, "level", 4)
        compare(leaf.value, 4)
    }

    function test_2_goneAndBack() {
        var changes = nodeChanges
        remove("/debug/later")
        tryCompare(later, "node", null)
        verify(!there)
        compare(level, undefined)
        compare(leaf.value, undefined)
        compare(nodeChanges, changes + 1)
        set("/debug/later/item", { level: 5 })
        tryCompare(test, "level", 5)
        compare(nodeChanges, changes + 2)
    }

    function test_3_numericKeys() {
        // PipeWire node keys are numbers: JavaScript reads nodes["41"] as an array index, which
        // a QML object does not have. A QsdNode element (or Qsd.node) finds them.
        set("/debug/nodes", { "41": { name: "sink" }, "57": { name: "headset" } })
        tryVerify(function() { return Qsd.debug.nodes !== undefined })
        compare(Qsd.debug.nodes["41"], undefined, "brackets do not reach a numeric key")
        numeric.path = "/debug/nodes/" + "41"
        tryVerify(function() { return numeric.node !== null })
        compare(numeric.node.name, "sink")
        compare(Qsd.keyOf(numeric.node), "41")
        compare(Qsd.pathOf(numeric.node), "/debug/nodes/41")
        compare(Qsd.debug.nodes.values.map(function(n) { return Qsd.keyOf(n) }), ["41", "57"])
        compare(Qsd.keyOf(Qsd.tree), "")
        compare(Qsd.keyOf(42), "")
        set("/debug/nodes/41/name", "speakers")
        tryCompare(numeric.node, "name", "speakers")
    }
    QsdNode { id: numeric }

    function test_4_pathChanges() {
        set("/debug/other", { level: 9 })
        later.path = "/debug/other"
        tryCompare(test, "level", 9)
        verify(later.node === Qsd.debug.other)
    }
}
