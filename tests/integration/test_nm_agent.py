"""The secret agent and /network/profiles against python-dbusmock's NetworkManager with an
AgentManager added (nmmock.py). The test plays NetworkManager: it calls qsd's agent from the
mock's own connection (the one that owns org.freedesktop.NetworkManager), as NetworkManager does,
and reads the agent's D-Bus answers exactly as NetworkManager would get them. The shell's side
goes through the socket."""

import dbus
import pytest

from nmmock import SECRET_AGENT, SECRET_AGENT_PATH, NmMock, unique_name_of
from qsdtest import RpcError, pointer_get, wait_until

NO_SECRETS = "org.freedesktop.NetworkManager.SecretAgent.NoSecrets"
USER_CANCELED = "org.freedesktop.NetworkManager.SecretAgent.UserCanceled"
AGENT_CANCELED = "org.freedesktop.NetworkManager.SecretAgent.AgentCanceled"
ALLOW_INTERACTION, REQUEST_NEW, USER_REQUESTED = 0x1, 0x2, 0x4
SETTINGS = "/org/freedesktop/NetworkManager/Settings/"
PSK = "correct horse battery staple"


def wifi_connection(uuid="6a1b3c4d-0000-4000-8000-000000000001", ssid="Neighbour"):
    """A Wi-Fi profile as NetworkManager passes it to GetSecrets: without its secrets."""
    return {
        "connection": {"id": ssid, "uuid": uuid, "type": "802-11-wireless"},
        "802-11-wireless": {"ssid": dbus.ByteArray(ssid.encode()), "mode": "infrastructure"},
        "802-11-wireless-security": {"key-mgmt": "wpa-psk", "psk-flags": dbus.UInt32(1)},
    }


def dot1x_connection(uuid="6a1b3c4d-0000-4000-8000-0000000000e1", eap="peap", phase2="mschapv2"):
    """A Wi-Fi enterprise profile as NetworkManager passes it to GetSecrets, with a system-owned
    secret that came along (never read)."""
    return {
        "connection": {"id": "Campus", "uuid": uuid, "type": "802-11-wireless"},
        "802-11-wireless": {"ssid": dbus.ByteArray(b"Campus"), "mode": "infrastructure"},
        "802-11-wireless-security": {"key-mgmt": "wpa-eap"},
        "802-1x": {"eap": dbus.Array([eap], signature="s"), "phase2-auth": phase2, "identity": "bob",
                   "password-flags": dbus.UInt32(1), "ca-cert-password": "system-owned ca secret"},
    }


def vpn_connection(uuid="6a1b3c4d-0000-4000-8000-0000000000aa"):
    return {
        "connection": {"id": "Work VPN", "uuid": uuid, "type": "vpn"},
        "vpn": {"service-type": "org.freedesktop.NetworkManager.openvpn",
                "data": dbus.Dictionary({"remote": "vpn.example.com", "password-flags": "1"}, signature="ss")},
    }


class Agent:
    """NetworkManager's side of qsd's agent, and a client on qsd's socket."""

    def __init__(self, env, args=(), qsd_env=None):
        self.env = env
        self.m = NmMock(env).add_agent_manager()
        self.wlan = self.m.add_wifi("wlan0")
        self.m.add_ap(self.wlan, "ap_nb", "Neighbour", "00:11:22:33:44:77", strength=40)
        # Debug logging: every log line qsd writes is searched for the secrets.
        env.start_qsd("-v", *args, backends=["nm"], env=qsd_env)
        self.c = env.client()
        self.sub = self.c.subscribe(["/network"])
        self.c.wait_value(self.sub, "/network/available", True)
        self.wait("/network/secretAgentRegistered", True)
        self.name = unique_name_of(self.m.bus, env.daemon.pid)
        assert self.name

    def get(self, path):
        return pointer_get(self.c.mirror(self.sub), path, None)

    def wait(self, path, value=None, predicate=None):
        return self.c.wait_value(self.sub, path, value, predicate)

    def ask(self, connection=None, setting="802-11-wireless-security", hints=(), flags=ALLOW_INTERACTION, path="7"):
        return self.m.get_secrets(self.name, connection or wifi_connection(), SETTINGS + path, setting, hints, flags)

    def reply(self, token):
        return wait_until(lambda: (r := self.m.agent_reply(token))[0] != "pending" and r, what="the agent's answer")

    def pending(self, token):
        return self.m.agent_reply(token)[0] == "pending"

    def claim(self, client=None, on=True):
        return (client or self.c).call("network.handleSecrets", {"enabled": on})

    def only_request(self):
        self.wait("/network/secretRequests", predicate=lambda v: v and len(v) == 1)
        (rid, req), = self.get("/network/secretRequests").items()
        return rid, req


