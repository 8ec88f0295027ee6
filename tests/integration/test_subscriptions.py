"""tree.subscribe / tree.changed / tree.unsubscribe / events.subscribe as docs/protocol.md specifies them:
snapshots, path filters, ancestor changes restated at the subscribed path, one notification per
batch in revision order, and a randomized check that every mirror equals the daemon's tree."""

import json
import random
import socket

import pytest

from qsdtest import Env, apply_patch, pointer_get


@pytest.fixture
def env():
    e = Env(buses=False)
    e.start_qsd(backends=[])
    yield e
    e.close()


def changes_of(client, sub):
    return [n["params"] for n in client.notifications if n["method"] == "tree.changed" and n["params"]["subscription"] == sub]


def settle(client, driver):
    """Everything caused so far has reached `client`: a hello answered after a final write."""
    driver.call("debug.set", {"path": "/debug/zz-settle", "value": random.random()})
    client.call("hello")


def test_subscribe_result_and_snapshot(env):
    c = env.client()
    c.call("debug.set", {"path": "/debug/a", "value": {"x": 1, "y": [1, 2]}})
    res = c.call("tree.subscribe", {"paths": ["/debug/a", "/debug/missing", "/daemon/protocol", ""]})
    assert set(res) == {"subscription", "epoch", "revision", "snapshot"}
    hello = c.call("hello")
    assert res["epoch"] == hello["epoch"]
    assert res["revision"] <= hello["revision"]
    snap = res["snapshot"]
    assert snap["/debug/a"] == {"x": 1, "y": [1, 2]}
    assert "/debug/missing" not in snap   # absent paths are left out, not null
    assert snap["/daemon/protocol"] == 1
    assert snap[""]["debug"]["a"]["x"] == 1
    # (/daemon/clients may have moved since: compare the part this test controls.)
    assert c.call("tree.get", {"path": "/debug"})["value"] == snap[""]["debug"]


def test_only_changes_under_the_subscribed_paths(env):
    c = env.client()
    d = env.client()
    sub = c.subscribe(["/debug/a"])
    d.call("debug.set", {"path": "/debug/b", "value": 1})
    d.call("debug.set", {"path": "/debug/ab", "value": 1})   # a prefix of the string, not a child
    d.call("debug.set", {"path": "/debug/a/x", "value": 2})
    c.wait_value(sub, "/debug/a/x", 2)
    settle(c, d)
    for ch in changes_of(c, sub):
        for op in ch["changes"]:
            assert op["path"] == "/debug/a" or op["path"].startswith("/debug/a/"), op
    assert c.mirror(sub) == {"debug": {"a": {"x": 2}}}


def test_ancestor_changes_are_restated_at_the_subscribed_path(env):
    c = env.client()
    d = env.client()
    d.call("debug.set", {"path": "/debug/p/q", "value": {"v": 1}})
    sub = c.subscribe(["/debug/p/q/v"])
    # The whole ancestor is replaced: the subscriber sees its own path replaced.
    d.call("debug.set", {"path": "/debug/p", "value": {"q": {"v": 2, "w": 0}}})
    c.wait_value(sub, "/debug/p/q/v", 2)
    last = changes_of(c, sub)[-1]["changes"]
    assert last == [{"op": "replace", "path": "/debug/p/q/v", "value": 2}]
    # The ancestor disappears: the subscribed path is removed.
    d.call("debug.remove", {"path": "/debug/p"})
    c.wait_for(lambda: pointer_get(c.mirror(sub), "/debug/p/q/v", None) is None)
    assert changes_of(c, sub)[-1]["changes"] == [{"op": "remove", "path": "/debug/p/q/v"}]
    # The ancestor comes back with the path: an add.
    d.call("debug.set", {"path": "/debug/p", "value": {"q": {"v": 3}}})
    c.wait_value(sub, "/debug/p/q/v", 3)
    assert changes_of(c, sub)[-1]["changes"] == [{"op": "add", "path": "/debug/p/q/v", "value": 3}]
    # An ancestor replaced by something without the path: nothing to remove twice.
    d.call("debug.set", {"path": "/debug/p", "value": 5})
    c.wait_for(lambda: pointer_get(c.mirror(sub), "/debug/p/q/v", None) is None)
    n = len(changes_of(c, sub))
    d.call("debug.set", {"path": "/debug/p", "value": 6})
    settle(c, d)
    assert len(changes_of(c, sub)) == n


