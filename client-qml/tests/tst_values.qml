import QtQuick
import QtTest
import Qsd

// Every node has a notifying `values` and `count`: a binding over a collection's items
// re-evaluates when items come and go, and not when a field it does not read changes.
TestCase {
    id: test
    name: "Values"

    function callSync(method, params) {
        var out = { done: false }
        Qsd.call(method, params, function(err, res) { out.err = err; out.res = res; out.done = true })
        tryVerify(function() { return out.done }, 10000, method + " answered")
        return out
    }
    function set(path, value) { compare(callSync("debug.set", { path: path, value: value }).err, null, "debug.set " + path) }
    function remove(path) { compare(callSync("debug.remove", { path: path }).err, null, "debug.remove " + path) }

    property var evals: ({ on: 0, count: 0 })
    function seen(name, value) { evals[name]++; return value }

    // As Quickshell users write Networking.devices.values.filter(...).
    readonly property var devices: Qsd.debug?.devices ?? null
    readonly property var onNames: seen("on", devices ? devices.values.filter(function(d) { return d.on }).map(function(d) { return d.name }) : [])
    readonly property int deviceCount: seen("count", devices ? devices.count : -1)

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function test_1_valuesAndCount() {
        set("/debug/devices", { b: { name: "bee", on: true, other: 0 }, a: { name: "ay", on: false, other: 0 } })
        tryCompare(test, "deviceCount", 2)
        compare(onNames, ["bee"])
        // In key order (the daemon's and the model's), each item the same node as elsewhere.
        compare(devices.values.length, 2)
        verify(devices.values[0] === Qsd.node("/debug/devices/a"))
        verify(devices.values[1] === Qsd.debug.devices.b)
        compare(Qsd.model("/debug/devices").idAt(0), "a")
    }

    function test_2_reevaluatedOnAddAndRemove() {
        var before = evals.on, beforeCount = evals.count
        set("/debug/devices/c", { name: "sea", on: true, other: 0 })
        tryCompare(test, "onNames", ["bee", "sea"])
        compare(evals.on, before + 1, "one re-evaluation for the added item")
        compare(deviceCount, 3)
        compare(evals.count, beforeCount + 1)

        remove("/debug/devices/b")
        tryCompare(test, "onNames", ["sea"])
        compare(evals.on, before + 2, "one re-evaluation for the removed item")
        compare(deviceCount, 2)
        compare(evals.count, beforeCount + 2)
    }

    function test_3_notOnAnUnrelatedField() {
        var before = evals.on, beforeCount = evals.count
        set("/debug/devices/c/other", 1)
        set("/debug/devices/a/other", 2)
        tryCompare(Qsd.debug.devices.a, "other", 2)
        compare(evals.on, before, "a field the binding does not read does not re-evaluate it")
        compare(evals.count, beforeCount)
        // A field it does read re-evaluates it, through that item's property only.
        set("/debug/devices/a/on", true)
        tryCompare(test, "onNames", ["ay", "sea"])
        compare(evals.on, before + 1)
        compare(evals.count, beforeCount, "count is not notified by a change inside an item")
        // Republishing the collection unchanged notifies nothing.
        set("/debug/devices", { a: { name: "ay", on: true, other: 2 }, c: { name: "sea", on: true, other: 1 } })
        compare(callSync("hello").err, null)   // the republish has been applied
        compare(evals.on, before + 1)
    }

    function test_4_leafEntriesAndKeysThatHideTheMembers() {
        set("/debug/leafy", { x: 1, y: "two" })
        tryVerify(function() { return Qsd.debug.leafy !== undefined })
        compare(Qsd.debug.leafy.values, [1, "two"])
        compare(Qsd.debug.leafy.count, 2)
        set("/debug/leafy/y", "three")
        tryCompare(Qsd.debug.leafy, "values", [1, "three"])
        // A tree key named count is the key's value (Qsd.value still reads everything).
        set("/debug/counted", { count: 42 })
        tryVerify(function() { return Qsd.debug.counted !== undefined })
        compare(Qsd.debug.counted.count, 42)
    }

    function test_5_keysThatNameMembersOfEveryNode() {
        // No property can be named after keys() or a QObject member; the entries are kept all the
        // same, and so are the other keys of the same batch.
        set("/debug/members", { keys: 1, destroyed: 2, x: 3 })
        tryVerify(function() { return Qsd.debug.members !== undefined })
        var members = Qsd.debug.members
        compare(members.x, 3)
        compare(members.keys(), ["destroyed", "keys", "x"])
        compare(members.values, [2, 1, 3])
        compare(members.count, 3)
        compare(members.get("keys"), 1)
        compare(members.get("destroyed"), 2)
        set("/debug/members/keys", 4)
        tryCompare(members, "values", [2, 4, 3])
        // Nodes are read-only: an assignment is refused with a warning.
        ignoreWarning("Qsd: /debug/members/x is read-only; change it with an action (Qsd.call)")
        members.x = 9
        compare(members.x, 3)
    }

    function test_6_gone() {
        remove("/debug/devices")
        tryCompare(test, "deviceCount", -1)
        compare(onNames, [])
    }
}
