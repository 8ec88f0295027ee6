"""The bluetooth backend against python-dbusmock's bluez5 template on a private system bus
(bluezmock.py adds what the template lacks). Every assertion goes through the socket (the test
client's mirror of its subscription, or a call); what qsd asked BlueZ is read from the mock's
call log."""

import json
import os
import signal
import subprocess

import jsonschema
import pytest

from bluezmock import ADAPTER, BATTERY, DEVICE, Bluez, dbus_mod
from qsdtest import RpcError

DEV = Bluez.device_key()
DEV_PATH = Bluez.device_path()
HCI0 = "/org/bluez/hci0"


class World:
    def __init__(self, env, bluez, client, sub):
        self.env, self.bz, self.c, self.sub = env, bluez, client, sub

    def bt(self):
        return self.c.mirror(self.sub)["bluetooth"]

    def wait(self, path, expected=None, predicate=None, timeout=10):
        return self.c.wait_value(self.sub, path, expected, predicate, timeout)

    def wait_gone(self, path, timeout=10):
        from qsdtest import pointer_get
        self.c.wait_for(lambda: pointer_get(self.c.mirror(self.sub), path, None) is None, timeout, what=f"{path} gone")


def start(env, devices=("11:22:33:44:55:66",), adapters=("hci0",)):
    # This machine's own rfkill switches are not the test's.
    env.env["QSD_RFKILL"] = os.path.join(env.dir, "no-rfkill")
    bz = Bluez(env, adapters)
    for address in devices:
        bz.add_device(address, "Headset")
    env.start_qsd(backends=["bluetooth"])
    c = env.client()
    sub = c.subscribe(["/bluetooth", "/daemon/backends/bluetooth"])
    w = World(env, bz, c, sub)
    w.wait("/bluetooth/available", True)
    w.wait("/bluetooth/agent/isDefault", True)
    return w


@pytest.fixture
def world(env):
    w = start(env)
    yield w
    w.c.close()


def schema_errors(c, value, name):
    doc = c.call("rpc.discover")
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    return [e.message for e in jsonschema.Draft7Validator({"$ref": f"#/components/schemas/{name}"}, resolver=resolver)
            .iter_errors(value)]


def expect_error(c, method, params, code, **data):
    with pytest.raises(RpcError) as err:
        c.call(method, params)
    assert err.value.code == code, err.value
    for k, v in data.items():
        assert err.value.data.get(k) == v, (k, err.value.data)
    return err.value


# ------------------------------------------------------------------------------------------------


def test_adapters_and_devices_appear_with_their_fields(world):
    bt = world.bt()
    assert bt["defaultAdapter"] == "hci0"
    assert bt["adapters"]["hci0"] == {
        "name": "my-laptop", "address": "00:01:02:03:04:05", "alias": "my-laptop", "enabled": True, "state": "enabled",
        "discoverable": False, "discoverableTimeout": 180, "pairable": True, "pairableTimeout": 0, "discovering": False,
    }
    assert bt["devices"][DEV] == {
        "address": "11:22:33:44:55:66", "name": "Headset", "alias": "Headset", "icon": None, "iconUrl": None,
        "adapter": "hci0", "paired": False, "bonded": False, "trusted": False, "blocked": False, "connected": False,
        "state": "disconnected", "pairing": False, "rssi": -79, "battery": None, "wakeAllowed": False,
    }
    assert bt["agent"] == {"registered": True, "isDefault": True, "error": None, "requests": {}}
    assert world.c.mirror(world.sub)["daemon"]["backends"]["bluetooth"]["state"] == "running"
    assert not schema_errors(world.c, bt, "BluetoothDomain")
    # The agent was registered as bluetoothd expects it, then made the default.
    assert world.bz.calls("/org/bluez", "RegisterAgent") == [["/org/qsd/bluetooth/agent", "KeyboardDisplay"]]
    assert world.bz.calls("/org/bluez", "RequestDefaultAgent") == [["/org/qsd/bluetooth/agent"]]