def test_nested_paths_are_delivered_once(env):
    c = env.client()
    d = env.client()
    sub = c.subscribe(["/debug/n", "/debug/n/m", "/debug/n", "/debug/n/m/k"])
    d.call("debug.set", {"path": "/debug/n/m/k", "value": 1})
    c.wait_value(sub, "/debug/n/m/k", 1)
    ops = [op for ch in changes_of(c, sub) for op in ch["changes"]]
    assert len(ops) == 1, ops
    whole = c.subscribe(["", "/debug", "/daemon/clients"])
    d.call("debug.set", {"path": "/debug/n/m/k", "value": 2})
    c.wait_value(whole, "/debug/n/m/k", 2)
    ops = [op for ch in changes_of(c, whole) for op in ch["changes"] if op["path"].startswith("/debug/n")]
    assert ops == [{"op": "replace", "path": "/debug/n/m/k", "value": 2}]


def test_one_notification_per_batch_in_revision_order(env):
    c = env.client()
    d = env.client()
    sub = c.subscribe(["/debug/flood"])
    res = d.call("debug.flood", {"path": "/debug/flood", "count": 1000, "batch": 10, "keys": 25}, timeout=60)
    c.wait_for(lambda: c.mirrors[sub]["revision"] >= res["revision"], timeout=30)
    notes = changes_of(c, sub)
    revs = [n["revision"] for n in notes]
    assert revs == sorted(set(revs))
    # 100 batches of 10 writes each; every batch touches the path: 100 notifications.
    assert len(notes) == 100 and res["batches"] >= 100
    # Writes of one batch are coalesced: the first batch creates /debug/flood (one "add" of the
    # new object holding its 10 keys), each later one replaces 10 distinct keys.
    # (Only op and path: the harness's mirror shares value objects with recorded notifications.)
    assert [(op["op"], op["path"]) for op in notes[0]["changes"]] == [("add", "/debug/flood")]
    assert all(len(n["changes"]) == 10 for n in notes[1:])
    assert c.mirror(sub)["debug"]["flood"] == d.call("tree.get", {"path": "/debug/flood"})["value"]


def test_writes_of_one_request_are_one_batch(env):
    c = env.client()
    sub = c.subscribe(["/debug"])
    batch = [{"jsonrpc": "2.0", "id": i, "method": "debug.set", "params": {"path": f"/debug/k{i % 3}", "value": i}}
             for i in range(30)]
    c.send_raw(json.dumps(batch) + "\n")
    while not isinstance(c.read_message(10), list):
        pass
    c.call("hello")
    notes = changes_of(c, sub)
    assert len(notes) == 1, notes
    assert c.mirror(sub)["debug"] == {"k0": 27, "k1": 28, "k2": 29}


def test_unsubscribe_stops_the_stream(env):
    c = env.client()
    d = env.client()
    sub = c.subscribe(["/debug"])
    keep = c.subscribe(["/debug/keep"])
    assert c.call("tree.unsubscribe", {"subscription": sub}) == {"subscription": sub}
    n = len(changes_of(c, sub))
    d.call("debug.set", {"path": "/debug/x", "value": 1})
    d.call("debug.set", {"path": "/debug/keep", "value": 1})
    c.wait_value(keep, "/debug/keep", 1)
    c.call("hello")
    assert len(changes_of(c, sub)) == n
    # Subscription ids are not reused on a connection.
    assert c.subscribe(["/debug"]) not in (sub, keep)


