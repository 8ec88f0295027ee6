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
AGENT_MANAGER = "/org/freedesktop/NetworkManager/AgentManager"
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


def pw_sink_add(name):
    """A null sink that stays after the command (object.linger)."""
    RunningPipeWire().add_null(name)


def pw_node_destroy(name):
    pw = RunningPipeWire()
    pw.run(["pw-cli", "destroy", str(pw.node_id(name))])


def pw_meters():
    """How many level meters (qsd's capture streams, node.name qsd.peaks) PipeWire has."""
    print(len([o for o in RunningPipeWire().dump() if o.get("type") == "PipeWire:Interface:Node"
               and (o.get("info") or {}).get("props", {}).get("node.name") == "qsd.peaks"]))


def tray_calls(service):
    """The calls and signals a tray item (bar_tray_items.py) recorded, as JSON."""
    session = dbus.bus.BusConnection(os.environ["DBUS_SESSION_BUS_ADDRESS"])
    control = dbus.Interface(session.get_object(service, "/StatusNotifierItem"), "org.qsdtest.Control")
    print(json.dumps(json.loads(str(control.Calls()))))


def qsd_agent():
    """qsd's unique name on the system bus (its secret agent is there)."""
    b = bus()
    daemon = dbus.Interface(b.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
    for name in daemon.ListNames():
        if not name.startswith(":"):
            continue
        try:
            with open(f"/proc/{daemon.GetConnectionUnixProcessID(name)}/comm") as f:
                if f.read().strip() == "qsd":
                    return str(name)
        except (dbus.DBusException, OSError):
            pass
    return None


def qsd_requests():
    """/network/secretRequests as qsd serves it now ({} when it cannot be read)."""
    import socket
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(os.environ["QSD_SOCKET"])
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"tree.get","params":{"path":"/network/secretRequests"}}\n')
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data).get("result", {}).get("value", {})
    except (OSError, KeyError, ValueError):
        return {}


def wifi_profile(ssid):
    """A saved Wi-Fi profile of `ssid` as NetworkManager passes it to GetSecrets (no secrets)."""
    return {
        "connection": {"id": ssid, "uuid": "5e6f7a8b-0000-4000-8000-0000000000b1", "type": "802-11-wireless"},
        "802-11-wireless": {"ssid": dbus.ByteArray(ssid.encode()), "mode": "infrastructure"},
        "802-11-wireless-security": {"key-mgmt": "wpa-psk", "psk-flags": dbus.UInt32(1)},
    }


def nm_ask_secrets(ssid, flags="1"):
    """NetworkManager asks qsd's agent for the password of a saved Wi-Fi profile of `ssid`, as when
    it activates one whose password is missing. Asked again until a client's claim turns it into
    a prompt (before that, qsd answers NoSecrets at once); prints the token for nm-agent-reply."""
    import time
    am = mock(NM, AGENT_MANAGER)
    connection = wifi_profile(ssid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        agent = qsd_agent()
        if agent and calls(NM, AGENT_MANAGER, "RegisterWithCapabilities"):
            token = am.AgentGetSecrets(agent, "GetSecrets", "a{sa{sv}}osasu", connection,
                                       dbus.ObjectPath("/org/freedesktop/NetworkManager/Settings/bar1"),
                                       "802-11-wireless-security", dbus.Array([], signature="s"), dbus.UInt32(int(flags)))
            while am.AgentReply(token)[0] == "pending" and time.monotonic() < deadline:
                if any(r.get("ssid") == ssid for r in qsd_requests().values()):
                    print(int(token))
                    return
                time.sleep(0.02)
        time.sleep(0.05)
    sys.exit("qsd did not prompt for the secrets")


def nm_ask_secrets_once(ssid):
    """As nm-ask-secrets, once, without waiting for a prompt: prints qsd's answer when it comes
    within 10 s (nm-agent-reply's JSON), else "pending"."""
    import time
    am = mock(NM, AGENT_MANAGER)
    token = am.AgentGetSecrets(qsd_agent(), "GetSecrets", "a{sa{sv}}osasu", wifi_profile(ssid),
                               dbus.ObjectPath("/org/freedesktop/NetworkManager/Settings/bar1"),
                               "802-11-wireless-security", dbus.Array([], signature="s"), dbus.UInt32(1))
    deadline = time.monotonic() + 10
    while am.AgentReply(token)[0] == "pending":
        if time.monotonic() > deadline:
            print("pending")
            return
        time.sleep(0.02)
    nm_agent_reply(token)


def nm_agent_reply(token):
    """qsd's answer to a request of nm-ask-secrets: {"state", "error", "secrets"} as JSON."""
    from nmmock import plain
    state, error, secrets = mock(NM, AGENT_MANAGER).AgentReply(dbus.UInt32(int(token)))
    print(json.dumps({"state": str(state), "error": str(error), "secrets": plain(secrets)}))
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


def notify_value(summary, tag, value):
    """notify-send as a volume script sends it: a stack tag and a value; prints the id."""
    import subprocess
    out = subprocess.run(["notify-send", "-p", "-h", f"string:x-dunst-stack-tag:{tag}", "-h", f"int:value:{value}",
                          summary, f"{value} %"], capture_output=True, text=True, timeout=20, check=True)
    print(out.stdout.strip())


ACTIONS = {
    # NetworkManager frozen (SIGSTOP): its answers wait, so a new qsd's nm backend stays "starting".
    "nm-freeze": lambda: nm_signal(signal.SIGSTOP),
    "nm-thaw": lambda: nm_signal(signal.SIGCONT),
    "nm-stop": lambda: nm_signal(signal.SIGTERM),
    "nm-scan-requests": lambda: print(calls(NM, os.environ["QSD_QML_WLAN_PATH"], "RequestScan")),
    "nm-connection-failed": connection_failed,
    "nm-ask-secrets": nm_ask_secrets,
    "nm-ask-secrets-once": nm_ask_secrets_once,
    "nm-agent-reply": nm_agent_reply,
    "nm-agent-registrations": lambda: print(calls(NM, AGENT_MANAGER, "RegisterWithCapabilities")),
    "ppd-forget-holds": lambda: bus().get_object(*PPD).ForgetHolds(dbus_interface=PPD[0]),
    "ppd-hold-calls": lambda: print(calls(*PPD, "HoldProfile")),
    "ppd-release-calls": lambda: print(calls(*PPD, "ReleaseProfile")),
    "battery": battery,
    "pw-volume": pw_volume,
    "pw-set-volume": pw_set_volume,
    "pw-default-sink": pw_default_sink,
    "pw-meters": pw_meters,
    "pw-sink-add": pw_sink_add,
    "pw-node-destroy": pw_node_destroy,
    "tray-calls": tray_calls,
    "bt-forget-agents": lambda: bus().get_object("org.bluez", "/org/bluez").ForgetAgents(dbus_interface="org.qsd.Test"),
    "bt-ask": bt_ask,
    "bt-answer": bt_answer,
    "bt-discovery-starts": lambda: print(calls("org.bluez", "/org/bluez/hci0", "StartDiscovery")),
    "bt-discovery-stops": lambda: print(calls("org.bluez", "/org/bluez/hci0", "StopDiscovery")),
    "notify-value": notify_value,
}


def main():
    action, args = sys.argv[1], sys.argv[2:]
    ACTIONS[action](*args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
