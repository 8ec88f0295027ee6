"""qsd's pairing agent (org.bluez.Agent1) against the bluez5 mock. The template's Pair never asks
an agent, so the test makes the mock call qsd's agent itself, from bluetoothd's own connection,
as bluetoothd does during a pairing (bluezmock.Bluez.call_agent), and answers through qsd."""

import os

import pytest

from bluezmock import AGENT_PATH, Bluez, dbus_mod
from qsdtest import RpcError, answers_late_once, ts

DEV = Bluez.device_key()
DEV_PATH = Bluez.device_path()
REQUESTS = "/bluetooth/agent/requests"


class Agent:
    def __init__(self, env, timeout_ms=None):
        env.env["QSD_RFKILL"] = os.path.join(env.dir, "no-rfkill")
        if timeout_ms:
            env.env["QSD_BLUETOOTH_AGENT_TIMEOUT_MS"] = str(timeout_ms)
        self.env = env
        self.bz = Bluez(env, ["hci0"])
        self.bz.add_device()
        env.start_qsd(backends=["bluetooth"])
        self.c = env.client()
        self.sub = self.c.subscribe(["/bluetooth"])
        self.c.wait_value(self.sub, "/bluetooth/agent/isDefault", True)
        self.qsd = self.bz.qsd_name(env.daemon.pid)

    def requests(self):
        return self.c.mirror(self.sub)["bluetooth"]["agent"]["requests"]

    def wait_request(self, n=1):
        self.c.wait_for(lambda: len(self.requests()) >= n, what=f"{n} agent request(s)")
        return self.requests()

    def wait_no_request(self):
        self.c.wait_for(lambda: not self.requests(), what="no agent request")

    def ask(self, method, sig, *values):
        return self.bz.call_agent(self.qsd, method, sig, *values)


@pytest.fixture
def agent(env):
    a = Agent(env)
    yield a
    a.c.close()


def dev_path():
    return dbus_mod().ObjectPath(DEV_PATH)


# ------------------------------------------------------------------------------------------------


def test_confirmation_accepted_through_qsd(agent):
    dbus = dbus_mod()
    shell = agent.env.client()
    shell.call("events.subscribe", {"topics": ["bluetooth.agentRequest"]})
    token = agent.ask("RequestConfirmation", "ou", dev_path(), dbus.UInt32(123456))
    req = agent.wait_request()["1"]
    assert req["device"] == DEV and req["kind"] == "requestConfirmation" and req["passkey"] == "123456"
    assert req["id"] == "1" and req["pinCode"] is None and req["entered"] is None and req["service"] is None
    assert req["createdAt"].endswith("Z")
    # The same fields as an event, for a shell that raises a prompt without the domain.
    shell.wait_for(lambda: any(n["method"] == "event" for n in shell.notifications), what="the event")
    event = next(n["params"] for n in shell.notifications if n["method"] == "event")
    assert event["topic"] == "bluetooth.agentRequest" and event["data"] == req
    # BlueZ's call is still waiting: only the answer ends it.
    assert agent.bz.agent_result(token) == ["pending"]
    assert shell.call("bluetooth.answer", {"request": "1", "accept": True}) == {"request": "1", "accepted": True}
    assert agent.bz.wait_agent_result(token) == ["ok"]
    agent.wait_no_request()
    # Gone for everyone: a second answer finds nothing.
    with pytest.raises(RpcError) as err:
        agent.c.call("bluetooth.answer", {"request": "1", "accept": True})
    assert err.value.code == -32001 and err.value.data["param"] == "request"


def test_confirmation_rejected(agent):
    token = agent.ask("RequestConfirmation", "ou", dev_path(), dbus_mod().UInt32(42))
    assert agent.wait_request()["1"]["passkey"] == "000042"
    agent.c.call("bluetooth.answer", {"request": "1", "accept": False})
    assert agent.bz.wait_agent_result(token)[:2] == ["error", "org.bluez.Error.Rejected"]
    agent.wait_no_request()


