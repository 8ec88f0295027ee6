"""rpc.discover over the socket, held against the daemon itself: the document it serves covers
the core methods, its examples are accepted and their results match the result schemas, and for
every param the document declares, a wrong-typed value is refused with -32602 naming it."""

import copy
import json
import os

import jsonschema  # python3-jsonschema (scripts/install-deps)
import pytest

from qsdtest import RpcError

CORE = ["hello", "tree.get", "tree.subscribe", "tree.unsubscribe", "events.subscribe", "rpc.discover"]
DEBUG = ["debug.set", "debug.remove", "debug.emit", "debug.flood"]
CORE_JSON = os.path.join(os.path.dirname(__file__), "..", "..", "protocol", "api", "core.json")


@pytest.fixture
def daemon(bare_env):
    bare_env.start_qsd(backends=[], debug_api=True)
    c = bare_env.client()
    yield bare_env, c
    c.close()


def validator(doc, schema):
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    return jsonschema.Draft7Validator(schema, resolver=resolver)


def by_name(doc):
    return {m["name"]: m for m in doc["methods"]}


def test_discover_serves_the_described_core(daemon):
    _, c = daemon
    doc = c.call("rpc.discover")
    assert doc["openrpc"] == "1.2.6"
    assert doc["info"]["title"] == "qsd"
    assert doc["info"]["version"] == str(c.call("hello")["protocol"])
    methods = by_name(doc)
    for name in CORE + DEBUG:
        assert name in methods, name
    for name in DEBUG:
        assert methods[name].get("x-debug") is True, name
    for name in CORE:
        assert not methods[name].get("x-debug"), name
    # The core part of the served document is core.json as written.
    with open(CORE_JSON) as f:
        core = json.load(f)
    for m in core["methods"]:
        assert methods[m["name"]] == m, m["name"]
    assert [n["name"] for n in doc["x-notifications"]] == ["tree.changed", "tree.resync", "event"]
    assert doc["components"]["schemas"]["Tree"]["properties"]["daemon"] == {"$ref": "#/components/schemas/Daemon"}
    # The document is valid under its own meta-rules: every schema in it is a valid draft-07 schema.
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft7Validator.check_schema(schema)


def test_the_daemon_subtree_matches_its_schema(daemon):
    _, c = daemon
    doc = c.call("rpc.discover")
    c.call("debug.set", {"path": "/debug/x", "value": 1})
    tree = c.call("tree.get", {"path": ""})["value"]
    v = validator(doc, {"$ref": "#/components/schemas/Tree"})
    errors = [e.message for e in v.iter_errors(tree)]
    assert not errors, errors
    assert tree["daemon"]["clients"] >= 1
    assert tree["daemon"]["pid"] == daemon[0].daemon.pid


def run_example(c, method, example):
    params = {p["name"]: p["value"] for p in example["params"]}
    if method == "tree.unsubscribe":
        # The example's subscription id must exist on this connection.
        params["subscription"] = c.call("tree.subscribe", {"paths": ["/daemon"]})["subscription"]
    if method == "debug.remove":
        c.call("debug.set", {"path": params["path"], "value": 1})
    return c.call(method, params)


def described(c):
    """The document rpc.discover serves, and the core and debug methods it describes."""
    doc = c.call("rpc.discover")
    return doc, [m for m in doc["methods"] if m["name"] in CORE + DEBUG]


def test_every_example_is_accepted_and_every_result_matches_its_schema(daemon):
    _, c = daemon
    doc, methods = described(c)
    checked = 0
    for m in methods:
        examples = m.get("examples") or [{"name": "no params", "params": []}]
        for ex in examples:
            result = run_example(c, m["name"], ex)
            errors = [e.message for e in validator(doc, m["result"]["schema"]).iter_errors(result)]
            assert not errors, (m["name"], errors)
            checked += 1
    assert checked >= len(CORE + DEBUG)


def test_an_optional_param_given_as_null_is_as_one_left_out(daemon):
    """protocol.md, Messages: "an optional param given as null is the same as one left out".
    debug.flood refused path: null, which it counted as given."""
    _, c = daemon
    checked = 0
    for m in described(c)[1]:
        for p in m.get("params", []):
            if p.get("required"):
                continue
            ex = (m.get("examples") or [{"params": []}])[0]
            example = dict(ex, params=[q for q in ex["params"] if q["name"] != p["name"]] + [{"name": p["name"], "value": None}])
            try:
                run_example(c, m["name"], example)
            except RpcError as e:
                assert not (e.code == -32602 and (e.data or {}).get("param") == p["name"]), (m["name"], p["name"], e.message)
            checked += 1
    assert checked >= 3