def test_a_second_adapter_and_its_devices(world):
    world.bz.add_adapter("hci1", "dongle")
    world.bz.add_device("AA:BB:CC:DD:EE:FF", "Mouse", adapter="hci1")
    world.wait("/bluetooth/devices/hci1_AA_BB_CC_DD_EE_FF/adapter", "hci1")
    assert world.bt()["adapters"]["hci1"]["alias"] == "dongle"
    # The default stays the first adapter.
    assert world.bt()["defaultAdapter"] == "hci0"
    world.bz.mock.RemoveAdapterWithDevices("hci0")
    world.wait("/bluetooth/defaultAdapter", "hci1")
    assert set(world.bt()["devices"]) == {"hci1_AA_BB_CC_DD_EE_FF"}


def test_powered_connected_and_paired_changes_follow(world):
    dbus = dbus_mod()
    world.bz.set_property(HCI0, ADAPTER, "Powered", dbus.Boolean(False))
    world.wait("/bluetooth/adapters/hci0/state", "disabled")
    assert world.bt()["adapters"]["hci0"]["enabled"] is False
    world.bz.mock.ConnectDevice("hci0", "11:22:33:44:55:66")
    world.wait(f"/bluetooth/devices/{DEV}/state", "connected")
    assert world.bt()["devices"][DEV]["connected"] is True
    world.bz.mock.PairDevice("hci0", "11:22:33:44:55:66", 5898764)
    world.wait(f"/bluetooth/devices/{DEV}/paired", True)
    assert world.bt()["devices"][DEV]["icon"] == "phone"
    world.bz.mock.DisconnectDevice("hci0", "11:22:33:44:55:66")
    world.wait(f"/bluetooth/devices/{DEV}/state", "disconnected")
    # A one-field change is a one-field patch.
    before = len(world.c.notifications)
    world.bz.update(DEV_PATH, DEVICE, {"RSSI": dbus.Int16(-50)})
    world.wait(f"/bluetooth/devices/{DEV}/rssi", -50)
    changes = [ch for n in world.c.notifications[before:] if n["method"] == "tree.changed" for ch in n["params"]["changes"]]
    assert changes == [{"op": "replace", "path": f"/bluetooth/devices/{DEV}/rssi", "value": -50}]


def test_battery_comes_and_goes(world):
    dbus = dbus_mod()
    world.bz.add_battery(DEV_PATH, 87)
    world.wait(f"/bluetooth/devices/{DEV}/battery", 0.87)
    world.bz.update(DEV_PATH, BATTERY, {"Percentage": dbus.Byte(42)})
    world.wait(f"/bluetooth/devices/{DEV}/battery", 0.42)
    world.bz.remove_battery(DEV_PATH)
    world.wait(f"/bluetooth/devices/{DEV}/battery", None)
    # And back, as headsets do on every connection.
    world.bz.add_battery(DEV_PATH, 100)
    world.wait(f"/bluetooth/devices/{DEV}/battery", 1.0)


def test_invalidated_rssi_is_read_again(world):
    # BlueZ invalidates RSSI when it no longer sees the device: qsd reads the device again and
    # finds no value.
    world.bz.invalidate(DEV_PATH, DEVICE, "RSSI")
    world.wait(f"/bluetooth/devices/{DEV}/rssi", None)
    world.bz.change(DEV_PATH, DEVICE, {"RSSI": dbus_mod().Int16(-70)})
    world.wait(f"/bluetooth/devices/{DEV}/rssi", -70)


def test_power_state_gives_the_transitions(world):
    ctl = world.bz.control(HCI0)
    ctl.AddProperty(ADAPTER, "PowerState", "off-enabling")
    world.bz.update(HCI0, ADAPTER, {"PowerState": "off-enabling", "Powered": False})
    world.wait("/bluetooth/adapters/hci0/state", "enabling")
    world.bz.update(HCI0, ADAPTER, {"PowerState": "on", "Powered": True})
    world.wait("/bluetooth/adapters/hci0/state", "enabled")
    world.bz.update(HCI0, ADAPTER, {"PowerState": "on-disabling"})
    world.wait("/bluetooth/adapters/hci0/state", "disabling")
    world.bz.update(HCI0, ADAPTER, {"PowerState": "off-blocked", "Powered": False})
    world.wait("/bluetooth/adapters/hci0/state", "blocked")


