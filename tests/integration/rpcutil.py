"""Helpers shared by the core protocol tests: raw lines, "no reply" proofs and the check that a
subscriber's mirror equals the daemon's tree."""

import json
import socket
import time

from qsdtest import Client


def read_raw_line(client, timeout=10.0):
    """The next line as bytes (without '\\n'), for checks on the encoding itself."""
    return client.read_line(timeout, raw=True)


def exchange(client, data, timeout=10.0):
    """Sends raw bytes (a newline is appended when missing) and returns the next line, parsed.
    The line must be valid UTF-8 and valid JSON."""
    if isinstance(data, str):
        data = data.encode()
    if not data.endswith(b"\n"):
        data += b"\n"
    client.send_raw(data)
    raw = read_raw_line(client, timeout)
    return json.loads(raw.decode("utf-8", errors="strict"))


def next_is_answer_to(client, rid, method="hello"):
    """Proves that nothing was sent before: a follow-up request's answer is the next line."""
    client.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method}) + "\n")
    msg = json.loads(read_raw_line(client))
    assert isinstance(msg, dict) and msg.get("id") == rid and "result" in msg, msg
    return msg


def assert_error(msg, code, rid=None, data_subset=None):
    assert isinstance(msg, dict), msg
    assert set(msg) == {"jsonrpc", "error", "id"}, msg
    assert msg["jsonrpc"] == "2.0"
    assert msg["id"] == rid, msg
    err = msg["error"]
    assert err["code"] == code, msg
    assert isinstance(err["message"], str) and err["message"], msg
    if data_subset is not None:
        assert "data" in err, msg
        for k, v in data_subset.items():
            assert err["data"].get(k) == v, (k, msg)
    return err


def assert_result(msg, rid):
    assert isinstance(msg, dict), msg
    assert set(msg) == {"jsonrpc", "result", "id"}, msg
    assert msg["jsonrpc"] == "2.0"
    assert msg["id"] == rid, msg
    return msg["result"]


def sync_mirror(watcher, sub, driver, timeout=20.0):
    """Waits until `watcher`'s mirror of subscription `sub` (subscribed to "") is at the daemon's
    current revision and asserts it equals tree.get "". Retries while the tree moves."""
    deadline = time.monotonic() + timeout
    while True:
        got = driver.call("tree.get", {"path": ""})
        watcher.wait_for(lambda: watcher.mirrors[sub]["revision"] >= got["revision"],
                         timeout=max(0.1, deadline - time.monotonic()), what=f"revision {got['revision']}")
        if watcher.mirrors[sub]["revision"] == got["revision"]:
            assert watcher.mirror(sub) == got["value"]
            return got["revision"]
        if time.monotonic() > deadline:
            raise TimeoutError("the tree never settled")


def connect_raw(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


__all__ = ["Client", "read_raw_line", "exchange", "next_is_answer_to", "assert_error", "assert_result",
           "sync_mirror", "connect_raw"]
