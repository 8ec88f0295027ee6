import QtQuick
import QtTest
import Qsd

// Collections as list models: rows are inserted and removed on patches, never reset.
TestCase {
    id: test
    name: "Model"
    when: windowShown

    function callSync(method, params) {
        var out = { done: false }
        Qsd.call(method, params, function(err, res) { out.err = err; out.res = res; out.done = true })
        tryVerify(function() { return out.done }, 10000, method + " answered")
        return out
    }
    function set(path, value) { compare(callSync("debug.set", { path: path, value: value }).err, null, "debug.set " + path) }
    function remove(path) { compare(callSync("debug.remove", { path: path }).err, null, "debug.remove " + path) }

    property var collection: Qsd.model("/debug/coll")

    SignalSpy { id: inserted; target: test.collection; signalName: "rowsInserted" }
    SignalSpy { id: removed; target: test.collection; signalName: "rowsRemoved" }
    SignalSpy { id: reset; target: test.collection; signalName: "modelReset" }
    SignalSpy { id: changedData; target: test.collection; signalName: "dataChanged" }

    Repeater {
        id: rows
        model: test.collection
        // "id" cannot be a required property (it is QML's object id), so the roles are read
        // through `model`, which is how a shell author would write it too.
        delegate: Item {
            property string rid: model.id
            property var rnode: model.node
            property var rvalue: model.value
        }
    }

    function ids() {
        var out = []
        for (var i = 0; i < rows.count; ++i) out.push(rows.itemAt(i).rid)
        return out
    }

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function test_1_insertAndRemoveRows() {
        compare(collection.count, 0)
        compare(collection.path, "/debug/coll")
        compare(Qsd.model("/debug/coll"), collection, "one model per path")

        set("/debug/coll/b", { name: "bee" })
        tryCompare(collection, "count", 1)
        compare(inserted.count, 1)
        compare(inserted.signalArguments[0][1], 0)

        set("/debug/coll/a", { name: "ay" })
        tryCompare(collection, "count", 2)
        compare(inserted.count, 2)
        compare(inserted.signalArguments[1][1], 0, "a is inserted before b (rows sorted by id)")
        set("/debug/coll/c", { name: "sea" })
        tryCompare(collection, "count", 3)
        compare(ids(), ["a", "b", "c"])
        compare(rows.itemAt(1).rnode.name, "bee", "node role")
        compare(rows.itemAt(1).rnode, Qsd.node("/debug/coll/b"))
        verify(rows.itemAt(1).rvalue === rows.itemAt(1).rnode, "the value role of an object item is its node, not a copy")
        compare(collection.idAt(2), "c")
        compare(collection.indexOf("c"), 2)

        // A change inside an object item is the item node's business: the node notifies its
        // property, the model does nothing (rows share the mirror's nodes).
        var bNode = rows.itemAt(1).rnode
        changedData.clear()
        set("/debug/coll/b/name", "B")
        tryCompare(bNode, "name", "B")
        compare(changedData.count, 0, "no dataChanged for a change inside an object item")
        compare(rows.itemAt(1).rnode.name, "B")
        compare(inserted.count, 3)

        remove("/debug/coll/b")
        tryCompare(collection, "count", 2)
        compare(removed.count, 1)
        compare(removed.signalArguments[0][1], 1)
        compare(ids(), ["a", "c"])
        compare(reset.count, 0, "no model reset")
    }

    function test_2_leafItems() {
        set("/debug/leaves", { a: 1, b: "two" })
        var leaves = Qsd.model("/debug/leaves")
        tryCompare(leaves, "count", 2)
        var spy = Qt.createQmlObject('import QtTest; SignalSpy { signalName: "dataChanged" }', test)
        spy.target = leaves
        compare(leaves.data(leaves.index(0, 0), 259), 1, "the value role of a leaf item is its value")
        compare(leaves.data(leaves.index(0, 0), 258), null, "a leaf item has no node")
        set("/debug/leaves/a", 5)
        tryCompare(spy, "count", 1)
        compare(leaves.data(leaves.index(0, 0), 259), 5)
        // Turning into an object changes both roles.
        set("/debug/leaves/b", { x: 1 })
        tryCompare(spy, "count", 2)
        compare(leaves.data(leaves.index(1, 0), 258), Qsd.node("/debug/leaves/b"))
        spy.destroy()
    }

    function test_3_collectionDisappearsAndComesBack() {
        var insertedBefore = inserted.count
        remove("/debug/coll")
        tryCompare(collection, "count", 0)
        set("/debug/coll", { x: { name: "ex" }, y: { name: "why" } })
        tryCompare(collection, "count", 2)
        compare(ids(), ["x", "y"])
        compare(inserted.count, insertedBefore + 1, "both rows in one insertion")
        compare(reset.count, 0, "no model reset")
    }

    // An ordered model (Qsd.model(path, orderPath)): rows follow an array of keys beside the
    // collection, as /tray/order orders /tray/items; rows move, they are never removed and
    // inserted again, so their delegates stay.
    property var ordered: Qsd.model("/debug/ocoll", "/debug/oorder")
    SignalSpy { id: moved; target: test.ordered; signalName: "rowsMoved" }
    SignalSpy { id: orderedRemoved; target: test.ordered; signalName: "rowsRemoved" }
    SignalSpy { id: orderedReset; target: test.ordered; signalName: "modelReset" }
    Repeater {
        id: orderedRows
        model: test.ordered
        delegate: Item { property string rid: model.id }
    }
    function orderedIds() {
        var out = []
        for (var i = 0; i < test.ordered.count; ++i) out.push(test.ordered.idAt(i))
        return out
    }

    function test_4_rowsFollowAnOrderArray() {
        compare(Qsd.model("/debug/ocoll", "/debug/oorder"), ordered, "one model per path and order")
        verify(Qsd.model("/debug/ocoll") !== ordered, "the same path in key order is another model")
        set("/debug/ocoll", { a: { n: 1 }, b: { n: 2 }, c: { n: 3 } })
        set("/debug/oorder", ["c", "a", "b"])
        tryVerify(function() { return orderedIds().join() === "c,a,b" }, 10000, "the array's order")
        var delegateOfA = orderedRows.itemAt(1)
        compare(delegateOfA.rid, "a")
        // The order changes: rows move, the delegates stay.
        set("/debug/oorder", ["a", "b", "c"])
        tryVerify(function() { return orderedIds().join() === "a,b,c" }, 10000, "moved")
        verify(moved.count > 0)
        compare(orderedRows.itemAt(0), delegateOfA, "the same delegate, moved")
        compare(orderedRemoved.count, 0)
        // Keys the array does not list come last, in key order; keys it lists that the
        // collection lacks, and repeated keys, are skipped.
        set("/debug/ocoll/e", { n: 5 })
        set("/debug/ocoll/d", { n: 4 })
        set("/debug/oorder", ["b", "ghost", "b", "a"])
        tryVerify(function() { return orderedIds().join() === "b,a,c,d,e" }, 10000, "unlisted keys last")
        // An item that goes is removed; the order without it changes nothing else.
        remove("/debug/ocoll/a")
        tryVerify(function() { return orderedIds().join() === "b,c,d,e" }, 10000, "a removed")
        compare(orderedRemoved.count, 1)
        // Without the array: key order.
        remove("/debug/oorder")
        tryVerify(function() { return orderedIds().join() === "b,c,d,e" }, 10000, "key order")
        set("/debug/oorder", ["e", "d"])
        tryVerify(function() { return orderedIds().join() === "e,d,b,c" }, 10000, "ordered again")
        compare(orderedReset.count, 0, "no model reset")
    }
}