def test_adapter_removed_and_added_is_read_again(world):
    dbus = dbus_mod()
    world.bz.set_property(HCI0, ADAPTER, "Powered", dbus.Boolean(False))
    world.wait("/bluetooth/adapters/hci0/enabled", False)
    # As after a resume: the adapter goes without a word about its devices.
    world.bz.remove_adapter("hci0")
    world.wait_gone("/bluetooth/adapters/hci0")
    world.wait_gone(f"/bluetooth/devices/{DEV}")
    assert world.bt()["defaultAdapter"] is None
    # It comes back powered, under another name: what qsd shows is what BlueZ says now.
    world.bz.add_adapter("hci0", "renamed")
    world.wait("/bluetooth/adapters/hci0/alias", "renamed")
    assert world.bt()["adapters"]["hci0"]["enabled"] is True
    assert world.bt()["adapters"]["hci0"]["state"] == "enabled"
    assert world.bt()["defaultAdapter"] == "hci0"
    # The device stays gone until BlueZ announces it again, then it is back as it is now.
    assert DEV not in world.bt()["devices"]
    world.bz.update(DEV_PATH, DEVICE, {"Alias": "Headset again"})
    world.bz.announce(DEV_PATH, [DEVICE])
    world.wait(f"/bluetooth/devices/{DEV}/alias", "Headset again")


def test_a_device_before_its_adapter_waits_for_it(world):
    world.bz.remove_adapter("hci0")
    world.wait_gone("/bluetooth/adapters/hci0")
    # BlueZ announcing a device of an adapter it has not announced: kept out until it is.
    world.bz.announce(DEV_PATH, [DEVICE])
    sentinel = world.bz.add_adapter("hci1", "sentinel")
    world.wait("/bluetooth/adapters/hci1/alias", "sentinel")
    assert DEV not in world.bt()["devices"]
    assert sentinel
    world.bz.add_adapter("hci0", "back")
    world.wait(f"/bluetooth/devices/{DEV}/adapter", "hci0")


def test_bluetoothd_restart(world, env):
    c = world.c
    world.bz.stop()
    world.wait("/bluetooth/available", False)
    assert world.bt() == {"available": False}
    assert c.mirror(world.sub)["daemon"]["backends"]["bluetooth"]["state"] == "unavailable"
    expect_error(c, "bluetooth.connect", {"device": DEV}, -32000, backend="bluetooth")
    bz = Bluez(env, ["hci0"])
    bz.add_device("11:22:33:44:55:66", "Headset")
    world.wait("/bluetooth/available", True)
    world.wait(f"/bluetooth/devices/{DEV}/alias", "Headset")
    world.wait("/bluetooth/agent/isDefault", True)
    # The agent is registered with the new bluetoothd.
    assert bz.calls("/org/bluez", "RegisterAgent") == [["/org/qsd/bluetooth/agent", "KeyboardDisplay"]]
    assert world.c.mirror(world.sub)["daemon"]["backends"]["bluetooth"]["state"] == "running"


def test_adapter_actions_reach_bluez(world):
    c, bz = world.c, world.bz
    assert c.call("bluetooth.setEnabled", {"adapter": "hci0", "enabled": False}) == {"adapter": "hci0", "enabled": False}
    world.wait("/bluetooth/adapters/hci0/state", "disabled")
    assert c.call("bluetooth.setEnabled", {"adapter": "hci0", "enabled": True}) == {"adapter": "hci0", "enabled": True}
    world.wait("/bluetooth/adapters/hci0/state", "enabled")
    assert c.call("bluetooth.setDiscoverable", {"adapter": "hci0", "discoverable": True, "timeout": 60}) == \
        {"adapter": "hci0", "discoverable": True, "timeout": 60}
    world.wait("/bluetooth/adapters/hci0/discoverable", True)
    assert world.bt()["adapters"]["hci0"]["discoverableTimeout"] == 60
    c.call("bluetooth.setPairable", {"adapter": "hci0", "pairable": False})
    world.wait("/bluetooth/adapters/hci0/pairable", False)
    c.call("bluetooth.setAlias", {"adapter": "hci0", "alias": "Desk"})
    world.wait("/bluetooth/adapters/hci0/alias", "Desk")
    assert c.call("bluetooth.setAlias", {"adapter": "hci0", "alias": ""}) == {"adapter": "hci0", "alias": ""}
    world.wait("/bluetooth/adapters/hci0/alias", "")
    assert bz


