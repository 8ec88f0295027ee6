"""The wayland backend against a real headless sway 1.7 (outputs from `swaymsg create_output`,
changed with `swaymsg output ...`; toplevels from foot), every action checked with swaymsg's
view of the compositor; sway stopped, killed and started again. Assertions go through qsd's
socket (a subscription's mirror, or a call)."""

import os
import shutil
import signal

import jsonschema  # python3-jsonschema (scripts/install-deps)
import pytest

from qsdtest import RpcError, pointer_get, wait_until
from waylandenv import Sway, Weston, qsd_env, skip_reason

REASON = skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture
def sway(env):
    return Sway(env).start()


def start(env, sway, *backends):
    env.start_qsd(backends=list(backends or ["wayland"]), env=qsd_env(env, sway))
    c = env.client()
    sub = c.subscribe(["/wayland", "/daemon/backends/wayland"])
    c.wait_value(sub, "/wayland/available", True, timeout=20)
    return c, sub


def wl(c, sub, path=""):
    return pointer_get(c.mirror(sub), "/wayland" + path, None)


def wait_wl(c, sub, path, predicate, what=None, timeout=20):
    c.wait_for(lambda: predicate(wl(c, sub, path)), timeout, what=what or path)
    return wl(c, sub, path)


def check_schema(c, sub):
    """The /wayland subtree as it is now, against the schema rpc.discover serves."""
    doc = c.call("rpc.discover")
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    v = jsonschema.Draft7Validator({"$ref": "#/components/schemas/Wayland"}, resolver=resolver)
    errors = [f"{list(e.path)}: {e.message}" for e in v.iter_errors(wl(c, sub))]
    assert not errors, errors


def error_of(c, method, params):
    with pytest.raises(RpcError) as e:
        c.call(method, params)
    return e.value


def test_outputs_follow_the_compositor(env, sway):
    c, sub = start(env, sway)
    state = pointer_get(c.mirror(sub), "/daemon/backends/wayland")
    assert state["state"] == "running" and state["error"] is None

    comp = wl(c, sub, "/compositor")
    assert comp["name"] == "sway"   # the socket's peer process: no XDG_CURRENT_DESKTOP here
    assert comp["socket"] == sway.socket
    assert comp["pid"] == sway.proc.pid
    offered = {g["interface"]: g["version"] for g in comp["globals"]}
    assert offered["zwlr_foreign_toplevel_manager_v1"] == 3
    assert offered["zwlr_output_manager_v1"] == 2
    assert offered["zxdg_output_manager_v1"] == 3
    assert offered["wl_output"] == 4
    # sway 1.7 has no ext-foreign-toplevel-list: the one protocol qsd could use that is missing.
    assert comp["missing"] == ["ext_foreign_toplevel_list_v1"]
    assert wl(c, sub, "/toplevels") == {}

    out = wl(c, sub, "/outputs/HEADLESS-1")
    assert out == {
        "name": "HEADLESS-1", "description": "Headless output 1", "make": "headless", "model": "headless",
        "serial": None, "physicalSize": {"width": 0, "height": 0},
        "mode": {"width": 1920, "height": 1080, "refresh": 60}, "modes": [],
        "scale": 1, "transform": "normal", "position": {"x": 0, "y": 0},
        "logicalSize": {"width": 1920, "height": 1080}, "enabled": True,
    }

    # A new output appears complete: its first appearance already has the xdg-output part.
    seen = len(c.notifications)
    sway.msg("create_output")
    out2 = wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v is not None)
    adds = [ch for n in c.notifications[seen:] if n["method"] == "tree.changed" for ch in n["params"]["changes"]
            if ch["path"] == "/wayland/outputs/HEADLESS-2"]
    assert adds[0]["op"] == "add"
    assert adds[0]["value"]["logicalSize"] is not None and adds[0]["value"]["position"] is not None
    real = sway.output("HEADLESS-2")
    assert out2["position"] == {"x": real["rect"]["x"], "y": real["rect"]["y"]}
    assert out2["mode"]["width"] == real["current_mode"]["width"]

    sway.msg("output", "HEADLESS-2", "scale", "2")
    out2 = wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v["scale"] == 2)
    assert sway.output("HEADLESS-2")["scale"] == 2
    assert out2["logicalSize"] == {"width": out2["mode"]["width"] // 2, "height": out2["mode"]["height"] // 2}

    # A fractional scale: wl_output says 2 (its integer buffer scale); the logical size says 1.5.
    sway.msg("output", "HEADLESS-2", "scale", "1.5")
    out2 = wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v["scale"] == 1.5)
    assert out2["logicalSize"] == {"width": 1280, "height": 720}

    sway.msg("output", "HEADLESS-2", "resolution", "1280x720", "scale", "1")
    out2 = wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v["mode"]["width"] == 1280 and v["scale"] == 1)
    assert out2["mode"] == {"width": 1280, "height": 720, "refresh": sway.output("HEADLESS-2")["current_mode"]["refresh"] / 1000}
    assert out2["logicalSize"] == {"width": 1280, "height": 720}

    # sway's "transform 90" turns the output clockwise, which wl_output calls 270.
    sway.msg("output", "HEADLESS-2", "transform", "90")
    out2 = wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v["transform"] == "rotated270")
    assert out2["logicalSize"] == {"width": 720, "height": 1280}
    sway.msg("output", "HEADLESS-2", "transform", "normal", "position", "3000", "100")
    out2 = wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v["position"] == {"x": 3000, "y": 100})
    assert out2["transform"] == "normal"
    assert sway.output("HEADLESS-2")["rect"]["x"] == 3000
    # The other output did not move.
    assert wl(c, sub, "/outputs/HEADLESS-1/position") == {"x": 0, "y": 0}
    check_schema(c, sub)
    c.close()