def test_pin_code_and_passkey_requests(agent):
    c = agent.c
    token = agent.ask("RequestPinCode", "o", dev_path())
    agent.wait_request()
    with pytest.raises(RpcError) as err:
        c.call("bluetooth.answer", {"request": "1", "accept": True})
    assert err.value.code == -32602 and err.value.data["param"] == "pinCode"
    with pytest.raises(RpcError) as err:
        c.call("bluetooth.answer", {"request": "1", "accept": True, "pinCode": "12\u00e934"})
    assert err.value.data["param"] == "pinCode"
    # A wrong answer lost nothing: the request still waits.
    assert "1" in agent.requests()
    c.call("bluetooth.answer", {"request": "1", "accept": True, "pinCode": "0000"})
    assert agent.bz.wait_agent_result(token) == ["ok", "0000"]

    token = agent.ask("RequestPasskey", "o", dev_path())
    assert agent.wait_request()["2"]["kind"] == "requestPasskey"
    with pytest.raises(RpcError) as err:
        c.call("bluetooth.answer", {"request": "2", "accept": True})
    assert err.value.data["param"] == "passkey"
    c.call("bluetooth.answer", {"request": "2", "accept": True, "passkey": 1234})
    assert agent.bz.wait_agent_result(token) == ["ok", "1234"]

    token = agent.ask("AuthorizeService", "os", dev_path(), "0000110b-0000-1000-8000-00805f9b34fb")
    req = agent.wait_request()["3"]
    assert req["kind"] == "authorizeService" and req["service"] == "0000110b-0000-1000-8000-00805f9b34fb"
    c.call("bluetooth.answer", {"request": "3", "accept": True})
    assert agent.bz.wait_agent_result(token) == ["ok"]

    token = agent.ask("RequestAuthorization", "o", dev_path())
    assert agent.wait_request()["4"]["kind"] == "requestAuthorization"
    c.call("bluetooth.answer", {"request": "4", "accept": False})
    assert agent.bz.wait_agent_result(token)[:2] == ["error", "org.bluez.Error.Rejected"]


def test_display_requests_are_answered_at_once_and_shown_until_paired(agent):
    dbus = dbus_mod()
    token = agent.ask("DisplayPasskey", "ouq", dev_path(), dbus.UInt32(7), dbus.UInt16(0))
    # BlueZ goes on with the pairing at once; the passkey stays on screen.
    assert agent.bz.wait_agent_result(token) == ["ok"]
    req = agent.wait_request()["1"]
    assert req["kind"] == "displayPasskey" and req["passkey"] == "000007" and req["entered"] == 0
    # Keys typed on the other side update the request in place.
    agent.ask("DisplayPasskey", "ouq", dev_path(), dbus.UInt32(7), dbus.UInt16(3))
    agent.c.wait_value(agent.sub, f"{REQUESTS}/1/entered", 3)
    assert list(agent.requests()) == ["1"]
    # Paired: nothing to show any more.
    agent.bz.mock.PairDevice("hci0", "11:22:33:44:55:66", 0)
    agent.wait_no_request()
    token = agent.ask("DisplayPinCode", "os", dev_path(), "4711")
    assert agent.bz.wait_agent_result(token) == ["ok"]
    # An update took no id of its own: this is the second request.
    req = agent.wait_request()["2"]
    assert req["kind"] == "displayPinCode" and req["pinCode"] == "4711"
    # A client dismisses it.
    assert agent.c.call("bluetooth.answer", {"request": "2", "accept": True}) == {"request": "2", "accepted": True}
    agent.wait_no_request()


def events_of(shell):
    return [n["params"]["data"] for n in shell.notifications
            if n["method"] == "event" and n["params"]["topic"] == "bluetooth.agentRequest"]


def test_a_new_passkey_for_the_device_is_a_new_request(agent):
    dbus = dbus_mod()
    shell = agent.env.client()
    shell.call("events.subscribe", {"topics": ["bluetooth.agentRequest"]})
    agent.ask("DisplayPasskey", "ouq", dev_path(), dbus.UInt32(111111), dbus.UInt16(0))
    first = agent.wait_request()["1"]
    # A key typed on the other side: the same request, no event.
    agent.ask("DisplayPasskey", "ouq", dev_path(), dbus.UInt32(111111), dbus.UInt16(2))
    agent.c.wait_value(agent.sub, f"{REQUESTS}/1/entered", 2)
    # The pairing failed and the next attempt shows a new passkey: a new request in place of the
    # old one, announced, with its own time (and its own 60 s).
    agent.ask("DisplayPasskey", "ouq", dev_path(), dbus.UInt32(222222), dbus.UInt16(0))
    agent.c.wait_for(lambda: list(agent.requests()) == ["2"], what="request 2 in place of request 1")
    second = agent.requests()["2"]
    assert second["kind"] == "displayPasskey" and second["passkey"] == "222222" and second["entered"] == 0
    assert ts(second["createdAt"]) >= ts(first["createdAt"])
    shell.wait_for(lambda: [e["id"] for e in events_of(shell)] == ["1", "2"], what="an event per request")
    assert events_of(shell)[1] == second
    # The same passkey from the start again (nothing typed): a new attempt as well.
    agent.ask("DisplayPasskey", "ouq", dev_path(), dbus.UInt32(222222), dbus.UInt16(0))
    agent.c.wait_for(lambda: list(agent.requests()) == ["3"], what="request 3 in place of request 2")
    # One thing shown per device: a PIN code to show replaces the passkey.
    agent.ask("DisplayPinCode", "os", dev_path(), "0000")
    agent.c.wait_for(lambda: list(agent.requests()) == ["4"], what="request 4 in place of request 3")
    assert agent.requests()["4"]["pinCode"] == "0000"
    shell.wait_for(lambda: [e["id"] for e in events_of(shell)] == ["1", "2", "3", "4"], what="an event per request")
    shell.close()


