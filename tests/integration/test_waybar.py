"""The Waybar bar of docs/waybar.md, run as a user runs it: Waybar 0.9.17 under a headless sway
(as `nobody`, waylandenv), its three custom modules started from docs/waybar/config by Waybar
itself, fed by a qsd with UPower and NetworkManager from python-dbusmock and a real PipeWire.

What the bar shows is read with grim. A second bar of the same Waybar, at the bottom, has the
same modules with the same format and style, fed by the lines the test expects (`tail -F` of a
file): the two bars' pixels are equal exactly when every module shows the expected text, icon
and class, so the comparison checks the values without reading text off the screen. The class
colours of docs/waybar/style.css are checked as colours. Then Waybar is killed, as a restart
does, and no qsctl it started may outlive it."""

import json
import os
import re
import shutil
import signal
import subprocess

import pytest

from qsdtest import QSCTL, wait_until
from waylandenv import Sway, skip_reason

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "..", "docs")
WAYBAR_DOCS = os.path.join(DOCS, "waybar")
UPOWER = "org.freedesktop.UPower"
UPOWER_PATH = "/org/freedesktop/UPower"
BAR_HEIGHT = 30
WIDTH, HEIGHT = 1920, 1080   # HEADLESS-1 in waylandenv's sway config


def reason():
    why = skip_reason(need_foot=False)
    if why:
        return why
    for tool in ("waybar", "grim", "tail"):
        if not shutil.which(tool):
            return f"{tool} is not installed (scripts/install-deps installs it)"
    return None


REASON = reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def code_blocks(markdown, language):
    return re.findall(r"```" + language + r"\n(.*?)```", markdown, re.S)


def test_the_documented_files_are_the_ones_shown():
    with open(os.path.join(DOCS, "waybar.md")) as f:
        md = f.read()
    for name, language in (("config", "json"), ("style.css", "css"), ("qsd.jq", "jq")):
        with open(os.path.join(WAYBAR_DOCS, name)) as f:
            assert f.read() in code_blocks(md, language), f"docs/waybar.md does not show docs/waybar/{name} as it is"