@pytest.fixture
def agent(env):
    return Agent(env)


def test_registers_with_vpn_hints(agent):
    assert agent.m.registrations() == [["org.qsd.agent", 1]]
    assert agent.get("/network/secretRequests") == {}


def test_without_interaction_or_claim_no_secrets_at_once(agent):
    # No claim: NetworkManager is told at once, and asks the next agent.
    assert agent.reply(agent.ask()) == ("error", NO_SECRETS, {})
    # A claim, but NetworkManager does not allow prompting (flags 0): never prompt.
    agent.claim()
    assert agent.reply(agent.ask(flags=0)) == ("error", NO_SECRETS, {})
    assert agent.reply(agent.ask(flags=USER_REQUESTED)) == ("error", NO_SECRETS, {})
    # A barrier: qsd answered NetworkManager in the step that would have written a request, and
    # a round trip on the socket brings every change made before it.
    agent.c.call("hello")
    assert agent.get("/network/secretRequests") == {}


def test_prompt_answered_with_a_psk(agent):
    events = agent.c.call("events.subscribe", {"topics": ["network.secretsRequested"]})
    assert events
    agent.claim()
    token = agent.ask(flags=ALLOW_INTERACTION | USER_REQUESTED)
    rid, req = agent.only_request()
    assert req == {
        "id": rid, "profile": "6a1b3c4d-0000-4000-8000-000000000001", "profileName": "Neighbour", "type": "wifi",
        "setting": "802-11-wireless-security", "fields": [{"key": "psk", "label": "Password", "secret": True}],
        "ssid": "Neighbour", "vpnService": None, "message": None, "reason": "missing", "userRequested": True,
        "createdAt": req["createdAt"],
    }
    agent.c.wait_for(lambda: any(n["method"] == "event" for n in agent.c.notifications), what="the event")
    event, = [n["params"] for n in agent.c.notifications if n["method"] == "event"]
    assert event["topic"] == "network.secretsRequested" and event["data"] == req
    assert agent.pending(token)

    # A key NetworkManager would refuse: refused here, and the request stays for another try.
    with pytest.raises(RpcError) as err:
        agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": "short"}})
    assert err.value.code == -32602 and err.value.data["param"] == "secrets.psk"
    with pytest.raises(RpcError) as err:
        agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"password": PSK}})
    assert err.value.code == -32602 and err.value.data["param"] == "secrets.password"
    assert rid in agent.get("/network/secretRequests") and agent.pending(token)

    assert agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": PSK}}) == {"request": rid}
    assert agent.reply(token) == ("ok", "", {"802-11-wireless-security": {"psk": PSK}})
    agent.wait("/network/secretRequests", {})
    with pytest.raises(RpcError) as err:
        agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": PSK}})
    assert err.value.code == -32001
    log = agent.env.qsd_log()
    assert PSK not in log and "short" not in log
    assert PSK not in str(agent.c.mirror(agent.sub))


def stack_holds(pid, text):
    """Whether qsd's main stack holds `text` (read through /proc/<pid>/mem: root, or a ptrace
    scope that allows it, else the test is skipped)."""
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                if line.rstrip().endswith("[stack]"):
                    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                    mem.seek(lo)
                    return text.encode() in mem.read(hi - lo)
    except PermissionError:
        pytest.skip("qsd's memory cannot be read here")
    return False


def test_an_answered_password_is_not_left_in_the_read_buffer(agent):
    # The socket's read buffer, on the stack, held the last request until the next one overwrote
    # it: after network.answerSecrets, the Wi-Fi password stayed in qsd's memory (a core dump of
    # it would carry it). qsd's own copy of the secrets is wiped once they are sent.
    agent.claim()
    token = agent.ask(flags=ALLOW_INTERACTION)
    rid, _ = agent.only_request()
    assert agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": PSK}}) == {"request": rid}
    assert agent.reply(token)[0] == "ok"
    agent.wait("/network/secretRequests", {})
    assert not stack_holds(agent.env.daemon.pid, PSK)


