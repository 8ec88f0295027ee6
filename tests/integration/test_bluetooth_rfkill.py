"""Adapter states from rfkill, and bluetooth.setEnabled lifting a soft block, without the
kernel's /dev/rfkill (a CI machine has none): qsd is pointed at a Unix socket ($QSD_RFKILL)
served here by a fake kernel that speaks /dev/rfkill's records (struct rfkill_event, 8 bytes),
and at a directory of switch names ($QSD_RFKILL_SYSFS, as /sys/class/rfkill)."""

import json
import os
import select
import socket
import struct

import pytest

from bluezmock import ADAPTER, Bluez, dbus_mod
from qsdtest import RpcError

HCI0 = "/org/bluez/hci0"
TYPE_BLUETOOTH, TYPE_WLAN = 2, 1
OP_ADD, OP_DEL, OP_CHANGE = 0, 1, 2


class FakeKernel:
    """The rfkill device: events to qsd, and the records qsd writes back."""

    def __init__(self, env):
        self.dir = os.path.join(env.dir, "rfkill-sysfs")
        os.makedirs(self.dir)
        self.path = os.path.join(env.dir, "rfkill")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.conn = None
        env.env["QSD_RFKILL"] = self.path
        env.env["QSD_RFKILL_SYSFS"] = self.dir

    def accept(self):
        r, _, _ = select.select([self.listener], [], [], 10)
        assert r, "qsd did not open the rfkill device"
        self.conn, _ = self.listener.accept()
        self.conn.settimeout(10)

    def switch(self, idx, name, op=OP_ADD, soft=False, hard=False, type_=TYPE_BLUETOOTH):
        if op == OP_ADD:
            os.makedirs(os.path.join(self.dir, f"rfkill{idx}"), exist_ok=True)
            with open(os.path.join(self.dir, f"rfkill{idx}", "name"), "w") as f:
                f.write(name + "\n")
        self.conn.sendall(struct.pack("=IBBBB", idx, type_, op, int(soft), int(hard)))

    def read_request(self):
        data = b""
        while len(data) < 8:
            chunk = self.conn.recv(8 - len(data))
            assert chunk, "qsd closed the rfkill device"
            data += chunk
        idx, type_, op, soft, hard = struct.unpack("=IBBBB", data)
        return {"idx": idx, "type": type_, "op": op, "soft": soft, "hard": hard}


class World:
    def __init__(self, env):
        self.kernel = FakeKernel(env)
        self.bz = Bluez(env, ["hci0"])
        env.start_qsd(backends=["bluetooth"])
        self.kernel.accept()
        self.c = env.client()
        self.sub = self.c.subscribe(["/bluetooth"])
        self.c.wait_value(self.sub, "/bluetooth/available", True)

    def state(self, expected):
        return self.c.wait_value(self.sub, "/bluetooth/adapters/hci0/state", expected)


@pytest.fixture
def world(env):
    w = World(env)
    yield w
    w.c.close()


def power_off(w):
    w.bz.set_property(HCI0, ADAPTER, "Powered", dbus_mod().Boolean(False))
    w.c.wait_value(w.sub, "/bluetooth/adapters/hci0/enabled", False)


def test_a_soft_block_is_lifted_then_the_adapter_powered(world):
    k = world.kernel
    power_off(world)
    k.switch(0, "hci0", soft=True)
    world.state("blocked")
    # Another radio's switch changes nothing.
    k.switch(1, "phy0", soft=False, hard=True, type_=TYPE_WLAN)
    c = world.c
    req = {"jsonrpc": "2.0", "id": 900, "method": "bluetooth.setEnabled", "params": {"adapter": "hci0", "enabled": True}}
    c.send_raw(json.dumps(req) + "\n")
    # qsd asks the kernel to lift the soft block of hci0's switch, and waits for the kernel.
    assert k.read_request() == {"idx": 0, "type": TYPE_BLUETOOTH, "op": OP_CHANGE, "soft": 0, "hard": 0}
    k.switch(0, "hci0", op=OP_CHANGE, soft=False)
    answer = c.read_message()
    while answer.get("id") != 900:
        answer = c.read_message()
    assert answer["result"] == {"adapter": "hci0", "enabled": True}
    world.state("enabled")
    assert world.c.mirror(world.sub)["bluetooth"]["adapters"]["hci0"]["enabled"] is True