def test_device_actions_reach_bluez(world):
    c, bz = world.c, world.bz
    dev = {"device": DEV}
    assert c.call("bluetooth.pair", dev) == {"device": DEV, "paired": True, "trusted": True}
    world.wait(f"/bluetooth/devices/{DEV}/paired", True)
    world.wait(f"/bluetooth/devices/{DEV}/trusted", True)
    assert world.bt()["devices"][DEV]["pairing"] is False
    assert c.call("bluetooth.connect", dev) == {"device": DEV, "connected": True}
    world.wait(f"/bluetooth/devices/{DEV}/state", "connected")
    # BlueZ's own error, by name.
    err = expect_error(c, "bluetooth.connect", dev, -32002)
    assert err.data["name"] == "org.bluez.Error.AlreadyConnected"
    assert c.call("bluetooth.disconnect", dev) == {"device": DEV, "connected": False}
    world.wait(f"/bluetooth/devices/{DEV}/state", "disconnected")
    c.call("bluetooth.setBlocked", {"device": DEV, "blocked": True})
    world.wait(f"/bluetooth/devices/{DEV}/blocked", True)
    c.call("bluetooth.setTrusted", {"device": DEV, "trusted": False})
    world.wait(f"/bluetooth/devices/{DEV}/trusted", False)
    c.call("bluetooth.setWakeAllowed", {"device": DEV, "wakeAllowed": True})
    world.wait(f"/bluetooth/devices/{DEV}/wakeAllowed", True)
    c.call("bluetooth.setAlias", {"device": DEV, "alias": "Kitchen speaker \u266b"})
    world.wait(f"/bluetooth/devices/{DEV}/alias", "Kitchen speaker \u266b")
    assert c.call("bluetooth.cancelPairing", dev) == {"device": DEV}
    assert bz.calls(DEV_PATH, "CancelPairing") == [[]]
    assert c.call("bluetooth.forget", dev) == {"device": DEV}
    world.wait_gone(f"/bluetooth/devices/{DEV}")
    assert bz.calls(HCI0, "RemoveDevice") == [[DEV_PATH]]
    expect_error(c, "bluetooth.connect", dev, -32001, param="device")



def test_connecting_shows_while_bluez_works(world):
    c, bz = world.c, world.bz
    state = f"/bluetooth/devices/{DEV}/state"
    for method, during, after, rid in (("bluetooth.connect", "connecting", "connected", 9001),
                                       ("bluetooth.disconnect", "disconnecting", "disconnected", 9002)):
        # bluetoothd busy (stopped): the call waits, and the tree says what is going on.
        os.kill(bz.proc.pid, signal.SIGSTOP)
        try:
            c.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {"device": DEV}}) + "\n")
            assert c.call("tree.get", {"path": state})["value"] == during
        finally:
            os.kill(bz.proc.pid, signal.SIGCONT)
        assert "result" in c.answer(rid)
        world.wait(state, after)


def test_pairing_shows_and_a_failed_pair_names_bluez_s_error(world):
    c, bz = world.c, world.bz
    pairing = f"/bluetooth/devices/{DEV}/pairing"
    # bluetoothd busy (stopped): the pair waits, and the tree says so.
    os.kill(bz.proc.pid, signal.SIGSTOP)
    try:
        c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 9003, "method": "bluetooth.pair", "params": {"device": DEV}}) + "\n")
        assert c.call("tree.get", {"path": pairing})["value"] is True
    finally:
        os.kill(bz.proc.pid, signal.SIGCONT)
    assert c.answer(9003)["result"] == {"device": DEV, "paired": True, "trusted": True}
    world.wait(pairing, False)
    # The other side refuses: BlueZ's error by name, no longer pairing, and not made trusted.
    c.call("bluetooth.setTrusted", {"device": DEV, "trusted": False})
    world.wait(f"/bluetooth/devices/{DEV}/trusted", False)
    bz.control(DEV_PATH).AddMethod(DEVICE, "Pair", "", "",
                                   "raise dbus.exceptions.DBusException('Authentication Failed', "
                                   "name='org.bluez.Error.AuthenticationFailed')")
    err = expect_error(c, "bluetooth.pair", {"device": DEV}, -32002)
    assert err.data["name"] == "org.bluez.Error.AuthenticationFailed"
    assert c.call("tree.get", {"path": pairing})["value"] is False
    assert world.bt()["devices"][DEV]["trusted"] is False
    # Bonded, where BlueZ has it (5.73 and later), is shown as it changes.
    bz.change(DEV_PATH, DEVICE, {"Bonded": dbus_mod().Boolean(True)})
    world.wait(f"/bluetooth/devices/{DEV}/bonded", True)