def test_psks_networkmanager_takes(agent):
    """An answer's psk follows NetworkManager's rule (nm_utils_wpa_psk_valid): 8..63 bytes of any
    kind, so a passphrase that is not ASCII joins, or 64 hex digits; SAE takes any password."""
    agent.claim()
    for psk in ("p\u00e4ssw\u00f6rd-123", "0123456789abcdef" * 4):
        token = agent.ask()
        rid, _ = agent.only_request()
        agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": psk}})
        assert agent.reply(token) == ("ok", "", {"802-11-wireless-security": {"psk": psk}})
        agent.wait("/network/secretRequests", {})
    # 64 characters that are not hex digits: refused, the request kept for another try.
    token = agent.ask()
    rid, _ = agent.only_request()
    for bad in ("x" * 64, "a" * 62 + "\u00e4", "p\u00e4ssw"):
        with pytest.raises(RpcError) as err:
            agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": bad}})
        assert err.value.code == -32602 and err.value.data["param"] == "secrets.psk", bad
    assert agent.pending(token) and rid in agent.get("/network/secretRequests")
    agent.c.call("network.cancelSecrets", {"request": rid})
    agent.wait("/network/secretRequests", {})
    # SAE (WPA3): a 7-character password is one.
    sae = wifi_connection()
    sae["802-11-wireless-security"]["key-mgmt"] = "sae"
    token = agent.ask(sae)
    rid, _ = agent.only_request()
    agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": "1234567"}})
    assert agent.reply(token) == ("ok", "", {"802-11-wireless-security": {"psk": "1234567"}})
    assert "p\u00e4ssw\u00f6rd-123" not in agent.env.qsd_log()


def test_dot1x_asks_for_what_networkmanager_hints(agent):
    """NetworkManager's hints name the 802.1X keys it needs: the request asks for those (a
    password would be ignored and asked for again, forever). An identity alone answers nothing:
    NetworkManager takes only secrets from an agent."""
    agent.claim()
    token = agent.ask(dot1x_connection(), "802-1x", ["phase2-private-key-password"])
    rid, req = agent.only_request()
    assert req["type"] == "8021x" and req["setting"] == "802-1x" and req["ssid"] == "Campus"
    assert req["fields"] == [{"key": "identity", "label": "Username", "secret": False},
                             {"key": "phase2-private-key-password", "label": "Inner private key password", "secret": True}]
    with pytest.raises(RpcError) as err:
        agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"identity": "bob"}})
    assert err.value.code == -32602 and err.value.data["param"] == "secrets"
    assert "phase2-private-key-password" in err.value.data["expected"]
    assert agent.pending(token) and rid in agent.get("/network/secretRequests")
    agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"identity": "bob",
                                                                       "phase2-private-key-password": "key pw"}})
    assert agent.reply(token) == ("ok", "", {"802-1x": {"identity": "bob", "phase2-private-key-password": "key pw"}})
    agent.wait("/network/secretRequests", {})

    # Several keys; password and its byte-array alternative password-raw make one field.
    agent.ask(dot1x_connection(), "802-1x", ["ca-cert-password", "client-cert-password", "pin"])
    rid, req = agent.only_request()
    assert [(f["key"], f["label"], f["secret"]) for f in req["fields"]] == [
        ("identity", "Username", False), ("ca-cert-password", "CA certificate password", True),
        ("client-cert-password", "Client certificate password", True), ("pin", "PIN", True)]
    agent.c.call("network.cancelSecrets", {"request": rid})
    agent.wait("/network/secretRequests", {})
    agent.ask(dot1x_connection(), "802-1x", ["password", "password-raw"])
    rid, req = agent.only_request()
    assert [f["key"] for f in req["fields"]] == ["identity", "password"]
    agent.c.call("network.cancelSecrets", {"request": rid})
    agent.wait("/network/secretRequests", {})
    # password-raw alone: the typed text goes as the bytes NetworkManager's ay takes.
    token = agent.ask(dot1x_connection(), "802-1x", ["password-raw"])
    rid, req = agent.only_request()
    assert req["fields"][1] == {"key": "password-raw", "label": "Password", "secret": True}
    agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"password-raw": "p\u00e4ss"}})
    state, _, secrets = agent.reply(token)
    assert state == "ok" and bytes(secrets["802-1x"]["password-raw"]) == "p\u00e4ss".encode()
    agent.wait("/network/secretRequests", {})

    # No hints (NetworkManager's own Ethernet and Wi-Fi devices give none): by the EAP method.
    agent.ask(dot1x_connection(eap="peap", phase2="mschapv2"), "802-1x")
    rid, req = agent.only_request()
    assert [f["key"] for f in req["fields"]] == ["identity", "password"]
    agent.c.call("network.cancelSecrets", {"request": rid})
    agent.wait("/network/secretRequests", {})
    agent.ask(dot1x_connection(eap="sim"), "802-1x")
    rid, req = agent.only_request()
    assert [f["key"] for f in req["fields"]] == ["identity", "pin"]
    agent.c.call("network.cancelSecrets", {"request": rid})
    agent.wait("/network/secretRequests", {})
    assert "system-owned ca secret" not in agent.env.qsd_log()


