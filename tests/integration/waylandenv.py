"""Headless sway (and weston) for the Wayland tests and benchmark: a real compositor started by
the test in its own runtime directory, driven with swaymsg, with foot windows as toplevels.

sway 1.7 refuses to run as root, so under root it runs as `nobody` (setpriv) in a runtime
directory owned by nobody, inside the test's directory made traversable (0711). qsd, swaymsg
and foot (run as root) connect to nobody's sockets, which root may do. Without sway (or foot,
or setpriv when root) `skip_reason()` says why, and the tests skip with that reason."""

import glob
import json
import os
import pwd
import shutil
import signal
import subprocess

from qsdtest import wait_until

SWAY_CONFIG = """xwayland disable
output HEADLESS-1 resolution 1920x1080 position 0 0
"""


def skip_reason(need_foot=True):
    """Why a sway test cannot run here, or None."""
    for tool in ["sway", "swaymsg"] + (["foot"] if need_foot else []):
        if not shutil.which(tool):
            return f"{tool} is not installed (scripts/install-deps installs it)"
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            return "sway refuses root and setpriv (util-linux) is missing"
        try:
            pwd.getpwnam("nobody")
        except KeyError:
            return "sway refuses root and there is no user 'nobody' to run it as"
    return None


class Sway:
    """One headless sway. Its runtime dir survives restarts, so the socket path stays."""

    def __init__(self, env, name="sway"):
        self.env = env
        self.name = name
        os.chmod(env.dir, 0o711)   # nobody must traverse the test dir to reach its own
        self.dir = os.path.join(env.dir, name)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.config = os.path.join(self.dir, "config")
        with open(self.config, "w") as f:
            f.write(SWAY_CONFIG)
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            for p in (self.dir, self.config):
                os.chown(p, nobody.pw_uid, nobody.pw_gid)
        os.chmod(self.dir, 0o700)
        self.proc = None
        self.socket = None     # absolute path of wayland-N
        self.ipc = None
        self.starts = 0

    def start(self, timeout=20):
        e = {
            "PATH": "/usr/bin:/bin", "HOME": self.dir, "XDG_RUNTIME_DIR": self.dir,
            "WLR_BACKENDS": "headless", "WLR_RENDERER": "pixman", "WLR_LIBINPUT_NO_DEVICES": "1",
        }
        argv = ["sway", "-c", self.config]
        if os.geteuid() == 0:
            # --pdeathsig: see qsdtest.die_with_harness (a changed user clears it, so it is set here).
            argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--pdeathsig", "TERM"] + argv
        self.starts += 1
        self.proc = self.env.spawn(argv, f"{self.name}-{self.starts}", env=e)
        pid = self.proc.pid   # setpriv execs sway: same pid

        def up():
            if self.proc.poll() is not None:
                raise RuntimeError(f"sway exited with {self.proc.returncode}: {self.log()}")
            ipc = glob.glob(os.path.join(self.dir, f"sway-ipc.*.{pid}.sock"))
            wl = [p for p in glob.glob(os.path.join(self.dir, "wayland-*")) if not p.endswith(".lock")]
            if ipc and wl:
                return ipc[0], sorted(wl)[0]
            return None

        self.ipc, self.socket = wait_until(up, timeout, what="sway sockets")
        # The IPC socket exists before the outputs do: ask until HEADLESS-1 is there.
        wait_until(lambda: any(o["name"] == "HEADLESS-1" for o in self.outputs()), timeout, what="HEADLESS-1")
        return self

    def log(self):
        try:
            with open(os.path.join(self.env.dir, f"{self.name}-{self.starts}.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout)
        self.proc = None

    def msg(self, *args, check=True):
        out = subprocess.run(["swaymsg", "-s", self.ipc, *args], capture_output=True, text=True, timeout=20)
        if check and out.returncode != 0:
            raise RuntimeError(f"swaymsg {args} failed: {out.stdout} {out.stderr}")
        return out.stdout

    def query(self, kind):
        return json.loads(self.msg("-r", "-t", kind))

    def outputs(self):
        try:
            return self.query("get_outputs")
        except (RuntimeError, json.JSONDecodeError):
            return []

    def output(self, name):
        return next(o for o in self.outputs() if o["name"] == name)

    def windows(self):
        """Every view of the tree: {name, app_id, pid, focused, fullscreen_mode, output}."""
        found = []

        def walk(node, output):
            if node.get("type") == "output":
                output = node.get("name")
            if node.get("pid"):
                found.append({"name": node.get("name"), "app_id": node.get("app_id"), "pid": node["pid"],
                              "focused": node.get("focused"), "fullscreen_mode": node.get("fullscreen_mode"),
                              "output": output})
            for child in node.get("nodes", []) + node.get("floating_nodes", []):
                walk(child, output)

        walk(self.query("get_tree"), None)
        return found

    def window(self, app_id):
        return next((w for w in self.windows() if w["app_id"] == app_id), None)

    def foot(self, app_id, title):
        """A foot window (run as root on nobody's socket); returns its Popen once sway maps it."""
        e = dict(self.env.env)
        e["WAYLAND_DISPLAY"] = self.socket
        p = self.env.spawn(["foot", f"--app-id={app_id}", f"--title={title}", "sleep", "600"], f"foot-{app_id}", env=e)
        wait_until(lambda: self.window(app_id), 20, what=f"sway to map {app_id}")
        return p


def qsd_env(env, sway):
    """qsd's environment: the compositor's absolute socket path, no desktop name."""
    e = dict(env.env)
    e["WAYLAND_DISPLAY"] = sway.socket
    e.pop("XDG_CURRENT_DESKTOP", None)
    return e


# python-dbusmock's systemd template, on the session bus, with the Manager's Environment
# property and SetEnvironment as systemd has them (the template has neither).
SYSTEMD = "org.freedesktop.systemd1"
SYSTEMD_PATH = "/org/freedesktop/systemd1"
MANAGER = "org.freedesktop.systemd1.Manager"
SET_ENVIRONMENT = """
names = set()
for a in args[0]:
    names.add(a.split('=', 1)[0])
env = dbus.Array([], signature='s')
for e in self.Get('org.freedesktop.systemd1.Manager', 'Environment'):
    if e.split('=', 1)[0] not in names:
        env.append(e)
for a in args[0]:
    env.append(a)
self.Set('org.freedesktop.systemd1.Manager', 'Environment', env)
"""


def start_systemd_mock(env, environment=()):
    from qsdtest import PY
    p = env.spawn([PY, "-m", "dbusmock", "--session", "-t", "systemd"], "mock-systemd")
    env.wait_bus_name(SYSTEMD, system=False)
    mock = ["-d", SYSTEMD, "-o", SYSTEMD_PATH, "-m"]
    arr = "@as [" + ", ".join(json.dumps(x) for x in environment) + "]"
    env.gdbus(*mock, "org.freedesktop.DBus.Mock.AddProperty", MANAGER, "Environment", f"<{arr}>", system=False)
    env.gdbus(*mock, "org.freedesktop.DBus.Mock.AddMethod", MANAGER, "SetEnvironment", "as", "", SET_ENVIRONMENT,
              system=False)
    return p


def systemd_set_environment(env, *assignments):
    """What `systemctl --user import-environment` does: Manager.SetEnvironment."""
    arr = "[" + ", ".join(json.dumps(a) for a in assignments) + "]"
    env.gdbus("-d", SYSTEMD, "-o", SYSTEMD_PATH, "-m", MANAGER + ".SetEnvironment", arr, system=False)


class Weston:
    """weston's headless backend (runs as root): a compositor without the wlr protocols."""

    def __init__(self, env):
        self.env = env
        self.socket = os.path.join(env.run, "wayland-weston")
        self.proc = None

    def start(self, timeout=20):
        e = dict(self.env.env)
        e.pop("WAYLAND_DISPLAY", None)
        self.proc = self.env.spawn(["weston", "--backend=headless-backend.so", "--socket=wayland-weston", "--no-config",
                                    "--width=1280", "--height=720", "--use-pixman", "--idle-time=0"], "weston", env=e)

        def up():
            if self.proc.poll() is not None:
                raise RuntimeError(f"weston exited with {self.proc.returncode}")
            return os.path.exists(self.socket)

        wait_until(up, timeout, what="weston socket")
        return self
