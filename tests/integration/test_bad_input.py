"""Bad input, one case per row: each gets the documented answer, the daemon stays up, and a
second client — subscribed to the whole tree and receiving changes throughout — is unaffected:
it sees every change made between the cases and its mirror equals the daemon's tree after each."""

import json
import os
import random
import socket
import time

import pytest

from qsdtest import Env, wait_until
from rpcutil import (assert_error, assert_result, connect_raw, exchange, next_is_answer_to, read_raw_line,
                     sync_mirror)

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
NOT_FOUND, LIMIT_EXCEEDED = -32001, -32003
MAX_LINE = 1 << 20


class World:
    def __init__(self):
        self.env = Env(buses=False)
        self.env.start_qsd(backends=[])
        self.driver = self.env.client()
        self.watcher = self.env.client()
        self.sub = self.watcher.subscribe([""])
        self.tick = 0

    def close(self):
        self.driver.close()
        self.watcher.close()
        self.env.close()


@pytest.fixture(scope="module")
def world():
    """One daemon for the module; its teardown fails unless qsd exits cleanly, with no crash
    marker in its log after every case of the module (Env.close)."""
    w = World()
    yield w
    w.close()


@pytest.fixture
def c(world):
    """A fresh client for one case; around the case, the watcher must keep receiving."""
    w = world
    w.tick += 1
    w.driver.call("debug.set", {"path": "/debug/tick", "value": w.tick})
    w.watcher.wait_value(w.sub, "/debug/tick", w.tick)
    client = w.env.client()
    yield client
    client.close()
    assert w.env.daemon.poll() is None, "qsd died: " + w.env.qsd_log()[-2000:]
    w.tick += 1
    w.driver.call("debug.set", {"path": "/debug/tick", "value": w.tick})
    w.watcher.wait_value(w.sub, "/debug/tick", w.tick)
    sync_mirror(w.watcher, w.sub, w.driver)
    # The case's client and the driver both still get answers.
    assert w.driver.call("hello")["protocol"] == 1


def test_line_of_2_mib(c):
    line = '{"jsonrpc":"2.0","id":1,"method":"debug.set","params":{"path":"/debug/big","value":"' + "x" * (2 << 20) + '"}}\n'
    c.send_raw(line)
    msg = json.loads(read_raw_line(c))
    err = assert_error(msg, INVALID_REQUEST, None, {"limit": "lineBytes", "max": MAX_LINE})
    assert "too long" in err["message"]
    # The rest of the oversized line is discarded; the connection keeps working.
    next_is_answer_to(c, 2)
    msg = exchange(c, '{"jsonrpc":"2.0","id":3,"method":"tree.get","params":{"path":"/debug/big"}}')
    assert_error(msg, NOT_FOUND, 3)


def test_line_just_under_the_limit_is_accepted(c):
    head = '{"jsonrpc":"2.0","id":1,"method":"debug.set","params":{"path":"/debug/big","value":"'
    tail = '"}}'
    line = head + "y" * (MAX_LINE - len(head) - len(tail)) + tail
    assert len(line) == MAX_LINE
    assert assert_result(exchange(c, line), 1) == {"path": "/debug/big"}
    assert c.call("debug.remove", {"path": "/debug/big"}) == {"path": "/debug/big"}


def test_deep_nesting(c):
    depth = 100_000
    msg = exchange(c, "[" * depth + "]" * depth)
    assert_error(msg, PARSE_ERROR, None, {"limit": "depth"})
    msg = exchange(c, '{"jsonrpc":"2.0","id":1,"method":"hello","params":{"a":' + "[" * depth + "]" * depth + "}}")
    assert_error(msg, PARSE_ERROR, None, {"limit": "depth"})
    # Unbalanced: only openers.
    msg = exchange(c, "{\"a\":" * depth)
    assert_error(msg, PARSE_ERROR, None)
    next_is_answer_to(c, 2)