def test_toplevels_and_their_actions(env, sway):
    c, sub = start(env, sway)
    sway.foot("test.a", "Window A")
    sway.foot("test.b", "Window B")
    tops = wait_wl(c, sub, "/toplevels", lambda v: v and len(v) == 2)
    check_schema(c, sub)
    keys = {t["appId"]: k for k, t in tops.items()}
    a, b = keys["test.a"], keys["test.b"]
    assert tops[a]["title"] == "Window A" and tops[a]["parent"] is None
    # sway tells a window's output when the window first shows on it, which may be after the
    # window appeared.
    wait_wl(c, sub, f"/toplevels/{a}/outputs", lambda v: v == ["HEADLESS-1"])
    # Activation follows sway's focus: B was mapped last.
    wait_wl(c, sub, "/toplevels", lambda v: v[b]["activated"] and not v[a]["activated"])
    assert sway.window("test.b")["focused"]

    assert c.call("wayland.activate", {"toplevel": a}) == {"toplevel": a}
    wait_until(lambda: sway.window("test.a")["focused"], 20, what="sway to focus A")
    wait_wl(c, sub, "/toplevels", lambda v: v[a]["activated"] and not v[b]["activated"])

    c.call("wayland.setFullscreen", {"toplevel": a, "fullscreen": True})
    wait_until(lambda: sway.window("test.a")["fullscreen_mode"] == 1, 20, what="sway to make A fullscreen")
    wait_wl(c, sub, f"/toplevels/{a}/fullscreen", lambda v: v is True)
    c.call("wayland.setFullscreen", {"toplevel": a, "fullscreen": False})
    wait_until(lambda: sway.window("test.a")["fullscreen_mode"] == 0, 20, what="sway to end A's fullscreen")
    wait_wl(c, sub, f"/toplevels/{a}/fullscreen", lambda v: v is False)

    # Fullscreen on a given output moves the window there.
    sway.msg("create_output")
    wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v is not None)
    c.call("wayland.setFullscreen", {"toplevel": b, "fullscreen": True, "output": "HEADLESS-2"})
    wait_until(lambda: sway.window("test.b")["output"] == "HEADLESS-2", 20, what="sway to move B")
    assert sway.window("test.b")["fullscreen_mode"] == 1
    wait_wl(c, sub, f"/toplevels/{b}", lambda v: v["outputs"] == ["HEADLESS-2"] and v["fullscreen"])

    # sway 1.7 has no handler for maximize and minimize requests: accepted, and nothing changes.
    assert c.call("wayland.setMaximized", {"toplevel": a, "maximized": True}) == {"toplevel": a}
    assert c.call("wayland.setMinimized", {"toplevel": a, "minimized": True}) == {"toplevel": a}
    c.call("wayland.setMinimized", {"toplevel": a, "minimized": False})
    c.call("wayland.setMaximized", {"toplevel": a, "maximized": False})
    assert wl(c, sub, f"/toplevels/{a}/maximized") is False

    # Bad input: an unknown key, an unknown output, a wrong type.
    e = error_of(c, "wayland.close", {"toplevel": "no-such"})
    assert e.code == -32001 and e.data == {"param": "toplevel", "toplevel": "no-such"}
    e = error_of(c, "wayland.setFullscreen", {"toplevel": a, "fullscreen": True, "output": "HDMI-A-9"})
    assert e.code == -32001 and e.data["param"] == "output"
    e = error_of(c, "wayland.setMaximized", {"toplevel": a})
    assert e.code == -32602 and e.data["param"] == "maximized"
    e = error_of(c, "wayland.activate", {"toplevel": [a]})
    assert e.code == -32602 and e.data["param"] == "toplevel"
    # A numeric key may be given as a number (qsctl call wayland.close toplevel=3).
    if a.isdigit():
        assert c.call("wayland.activate", {"toplevel": int(a)}) == {"toplevel": a}

    c.call("wayland.close", {"toplevel": a})
    wait_until(lambda: sway.window("test.a") is None, 20, what="sway to close A")
    wait_wl(c, sub, "/toplevels", lambda v: a not in v and b in v)
    # The key of a closed window is not given again.
    sway.foot("test.c", "Window C")
    tops = wait_wl(c, sub, "/toplevels", lambda v: len(v) == 2)
    assert a not in tops
    c.close()


