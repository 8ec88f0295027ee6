"""python-dbusmock's bluez5 template on the private system bus, with what the template lacks
added through the mock's own interface (org.freedesktop.DBus.Mock: AddProperties, AddMethod,
EmitSignal): Battery1 appearing and going, PowerState, invalidated properties, and calls of
qsd's pairing agent made from bluetoothd's own connection, as bluetoothd makes them."""

import signal

from qsdtest import wait_until

BLUEZ = "org.bluez"
MOCK = "org.freedesktop.DBus.Mock"
BLUEZ_MOCK = "org.bluez.Mock"
ADAPTER = "org.bluez.Adapter1"
DEVICE = "org.bluez.Device1"
BATTERY = "org.bluez.Battery1"
OM = "org.freedesktop.DBus.ObjectManager"
PROPS = "org.freedesktop.DBus.Properties"
AGENT_PATH = "/org/qsd/bluetooth/agent"
TEST = "org.qsd.Test"   # methods this harness adds to the mock

# Calls qsd's agent from the mock's connection (the only one qsd answers), asynchronously: the
# answer is recorded and read with AgentResult, so the mock keeps serving while qsd waits for a
# client. Arguments: qsd's unique name, the agent's path, the method, its signature, its values.
CALL_AGENT = """
import dbus
dest, path, method, sig, values = args
conv = {'o': dbus.ObjectPath, 'u': dbus.UInt32, 'q': dbus.UInt16, 's': dbus.String}
typed = []
for i in range(len(sig)):  # no comprehension: exec() gives it no access to these locals
    typed.append(conv[sig[i]](values[i]))
if not hasattr(self, 'agent_calls'):
    self.agent_calls = {}
token = len(self.agent_calls) + 1
self.agent_calls[token] = ['pending']
def ok(*r, _t=token, _s=self):
    _s.agent_calls[_t] = ['ok'] + [str(x) for x in r]
def err(e, _t=token, _s=self):
    _s.agent_calls[_t] = ['error', e.get_dbus_name() or '', str(e.get_dbus_message() or '')]
self.connection.call_async(dest, path, 'org.bluez.Agent1', method, sig, typed, ok, err, timeout=300)
ret = dbus.UInt32(token)
"""
AGENT_RESULT = "ret = self.agent_calls.get(int(args[0]), ['unknown'])"

# The template's StartDiscovery reads a DiscoveryFilter property no adapter has until
# SetDiscoveryFilter is called (a KeyError); these do what bluetoothd does for a plain client,
# refusing to start on an adapter that is off.
START_DISCOVERY = """
if not self.props['org.bluez.Adapter1']['Powered']:
    raise dbus.exceptions.DBusException('Resource Not Ready', name='org.bluez.Error.NotReady')
self.UpdateProperties('org.bluez.Adapter1', {'Discovering': dbus.Boolean(True)})
"""
STOP_DISCOVERY = "self.UpdateProperties('org.bluez.Adapter1', {'Discovering': dbus.Boolean(False)})"
# An adapter added with those methods (and powered off when asked), in one call of the mock's,
# so that no call of qsd's can reach the adapter in between.
ADD_ADAPTER = f"""
path = self.AddAdapter(args[0], args[1])
adapter = objects[path]
adapter.AddMethod('org.bluez.Adapter1', 'StartDiscovery', '', '', {START_DISCOVERY!r})
adapter.AddMethod('org.bluez.Adapter1', 'StopDiscovery', '', '', {STOP_DISCOVERY!r})
if not args[2]:
    adapter.UpdateProperties('org.bluez.Adapter1', {{'Powered': dbus.Boolean(False)}})
ret = path
"""


def dbus_mod():
    import dbus  # noqa: only under /usr/bin/python3
    return dbus


