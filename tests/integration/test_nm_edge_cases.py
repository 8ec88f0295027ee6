"""/network edge cases against python-dbusmock's NetworkManager (nmmock.py): a wired network
that is already connected, the reference profile, a device on a profile of another type,
hidden networks and their security, keys that are not valid PSKs, LastScan, and two devices
with one interface name. Everything is asserted through the socket and the mock's call log."""

import time

import dbus
import pytest

from nmmock import P, SEC_NONE, WIFI, NmMock
from qsdtest import RpcError, pointer_get, wait_until


def start(env, m, paths=("/network",)):
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(list(paths))
    c.wait_value(sub, "/network/available", True)
    get = lambda path: pointer_get(c.mirror(sub), path, None)  # noqa: E731
    wait = lambda path, value=None, predicate=None, timeout=10: c.wait_value(sub, path, value, predicate, timeout)  # noqa: E731
    return c, get, wait


def wired_profile(uuid, name="Wired", iface="eth0", timestamp=100, ctype="802-3-ethernet", extra=None):
    s = {"connection": {"id": name, "uuid": uuid, "type": ctype, "interface-name": iface,
                        "timestamp": dbus.UInt64(timestamp)}}
    s.update(extra or {})
    return s


def wifi_profile(uuid, ssid, timestamp, key_mgmt="wpa-psk"):
    return {"connection": {"id": f"{ssid} {timestamp}", "uuid": uuid, "type": "802-11-wireless",
                           "timestamp": dbus.UInt64(timestamp)},
            "802-11-wireless": {"ssid": dbus.ByteArray(ssid.encode()), "mode": "infrastructure"},
            "802-11-wireless-security": {"key-mgmt": key_mgmt}}


def test_connecting_a_connected_wired_network_calls_nothing(env):
    m = NmMock(env)
    eth = m.add_wired("eth0")
    prof = m.add_connection(wired_profile("11111111-0000-0000-0000-000000000001"))
    m.activate(eth, prof, "/", "Active_eth")
    c, get, wait = start(env, m)
    wait("/network/devices/eth0/networks/eth0/connected", True)
    m.clear_calls(P)
    assert c.call("network.connect", {"device": "eth0", "network": "eth0"}) == {"device": "eth0", "network": "eth0"}
    # Answered at once, as for Wi-Fi: activating again would bounce the link.
    assert m.calls(P, "ActivateConnection") == [] and m.calls(P, "AddAndActivateConnection") == []
    # Not connected: the reference profile is activated.
    m.mock.SetDeviceDisconnected(eth)
    wait("/network/devices/eth0/networks/eth0/connected", False)
    c.call("network.connect", {"device": "eth0", "network": "eth0"})
    assert m.calls(P, "ActivateConnection") == [[prof, eth, "/"]]


def test_reference_profile_is_named_and_used(env):
    m = NmMock(env)
    w = m.add_wifi("wlan0")
    eth = m.add_wired("eth0")
    # The newer profile has the uuid that sorts last: order in the object says nothing.
    m.add_connection(wifi_profile("aaaaaaaa-0000-0000-0000-000000000001", "Twice", 100))
    newer = m.add_connection(wifi_profile("bbbbbbbb-0000-0000-0000-000000000002", "Twice", 200))
    m.add_connection(wired_profile("cccccccc-0000-0000-0000-000000000003", "old", timestamp=10))
    wired_new = m.add_connection(wired_profile("dddddddd-0000-0000-0000-000000000004", "new", timestamp=20))
    c, get, wait = start(env, m)
    wait("/network/devices/wlan0/networks/Twice/referenceProfile", "bbbbbbbb-0000-0000-0000-000000000002")
    assert list(get("/network/devices/wlan0/networks/Twice/profiles")) == [
        "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"]
    wait("/network/devices/eth0/networks/eth0/referenceProfile", "dddddddd-0000-0000-0000-000000000004")
    # A network without a profile has none.
    m.add_ap(w, "ap_open", "Open", "00:11:22:33:44:99", security=SEC_NONE)
    wait("/network/devices/wlan0/networks/Open/visible", True)
    assert get("/network/devices/wlan0/networks/Open/referenceProfile") is None
    # network.connect uses it.
    c.call("network.connect", {"device": "wlan0", "network": "Twice"})
    assert m.calls(P, "ActivateConnection")[-1] == [newer, w, "/"]
    c.call("network.connect", {"device": "eth0", "network": "eth0"})
    assert m.calls(P, "ActivateConnection")[-1] == [wired_new, eth, "/"]
    # The active profile is the reference one, whatever its age.
    old = P + "/Settings/0"
    m.activate(w, old, "/", "Active_old")
    wait("/network/devices/wlan0/networks/Twice/referenceProfile", "aaaaaaaa-0000-0000-0000-000000000001")


