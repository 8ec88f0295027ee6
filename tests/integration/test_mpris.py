"""/media against real players: mpv with the mpv-mpris plugin (no video, the null audio output)
playing Ogg files that sox makes with title/artist tags, checked through qsd's socket, with
playerctl, and by mpv's own state over its JSON IPC. The position a client extrapolates from
the tree matches playerctl's while qsd makes no D-Bus call at all (dbus-monitor counts them)."""

import json
import os
import re
import shutil
import subprocess

import pytest

import mprisutil as m
from qsdtest import QSCTL, RpcError, wait_until

pytestmark = pytest.mark.skipif(not (shutil.which("mpv") and os.path.exists(m.MPV_MPRIS) and shutil.which("playerctl")
                                     and shutil.which("sox")),
                                reason="needs mpv, mpv-mpris, playerctl and sox (scripts/install-deps)")


@pytest.fixture
def media(env):
    env.start_qsd(backends=["mpris"])
    c = env.client()
    sub = c.subscribe(["/media"])
    c.wait_value(sub, "/media/available", True, timeout=30)
    return env, c, sub


def assert_schema(doc, media):
    """/media as the API description says it is."""
    import jsonschema
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    v = jsonschema.Draft7Validator({"$ref": "#/components/schemas/Media"}, resolver=resolver)
    errors = [f"{list(e.path)}: {e.message}" for e in v.iter_errors(media)]
    assert not errors, errors


def players(c, sub):
    return c.mirror(sub)["media"]["players"]


def wait_player(c, sub, key, pred=lambda p: True, what=None, timeout=30):
    c.wait_for(lambda: key in players(c, sub) and pred(players(c, sub)[key]), timeout=timeout, what=what or f"player {key}")
    return players(c, sub)[key]


def start_mpv(env, c, sub, files, **kw):
    mpv = m.Mpv(env, files, **kw)
    key = wait_until(mpv.owner, 20, what="mpv's MPRIS name")
    # A seek asked for while mpv still loads its file is lost: start from a loaded file.
    wait_until(mpv.loaded, 20, what="mpv's file loaded")
    wait_player(c, sub, key)
    return mpv, key


def test_metadata_of_tagged_files(media):
    env, c, sub = media
    first = m.track(env, "first", title="First Song", artist="The Tester", album="Test Album", seconds=30)
    second = m.track(env, "second", title="Second Song", artist="Someone Else", seconds=20, freq=330)
    _, key = start_mpv(env, c, sub, [first, second])
    assert key == "mpv"
    p = wait_player(c, sub, "mpv", lambda p: p["metadata"]["title"] == "First Song")
    assert p["busName"] == "org.mpris.MediaPlayer2.mpv"
    assert p["identity"] == "mpv" and p["desktopEntry"] == "mpv"
    assert p["metadata"]["artists"] == ["The Tester"]
    assert p["metadata"]["album"] == "Test Album"
    assert p["metadata"]["url"] == "file://" + first
    assert p["metadata"]["trackId"] and p["metadata"]["trackId"].startswith("/")
    assert p["length"] == pytest.approx(30, abs=0.1)
    assert p["playbackStatus"] == "paused"
    assert p["position"] == pytest.approx(0, abs=0.1)
    assert p["canPlay"] and p["canPause"] and p["canSeek"] and p["canGoNext"] and p["canControl"]
    # mpv's desktop entry names its icon, found in the hicolor theme Debian installs.
    if os.path.exists("/usr/share/applications/mpv.desktop"):
        assert p["iconUrl"] and p["iconUrl"].startswith("file:///") and "mpv" in p["iconUrl"]
    # playerctl reads the same.
    assert m.playerctl(env, "-p", "mpv", "metadata", "title").stdout.strip() == "First Song"
    assert m.playerctl(env, "-p", "mpv", "metadata", "artist").stdout.strip() == "The Tester"
    # Every field of the schema, no more; the only player is the active one.
    doc = c.call("rpc.discover")
    schema = doc["components"]["schemas"]["MediaPlayer"]
    assert set(p) == set(schema["required"]) == set(schema["properties"])
    assert c.mirror(sub)["media"]["active"] == "mpv"
    assert_schema(doc, c.mirror(sub)["media"])