def test_invalid_utf8_in_a_string(c):
    # Invalid UTF-8 is not JSON (RFC 8259 section 8.1): a parse error, with id null. The answer
    # itself is valid UTF-8 (exchange() decodes strictly).
    for bad in [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"]:
        line = b'{"jsonrpc":"2.0","id":1,"method":"debug.set","params":{"path":"/debug/u","value":"a' + bad + b'b"}}'
        assert_error(exchange(c, line), PARSE_ERROR, None)
        line = b'{"jsonrpc":"2.0","id":1,"method":"he' + bad + b'llo"}'
        assert_error(exchange(c, line), PARSE_ERROR, None)
    # A lone surrogate escape is not a valid string either.
    assert_error(exchange(c, r'{"jsonrpc":"2.0","id":1,"method":"hello","params":{"client":"\ud800"}}'), PARSE_ERROR, None)
    # Valid non-ASCII (and escaped) text round-trips exactly.
    text = "Café ☕ \U0001F600 \u2028 \x00 \x1f"
    assert assert_result(exchange(c, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "debug.set",
                                                 "params": {"path": "/debug/ütf/ß~1x", "value": text}})), 2)
    got = c.call("tree.get", {"path": "/debug/ütf/ß~1x"})
    assert got["value"] == text


def test_binary_garbage(c):
    rng = random.Random(1234)
    garbage = bytes(rng.getrandbits(8) for _ in range(256 << 10))
    lines = garbage.split(b"\n")
    # The last piece has no newline yet: terminated below together with a real request.
    expected = sum(1 for ln in lines[:-1] if ln.strip(b" \t\r"))
    c.send_raw(garbage + b"\n")
    if lines[-1].strip(b" \t\r"):
        expected += 1
    for _ in range(expected):
        msg = json.loads(read_raw_line(c).decode("utf-8"))
        assert msg["id"] is None and msg["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST), msg
    next_is_answer_to(c, 5)


def test_nul_bytes_and_control_characters(c):
    assert_error(exchange(c, b'{"jsonrpc":"2.0","id":1,"method":"hello"\x00}'), PARSE_ERROR, None)
    assert_error(exchange(c, b'\x00\x00\x00'), PARSE_ERROR, None)
    # A raw control character inside a string is not JSON.
    assert_error(exchange(c, b'{"jsonrpc":"2.0","id":1,"method":"hel\x01lo"}'), PARSE_ERROR, None)
    # CRLF line ends are accepted (\r is JSON whitespace).
    assert_result(exchange(c, b'{"jsonrpc":"2.0","id":3,"method":"hello"}\r\n'), 3)
    # Blank lines are keep-alives: no answer.
    c.send_raw(b"\n\r\n \t\n")
    next_is_answer_to(c, 4)


def test_half_line_then_close(world, c):
    for i in range(20):
        s = connect_raw(world.env.socket)
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"tree.get","params":{"pa' + b"x" * (i * 5000))
        s.close()
    # A half line followed by shutdown of the write side: nothing to answer, no crash.
    s = connect_raw(world.env.socket)
    s.sendall(b'{"jsonrpc":"2.0","id":1,"meth')
    s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    assert s.recv(100) == b""
    s.close()
    next_is_answer_to(c, 1)


def test_send_and_close_immediately(world, c):
    # Answers that can no longer be delivered (EPIPE, ECONNRESET) are an ordinary disconnect.
    for i in range(50):
        s = connect_raw(world.env.socket)
        method = "rpc.discover" if i % 2 else "tree.get"
        s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"path": ""}}) + "\n").encode() * 20)
        if i % 3 == 0:
            # RST instead of FIN: close with unread data pending on our side.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    # A write that half-completed before the client vanished.
    s = connect_raw(world.env.socket)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}\n' * 200)
    # The first byte of an answer is there: qsd is writing (into a buffer too small for all).
    s.recv(1, socket.MSG_PEEK)
    s.close()
    next_is_answer_to(c, 1)


def test_500_simultaneous_connections(world, c):
    n = 500
    socks = [connect_raw(world.env.socket) for _ in range(n)]
    try:
        for i, s in enumerate(socks):
            s.sendall((json.dumps({"jsonrpc": "2.0", "id": i, "method": "hello"}) + "\n").encode())
        for i, s in enumerate(socks):
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                assert chunk, f"connection {i} closed"
                buf += chunk
            msg = json.loads(buf.split(b"\n", 1)[0])
            assert msg["id"] == i and msg["result"]["protocol"] == 1, msg
        clients = world.driver.call("tree.get", {"path": "/daemon/clients"})["value"]
        assert clients >= n + 3, clients
    finally:
        for s in socks:
            s.close()
    world.watcher.wait_value(world.sub, "/daemon/clients", predicate=lambda v: v is not None and v <= 4)