def test_display_requests_end_with_the_pairing(agent):
    dbus = dbus_mod()
    c, bz = agent.c, agent.bz
    # qsd's Pair fails (the other side refused, or typed the passkey wrong): BlueZ sends no Cancel
    # for what it asked qsd to show, and the passkey is of no use any more.
    bz.control(DEV_PATH).AddMethod("org.bluez.Device1", "Pair", "", "",
                                   "raise dbus.exceptions.DBusException('Authentication Failed', "
                                   "name='org.bluez.Error.AuthenticationFailed')")
    agent.ask("DisplayPasskey", "ouq", dev_path(), dbus.UInt32(7), dbus.UInt16(0))
    agent.wait_request()
    with pytest.raises(RpcError) as err:
        c.call("bluetooth.pair", {"device": DEV})
    assert err.value.data["name"] == "org.bluez.Error.AuthenticationFailed"
    c.sync()
    assert agent.requests() == {}
    # A pairing started elsewhere (the other side, bluetoothctl), cancelled through qsd.
    agent.ask("DisplayPinCode", "os", dev_path(), "4711")
    agent.wait_request()
    assert c.call("bluetooth.cancelPairing", {"device": DEV}) == {"device": DEV}
    c.sync()
    assert agent.requests() == {}
    # ... also when BlueZ says there was no pairing left to cancel.
    bz.control(DEV_PATH).AddMethod("org.bluez.Device1", "CancelPairing", "", "",
                                   "raise dbus.exceptions.DBusException('Does Not Exist', "
                                   "name='org.bluez.Error.DoesNotExist')")
    agent.ask("DisplayPinCode", "os", dev_path(), "4712")
    agent.wait_request()
    with pytest.raises(RpcError) as err:
        c.call("bluetooth.cancelPairing", {"device": DEV})
    assert err.value.data["name"] == "org.bluez.Error.DoesNotExist"
    c.sync()
    assert agent.requests() == {}
    # The other side drops the link during its pairing: nothing to show any more.
    bz.mock.ConnectDevice("hci0", "11:22:33:44:55:66")
    c.wait_value(agent.sub, f"/bluetooth/devices/{DEV}/connected", True)
    agent.ask("DisplayPasskey", "ouq", dev_path(), dbus.UInt32(9), dbus.UInt16(0))
    agent.wait_request()
    bz.mock.DisconnectDevice("hci0", "11:22:33:44:55:66")
    c.wait_value(agent.sub, f"/bluetooth/devices/{DEV}/connected", False)
    c.sync()
    assert agent.requests() == {}
    # Questions are not ended by a disconnection: only BlueZ's Cancel, an answer or the timeout
    # end them.
    agent.ask("RequestConfirmation", "ou", dev_path(), dbus.UInt32(10))
    agent.wait_request()
    bz.mock.ConnectDevice("hci0", "11:22:33:44:55:66")
    c.wait_value(agent.sub, f"/bluetooth/devices/{DEV}/connected", True)
    bz.mock.DisconnectDevice("hci0", "11:22:33:44:55:66")
    c.wait_value(agent.sub, f"/bluetooth/devices/{DEV}/connected", False)
    c.sync()
    assert [r["kind"] for r in agent.requests().values()] == ["requestConfirmation"]


