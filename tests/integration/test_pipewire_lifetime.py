"""The pipewire backend across the lives of its peers: PipeWire and WirePlumber killed and started
again, WirePlumber absent or leaving (nodes stay, defaults go), PipeWire absent when qsd starts,
and the socket found where libpipewire looks for it ($PIPEWIRE_RUNTIME_DIR, $PIPEWIRE_REMOTE).
qsd finds a returning daemon through an inotify watch of the socket's directory, not by polling
(the idle benchmark counts its wakeups)."""

import json
import os
import select
import signal
import subprocess
import time

import pytest

from pwtest import PipeWire, audio_nodes, exits_cleanly, node_key, receive_queue, require, sinks_world
from qsdtest import wait_until


@pytest.fixture(autouse=True)
def _qsd_exits_cleanly(env):
    yield
    exits_cleanly(env)


def test_restart_of_pipewire_and_wireplumber(env):
    pw = PipeWire(env)
    a = pw.add_null("qsd_sink_a")
    pw.add_null("qsd_sink_b")
    pw.run(["wpctl", "set-default", str(a)])
    pw.play("test-player", target="qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio", "/daemon/backends/pipewire")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka = node_key(c, sub, "qsd_sink_a")
    c.wait_value(sub, "/audio/defaultAudioSink", ka)
    meter = env.client()
    meter.call("audio.monitorPeaks", {"node": ka, "enabled": True})
    meter.call("audio.watchProperties", {"node": ka, "enabled": True})
    for round_ in range(2):
        pw.kill_all()
        # At once: available false and nothing else under /audio.
        c.wait_value(sub, "/audio/available", False, timeout=20)
        assert c.mirror(sub)["audio"] == {"available": False}
        # Waited for, not read at once: PipeWire's listening socket can outlive the connection
        # it closed by a moment, so qsd may connect once more to the dying daemon ("starting")
        # before it finds no daemon there. /audio stays as it is meanwhile.
        c.wait_value(sub, "/daemon/backends/pipewire/state", "unavailable", timeout=20)
        assert c.mirror(sub)["audio"] == {"available": False}
        resp = c.call_full("audio.setVolume", {"node": ka, "volume": 0.5})
        assert resp["error"]["code"] == -32000 and resp["error"]["data"]["backend"] == "pipewire"
        # Stopping a meter or a watch is always possible.
        assert meter.call("audio.monitorPeaks", {"node": ka, "enabled": False})["enabled"] is False
        assert meter.call("audio.watchProperties", {"node": ka, "enabled": False})["enabled"] is False
        pw.start()
        t0 = time.monotonic()
        a = pw.add_null("qsd_sink_a")
        b = pw.add_null("qsd_sink_b")
        pw.run(["wpctl", "set-default", str(b)])
        c.wait_value(sub, "/audio/available", True, timeout=30)
        ka = node_key(c, sub, "qsd_sink_a")
        kb = node_key(c, sub, "qsd_sink_b")
        # Before another client binds the "default" metadata: PipeWire 0.3.65 (and still in
        # 2026) sends the clients already bound none of its changes while a new bind of it waits
        # for WirePlumber's answer to a ping, so a wpctl started at once could take away the
        # effective default WirePlumber derives from this choice (seen in CI).
        c.wait_value(sub, "/audio/defaultAudioSink", kb, timeout=30)
        pw.run(["wpctl", "set-volume", str(a), "0.4"])
        c.wait_value(sub, f"/audio/nodes/{ka}/audio/volume", 0.4, timeout=30)
        print(f"round {round_}: full state back {time.monotonic() - t0:.3f} s after PipeWire was started")
        assert c.mirror(sub)["daemon"]["backends"]["pipewire"]["state"] == "running"
        # Keys are the new instance's serials; actions work on them.
        assert ka == str(pw.node_by_name("qsd_sink_a")["info"]["props"]["object.serial"])
        assert c.call("audio.setVolume", {"node": ka, "volume": 0.6})["audio"]["volume"] == 0.6
        assert pw.wpctl_volume(a)[0] == 0.6
        # A watch works on the new instance's node (a new key), and answers once it shows.
        assert "properties" not in c.mirror(sub)["audio"]["nodes"][ka]
        meter.call("audio.watchProperties", {"node": ka, "enabled": True})
        assert c.call("tree.get", {"path": f"/audio/nodes/{ka}/properties/node.name"})["value"] == "qsd_sink_a"


