"""1000 `wpctl set-volume` in a row on one sink: the tree ends at the last value, and a subscriber
of the sink's audio gets no more tree.changed than there were changes (PipeWire's Props events
coalesce, never multiply). 200 streams that come and go while qsd binds them: the log stays
quiet."""

import os
import subprocess

import pytest

from pwtest import PipeWire, audio_nodes, exits_cleanly, node_key, write_tone


@pytest.fixture(autouse=True)
def _qsd_exits_cleanly(env):
    yield
    exits_cleanly(env)


def test_a_thousand_wpctl_volume_changes(env):
    pw = PipeWire(env)
    a = pw.add_null("qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c = env.client()
    sub = c.subscribe(["/audio"])
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka = node_key(c, sub, "qsd_sink_a")
    c.close()
    c = env.client()
    path = f"/audio/nodes/{ka}/audio"
    sub = c.subscribe([path])
    # 1000 distinct values, none equal to the start (1.0); one shell runs them all. Each wpctl is
    # a PipeWire client of its own (most of the test's time): the sanitizer build, which checks
    # qsd's paths and not the flood's figures, takes 300.
    values = [f"{0.001 * (i + 1):.3f}" for i in range(300 if env.sanitized() else 1000)]
    script = os.path.join(env.dir, "flood.sh")
    with open(script, "w") as f:
        f.write("set -e\n")
        for v in values:
            f.write(f"wpctl set-volume {a} {v}\n")
    pw.run(["sh", script], timeout=600)
    last = float(values[-1])
    c.wait_value(sub, path + "/volume", last, timeout=60)
    # A sentinel change of the same node through PipeWire: once it is in the mirror, nothing of
    # the flood is still on its way.
    pw.run(["wpctl", "set-mute", str(a), "1"])
    c.wait_value(sub, path + "/muted", True, timeout=30)
    assert c.mirror(sub)["audio"]["nodes"][ka]["audio"]["volumes"] == [last, last]
    assert pw.wpctl_volume(a)[0] == last
    changed = [n for n in c.notifications if n["method"] == "tree.changed" and n["params"]["subscription"] == sub
               and any(ch["path"] != path + "/muted" for ch in n["params"]["changes"])]   # not the sentinel
    print(f"{len(changed)} tree.changed for {len(values)} changes")
    assert 1 <= len(changed) <= len(values)
    # Each one carries the volume it reports; none repeats the previous value.
    seen = []
    for n in changed:
        for ch in n["params"]["changes"]:
            if ch["path"] == path + "/volume":
                seen.append(ch["value"])
    assert seen[-1] == last
    assert all(x != y for x, y in zip(seen, seen[1:]))


def test_streams_that_leave_while_bound_log_no_warning(env):
    # A stream that leaves while qsd binds it: the bind (and what follows it) reaches PipeWire
    # after the node is gone. PipeWire says so ("no global", "unknown resource N op:1") and
    # removes the proxy; destroying it ourselves before that removal arrived sent a destroy
    # PipeWire answered with "unknown resource N op:7", logged as a warning.
    pw = PipeWire(env)
    a = pw.add_null("qsd_sink_a")
    pw.run(["wpctl", "set-default", str(a)])
    env.start_qsd(backends=["pipewire"])
    c = env.client()
    sub = c.subscribe(["/audio"])
    c.wait_value(sub, "/audio/available", True, timeout=30)
    write_tone(pw.tone, seconds=60)
    streams = []
    for i in range(200):
        streams.append(subprocess.Popen(["pw-cat", "--playback", "-P", "{ node.name=leaving-%d }" % i, pw.tone],
                                        env=pw.penv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if len(streams) > 5:
            streams[-6].kill()   # a few at a time, each leaving soon after it came
    for p in streams:
        p.kill()
        p.wait()
    c.wait_for(lambda: not [n for n in audio_nodes(c, sub).values() if (n["name"] or "").startswith("leaving-")],
               60, what="every stream gone from /audio")
    # A sentinel through the same connection: a node added after the streams left is listed, so
    # every event about them has been handled.
    pw.add_null("qsd_sentinel")
    node_key(c, sub, "qsd_sentinel")
    log = env.qsd_log()
    noisy = [line for line in log.splitlines() if "warning" in line or "error" in line or "refused" in line]
    assert noisy == [], "\n".join(noisy)