def test_actions_reach_mpv(media):
    env, c, sub = media
    files = [m.track(env, "a", title="Track A", artist="X"), m.track(env, "b", title="Track B", artist="Y", freq=330)]
    mpv, key = start_mpv(env, c, sub, files)

    assert c.call("media.play", {"player": key}) == {"player": key}
    wait_player(c, sub, key, lambda p: p["playbackStatus"] == "playing")
    assert mpv.get("pause") is False
    assert m.playerctl(env, "-p", key, "status").stdout.strip() == "Playing"
    assert players(c, sub)[key]["lastActiveAt"] is not None

    c.call("media.pause", {"player": key})
    wait_player(c, sub, key, lambda p: p["playbackStatus"] == "paused")
    assert mpv.get("pause") is True
    assert m.playerctl(env, "-p", key, "status").stdout.strip() == "Paused"

    c.call("media.playPause", {"player": key})
    wait_player(c, sub, key, lambda p: p["playbackStatus"] == "playing")
    c.call("media.playPause", {"player": key})
    wait_player(c, sub, key, lambda p: p["playbackStatus"] == "paused")

    # Paused, so the position stands still once mpv has landed: then qsd, mpv and playerctl agree.
    # While a seek is asked for or under way mpv gives its target as its position, and then the
    # frame it landed on, up to 0.15 s before the target: its playback-restart event after the
    # seek (or after the start of a file) says it landed.
    def lands_at(target, action, after="seek"):
        with mpv.events() as events:
            action()
            events.wait("playback-restart", after=after)
        here = mpv.get("time-pos")
        assert here == pytest.approx(target, abs=0.25)
        assert float(m.playerctl(env, "-p", key, "position").stdout) == pytest.approx(here, abs=0.05)
        # A freshly loaded Vorbis file starts a little before 0 in mpv; the tree has no negative positions.
        here = max(0.0, here)
        wait_player(c, sub, key, lambda p: abs(p["position"] - here) < 0.05, what=f"position {here}")

    # A seek is relative to where mpv is: the short plays above moved it on by as long as they
    # lasted, and each seek lands within mpv's precision of its target, so the next target is
    # counted from where mpv stands, not from the round figure the last one aimed at.
    def seek_by(offset):
        start = mpv.get("time-pos")
        lands_at(start + offset, lambda: c.call("media.seek", {"player": key, "offset": offset}))

    seek_by(12)
    seek_by(-4.5)
    lands_at(20, lambda: c.call("media.setPosition", {"player": key, "position": 20}))

    c.call("media.next", {"player": key})
    wait_player(c, sub, key, lambda p: p["metadata"]["title"] == "Track B")
    assert mpv.get("playlist-pos") == 1
    assert m.playerctl(env, "-p", key, "metadata", "title").stdout.strip() == "Track B"
    # Back at the start of the track, not where the last one was (quickshell#853).
    lands_at(0, lambda: c.call("media.previous", {"player": key}), after="start-file")
    wait_player(c, sub, key, lambda p: p["metadata"]["title"] == "Track A")
    assert mpv.get("playlist-pos") == 0

    c.call("media.setVolume", {"player": key, "volume": 0.5})
    wait_player(c, sub, key, lambda p: p["volume"] == pytest.approx(0.5))
    assert mpv.get("volume") == pytest.approx(50)
    c.call("media.setLoopStatus", {"player": key, "loopStatus": "playlist"})
    wait_player(c, sub, key, lambda p: p["loopStatus"] == "playlist")
    assert mpv.get("loop-playlist") == "inf"
    c.call("media.setRate", {"player": key, "rate": 1.5})
    wait_player(c, sub, key, lambda p: p["rate"] == 1.5)
    assert mpv.get("speed") == pytest.approx(1.5)

    # What mpv does not allow, unknown players and bad params.
    with pytest.raises(RpcError) as e:
        c.call("media.raise", {"player": key})
    assert e.value.code == -32002 and e.value.data["capability"] == "canRaise"
    assert e.value.data["name"] == "org.freedesktop.DBus.Error.NotSupported"
    with pytest.raises(RpcError) as e:
        c.call("media.play", {"player": "nobody"})
    assert e.value.code == -32001 and e.value.data == {"param": "player", "player": "nobody"}
    with pytest.raises(RpcError) as e:
        c.call("media.seek", {"player": key, "offset": "far"})
    assert e.value.code == -32602 and e.value.data["param"] == "offset"
    with pytest.raises(RpcError) as e:
        c.call("media.setLoopStatus", {"player": key, "loopStatus": "forever"})
    assert e.value.code == -32602 and e.value.data["param"] == "loopStatus"
    with pytest.raises(RpcError) as e:
        c.call("media.setRate", {"player": key, "rate": 1000})
    assert e.value.code == -32602 and e.value.data["param"] == "rate"

    # Stop, then quit: the player leaves the tree with its name.
    c.call("media.stop", {"player": key})
    wait_player(c, sub, key, lambda p: p["playbackStatus"] == "stopped")
    c.call("media.quit", {"player": key})
    c.wait_for(lambda: key not in players(c, sub), timeout=20, what="mpv gone")
    assert c.mirror(sub)["media"]["active"] is None