def matches_type(value, types):
    for t in types:
        if t == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if t == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if t == "string" and isinstance(value, str):
            return True
        if t == "array" and isinstance(value, list):
            return True
        if t == "object" and isinstance(value, dict):
            return True
        if t == "boolean" and isinstance(value, bool):
            return True
        if t == "null" and value is None:
            return True
    return False


def resolved(schema, doc):
    while "$ref" in schema:
        node = doc
        for t in schema["$ref"][2:].split("/"):
            node = node[t.replace("~1", "/").replace("~0", "~")]
        schema = node
    return schema


def test_a_wrong_typed_param_is_refused_naming_it(daemon):
    _, c = daemon
    doc = c.call("rpc.discover")
    tried = []
    for m in doc["methods"]:
        if m["name"] not in CORE + DEBUG:
            continue
        example = (m.get("examples") or [{"params": []}])[0]
        base = {p["name"]: p["value"] for p in example["params"]}
        for p in m["params"]:
            schema = resolved(p["schema"], doc)
            t = schema.get("type")
            if t is None:
                # Any JSON value is fine; only absence is wrong, when required.
                if p["required"]:
                    params = {k: v for k, v in base.items() if k != p["name"]}
                    resp = c.call_full(m["name"], params)
                    assert "error" in resp, (m["name"], p["name"], resp)
                    assert resp["error"]["code"] == -32602
                    assert resp["error"]["data"]["param"] == p["name"]
                    tried.append((m["name"], p["name"], "missing"))
                continue
            types = t if isinstance(t, list) else [t]
            bad = next(v for v in (12345, "not-this-type", [1], {"x": 1}, True) if not matches_type(v, types))
            params = copy.deepcopy(base)
            params[p["name"]] = bad
            resp = c.call_full(m["name"], params)
            assert "error" in resp, (m["name"], p["name"], bad, resp)
            assert resp["error"]["code"] == -32602, (m["name"], p["name"], resp)
            assert resp["error"]["data"]["param"] == p["name"], (m["name"], p["name"], resp)
            assert resp["error"]["data"].get("expected") or resp["error"]["data"].get("supported"), resp
            tried.append((m["name"], p["name"], bad))
    names = {t[0] for t in tried}
    # Every core method with params was exercised (rpc.discover has none).
    assert names >= set(CORE + DEBUG) - {"rpc.discover"}, names
    # Each required param also gives -32602 naming it when left out.
    for m in doc["methods"]:
        if m["name"] not in CORE + DEBUG:
            continue
        for p in m["params"]:
            if not p["required"]:
                continue
            resp = c.call_full(m["name"], {})
            assert resp["error"]["code"] == -32602, (m["name"], resp)
            assert resp["error"]["data"]["param"] in [q["name"] for q in m["params"] if q["required"]]


def test_params_by_position_are_refused_naming_params(daemon):
    _, c = daemon
    for name in CORE:
        resp = c.call_full(name, [1])
        assert resp["error"]["code"] == -32602, (name, resp)
        assert resp["error"]["data"]["param"] == "params"


def test_documented_error_codes_are_the_ones_returned(daemon):
    _, c = daemon
    doc = c.call("rpc.discover")
    errors = {e["code"]: e for e in doc["components"]["errors"].values()}
    # Not found: a path that holds nothing.
    resp = c.call_full("tree.get", {"path": "/nothing/here"})
    assert resp["error"]["code"] == -32001 and errors[-32001]["message"] == "Not found"
    assert resp["error"]["data"]["path"] == "/nothing/here"
    # Unknown subscription.
    resp = c.call_full("tree.unsubscribe", {"subscription": 999})
    assert resp["error"]["code"] == -32001 and resp["error"]["data"]["param"] == "subscription"
    # Method not found names the method.
    resp = c.call_full("no.such", {})
    assert resp["error"]["code"] == -32601 and resp["error"]["data"]["method"] == "no.such"
    # Limits: too many paths, as x-limits says.
    limit = doc["x-limits"]["pathsPerSubscription"]["value"]
    resp = c.call_full("tree.subscribe", {"paths": ["/daemon"] * (limit + 1)})
    assert resp["error"]["code"] == -32003
    assert resp["error"]["data"] == {"limit": "paths", "max": limit}
    # Every code the daemon returned is documented.
    for code in (-32001, -32601, -32003, -32602):
        assert code in errors