def test_path_that_appears_later_and_escaped_keys(env):
    c = env.client()
    d = env.client()
    sub = c.subscribe(["/debug/later/a~1b~0c"])
    assert c.mirror(sub) == {"debug": {"later": {}}}
    d.call("debug.set", {"path": "/debug/later/a~1b~0c", "value": "v"})
    c.wait_value(sub, "/debug/later/a~1b~0c", "v")
    assert c.mirror(sub)["debug"]["later"]["a/b~c"] == "v"
    assert changes_of(c, sub)[-1]["changes"][0]["path"] == "/debug/later/a~1b~0c"


def test_subscription_registered_before_the_snapshot(env):
    # Subscribing while a flood runs: snapshot plus stream equal the tree, with no gap.
    d = env.client()
    d.send_raw(json.dumps({"jsonrpc": "2.0", "id": "f", "method": "debug.flood",
                           "params": {"path": "/debug/race", "count": 20000, "batch": 3, "keys": 40}}) + "\n")
    subs = []
    for _ in range(10):
        c = env.client()
        subs.append((c, c.subscribe(["/debug/race", "/debug/race/k3"])))
    while True:
        msg = d.read_message(120)
        if msg.get("id") == "f":
            break
    final = d.call("tree.get", {"path": "/debug/race"})
    for c, sub in subs:
        # (final's revision may be a later batch elsewhere in the tree: wait for the content.)
        c.wait_for(lambda: c.mirror(sub).get("debug", {}).get("race") == final["value"], timeout=30,
                   what="the flooded subtree")


def test_events(env):
    a = env.client()
    b = env.client()
    d = env.client()
    assert a.call("events.subscribe", {"topics": ["network.*", "tray.itemActivated"]}) == {
        "topics": ["network.*", "tray.itemActivated"]}
    b.call("events.subscribe", {"topics": ["*"]})
    for topic in ["network.connectionFailed", "tray.itemActivated", "tray.other", "networkX.y", "network"]:
        d.call("debug.emit", {"topic": topic, "data": {"t": topic}})
    a.call("hello")
    b.call("hello")
    got_a = [n["params"]["topic"] for n in a.notifications if n["method"] == "event"]
    got_b = [n["params"]["topic"] for n in b.notifications if n["method"] == "event"]
    assert got_a == ["network.connectionFailed", "tray.itemActivated"]
    assert got_b == ["network.connectionFailed", "tray.itemActivated", "tray.other", "networkX.y", "network"]
    ev = [n for n in a.notifications if n["method"] == "event"][0]["params"]
    assert ev["data"] == {"t": "network.connectionFailed"} and isinstance(ev["revision"], int)
    # Replacing the set; an empty set stops events.
    a.call("events.subscribe", {"topics": []})
    d.call("debug.emit", {"topic": "network.x"})
    a.call("hello")
    assert [n["params"]["topic"] for n in a.notifications if n["method"] == "event"] == got_a


def test_an_event_follows_the_state_written_before_it(env):
    # A write and an event in one request batch (one dispatch): the write is still pending when
    # the event is emitted. The event waits for its flush, comes after that tree.changed, and
    # carries its revision; an event with nothing pending goes out at once.
    a = env.client()
    a.call("events.subscribe", {"topics": ["network.*"]})
    a.subscribe(["/debug"])
    d = env.client()
    for i in range(20):
        batch = [{"jsonrpc": "2.0", "id": 1, "method": "debug.set", "params": {"path": "/debug/state", "value": i}},
                 {"jsonrpc": "2.0", "id": 2, "method": "debug.emit",
                  "params": {"topic": "network.connectionFailed", "data": {"i": i}}}]
        d.send_raw(json.dumps(batch) + "\n")
        while not isinstance(d.read_message(10), list):
            pass
        a.wait_for(lambda: any(n["method"] == "event" and n["params"]["data"] == {"i": i} for n in a.notifications))
    seen = [n for n in a.notifications if n["method"] in ("event", "tree.changed")]
    state_rev = {}
    for n in seen:
        if n["method"] == "tree.changed":
            for op in n["params"]["changes"]:
                if op["path"] == "/debug/state" or op["path"] == "/debug":
                    state_rev[n["params"]["revision"]] = op
        else:
            i = n["params"]["data"]["i"]
            rev = n["params"]["revision"]
            # The change of /debug/state to i was delivered before the event, at its revision.
            assert rev in state_rev, (i, rev, state_rev)
    assert [n["method"] for n in seen][-2:] == ["tree.changed", "event"]
    # Nothing pending: the event is sent at once with the current revision.
    rev = d.call("hello")["revision"]
    d.call("debug.emit", {"topic": "network.x"})
    a.wait_for(lambda: a.notifications[-1]["method"] == "event")
    assert a.notifications[-1]["params"]["revision"] == rev