def test_a_device_follows_its_active_connection_of_any_type(env):
    m = NmMock(env)
    eth = m.add_wired("eth0")
    m.add_connection(wired_profile("eeeeeeee-0000-0000-0000-000000000001", "Plain"))
    dsl = m.add_connection(wired_profile("ffffffff-0000-0000-0000-000000000002", "DSL", iface="ppp0", ctype="pppoe",
                                         extra={"pppoe": {"parent": "eth0", "username": "user"}}))
    m.activate(eth, dsl, "/", "Active_dsl")
    c, get, wait = start(env, m)
    wait("/network/devices/eth0/networks/eth0/connected", True)
    net = get("/network/devices/eth0/networks/eth0")
    assert net["state"] == "connected" and net["referenceProfile"] == "ffffffff-0000-0000-0000-000000000002"
    assert "ffffffff-0000-0000-0000-000000000002" in net["profiles"]
    # And it can be disconnected like any network.
    assert c.call("network.disconnect", {"device": "eth0", "network": "eth0"}) == {"device": "eth0", "network": "eth0"}
    assert len(m.calls(eth, "Disconnect")) == 1
    wait("/network/devices/eth0/networks/eth0/connected", False)


def test_hidden_networks_and_their_security(env):
    m = NmMock(env)
    w = m.add_wifi("wlan0")
    nb = m.add_ap(w, "ap_nb", "Neighbour", "00:11:22:33:44:77")
    m.add_ap(w, "ap_third", "Third", "00:11:22:33:44:78")
    c, get, wait = start(env, m)
    wait("/network/devices/wlan0/networks/Neighbour/visible", True)

    def hidden(**params):
        # The template cannot add a connection without an access point: it refuses, and qsd
        # passes its error on; the call itself is what is checked.
        try:
            c.call("network.connect", {"device": "wlan0", "network": "Secret", "hidden": True, **params})
        except RpcError as err:
            assert err.code == -32002, err
        return m.calls(P, "AddAndActivateConnection")[-1][0]

    sae = hidden(psk="a WPA3 passphrase", security="sae")
    assert sae["802-11-wireless-security"]["key-mgmt"] == "sae" and bytes(sae["802-11-wireless"]["ssid"]) == b"Secret"
    wpa2 = hidden(psk="a WPA2 passphrase")   # the default with a key
    assert wpa2["802-11-wireless-security"]["key-mgmt"] == "wpa-psk"
    assert hidden(psk="a WPA2 passphrase", security="wpa2Psk")["802-11-wireless-security"]["key-mgmt"] == "wpa-psk"
    assert "802-11-wireless-security" not in hidden()   # open without a key
    owe = hidden(security="owe")
    assert owe["802-11-wireless-security"]["key-mgmt"] == "owe" and "psk" not in owe["802-11-wireless-security"]
    # A visible network without a profile: the security param picks the key management too.
    c.call("network.connect", {"device": "wlan0", "network": "Neighbour", "psk": "passphrase", "security": "sae"})
    add = m.calls(P, "AddAndActivateConnection")[-1]
    assert add[0]["802-11-wireless-security"]["key-mgmt"] == "sae" and add[2] == nb
    # A 64-character key must be hex (a raw PSK); the rest of the key rules: test_psk_rules_are_networkmanagers.
    c.call("network.connect", {"device": "wlan0", "network": "Third", "psk": "0123456789abcdef" * 4})
    assert m.calls(P, "AddAndActivateConnection")[-1][0]["802-11-wireless-security"]["psk"] == "0123456789abcdef" * 4
    before = len(m.calls(P, "AddAndActivateConnection"))
    for params, param in [({"psk": "g" * 64}, "psk"), ({"psk": "12345678", "security": "wep"}, "security"),
                          ({"psk": "12345678", "security": "open"}, "psk"), ({"security": "sae"}, "psk")]:
        with pytest.raises(RpcError) as err:
            c.call("network.connect", {"device": "wlan0", "network": "Other", "hidden": True, **params})
        assert err.value.code == -32602 and err.value.data["param"] == param, (params, err.value)
    assert len(m.calls(P, "AddAndActivateConnection")) == before
    assert "a WPA3 passphrase" not in env.qsd_log()