def test_open_uri_in_mpv(media):
    env, c, sub = media
    a = m.track(env, "a", title="Track A", artist="X")
    b = m.track(env, "b", title="Track B", artist="Y", freq=330)
    mpv, key = start_mpv(env, c, sub, [a])
    p = players(c, sub)[key]
    # What mpv-mpris lists: network schemes only, though it opens file:// URIs (so qsd does not
    # check a URI against the list), and two MIME types.
    assert "https" in p["supportedUriSchemes"] and "file" not in p["supportedUriSchemes"]
    assert "audio/mpeg" in p["supportedMimeTypes"]
    assert c.call("media.openUri", {"player": key, "uri": "file://" + b}) == {"player": key}
    wait_player(c, sub, key, lambda p: p["metadata"]["title"] == "Track B", what="Track B opened")
    assert mpv.get("path") == b
    with pytest.raises(RpcError) as e:
        c.call("media.openUri", {"player": key, "uri": a})
    assert e.value.code == -32602 and e.value.data["param"] == "uri"
    assert mpv.get("path") == b


def test_position_extrapolates_without_any_call(media):
    env, c, sub = media
    mpv, key = start_mpv(env, c, sub, [m.track(env, "long", title="Long", artist="Z", seconds=120)])
    qsd_name = m.unique_name_of_pid(env, env.daemon.pid)
    assert qsd_name
    monitor = m.Monitor(env, qsd_name)

    def gets(calls):
        return sum(1 for member, _ in calls if member == "Get")

    before_play = len(monitor.calls())
    c.call("media.play", {"player": key})
    wait_player(c, sub, key, lambda p: p["playbackStatus"] == "playing")
    # The read the status change makes, 100 ms later. Then nothing while it plays.
    wait_until(lambda: gets(monitor.calls()[before_play:]) >= 1, 10, what="the Position read")
    start = mpv.get("time-pos")
    wait_until(lambda: mpv.get("time-pos") >= start + 2, 10, interval=0.1, what="2 s of playing")
    seen = len(monitor.calls())
    # Over those 2 s: that read, and on a loaded machine perhaps the one the track's loading
    # asked for, when mpv's signal about it reached qsd late (the two are apart when the status
    # came more than 100 ms after it). A daemon that polled would have read far more often.
    assert 1 <= gets(monitor.calls()[before_play:seen]) <= 2, monitor.calls()[before_play:seen]

    lo, told, hi = m.position_brackets(env, c, sub, key)
    assert lo - 0.25 <= told <= hi + 0.25, (lo, told, hi, players(c, sub)[key])
    assert told >= 2

    # A sentinel call from qsd closes the window: nothing came from qsd before it.
    c.call("media.setVolume", {"player": key, "volume": 0.9})
    wait_until(lambda: len(monitor.calls()) > seen, 10, what="the sentinel call")
    assert monitor.calls()[seen:] == [("Set", monitor.calls()[seen][1])], monitor.calls()[seen:]


def test_seeked_after_playerctl_position(media):
    env, c, sub = media
    mpv, key = start_mpv(env, c, sub, [m.track(env, "s", title="Seek", artist="Z", seconds=60)])
    m.playerctl(env, "-p", key, "position", "5")
    p = wait_player(c, sub, key, lambda p: abs(p["position"] - 5) < 0.25, what="position 5 after Seeked")
    assert mpv.get("time-pos") == pytest.approx(5, abs=0.25)
    # Playing on from there, the extrapolated position follows mpv's.
    m.playerctl(env, "-p", key, "play")
    wait_player(c, sub, key, lambda p: p["playbackStatus"] == "playing")
    m.playerctl(env, "-p", key, "position", "30")
    wait_player(c, sub, key, lambda p: abs(m.client_position(p) - 30) < 0.5, what="position 30 while playing")
    p = players(c, sub)[key]
    assert m.client_position(p) == pytest.approx(mpv.get("time-pos"), abs=0.25)


