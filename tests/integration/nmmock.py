"""python-dbusmock's NetworkManager template, extended where it lacks what /network reads and
what the actions call (Device.Disconnect, Autoconnect, InterfaceFlags, Wired.Speed,
connectivity-check properties, Settings.Connection.ClearSecrets, device removal), and with an
AgentManager (add_agent_manager) through which a test plays NetworkManager towards a secret
agent."""

import dbus

NM = "org.freedesktop.NetworkManager"
P = "/org/freedesktop/NetworkManager"
MOCK = "org.freedesktop.DBus.Mock"
DEV = NM + ".Device"
WIRED = NM + ".Device.Wired"
WIFI = NM + ".Device.Wireless"
AP = NM + ".AccessPoint"
CONN = NM + ".Settings.Connection"
ACTIVE = NM + ".Connection.Active"
AGENT_MANAGER = P + "/AgentManager"
AGENT_MANAGER_IFACE = NM + ".AgentManager"
SECRET_AGENT = NM + ".SecretAgent"
SECRET_AGENT_PATH = P + "/SecretAgent"

# AP security argument of AddAccessPoint (the template derives Flags/WpaFlags/RsnFlags from it).
SEC_NONE = 0
SEC_PSK = 0x100

REMOVE_DEVICE = """
nm = objects['/org/freedesktop/NetworkManager']
devs = dbus.Array([], signature='o')
for d in nm.Get('org.freedesktop.NetworkManager', 'Devices'):
    if d != args[0]:
        devs.append(d)
nm.UpdateProperties('org.freedesktop.NetworkManager', {'Devices': devs})
nm.EmitSignal('org.freedesktop.NetworkManager', 'DeviceRemoved', 'o', [args[0]])
self.object_manager_emit_removed(args[0])
self.RemoveObject(args[0])
"""

DISCONNECT = """
self.Set('org.freedesktop.NetworkManager.Device', 'ActiveConnection', dbus.ObjectPath('/'))
self.Set('org.freedesktop.NetworkManager.Device', 'State', dbus.UInt32(30))
"""


# Calls a secret agent from the mock's own connection, as NetworkManager does (an agent answers
# only NetworkManager's unique name), without waiting: the answer is kept under a token for
# AgentReply. args[0] is the agent's bus name, args[1] the SecretAgent method, args[2] its
# signature, the rest its arguments. NetworkManager waits 120 s for an agent; a little longer here
# so that the agent's own timeout is what a test sees.
CALL_AGENT = """
if not hasattr(self, 'agent_replies'):
    self.agent_replies = {}
token = len(self.agent_replies) + 1
self.agent_replies[token] = ('pending', '', {})
def done(*result, token=token, replies=self.agent_replies):
    replies[token] = ('ok', '', result[0] if result else {})
def failed(e, token=token, replies=self.agent_replies):
    replies[token] = ('error', e.get_dbus_name(), {})
self.connection.call_async(args[0], '/org/freedesktop/NetworkManager/SecretAgent',
                           'org.freedesktop.NetworkManager.SecretAgent', args[1], args[2], list(args[3:]),
                           done, failed, timeout=130)
ret = dbus.UInt32(token)
"""

AGENT_REPLY = """
state, error, secrets = getattr(self, 'agent_replies', {}).get(int(args[0]), ('unknown', '', {}))
ret = (state, error, dbus.Dictionary(secrets, signature='sa{sv}'))
"""