def test_wrong_param_types(c):
    cases = [
        ("tree.get", {"path": 5}, "path", "a string"),
        ("tree.get", {}, "path", "a string"),
        ("tree.get", {"path": None}, "path", "a string"),
        ("tree.subscribe", {"paths": "/daemon"}, "paths", "an array"),
        ("tree.subscribe", {"paths": [1]}, "paths", "an array of JSON Pointers"),
        ("tree.subscribe", {"paths": []}, "paths", "a non-empty array of JSON Pointers"),
        ("tree.subscribe", {"paths": [""], "throttleMs": "fast"}, "throttleMs", "an integer"),
        ("tree.unsubscribe", {"subscription": "1"}, "subscription", "an integer"),
        ("tree.unsubscribe", {"subscription": 1.5}, "subscription", "an integer"),
        ("events.subscribe", {"topics": {"a": 1}}, "topics", "an array"),
        ("events.subscribe", {"topics": [""]}, "topics", "an array of topic names"),
        ("hello", {"protocol": "1"}, "protocol", "an integer"),
        ("hello", {"client": 3}, "client", "a string"),
        ("debug.set", {"path": "/debug/x"}, "value", "present"),
        ("debug.flood", {"count": -1}, "count", "an integer from 1 to 10000000"),
    ]
    for i, (method, params, param, expected) in enumerate(cases):
        msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}))
        err = assert_error(msg, INVALID_PARAMS, i, {"param": param})
        assert err["data"]["expected"].startswith(expected), (method, params, err)
        assert param in err["message"], err
    msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 99, "method": "hello", "params": {"protocol": 2}}))
    assert_error(msg, INVALID_PARAMS, 99, {"param": "protocol", "supported": 1})


def test_unknown_subscription_id(c):
    for sid in [999, 0, -1, 2**62]:
        msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tree.unsubscribe", "params": {"subscription": sid}}))
        assert_error(msg, NOT_FOUND, 1, {"param": "subscription"})
    # Another client's subscription is not this client's.
    sub = c.subscribe(["/daemon"])
    assert c.call("tree.unsubscribe", {"subscription": sub}) == {"subscription": sub}
    msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tree.unsubscribe", "params": {"subscription": sub}}))
    assert_error(msg, NOT_FOUND, 2)


def test_other_clients_subscription_ids_are_not_ours(world, c):
    sub = world.sub
    msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tree.unsubscribe", "params": {"subscription": sub}}))
    # Subscription ids are per connection: this client has none, so it is not found, and the
    # watcher's subscription keeps running (checked by the fixture).
    assert_error(msg, NOT_FOUND, 1)


def test_unknown_method(c):
    for name in ["nope", "", "tree.get.extra", "Hello", "x" * 10000, "debug.set\u0000"]:
        msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": "m", "method": name}))
        err = assert_error(msg, METHOD_NOT_FOUND, "m")
        assert err["data"]["method"] == name


def test_params_not_an_object(c):
    msg = exchange(c, '{"jsonrpc":"2.0","id":1,"method":"tree.get","params":["/daemon"]}')
    assert_error(msg, INVALID_PARAMS, 1, {"param": "params", "expected": "an object"})
    for params in ['"x"', "1", "true", "null"]:
        msg = exchange(c, '{"jsonrpc":"2.0","id":2,"method":"hello","params":' + params + "}")
        assert_error(msg, INVALID_REQUEST, 2)


def test_bad_ids(c):
    for rid in ["{}", '{"a":1}', "[]", "[1]", "true", "false"]:
        msg = exchange(c, '{"jsonrpc":"2.0","id":' + rid + ',"method":"hello"}')
        assert_error(msg, INVALID_REQUEST, None)
    # A number that does not fit a double is not JSON qsd can echo: a parse error.
    msg = exchange(c, '{"jsonrpc":"2.0","id":1e400,"method":"hello"}')
    assert msg["id"] is None and "error" in msg


def test_wrong_jsonrpc_version(c):
    for version in ['"1.0"', '"2"', "2.0", "null", '"2.0 "']:
        msg = exchange(c, '{"jsonrpc":' + version + ',"id":7,"method":"hello"}')
        assert_error(msg, INVALID_REQUEST, 7)
    assert_error(exchange(c, '{"id":8,"method":"hello"}'), INVALID_REQUEST, 8)
    assert_error(exchange(c, '{"jsonrpc":"2.0","id":9}'), INVALID_REQUEST, 9)
    assert_error(exchange(c, '{"jsonrpc":"2.0","id":10,"method":null}'), INVALID_REQUEST, 10)


