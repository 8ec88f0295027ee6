"""The services the soak restarts, one class per service, each tied to the qsd backend it
feeds: the soak uses the classes whose backend the daemon under test has (hello's
capabilities "backend:<id>"). A class starts its service with some content, stops it, makes
small changes while it runs (churn), and names actions clients may call against it.

To add a service (PipeWire + WirePlumber for "pipewire", SNI items for "tray", sway for
"wayland"): write one more class with those methods and add it to SERVICES."""

import os
import random
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import dbus  # noqa: E402  (Debian's python3: dbusmock and dbus-python live there)

from nmmock import AP, SEC_NONE, NmMock  # noqa: E402

UP = "org.freedesktop.UPower"
UP_PATH = "/org/freedesktop/UPower"
MOCK = "org.freedesktop.DBus.Mock"
HADESS = "net.hadess.PowerProfiles"


class Service:
    name = "service"
    backend = ""

    def __init__(self, env):
        self.env = env
        self.proc = None

    def start(self):
        raise NotImplementedError

    def stop(self):
        if self.proc and self.proc.poll() is None:
            # Not always politely: a service may die as well as exit.
            self.proc.send_signal(random.choice([signal.SIGTERM, signal.SIGKILL]))
            self.proc.wait(10)
        self.proc = None

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def churn(self):
        """One small change of the service's state (called while it runs; may fail if it just went)."""

    def actions(self):
        """[(method, params)] a client may call; params may be a callable giving them."""
        return []


class NetworkManagerMock(Service):
    name = "NetworkManager (python-dbusmock)"
    backend = "nm"

    def start(self):
        self.nm = NmMock(self.env)
        self.proc = self.nm.proc
        m = self.nm
        self.wlan = m.add_wifi("wlan0")
        self.aps = [m.add_ap(self.wlan, "ap_home", "HomeNet", "00:11:22:33:44:55", strength=70),
                    m.add_ap(self.wlan, "ap_cafe", "Cafe", "00:11:22:33:44:66", strength=40, security=SEC_NONE),
                    m.add_ap(self.wlan, "ap_far", "Far", "00:11:22:33:44:77", strength=20)]
        home = m.add_profile(self.wlan, "conn_home", "HomeNet")
        m.activate(self.wlan, home, self.aps[0], "Active_home")
        m.add_wired("eth0")

    def stop(self):
        super().stop()
        try:
            self.nm.bus.close()
        except Exception:  # noqa: BLE001
            pass

    def churn(self):
        ap = random.choice(self.aps)
        self.nm.iface(ap).UpdateProperties(AP, {"Strength": dbus.Byte(random.randint(5, 99))})
        if random.random() < 0.1:
            self.nm.mock.SetConnectivity(random.choice([1, 4]))

    def actions(self):
        return [("network.setWifiEnabled", lambda: {"enabled": random.random() < 0.8}),
                ("network.setScannerEnabled", lambda: {"device": "wlan0", "enabled": random.random() < 0.5}),
                ("network.checkConnectivity", {}),
                ("network.connect", {"device": "wlan0", "network": "HomeNet"}),
                ("network.connect", {"device": "eth0", "network": "eth0"}),
                ("network.setAutoconnect", lambda: {"device": "eth0", "autoconnect": random.random() < 0.5})]


class UPowerMock(Service):
    name = "UPower (python-dbusmock)"
    backend = "upower"

    def start(self):
        self.proc = self.env.start_mock("upower", {"OnBattery": True, "DaemonVersion": "0.99.20"}, name=UP)
        self.bus = self.env.dbus()
        self.mock = dbus.Interface(self.bus.get_object(UP, UP_PATH), MOCK)
        self.bat = self.mock.AddDischargingBattery("BAT0", "Soak Battery", 80.0, 7200)
        self.mock.SetupDisplayDevice(2, 2, 80.0, 36.7, 50.0, 12.3, 7200, 0, True, "battery-good-symbolic", 3)

    def stop(self):
        super().stop()
        try:
            self.bus.close()
        except Exception:  # noqa: BLE001
            pass

    def churn(self):
        pct = dbus.Double(random.uniform(5, 100))
        self.mock.SetDeviceProperties(self.bat, {"Percentage": pct})
        if random.random() < 0.2:
            self.mock.SetDeviceProperties(UP_PATH + "/devices/DisplayDevice", {"Percentage": pct})
        if random.random() < 0.05:
            self.mock.AddDischargingBattery("BAT1", "Spare", random.uniform(5, 100), 3600)
        if random.random() < 0.05:
            self.mock.RemoveObject(UP_PATH + "/devices/battery_BAT1")
            self.mock.EmitSignal(UP, "DeviceRemoved", "o", [dbus.ObjectPath(UP_PATH + "/devices/battery_BAT1")])


class PowerProfilesMock(Service):
    name = "power-profiles-daemon (python-dbusmock)"
    backend = "upower"

    def start(self):
        self.proc = self.env.start_mock("power_profiles_daemon", None, name=HADESS)

    def actions(self):
        return [("power.setProfile", lambda: {"profile": random.choice(["powerSaver", "balanced", "performance"])}),
                ("power.holdProfile", lambda: {"profile": random.choice(["powerSaver", "performance"]),
                                               "reason": "soak", "applicationId": "soak"})]


SERVICES = [NetworkManagerMock, UPowerMock, PowerProfilesMock]