def test_cancel_is_exactly_user_canceled(agent):
    agent.claim()
    token = agent.ask()
    rid, _ = agent.only_request()
    assert agent.c.call("network.cancelSecrets", {"request": rid}) == {"request": rid}
    assert agent.reply(token) == ("error", USER_CANCELED, {})
    agent.wait("/network/secretRequests", {})
    with pytest.raises(RpcError) as err:
        agent.c.call("network.cancelSecrets", {"request": rid})
    assert err.value.code == -32001 and err.value.data["param"] == "request"


def test_networkmanager_withdraws_a_request(agent):
    agent.claim()
    token = agent.ask(path="9")
    other = agent.ask(connection=wifi_connection("6a1b3c4d-0000-4000-8000-000000000002", "Other"), path="10")
    agent.wait("/network/secretRequests", predicate=lambda v: v and len(v) == 2)
    cancel = agent.m.cancel_get_secrets(agent.name, SETTINGS + "9", "802-11-wireless-security")
    assert agent.reply(cancel) == ("ok", "", {})
    assert agent.reply(token) == ("error", AGENT_CANCELED, {})
    agent.wait("/network/secretRequests", predicate=lambda v: [r["profileName"] for r in v.values()] == ["Other"])
    assert agent.pending(other)


def test_request_new_and_user_requested(agent):
    agent.claim()
    agent.ask(flags=ALLOW_INTERACTION | REQUEST_NEW)
    _, req = agent.only_request()
    assert req["reason"] == "new" and req["userRequested"] is False


def test_vpn_request_from_hints(agent):
    agent.claim()
    token = agent.ask(vpn_connection(), "vpn", ["password", "x-vpn-message:Token code for Work VPN", "otp"])
    rid, req = agent.only_request()
    assert req["type"] == "vpn" and req["setting"] == "vpn" and req["vpnService"] == "openvpn"
    assert req["ssid"] is None and req["message"] == "Token code for Work VPN"
    assert req["fields"] == [{"key": "password", "label": "Password", "secret": True},
                             {"key": "otp", "label": "Otp", "secret": True}]
    agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"password": "vpn-pass", "otp": "123456"}})
    assert agent.reply(token) == ("ok", "", {"vpn": {"secrets": {"password": "vpn-pass", "otp": "123456"}}})
    # Without hints: the secrets vpn.data marks as the agent's.
    agent.ask(vpn_connection(), "vpn")
    _, req = agent.only_request()
    assert [f["key"] for f in req["fields"]] == ["password"] and req["message"] is None