def test_discovery_is_claimed_per_connection(world):
    bz, env = world.bz, world.env
    a, b = env.client(), env.client()
    assert a.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True}) == {"adapter": "hci0", "enabled": True}
    world.wait("/bluetooth/adapters/hci0/discovering", True)
    b.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True})
    # Claiming twice (a client asking again) counts once.
    a.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True})
    assert len(bz.calls(HCI0, "StartDiscovery")) == 1
    a.close()
    # b still holds it: a later call of b's is answered after a's close was handled.
    b.call("hello")
    assert bz.calls(HCI0, "StopDiscovery") == []
    assert b.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": False}) == {"adapter": "hci0", "enabled": False}
    world.wait("/bluetooth/adapters/hci0/discovering", False)
    assert len(bz.calls(HCI0, "StopDiscovery")) == 1
    # The client that disconnects releases its claim.
    b.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True})
    world.wait("/bluetooth/adapters/hci0/discovering", True)
    b.close()
    world.wait("/bluetooth/adapters/hci0/discovering", False)
    assert len(bz.calls(HCI0, "StartDiscovery")) == 2
    assert len(bz.calls(HCI0, "StopDiscovery")) == 2


def test_a_discovery_claim_outlives_bluetoothd(world, env):
    c = world.c
    c.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True})
    world.wait("/bluetooth/adapters/hci0/discovering", True)
    world.bz.stop()
    world.wait("/bluetooth/available", False)
    bz = Bluez(env, ["hci0"])
    # BlueZ forgot the session with the old process: qsd starts one again for the claim it holds.
    world.wait("/bluetooth/adapters/hci0/discovering", True)
    assert len(bz.calls(HCI0, "StartDiscovery")) == 1
    # A refused StartDiscovery answers with BlueZ's error and keeps no claim.
    bz.control(HCI0).AddMethod(ADAPTER, "StartDiscovery", "", "",
                               "raise dbus.exceptions.DBusException('Resource Not Ready', name='org.bluez.Error.NotReady')")
    bz.add_adapter("hci1", "second")
    world.wait("/bluetooth/adapters/hci1/alias", "second")
    bz.control("/org/bluez/hci1").AddMethod(ADAPTER, "StartDiscovery", "", "",
                                            "raise dbus.exceptions.DBusException('Resource Not Ready', name='org.bluez.Error.NotReady')")
    err = expect_error(c, "bluetooth.setDiscovering", {"adapter": "hci1", "enabled": True}, -32002)
    assert err.data["name"] == "org.bluez.Error.NotReady"


def test_a_claim_cut_off_by_bluetoothd_is_not_kept(world, env):
    c, shell = world.c, env.client()
    bz = world.bz
    # bluetoothd busy (stopped) while a shell claims discovery: its StartDiscovery is in flight
    # when bluetoothd goes.
    os.kill(bz.proc.pid, signal.SIGSTOP)
    try:
        shell.send_raw(json.dumps({"jsonrpc": "2.0", "id": 9101, "method": "bluetooth.setDiscovering",
                                   "params": {"adapter": "hci0", "enabled": True}}) + "\n")
        # qsd read the claim (a connection's requests are handled in order): StartDiscovery is sent.
        shell.sync()
    finally:
        os.kill(bz.proc.pid, signal.SIGKILL)
        bz.proc.wait(10)
    world.wait("/bluetooth/available", False)
    err = shell.answer(9101)["error"]
    assert err["code"] == -32000 and err["data"]["backend"] == "bluetooth", err
    # The claim was refused: nothing may start discovery for it when bluetoothd is back.
    bz = Bluez(env, ["hci0"])
    world.wait("/bluetooth/adapters/hci0/enabled", True)
    # A barrier through BlueZ: a StartDiscovery of qsd's (made with the adapter) reached the mock
    # before this Set.
    c.call("bluetooth.setAlias", {"adapter": "hci0", "alias": "barrier"})
    world.wait("/bluetooth/adapters/hci0/alias", "barrier")
    assert bz.calls(HCI0, "StartDiscovery") == []
    assert world.bt()["adapters"]["hci0"]["discovering"] is False
    # The shell is still connected and may claim again.
    assert shell.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True}) == {"adapter": "hci0", "enabled": True}
    assert len(bz.calls(HCI0, "StartDiscovery")) == 1
    shell.close()


