import QtQuick
import QtTest
import Qsd

// Actions: the result and every error reach the callback.
TestCase {
    name: "Actions"

    function callSync(method, params) {
        var out = { done: false, calls: 0 }
        Qsd.call(method, params, function(err, res) { out.err = err; out.res = res; out.done = true; out.calls++ })
        tryVerify(function() { return out.done }, 10000, method + " answered")
        return out
    }

    function initTestCase() {
        QsdDaemon.start()
        tryVerify(function() { return Qsd.connected }, 10000, "connected")
    }

    function test_result() {
        var r = callSync("debug.set", { path: "/debug/action", value: { n: 1 } })
        compare(r.err, null)
        compare(r.res, { path: "/debug/action" })
        var h = callSync("hello")
        compare(h.err, null)
        compare(h.res.protocol, 1)
        compare(h.res.epoch, Qsd.epoch)
    }

    function test_invalidParams() {
        var r = callSync("debug.set", { path: "/elsewhere", value: 1 })
        compare(r.res, undefined)
        compare(r.err.code, -32602)
        compare(r.err.data.param, "path")
        verify(r.err.message.length > 0)
    }

    function test_unknownMethod() {
        var r = callSync("no.such.method", {})
        compare(r.err.code, -32601)
    }

    function test_notFound() {
        var r = callSync("debug.remove", { path: "/debug/never/was" })
        compare(r.err.code, -32001)
    }

    // call(method, callback), params left out as the documentation allows: the function was
    // taken for params and converted to JSON without end, and the process died of a stack overflow.
    function test_paramsLeftOut() {
        var out = { done: false }
        Qsd.call("hello", function(err, res) { out.err = err; out.res = res; out.done = true })
        tryVerify(function() { return out.done }, 10000, "hello answered")
        compare(out.err, null)
        compare(out.res.protocol, 1)
        // A function inside params is sent as null, as JSON has no form for it.
        var r = callSync("debug.set", { path: "/debug/fn", value: { f: function() {}, n: 2 } })
        compare(r.err, null)
        compare(callSync("tree.get", { path: "/debug/fn" }).res.value, { f: null, n: 2 })
    }

    function test_callbackCalledOnce() {
        var r = callSync("tree.get", { path: "/daemon/protocol" })
        compare(r.res.value, 1)
        // Answers come in order on the connection: a second callback for the first call would
        // have come before the answer to this one.
        callSync("hello", {})
        compare(r.calls, 1)
    }
}
