"""Changes the services run_services.py started, for the QML tests (QsdDaemon.drive(action,
args)). It finds them through the environment run_services.py set. Prints what an action
reads; exits 0 on success."""

import json
import os
import re
import signal
import sys

import dbus

sys.path.insert(0, os.environ.get("QSD_INTEGRATION_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "..", "..", "..", "tests", "integration")))

NM = "org.freedesktop.NetworkManager"
DEV = NM + ".Device"
UP = "org.freedesktop.UPower"
UP_PATH = "/org/freedesktop/UPower"
PPD = ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles")
MOCK = "org.freedesktop.DBus.Mock"


def bus():
    return dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])


def mock(name, path):
    return dbus.Interface(bus().get_object(name, path), MOCK)


def nm_signal(sig):
    os.kill(int(os.environ["QSD_QML_NM_PID"]), sig)


def calls(name, path, method):
    return len(mock(name, path).GetMethodCalls(method))


def connection_failed(reason):
    """The device fails with an NM state reason, then its active connection goes because the
    device disconnected: qsd's (and Quickshell's) rule for network.connectionFailed."""
    wlan, active = os.environ["QSD_QML_WLAN_PATH"], os.environ["QSD_QML_WLAN_ACTIVE"]
    mock(NM, wlan).EmitSignal(DEV, "StateChanged", "uuu", [dbus.UInt32(120), dbus.UInt32(50), dbus.UInt32(int(reason))])
    mock(NM, active).EmitSignal(NM + ".Connection.Active", "StateChanged", "uu", [dbus.UInt32(4), dbus.UInt32(3)])


def battery(action):
    up = mock(UP, UP_PATH)
    if action == "charge":
        up.SetDeviceProperties(UP_PATH + "/devices/BAT0",
                               {"Percentage": dbus.Double(42.0), "State": dbus.UInt32(1, variant_level=1)})
    elif action == "unplug":
        up.RemoveObject(UP_PATH + "/devices/BAT0")
        up.EmitSignal(UP, "DeviceRemoved", "o", [dbus.ObjectPath(UP_PATH + "/devices/BAT0")])
    elif action == "plug":
        up.AddDischargingBattery("BAT0", "Mock Battery", 50.0, 3600)


def RunningPipeWire():
    """pwtest's tools (pw-dump, wpctl) on the PipeWire run_services.py started (imported here:
    pwtest brings pytest, which the other actions do not need)."""
    from pwtest import PipeWire

    class Running(PipeWire):
        def __init__(self):  # noqa: super().__init__ would start another PipeWire
            self.penv = dict(os.environ)

    return Running()


def pw_volume(name):
    """The node's volume and mute as wpctl reads them: "0.25 muted"."""
    pw = RunningPipeWire()
    volume, muted = pw.wpctl_volume(pw.node_id(name))
    print(f"{volume:.2f} {'muted' if muted else 'unmuted'}")


def pw_set_volume(name, volume):
    pw = RunningPipeWire()
    pw.run(["wpctl", "set-volume", str(pw.node_id(name)), volume])


def pw_default_sink():
    """node.name of the default sink, as wpctl inspects it."""
    out = RunningPipeWire().run(["wpctl", "inspect", "@DEFAULT_AUDIO_SINK@"]).stdout
    print(re.search(r'node\.name = "([^"]*)"', out).group(1))


def pw_meters():
    """How many level meters (qsd's capture streams, node.name qsd.peaks) PipeWire has."""
    print(len([o for o in RunningPipeWire().dump() if o.get("type") == "PipeWire:Interface:Node"
               and (o.get("info") or {}).get("props", {}).get("node.name") == "qsd.peaks"]))


def tray_calls(service):
    """The calls and signals a tray item (bar_tray_items.py) recorded, as JSON."""
    session = dbus.bus.BusConnection(os.environ["DBUS_SESSION_BUS_ADDRESS"])
    control = dbus.Interface(session.get_object(service, "/StatusNotifierItem"), "org.qsdtest.Control")
    print(json.dumps(json.loads(str(control.Calls()))))


def bt_ask(device, passkey):
    """The bluez5 mock asks qsd's agent to confirm a passkey, as bluetoothd does; prints the
    token of the call (bt-answer reads its outcome)."""
    from bar_bluetooth_agent import qsd_name
    from bluezmock import AGENT_PATH, BLUEZ, BLUEZ_MOCK
    b = bus()
    mock = dbus.Interface(b.get_object(BLUEZ, "/"), BLUEZ_MOCK)
    print(int(mock.CallAgent(qsd_name(b), dbus.ObjectPath(AGENT_PATH), "RequestConfirmation", "ou",
                             dbus.Array([dbus.ObjectPath(device), dbus.UInt32(int(passkey))], signature="v"))))


def bt_answer(token):
    """What qsd answered BlueZ: "ok", "error <name>", or "pending"."""
    from bluezmock import BLUEZ, BLUEZ_MOCK
    result = dbus.Interface(bus().get_object(BLUEZ, "/"), BLUEZ_MOCK).AgentResult(dbus.UInt32(int(token)))
    print(" ".join(str(x) for x in result[:2]))


ACTIONS = {
    # NetworkManager frozen (SIGSTOP): its answers wait, so a new qsd's nm backend stays "starting".
    "nm-freeze": lambda: nm_signal(signal.SIGSTOP),
    "nm-thaw": lambda: nm_signal(signal.SIGCONT),
    "nm-stop": lambda: nm_signal(signal.SIGTERM),
    "nm-scan-requests": lambda: print(calls(NM, os.environ["QSD_QML_WLAN_PATH"], "RequestScan")),
    "nm-connection-failed": connection_failed,
    "ppd-forget-holds": lambda: bus().get_object(*PPD).ForgetHolds(dbus_interface=PPD[0]),
    "ppd-hold-calls": lambda: print(calls(*PPD, "HoldProfile")),
    "ppd-release-calls": lambda: print(calls(*PPD, "ReleaseProfile")),
    "battery": battery,
    "pw-volume": pw_volume,
    "pw-set-volume": pw_set_volume,
    "pw-default-sink": pw_default_sink,
    "pw-meters": pw_meters,
    "tray-calls": tray_calls,
    "bt-forget-agents": lambda: bus().get_object("org.bluez", "/org/bluez").ForgetAgents(dbus_interface="org.qsd.Test"),
    "bt-ask": bt_ask,
    "bt-answer": bt_answer,
    "bt-discovery-starts": lambda: print(calls("org.bluez", "/org/bluez/hci0", "StartDiscovery")),
    "bt-discovery-stops": lambda: print(calls("org.bluez", "/org/bluez/hci0", "StopDiscovery")),
}


def main():
    action, args = sys.argv[1], sys.argv[2:]
    ACTIONS[action](*args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