def test_a_refused_discovery_waits_for_the_adapter(world, env):
    c = world.c
    c.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True})
    world.wait("/bluetooth/adapters/hci0/discovering", True)
    world.bz.stop()
    world.wait("/bluetooth/available", False)
    # The new bluetoothd's adapter is off: BlueZ refuses to discover (NotReady).
    bz = Bluez(env)
    bz.add_adapter("hci0", "off", powered=False)
    bz.add_adapter("hci1", "sentinel")
    world.wait("/bluetooth/adapters/hci1/alias", "sentinel")
    world.wait("/bluetooth/adapters/hci0/enabled", False)
    # Refused once, not asked again in a loop.
    c.call("hello")
    assert len(bz.calls(HCI0, "StartDiscovery")) == 1
    assert world.bt()["adapters"]["hci0"]["discovering"] is False
    # Powered on: the claim still held starts discovery.
    c.call("bluetooth.setEnabled", {"adapter": "hci0", "enabled": True})
    world.wait("/bluetooth/adapters/hci0/discovering", True)
    assert len(bz.calls(HCI0, "StartDiscovery")) == 2


def test_a_discovery_claim_outlives_a_power_cycle(world):
    c, bz = world.c, world.bz
    dbus = dbus_mod()
    c.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True})
    world.wait("/bluetooth/adapters/hci0/discovering", True)
    # Powered off (by another program, the power key), bluetoothd ends every discovery session
    # of the adapter, qsd's too.
    bz.update(HCI0, ADAPTER, {"Powered": dbus.Boolean(False), "Discovering": dbus.Boolean(False)})
    world.wait("/bluetooth/adapters/hci0/enabled", False)
    # Powered again: the claim still held starts a new session.
    bz.update(HCI0, ADAPTER, {"Powered": dbus.Boolean(True)})
    world.wait("/bluetooth/adapters/hci0/discovering", True)
    assert len(bz.calls(HCI0, "StartDiscovery")) == 2
    # There was no session to stop in between; the release stops the new one.
    assert bz.calls(HCI0, "StopDiscovery") == []
    c.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": False})
    world.wait("/bluetooth/adapters/hci0/discovering", False)
    assert len(bz.calls(HCI0, "StopDiscovery")) == 1
    # A claim held on an adapter that goes is given up all the same.
    c.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": True})
    bz.remove_adapter("hci0")
    world.wait_gone("/bluetooth/adapters/hci0")
    assert c.call("bluetooth.setDiscovering", {"adapter": "hci0", "enabled": False}) == {"adapter": "hci0", "enabled": False}


