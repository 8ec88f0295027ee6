"""/audio against a real pipewire + wireplumber started by each test (pwtest.PipeWire), with null
sinks and sources from pw-cli and streams from pw-cat. Everything is asserted through the
socket (the test client's mirror of its subscription, or a call), and every action is checked
with wpctl and pw-dump, the way a user would look."""

import os
import json

import jsonschema
import pytest

from pwtest import PipeWire, audio_nodes, exits_cleanly, node_key, sinks_world, write_tone
from qsdtest import pointer_get, wait_until


@pytest.fixture(autouse=True)
def _qsd_exits_cleanly(env):
    yield
    exits_cleanly(env)


def world(env, **kw):
    pw = PipeWire(env, **kw)
    return pw


def serial(pw, name):
    return str(pw.node_by_name(name)["info"]["props"]["object.serial"])


def approx(v, tol=1e-4):
    return pytest.approx(v, abs=tol)


def test_sinks_sources_and_streams_appear_with_identity(env):
    pw = world(env)
    a = pw.add_null("qsd_sink_a", description="Test Sink A")
    pw.add_null("qsd_sink_b", description="Test Sink B")
    mic = pw.add_null("qsd_mic", media_class="Audio/Source/Virtual", positions="MONO", description="Test Mic")
    pw.run(["wpctl", "set-default", str(a)])
    player = pw.play("test-player", target="qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka, kb, km, ks = (node_key(c, sub, n) for n in ("qsd_sink_a", "qsd_sink_b", "qsd_mic", "test-player"))
    # Keys are object.serial; ids are the global ids wpctl and pw-cli show.
    assert ka == serial(pw, "qsd_sink_a") and km == serial(pw, "qsd_mic") and ks == serial(pw, "test-player")
    nodes = audio_nodes(c, sub)
    sink = nodes[ka]
    assert sink["id"] == a and sink["serial"] == int(ka)
    assert sink["name"] == "qsd_sink_a" and sink["description"] == "Test Sink A"
    assert sink["mediaClass"] == "Audio/Sink" and sink["type"] == "audioSink"
    assert sink["isSink"] is True and sink["isStream"] is False
    assert sink["application"] is None and sink["device"] is None
    # Every audio node carries its volume from the start (no bind step).
    assert sink["audio"] == {"volume": 1.0, "volumes": [1.0, 1.0], "channels": ["frontLeft", "frontRight"], "muted": False}
    src = nodes[km]
    assert src["id"] == mic and src["type"] == "audioSource" and src["isSink"] is False
    assert src["audio"]["channels"] == ["mono"]
    stream = nodes[ks]
    assert stream["type"] == "audioOutStream" and stream["isStream"] is True and stream["isSink"] is True
    assert stream["mediaClass"] == "Stream/Output/Audio"
    assert stream["application"]["name"] == "qsd-test-player"
    assert stream["application"]["processId"] == player.pid and stream["application"]["binary"] == "pw-cat"
    assert stream["media"]["name"].endswith("tone.wav") and stream["media"]["role"] == "Music"
    # A stream has channels once its format is negotiated with the sink, which may come after
    # qsd first sees it.
    c.wait_value(sub, f"/audio/nodes/{ks}/audio/volumes", [1.0, 1.0])
    # The stream plays to sink a: two links (one per channel), grouped as playingTo/capturedFrom.
    c.wait_value(sub, f"/audio/nodes/{ks}/playingTo", [ka])
    c.wait_value(sub, f"/audio/nodes/{ka}/capturedFrom", [ks])
    assert nodes[kb]["capturedFrom"] == []
    links = c.mirror(sub)["audio"]["links"]
    mine = [l for l in links.values() if l["output"] == ks]
    assert len(mine) == 2 and all(l["input"] == ka for l in mine)
    c.wait_for(lambda: all(l["state"] == "active" for l in c.mirror(sub)["audio"]["links"].values() if l["output"] == ks),
               what="links active")
    for k, l in c.mirror(sub)["audio"]["links"].items():
        o = next(x for x in pw.dump() if x["id"] == l["id"])
        assert str(o["info"]["props"]["object.serial"]) == k
    # Defaults as WirePlumber set them; non-audio nodes (drivers) are listed with audio null.
    c.wait_value(sub, "/audio/defaultAudioSink", ka)
    assert c.mirror(sub)["audio"]["preferredDefaultAudioSink"] == ka
    assert c.mirror(sub)["audio"]["defaultAudioSource"] == km
    drivers = [n for n in audio_nodes(c, sub).values() if n["name"] == "Dummy-Driver"]
    assert drivers and drivers[0]["type"] == "other" and drivers[0]["audio"] is None
    # A node added later appears complete, in one `add` with its volume.
    pw.add_null("qsd_sink_c")
    kc = node_key(c, sub, "qsd_sink_c")
    adds = [ch for n in c.notifications if n["method"] == "tree.changed" for ch in n["params"]["changes"]
            if ch["path"] == f"/audio/nodes/{kc}"]
    assert adds and adds[0]["op"] == "add" and adds[0]["value"]["audio"]["volumes"] == [1.0, 1.0]
    # And it leaves as a whole.
    pw.run(["pw-cli", "destroy", str(pw.node_id("qsd_sink_c"))])
    c.wait_for(lambda: kc not in audio_nodes(c, sub), what="sink c removed")
    # The whole domain matches its schema.
    doc = c.call("rpc.discover")
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    errors = [e.message for e in jsonschema.Draft7Validator({"$ref": "#/components/schemas/Audio"}, resolver=resolver)
              .iter_errors(c.mirror(sub)["audio"])]
    assert not errors, errors
    names = {m["name"] for m in doc["methods"]}
    assert {"audio.setVolume", "audio.setVolumes", "audio.setMuted", "audio.setPreferredDefault", "audio.moveStream",
            "audio.setDeviceProfile", "audio.setRoute", "audio.monitorPeaks"} <= names
    assert doc["components"]["schemas"]["Tree"]["properties"]["audio"] == {"$ref": "#/components/schemas/Audio"}
    assert c.call("tree.get", {"path": "/daemon/backends/pipewire/state"})["value"] == "running"


def test_wpctl_changes_show_in_the_tree_with_wpctls_values(env):
    pw = world(env)
    a = pw.add_null("qsd_sink_a")
    b = pw.add_null("qsd_sink_b")
    pw.run(["wpctl", "set-default", str(a)])
    pw.play("test-player", target="qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka, kb, ks = (node_key(c, sub, n) for n in ("qsd_sink_a", "qsd_sink_b", "test-player"))
    pw.run(["wpctl", "set-volume", str(a), "0.35"])
    c.wait_value(sub, f"/audio/nodes/{ka}/audio/volume", 0.35)
    assert audio_nodes(c, sub)[ka]["audio"]["volumes"] == [0.35, 0.35]
    assert pw.wpctl_volume(a) == (0.35, False)
    pw.run(["wpctl", "set-mute", str(a), "1"])
    c.wait_value(sub, f"/audio/nodes/{ka}/audio/muted", True)
    assert pw.wpctl_volume(a) == (0.35, True)
    pw.run(["wpctl", "set-mute", str(a), "toggle"])
    c.wait_value(sub, f"/audio/nodes/{ka}/audio/muted", False)
    # Above 100 %, and a stream's volume.
    pw.run(["wpctl", "set-volume", str(b), "1.5"])
    c.wait_value(sub, f"/audio/nodes/{kb}/audio/volume", 1.5)
    pw.run(["wpctl", "set-volume", str(pw.node_id("test-player")), "0.2"])
    c.wait_value(sub, f"/audio/nodes/{ks}/audio/volume", 0.2)
    # The default follows wpctl set-default (and the preferred one with it).
    pw.run(["wpctl", "set-default", str(b)])
    c.wait_value(sub, "/audio/preferredDefaultAudioSink", kb)
    c.wait_value(sub, "/audio/defaultAudioSink", kb)
    # Raw linear channel volumes (pw-cli) read on the cubic scale, per channel.
    pw.run(["pw-cli", "set-param", str(a), "Props", "{ channelVolumes: [ 0.125, 0.001 ] }"])
    c.wait_value(sub, f"/audio/nodes/{ka}/audio/volumes", [0.5, 0.1])
    assert audio_nodes(c, sub)[ka]["audio"]["volume"] == approx(0.3)


def test_default_sink_and_source_are_one_path_each(env):
    pw = world(env)
    a = pw.add_null("qsd_sink_a", description="Test Sink A")
    b = pw.add_null("qsd_sink_b", description="Test Sink B")
    pw.add_null("qsd_mic", media_class="Audio/Source/Virtual", positions="MONO", description="Test Mic")
    pw.run(["wpctl", "set-default", str(a)])
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    ka, kb, km = (node_key(c, sub, n) for n in ("qsd_sink_a", "qsd_sink_b", "qsd_mic"))
    c.wait_value(sub, "/audio/sink", {"node": ka, "id": a, "description": "Test Sink A", "volume": 1.0,
                                      "volumes": [1.0, 1.0], "muted": False})
    c.wait_value(sub, "/audio/source/node", km)
    source = c.mirror(sub)["audio"]["source"]
    assert source["id"] == pw.node_id("qsd_mic") and source["volumes"] == [1.0] and source["description"] == "Test Mic"
    # A bar watches /audio/sink alone: a change of the default sink's volume reaches it in the same
    # batch as the node's, whoever makes it.
    bar = env.client()
    bsub = bar.subscribe(["/audio/sink"])
    pw.run(["wpctl", "set-volume", "@DEFAULT_AUDIO_SINK@", "0.4"])
    c.wait_value(sub, "/audio/sink/volume", 0.4)
    batch = next(n["params"] for n in reversed(c.notifications) if n["method"] == "tree.changed"
                 and any(ch["path"].startswith("/audio/sink") for ch in n["params"]["changes"]))
    assert any(ch["path"].startswith(f"/audio/nodes/{ka}/audio") for ch in batch["changes"])
    bar.wait_value(bsub, "/audio/sink/volumes", [0.4, 0.4])
    # `id` is what wpctl takes, `node` what qsd's actions take.
    sink = c.mirror(sub)["audio"]["sink"]
    assert pw.wpctl_volume(sink["id"]) == (0.4, False)
    r = c.call("audio.setMuted", {"node": sink["node"], "muted": True})
    assert r["audio"]["muted"] is True and pointer_get(c.mirror(sub), "/audio/sink/muted") is True
    # The default changes: the same path follows it.
    pw.run(["wpctl", "set-default", str(b)])
    bar.wait_value(bsub, "/audio/sink", {"node": kb, "id": b, "description": "Test Sink B", "volume": 1.0,
                                         "volumes": [1.0, 1.0], "muted": False})
    # The default sink leaves: WirePlumber falls back to the other one.
    pw.run(["pw-cli", "destroy", str(b)])
    bar.wait_value(bsub, "/audio/sink/node", ka)
    assert bar.mirror(bsub)["audio"]["sink"]["muted"] is True
    # Without a session manager there is no default: null.
    pw.stop_wireplumber()
    bar.wait_value(bsub, "/audio/sink", None)
    c.wait_value(sub, "/audio/source", None)
    doc = c.call("rpc.discover")
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    errors = [e.message for e in jsonschema.Draft7Validator({"$ref": "#/components/schemas/Audio"}, resolver=resolver)
              .iter_errors(c.mirror(sub)["audio"])]
    assert not errors, errors


def test_actions_are_applied_before_they_answer(env):
    pw = world(env)
    a = pw.add_null("qsd_sink_a")
    b = pw.add_null("qsd_sink_b")
    pw.run(["wpctl", "set-default", str(a)])
    pw.play("test-player", target="qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka, kb, ks = (node_key(c, sub, n) for n in ("qsd_sink_a", "qsd_sink_b", "test-player"))
    mirror = lambda path: pointer_get(c.mirror(sub), path, None)  # noqa: E731

    r = c.call("audio.setVolume", {"node": ka, "volume": 0.5})
    assert r == {"node": ka, "audio": {"volume": 0.5, "volumes": [0.5, 0.5], "channels": ["frontLeft", "frontRight"],
                                        "muted": False}}
    # Applied before the answer: PipeWire has it, and this connection's mirror already shows it
    # (the tree.changed was sent before the response).
    assert mirror(f"/audio/nodes/{ka}/audio/volume") == 0.5
    assert pw.wpctl_volume(a) == (0.5, False)
    props = pw.node_by_name("qsd_sink_a")["info"]["params"]["Props"][0]
    assert props["channelVolumes"] == [approx(0.125), approx(0.125)]

    # setVolume keeps the balance; setVolumes sets each channel.
    r = c.call("audio.setVolumes", {"node": ka, "volumes": [0.8, 0.4]})
    assert r["audio"]["volumes"] == [0.8, 0.4] and mirror(f"/audio/nodes/{ka}/audio/volumes") == [0.8, 0.4]
    props = pw.node_by_name("qsd_sink_a")["info"]["params"]["Props"][0]
    assert props["channelVolumes"] == [approx(0.512), approx(0.064)]
    assert pw.wpctl_volume(a)[0] == 0.8   # wpctl prints the first channel
    # ... not the mean, which is `volume` (docs/backends/pipewire.md), nor the loudest.
    r = c.call("audio.setVolumes", {"node": ka, "volumes": [0.4, 0.8]})
    assert r["audio"]["volume"] == approx(0.6, 1e-6) and pw.wpctl_volume(a)[0] == 0.4
    c.call("audio.setVolumes", {"node": ka, "volumes": [0.8, 0.4]})
    r = c.call("audio.setVolume", {"node": ka, "volume": 0.3})
    assert r["audio"]["volumes"] == [approx(0.4, 1e-6), approx(0.2, 1e-6)]
    # A number as the key works too (qsctl's node=52 parses as one).
    r = c.call("audio.setMuted", {"node": int(ka), "muted": True})
    assert r["audio"]["muted"] is True and mirror(f"/audio/nodes/{ka}/audio/muted") is True
    assert pw.wpctl_volume(a)[1] is True
    c.call("audio.setMuted", {"node": ka, "muted": False})
    assert pw.wpctl_volume(a)[1] is False
    # A no-op answers at once.
    assert c.call("audio.setMuted", {"node": ka, "muted": False})["audio"]["muted"] is False
    # A stream's volume.
    c.call("audio.setVolume", {"node": ks, "volume": 0.25})
    assert pw.wpctl_volume(pw.node_id("test-player"))[0] == 0.25

    # The preferred default: default.configured.audio.sink = {"name": ...}, and WirePlumber follows.
    r = c.call("audio.setPreferredDefault", {"node": kb})
    assert r == {"kind": "sink", "node": kb}
    assert mirror("/audio/preferredDefaultAudioSink") == kb
    assert pw.metadata("default.configured.audio.sink") == {"name": "qsd_sink_b"}
    c.wait_value(sub, "/audio/defaultAudioSink", kb)
    assert pw.run(["wpctl", "inspect", "@DEFAULT_AUDIO_SINK@"]).stdout.startswith(f"id {b},")
    r = c.call("audio.setPreferredDefault", {"node": None, "kind": "sink"})
    assert r == {"kind": "sink", "node": None}
    assert mirror("/audio/preferredDefaultAudioSink") is None
    assert pw.metadata("default.configured.audio.sink") is None
    # The same through qsctl.
    out = env.qsctl("call", "audio.setVolume", f"node={kb}", "volume=0.75")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["audio"]["volume"] == 0.75 and pw.wpctl_volume(b)[0] == 0.75


def test_writes_in_a_row_answer_with_the_last(env):
    """A scroll wheel sends twenty volume steps without waiting: PipeWire applies them in order
    and may never show the earlier values, so each call waiting for its own value answered
    pipewire.Timeout after 5 s, all but the last. The latest write of a node's volume (its mute,
    a default) wins: the calls still waiting answer with it, with what it found."""
    pw = world(env)
    a = pw.add_null("qsd_sink_a")
    pw.add_null("qsd_sink_b")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka, kb = (node_key(c, sub, n) for n in ("qsd_sink_a", "qsd_sink_b"))
    c.call("audio.setVolume", {"node": ka, "volume": 0.2})
    steps = [round(0.25 + 0.03 * i, 2) for i in range(20)]
    sent = [("audio.setVolume", {"node": ka, "volume": v}) for v in steps]
    sent += [("audio.setMuted", {"node": ka, "muted": True}), ("audio.setMuted", {"node": ka, "muted": False})]
    sent += [("audio.setPreferredDefault", {"node": ka}), ("audio.setPreferredDefault", {"node": kb})]
    for i, (method, params) in enumerate(sent):
        c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": method, "params": params}) + "\n")
    answers = {}
    while len(answers) < len(sent):
        m = c.read_message(4.5)   # within the 5 s an answer that timed out would take
        if "id" in m:
            answers[m["id"] - 1000] = m
    assert all("result" in m for m in answers.values()), [m for m in answers.values() if "error" in m]
    # Each answers with its own value when PipeWire showed it before the next call came, else
    # with a later one's.
    for i in range(20):
        assert answers[i]["result"]["audio"]["volume"] in steps[i:]
    assert answers[19]["result"]["audio"]["volume"] == steps[-1]
    assert answers[21]["result"]["audio"]["muted"] is False
    assert answers[22]["result"]["node"] in (ka, kb) and answers[23]["result"] == {"kind": "sink", "node": kb}
    assert pw.wpctl_volume(a) == (steps[-1], False)
    assert pw.metadata("default.configured.audio.sink") == {"name": "qsd_sink_b"}


def test_move_stream_plays_to_the_new_sink(env):
    pw = world(env)
    a = pw.add_null("qsd_sink_a")
    b = pw.add_null("qsd_sink_b")
    # Virtual sources: a null node of class Audio/Source stalls WirePlumber 0.4.13's linking.
    pw.add_null("qsd_mic", media_class="Audio/Source/Virtual", positions="MONO")
    pw.add_null("qsd_mic2", media_class="Audio/Source/Virtual", positions="MONO")
    pw.run(["wpctl", "set-default", str(a)])
    pw.play("test-player")
    pw.record("test-recorder")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka, kb, ks = (node_key(c, sub, n) for n in ("qsd_sink_a", "qsd_sink_b", "test-player"))
    km, km2, kr = (node_key(c, sub, n) for n in ("qsd_mic", "qsd_mic2", "test-recorder"))
    c.wait_value(sub, f"/audio/nodes/{ks}/playingTo", [ka])
    c.wait_value(sub, f"/audio/nodes/{kr}/capturedFrom", predicate=lambda v: v in ([km], [km2]))
    r = c.call("audio.moveStream", {"stream": ks, "target": kb})
    assert r == {"stream": ks, "target": kb}
    # Linked to b when it answered; the metadata holds b's serial; pw-dump's links go to b.
    assert pointer_get(c.mirror(sub), f"/audio/nodes/{ks}/playingTo") == [kb]
    sid = pw.node_id("test-player")
    assert str(pw.metadata("target.object", subject=sid)) == kb
    wait_until(lambda: {l["info"]["input-node-id"] for l in pw.dump() if l["type"] == "PipeWire:Interface:Link"
                        and l["info"]["output-node-id"] == sid} == {b}, 20, what="pw-dump links to b")
    c.wait_value(sub, f"/audio/nodes/{kb}/capturedFrom", [ks])
    c.wait_value(sub, f"/audio/nodes/{ka}/capturedFrom", [])
    # Back to following the default.
    r = c.call("audio.moveStream", {"stream": ks, "target": None})
    assert r == {"stream": ks, "target": None}
    assert pointer_get(c.mirror(sub), f"/audio/nodes/{ks}/playingTo") == [ka]
    assert pw.metadata("target.object", subject=sid) is None
    # A recording stream moves to the other source.
    other = km2 if pointer_get(c.mirror(sub), f"/audio/nodes/{kr}/capturedFrom") == [km] else km
    r = c.call("audio.moveStream", {"stream": kr, "target": other})
    assert r == {"stream": kr, "target": other}
    assert pointer_get(c.mirror(sub), f"/audio/nodes/{kr}/capturedFrom") == [other]


BAD = [
    # method, params, the param named
    ("audio.setVolume", {"volume": 0.5}, "node"),
    ("audio.setVolume", {"node": [1], "volume": 0.5}, "node"),
    ("audio.setVolume", {"node": "@A", "volume": -0.1}, "volume"),
    ("audio.setVolume", {"node": "@A", "volume": "loud"}, "volume"),
    ("audio.setVolume", {"node": "@A", "volume": 10.5}, "volume"),
    ("audio.setVolume", {"node": "@A", "volume": True}, "volume"),
    ("audio.setVolume", {"node": "@A"}, "volume"),
    ("audio.setVolume", {"node": "@DRIVER", "volume": 0.5}, "node"),
    ("audio.setVolumes", {"node": "@A", "volumes": [0.5]}, "volumes"),
    ("audio.setVolumes", {"node": "@A", "volumes": [0.5, -1]}, "volumes"),
    ("audio.setVolumes", {"node": "@A", "volumes": [0.5, "x"]}, "volumes"),
    ("audio.setVolumes", {"node": "@A", "volumes": 0.5}, "volumes"),
    ("audio.setMuted", {"node": "@A", "muted": "yes"}, "muted"),
    ("audio.setPreferredDefault", {"node": "@S"}, "node"),
    ("audio.setPreferredDefault", {"node": "@A", "kind": "source"}, "kind"),
    ("audio.setPreferredDefault", {"node": "@A", "kind": "both"}, "kind"),
    ("audio.setPreferredDefault", {"node": None}, "kind"),
    ("audio.setPreferredDefault", {}, "node"),
    ("audio.moveStream", {"stream": "@A", "target": "@B"}, "stream"),
    ("audio.moveStream", {"stream": "@S", "target": "@S"}, "target"),
    ("audio.moveStream", {"stream": "@S", "target": "@M"}, "target"),
    ("audio.moveStream", {"stream": "@S"}, "target"),
    ("audio.moveStream", {"stream": "@S", "target": 3.5}, "target"),
    ("audio.setDeviceProfile", {"device": "1", "profile": None}, "profile"),
    ("audio.setRoute", {"device": "99999", "route": "x"}, "route"),
    ("audio.monitorPeaks", {"node": "@A"}, "enabled"),
    ("audio.monitorPeaks", {"node": "@DRIVER", "enabled": True}, "node"),
    ("audio.watchProperties", {"node": "@A"}, "enabled"),
    ("audio.watchProperties", {"node": -1, "enabled": True}, "node"),
]

# Well-formed keys that name nothing: -32001 with data {param, <param>}, as in every domain.
NOT_FOUND = [
    ("audio.setVolume", {"node": "99999", "volume": 0.5}, "node"),
    ("audio.setMuted", {"node": "nope", "muted": True}, "node"),
    ("audio.setPreferredDefault", {"node": "99999"}, "node"),
    ("audio.moveStream", {"stream": "99999", "target": "@B"}, "stream"),
    ("audio.moveStream", {"stream": "@S", "target": 99999}, "target"),
    ("audio.setDeviceProfile", {"device": "99999", "profile": 1}, "device"),
    ("audio.setRoute", {"device": "99999", "route": 1}, "device"),
    ("audio.monitorPeaks", {"node": "99999", "enabled": True}, "node"),
    ("audio.watchProperties", {"node": "99999", "enabled": True}, "node"),
]


def test_bad_params_are_refused_naming_the_param_and_nothing_is_sent(env):
    pw = world(env)
    a = pw.add_null("qsd_sink_a")
    pw.add_null("qsd_sink_b")
    pw.add_null("qsd_mic", media_class="Audio/Source/Virtual", positions="MONO")
    pw.run(["wpctl", "set-default", str(a)])
    pw.play("test-player", target="qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    keys = {"@A": node_key(c, sub, "qsd_sink_a"), "@B": node_key(c, sub, "qsd_sink_b"),
            "@M": node_key(c, sub, "qsd_mic"), "@S": node_key(c, sub, "test-player"),
            "@DRIVER": node_key(c, sub, "Dummy-Driver")}

    def state():
        d = pw.dump()
        props = {o["id"]: o["info"]["params"].get("Props") for o in d if o["type"] == "PipeWire:Interface:Node"}
        meta = [o["metadata"] for o in d if o["type"] == "PipeWire:Interface:Metadata"]
        links = sorted((l["info"]["output-node-id"], l["info"]["input-node-id"]) for l in d
                       if l["type"] == "PipeWire:Interface:Link")
        return props, meta, links

    before = state()
    for method, params, param in BAD:
        params = {k: keys.get(v, v) if isinstance(v, str) else v for k, v in params.items()}
        resp = c.call_full(method, params)
        assert "error" in resp, (method, params, resp)
        assert resp["error"]["code"] == -32602, (method, params, resp)
        assert resp["error"]["data"]["param"] == param, (method, params, resp)
        assert resp["error"]["data"].get("expected"), resp
    for method, params, param in NOT_FOUND:
        params = {k: keys.get(v, v) if isinstance(v, str) else v for k, v in params.items()}
        resp = c.call_full(method, params)
        assert resp.get("error", {}).get("code") == -32001, (method, params, resp)
        assert resp["error"]["data"]["param"] == param, (method, params, resp)
        assert str(resp["error"]["data"][param]) == str(params[param]), resp
    # Nothing reached PipeWire: volumes, metadata and links are as they were.
    assert state() == before
    assert pw.wpctl_volume(a) == (1.0, False)
    # Every declared param, given a value of a type its schema rules out, is refused naming it.
    doc = c.call("rpc.discover")
    for m in doc["methods"]:
        if not m["name"].startswith("audio."):
            continue
        base = {p["name"]: p["value"] for p in m["examples"][0]["params"]}
        for k, v in base.items():
            if v in ("52", "61", "77", "40"):
                base[k] = keys["@A"]
        for p in m["params"]:
            params = dict(base)
            params[p["name"]] = {"x": 1}
            resp = c.call_full(m["name"], params)
            assert resp.get("error", {}).get("code") == -32602, (m["name"], p["name"], resp)
            assert resp["error"]["data"]["param"] == p["name"], (m["name"], p["name"], resp)
    assert state()[0] == before[0]


def test_peaks_on_request_shared_and_closed_with_the_last_client(env):
    pw = world(env)
    a = pw.add_null("qsd_sink_a")
    pw.run(["wpctl", "set-default", str(a)])
    pw.play("test-player", target="qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka, ks = node_key(c, sub, "qsd_sink_a"), node_key(c, sub, "test-player")
    meters = lambda: [o for o in pw.dump() if o["type"] == "PipeWire:Interface:Node"  # noqa: E731
                      and o["info"]["props"].get("node.name") == "qsd.peaks"]
    # Nothing is captured while nobody asked.
    assert meters() == [] and "peaks" not in audio_nodes(c, sub)[ka]
    c1 = env.client()
    assert c1.call("audio.monitorPeaks", {"node": ka, "enabled": True}) == {"node": ka, "enabled": True}
    assert len(meters()) == 1
    # The tone's amplitude (0.5) shows on both channels of the sink's monitor.
    c.wait_for(lambda: (audio_nodes(c, sub)[ka].get("peak") or 0) > 0.45, 20, what="peak of the tone")
    node = audio_nodes(c, sub)[ka]
    # (8 kHz resampled to the graph's rate overshoots a little.)
    assert len(node["peaks"]) == 2 and all(p == approx(0.5, 0.05) for p in node["peaks"])
    assert node["peak"] == max(node["peaks"])
    # Which channel each peak is: the sink's FL FR, as the meter's format has them.
    assert node["peakChannels"] == ["frontLeft", "frontRight"]
    # One thread, even while a level meter streams: libpipewire's data loop runs in qsd's loop.
    assert os.listdir(f"/proc/{env.daemon.pid}/task") == [str(env.daemon.pid)]
    # It measures the signal: the stream at 0.5 (linear 0.125) plays the tone at 0.0625.
    c.call("audio.setVolume", {"node": ks, "volume": 0.5})
    c.wait_for(lambda: 0.04 < (audio_nodes(c, sub)[ka].get("peak") or 1) < 0.09, 20, what="quieter peak")
    c.call("audio.setVolume", {"node": ks, "volume": 1.0})
    # The level meter's own links are not playback.
    assert node["playingTo"] == []
    # A second client shares the stream; the first one stopping does not close it.
    c2 = env.client()
    c2.call("audio.monitorPeaks", {"node": ka, "enabled": True})
    c2.call("audio.monitorPeaks", {"node": ka, "enabled": True})   # twice: still one hold
    assert len(meters()) == 1
    assert c1.call("audio.monitorPeaks", {"node": ka, "enabled": False}) == {"node": ka, "enabled": False}
    assert len(meters()) == 1 and "peaks" in audio_nodes(c, sub)[ka]
    # The tree changes at most 25 times a second, not per buffer.
    n0 = len([n for n in c.notifications if n["method"] == "tree.changed"])
    import time
    t0 = time.monotonic()
    c.pump(2.0)
    elapsed = time.monotonic() - t0
    changes = len([n for n in c.notifications if n["method"] == "tree.changed"]) - n0
    assert changes <= 25 * elapsed + 2, (changes, elapsed)
    # The last client disconnecting closes it, and the peaks leave the tree.
    c2.close()
    c.wait_for(lambda: "peaks" not in audio_nodes(c, sub)[ka], what="peaks removed")
    assert "peak" not in audio_nodes(c, sub)[ka] and "peakChannels" not in audio_nodes(c, sub)[ka]
    wait_until(lambda: meters() == [], 20, what="the meter stream closed")
    # A stream can be metered too.
    c3 = env.client()
    c3.call("audio.monitorPeaks", {"node": ks, "enabled": True})
    c.wait_for(lambda: (audio_nodes(c, sub)[ks].get("peak") or 0) > 0.45, 20, what="peak of the stream")
    stream = audio_nodes(c, sub)[ks]
    assert len(stream["peakChannels"]) == len(stream["peaks"]) > 0
    c3.call("audio.monitorPeaks", {"node": ks, "enabled": False})
    c.wait_for(lambda: "peaks" not in audio_nodes(c, sub)[ks], what="stream peaks removed")
    wait_until(lambda: meters() == [], 20, what="the meter stream closed")


def audio_errors(c, sub):
    """The schema errors of the whole /audio domain, as the API describes it."""
    doc = c.call("rpc.discover")
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    return [e.message for e in jsonschema.Draft7Validator({"$ref": "#/components/schemas/Audio"}, resolver=resolver)
            .iter_errors(c.mirror(sub)["audio"])]


def pw_cli_props(pw, node_id):
    """A node's properties as pw-cli prints them: each value as PipeWire holds it, a string."""
    out = pw.run(["pw-cli", "info", str(node_id)]).stdout
    props, inside = {}, False
    for line in out.splitlines():
        body = line.lstrip("*").strip()
        if body == "properties:":
            inside = True
        elif inside and " = " in body and not line.lstrip("*").startswith("\t  "):
            k, v = body.split(" = ", 1)
            props[k] = json.loads(v)
        elif inside and body.endswith(":"):
            break
    return props


def test_a_nodes_every_property_while_watched(env):
    """audio.watchProperties: Quickshell's PwNode.properties for the nodes some client watches,
    equal to what pw-cli shows, kept current as the application changes them, shared by the
    clients that asked, and gone with the last one or with the node."""
    pw = world(env)
    pw.add_null("qsd_sink_a")
    stream = pw.stream("qsd_watched", {"qsd.test.colour": "blue", "application.icon-name": "audio-x-generic",
                                       "media.name": "First title"})
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    k, ka = node_key(c, sub, "qsd_watched"), node_key(c, sub, "qsd_sink_a")
    path = f"/audio/nodes/{k}/properties"
    # Nothing but what /audio is made of while nobody asked.
    assert "properties" not in audio_nodes(c, sub)[k] and "properties" not in audio_nodes(c, sub)[ka]

    c1 = env.client()
    assert c1.call("audio.watchProperties", {"node": k, "enabled": True}) == {"node": k, "enabled": True}
    # The answer comes once they are in the tree.
    props = c1.call("tree.get", {"path": path})["value"]
    assert props == pw_cli_props(pw, pw.node_id("qsd_watched"))
    assert props["qsd.test.colour"] == "blue" and props["object.serial"] == k
    assert props["media.class"] == "Stream/Output/Audio" and props["application.name"] == "qsd-test-stream"
    c.wait_for(lambda: audio_nodes(c, sub)[k].get("properties") == props, what="properties in the mirror")
    assert not audio_errors(c, sub)

    # The application changes them: the tree follows, the node's own fields too.
    stream.set("qsd.test.colour", "green")
    c.wait_value(sub, path + "/qsd.test.colour", "green")
    stream.set("media.name", "Second title")
    c.wait_value(sub, path + "/media.name", "Second title")
    c.wait_value(sub, f"/audio/nodes/{k}/media/name", "Second title")
    assert audio_nodes(c, sub)[k]["properties"] == pw_cli_props(pw, pw.node_id("qsd_watched"))

    # Any node: the sink pw-cli made, with its factory's properties.
    c1.call("audio.watchProperties", {"node": int(ka), "enabled": True})
    c.wait_value(sub, f"/audio/nodes/{ka}/properties/factory.name", "support.null-audio-sink")

    # A second client shares the watch; the first one stopping leaves it, the last one ends it.
    c2 = env.client()
    c2.call("audio.watchProperties", {"node": k, "enabled": True})
    c2.call("audio.watchProperties", {"node": k, "enabled": True})   # twice: still one hold
    assert c1.call("audio.watchProperties", {"node": k, "enabled": False}) == {"node": k, "enabled": False}
    stream.set("qsd.test.colour", "red")
    c.wait_value(sub, path + "/qsd.test.colour", "red")
    c2.close()
    c.wait_for(lambda: "properties" not in audio_nodes(c, sub)[k], what="properties removed with the last client")
    assert "properties" in audio_nodes(c, sub)[ka]   # c1 still watches the sink
    # Unwatched, a change of a property /audio is not made of changes nothing.
    stream.set("qsd.test.colour", "yellow")
    stream.set("media.name", "Third title")
    c.wait_value(sub, f"/audio/nodes/{k}/media/name", "Third title")
    assert "properties" not in audio_nodes(c, sub)[k]

    # Watched again, they are read afresh; the node leaving ends the watch, and a watch of a
    # node that left is -32001.
    c3 = env.client()
    c3.call("audio.watchProperties", {"node": k, "enabled": True})
    assert c3.call("tree.get", {"path": path})["value"]["qsd.test.colour"] == "yellow"
    stream.proc.terminate()
    c.wait_for(lambda: k not in audio_nodes(c, sub), what="the stream gone")
    resp = c3.call_full("audio.watchProperties", {"node": k, "enabled": True})
    assert resp["error"]["code"] == -32001 and resp["error"]["data"] == {"param": "node", "node": k}
    assert c3.call("audio.watchProperties", {"node": k, "enabled": False}) == {"node": k, "enabled": False}
    # The sink's watch ends with c1's connection.
    c1.close()
    c.wait_for(lambda: "properties" not in audio_nodes(c, sub)[ka], what="the sink's properties removed")


def test_a_hostile_streams_properties_are_bounded(env):
    """An application sets as many properties as it likes, keys and values of any length: a
    watched node shows the first 256, no key over 255 bytes, each value cut at a character after
    1024 bytes, and the rest of qsd carries on."""
    pw = world(env)
    pw.add_null("qsd_sink_a")
    many = {"qsd.test.long-value": "a" + "é" * 2000, "qsd.test." + "k" * 300: "long key"}
    many.update({f"qsd.test.p{i:03d}": str(i) for i in range(300)})
    pw.stream("qsd_hostile", many)
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    k = node_key(c, sub, "qsd_hostile")
    held = pw_cli_props(pw, pw.node_id("qsd_hostile"))
    assert len(held) > 300   # PipeWire keeps them all
    c1 = env.client()
    c1.call("audio.watchProperties", {"node": k, "enabled": True})
    c.wait_for(lambda: "properties" in audio_nodes(c, sub)[k], what="the properties")
    props = audio_nodes(c, sub)[k]["properties"]
    assert len(props) == 256
    assert all(len(key.encode()) <= 255 for key in props)
    assert all(len(v.encode()) <= 1024 for v in props.values())
    for key, v in props.items():
        assert held[key].startswith(v)
    # byte 1024 is the middle of an "é", which must not be kept half.
    assert props["qsd.test.long-value"] == "a" + "é" * 511
    assert "qsd.test." + "k" * 300 not in props and "qsd.test.p000" in props
    assert not audio_errors(c, sub)
    # The rest of the node and of qsd are as before.
    assert audio_nodes(c, sub)[k]["name"] == "qsd_hostile"
    c.call("audio.setVolume", {"node": k, "volume": 0.5})
    assert pw.wpctl_volume(pw.node_id("qsd_hostile"))[0] == approx(0.5, 0.01)


def test_pulse_clients_show_up_too(env):
    # pipewire-pulse's pactl writes the same Props; its streams carry their process id themselves.
    pw = world(env, pulse=True)
    a = pw.add_null("qsd_sink_a")
    pw.run(["wpctl", "set-default", str(a)])
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka = node_key(c, sub, "qsd_sink_a")
    pw.run(["pactl", "set-sink-volume", "qsd_sink_a", "80%"])
    # 80 % is 52428/65536 in pulse's integer volume.
    c.wait_value(sub, f"/audio/nodes/{ka}/audio/volume", predicate=lambda v: v == approx(0.8))
    pw.run(["pactl", "set-sink-mute", "qsd_sink_a", "1"])
    c.wait_value(sub, f"/audio/nodes/{ka}/audio/muted", True)
    # And qsd's writes are what pactl reads.
    c.call("audio.setVolume", {"node": ka, "volume": 0.5})
    c.call("audio.setMuted", {"node": ka, "muted": False})
    info = json.loads(pw.run(["pactl", "-f", "json", "list", "sinks"]).stdout)
    sink = next(s for s in info if s["name"] == "qsd_sink_a")
    assert sink["mute"] is False
    assert all(v["value_percent"] == "50%" for v in sink["volume"].values())


def test_an_applications_long_properties_are_cut_at_a_character(env):
    """Any application that plays sound sets its own stream's properties, of any length; qsd keeps
    kMaxPropBytes (1024) of each, cut where a character starts, and the rest of the node as is."""
    pw = world(env)
    pw.add_null("qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    if not os.path.exists(pw.tone):
        write_tone(pw.tone)
    # 1 + 2 × 20 000 bytes: byte 1024 is the middle of an "é", which must not be kept half.
    long = "a" + "é" * 20000
    env.spawn(["pw-cat", "--playback", "-P",
               '{ node.name=long-props node.description="%s" application.name="%s" }' % (long, long), pw.tone],
              "pw-cat-long-props", env=pw.penv)
    k = node_key(c, sub, "long-props")
    node = audio_nodes(c, sub)[k]
    kept = "a" + "é" * 511
    assert len(kept.encode()) == 1023
    assert node["description"] == kept and node["application"]["name"] == kept
    assert node["name"] == "long-props" and node["application"]["binary"] == "pw-cat"


def test_a_sink_named_as_the_default_source_is_no_source(env):
    # Without any source, WirePlumber names a sink as the default source (recording from the
    # default then records its monitor). qsd showed that sink as /audio/source, and a
    # microphone widget showed the speakers' volume, and its mute button muted the speakers.
    pw, c, sub, (ka, kb) = sinks_world(env, "qsd_only_sink", "qsd_other_sink")
    wait_until(lambda: (pw.metadata("default.audio.source") or {}).get("name") in ("qsd_only_sink", "qsd_other_sink"),
               30, what="WirePlumber naming a sink as the default source")
    # A later write to the same metadata object: once qsd shows it, it has read the one before.
    pw.run(["pw-metadata", "-n", "default", "0", "default.configured.audio.sink", '{ "name": "qsd_other_sink" }',
            "Spa:String:JSON"])
    c.wait_value(sub, "/audio/preferredDefaultAudioSink", kb)
    audio = c.mirror(sub)["audio"]
    assert audio["defaultAudioSource"] is None and audio["source"] is None
    assert audio["defaultAudioSink"] in (ka, kb)