def test_vpn_data_of_many_flagged_keys(agent):
    """vpn.data is the user's to write, as many keys as NetworkManager's message to the agent
    holds: a request asks for the first 64 agent-owned keys (in vpn.data's order) and says once
    in the log how many it left out. Before the bound each key was a field (and de-duplicating
    them was quadratic: 130 000 keys stalled the loop for minutes)."""
    agent.claim()
    agent.c.call("events.subscribe", {"topics": ["network.secretsRequested"]})
    keys = [f"k{i:06d}" for i in range(5000)]
    connection = vpn_connection()
    data = {key + "-flags": "1" for key in keys}
    data["remote"] = "vpn.example.com"
    connection["vpn"]["data"] = dbus.Dictionary(data, signature="ss")
    token = agent.ask(connection, "vpn")
    rid, req = agent.only_request()
    assert req["type"] == "vpn" and req["profileName"] == "Work VPN"
    assert req["fields"] == [{"key": key, "label": "K" + key[1:], "secret": True} for key in keys[:64]]
    agent.c.wait_for(lambda: any(n["method"] == "event" for n in agent.c.notifications), what="the event")
    event, = [n["params"] for n in agent.c.notifications if n["method"] == "event"]
    assert event["data"] == req
    assert agent.env.qsd_log().count(f"secret request {rid} leaves out {5000 - 64} fields") == 1
    # The fields kept are answered as any others; one left out is not one of the request's.
    with pytest.raises(RpcError) as err:
        agent.c.call("network.answerSecrets", {"request": rid, "secrets": {keys[64]: "x"}})
    assert err.value.code == -32602 and err.value.data["param"] == f"secrets.{keys[64]}"
    agent.c.call("network.answerSecrets", {"request": rid, "secrets": {keys[0]: "first", keys[63]: "last"}})
    assert agent.reply(token) == ("ok", "", {"vpn": {"secrets": {keys[0]: "first", keys[63]: "last"}}})
    agent.wait("/network/secretRequests", {})


def test_long_texts_of_a_request_are_cut(agent):
    """connection.id is the user's to write, a VPN plugin's message the plugin's: a request keeps
    1 KiB of the one and 4 KiB of the other, cut where a character starts."""
    agent.claim()
    connection = vpn_connection()
    connection["connection"]["id"] = "\u00e9" * 4000   # 2 bytes each
    agent.ask(connection, "vpn", ["password", "x-vpn-message:" + "m" * 20000])
    _, req = agent.only_request()
    assert req["profileName"] == "\u00e9" * 512 and req["message"] == "m" * 4096
    assert [f["key"] for f in req["fields"]] == ["password"]


def test_requests_stay_while_any_client_claims(env, agent):
    other = env.client()
    agent.claim()
    agent.claim(other)
    token = agent.ask()
    rid, _ = agent.only_request()
    agent.claim(agent.c)   # claiming again replaces the claim, it does not end it
    agent.claim(agent.c, False)
    other.call("hello")
    assert agent.pending(token) and rid in agent.get("/network/secretRequests")
    # The last claim goes with its connection: NetworkManager asks the next agent.
    other.close()
    assert agent.reply(token) == ("error", NO_SECRETS, {})
    agent.wait("/network/secretRequests", {})


def test_a_client_that_leaves_leaves_its_requests_to_the_others(env, agent):
    asker = env.client()
    agent.claim(asker)
    agent.claim()
    token = agent.ask()
    rid, _ = agent.only_request()
    asker.close()
    agent.c.call("hello")   # the daemon has seen the close once this is answered
    assert agent.pending(token)
    agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": PSK}})
    assert agent.reply(token)[0] == "ok"


def test_only_networkmanager_may_call_the_agent(env, agent):
    agent.claim()
    bus = env.dbus()
    proxy = dbus.Interface(bus.get_object(agent.name, SECRET_AGENT_PATH), SECRET_AGENT)
    for call in (lambda: proxy.GetSecrets(wifi_connection(), dbus.ObjectPath(SETTINGS + "7"), "802-11-wireless-security",
                                          dbus.Array([], signature="s"), dbus.UInt32(1)),
                 lambda: proxy.CancelGetSecrets(dbus.ObjectPath(SETTINGS + "7"), "802-11-wireless-security"),
                 lambda: proxy.SaveSecrets(wifi_connection(), dbus.ObjectPath(SETTINGS + "7")),
                 lambda: proxy.DeleteSecrets(wifi_connection(), dbus.ObjectPath(SETTINGS + "7"))):
        with pytest.raises(dbus.DBusException) as err:
            call()
        assert err.value.get_dbus_name() == "org.freedesktop.DBus.Error.AccessDenied"
    assert agent.get("/network/secretRequests") == {}
    # NetworkManager itself: nothing is stored, nothing refused.
    assert agent.reply(agent.m.save_secrets(agent.name, wifi_connection(), SETTINGS + "7")) == ("ok", "", {})
    assert agent.reply(agent.m.save_secrets(agent.name, wifi_connection(), SETTINGS + "7", "DeleteSecrets")) == ("ok", "", {})