def test_bad_params_and_unknown_ids(world):
    c = world.c
    expect_error(c, "bluetooth.setEnabled", {"adapter": "hci9", "enabled": True}, -32001, param="adapter", adapter="hci9")
    expect_error(c, "bluetooth.connect", {"device": "hci0_00_00_00_00_00_00"}, -32001, param="device")
    expect_error(c, "bluetooth.setDiscovering", {"adapter": "hci9", "enabled": True}, -32001, param="adapter")
    expect_error(c, "bluetooth.setDiscovering", {"adapter": "hci9", "enabled": False}, -32001, param="adapter")
    expect_error(c, "bluetooth.setEnabled", {"adapter": "hci0", "enabled": "yes"}, -32602, param="enabled")
    expect_error(c, "bluetooth.setEnabled", {"enabled": True}, -32602, param="adapter")
    expect_error(c, "bluetooth.setDiscoverable", {"adapter": "hci0", "discoverable": True, "timeout": -1}, -32602,
                 param="timeout")
    expect_error(c, "bluetooth.setAlias", {"alias": "x"}, -32602, param="adapter")
    expect_error(c, "bluetooth.setAlias", {"adapter": "hci0", "device": DEV, "alias": "x"}, -32602, param="device")
    # 248 bytes is the limit, in bytes: 100 three-byte characters are too many.
    expect_error(c, "bluetooth.setAlias", {"device": DEV, "alias": "\u266b" * 100}, -32602, param="alias")
    expect_error(c, "bluetooth.answer", {"request": "77", "accept": True}, -32001, param="request")
    expect_error(c, "bluetooth.answer", {"request": "1", "accept": True, "passkey": 1000000}, -32602, param="passkey")
    expect_error(c, "bluetooth.answer", {"request": "1"}, -32602, param="accept")
    # Nothing reached BlueZ: the tree is as it was.
    assert c.call("tree.get", {"path": "/bluetooth/adapters/hci0"})["value"] == world.bt()["adapters"]["hci0"]
    assert world.bt()["devices"][DEV]["alias"] == "Headset"


def test_hostile_values_degrade_one_field(world):
    dbus = dbus_mod()
    bz = world.bz
    long_name = "\u00e9" * 3000
    bz.update(DEV_PATH, DEVICE, {"Name": long_name, "Alias": long_name, "Connected": "yes", "RSSI": "loud"})
    world.wait(f"/bluetooth/devices/{DEV}/rssi", None)
    d = world.bt()["devices"][DEV]
    assert len(d["name"].encode()) == 248 and d["name"] == "\u00e9" * 124
    assert len(d["alias"].encode()) == 248
    assert d["connected"] is False and d["state"] == "disconnected"
    # A battery over 100 % is no battery figure; the device is still there.
    bz.add_battery(DEV_PATH, 250)
    bz.update(DEV_PATH, DEVICE, {"Connected": dbus.Boolean(True)})
    world.wait(f"/bluetooth/devices/{DEV}/connected", True)
    assert world.bt()["devices"][DEV]["battery"] is None
    # Objects where BlueZ puts none are left out, and nothing else is disturbed.
    bz.control("/").AddObject("/org/bluez/hci0/dev_nonsense", DEVICE, {"Address": "x"}, [])
    bz.control("/").EmitSignal("org.freedesktop.DBus.ObjectManager", "InterfacesAdded", "oa{sa{sv}}",
                               [dbus.ObjectPath("/org/bluez/hci0/dev_nonsense"),
                                dbus.Dictionary({DEVICE: dbus.Dictionary({"Address": "x"}, signature="sv")}, signature="sa{sv}")])
    bz.add_device("22:22:22:22:22:22", "Sentinel")
    world.wait("/bluetooth/devices/hci0_22_22_22_22_22_22/alias", "Sentinel")
    assert set(world.bt()["devices"]) == {DEV, "hci0_22_22_22_22_22_22"}
    assert "qsd" in world.env.qsd_log()