def test_psk_rules_are_networkmanagers(env):
    """network.connect takes the keys NetworkManager takes: a WPA-PSK passphrase of 8..63 bytes of
    any kind (nm_utils_wpa_psk_valid checks no characters: a UTF-8 passphrase joins) or 64 hex
    digits; an SAE (WPA3) password of any length. The rule follows the key management the key
    goes with: the saved profile's, else the security's."""
    m = NmMock(env)
    w = m.add_wifi("wlan0")
    # Networks without a profile (each connect below saves one, the template's way).
    aps = {name: m.add_ap(w, f"ap_{i}", name, f"00:11:22:33:44:{70 + i}") for i, name in
           enumerate(("Third", "Fourth", "Fifth", "Sixth"))}
    m.add_ap(w, "ap_wpa3", "Wpa3Home", "00:11:22:33:44:79")
    sae_profile = m.add_connection(wifi_profile("33333333-0000-0000-0000-000000000001", "Wpa3Home", 500, key_mgmt="sae"))
    c, get, wait = start(env, m)
    wait("/network/devices/wlan0/networks/Wpa3Home/known", True)
    wait("/network/devices/wlan0/networks", predicate=lambda v: v and set(aps) <= set(v))

    def added(**params):
        c.call("network.connect", {"device": "wlan0", **params})
        add = m.calls(P, "AddAndActivateConnection")[-1]
        assert add[2] == aps[params["network"]]
        return add[0]["802-11-wireless-security"]

    # Not ASCII: 12 characters, 14 bytes.
    assert added(network="Third", psk="p\u00e4ssw\u00f6rd-123") == {"key-mgmt": "wpa-psk", "psk": "p\u00e4ssw\u00f6rd-123"}
    # 6 characters but 8 bytes: NetworkManager counts bytes.
    assert added(network="Fourth", psk="p\u00e4ssw\u00f6")["psk"] == "p\u00e4ssw\u00f6"
    assert added(network="Fifth", psk="0123456789ABCDEF" * 4)["psk"] == "0123456789ABCDEF" * 4
    # SAE: a 7-character password, of a new profile (hidden or not) or of a saved SAE profile.
    assert added(network="Sixth", psk="1234567", security="sae") == {"key-mgmt": "sae", "psk": "1234567"}
    try:
        c.call("network.connect", {"device": "wlan0", "network": "Hidden3", "hidden": True, "psk": "1234567",
                                   "security": "sae"})
    except RpcError as err:
        assert err.code == -32002, err   # the template adds no connection without an access point
    assert m.calls(P, "AddAndActivateConnection")[-1][0]["802-11-wireless-security"] == {"key-mgmt": "sae", "psk": "1234567"}
    c.call("network.connect", {"device": "wlan0", "network": "Wpa3Home", "psk": "wpa3pw!"})
    update = m.calls(sae_profile, "Update")[-1][0]
    assert update["802-11-wireless-security"]["key-mgmt"] == "sae" and update["802-11-wireless-security"]["psk"] == "wpa3pw!"

    # Refused before any call: a saved WPA-PSK profile (Third's, now) and a new one alike.
    third = m.calls(P, "AddAndActivateConnection")[0]
    m.add_ap(w, "ap_new", "Unsaved", "00:11:22:33:44:7a")
    wait("/network/devices/wlan0/networks/Unsaved/visible", True)
    updates = len(m.calls(sae_profile, "Update"))
    before = len(m.calls(P, "AddAndActivateConnection"))
    for params in ({"network": "Third", "psk": "g" * 64},                # 64 characters, not hex
                   {"network": "Unsaved", "psk": "g" * 64},
                   {"network": "Third", "psk": "a" * 62 + "\u00e4"},    # 63 characters, 64 bytes, not hex
                   {"network": "Unsaved", "psk": "a" * 65},
                   {"network": "Third", "psk": "1234567"},               # WPA-PSK: 8 bytes at least
                   {"network": "Unsaved", "psk": "p\u00e4ssw"},          # 6 bytes
                   {"network": "Unsaved", "psk": "nul\u0000byte!"},      # a D-Bus string would end there
                   {"network": "Unsaved", "psk": "", "security": "sae"},
                   {"network": "Wpa3Home", "psk": ""},
                   {"network": "Hidden4", "hidden": True, "psk": "1234567"}):
        with pytest.raises(RpcError) as err:
            c.call("network.connect", {"device": "wlan0", **params})
        assert err.value.code == -32602 and err.value.data["param"] == "psk", (params, err.value)
    assert len(m.calls(P, "AddAndActivateConnection")) == before
    assert len(m.calls(sae_profile, "Update")) == updates == 1
    assert third[0]["802-11-wireless-security"]["psk"] == "p\u00e4ssw\u00f6rd-123"
    assert "p\u00e4ssw\u00f6rd-123" not in env.qsd_log()