def test_pending_requests_are_bounded(agent):
    agent.claim()
    tokens = [agent.ask(connection=wifi_connection(f"6a1b3c4d-0000-4000-8000-{i:012d}"), path=str(i)) for i in range(16)]
    agent.wait("/network/secretRequests", predicate=lambda v: v and len(v) == 16)
    assert agent.reply(agent.ask(path="99")) == ("error", NO_SECRETS, {})
    assert all(agent.pending(t) for t in tokens)


def test_unanswered_request_times_out(env):
    e = dict(env.env)
    e["QSD_DEBUG_NM_SECRET_TIMEOUT_MS"] = "300"
    a = Agent(env, qsd_env=e)
    a.claim()
    token = a.ask()
    a.only_request()
    assert a.reply(token) == ("error", NO_SECRETS, {})
    a.wait("/network/secretRequests", {})


def test_registered_again_after_a_networkmanager_restart(env, agent):
    agent.claim()
    token = agent.ask()
    agent.only_request()
    agent.m.kill()
    agent.wait("/network", {"available": False})
    m = NmMock(env).add_agent_manager()
    agent.wait("/network/secretAgentRegistered", True)
    assert m.registrations()[0] == ["org.qsd.agent", 1]
    # The old NetworkManager's request went with it; the new one is served.
    assert agent.get("/network/secretRequests") == {}
    token = m.get_secrets(agent.name, wifi_connection(), SETTINGS + "1", "802-11-wireless-security", [], ALLOW_INTERACTION)
    rid, _ = agent.only_request()
    agent.c.call("network.answerSecrets", {"request": rid, "secrets": {"psk": PSK}})
    wait_until(lambda: m.agent_reply(token)[0] == "ok", what="the new NetworkManager's answer")


def test_agent_manager_that_comes_late(env):
    """A registration that failed (no AgentManager yet) is tried again."""
    m = NmMock(env)
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network/available"])
    c.wait_value(sub, "/network/available", True)
    m.add_agent_manager()
    wait_until(lambda: m.registrations(), what="the registration")


# --- every saved connection -----------------------------------------------------------------

@pytest.fixture
def profiles(env):
    m = NmMock(env)
    w = m.add_wifi("wlan0")
    ap = m.add_ap(w, "ap_home", "HomeNet", "00:11:22:33:44:55", strength=70)
    home = m.add_profile(w, "conn_home", "HomeNet")
    m.activate(w, home, ap, "Active_home")
    m.add_connection({"connection": {"id": "Work VPN", "uuid": "11111111-0000-4000-8000-000000000001", "type": "vpn",
                                     "autoconnect": False, "timestamp": dbus.UInt64(1700000000)},
                      "vpn": {"service-type": "org.freedesktop.NetworkManager.openvpn",
                              "data": dbus.Dictionary({"remote": "vpn.example.com"}, signature="ss")}})
    m.add_connection({"connection": {"id": "wg0", "uuid": "11111111-0000-4000-8000-000000000002", "type": "wireguard",
                                     "interface-name": "wg0"},
                      "wireguard": {"listen-port": dbus.UInt32(51820)}})
    m.add_connection({"connection": {"id": "br0", "uuid": "11111111-0000-4000-8000-000000000003", "type": "bridge",
                                     "interface-name": "br0"}})
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network"])
    c.wait_value(sub, "/network/available", True)
    return m, c, sub


