"""python-dbusmock's NetworkManager template, extended where it lacks what /network reads and
what the actions call (Device.Disconnect, Autoconnect, InterfaceFlags, Wired.Speed,
connectivity-check properties, Settings.Connection.ClearSecrets, device removal)."""

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
