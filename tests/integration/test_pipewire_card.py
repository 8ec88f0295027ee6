"""/audio/devices and route-backed volume against a sound card exported to a real PipeWire by
tests/integration/pw_test_device.c, the way WirePlumber exports ALSA cards (this machine has no
sound hardware): profiles, ports, a profile change made by qsd and one made by pw-cli, and the
volume of a card's node written through the card's Route param, as wpctl writes it, on a route
that reports no volumeStep (Quickshell's issues #807/#857: such writes were dropped)."""

import pytest

from pwtest import PipeWire, audio_nodes, exits_cleanly, node_key
from qsdtest import pointer_get, wait_until

SPEAKER = "qsd_test_card.speaker"
MIC = "qsd_test_card.mic"


@pytest.fixture(autouse=True)
def _qsd_exits_cleanly(env):
    yield
    exits_cleanly(env)


def start_card(env):
    pw = PipeWire(env)
    pw.card()
    env.start_qsd(backends=["pipewire"])
    c = env.client()
    sub = c.subscribe(["/audio"])
    c.wait_value(sub, "/audio/available", True, timeout=30)
    c.wait_for(lambda: c.mirror(sub)["audio"].get("devices"), what="the card in /audio/devices")
    dev = next(iter(c.mirror(sub)["audio"]["devices"]))
    return pw, c, sub, dev


def card_device(pw):
    return next(o for o in pw.dump() if o["type"] == "PipeWire:Interface:Device"
                and o["info"]["props"].get("device.name") == "qsd_test_card")


def test_card_profiles_ports_and_nodes(env):
    pw, c, sub, dev = start_card(env)
    d = c.mirror(sub)["audio"]["devices"][dev]
    o = card_device(pw)
    assert d["id"] == o["id"] and str(o["info"]["props"]["object.serial"]) == dev
    assert d["name"] == "qsd_test_card" and d["description"] == "Test Card qsd_test_card" and d["api"] == "qsd-test"
    assert [p["name"] for p in d["profiles"]] == ["off", "output:analog-stereo", "output:analog-stereo+input:analog-mono"]
    assert d["profiles"][1] == {"index": 1, "name": "output:analog-stereo", "description": "Analog Stereo Output",
                                "available": "yes"}
    # WirePlumber picks the best profile (duplex) and the best port of each card device.
    c.wait_value(sub, f"/audio/devices/{dev}/profile", "output:analog-stereo+input:analog-mono")
    c.wait_value(sub, f"/audio/devices/{dev}/routes/output/name", "analog-output-speaker")
    d = c.mirror(sub)["audio"]["devices"][dev]
    assert d["profileIndex"] == 2
    assert d["routes"]["input"] == {"index": 2, "name": "analog-input-mic", "description": "Microphone",
                                    "direction": "input", "available": "yes"}
    assert [p["name"] for p in d["ports"]] == ["analog-output-speaker", "analog-output-headphones", "analog-input-mic"]
    ks, km = node_key(c, sub, SPEAKER), node_key(c, sub, MIC)
    assert audio_nodes(c, sub)[ks]["device"] == dev and audio_nodes(c, sub)[km]["device"] == dev


def test_card_node_volume_goes_through_the_route_without_a_volume_step(env):
    pw, c, sub, dev = start_card(env)
    ks = node_key(c, sub, SPEAKER)
    spk = pw.node_id(SPEAKER)
    c.wait_value(sub, f"/audio/devices/{dev}/routes/output/name", "analog-output-speaker")
    # The route reports no volumeStep.
    route = next(r for r in card_device(pw)["info"]["params"]["Route"] if r["device"] == 0)
    assert "volumeStep" not in route["props"]
    # The tree reads the route's volume, as wpctl does.
    c.wait_for(lambda: audio_nodes(c, sub)[ks]["audio"]["volume"] == pw.wpctl_volume(spk)[0], what="route volume")
    r = c.call("audio.setVolume", {"node": ks, "volume": 0.7})
    assert r["audio"]["volumes"] == [0.7, 0.7]
    assert pw.wpctl_volume(spk) == (0.7, False)
    # Written through the card's Route (with save, as wpctl does), not the node's Props.
    assert "route 0 on device 0: mute 0 volumes 0.343000 0.343000 save 1" in pw.card_log()
    route = next(r for r in card_device(pw)["info"]["params"]["Route"] if r["device"] == 0)
    assert route["props"]["channelVolumes"] == [0.343, 0.343]
    node_props = pw.node_by_name(SPEAKER)["info"]["params"]["Props"][0]
    assert node_props["channelVolumes"] == [1.0, 1.0]
    r = c.call("audio.setMuted", {"node": ks, "muted": True})
    assert r["audio"]["muted"] is True and pw.wpctl_volume(spk) == (0.7, True)
    c.call("audio.setVolumes", {"node": ks, "volumes": [0.6, 0.3]})
    route = next(r for r in card_device(pw)["info"]["params"]["Route"] if r["device"] == 0)
    assert route["props"]["channelVolumes"] == [0.216, 0.027]
    # wpctl on the card's node shows up in the tree with wpctl's value.
    pw.run(["wpctl", "set-volume", str(spk), "0.33"])
    c.wait_value(sub, f"/audio/nodes/{ks}/audio/volumes", [0.33, 0.33])
    pw.run(["wpctl", "set-mute", str(spk), "0"])
    c.wait_value(sub, f"/audio/nodes/{ks}/audio/muted", False)