def test_scales_whose_logical_size_is_rounded(env, sway):
    # 1280 / 1.5 = 853.33: the logical size is rounded, so mode ÷ logical size is 1.5006.
    # sway's headless heads send no scale, so the backend derives it: the scale sway reports.
    c, sub = start(env, sway)
    sway.msg("create_output")
    wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v is not None)
    for resolution, scale in [("1280x720", "1.5"), ("1366x768", "1.25"), ("1920x1080", "1.75"), ("1280x720", "1")]:
        sway.msg("output", "HEADLESS-2", "resolution", resolution, "scale", scale)
        width = int(resolution.split("x")[0])
        out = wait_wl(c, sub, "/outputs/HEADLESS-2",
                      lambda v: v["mode"]["width"] == width and v["logicalSize"] == {
                          "width": sway.output("HEADLESS-2")["rect"]["width"],
                          "height": sway.output("HEADLESS-2")["rect"]["height"]},
                      what=f"{resolution} at {scale}")
        assert out["scale"] == sway.output("HEADLESS-2")["scale"] == float(scale), (resolution, out)
    c.close()


def test_configure_output(env, sway):
    c, sub = start(env, sway)
    sway.msg("create_output")
    wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v is not None)

    assert c.call("wayland.configureOutput", {"output": "HEADLESS-2", "scale": 1.25}) == {"output": "HEADLESS-2"}
    assert sway.output("HEADLESS-2")["scale"] == 1.25
    wait_wl(c, sub, "/outputs/HEADLESS-2/scale", lambda v: v == 1.25)

    # Several properties in one configuration.
    c.call("wayland.configureOutput", {"output": "HEADLESS-2", "mode": {"width": 1280, "height": 720},
                                       "transform": "rotated90", "position": {"x": 2500, "y": 40}, "scale": 1})
    real = sway.output("HEADLESS-2")
    assert real["current_mode"]["width"] == 1280 and real["current_mode"]["height"] == 720
    assert real["rect"]["x"] == 2500 and real["rect"]["y"] == 40
    assert real["transform"] == "270"   # sway's IPC counts clockwise
    out = wait_wl(c, sub, "/outputs/HEADLESS-2", lambda v: v["transform"] == "rotated90" and v["position"]["x"] == 2500)
    assert out["mode"]["width"] == 1280 and out["logicalSize"] == {"width": 720, "height": 1280}
    # The other output kept its configuration.
    assert sway.output("HEADLESS-1")["rect"] == {"x": 0, "y": 0, "width": 1920, "height": 1080}

    # The compositor's refusal: sway 1.7 cannot turn a headless output off.
    e = error_of(c, "wayland.configureOutput", {"output": "HEADLESS-2", "enabled": False})
    assert e.code == -32002 and e.data == {"backend": "wayland", "name": "wayland.Failed", "output": "HEADLESS-2",
                                           "reason": "failed", "message": "The compositor refused the output configuration"}
    assert sway.output("HEADLESS-2")["active"]

    e = error_of(c, "wayland.configureOutput", {"output": "DP-7", "scale": 2})
    assert e.code == -32001 and e.data == {"param": "output", "output": "DP-7"}
    e = error_of(c, "wayland.configureOutput", {"output": "HEADLESS-2", "transform": "upsideDown"})
    assert e.code == -32602 and e.data["param"] == "transform" and "rotated180" in e.data["supported"]
    e = error_of(c, "wayland.configureOutput", {"output": "HEADLESS-2", "scale": 0})
    assert e.code == -32602 and e.data["param"] == "scale"
    e = error_of(c, "wayland.configureOutput", {"output": "HEADLESS-2", "mode": {"width": 1280}})
    assert e.code == -32602 and e.data["param"] == "mode.height"
    e = error_of(c, "wayland.configureOutput", {"output": "HEADLESS-2", "enabled": False, "scale": 2})
    assert e.code == -32602 and e.data["param"] == "enabled"
    c.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["exit", "crash"])