def test_profiles_list_every_saved_connection(profiles):
    m, c, sub = profiles
    net = c.mirror(sub)["network"]
    by_id = {p["id"]: p for p in net["profiles"].values()}
    assert set(by_id) == {"HomeNet", "Work VPN", "wg0", "br0"}
    for uuid, p in net["profiles"].items():
        assert p["uuid"] == uuid
    assert by_id["HomeNet"]["type"] == "wifi" and by_id["HomeNet"]["vpnService"] is None
    assert by_id["HomeNet"]["active"] is True and by_id["HomeNet"]["state"] == "connected"
    assert by_id["HomeNet"]["device"] == "wlan0" and by_id["HomeNet"]["default"] is True
    assert by_id["HomeNet"]["timestamp"] == 1374828522 and by_id["HomeNet"]["autoconnect"] is True
    assert by_id["Work VPN"] == {
        "id": "Work VPN", "uuid": "11111111-0000-4000-8000-000000000001", "type": "vpn", "vpnService": "openvpn",
        "autoconnect": False, "interfaceName": None, "timestamp": 1700000000, "active": False,
        "state": "disconnected", "device": None, "default": False}
    assert by_id["wg0"]["type"] == "wireguard" and by_id["wg0"]["vpnService"] == "wireguard"
    assert by_id["wg0"]["interfaceName"] == "wg0" and by_id["wg0"]["timestamp"] is None
    assert by_id["br0"]["type"] == "bridge"
    assert net["vpnActive"] is False


def test_profiles_follow_settings_signals(profiles):
    m, c, sub = profiles
    path = m.add_connection({"connection": {"id": "Cell", "uuid": "11111111-0000-4000-8000-000000000004",
                                            "type": "gsm"}})
    c.wait_value(sub, "/network/profiles/11111111-0000-4000-8000-000000000004/type", "gsm")
    m.iface(path, "org.freedesktop.NetworkManager.Settings.Connection").Update(
        {"connection": {"id": "Mobile", "uuid": "11111111-0000-4000-8000-000000000004", "type": "gsm"}})
    c.wait_value(sub, "/network/profiles/11111111-0000-4000-8000-000000000004/id", "Mobile")
    m.iface(path, "org.freedesktop.NetworkManager.Settings.Connection").Delete()
    c.wait_value(sub, "/network/profiles", predicate=lambda v: "11111111-0000-4000-8000-000000000004" not in v)


def test_activate_and_deactivate_a_vpn(profiles):
    m, c, sub = profiles
    vpn = "11111111-0000-4000-8000-000000000001"
    assert c.call("network.activateProfile", {"profile": vpn}) == {"profile": vpn}
    activate, = m.calls("/org/freedesktop/NetworkManager", "ActivateConnection")
    assert activate[1:] == ["/", "/"]
    c.wait_value(sub, f"/network/profiles/{vpn}/active", True)
    assert c.mirror(sub)["network"]["profiles"][vpn]["state"] == "connected"
    c.wait_value(sub, "/network/vpnActive", True)
    assert c.call("network.deactivateProfile", {"profile": vpn}) == {"profile": vpn}
    assert len(m.calls("/org/freedesktop/NetworkManager", "DeactivateConnection")) == 1
    # Not active: answered at once, nothing called.
    wg = "11111111-0000-4000-8000-000000000002"
    assert c.call("network.deactivateProfile", {"profile": wg}) == {"profile": wg}
    assert len(m.calls("/org/freedesktop/NetworkManager", "DeactivateConnection")) == 1
    # On a device.
    assert c.call("network.activateProfile", {"profile": wg, "device": "wlan0"}) == {"profile": wg, "device": "wlan0"}
    assert m.calls("/org/freedesktop/NetworkManager", "ActivateConnection")[-1][1] == "/org/freedesktop/NetworkManager/Devices/wlan0"
    for method, params in (("network.activateProfile", {"profile": "nope"}),
                           ("network.deactivateProfile", {"profile": "nope"}),
                           ("network.activateProfile", {"profile": wg, "device": "nope"})):
        with pytest.raises(RpcError) as err:
            c.call(method, params)
        assert err.value.code == -32001


def test_new_methods_and_tree_are_described(agent):
    doc = agent.c.call("rpc.discover")
    names = {m["name"] for m in doc["methods"]}
    assert {"network.activateProfile", "network.deactivateProfile", "network.handleSecrets", "network.answerSecrets",
            "network.cancelSecrets"} <= names
    assert any(e["name"] == "network.secretsRequested" for e in doc["x-events"])
    schemas = doc["components"]["schemas"]
    agent.claim()
    agent.ask()
    _, req = agent.only_request()
    assert set(req) == set(schemas["SecretRequest"]["properties"])
    net = agent.get("/network")
    assert set(net) <= set(schemas["NetworkDomain"]["properties"])
