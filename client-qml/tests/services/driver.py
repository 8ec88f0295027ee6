"""Changes the services run_services.py started, for the QML tests (QsdDaemon.drive(action,
args)). It finds them through the environment run_services.py set. Prints what an action
reads; exits 0 on success."""

import os
import signal
import sys

import dbus

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
}


def main():
    action, args = sys.argv[1], sys.argv[2:]
    ACTIONS[action](*args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