def test_compositor_gone_and_back(env, sway, sig):
    c, sub = start(env, sway)
    sway.foot("test.a", "Window A")
    wait_wl(c, sub, "/toplevels", lambda v: v and len(v) == 1)
    socket = sway.socket

    sway.stop(sig)
    c.wait_value(sub, "/wayland", {"available": False}, timeout=20)
    state = c.wait_value(sub, "/daemon/backends/wayland", predicate=lambda v: v["state"] == "unavailable")
    assert "went away" in state["error"] or "no compositor" in state["error"]
    # Actions answer "unavailable" meanwhile.
    e = error_of(c, "wayland.activate", {"toplevel": "1"})
    assert e.code == -32000

    # A killed sway leaves its socket behind; the next one replaces it at the same path.
    assert os.path.exists(socket) == (sig == signal.SIGKILL)
    sway.start()
    assert sway.socket == socket
    c.wait_value(sub, "/wayland/available", True, timeout=30)
    out = wait_wl(c, sub, "/outputs/HEADLESS-1", lambda v: v is not None)
    assert out["mode"]["width"] == 1920
    assert wl(c, sub, "/compositor/pid") == sway.proc.pid
    assert wl(c, sub, "/toplevels") == {}
    sway.foot("test.b", "Window B")
    tops = wait_wl(c, sub, "/toplevels", lambda v: v and len(v) == 1)
    assert list(tops.values())[0]["appId"] == "test.b"
    c.close()


def test_compositor_started_after_qsd(env):
    """WAYLAND_DISPLAY names a socket nobody listens on yet: qsd waits on inotify."""
    sway = Sway(env)
    e = dict(env.env)
    e["WAYLAND_DISPLAY"] = os.path.join(sway.dir, "wayland-1")
    env.start_qsd(backends=["wayland"], env=e)
    c = env.client()
    sub = c.subscribe(["/wayland", "/daemon/backends/wayland"])
    state = c.wait_value(sub, "/daemon/backends/wayland", predicate=lambda v: v and v["state"] == "unavailable")
    assert "no compositor at" in state["error"]
    assert wl(c, sub) == {"available": False}
    sway.start()
    assert sway.socket == e["WAYLAND_DISPLAY"]
    c.wait_value(sub, "/wayland/available", True, timeout=30)
    assert wl(c, sub, "/outputs/HEADLESS-1/name") == "HEADLESS-1"
    c.close()


@pytest.mark.skipif(shutil.which("weston") is None, reason="weston is not installed (scripts/install-deps installs it)")
def test_a_compositor_without_the_wlr_protocols(env):
    """weston 10 offers wl_output and xdg-output but neither wlr protocol: outputs without
    modes, no toplevels, and the actions say what is missing."""
    weston = Weston(env).start()
    e = dict(env.env)
    e["WAYLAND_DISPLAY"] = weston.socket
    e["XDG_CURRENT_DESKTOP"] = "weston:test"
    env.start_qsd(backends=["wayland"], env=e)
    c = env.client()
    sub = c.subscribe(["/wayland"])
    c.wait_value(sub, "/wayland/available", True, timeout=20)
    comp = wl(c, sub, "/compositor")
    assert comp["name"] == "weston"
    assert {"zwlr_foreign_toplevel_manager_v1", "zwlr_output_manager_v1"} <= set(comp["missing"])
    assert "toplevels" not in wl(c, sub)
    outputs = wl(c, sub, "/outputs")
    assert len(outputs) == 1
    out = list(outputs.values())[0]
    assert "modes" not in out and out["serial"] is None and out["enabled"] is True
    assert out["mode"]["width"] == 1280 and out["logicalSize"] == {"width": 1280, "height": 720}
    e = error_of(c, "wayland.activate", {"toplevel": "1"})
    assert e.code == -32000 and e.data["missing"] == "zwlr_foreign_toplevel_manager_v1"
    # What every refused action says (protocol.md), besides what is missing.
    assert e.data["backend"] == "wayland" and e.data["path"] == "/wayland/toplevels" and "toplevel" in e.data["reason"]
    e = error_of(c, "wayland.configureOutput", {"output": out["name"], "scale": 2})
    assert e.code == -32000 and e.data["missing"] == "zwlr_output_manager_v1"
    assert e.data["backend"] == "wayland" and e.data["path"] == "/wayland/outputs" and "output" in e.data["reason"]
    check_schema(c, sub)
    c.close()