def test_a_later_power_off_wins_over_a_power_on_waiting_for_the_kernel(world):
    k, c = world.kernel, world.c
    power_off(world)
    k.switch(0, "hci0", soft=True)
    world.state("blocked")
    req = {"jsonrpc": "2.0", "id": 901, "method": "bluetooth.setEnabled", "params": {"adapter": "hci0", "enabled": True}}
    c.send_raw(json.dumps(req) + "\n")
    assert k.read_request() == {"idx": 0, "type": TYPE_BLUETOOTH, "op": OP_CHANGE, "soft": 0, "hard": 0}
    # The user turns Bluetooth off again before the kernel reported the block lifted.
    assert c.call("bluetooth.setEnabled", {"adapter": "hci0", "enabled": False}) == {"adapter": "hci0", "enabled": False}
    k.switch(0, "hci0", op=OP_CHANGE, soft=False)
    c.wait_value(world.sub, "/bluetooth/adapters/hci0/state", predicate=lambda s: s != "blocked")
    # A barrier through BlueZ: a Set of Powered that qsd made when the kernel reported reached the
    # mock, and its PropertiesChanged qsd, before this Set.
    c.call("bluetooth.setAlias", {"adapter": "hci0", "alias": "barrier"})
    c.wait_value(world.sub, "/bluetooth/adapters/hci0/alias", "barrier")
    # The latest call won: the adapter stays off, and the earlier call says it was superseded.
    hci0 = c.mirror(world.sub)["bluetooth"]["adapters"]["hci0"]
    assert hci0["enabled"] is False and hci0["state"] == "disabled", hci0
    err = c.answer(901).get("error")
    assert err and err["code"] == -32002 and err["data"]["name"] == "qsd.bluetooth.Superseded", err
    assert err["data"]["backend"] == "bluetooth"


def test_a_hard_block_is_named(world):
    k = world.kernel
    power_off(world)
    k.switch(0, "hci0", hard=True)
    world.state("blocked")
    with pytest.raises(RpcError) as err:
        world.c.call("bluetooth.setEnabled", {"adapter": "hci0", "enabled": True})
    assert err.value.code == -32002
    assert err.value.data["name"] == "qsd.rfkill.HardBlocked"
    assert err.value.data["switches"] == ["hci0"]
    assert "hard-blocked" in err.value.message
    # Powering off needs no unblock.
    assert world.c.call("bluetooth.setEnabled", {"adapter": "hci0", "enabled": False}) == {"adapter": "hci0", "enabled": False}


def test_a_soft_block_qsd_may_not_lift_is_named(world):
    k = world.kernel
    power_off(world)
    k.switch(3, "tpacpi_bluetooth_sw", soft=True)
    world.state("blocked")
    # The device refuses writes (as /dev/rfkill does for a user without the right).
    k.conn.shutdown(socket.SHUT_RD)
    with pytest.raises(RpcError) as err:
        world.c.call("bluetooth.setEnabled", {"adapter": "hci0", "enabled": True})
    assert err.value.code == -32002
    assert err.value.data["name"] == "qsd.rfkill.SoftBlocked"
    assert err.value.data["switches"] == ["tpacpi_bluetooth_sw"]
    assert world.c.mirror(world.sub)["bluetooth"]["adapters"]["hci0"]["state"] == "blocked"


def test_switches_that_go_block_nothing(world):
    k = world.kernel
    k.switch(0, "hci0", soft=True)
    world.state("blocked")
    k.switch(0, "hci0", op=OP_DEL)
    world.state("enabled")
    k.switch(4, "hci0", hard=True)
    world.state("blocked")
    # The device going away (qsd can no longer tell) leaves BlueZ's word.
    k.conn.close()
    world.state("enabled")