def test_batch_over_the_limit(c):
    limit = 256
    ok = [{"jsonrpc": "2.0", "id": i, "method": "hello"} for i in range(limit)]
    msg = exchange(c, json.dumps(ok))
    assert isinstance(msg, list) and sorted(m["id"] for m in msg) == list(range(limit))
    msg = exchange(c, json.dumps(ok + [{"jsonrpc": "2.0", "id": limit, "method": "hello"}]))
    assert isinstance(msg, dict)
    assert_error(msg, INVALID_REQUEST, None, {"limit": "batch", "max": limit})
    # A batch of 100 000 tiny members (under the line limit) is refused the same way.
    msg = exchange(c, "[" + ",".join(["1"] * 100_000) + "]")
    assert_error(msg, INVALID_REQUEST, None, {"limit": "batch"})
    # Nested batches are not batches: the inner array is an invalid member.
    msg = exchange(c, '[[{"jsonrpc":"2.0","id":1,"method":"hello"}]]')
    assert isinstance(msg, list) and len(msg) == 1
    assert_error(msg[0], INVALID_REQUEST, None)


def test_tree_get_of_a_missing_path(c):
    for path in ["/nothing", "/daemon/nothing", "/daemon/protocol/deeper", "/daemon/backends/x/y"]:
        msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tree.get", "params": {"path": path}}))
        assert_error(msg, NOT_FOUND, 1, {"path": path})
    # Set to null is a value, not absence.
    c.call("debug.set", {"path": "/debug/null", "value": None})
    assert c.call("tree.get", {"path": "/debug/null"})["value"] is None
    c.call("debug.remove", {"path": "/debug/null"})


def test_invalid_json_pointer(c):
    for path in ["daemon", "/a~2b", "/a~", "~0", "#/daemon", " /daemon"]:
        for method, params in [("tree.get", {"path": path}), ("tree.subscribe", {"paths": ["/daemon", path]}),
                               ("debug.set", {"path": path, "value": 1})]:
            msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            key = "paths" if method == "tree.subscribe" else "path"
            assert_error(msg, INVALID_PARAMS, 1, {"param": key})
    # Writes outside /debug are refused by the debug API.
    for path in ["/daemon/version", "/debug", "/debugger/x", ""]:
        msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "debug.set", "params": {"path": path, "value": 1}}))
        assert_error(msg, INVALID_PARAMS, 2, {"param": "path"})


def test_subscription_limit_per_client(c):
    subs = [c.call("tree.subscribe", {"paths": [f"/debug/s{i}"]})["subscription"] for i in range(64)]
    msg = exchange(c, '{"jsonrpc":"2.0","id":1,"method":"tree.subscribe","params":{"paths":["/debug/s"]}}')
    assert_error(msg, LIMIT_EXCEEDED, 1, {"limit": "subscriptions", "max": 64})
    c.call("tree.unsubscribe", {"subscription": subs[10]})
    c.call("tree.subscribe", {"paths": ["/debug/s"]})
    # Too many paths in one subscription.
    paths = [f"/debug/p{i}" for i in range(257)]
    c.call("tree.unsubscribe", {"subscription": subs[11]})
    msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tree.subscribe", "params": {"paths": paths}}))
    assert_error(msg, LIMIT_EXCEEDED, 2, {"limit": "paths", "max": 256})
    # Too many event topics.
    msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 3, "method": "events.subscribe",
                                  "params": {"topics": [f"t{i}" for i in range(65)]}}))
    assert_error(msg, LIMIT_EXCEEDED, 3, {"limit": "topics", "max": 64})


