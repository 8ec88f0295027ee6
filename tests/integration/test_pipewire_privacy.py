"""isMonitor and /audio/privacy against real recorders, level meters and video consumers: pw-record
on a source is the microphone in use, qsd's own level meter on the same source and a capture of a
sink's monitor are monitors, not recordings; GStreamer's pipewiresrc (what OBS, Cheese and
browsers' WebRTC stacks build on) on a Video/Source node is the camera when the node is a v4l2
device and a screencast when it is no device, like a portal's stream. Video sources are
videotestsrc nodes made with pw-cli: there is no camera on this machine."""

import jsonschema
import pytest

from pwtest import PipeWire, audio_nodes, exits_cleanly, node_key, require
from qsdtest import pointer_get, wait_until


@pytest.fixture(autouse=True)
def _qsd_exits_cleanly(env):
    yield
    exits_cleanly(env)


def watch(env):
    c = env.client()
    sub = c.subscribe(["/audio"])
    c.wait_value(sub, "/audio/available", True, timeout=30)
    return c, sub


def privacy(c, sub, kind):
    return pointer_get(c.mirror(sub), f"/audio/privacy/{kind}")


def users(c, sub, kind):
    return [u["node"] for u in privacy(c, sub, kind)]


def linked(c, sub, output, input_):
    return any(l["output"] == output and l["input"] == input_ and l["state"] != "error"
               for l in c.mirror(sub)["audio"]["links"].values())


def valid(c, sub):
    doc = c.call("rpc.discover")
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    return [e.message for e in jsonschema.Draft7Validator({"$ref": "#/components/schemas/Audio"}, resolver=resolver)
            .iter_errors(c.mirror(sub)["audio"])]


def video_source(pw, name, description, device_api=None):
    """A Video/Source node of the videotestsrc SPA plugin, made in the PipeWire daemon with pw-cli."""
    api = f" device.api={device_api}" if device_api else ""
    pw.run(["pw-cli", "create-node", "spa-node-factory",
            "{ factory.name=videotestsrc library.name=videotestsrc/libspa-videotestsrc node.name=%s "
            "node.description=\"%s\" media.class=Video/Source media.type=Video object.linger=true%s }"
            % (name, description, api)])
    return pw.node_id(name)


def view(env, pw, target, name):
    """GStreamer's pipewiresrc showing `target`; WirePlumber links it (a video/x-raw caps filter
    makes it a Stream/Input/Video node WirePlumber can link)."""
    return env.spawn(["gst-launch-1.0", "-q", "pipewiresrc", f"target-object={target}", f"client-name={name}",
                      "!", "video/x-raw", "!", "fakesink"], f"gst-{name}", env=pw.penv)