def test_shown_passkeys_leave_room_for_questions(agent):
    dbus = dbus_mod()
    phones = [f"22:00:00:00:00:{i:02X}" for i in range(17)]
    for address in phones:
        agent.bz.add_device(address, "Phone")

    def show(address, passkey):
        token = agent.ask("DisplayPasskey", "ouq", dbus.ObjectPath(Bluez.device_path(address)), dbus.UInt32(passkey),
                          dbus.UInt16(0))
        assert agent.bz.wait_agent_result(token) == ["ok"]

    # Sixteen phones pair with us within a minute, each passkey still shown...
    for i, address in enumerate(phones[:16]):
        show(address, i)
    agent.wait_request(16)
    # ... and BlueZ still gets its question asked, not rejected.
    token = agent.ask("RequestConfirmation", "ou", dev_path(), dbus.UInt32(424242))

    def asked():
        return [r for r in agent.requests().values() if r["kind"] == "requestConfirmation"]
    agent.c.wait_for(lambda: asked() or agent.bz.agent_result(token) != ["pending"], what="the question shown or answered")
    assert agent.bz.agent_result(token) == ["pending"]
    question = asked()[0]
    # What is shown is bounded all the same: a 17th phone's passkey takes the oldest one's place.
    show(phones[16], 16)
    agent.c.wait_for(lambda: any(r["passkey"] == "000016" for r in agent.requests().values()), what="the 17th passkey")
    shown = [r for r in agent.requests().values() if r["kind"] == "displayPasskey"]
    assert len(shown) == 16 and "1" not in agent.requests()
    agent.c.call("bluetooth.answer", {"request": question["id"], "accept": True})
    assert agent.bz.wait_agent_result(token) == ["ok"]


def test_cancel_removes_the_request(agent):
    agent.ask("RequestConfirmation", "ou", dev_path(), dbus_mod().UInt32(1))
    agent.wait_request()
    token = agent.ask("Cancel", "")
    assert agent.bz.wait_agent_result(token) == ["ok"]
    agent.wait_no_request()
    with pytest.raises(RpcError) as err:
        agent.c.call("bluetooth.answer", {"request": "1", "accept": True})
    assert err.value.code == -32001


def test_cancel_ends_the_question_and_not_another_devices_passkey(agent):
    # A keyboard shows a passkey to type while a headset's confirmation is cancelled: BlueZ's
    # Cancel is about the call it waits for, and the keyboard's pairing goes on.
    dbus = dbus_mod()
    agent.bz.add_device(address="AA:BB:CC:DD:EE:FF", alias="Keyboard")
    keyboard = dbus.ObjectPath("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF")
    agent.ask("DisplayPasskey", "ouq", keyboard, dbus.UInt32(654321), dbus.UInt16(0))
    agent.ask("RequestConfirmation", "ou", dev_path(), dbus.UInt32(111111))
    agent.wait_request(2)
    assert agent.bz.wait_agent_result(agent.ask("Cancel", "")) == ["ok"]
    agent.c.wait_for(lambda: [r["kind"] for r in agent.requests().values()] == ["displayPasskey"],
                     what="the question ended, the passkey still shown")
    shown = next(iter(agent.requests().values()))
    assert (shown["device"], shown["passkey"]) == ("hci0_AA_BB_CC_DD_EE_FF", "654321")


def test_unanswered_requests_time_out(env):
    agent = Agent(env, timeout_ms=300)
    token = agent.ask("RequestConfirmation", "ou", dev_path(), dbus_mod().UInt32(5))
    agent.wait_request()
    agent.wait_no_request()
    assert agent.bz.wait_agent_result(token)[:2] == ["error", "org.bluez.Error.Canceled"]


def test_requests_in_flight_are_bounded(agent):
    dbus = dbus_mod()
    tokens = [agent.ask("RequestConfirmation", "ou", dev_path(), dbus.UInt32(i)) for i in range(40)]
    agent.wait_request(16)
    # The 17th and later are refused at once; 16 wait.
    for t in tokens[16:]:
        assert agent.bz.wait_agent_result(t)[:2] == ["error", "org.bluez.Error.Rejected"]
    assert len(agent.requests()) == 16
    assert all(agent.bz.agent_result(t) == ["pending"] for t in tokens[:16])
    # Answering one makes room again.
    agent.c.call("bluetooth.answer", {"request": "1", "accept": True})
    assert agent.bz.wait_agent_result(tokens[0]) == ["ok"]
    late = agent.ask("RequestConfirmation", "ou", dev_path(), dbus.UInt32(99))
    agent.c.wait_for(lambda: any(r["passkey"] == "000099" for r in agent.requests().values()), what="the late request")
    assert agent.bz.agent_result(late) == ["pending"]