def test_paths_of_a_connections_subscriptions_are_bounded_together(world, c):
    # 64 subscriptions of 256 paths of 4 KB each were 200 MiB for one connection, and every
    # path a comparison with every change: a connection's subscriptions hold 1024 paths and
    # 64 KiB of them in all.
    subs = [c.call("tree.subscribe", {"paths": [f"/debug/c/{j}/{i}" for i in range(256)]})["subscription"] for j in range(4)]
    msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tree.subscribe", "params": {"paths": ["/debug/c/x"]}}))
    assert_error(msg, LIMIT_EXCEEDED, 1, {"limit": "connectionPaths", "max": 1024})
    c.call("tree.unsubscribe", {"subscription": subs[0]})
    c.call("tree.subscribe", {"paths": ["/debug/c/x"]})
    other = world.env.client()
    try:
        long = [f"/debug/{i:02}/" + "x" * (4096 - 10) for i in range(16)]   # 4096 bytes each
        other.call("tree.subscribe", {"paths": long})
        msg = exchange(other, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tree.subscribe", "params": {"paths": ["/d"]}}))
        assert_error(msg, LIMIT_EXCEEDED, 2, {"limit": "connectionPathBytes", "max": 65536})
    finally:
        other.close()


def test_paths_of_all_connections_subscriptions_are_bounded_together(world, c):
    # A thousand connections, each at its own bounds, took qsd to gigabytes and every change
    # to half a second of comparisons: all the lists of paths subscribed hold 65 536 paths and
    # 4 MiB of them (a list another subscription follows already costs nothing more).
    def clients():
        return c.call("tree.get", {"path": "/daemon/clients"})["value"]

    alone = clients()
    socks, refused, accepted = [], None, 0
    try:
        while refused is None and len(socks) < 80:
            s = world.env.client()
            socks.append(s)
            for j in range(4):
                paths = [f"/debug/all/{len(socks)}/{j}/{i}" for i in range(256)]
                msg = exchange(s, json.dumps({"jsonrpc": "2.0", "id": j, "method": "tree.subscribe", "params": {"paths": paths}}))
                if "error" in msg:
                    refused = msg
                    break
                accepted += 256
        assert_error(refused, LIMIT_EXCEEDED, j, {"limit": "allPaths", "max": 65536})
        assert 65536 - 256 - 1024 <= accepted <= 65536   # the module's other subscriptions count too
        # The same list as a subscription of another connection shares its filter: accepted.
        s = world.env.client()
        socks.append(s)
        s.call("tree.subscribe", {"paths": [f"/debug/all/1/0/{i}" for i in range(256)]})
        # Long paths: 4 MiB of them in all, 64 connections' worth.
        for s in socks:
            s.close()
        socks, refused = [], None
        wait_until(lambda: clients() == alone, 20, what="the connections closed")
        while refused is None and len(socks) < 80:
            s = world.env.client()
            socks.append(s)
            paths = [f"/debug/long/{len(socks):02}/{i:02}/" + "x" * (4096 - 18) for i in range(16)]   # 4096 bytes
            msg = exchange(s, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tree.subscribe", "params": {"paths": paths}}))
            if "error" in msg:
                refused = msg
        assert_error(refused, LIMIT_EXCEEDED, 1, {"limit": "allPathBytes", "max": 4 << 20})
        assert len(socks) == 65
    finally:
        for s in socks:
            s.close()
    # Closing them gave every path back (and took no time to speak of).
    wait_until(lambda: clients() == alone, 20, what="the connections closed")
    assert "subscription" in c.call("tree.subscribe", {"paths": [f"/debug/after/{i}" for i in range(256)]})


def test_a_subscribed_path_reads_the_tree_as_tree_get_does(world, c):
    # An array index past size_t in a subscribed path threw from inside the filter once its parent
    # became an array: every batch of it was lost (the other path's changes too), with an error
    # logged per batch. Paths go through arrays for neither tree.get nor a subscription.
    c.call("debug.set", {"path": "/debug/later", "value": {"x": 1}})
    c.call("debug.set", {"path": "/debug/arr", "value": [10, 20]})
    paths = ["/debug/later/99999999999999999999999", "/debug/later/x", "/debug/arr/1"]
    assert c.call("tree.subscribe", {"paths": paths})["snapshot"] == {"/debug/later/x": 1}
    sub = c.subscribe(paths)
    msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tree.get", "params": {"path": "/debug/arr/1"}}))
    assert_error(msg, NOT_FOUND, 6)
    c.call("debug.set", {"path": "/debug/later", "value": [1, 2]})
    c.wait_for(lambda: "x" not in c.mirror(sub)["debug"].get("later", {}), what="/debug/later/x removed")
    c.call("debug.set", {"path": "/debug/later", "value": {"x": 3}})
    c.wait_value(sub, "/debug/later/x", 3)
    assert "observer failed" not in world.env.qsd_log()
    c.call("debug.remove", {"path": "/debug/later"})
    c.call("debug.remove", {"path": "/debug/arr"})


def test_a_batch_stops_running_once_its_answers_are_over_the_budget(c):
    # 256 rpc.discover in one 15 KB line made one answer of 70 MB (the connection's budget is
    # checked when a line is queued) and blocked the loop 1.2 s.
    batch = [{"jsonrpc": "2.0", "id": i, "method": "rpc.discover"} for i in range(256)]
    c.send_raw(json.dumps(batch) + "\n")
    line = c.read_line(30, raw=True)
    answers = json.loads(line)
    ran = [m for m in answers if "result" in m]
    # As qsd writes it: compact, UTF-8 (json.dumps' default spacing made the estimate drift
    # with the size of the description).
    one = len(json.dumps(ran[0], separators=(",", ":"), ensure_ascii=False).encode())
    assert len(line) < (4 << 20) + 2 * one
    assert sorted(m["id"] for m in answers) == list(range(256))
    # Members run while the answers so far (and their commas) are under 4 MiB.
    assert abs(len(ran) - (4 << 20) / (one + 1)) <= 1, (len(ran), one)
    for m in answers:
        if "error" in m:
            assert_error(m, LIMIT_EXCEEDED, m["id"], {"limit": "batchAnswerBytes", "max": 4 << 20})
    next_is_answer_to(c, 7)


def test_throttle_out_of_range(c):
    for value in [-1, 60001, 2**63, 1.5, True]:
        msg = exchange(c, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tree.subscribe",
                                      "params": {"paths": ["/daemon"], "throttleMs": value}}))
        assert_error(msg, INVALID_PARAMS, 1, {"param": "throttleMs"})
    for value in [0, 60000, None]:
        assert "subscription" in c.call("tree.subscribe", {"paths": ["/daemon"], "throttleMs": value})