class Bar:
    """One Waybar with the documented bar at the top and the reference bar at the bottom."""

    def __init__(self, env, sway, modules_env):
        self.env = env
        self.sway = sway
        with open(os.path.join(WAYBAR_DOCS, "config")) as f:
            top = json.load(f)
        self.modules = [m for m in top["modules-right"] if m.startswith("custom/")]
        assert top["height"] == BAR_HEIGHT and top["position"] == "top"
        bottom = json.loads(json.dumps(top))
        bottom["position"] = "bottom"
        self.expected = {}
        for m in self.modules:
            path = os.path.join(env.dir, m.replace("/", "-") + ".expected")
            open(path, "w").close()
            self.expected[m] = path
            bottom[m]["exec"] = f"exec tail -n 1 -F {path} 2>/dev/null"
        self.config = os.path.join(env.dir, "waybar-config")
        with open(self.config, "w") as f:
            json.dump([top, bottom], f)
        self.exec = {m: top[m]["exec"] for m in self.modules}
        self.proc = env.spawn(["waybar", "-l", "debug", "-c", self.config, "-s", os.path.join(WAYBAR_DOCS, "style.css")],
                              "waybar", env=modules_env)

    def expect(self, module, line):
        with open(self.expected[module], "a") as f:
            f.write(json.dumps(line) + "\n")

    def grab(self, y):
        """The pixels of the bar at row y, as RGB bytes (grim's PPM)."""
        e = dict(self.env.env)
        e["WAYLAND_DISPLAY"] = self.sway.socket
        out = subprocess.run(["grim", "-t", "ppm", "-g", f"0,{y} {WIDTH}x{BAR_HEIGHT}", "-"], env=e,
                             capture_output=True, timeout=20, check=True).stdout
        # P6\n<w> <h>\n<max>\n<data>
        header = out.split(b"\n", 3)
        assert header[0] == b"P6" and header[1] == f"{WIDTH} {BAR_HEIGHT}".encode(), header[:3]
        return header[3]

    def shows_expected(self, before):
        """The top bar's pixels once it is drawn, has text, differs from `before` and equals the
        bottom one; else None."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"waybar exited with {self.proc.returncode}: {self.log()}")
        top = self.grab(0)
        if top == before or not colour(top, BACKGROUND) or not any_but(top, BACKGROUND):
            return None
        return top if top == self.grab(HEIGHT - BAR_HEIGHT) else None

    def wait_shows_expected(self, what, before=None):
        rgb = wait_until(lambda: self.shows_expected(before), 30, interval=0.1, what=f"the bar to show {what}")
        # Not a moment where both bars happened to agree on the way: it stays so.
        assert self.grab(0) == rgb == self.grab(HEIGHT - BAR_HEIGHT)
        return rgb

    def log(self):
        with open(os.path.join(self.env.dir, "waybar.log")) as f:
            return f.read()[-3000:]


BACKGROUND = "#2e3440"   # window#waybar in docs/waybar/style.css


def pixels(rgb):
    return {rgb[i:i + 3] for i in range(0, len(rgb), 3)}


def colour(rgb, hex_colour):
    return bytes.fromhex(hex_colour.lstrip("#")) in pixels(rgb)


def any_but(rgb, hex_colour):
    return bool(pixels(rgb) - {bytes.fromhex(hex_colour.lstrip("#"))})


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def descendants(pid):
    out = []
    for c in children(pid):
        out += [c] + descendants(c)
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def first_line_of(command, e):
    """What a module's command prints first, run the way Waybar runs it."""
    p = subprocess.Popen(["sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=e, start_new_session=True)
    try:
        line = p.stdout.readline()
        assert line, p.stderr.read()
        return json.loads(line)
    finally:
        p.stdout.close()   # qsctl sees its reader go, then the shell ends
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)
            raise


def test_the_documented_bar_shows_the_state_and_follows_it(env):
    import dbus  # noqa: only under /usr/bin/python3

    from nmmock import AP, NmMock
    from pwtest import PipeWire

    # The services: a discharging battery, a Wi-Fi network, a sound card.
    env.start_mock("upower", {"OnBattery": True, "DaemonVersion": "0.99.20"}, name=UPOWER)
    upower = dbus.Interface(env.dbus().get_object(UPOWER, UPOWER_PATH), "org.freedesktop.DBus.Mock")
    upower.SetupDisplayDevice(2, 2, 87.5, 43.7, 50.0, 12.3, 7200, 0, True, "battery-good-symbolic", 3)
    nm = NmMock(env)
    wlan = nm.add_wifi()
    ap = nm.add_ap(wlan, "ap_home", "HomeNet", "00:11:22:33:44:55", strength=82)
    nm.activate(wlan, nm.add_profile(wlan, "conn_home", "HomeNet"), ap, "Active_home")
    pw = PipeWire(env)
    sink = pw.add_null("qsd_test_sink", description="Test Speakers")
    pw.run(["wpctl", "set-default", str(sink)])
    pw.run(["wpctl", "set-volume", str(sink), "0.4"])

    env.start_qsd(backends=["upower", "nm", "pipewire"])   # at $XDG_RUNTIME_DIR/qsd/qsd.sock, the default
    c = env.client()
    sub = c.subscribe(["/daemon/backends", "/audio/defaultAudioSink"])
    c.wait_for(lambda: [b.get("state") for b in c.mirror(sub)["daemon"]["backends"].values()] == ["running"] * 3,
               30, what="every backend running")

    # The modules find qsd.jq where docs/waybar.md puts it, and qsctl on the PATH.
    config_dir = os.path.join(env.env["HOME"], ".config", "waybar")
    os.makedirs(config_dir)
    shutil.copy(os.path.join(WAYBAR_DOCS, "qsd.jq"), config_dir)
    modules_env = dict(env.env)
    modules_env["PATH"] = os.path.dirname(QSCTL) + ":" + modules_env["PATH"]

    expected = {
        "custom/battery": {"text": "88%", "percentage": 88, "tooltip": "120 min left", "class": "normal"},
        "custom/volume": {"text": "40%", "percentage": 40, "tooltip": "Test Speakers", "class": "unmuted"},
        "custom/network": {"text": "HomeNet 82%", "percentage": 82, "class": "wifi", "tooltip": "wlan0: HomeNet"},
    }
    sway = Sway(env).start()
    modules_env["WAYLAND_DISPLAY"] = sway.socket
    bar = Bar(env, sway, modules_env)
    assert sorted(bar.modules) == sorted(expected)
    # Each module's own command, as Waybar runs it, prints exactly the object the module reads.
    for m, line in expected.items():
        assert first_line_of(bar.exec[m], modules_env) == line, m
        bar.expect(m, line)
    first = bar.wait_shows_expected("the first values")
    assert not colour(first, "#bf616a")

    # Every module follows its service.
    upower.SetupDisplayDevice(2, 2, 12.0, 6.0, 50.0, 12.3, 900, 0, True, "battery-caution-symbolic", 3)
    pw.run(["wpctl", "set-mute", str(sink), "1"])
    nm.iface(ap).UpdateProperties(AP, {"Strength": dbus.Byte(45)})
    bar.expect("custom/battery", {"text": "12%", "percentage": 12, "tooltip": "15 min left", "class": "critical"})
    bar.expect("custom/volume", {"text": "muted", "percentage": 40, "tooltip": "Test Speakers", "class": "muted"})
    bar.expect("custom/network", {"text": "HomeNet 45%", "percentage": 45, "class": "wifi", "tooltip": "wlan0: HomeNet"})
    rgb = bar.wait_shows_expected("the changed values", before=first)
    assert colour(rgb, "#bf616a"), "the critical battery's colour"
    assert colour(rgb, "#4c566a"), "the muted volume's colour"

    # Waybar goes away (killed, as a crash or `pkill waybar` before a restart): so does every
    # qsctl it started.
    started = [p for p in descendants(bar.proc.pid) if cmdline(p)[:1] == [QSCTL.encode()] or
               os.path.basename(cmdline(p)[0] if cmdline(p) else b"") == b"qsctl"]
    assert len(started) == 3, [cmdline(p) for p in descendants(bar.proc.pid)]
    bar.proc.kill()
    bar.proc.wait(10)
    try:
        wait_until(lambda: not any(alive(p) for p in started), 10, what="every module's qsctl to end with Waybar")
    finally:
        for p in started:
            if alive(p):
                os.kill(p, signal.SIGKILL)


def test_the_battery_module_hides_on_a_machine_without_a_battery(env):
    """UPower has a display device on every machine; on one without a battery it is not present
    (type unknown, percentage 0). The documented module showed a red "0%" there. It hides, as it
    does while UPower is not on the bus."""
    env.start_mock("upower", {"DaemonVersion": "0.99.20"}, name=UPOWER)
    env.start_qsd(backends=["upower"])
    c = env.client()
    sub = c.subscribe(["/power/displayDevice"])
    c.wait_value(sub, "/power/displayDevice/isPresent", False, timeout=30)
    assert c.value(sub, "/power/displayDevice/percentage") == 0
    config_dir = os.path.join(env.env["HOME"], ".config", "waybar")
    os.makedirs(config_dir)
    shutil.copy(os.path.join(WAYBAR_DOCS, "qsd.jq"), config_dir)
    modules_env = dict(env.env, PATH=os.path.dirname(QSCTL) + ":" + env.env["PATH"])
    with open(os.path.join(WAYBAR_DOCS, "config")) as f:
        command = json.load(f)["custom/battery"]["exec"]
    assert first_line_of(command, modules_env) == {"text": ""}