def test_an_answer_follows_the_changes_written_before_it(env):
    # A client that writes and is subscribed finds its mirror up to date when the answer comes:
    # the tree.changed of its write (and of any write pending before it) arrives first.
    a = env.client()
    sub = a.subscribe(["/debug"])
    other = env.client()
    for i in range(50):
        # A write by another client in the same turn of the loop is pending too.
        other.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "debug.set",
                                   "params": {"path": "/debug/other", "value": i}}) + "\n")
        a.send_raw(json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "debug.set",
                               "params": {"path": "/debug/mine", "value": i}}) + "\n")
        while True:
            msg = a.read_message(10)
            if msg.get("id") == 100 + i:
                break
        assert a.mirror(sub)["debug"]["mine"] == i, (i, a.mirror(sub))
        assert other.read_message(10)["id"] == 1
    # A request that changes nothing is answered at once, with nothing before it.
    rev = a.call("hello")["revision"]
    n = len(a.notifications)
    assert a.call("tree.get", {"path": "/debug/mine"})["revision"] == rev
    assert len(a.notifications) == n


def test_a_client_that_half_closes_gets_its_answers(env):
    # One-shot scripts write their requests and shut their side down: answers held for a flush
    # of the writes those requests made are still written before the connection closes.
    for i in range(20):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(env.socket)
        s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "debug.set",
                               "params": {"path": "/debug/half", "value": i}}) + "\n"
                   + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tree.get",
                                 "params": {"path": "/debug/half"}}) + "\n").encode())
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        answers = [json.loads(line) for line in data.decode().splitlines()]
        assert [m["id"] for m in answers] == [1, 2], answers
        assert answers[1]["result"]["value"] == i


def test_closed_clients_subscriptions_go_away(env):
    d = env.client()
    for _ in range(20):
        c = env.client()
        c.subscribe([""])
        c.subscribe(["/debug"], throttle_ms=50)
        d.call("debug.set", {"path": "/debug/c", "value": random.random()})
        c.close()
    w = env.client()
    sub = w.subscribe(["/daemon/clients"])
    w.wait_value(sub, "/daemon/clients", 2)
    d.call("debug.flood", {"count": 200, "batch": 1})
    assert env.daemon.poll() is None


def test_random_writes_every_mirror_equals_the_tree(env):
    rng = random.Random(20261203)
    d = env.client()
    path_sets = [[""], ["/debug"], ["/debug/r/a"], ["/debug/r/a/b", "/debug/r/c"], ["/debug/r/a", "/debug/r/a/b"],
                 ["/debug/r/zz"], ["/debug/r/c/d/e"]]
    watchers = []
    for i, paths in enumerate(path_sets):
        c = env.client()
        watchers.append((c, c.subscribe(paths, throttle_ms=(20 if i % 3 == 2 else None)), paths))
    keys = ["a", "b", "c", "d", "e", "a~1x"]

    def rand_path():
        return "/debug/r/" + "/".join(rng.choice(keys) for _ in range(rng.randint(1, 4)))

    def rand_value():
        k = rng.random()
        if k < 0.4:
            return rng.randint(0, 5)
        if k < 0.6:
            return {rng.choice(keys): rng.randint(0, 3) for _ in range(rng.randint(0, 3))}
        if k < 0.7:
            return [1, "x", None]
        return rng.choice(["s", True, None, 1.5])

    for round_ in range(60):
        batch = []
        for i in range(rng.randint(1, 12)):
            if rng.random() < 0.3:
                batch.append({"jsonrpc": "2.0", "method": "debug.remove", "params": {"path": rand_path()}})
            else:
                batch.append({"jsonrpc": "2.0", "method": "debug.set", "params": {"path": rand_path(), "value": rand_value()}})
        d.send_raw(json.dumps(batch) + "\n")
        if round_ % 7 == 0:
            d.call("hello")
    tree = d.call("tree.get", {"path": ""})

    def matches(c, sub, paths):
        for p in paths:
            if p == "":
                if c.mirror(sub) != tree["value"]:
                    return False
            elif _has(tree["value"], p):
                if pointer_get(c.mirror(sub), p, None) != pointer_get(tree["value"], p):
                    return False
            elif _has(c.mirror(sub), p):
                return False
        return True

    for c, sub, paths in watchers:
        # Reads until the mirror equals the tree (throttled streams arrive a little later).
        c.wait_for(lambda: matches(c, sub, paths), timeout=10, what=f"mirror of {paths}")
        assert not any(n["method"] == "tree.resync" for n in c.notifications)
    # Something happened at all.
    assert pointer_get(tree["value"], "/debug/r", None) is not None


