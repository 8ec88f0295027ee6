"""When the wall clock is set (an NTP step, a resume from suspend), qsd stamps its wall-clock times
again: a playing player's (position, positionAt) pair and every notification's expiresAt, so what a
client computes from them stays right. Without that, a bar extrapolating the position of mpv is
off by the step until mpv next changes, and a timeout bar runs down to the wrong moment.

The test sets CLOCK_REALTIME 3 s forward and back, and leaves it where it would have been to
within microseconds. That needs CAP_SYS_TIME (root, as CI runs); without it the test is skipped.
ctest runs it alone (RUN_SERIAL in tests/CMakeLists.txt): a daemon of a test beside it would
stamp its own times again."""

import os
import shutil
import time

import pytest

import mprisutil as m
import notifyutil as n
from qsdtest import skip_unless_built, ts, wait_until

STEP = 3.0

pytestmark = pytest.mark.skipif(not (shutil.which("mpv") and os.path.exists(m.MPV_MPRIS) and shutil.which("playerctl")
                                     and shutil.which("sox") and shutil.which("notify-send")),
                                reason="needs mpv, mpv-mpris, playerctl, sox and notify-send (scripts/install-deps)")


def realtime_offset_ns():
    """CLOCK_REALTIME minus CLOCK_MONOTONIC, read back to back."""
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    real = time.clock_gettime_ns(time.CLOCK_REALTIME)
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return real - (before + after) // 2


def set_realtime_offset_ns(offset):
    time.clock_settime_ns(time.CLOCK_REALTIME, time.clock_gettime_ns(time.CLOCK_MONOTONIC) + offset)


@pytest.fixture
def wall_clock():
    """step(seconds) sets the wall clock that far from where it would be; it is put back after the
    test whatever happens."""
    start = realtime_offset_ns()
    try:
        set_realtime_offset_ns(start)
    except PermissionError:
        pytest.skip("setting the wall clock needs CAP_SYS_TIME (root)")
    try:
        yield lambda seconds: set_realtime_offset_ns(start + int(seconds * 1e9))
    finally:
        set_realtime_offset_ns(start)


def test_a_set_wall_clock_restamps_positions_and_expiries(env, wall_clock):
    skip_unless_built(["mpris", "notifications"])
    env.start_qsd(backends=["mpris", "notifications"])
    c = env.client()
    sub = c.subscribe(["/media", "/notifications"])
    c.wait_value(sub, "/media/available", True, timeout=30)
    c.wait_value(sub, "/notifications/server", "active", timeout=20)

    def items():
        return c.mirror(sub)["notifications"]["items"]

    def player():
        return c.mirror(sub)["media"]["players"].get(key)

    def expires():
        return ts(next(iter(items().values()))["expiresAt"])

    def position_matches(p):
        """What a client computes from the pair is what mpv says."""
        lo, told, hi = m.bracket(p, lambda: mpv.get("time-pos"))
        return lo - 0.25 <= told <= hi + 0.25

    # A notification that expires in a minute, and mpv playing a two-minute track.
    n.notify_send(env, "-t", "60000", "Later")
    c.wait_for(lambda: items(), timeout=10, what="the notification")
    expires_at = expires()

    mpv = m.Mpv(env, [m.track(env, "long", title="Long", seconds=120)])
    key = wait_until(mpv.owner, 20, what="mpv's MPRIS name")
    wait_until(mpv.loaded, 20, what="mpv's file loaded")
    c.wait_for(lambda: player() is not None, timeout=30, what="the player")
    monitor = m.Monitor(env, m.unique_name_of_pid(env, env.daemon.pid))
    c.call("media.play", {"player": key})
    c.wait_for(lambda: player()["playbackStatus"] == "playing", timeout=30, what="playing")
    # The read 100 ms after the status changed; once mpv played a second more it was answered,
    # and nothing more is due.
    wait_until(lambda: any(member == "Get" for member, _ in monitor.calls()), 10, what="the Position read")
    start = mpv.get("time-pos")
    wait_until(lambda: mpv.get("time-pos") >= start + 1, 10, interval=0.05, what="1 s of playing")
    c.pump()
    assert position_matches(player()), player()
    seen = len(monitor.calls())

    # Forward: the pair and expiresAt are stamped again, without asking mpv.
    wall_clock(STEP)
    c.wait_for(lambda: position_matches(player()), timeout=10, what="the position right after the step")
    c.wait_for(lambda: abs((expires() - expires_at).total_seconds() - STEP) < 0.1, timeout=10,
               what=f"expiresAt {STEP} s later on the wall clock")
    c.call("media.setVolume", {"player": key, "volume": 0.9})
    wait_until(lambda: len(monitor.calls()) > seen, 10, what="the sentinel call")
    assert [member for member, _ in monitor.calls()[seen:]] == ["Set"], monitor.calls()[seen:]

    # And back: the clock source fires again.
    wall_clock(0)
    c.wait_for(lambda: position_matches(player()), timeout=10, what="the position right after the step back")
    c.wait_for(lambda: abs((expires() - expires_at).total_seconds()) < 0.1, timeout=10, what="expiresAt as it was")
    assert player()["playbackStatus"] == "playing"
    n.check_clean_exit(env)