def test_requests_from_a_client_that_never_reads(world, c):
    # A client that sends requests with big answers and never reads them: qsd stops reading its
    # requests once its queue is over budget, and memory stays bounded.
    rss0 = world.env.rss_kib()
    s = connect_raw(world.env.socket)
    s.setblocking(False)
    req = b'{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}\n' * 64
    sent = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            sent += s.send(req)
        except BlockingIOError:
            time.sleep(0.01)
    rss1 = world.env.rss_kib()
    print(f"never-reading client: sent {sent} bytes of requests; qsd RSS {rss0} KiB -> {rss1} KiB")
    assert rss1 - rss0 < 64 * 1024
    s.close()
    next_is_answer_to(c, 3)


def test_memory_of_clients_that_never_read_is_given_back(world, c):
    # Answers queued for clients that never read are freed when they go; glibc would keep the
    # freed heap mapped, and qsd's RSS at the peak of its busiest moment, unless qsd trims it.
    def anon_kib():
        return world.env.rss_kib("RssAnon")
    if world.env.sanitized():
        pytest.skip("ASan's allocator, not glibc's: nothing for malloc_trim to give back")
    # Answers of about 30 KiB: heap chunks, below glibc's mmap threshold.
    c.call("debug.set", {"path": "/debug/big", "value": {f"k{i}": "x" * 100 for i in range(300)}})
    rss0 = anon_kib()
    paused = world.env.qsd_log().count("pausing its requests")
    socks = []
    for _ in range(6):
        s = connect_raw(world.env.socket)
        s.sendall(b"".join((json.dumps({"jsonrpc": "2.0", "id": i, "method": "tree.get",
                                        "params": {"path": "/debug/big"}}) + "\n").encode() for i in range(150)))
        socks.append(s)
    # Each stops being read once its answers are over its budget, or over the budget of all
    # queues together (8 MiB: the later ones queue little).
    wait_until(lambda: world.env.qsd_log().count("pausing its requests") >= paused + 6, 20, what="the answers to be queued")
    busy = anon_kib()
    for s in socks:
        s.close()
    try:
        wait_until(lambda: anon_kib() < rss0 + 1024, 10, interval=0.1, what="the heap to be given back")
        assert busy - anon_kib() > 2 * 1024
    finally:
        print(f"RssAnon {rss0} KiB, {busy} KiB with 6 clients not reading, {anon_kib()} KiB after they went")
        c.call("debug.remove", {"path": "/debug/big"})
    next_is_answer_to(c, 4)


def test_fd_passing_and_odd_socket_use(world, c):
    # Ancillary data (an fd) is ignored; the request is answered.
    s = connect_raw(world.env.socket)
    r, w = os.pipe()
    socket.send_fds(s, [b'{"jsonrpc":"2.0","id":1,"method":"hello"}\n'], [r])
    os.close(r)
    os.close(w)
    buf = b""
    while b"\n" not in buf:
        buf += s.recv(4096)
    assert json.loads(buf.split(b"\n")[0])["id"] == 1
    s.close()
    next_is_answer_to(c, 2)