def _has(doc, path):
    sentinel = object()
    return pointer_get(doc, path, sentinel) is not sentinel


def _lines_until_answer(c, answered):
    """Every line until one that answered() accepts (a batch's answer is a list)."""
    got = []
    while not got or not answered(got[-1]):
        got.append(c.read_line(10))
    return got


@pytest.mark.parametrize("member, throttle", [
    ({"method": "debug.set", "params": {"path": "/debug/x", "value": 1}}, 0),
    ({"method": "debug.set", "params": {"path": "/debug/x", "value": 1}}, 50),
    ({"method": "debug.flood", "params": {"count": 5, "keys": 2, "batch": 1}}, 0)])
def test_a_subscription_made_in_a_batch_notifies_after_the_batch_answers(env, member, throttle):
    """Notifications of a subscription arrive after the answer that gives its id (a client
    drops those of a subscription it does not know). In a batch, a later member's writes were
    flushed, and sent to the new subscription, before the batch's answer: here a write, and an
    asynchronous member that writes several batches before it answers. They now follow the
    answer, and the mirror built from the snapshot and them equals the tree."""
    c = env.client()
    c.call("debug.set", {"path": "/debug/x", "value": 0})
    c.send_raw(json.dumps([
        {"jsonrpc": "2.0", "id": 1, "method": "tree.subscribe", "params": {"paths": ["/debug"], "throttleMs": throttle}},
        dict(member, jsonrpc="2.0", id=2)]) + "\n")
    got = _lines_until_answer(c, lambda m: isinstance(m, list))
    assert len(got) == 1, got   # nothing before the answer
    answer = {a["id"]: a for a in got[0]}
    sub = answer[1]["result"]["subscription"]
    assert "result" in answer[2], answer[2]
    doc = {"debug": answer[1]["result"]["snapshot"]["/debug"]}
    revision = answer[1]["result"]["revision"]
    c.call("hello")   # every change made before it has reached this client (Ordering 9)
    for n in changes_of(c, sub):
        assert n["revision"] > revision
        revision = n["revision"]
        apply_patch(doc, n["changes"])
    tree = c.call("tree.get", {"path": "/debug"})
    assert revision == tree["revision"] and doc["debug"] == tree["value"]


def test_a_batch_of_notifications_only_leaves_its_subscription_working(env):
    """A subscription made by a notification in a batch of notifications (nobody learns its id,
    no answer is sent) still works: nothing waits for an answer that never comes."""
    c = env.client()
    c.send_raw(json.dumps([{"jsonrpc": "2.0", "method": "tree.subscribe", "params": {"paths": ["/debug"]}},
                           {"jsonrpc": "2.0", "method": "debug.set", "params": {"path": "/debug/y", "value": 1}}]) + "\n")
    c.call("debug.set", {"path": "/debug/y", "value": 2})
    doc = {}   # /debug held nothing when it subscribed
    for n in changes_of(c, 1):
        apply_patch(doc, n["changes"])
    assert doc == {"debug": {"y": 2}}