class Bluez:
    """One bluez5 mock (bluetoothd as far as qsd can tell)."""

    def __init__(self, env, adapters=()):
        self.env = env
        self.proc = env.start_mock("bluez5", name=BLUEZ)
        self.bus = env.dbus()
        self.root = self.bus.get_object(BLUEZ, "/")
        self.mock = dbus_mod().Interface(self.root, BLUEZ_MOCK)
        m = dbus_mod().Interface(self.root, MOCK)
        m.AddMethod(BLUEZ_MOCK, "CallAgent", "sossav", "u", CALL_AGENT)
        m.AddMethod(BLUEZ_MOCK, "AgentResult", "u", "as", AGENT_RESULT)
        m.AddMethod(TEST, "AddAdapter", "ssb", "s", ADD_ADAPTER)
        for name in adapters:
            self.add_adapter(name)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)

    # --- objects
    def obj(self, path):
        return self.bus.get_object(BLUEZ, path)

    def control(self, path):
        return dbus_mod().Interface(self.obj(path), MOCK)

    def add_adapter(self, name="hci0", alias="my-laptop", powered=True):
        return str(dbus_mod().Interface(self.root, TEST).AddAdapter(name, alias, powered))

    def remove_adapter(self, name="hci0"):
        self.mock.RemoveAdapter(name)

    def add_device(self, address="11:22:33:44:55:66", alias="Headset", adapter="hci0"):
        return str(self.mock.AddDevice(adapter, address, alias))

    @staticmethod
    def device_path(address="11:22:33:44:55:66", adapter="hci0"):
        return f"/org/bluez/{adapter}/dev_" + address.replace(":", "_").upper()

    @staticmethod
    def device_key(address="11:22:33:44:55:66", adapter="hci0"):
        return f"{adapter}_" + address.replace(":", "_").upper()

    def update(self, path, iface, props):
        """Changes properties and emits one PropertiesChanged."""
        self.control(path).UpdateProperties(iface, props)

    def change(self, path, iface, props):
        """Sets properties (also ones the object did not have) and emits PropertiesChanged."""
        dbus = dbus_mod()
        self.put(path, iface, props)
        self.control(path).EmitSignal(PROPS, "PropertiesChanged", "sa{sv}as",
                                      [iface, dbus.Dictionary(props, signature="sv"), dbus.Array([], signature="s")])

    def set_property(self, path, iface, name, value):
        dbus_mod().Interface(self.obj(path), PROPS).Set(iface, name, value)

    def get_all(self, path, iface):
        return dbus_mod().Interface(self.obj(path), PROPS).GetAll(iface)

    def invalidate(self, path, iface, name):
        """Drops a property (BlueZ: RSSI of a device no longer seen) and says so with an
        invalidated PropertiesChanged."""
        dbus = dbus_mod()
        self.control(path).AddMethod(TEST, "DropProperty", "ss", "", "del self.props[args[0]][args[1]]")
        dbus.Interface(self.obj(path), TEST).DropProperty(iface, name)
        self.control(path).EmitSignal(PROPS, "PropertiesChanged", "sa{sv}as",
                                      [iface, dbus.Dictionary({}, signature="sv"), dbus.Array([name], signature="s")])

    def put(self, path, iface, props):
        """Sets properties of an interface (created when missing) without a signal."""
        dbus = dbus_mod()
        self.control(path).AddMethod(TEST, "PutProperties", "sa{sv}", "",
                                     "self.props.setdefault(args[0], {}).update(args[1])")
        dbus.Interface(self.obj(path), TEST).PutProperties(iface, dbus.Dictionary(props, signature="sv"))

    def add_battery(self, path, percentage):
        """Battery1 appears (BlueZ adds it when a connected device reports its level)."""
        dbus = dbus_mod()
        props = {"Percentage": dbus.Byte(percentage)}
        self.put(path, BATTERY, props)
        self.control("/").EmitSignal(OM, "InterfacesAdded", "oa{sa{sv}}",
                                     [dbus.ObjectPath(path), dbus.Dictionary({BATTERY: dbus.Dictionary(props, signature="sv")},
                                                                             signature="sa{sv}")])

    def remove_battery(self, path):
        dbus = dbus_mod()
        self.control("/").EmitSignal(OM, "InterfacesRemoved", "oas",
                                     [dbus.ObjectPath(path), dbus.Array([BATTERY], signature="s")])

    def announce(self, path, ifaces):
        """InterfacesAdded for an object the mock has, with its current properties."""
        dbus = dbus_mod()
        content = dbus.Dictionary({i: dbus.Dictionary(self.get_all(path, i), signature="sv") for i in ifaces},
                                  signature="sa{sv}")
        self.control("/").EmitSignal(OM, "InterfacesAdded", "oa{sa{sv}}", [dbus.ObjectPath(path), content])

    def calls(self, path, method):
        return [list(args) for _, args in self.control(path).GetMethodCalls(method)]

    def clear_calls(self, path):
        self.control(path).ClearCalls()

    # --- the agent, called as bluetoothd calls it
    def qsd_name(self, pid):
        """qsd's unique name on the system bus (the connection of process `pid`)."""
        dbus = dbus_mod()
        bus_obj = dbus.Interface(self.bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
        for name in bus_obj.ListNames():
            if name.startswith(":"):
                try:
                    if int(bus_obj.GetConnectionUnixProcessID(name)) == pid:
                        return str(name)
                except dbus.DBusException:
                    pass
        raise LookupError("qsd is not on the system bus")

    def call_agent(self, dest, method, sig, *values):
        """Starts Agent1.<method>(values) from bluetoothd's connection; returns a token."""
        dbus = dbus_mod()
        return int(self.mock.CallAgent(dest, dbus.ObjectPath(AGENT_PATH), method, sig,
                                       dbus.Array([v for v in values], signature="v")))

    def agent_result(self, token):
        return [str(x) for x in self.mock.AgentResult(dbus_mod().UInt32(token))]

    def wait_agent_result(self, token, timeout=10):
        return wait_until(lambda: (r := self.agent_result(token)) and r[0] != "pending" and r, timeout,
                          what=f"the agent's answer to call {token}")
