"""The examples of the JSON-RPC 2.0 specification (section 7, "Examples"), adapted to qsd's
methods, answered exactly as the specification says: response members, id echo, error codes,
batches, and notifications that get no reply at all."""

import json

import pytest

from rpcutil import assert_error, assert_result, exchange, next_is_answer_to, read_raw_line

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
NOT_FOUND = -32001


@pytest.fixture
def c(bare_env):
    bare_env.start_qsd(backends=[])
    client = bare_env.client()
    yield client
    client.close()


def test_call_with_named_params(c):
    # --> {"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}
    # <-- {"jsonrpc": "2.0", "result": 19, "id": 3}
    msg = exchange(c, '{"jsonrpc": "2.0", "method": "tree.get", "params": {"path": "/daemon/protocol"}, "id": 3}')
    res = assert_result(msg, 3)
    assert res["value"] == 1
    assert isinstance(res["revision"], int)
    # Parameter order does not matter with named params; members may come in any order.
    msg = exchange(c, '{"id": 4, "params": {"value": 19, "path": "/debug/x"}, "method": "debug.set", "jsonrpc": "2.0"}')
    assert assert_result(msg, 4) == {"path": "/debug/x"}


def test_call_with_positional_params_is_invalid_params(c):
    # qsd's methods take named params only: by-position params are answered with -32602 and
    # data naming "params".
    msg = exchange(c, '{"jsonrpc": "2.0", "method": "tree.get", "params": ["/daemon"], "id": 1}')
    assert_error(msg, INVALID_PARAMS, 1, {"param": "params"})


def test_id_is_echoed_exactly(c):
    for rid in ["1", "", "ünïcødé ✓", 0, -7, 2**53 + 1, 12345678901234567, None]:
        line = json.dumps({"jsonrpc": "2.0", "method": "hello", "id": rid})
        msg = exchange(c, line)
        assert_result(msg, rid)
    # A fractional id is allowed (discouraged); it comes back as the same number.
    msg = exchange(c, '{"jsonrpc": "2.0", "method": "hello", "id": 1.5}')
    assert_result(msg, 1.5)


def test_notification_gets_no_reply(c):
    # --> {"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}
    # --> {"jsonrpc": "2.0", "method": "foobar"}
    c.send_raw('{"jsonrpc": "2.0", "method": "debug.set", "params": {"path": "/debug/n", "value": 5}}\n')
    c.send_raw('{"jsonrpc": "2.0", "method": "foobar"}\n')
    # Errors of a notification are not reported either (wrong params, unknown method).
    c.send_raw('{"jsonrpc": "2.0", "method": "tree.get", "params": {"path": 7}}\n')
    c.send_raw('{"jsonrpc": "2.0", "method": "hello"}\n')
    next_is_answer_to(c, 77)
    # The notification was executed.
    msg = exchange(c, '{"jsonrpc": "2.0", "method": "tree.get", "params": {"path": "/debug/n"}, "id": 2}')
    assert assert_result(msg, 2)["value"] == 5


def test_non_existent_method(c):
    # --> {"jsonrpc": "2.0", "method": "foobar", "id": "1"}
    # <-- {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}
    msg = exchange(c, '{"jsonrpc": "2.0", "method": "foobar", "id": "1"}')
    err = assert_error(msg, METHOD_NOT_FOUND, "1")
    assert err["message"] == "Method not found"
    assert err["data"]["method"] == "foobar"


def test_invalid_json(c):
    # --> {"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]
    # <-- {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}
    msg = exchange(c, '{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]')
    err = assert_error(msg, PARSE_ERROR, None)
    assert err["message"] == "Parse error"


def test_invalid_request_object(c):
    # --> {"jsonrpc": "2.0", "method": 1, "params": "bar"}
    # <-- {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
    msg = exchange(c, '{"jsonrpc": "2.0", "method": 1, "params": "bar"}')
    err = assert_error(msg, INVALID_REQUEST, None)
    assert err["message"].startswith("Invalid Request")


def test_batch_invalid_json(c):
    # --> [{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]
    # <-- {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}
    msg = exchange(c, '[{"jsonrpc": "2.0", "method": "hello", "params": {}, "id": "1"},{"jsonrpc": "2.0", "method"]')
    assert isinstance(msg, dict)
    assert_error(msg, PARSE_ERROR, None)
    # Nothing else follows (the valid-looking first member was not run).
    next_is_answer_to(c, 2)


