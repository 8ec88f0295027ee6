"""Runs a Qt Quick test file, or renders the example bar, against a real qsd with backends and
the services they read, all started here on private D-Bus buses (tests/integration/qsdtest.py):

  run_services.py test tst_FILE.qml     the test runner (qsd-qml-tests) on the file
  run_services.py render BAR.qml OUT.png  the example bar rendered offscreen (qsd-qml-render-bar)

Each service below feeds one backend; a service runs when this qsd has its backend
($QSD_QML_BACKENDS, from the build), and qsd is started with exactly those backends. A domain is
added to the tests and the picture by adding its service here.

The QML side starts and kills qsd itself (QsdDaemon in the runner, with QSD_QML_DAEMON_ARGS) and
changes the services through driver.py (QsdDaemon.drive(action, args)), which reads what it
needs to find them from the environment set here."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("QSD_INTEGRATION_DIR", os.path.join(HERE, "..", "..", "..", "tests", "integration")))
from qsdtest import PY, Env  # noqa: E402
from nmmock import AP, SEC_NONE, NmMock  # noqa: E402

UP = "org.freedesktop.UPower"
UP_PATH = "/org/freedesktop/UPower"
PPD = ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles")
MOCK = "org.freedesktop.DBus.Mock"

# A real power-profiles-daemon drops the holds of a client that leaves the bus; the template
# keeps them. ForgetHolds does what the daemon would do when qsd is killed.
FORGET_HOLDS = """
self.holds.clear()
self.props['net.hadess.PowerProfiles']['ActiveProfileHolds'] = dbus.Array([], signature='a{sv}')
"""


def networkmanager(env):
    """wlan0 connected to HomeNet (two access points) with three more networks in range; eth0
    with a link but no connection."""
    import dbus
    m = NmMock(env)
    wlan = m.add_wifi("wlan0")
    home_ap = m.add_ap(wlan, "ap_home", "HomeNet", "00:11:22:33:44:55", freq=5180, rate=866000, strength=78)
    m.add_ap(wlan, "ap_home2", "HomeNet", "00:11:22:33:44:56", freq=2437, strength=35)
    m.add_ap(wlan, "ap_cafe", "CafeOpen", "00:11:22:33:44:66", freq=2412, strength=54, security=SEC_NONE)
    nb = m.add_ap(wlan, "ap_nb", "Neighbour", "00:11:22:33:44:77", freq=5200, strength=41)
    far = m.add_ap(wlan, "ap_far", "Office-Guest", "00:11:22:33:44:88", freq=2462, strength=12)
    for ap in (nb, far):   # WPA2-PSK with CCMP, as real access points announce it
        m.iface(ap).UpdateProperties(AP, {"WpaFlags": dbus.UInt32(0), "RsnFlags": dbus.UInt32(0x188)})
    home = m.add_profile(wlan, "conn_home", "HomeNet")
    active = m.activate(wlan, home, home_ap, "Active_home")
    m.add_wired("eth0", speed=1000)
    return {"QSD_QML_NM_PID": str(m.proc.pid), "QSD_QML_WLAN_PATH": str(wlan), "QSD_QML_WLAN_ACTIVE": str(active)}


def upower(env):
    """A discharging battery at 73.5 % with two hours left; power-profiles-daemon (balanced)."""
    import dbus
    env.start_mock("upower", {"OnBattery": True, "DaemonVersion": "0.99.20", "GetCriticalAction": "PowerOff"}, name=UP)
    up = dbus.Interface(env.dbus().get_object(UP, UP_PATH), MOCK)
    up.AddDischargingBattery("BAT0", "Mock Battery", 73.5, 7200)
    up.SetupDisplayDevice(2, 2, 73.5, 36.7, 50.0, 12.3, 7200, 0, True, "battery-good-symbolic", 3)
    env.start_mock("power_profiles_daemon", None, name=PPD[0])
    dbus.Interface(env.dbus().get_object(*PPD), MOCK).AddMethod(PPD[0], "ForgetHolds", "", "", FORGET_HOLDS)
    return {}


def pipewire(env):
    """PipeWire and WirePlumber on the private session bus, with two null sinks (the first the
    default, at 62 %) and a null source."""
    import shutil
    import time
    for tool in ("pipewire", "wireplumber", "pw-cli", "pw-metadata", "wpctl"):
        if not shutil.which(tool):
            raise RuntimeError(f"{tool} is missing (scripts/install-deps installs it)")
    env.spawn(["pipewire"], "pipewire")
    env.spawn(["wireplumber"], "wireplumber")

    def run(*args):
        return subprocess.run(list(args), env=env.env, capture_output=True, text=True, timeout=30)

    deadline = time.monotonic() + 30
    while 'Found "default"' not in run("pw-metadata", "-n", "default", "0").stdout:
        if time.monotonic() > deadline:
            raise RuntimeError("WirePlumber did not create the default metadata")
        time.sleep(0.05)
    for name, description, cls, position in (("bar_speakers", "Speakers", "Audio/Sink", "[FL FR]"),
                                             ("bar_headset", "Headset", "Audio/Sink", "[FL FR]"),
                                             ("bar_mic", "Microphone", "Audio/Source/Virtual", "[MONO]")):
        run("pw-cli", "create-node", "adapter",
            f'{{ factory.name=support.null-audio-sink node.name={name} node.description="{description}" '
            f'media.class={cls} object.linger=true audio.position={position} }}')
    run("pw-metadata", "0", "default.configured.audio.sink", '{"name":"bar_speakers"}', "Spa:String:JSON")
    deadline = time.monotonic() + 30
    while "bar_speakers" not in run("wpctl", "inspect", "@DEFAULT_AUDIO_SINK@").stdout:
        if time.monotonic() > deadline:
            raise RuntimeError("the default sink did not become bar_speakers")
        time.sleep(0.05)
    run("wpctl", "set-volume", "@DEFAULT_AUDIO_SINK@", "0.62")
    return {}


# backend id -> the service that feeds it. The tray joins here once its backend is in the tree
# (a StatusNotifierItem with a DBusMenu on the session bus, as its own tests start them).
SERVICES = {
    "nm": networkmanager,
    "upower": upower,
    "pipewire": pipewire,
}


# backend id -> the example bar's parts its domain feeds (bar.qml, visibleSections()).
PARTS = {
    "nm": ["network"],
    "upower": ["battery", "profile"],
    "pipewire": ["volume"],
    "tray": ["tray"],
}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("test", "render"):
        print(__doc__, file=sys.stderr)
        return 2
    available = [b for b in os.environ.get("QSD_QML_BACKENDS", "nm,upower").split(",") if b]
    env = Env(buses=True)
    try:
        run_env = dict(env.env)
        backends = []
        for backend, service in SERVICES.items():
            if backend in available:
                run_env.update(service(env))
                backends.append(backend)
        run_env.update(
            QT_QPA_PLATFORM="offscreen",
            QSD_QML_BACKENDS=",".join(backends),
            QSD_QML_DAEMON_ARGS="--backends=" + ",".join(backends),
            QSD_QML_DRIVER=f"{PY} {os.path.join(HERE, 'driver.py')}",
        )
        if sys.argv[1] == "test":
            cmd = [os.environ["QSD_QML_TESTS_BIN"], "-input", sys.argv[2]]
        else:
            # The bar's parts each fed service must show.
            parts = [p for b in backends for p in PARTS.get(b, [])]
            cmd = [os.environ["QSD_QML_RENDER_BIN"], sys.argv[2], sys.argv[3], "--expect", ",".join(parts)]
        result = subprocess.run(cmd, env=run_env, timeout=600)
        if result.returncode != 0:
            for name in sorted(os.listdir(env.dir)):
                if name.endswith(".log") and name.startswith("mock-"):
                    print(f"--- {name}\n" + open(os.path.join(env.dir, name)).read()[-3000:], file=sys.stderr)
        return result.returncode
    finally:
        env.close()


if __name__ == "__main__":
    sys.exit(main())