def boottime_ms():
    return time.clock_gettime(time.CLOCK_BOOTTIME) * 1000


def test_a_recent_scan_is_not_requested_again(env):
    m = NmMock(env)
    w = m.add_wifi("wlan0")
    # NetworkManager scanned just now (LastScan is CLOCK_BOOTTIME in ms).
    last = int(boottime_ms())
    m.iface(w).AddProperty(WIFI, "LastScan", dbus.Int64(last))
    c, get, wait = start(env, m)
    c.call("network.setScannerEnabled", {"device": "wlan0", "enabled": True})
    wait("/network/devices/wlan0/scannerEnabled", True)
    wait_until(lambda: len(m.calls(w, "RequestScan")) >= 1, timeout=40, what="RequestScan")
    # Not before the 10 s interval since that scan (50 ms for clock rounding).
    assert boottime_ms() >= last + 10000 - 50
    # A scan somebody else made moves the next request.
    m.clear_calls(w)
    last = int(boottime_ms())
    m.iface(w).UpdateProperties(WIFI, {"LastScan": dbus.Int64(last)})
    wait_until(lambda: len(m.calls(w, "RequestScan")) >= 1, timeout=40, what="second RequestScan")
    assert boottime_ms() >= last + 10000 - 50


def test_two_devices_with_one_interface_name(env):
    m = NmMock(env)
    first = m.add_wifi("wlanA", iface="wlan0", address="aa:aa:aa:aa:aa:aa")
    m.add_wifi("wlanB", iface="wlan0", address="bb:bb:bb:bb:bb:bb")
    c, get, wait = start(env, m)
    wait("/network/devices/wlan0/address", "aa:aa:aa:aa:aa:aa")
    # The first one goes (a NIC renamed while another appeared): the other one takes the name.
    m.mock.RemoveDevice(first)
    wait("/network/devices/wlan0/address", "bb:bb:bb:bb:bb:bb")
    assert set(get("/network/devices")) == {"wlan0"}