def test_wireplumber_absent_nodes_listed_defaults_null(env):
    pw = PipeWire(env, wireplumber=False)
    pw.add_null("qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio", "/daemon/backends/pipewire")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka = node_key(c, sub, "qsd_sink_a")
    audio = c.mirror(sub)["audio"]
    assert audio["nodes"][ka]["audio"]["volumes"] == [1.0, 1.0]
    for k in ("defaultAudioSink", "defaultAudioSource", "preferredDefaultAudioSink", "preferredDefaultAudioSource"):
        assert audio[k] is None
    # Props need no session manager; the default metadata does.
    assert c.call("audio.setVolume", {"node": ka, "volume": 0.5})["audio"]["volume"] == 0.5
    resp = c.call_full("audio.setPreferredDefault", {"node": ka})
    assert resp["error"]["code"] == -32000 and "WirePlumber" in resp["error"]["message"]
    # WirePlumber arrives: the defaults follow (it picks the only sink); it leaves: they go, the
    # nodes stay. No other client binds the metadata meanwhile (a wpctl here could take from qsd
    # the default WirePlumber writes as it starts: PipeWire's, docs/backends/pipewire.md).
    pw.start_wireplumber()
    c.wait_value(sub, "/audio/defaultAudioSink", ka, timeout=30)
    assert c.call("audio.setPreferredDefault", {"node": ka}) == {"kind": "sink", "node": ka}
    c.wait_value(sub, "/audio/preferredDefaultAudioSink", ka)
    pw.stop_wireplumber()
    c.wait_value(sub, "/audio/defaultAudioSink", None, timeout=30)
    assert c.mirror(sub)["audio"]["preferredDefaultAudioSink"] is None
    assert c.mirror(sub)["audio"]["available"] is True and ka in audio_nodes(c, sub)


def test_pipewire_absent_at_start_then_found(env):
    require()
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio", "/daemon/backends/pipewire")
    c.wait_value(sub, "/daemon/backends/pipewire/state", "unavailable", timeout=20)
    error = c.mirror(sub)["daemon"]["backends"]["pipewire"]["error"]
    assert "PipeWire is not running" in error and os.path.join(env.run, "pipewire-0") in error
    assert c.mirror(sub)["audio"] == {"available": False}
    resp = c.call_full("audio.setMuted", {"node": "1", "muted": True})
    assert resp["error"]["code"] == -32000
    pw = PipeWire(env)
    pw.add_null("qsd_sink_a")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    node_key(c, sub, "qsd_sink_a")
    c.wait_value(sub, "/daemon/backends/pipewire/state", "running")


def test_runtime_dir_and_remote_name_are_honoured(env):
    require()
    pwdir = os.path.join(env.dir, "pw-runtime")
    os.makedirs(pwdir, mode=0o700)
    # The daemon listens as "qsd-pw-1" in its own directory; clients find it through
    # PIPEWIRE_RUNTIME_DIR and PIPEWIRE_REMOTE, as libpipewire does.
    extra = {"PIPEWIRE_RUNTIME_DIR": pwdir, "PIPEWIRE_CORE": "qsd-pw-1", "PIPEWIRE_REMOTE": "qsd-pw-1"}
    qenv = dict(env.env)
    qenv.update(PIPEWIRE_RUNTIME_DIR=pwdir, PIPEWIRE_REMOTE="qsd-pw-1")
    env.start_qsd(backends=["pipewire"], env=qenv)
    c, sub = env.watch("/audio", "/daemon/backends/pipewire")
    c.wait_value(sub, "/daemon/backends/pipewire/state", "unavailable", timeout=20)
    assert os.path.join(pwdir, "qsd-pw-1") in c.mirror(sub)["daemon"]["backends"]["pipewire"]["error"]
    pw = PipeWire(env, extra_env=extra)
    assert os.path.exists(os.path.join(pwdir, "qsd-pw-1")) and not os.path.exists(os.path.join(env.run, "pipewire-0"))
    pw.add_null("qsd_sink_a")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    node_key(c, sub, "qsd_sink_a")
    pw.kill_all()
    c.wait_value(sub, "/audio/available", False, timeout=20)
    pw.start()
    pw.add_null("qsd_sink_b")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    node_key(c, sub, "qsd_sink_b")