def test_only_bluez_may_call_the_agent(agent):
    dbus = dbus_mod()
    # Another program on the bus, pretending to be bluetoothd.
    other = agent.env.dbus()
    obj = other.get_object(agent.qsd, AGENT_PATH)
    with pytest.raises(dbus.DBusException) as err:
        obj.RequestConfirmation(dev_path(), dbus.UInt32(1), dbus_interface="org.bluez.Agent1")
    assert err.value.get_dbus_name() == "org.freedesktop.DBus.Error.AccessDenied"
    with pytest.raises(dbus.DBusException) as err:
        obj.Release(dbus_interface="org.bluez.Agent1")
    assert err.value.get_dbus_name() == "org.freedesktop.DBus.Error.AccessDenied"
    # Garbage from BlueZ itself: a path that is no device, a passkey of seven digits, wrong types.
    for method, sig, values in [("RequestConfirmation", "ou", [dbus.ObjectPath("/org/bluez"), dbus.UInt32(1)]),
                                ("RequestConfirmation", "ou", [dev_path(), dbus.UInt32(1000000)])]:
        token = agent.ask(method, sig, *values)
        assert agent.bz.wait_agent_result(token)[:2] == ["error", "org.bluez.Error.Rejected"]
    token = agent.ask("RequestConfirmation", "ss", "x", "y")
    assert agent.bz.wait_agent_result(token)[:2] == ["error", "org.freedesktop.DBus.Error.InvalidArgs"]
    assert agent.requests() == {}
    assert agent.c.mirror(agent.sub)["bluetooth"]["agent"]["registered"] is True


def test_release_and_restart(agent, env):
    agent.ask("RequestConfirmation", "ou", dev_path(), dbus_mod().UInt32(1))
    agent.wait_request()
    token = agent.ask("Release", "")
    assert agent.bz.wait_agent_result(token) == ["ok"]
    agent.c.wait_value(agent.sub, "/bluetooth/agent/registered", False)
    assert agent.c.mirror(agent.sub)["bluetooth"]["agent"]["isDefault"] is False
    agent.wait_no_request()
    # A new bluetoothd: qsd registers again and BlueZ's questions reach it.
    agent.bz.stop()
    agent.c.wait_value(agent.sub, "/bluetooth/available", False)
    bz = Bluez(env, ["hci0"])
    bz.add_device()
    agent.c.wait_value(agent.sub, "/bluetooth/agent/isDefault", True)
    assert bz.calls("/org/bluez", "RegisterAgent") == [[AGENT_PATH, "KeyboardDisplay"]]
    token = bz.call_agent(agent.qsd, "RequestConfirmation", "ou", dev_path(), dbus_mod().UInt32(2))
    assert agent.wait_request()["2"]["passkey"] == "000002"
    agent.c.call("bluetooth.answer", {"request": "2", "accept": True})
    assert bz.wait_agent_result(token) == ["ok"]


def test_a_device_that_goes_takes_its_requests(agent):
    agent.ask("RequestConfirmation", "ou", dev_path(), dbus_mod().UInt32(1))
    agent.wait_request()
    dbus_mod().Interface(agent.bz.obj("/org/bluez/hci0"), "org.bluez.Adapter1").RemoveDevice(dev_path())
    agent.wait_no_request()
    agent.c.wait_for(lambda: DEV not in agent.c.mirror(agent.sub)["bluetooth"]["devices"], what="the device gone")


# BlueZ busy while the system starts: its first RegisterAgent answers after 6 s, past the 5 s qsd
# waits (and blocks the whole mock meanwhile), and registers the agent then, as bluetoothd would.
SLOW_REGISTER = answers_late_once("""
if args[0] in self.agent_paths:
    raise dbus.exceptions.DBusException('Already Exists', name='org.bluez.Error.AlreadyExists')
if not self.default_agent:
    self.default_agent = args[0]
self.agent_paths += [args[0]]
self.capabilities[str(args[0])] = args[1]
""")


def test_a_registration_bluez_did_not_answer_in_time_is_made_again(env):
    env.env["QSD_RFKILL"] = os.path.join(env.dir, "no-rfkill")
    bz = Bluez(env, ["hci0"])
    bz.control("/org/bluez").AddMethod("org.bluez.AgentManager1", "RegisterAgent", "os", "", SLOW_REGISTER)
    env.start_qsd(backends=["bluetooth"])
    c = env.client()
    sub = c.subscribe(["/bluetooth"])
    # Shown while it is made again: the error of the call that timed out.
    c.wait_value(sub, "/bluetooth/agent/error/name", predicate=lambda n: n in (
        "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout"), timeout=30)
    c.wait_value(sub, "/bluetooth/agent/isDefault", True, timeout=30)
    agent = c.mirror(sub)["bluetooth"]["agent"]
    assert agent["registered"] is True and agent["error"] is None
    # Asked again: BlueZ had it already (AlreadyExists), which is qsd's own. (A loaded machine
    # may see the second call time out as well.)
    calls = bz.calls("/org/bluez", "RegisterAgent")
    assert len(calls) >= 2 and all(call == [AGENT_PATH, "KeyboardDisplay"] for call in calls), calls
    assert "RegisterAgent: BlueZ did not answer in time" in env.qsd_log()
    assert env.daemon.poll() is None