def icon_theme(env):
    """A hicolor theme of the test's own, with audio-headset in it; returns its icon directory."""
    theme = os.path.join(env.dir, "icons", "hicolor", "32x32", "devices")
    os.makedirs(theme)
    with open(os.path.join(env.dir, "icons", "hicolor", "index.theme"), "w") as f:
        f.write("[Icon Theme]\nName=Hicolor\nDirectories=32x32/devices\n\n[32x32/devices]\nSize=32\nType=Fixed\n")
    with open(os.path.join(theme, "audio-headset.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
    env.env["XDG_DATA_DIRS"] = env.dir
    env.env["QSD_ICON_THEME"] = "hicolor"
    return theme


def test_device_icons_resolve_through_the_theme(env):
    theme = icon_theme(env)
    w = start(env)
    w.bz.update(DEV_PATH, DEVICE, {"Icon": "audio-headset"})
    w.wait(f"/bluetooth/devices/{DEV}/icon", "audio-headset")
    assert w.bt()["devices"][DEV]["iconUrl"] == "file://" + os.path.join(theme, "audio-headset.png")
    w.bz.update(DEV_PATH, DEVICE, {"Icon": "no-such-icon"})
    w.wait(f"/bluetooth/devices/{DEV}/icon", "no-such-icon")
    assert w.bt()["devices"][DEV]["iconUrl"] is None


def test_an_icon_installed_later_is_found(env):
    theme = icon_theme(env)
    w = start(env)
    w.bz.update(DEV_PATH, DEVICE, {"Icon": "input-mouse"})
    w.wait(f"/bluetooth/devices/{DEV}/icon", "input-mouse")
    assert w.bt()["devices"][DEV]["iconUrl"] is None
    # A package installs the icon while qsd runs: the "not found" is not kept for good.
    tmp = os.path.join(env.dir, "input-mouse.png")
    with open(tmp, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
    os.rename(tmp, os.path.join(theme, "input-mouse.png"))
    w.wait(f"/bluetooth/devices/{DEV}/iconUrl", "file://" + os.path.join(theme, "input-mouse.png"))


def test_devices_are_bounded(env):
    w = start(env, devices=())
    bz = w.bz
    limit = 1024
    code = ("import dbus\n"
            "for i in range(args[0]):\n"
            "    a = '10:00:00:00:%02X:%02X' % (i // 256, i % 256)\n"
            "    self.AddDevice('hci0', a, 'D%d' % i)\n")
    bz.control("/").AddMethod("org.qsd.Test", "AddMany", "u", "", code)
    dbus_mod().Interface(bz.root, "org.qsd.Test").AddMany(dbus_mod().UInt32(limit + 10), timeout=120)
    sentinel = bz.add_adapter("hci1", "sentinel")
    w.wait("/bluetooth/adapters/hci1/alias", "sentinel", timeout=60)
    assert sentinel
    assert len(w.bt()["devices"]) == limit
    assert "are left out of the tree" in env.qsd_log()
    # One goes: one of those left out takes its place.
    gone = sorted(w.bt()["devices"])[0]
    path = "/org/bluez/hci0/dev_" + gone[len("hci0_"):]
    dbus_mod().Interface(bz.obj(HCI0), ADAPTER).RemoveDevice(dbus_mod().ObjectPath(path))
    w.c.wait_for(lambda: gone not in w.c.mirror(w.sub)["bluetooth"]["devices"] and
                 len(w.c.mirror(w.sub)["bluetooth"]["devices"]) == limit, what="a left-out device shown")


def test_the_domain_matches_its_schema_after_changes(world):
    world.bz.add_battery(DEV_PATH, 55)
    world.wait(f"/bluetooth/devices/{DEV}/battery", 0.55)
    assert not schema_errors(world.c, world.bt(), "BluetoothDomain")
    assert json.loads(json.dumps(world.bt())) == world.c.call("tree.get", {"path": "/bluetooth"})["value"]


def bluetoothctl(env, *args):
    """BlueZ's own command-line client, on the private bus."""
    return subprocess.run(["bluetoothctl", *args], env=env.env, capture_output=True, text=True, timeout=30,
                          check=True).stdout


def test_bluetoothctl_and_qsd_see_the_same(world):
    env = world.env
    # What another client of BlueZ does shows in qsd...
    bluetoothctl(env, "power", "off")
    world.wait("/bluetooth/adapters/hci0/state", "disabled")
    bluetoothctl(env, "connect", "11:22:33:44:55:66")
    world.wait(f"/bluetooth/devices/{DEV}/state", "connected")
    # ...and what qsd does shows in it.
    world.c.call("bluetooth.setEnabled", {"adapter": "hci0", "enabled": True})
    world.c.call("bluetooth.setAlias", {"adapter": "hci0", "alias": "Seen by bluetoothctl"})
    world.c.call("bluetooth.setTrusted", {"device": DEV, "trusted": True})
    show = bluetoothctl(env, "show")
    assert "Alias: Seen by bluetoothctl" in show and "Powered: yes" in show
    # (The template's Connect signals Connected without storing it, so a fresh read says no.)
    assert "Trusted: yes" in bluetoothctl(env, "info", "11:22:33:44:55:66")