def test_two_players_and_the_active_one(media):
    env, c, sub = media
    one, a = start_mpv(env, c, sub, [m.track(env, "one", title="One", artist="A")])
    two, b = start_mpv(env, c, sub, [m.track(env, "two", title="Two", artist="B", freq=330)])
    assert a != b
    # Neither played yet: the one that appeared last.
    c.wait_for(lambda: c.mirror(sub)["media"]["active"] == b, what="active b")

    m.playerctl(env, "-p", a, "play")
    c.wait_for(lambda: c.mirror(sub)["media"]["active"] == a, what="the player that started playing")
    m.playerctl(env, "-p", b, "play")
    c.wait_for(lambda: c.mirror(sub)["media"]["active"] == b, what="the one that started playing last")
    m.playerctl(env, "-p", b, "pause")
    c.wait_for(lambda: c.mirror(sub)["media"]["active"] == a, what="playing beats paused")

    # A pin wins until its player goes.
    assert c.call("media.setActive", {"player": b}) == {"active": b, "pinned": b}
    assert c.mirror(sub)["media"]["active"] == b and c.mirror(sub)["media"]["pinned"] == b
    assert c.call("media.setActive", {"player": None}) == {"active": a, "pinned": None}
    c.call("media.setActive", {"player": b})

    # Quitting one removes it at once, and its pin.
    c.call("media.quit", {"player": b})
    c.wait_for(lambda: b not in players(c, sub), timeout=20, what="b gone")
    assert c.mirror(sub)["media"]["active"] == a and c.mirror(sub)["media"]["pinned"] is None
    # A player killed without a word leaves just as fast.
    one.proc.kill()
    c.wait_for(lambda: a not in players(c, sub), timeout=20, what="a gone")
    assert c.mirror(sub)["media"]["active"] is None


def test_playerctld_is_never_listed(media):
    env, c, sub = media
    mpv, key = start_mpv(env, c, sub, [m.track(env, "p", title="P", artist="Q")])
    ctld = env.spawn(["playerctld"], "playerctld")
    env.wait_bus_name("org.mpris.MediaPlayer2.playerctld", system=False)
    # playerctld now mirrors mpv under its own name, readable like any player.
    wait_until(lambda: m.playerctl(env, "-p", "playerctld", "metadata", "title", check=False).stdout.strip() == "P", 20,
               what="playerctld mirroring mpv")
    # A player that appears after it is a sentinel: by the time it is listed, playerctld would be.
    m.start_player(env, {"name": m.PREFIX + "sentinel"})
    wait_player(c, sub, "sentinel")
    assert sorted(players(c, sub)) == sorted([key, "sentinel"])
    assert ctld.poll() is None


def test_the_waybar_media_module(media):
    """The custom/media module of docs/waybar.md, its commands run as Waybar runs them
    (sh -c), with docs/waybar/qsd.jq where the config says."""
    env, c, sub = media
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
    with open(os.path.join(docs, "waybar.md")) as f:
        blocks = re.findall(r"```json\n(.*?)```", f.read(), re.S)
    module = json.loads("{" + next(b for b in blocks if '"custom/media"' in b) + "}")["custom/media"]
    conf = os.path.join(env.env["HOME"], ".config", "waybar")
    os.makedirs(conf)
    shutil.copy(os.path.join(docs, "waybar", "qsd.jq"), conf)
    sh_env = dict(env.env, QSD_SOCKET=env.socket, PATH=os.path.dirname(QSCTL) + ":" + env.env["PATH"])
    out = os.path.join(env.dir, "module.out")
    env.spawn(["sh", "-c", module["exec"] + " > " + out], "module", env=sh_env)

    def lines():
        return [json.loads(x) for x in open(out).read().splitlines()] if os.path.exists(out) else []

    wait_until(lambda: lines() and lines()[-1] == {"text": ""}, 10, what="an empty module without players")
    mpv, key = start_mpv(env, c, sub, [m.track(env, "w1", title="Bar Song", artist="Bar Band"),
                                       m.track(env, "w2", title="Next Song", artist="Other")])
    wait_until(lambda: lines()[-1] == {"text": "Bar Song — Bar Band", "tooltip": "mpv: paused", "class": "paused",
                                       "alt": "paused"}, 10, what="the paused track")
    subprocess.run(["sh", "-c", module["on-click"]], env=sh_env, check=True, capture_output=True)
    wait_until(lambda: lines()[-1]["class"] == "playing", 10, what="playing after a click")
    assert mpv.get("pause") is False
    count = len(lines())
    subprocess.run(["sh", "-c", module["on-click-right"]], env=sh_env, check=True, capture_output=True)
    wait_until(lambda: lines()[-1]["text"] == "Next Song — Other", 10, what="the next track")
    # One line per change the bar shows, none as the position moves.
    m.playerctl(env, "-p", key, "position", "3")
    c.call("media.setVolume", {"player": key, "volume": 0.7})
    wait_player(c, sub, key, lambda p: p["volume"] == pytest.approx(0.7))
    assert len(lines()) <= count + 2, lines()[count:]
    # The plain form prints the active player's key.
    r = env.qsctl("get", "--raw", "/media/active")
    assert r.stdout.strip() == key
