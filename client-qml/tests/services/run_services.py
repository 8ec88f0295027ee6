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
from qsdtest import PY, Env, die_with_harness  # noqa: E402
from nmmock import AP, SEC_NONE, NmMock  # noqa: E402

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
    with a link but no connection; a VPN (connected) and a WireGuard profile; an AgentManager."""
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
    # NetworkManager's AgentManager, for qsd's secret agent; a VPN (connected, over no device
    # of its own) and a WireGuard profile for the menu's VPN section.
    m.add_agent_manager()
    vpn = m.add_connection({"connection": {"id": "Work VPN", "uuid": "5e6f7a8b-0000-4000-8000-0000000000a1", "type": "vpn"},
                            "vpn": {"service-type": "org.freedesktop.NetworkManager.openvpn",
                                    "data": dbus.Dictionary({"remote": "vpn.example.com"}, signature="ss")}})
    m.add_connection({"connection": {"id": "Office WireGuard", "uuid": "5e6f7a8b-0000-4000-8000-0000000000a2",
                                     "type": "wireguard", "interface-name": "wg0"}})
    m.mock.AddActiveConnection(dbus.Array([], signature="s"), vpn, "/", "Active_vpn", dbus.UInt32(2))
    return {"QSD_QML_NM_PID": str(m.proc.pid), "QSD_QML_WLAN_PATH": str(wlan), "QSD_QML_WLAN_ACTIVE": str(active)}


def upower(env):
    """A discharging battery at 73.5 % with two hours left; power-profiles-daemon (balanced)."""
    import dbus
    import upmock
    upmock.start_upower(env)
    upmock.add_battery(env, "BAT0", 73.5, 7200)
    upmock.setup_display(env, 73.5, 2)
    upmock.start_hadess(env)
    dbus.Interface(upmock.ppd_obj(env), MOCK).AddMethod(PPD[0], "ForgetHolds", "", "", FORGET_HOLDS)
    return {}


def pipewire(env):
    """PipeWire and WirePlumber on the private session bus (tests/integration/pwtest.py), with two
    null sinks (the first the default, at 62 %), a null source, and a stream playing a tone at
    half scale to the default sink, so its level meter reads about 0.5."""
    import time
    from pwtest import PipeWire, write_tone
    pw = PipeWire(env)
    pw.add_null("bar_speakers", description="Speakers")
    pw.add_null("bar_headset", description="Headset")
    pw.add_null("bar_mic", media_class="Audio/Source/Virtual", positions="MONO", description="Microphone")
    pw.run(["pw-metadata", "0", "default.configured.audio.sink", '{"name":"bar_speakers"}', "Spa:String:JSON"])
    deadline = time.monotonic() + 30
    while "bar_speakers" not in pw.run(["wpctl", "inspect", "@DEFAULT_AUDIO_SINK@"], check=False).stdout:
        if time.monotonic() > deadline:
            raise RuntimeError("the default sink did not become bar_speakers")
        time.sleep(0.05)
    pw.run(["wpctl", "set-volume", "@DEFAULT_AUDIO_SINK@", "0.62"])
    write_tone(pw.tone, seconds=300)   # longer than any test here
    pw.play("bar_music", app='"Music Player"')
    return {}


def tray(env):
    """Three StatusNotifierItems (bar_tray_items.py): "Notes" with a theme icon from its own
    icon theme (IconThemePath) and a DBusMenu with a submenu, a checkbox and a radio group;
    "Chat" with only a pixmap; "Sync", passive (the bar hides it). They register with the watcher
    whenever its name gets an owner, as libappindicator items do, so each qsd started later
    (again after kill -9) lists them."""
    import json
    import icons
    from qsdtest import wait_until
    theme = os.path.join(env.dir, "bar-icons")
    for size in (16, 32, 64):
        path = os.path.join(theme, "hicolor", f"{size}x{size}", "apps", "qsd-bar-notes.png")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(icons.png("notes", size))
    # The icon-name of the menu's "Disabled" entry.
    path = os.path.join(theme, "hicolor", "32x32", "actions", "qsd-test-menu-icon.png")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(icons.png("pencil", 32))
    items = [
        {"register": "name", "name": "org.qsdtest.BarNotes", "reregister": True, "menu": "demo", "props": {
            "Id": "notes", "Title": "Notes", "Status": "Active", "Category": "ApplicationStatus",
            "IconName": "qsd-bar-notes", "IconThemePath": theme,
            "ToolTip": {"title": "Notes", "description": "3 notes"}}},
        {"register": "name", "name": "org.qsdtest.BarChat", "reregister": True, "props": {
            "Id": "chat", "Title": "Chat", "Status": "Active", "Category": "Communications",
            "IconPixmap": [{"shape": "chat", "size": 64}, {"shape": "chat", "size": 22}]}},
        {"register": "name", "name": "org.qsdtest.BarSync", "reregister": True, "props": {
            "Id": "sync", "Title": "Sync", "Status": "Passive", "IconPixmap": [{"shape": "cloud", "size": 64}]}},
    ]
    # One process per item, as applications are; started together.
    procs = []
    for item in items:
        name = "tray-items-" + item["props"]["Id"]
        procs.append((name, env.spawn([PY, os.path.join(HERE, "bar_tray_items.py"), json.dumps([item])], name)))

    def ready():
        for name, p in procs:
            log = open(os.path.join(env.dir, name + ".log")).read()
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited with {p.returncode}: {log}")
            if "ready" not in log:
                return False
        return True

    # "ready": their first registration was answered (refused: no watcher yet).
    wait_until(ready, 30, what="the tray items")
    return {}


def mpris(env):
    """A media player (tests/integration/mpris_player.py) playing "Blue in Green" by Miles Davis,
    1:10 into its 5:37, with cover art from a file."""
    import json
    import icons
    from qsdtest import wait_until
    art = os.path.join(env.dir, "cover.png")
    with open(art, "wb") as f:
        f.write(icons.png("notes", 96))
    config = {"name": "org.mpris.MediaPlayer2.barplayer", "root": {"Identity": "Bar Player"},
              "player": {"PlaybackStatus": "Playing", "Position": 70000000},
              "metadata": {"mpris:trackid": "/track/1", "xesam:title": "Blue in Green",
                           "xesam:artist": ["Miles Davis"], "xesam:album": "Kind of Blue",
                           "mpris:length": 337000000, "mpris:artUrl": "file://" + art}}
    player = os.path.join(os.environ.get("QSD_INTEGRATION_DIR", os.path.join(HERE, "..", "..", "..", "tests", "integration")),
                          "mpris_player.py")
    p = env.spawn([PY, player, json.dumps(config)], "media-player")
    wait_until(lambda: p.poll() is None and "ready" in open(os.path.join(env.dir, "media-player.log")).read(), 30,
               what="the media player")
    return {}


def notifications(env):
    """An application that sends notifications whenever a server takes the name
    (bar_notifications.py): a closed reminder (history), a chat message with an avatar and an
    inline reply, a mail with actions and a ten-minute timeout, and a critical battery warning."""
    from qsdtest import wait_until
    name = "bar-notifications"
    p = env.spawn([PY, os.path.join(HERE, "bar_notifications.py"), os.path.join(env.dir, "bar-notification-icons")], name)

    def ready():
        log = open(os.path.join(env.dir, name + ".log")).read()
        if p.poll() is not None:
            raise RuntimeError(f"{name} exited with {p.returncode}: {log}")
        return "ready" in log

    wait_until(ready, 30, what="the notification sender")
    return {}


def bluetooth(env):
    """BlueZ (python-dbusmock's bluez5, tests/integration/bluezmock.py) with one adapter: a
    headset, connected, its battery at 80 %, and a mouse, both paired; a phone and a speaker
    nearby, not paired; device icons from Adwaita. For the picture, the phone asks qsd's agent
    to confirm a passkey as soon as qsd is BlueZ's agent (bar_bluetooth_agent.py)."""
    from bluezmock import DEVICE, Bluez
    from qsdtest import wait_until
    bz = Bluez(env, ["hci0"])
    # BlueZ forgets the agent of a client that leaves the bus; the template does not.
    bz.control("/org/bluez").AddMethod("org.qsd.Test", "ForgetAgents", "", "",
                                       "self.agent_paths = []; self.capabilities = {}; self.default_agent = None")
    devices = [("00:1B:66:A1:B2:C3", "WH-1000XM4", "audio-headset", True),
               ("D4:F5:13:22:41:07", "MX Master 3", "input-mouse", True),
               ("3C:28:6D:90:11:5E", "Pixel 8", "phone", False),
               ("74:5C:4B:0A:88:19", "JBL Flip 6", "audio-speakers", False)]
    paths = {}
    for address, name, icon, paired in devices:
        path = paths[name] = bz.add_device(address, name)
        if paired:
            bz.mock.PairDevice("hci0", address, 0)
        bz.update(path, DEVICE, {"Icon": icon})
    bz.update(paths["Pixel 8"], DEVICE, {"RSSI": -48})
    bz.update(paths["JBL Flip 6"], DEVICE, {"RSSI": -67})
    bz.mock.ConnectDevice("hci0", "00:1B:66:A1:B2:C3")
    bz.add_battery(paths["WH-1000XM4"], 80)
    out = {"QSD_ICON_THEME": "Adwaita", "QSD_RFKILL": os.path.join(env.dir, "no-rfkill")}
    if sys.argv[1] == "render":
        helper = env.spawn([PY, os.path.join(HERE, "bar_bluetooth_agent.py"), paths["Pixel 8"]], "bar-bluetooth-agent")
        log = os.path.join(env.dir, "bar-bluetooth-agent.log")
        wait_until(lambda: helper.poll() is None and "ready" in open(log).read(), 30, what="the agent helper")
        out["QSD_BLUETOOTH_AGENT_TIMEOUT_MS"] = "600000"   # the picture is taken long before
    return out


# backend id -> the service that feeds it.
SERVICES = {
    "nm": networkmanager,
    "upower": upower,
    "pipewire": pipewire,
    "tray": tray,
    "mpris": mpris,
    "notifications": notifications,
    "bluetooth": bluetooth,
}


# backend id -> the example bar's parts its domain feeds (bar.qml, visibleSections()).
PARTS = {
    "nm": ["network"],
    "upower": ["battery", "profile"],
    "pipewire": ["volume"],
    "tray": ["tray"],
    "mpris": ["media"],
    "notifications": ["notifications", "popups"],
    "bluetooth": ["bluetooth"],
}


# backend id -> what the bar's menus of its domain must show in the picture (qsd-qml-render-bar's
# --click and --menu-expect): texts, and #name for an item of that objectName.
MENUS = {
    "nm": [("--menu-expect", "wifi=HomeNet,CafeOpen,Neighbour,VPN,Office WireGuard,Work VPN,Password for Neighbour,"
                             "A password is needed,Cancel")],
    "upower": [("--menu-expect", "profile=Power saver,Balanced,Performance")],
    "pipewire": [("--menu-expect", "audio=Speakers,Headset,#volumeSlider,#mute,\u266a Music Player")],
    # The Options submenu opened: a checkbox and a radio group, and the entry the application
    # adds when it is about to be shown.
    "tray": [("--click", "tray=Options"),
             ("--menu-expect", "tray=Open,Options,Sync,Mode A,Mode B,Recent,Disabled,Quit,Ctrl+q,#checkmark,#radio,#trayMenuIcon")],
    "mpris": [("--menu-expect", "media=Bar Player,Blue in Green,Miles Davis,Kind of Blue,5:37,#seekBar,#mediaArt")],
    "notifications": [("--menu-expect", "notifications=Do not disturb,#dndSwitch,Calendar: Stand-up,Dismiss all,Clear history")],
    # The list of new devices opened (discovery runs), and the phone's passkey to confirm.
    "bluetooth": [("--click", "bluetooth=Pair new device"),
                  ("--menu-expect", "bluetooth=Bluetooth is on,WH-1000XM4,80%  connected,MX Master 3,Pair with Pixel 8?,"
                                    "123 456,Confirm,Reject,Pair new device,searching…,Pixel 8,JBL Flip 6")],
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
        try:
            for backend, service in SERVICES.items():
                if backend in available:
                    run_env.update(service(env))
                    backends.append(backend)
        except Exception:
            # A service that did not come up: its log says why (the traceback only says what
            # was waited for).
            print_logs(env)
            raise
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
            cmd += [arg for b in backends for flag in MENUS.get(b, []) for arg in flag]
        result = subprocess.run(die_with_harness(cmd), env=run_env, timeout=600)
        if result.returncode != 0:
            print_logs(env)
        return result.returncode
    finally:
        env.close()


def print_logs(env):
    """The end of each service's log, on stderr (ctest shows it with the failure)."""
    for name in sorted(os.listdir(env.dir)):
        if name.endswith(".log") and name.startswith(("mock-", "tray-items", "pipewire", "wireplumber", "pw-cat",
                                                       "bar-notifications")):
            print(f"--- {name}\n" + open(os.path.join(env.dir, name)).read()[-3000:], file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