def test_recorders_are_the_microphone_and_monitors_are_not(env):
    pw = PipeWire(env)
    a = pw.add_null("qsd_sink_a")
    # Virtual sources: a null node of class Audio/Source stalls WirePlumber 0.4.13's linking.
    pw.add_null("qsd_mic", media_class="Audio/Source/Virtual", positions="MONO", description="Test Mic")
    pw.run(["wpctl", "set-default", str(a)])
    pw.play("test-player", target="qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = watch(env)
    ka, km, kp = (node_key(c, sub, n) for n in ("qsd_sink_a", "qsd_mic", "test-player"))
    assert c.mirror(sub)["audio"]["privacy"] == {"microphone": [], "camera": [], "screencast": []}
    assert all(n["isMonitor"] is False for n in audio_nodes(c, sub).values())
    # pw-record on the microphone: listed with its application.
    recorder = env.spawn(["pw-record", "--target", "qsd_mic", "-P", "{ node.name=test-recorder }", "/dev/null"],
                         "pw-record", env=pw.penv)
    kr = node_key(c, sub, "test-recorder")
    c.wait_value(sub, "/audio/privacy/microphone", predicate=lambda v: [u["node"] for u in v or []] == [kr])
    use = privacy(c, sub, "microphone")[0]
    assert use["application"]["name"] == "pw-record" and use["application"]["processId"] == recorder.pid
    assert audio_nodes(c, sub)[kr]["isMonitor"] is False
    assert audio_nodes(c, sub)[kr]["capturedFrom"] == [km]
    # qsd's own level meter on the same source: a monitor, not a recording.
    meter = env.client()
    meter.call("audio.monitorPeaks", {"node": km, "enabled": True})
    c.wait_for(lambda: any(n["name"] == "qsd.peaks" for n in audio_nodes(c, sub).values()), what="the level meter")
    kq = next(k for k, n in audio_nodes(c, sub).items() if n["name"] == "qsd.peaks")
    c.wait_for(lambda: linked(c, sub, km, kq), what="the level meter linked to the microphone")
    assert audio_nodes(c, sub)[kq]["isMonitor"] is True and audio_nodes(c, sub)[kq]["type"] == "audioInStream"
    assert users(c, sub, "microphone") == [kr]
    # Recordings of a sink's monitor are monitors, not the microphone: one that asks for it
    # (stream.capture.sink, as pipewire-pulse sets it for "<sink>.monitor")...
    env.spawn(["pw-record", "--target", "qsd_sink_a", "-P", "{ node.name=sink-recorder stream.capture.sink=true }",
               "/dev/null"], "pw-record-sink", env=pw.penv)
    ks = node_key(c, sub, "sink-recorder")
    c.wait_for(lambda: linked(c, sub, ka, ks), what="the sink's monitor recorded")
    assert audio_nodes(c, sub)[ks]["isMonitor"] is True
    # ... and one linked to a sink's monitor ports by someone else (pw-link), which only its link tells.
    env.spawn(["pw-record", "--channels", "1", "-P", "{ node.name=linked-recorder node.autoconnect=false }",
               "/dev/null"], "pw-record-linked", env=pw.penv)
    kl = node_key(c, sub, "linked-recorder")
    assert audio_nodes(c, sub)[kl]["isMonitor"] is False
    # (Its ports come right after the node: pw-link fails until they are there.)
    wait_until(lambda: pw.run(["pw-link", "qsd_sink_a:monitor_FL", "linked-recorder:input_MONO"],
                              check=False).returncode == 0, 10, what="pw-link to the recorder's port")
    c.wait_value(sub, f"/audio/nodes/{kl}/isMonitor", True)
    assert users(c, sub, "microphone") == [kr]
    assert audio_nodes(c, sub)[kp]["isMonitor"] is False and audio_nodes(c, sub)[ka]["isMonitor"] is False
    assert not valid(c, sub)
    # The recorder stops: the microphone is free, the meter still runs.
    recorder.kill()
    c.wait_value(sub, "/audio/privacy/microphone", [])
    assert kq in audio_nodes(c, sub)


def test_camera_and_screencast_consumers(env):
    require("gst-launch-1.0")
    pw = PipeWire(env)
    video_source(pw, "qsd_cam", "Test Camera", device_api="v4l2")
    video_source(pw, "qsd_screen", "Test Screen")
    env.start_qsd(backends=["pipewire"])
    c, sub = watch(env)
    kc, ks = node_key(c, sub, "qsd_cam"), node_key(c, sub, "qsd_screen")
    nodes = audio_nodes(c, sub)
    assert nodes[kc]["type"] == "videoSource" and nodes[kc]["isMonitor"] is False
    assert nodes[ks]["type"] == "videoSource" and nodes[ks]["isMonitor"] is False
    # Nothing consumes them yet.
    assert c.mirror(sub)["audio"]["privacy"] == {"microphone": [], "camera": [], "screencast": []}
    cam = view(env, pw, "qsd_cam", "qsd-cam-viewer")
    kv = node_key(c, sub, "qsd-cam-viewer")
    c.wait_value(sub, "/audio/privacy/camera", predicate=lambda v: [u["node"] for u in v or []] == [kv])
    use = privacy(c, sub, "camera")[0]
    assert use["application"]["name"] == "gst-launch-1.0" and use["application"]["processId"] == cam.pid
    assert privacy(c, sub, "screencast") == [] and privacy(c, sub, "microphone") == []
    # A video source that is no device: a screencast.
    view(env, pw, "qsd_screen", "qsd-screen-viewer")
    kw = node_key(c, sub, "qsd-screen-viewer")
    c.wait_value(sub, "/audio/privacy/screencast", predicate=lambda v: [u["node"] for u in v or []] == [kw])
    assert users(c, sub, "camera") == [kv]
    assert not valid(c, sub)
    # The camera's viewer leaves.
    cam.kill()
    c.wait_value(sub, "/audio/privacy/camera", [])
    assert users(c, sub, "screencast") == [kw]