class NmMock:
    def __init__(self, env, start=True):
        self.env = env
        self.proc = None
        if start:
            self.start()

    def start(self, **params):
        p = {"Version": "1.42.4"}
        p.update(params)
        self.proc = self.env.start_mock("networkmanager", p, name=NM)
        self.bus = self.env.dbus()
        self.mock = self.iface("/org/freedesktop")
        self.iface(P).AddProperty(NM, "ConnectivityCheckAvailable", True)
        self.iface(P).AddProperty(NM, "ConnectivityCheckEnabled", True)
        self.mock.AddMethod(MOCK, "RemoveDevice", "s", "", REMOVE_DEVICE)
        return self

    def kill(self):
        self.proc.terminate()
        self.proc.wait(5)
        self.bus.close()

    def iface(self, path, iface=MOCK):
        return dbus.Interface(self.bus.get_object(NM, path), iface)

    def props(self, path):
        return dbus.Interface(self.bus.get_object(NM, path), "org.freedesktop.DBus.Properties")

    def _extend_device(self, path):
        dev = self.iface(path)
        dev.AddProperty(DEV, "Autoconnect", True)
        dev.AddProperty(DEV, "HwAddress", "")
        dev.AddMethod(DEV, "Disconnect", "", "", DISCONNECT)
        dev.AddMethod(DEV, "Reapply", "a{sa{sv}}tu", "", "")

    def add_wifi(self, name="wlan0", state=30, iface=None, address="11:22:33:44:55:66"):
        """A Wi-Fi device at Devices/<name>, with interface name `iface` (default: name)."""
        path = self.mock.AddWiFiDevice(name, iface or name, state)
        self._extend_device(path)
        self.iface(path).UpdateProperties(DEV, {"HwAddress": address})
        return path

    def add_wired(self, name="eth0", state=30, carrier=True, speed=1000):
        path = self.mock.AddEthernetDevice(name, name, state)
        self._extend_device(path)
        self.iface(path).AddProperty(DEV, "InterfaceFlags", dbus.UInt32(0x10003 if carrier else 0x3))
        self.iface(path).UpdateProperties(WIRED, {"Speed": dbus.UInt32(speed), "Carrier": carrier})
        self.iface(path).UpdateProperties(DEV, {"HwAddress": "78:DD:08:D2:3D:43"})
        return path

    def set_carrier(self, path, carrier):
        self.iface(path).UpdateProperties(DEV, {"InterfaceFlags": dbus.UInt32(0x10003 if carrier else 0x3)})

    def add_ap(self, dev, name, ssid, bssid, freq=2437, rate=54000, strength=50, security=SEC_PSK):
        return self.mock.AddAccessPoint(dev, name, ssid, bssid, 2, freq, rate, dbus.Byte(strength), security)

    def add_profile(self, dev, name, ssid, key_mgmt="wpa-psk"):
        path = self.mock.AddWiFiConnection(dev, name, ssid, key_mgmt)
        self.iface(path).AddMethod(CONN, "ClearSecrets", "", "", "")
        return path

    def add_saved(self, ssid, key_mgmt="wpa-psk"):
        """A saved Wi-Fi profile for a network that is not in range (Settings.AddConnection)."""
        settings = {
            "connection": {"id": ssid, "type": "802-11-wireless", "timestamp": dbus.UInt64(1000)},
            "802-11-wireless": {"ssid": dbus.ByteArray(ssid.encode()), "mode": "infrastructure"},
            "802-11-wireless-security": {"key-mgmt": key_mgmt},
        }
        path = self.iface(P + "/Settings", NM + ".Settings").AddConnection(settings)
        self.iface(path).AddMethod(CONN, "ClearSecrets", "", "", "")
        return path

    def add_connection(self, settings):
        """Any profile, through Settings.AddConnection (uuid and timestamp as given)."""
        path = self.iface(P + "/Settings", NM + ".Settings").AddConnection(settings)
        self.iface(path).AddMethod(CONN, "ClearSecrets", "", "", "")
        return path

    def activate(self, dev, profile, ap, name, state=2):
        return self.mock.AddActiveConnection([dev], profile, ap, name, dbus.UInt32(state))

    def calls(self, path, method):
        return [list(args) for _, args in self.iface(path).GetMethodCalls(method)]

    def clear_calls(self, path):
        self.iface(path).ClearCalls()

    # --- the secret agent's side (NetworkManager's AgentManager)

    def add_agent_manager(self):
        """NetworkManager's AgentManager, which the template lacks. Registrations are recorded
        (calls(AGENT_MANAGER, "RegisterWithCapabilities")); Agent* call a registered agent from
        the mock's connection, as NetworkManager would."""
        self.mock.AddObject(AGENT_MANAGER, AGENT_MANAGER_IFACE, {}, [
            ("Register", "s", "", ""),
            ("RegisterWithCapabilities", "su", "", ""),
            ("Unregister", "", "", ""),
        ])
        am = self.iface(AGENT_MANAGER)
        am.AddMethod(MOCK, "AgentGetSecrets", "sssa{sa{sv}}osasu", "u", CALL_AGENT)
        am.AddMethod(MOCK, "AgentCancelGetSecrets", "sssos", "u", CALL_AGENT)
        am.AddMethod(MOCK, "AgentSaveSecrets", "sssa{sa{sv}}o", "u", CALL_AGENT)
        am.AddMethod(MOCK, "AgentDeleteSecrets", "sssa{sa{sv}}o", "u", CALL_AGENT)
        am.AddMethod(MOCK, "AgentReply", "u", "ssa{sa{sv}}", AGENT_REPLY)
        return self

    def registrations(self):
        return self.calls(AGENT_MANAGER, "RegisterWithCapabilities")

    def get_secrets(self, agent, connection, path, setting, hints=(), flags=1):
        """Starts GetSecrets on `agent` (a unique name); returns a token for agent_reply."""
        return self.iface(AGENT_MANAGER).AgentGetSecrets(agent, "GetSecrets", "a{sa{sv}}osasu", connection,
                                                         dbus.ObjectPath(path), setting,
                                                         dbus.Array(hints, signature="s"), dbus.UInt32(flags))

    def cancel_get_secrets(self, agent, path, setting):
        return self.iface(AGENT_MANAGER).AgentCancelGetSecrets(agent, "CancelGetSecrets", "os", dbus.ObjectPath(path),
                                                               setting)

    def save_secrets(self, agent, connection, path, method="SaveSecrets"):
        call = self.iface(AGENT_MANAGER).AgentSaveSecrets if method == "SaveSecrets" else \
            self.iface(AGENT_MANAGER).AgentDeleteSecrets
        return call(agent, method, "a{sa{sv}}o", connection, dbus.ObjectPath(path))

    def agent_reply(self, token):
        """("pending" | "ok" | "error", error name, secrets as plain Python values)."""
        state, error, secrets = self.iface(AGENT_MANAGER).AgentReply(dbus.UInt32(token))
        return str(state), str(error), plain(secrets)


def plain(value):
    """dbus-python values as plain Python ones (for comparing a reply exactly)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, dbus.ByteArray):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    return value


def unique_name_of(bus, pid):
    """The unique name of the connection process `pid` has on `bus` (qsd's, for its agent)."""
    daemon = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
    for name in daemon.ListNames():
        if name.startswith(":"):
            try:
                if daemon.GetConnectionUnixProcessID(name) == pid:
                    return str(name)
            except dbus.DBusException:
                pass
    return None
