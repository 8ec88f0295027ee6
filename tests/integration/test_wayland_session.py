"""qsd started before the compositor, as a systemd user service is: no WAYLAND_DISPLAY in its
environment. The socket comes from the systemd user manager's environment (a python-dbusmock
org.freedesktop.systemd1 on the private session bus, Manager.Environment and SetEnvironment as
`systemctl --user import-environment` uses them), read at start and again on SIGHUP. SIGHUP
must leave the other backends alone."""

import os
import signal

import pytest

from qsdtest import pointer_get
from waylandenv import Sway, skip_reason, start_systemd_mock, systemd_set_environment

REASON = skip_reason(need_foot=False)
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def qsd_without_display(env, backends=("wayland",)):
    e = dict(env.env)
    e.pop("WAYLAND_DISPLAY", None)
    e.pop("XDG_CURRENT_DESKTOP", None)
    env.start_qsd(backends=list(backends), env=e)
    c = env.client()
    sub = c.subscribe(["/wayland", "/daemon/backends", "/power/available"])
    return c, sub


def backend(c, sub):
    return pointer_get(c.mirror(sub), "/daemon/backends/wayland", None)


def test_display_imported_later_is_picked_up_on_sighup(env):
    sway = Sway(env).start()
    start_systemd_mock(env, ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"])
    env.start_mock("upower", {"OnBattery": False}, name="org.freedesktop.UPower")
    c, sub = qsd_without_display(env, ("wayland", "upower"))
    state = c.wait_value(sub, "/daemon/backends/wayland", predicate=lambda v: v and v["state"] == "unavailable")
    assert "WAYLAND_DISPLAY is not set" in state["error"]
    assert "systemd user manager" in state["error"]
    assert pointer_get(c.mirror(sub), "/wayland") == {"available": False}
    c.wait_value(sub, "/power/available", True)

    # The compositor imports its socket into the manager (as `systemctl --user import-environment
    # WAYLAND_DISPLAY` does), relative to XDG_RUNTIME_DIR as compositors set it.
    systemd_set_environment(env, f"XDG_RUNTIME_DIR={sway.dir}", f"WAYLAND_DISPLAY={os.path.basename(sway.socket)}",
                            "XDG_CURRENT_DESKTOP=sway:wlroots")
    # systemd sends no signal for that: qsd reads the environment again when told.
    c.call("hello")
    assert pointer_get(c.mirror(sub), "/wayland/available") is False
    env.daemon.send_signal(signal.SIGHUP)
    c.wait_value(sub, "/wayland/available", True, timeout=20)
    assert pointer_get(c.mirror(sub), "/wayland/compositor/socket") == sway.socket
    assert pointer_get(c.mirror(sub), "/wayland/compositor/name") == "sway"
    assert pointer_get(c.mirror(sub), "/wayland/outputs/HEADLESS-1/name") == "HEADLESS-1"
    assert backend(c, sub)["state"] == "running"

    # The other backend did not notice, and qsd is still there after another SIGHUP.
    assert pointer_get(c.mirror(sub), "/power/available") is True
    assert pointer_get(c.mirror(sub), "/daemon/backends/upower/state") == "running"
    env.daemon.send_signal(signal.SIGHUP)
    assert c.call("tree.get", {"path": "/wayland/available"})["value"] is True
    assert env.daemon.poll() is None
    assert "SIGHUP" in env.qsd_log()
    c.close()


def test_display_already_in_the_manager_at_start(env):
    sway = Sway(env).start()
    start_systemd_mock(env, [f"WAYLAND_DISPLAY={sway.socket}"])
    c, sub = qsd_without_display(env)
    c.wait_value(sub, "/wayland/available", True, timeout=20)
    assert pointer_get(c.mirror(sub), "/wayland/compositor/socket") == sway.socket
    c.close()


def test_sighup_without_a_manager_changes_nothing(env):
    """No org.freedesktop.systemd1 on the bus: qsd says so and keeps waiting."""
    c, sub = qsd_without_display(env)
    state = c.wait_value(sub, "/daemon/backends/wayland",
                         predicate=lambda v: v and "could not be asked" in (v["error"] or ""))
    assert "org.freedesktop.DBus.Error.ServiceUnknown" in state["error"]
    env.daemon.send_signal(signal.SIGHUP)
    assert c.call("tree.get", {"path": "/wayland"})["value"] == {"available": False}
    assert env.daemon.poll() is None
    c.close()


def test_sighup_moves_to_a_new_compositor(env):
    """The manager names another socket (a new session): qsd leaves the old compositor."""
    first = Sway(env, "sway-a").start()
    second = Sway(env, "sway-b").start()
    start_systemd_mock(env, [f"WAYLAND_DISPLAY={first.socket}"])
    c, sub = qsd_without_display(env)
    c.wait_value(sub, "/wayland/compositor/socket", first.socket, timeout=20)
    second.msg("create_output")
    systemd_set_environment(env, f"WAYLAND_DISPLAY={second.socket}")
    env.daemon.send_signal(signal.SIGHUP)
    c.wait_value(sub, "/wayland/compositor/socket", second.socket, timeout=20)
    c.wait_value(sub, "/wayland/outputs/HEADLESS-2/name", "HEADLESS-2", timeout=20)
    assert pointer_get(c.mirror(sub), "/wayland/compositor/pid") == second.proc.pid
    c.close()