def test_card_port_and_profile_changes(env):
    pw, c, sub, dev = start_card(env)
    ks, km = node_key(c, sub, SPEAKER), node_key(c, sub, MIC)
    c.wait_value(sub, f"/audio/devices/{dev}/routes/output/name", "analog-output-speaker")
    r = c.call("audio.setRoute", {"device": dev, "route": 1})
    assert r == {"device": dev, "route": 1, "name": "analog-output-headphones"}
    assert pointer_get(c.mirror(sub), f"/audio/devices/{dev}/routes/output/description") == "Headphones"
    assert next(r for r in card_device(pw)["info"]["params"]["Route"] if r["device"] == 0)["index"] == 1
    # qsd switches the profile: the microphone's card device goes, with its node and port.
    r = c.call("audio.setDeviceProfile", {"device": dev, "profile": "output:analog-stereo"})
    assert r == {"device": dev, "profile": "output:analog-stereo", "profileIndex": 1}
    assert pointer_get(c.mirror(sub), f"/audio/devices/{dev}/profile") == "output:analog-stereo"
    assert card_device(pw)["info"]["params"]["Profile"][0]["index"] == 1
    c.wait_for(lambda: km not in audio_nodes(c, sub), what="the microphone node gone")
    c.wait_value(sub, f"/audio/devices/{dev}/routes/input", None)
    assert [p["name"] for p in c.mirror(sub)["audio"]["devices"][dev]["ports"]] == \
        ["analog-output-speaker", "analog-output-headphones"]
    # A port outside the active profile, a profile the card lacks: refused, nothing sent.
    log = pw.card_log()
    resp = c.call_full("audio.setRoute", {"device": dev, "route": 2})
    assert resp["error"]["code"] == -32602 and resp["error"]["data"]["param"] == "route"
    resp = c.call_full("audio.setDeviceProfile", {"device": dev, "profile": 7})
    assert resp["error"]["code"] == -32602 and resp["error"]["data"]["param"] == "profile"
    # A node's key names no device.
    resp = c.call_full("audio.setDeviceProfile", {"device": ks, "profile": 1})
    assert resp["error"]["code"] == -32001 and resp["error"]["data"]["param"] == "device"
    assert pw.card_log() == log
    # Someone else (pw-cli) switches it back: the tree follows, the microphone returns.
    pw.run(["pw-cli", "set-param", str(card_device(pw)["id"]), "Profile", "{ index: 2, save: true }"])
    c.wait_value(sub, f"/audio/devices/{dev}/profile", "output:analog-stereo+input:analog-mono")
    km2 = node_key(c, sub, MIC)
    assert audio_nodes(c, sub)[km2]["device"] == dev
    c.wait_value(sub, f"/audio/devices/{dev}/routes/input/name", "analog-input-mic")
    # The card going away takes its device entry and nodes with it.
    for kind, p in env.procs:
        if kind == "popen" and "pw-test-device" in " ".join(p.args):
            p.terminate()
            p.wait(10)
    c.wait_for(lambda: dev not in c.mirror(sub)["audio"]["devices"], what="the card gone")
    c.wait_for(lambda: ks not in audio_nodes(c, sub) and km2 not in audio_nodes(c, sub), what="its nodes gone")
    wait_until(lambda: c.call("tree.get", {"path": "/audio/available"})["value"] is True, 5)