def test_empty_batch(c):
    # --> []
    # <-- {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
    msg = exchange(c, "[]")
    assert isinstance(msg, dict)
    assert_error(msg, INVALID_REQUEST, None)
    next_is_answer_to(c, 2)


def test_invalid_batch_of_one(c):
    # --> [1]
    # <-- [{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}]
    msg = exchange(c, "[1]")
    assert isinstance(msg, list) and len(msg) == 1
    assert_error(msg[0], INVALID_REQUEST, None)


def test_invalid_batch(c):
    # --> [1,2,3]
    # <-- [ three Invalid Request errors with id null ]
    msg = exchange(c, "[1,2,3]")
    assert isinstance(msg, list) and len(msg) == 3
    for m in msg:
        assert_error(m, INVALID_REQUEST, None)
    next_is_answer_to(c, 9)


def test_mixed_batch(c):
    # The specification's batch: calls, a notification, an invalid member, an unknown method and
    # a call that fails. Notifications are left out of the answer; the rest come back (in any
    # order), matched by id.
    batch = [
        {"jsonrpc": "2.0", "method": "hello", "params": {}, "id": "1"},
        {"jsonrpc": "2.0", "method": "debug.set", "params": {"path": "/debug/batch", "value": [7]}},
        {"jsonrpc": "2.0", "method": "tree.get", "params": {"path": "/daemon/protocol"}, "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "tree.get", "params": {"path": "/nothing/here"}, "id": "9"},
        # An asynchronous method completes later; the batch still answers once, as one array.
        {"jsonrpc": "2.0", "method": "debug.flood", "params": {"count": 50, "batch": 5}, "id": "10"},
    ]
    msg = exchange(c, json.dumps(batch))
    assert isinstance(msg, list), msg
    by_id = {}
    for m in msg:
        assert m["id"] not in by_id or m["id"] is None, msg
        by_id.setdefault(m["id"], []).append(m)
    assert sorted(k for k in by_id if k is not None) == ["1", "10", "2", "5", "9"]
    assert len(msg) == 6
    assert assert_result(by_id["1"][0], "1")["protocol"] == 1
    assert assert_result(by_id["2"][0], "2")["value"] == 1
    assert_error(by_id[None][0], INVALID_REQUEST, None)
    assert_error(by_id["5"][0], METHOD_NOT_FOUND, "5")
    assert_error(by_id["9"][0], NOT_FOUND, "9", {"path": "/nothing/here"})
    flood = assert_result(by_id["10"][0], "10")
    # "batches" counts every revision meanwhile (another client coming or going is one too)
    assert flood["writes"] == 50 and flood["batches"] >= 10
    # The notification inside the batch was executed.
    msg = exchange(c, '{"jsonrpc": "2.0", "method": "tree.get", "params": {"path": "/debug/batch"}, "id": 11}')
    assert assert_result(msg, 11)["value"] == [7]


def test_batch_of_notifications_gets_no_reply(c):
    # --> [{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
    #      {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]
    # <-- //Nothing is returned for all notification batches
    batch = [
        {"jsonrpc": "2.0", "method": "debug.set", "params": {"path": "/debug/a", "value": 1}},
        {"jsonrpc": "2.0", "method": "hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "no.such.method"},
        {"jsonrpc": "2.0", "method": "debug.flood", "params": {"count": 10, "batch": 2}},
    ]
    c.send_raw(json.dumps(batch) + "\n")
    next_is_answer_to(c, 42)
    msg = exchange(c, '{"jsonrpc": "2.0", "method": "tree.get", "params": {"path": "/debug/a"}, "id": 43}')
    assert assert_result(msg, 43)["value"] == 1


def test_requests_pipelined_in_one_write_are_answered_in_order(c):
    lines = "".join(json.dumps({"jsonrpc": "2.0", "method": "hello", "id": i}) + "\n" for i in range(200))
    c.send_raw(lines)
    for i in range(200):
        assert_result(json.loads(read_raw_line(c)), i)


def test_response_never_has_both_result_and_error(c):
    for line in ['{"jsonrpc":"2.0","id":1,"method":"hello"}', '{"jsonrpc":"2.0","id":2,"method":"nope"}',
                 '{"jsonrpc":"2.0","id":3,"method":"tree.get","params":{}}']:
        msg = exchange(c, line)
        assert ("result" in msg) != ("error" in msg), msg