def _one_default_sink(env):
    """PipeWire and WirePlumber with one sink, qsd showing it as the default sink; returns the
    PipeWire, qsd's client and subscription to /audio, and the sink's key."""
    pw = PipeWire(env)
    pw.add_null("qsd_sink_a")
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    ka = node_key(c, sub, "qsd_sink_a")
    c.wait_value(sub, "/audio/defaultAudioSink", ka, timeout=20)
    return pw, c, sub, ka


def _read_line_of(proc, timeout):
    """The next line proc writes on its stdout (a pipe), or None after timeout."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else None


def _write_in_the_gap(env, pw, params):
    """Plays the scene that makes PipeWire keep a change from qsd (docs/backends/pipewire.md):
    WirePlumber stopped, qsd's audio.setPreferredDefault(params) queued for it, then a
    pw-metadata bind of the metadata (its ping queued there too), then WirePlumber continued.
    Whether the bind reached PipeWire first is seen only roughly (the bytes queued for
    WirePlumber). Returns the client waiting for the call's answer and the pw-metadata process."""
    wp = pw.wp.pid
    os.kill(wp, signal.SIGSTOP)
    try:
        queued = receive_queue(wp)
        w = env.client()
        w.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "audio.setPreferredDefault", "params": params}) + "\n")
        wait_until(lambda: receive_queue(wp) > queued, 10, what="qsd's write queued for WirePlumber")
        queued = receive_queue(wp)
        binder = subprocess.Popen(["pw-metadata", "-m", "-n", "default"], env=pw.penv, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        # pw-metadata prints this just before it binds; then its bind's ping is queued too.
        line = ""
        while line is not None and "Found" not in line:
            line = _read_line_of(binder, 10)
        assert line is not None, "pw-metadata did not find the default metadata"
        wait_until(lambda: receive_queue(wp) > queued, 10, what="pw-metadata's bind waiting for WirePlumber")
    finally:
        os.kill(wp, signal.SIGCONT)
    return w, binder


def _until_pipewire_keeps_a_write(env, pw, params_of, check, sign):
    """Plays _write_in_the_gap up to five times (params_of(attempt): the call's params) and
    check(attempt, answer) after each, until qsd's log shows sign: the gap was made, and what
    qsd does about it was checked."""
    for attempt in range(1, 6):
        w, binder = _write_in_the_gap(env, pw, params_of(attempt))
        t0 = time.monotonic()
        answer = w.read_line(timeout=20)
        took = time.monotonic() - t0
        check(attempt, answer)
        w.close()
        binder.terminate()
        binder.wait(10)
        if sign in env.qsd_log():
            print(f"PipeWire kept the change from qsd at attempt {attempt}; answered {took:.2f} s after WirePlumber ran")
            return
    raise AssertionError("PipeWire never kept qsd's change from it in 5 attempts: the gap was not made")


def test_a_default_change_pipewire_kept_from_qsd_is_read_again(env):
    """PipeWire sends the clients bound to the "default" metadata no change while another
    client's bind of it waits for WirePlumber's answer to a ping (docs/backends/pipewire.md).
    Made to happen here: with WirePlumber stopped, qsd asks for a preferred default (PipeWire
    forwards it to WirePlumber's socket), then pw-metadata binds the metadata (its ping waits
    there too); when WirePlumber runs again, it applies qsd's choice while the bind waits, so
    PipeWire keeps the preferred default from qsd, and qsd is only told of the default
    WirePlumber derives from it afterwards. qsd sees a preferred default that is present and is
    not the default, reads the metadata again, and the call it was answering succeeds.

    Whether the bind reached PipeWire before WirePlumber runs again is seen only roughly (the
    bytes queued for WirePlumber), so the scene is played up to five times, each time to the
    other sink, until PipeWire did keep a change from qsd once; every time, qsd must end with
    the choice made. A qsd that does not read the metadata again fails at the first time the
    gap happened."""
    pw, c, sub, keys = sinks_world(env, "qsd_sink_a", "qsd_sink_b")
    assert c.call("audio.setPreferredDefault", {"node": keys[0]}) == {"kind": "sink", "node": keys[0]}
    c.wait_value(sub, "/audio/defaultAudioSink", keys[0], timeout=20)

    def check(attempt, answer):
        target = keys[attempt % 2]
        assert answer.get("result") == {"kind": "sink", "node": target}, answer
        # What qsd shows ends as chosen: told at once, or read again a second after it showed
        # a preferred default that is not the default.
        c.wait_value(sub, "/audio/preferredDefaultAudioSink", target, timeout=20)
        c.wait_value(sub, "/audio/defaultAudioSink", target, timeout=20)

    _until_pipewire_keeps_a_write(env, pw, lambda attempt: {"node": keys[attempt % 2]}, check,
                                  "read the default metadata again: it had changed")


def test_a_write_of_qsd_pipewire_kept_from_it_is_read_again(env):
    """The same gap as above, where nothing else follows: the only sink is already the default,
    so WirePlumber derives no new default from the preferred one qsd writes, and what qsd holds
    looks consistent whether it was told or not. The call it is answering makes it read the
    metadata again a second after the write (test seen failing before: "PipeWire did not apply
    default.configured.audio.sink within 5 s", once in 600 runs under load, while WirePlumber
    started). The preferred sink is set and cleared in turn, up to five times, until PipeWire
    did keep a change from qsd once."""
    pw, c, sub, ka = _one_default_sink(env)

    def check(attempt, answer):
        target = ka if attempt % 2 else None
        assert answer.get("result") == {"kind": "sink", "node": target}, answer
        c.wait_value(sub, "/audio/preferredDefaultAudioSink", target, timeout=20)
        assert c.mirror(sub)["audio"]["defaultAudioSink"] == ka

    _until_pipewire_keeps_a_write(env, pw, lambda attempt: {"node": ka if attempt % 2 else None, "kind": "sink"},
                                  check, "a write to the default metadata has not come back")


def _delete_default_sink(pw, c, sub, attempts=4):
    """Deletes default.audio.sink and waits until qsd shows no default sink. The deletion can
    miss qsd: PipeWire's metadata module sends bound clients no change while another client's
    bind of the metadata waits for WirePlumber's answer (docs/backends/pipewire.md); the
    likeliest binder here is a part of WirePlumber still loading, which under load can come after
    the first default (seen once in 8 runs at ctest -j4 beside a build). qsd then shows the
    default it was last told, a state that looks consistent, until the next change: the
    documented gap. So the key is written back (a change qsd may or may not see; it already
    shows that default) and deleted again, until the deletion reaches qsd."""
    for attempt in range(attempts):
        if attempt:
            pw.run(["pw-metadata", "-n", "default", "0", "default.audio.sink",
                    json.dumps({"name": "qsd_sink_a"}), "Spa:String:JSON"])
        pw.run(["pw-metadata", "-n", "default", "-d", "0", "default.audio.sink"])
        try:
            c.wait_value(sub, "/audio/defaultAudioSink", None, timeout=5 if attempt < attempts - 1 else 20)
            return
        except TimeoutError:
            if attempt == attempts - 1:
                raise
            print(f"the deletion of default.audio.sink missed qsd (attempt {attempt + 1}); again")


def test_a_missing_default_is_read_again_once_and_changes_still_arrive(env):
    """Sinks listed and no default sink: what a default kept from qsd by PipeWire's gap looks
    like. Made here without the gap (the key deleted; WirePlumber does not write it again), so
    the metadata read again holds the same: one reading for that state, not one per second, and
    the binding read again is the one later changes come through."""
    pw, c, sub, ka = _one_default_sink(env)
    _delete_default_sink(pw, c, sub)
    wait_until(lambda: "read the default metadata again: nothing had changed" in env.qsd_log(), 20,
               what="the metadata read again")
    # The state stays while other changes come (each one a new look at the defaults); a second
    # reading would come a second after one of them. Checked over 2.5 s: under load a late
    # second reading could only make this pass, never fail.
    volumes = iter([0.5, 0.6] * 1000)

    def second_reading():
        c.call("audio.setVolume", {"node": ka, "volume": next(volumes)})
        return env.qsd_log().count("reading the default metadata again") > 1
    with pytest.raises(TimeoutError):
        wait_until(second_reading, 2.5, what="a second reading")
    pw.add_null("qsd_sink_b")
    kb = node_key(c, sub, "qsd_sink_b")
    assert c.call("audio.setPreferredDefault", {"node": kb}) == {"kind": "sink", "node": kb}
    c.wait_value(sub, "/audio/defaultAudioSink", kb, timeout=20)
