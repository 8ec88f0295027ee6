"""/network against python-dbusmock's NetworkManager template (extended in nmmock.py), asserted
through the socket: enumeration, runtime changes, every action reaching the service with the
right arguments, failure events, a NetworkManager restart, odd SSIDs and a wrongly typed
property."""

import dbus
import pytest

from nmmock import AP, CONN, DEV, NM, P, SEC_NONE, NmMock
from qsdtest import RpcError, answers_late_once, pointer_get, wait_until


def esc(token):
    return token.replace("~", "~0").replace("/", "~1")


@pytest.fixture
def world(env):
    """wlan0 with HomeNet (saved, connected), CafeOpen and Neighbour; eth0 with a link; qsd."""
    m = NmMock(env)
    w = m.add_wifi("wlan0")
    home_ap = m.add_ap(w, "ap_home", "HomeNet", "00:11:22:33:44:55", freq=2437, strength=82)
    m.add_ap(w, "ap_home5", "HomeNet", "00:11:22:33:44:56", freq=5180, strength=30)
    m.add_ap(w, "ap_cafe", "CafeOpen", "00:11:22:33:44:66", freq=5180, rate=130000, strength=40, security=SEC_NONE)
    nb = m.add_ap(w, "ap_nb", "Neighbour", "00:11:22:33:44:77", freq=2412, strength=15)
    # Realistic flags (WPA2-PSK with CCMP) the template cannot create directly.
    m.iface(nb).UpdateProperties(AP, {"WpaFlags": dbus.UInt32(0), "RsnFlags": dbus.UInt32(0x188)})
    home = m.add_profile(w, "conn_home", "HomeNet")
    m.add_saved("FarAway")
    ac = m.activate(w, home, home_ap, "Active_home")
    e = m.add_wired("eth0")
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network"])
    c.wait_value(sub, "/network/available", True)

    class World:
        pass

    wd = World()
    wd.env, wd.m, wd.c, wd.sub = env, m, c, sub
    wd.wlan, wd.eth, wd.home_ap, wd.home, wd.ac = w, e, home_ap, home, ac
    wd.get = lambda path: pointer_get(c.mirror(sub), path, None)
    wd.wait = lambda path, value=None, predicate=None: c.wait_value(sub, path, value, predicate)
    wd.absent = lambda path: c.wait_absent(sub, path)
    return wd


def test_enumeration_at_start(world):
    net = world.get("/network")
    assert net["available"] is True and net["backend"] == "networkmanager"
    assert net["wifiEnabled"] is True and net["wifiHardwareEnabled"] is True
    assert net["canCheckConnectivity"] is True and net["connectivityCheckEnabled"] is True
    assert net["connectivity"] == "full"
    wlan = net["devices"]["wlan0"]
    assert wlan["type"] == "wifi" and wlan["name"] == "wlan0" and wlan["address"] == "11:22:33:44:55:66"
    assert wlan["state"] == "connected" and wlan["connected"] is True
    assert wlan["nmManaged"] is True and wlan["autoconnect"] is True
    assert wlan["mode"] == "station" and wlan["scannerEnabled"] is False
    assert wlan["ip4"] == {"addresses": [], "gateway": None, "dns": []}
    nets = wlan["networks"]
    assert set(nets) == {"HomeNet", "CafeOpen", "Neighbour", "FarAway"}
    home = nets["HomeNet"]
    assert home["connected"] and home["state"] == "connected" and not home["stateChanging"]
    assert home["known"] and home["visible"] and home["device"] == "wlan0"
    assert home["security"] == "wpa2Psk"
    assert home["signalStrength"] == 0.82  # the active AP, though another one is listed
    assert set(home["accessPoints"]) == {"00:11:22:33:44:55", "00:11:22:33:44:56"}
    ap = home["accessPoints"]["00:11:22:33:44:56"]
    assert ap == {"bssid": "00:11:22:33:44:56", "frequency": 5180, "band": "5GHz", "maxBitrate": 54000,
                  "strength": 0.3, "active": False}
    (uuid, prof), = home["profiles"].items()
    assert prof == {"id": "HomeNet", "uuid": uuid}
    cafe = nets["CafeOpen"]
    assert cafe["security"] == "open" and not cafe["known"] and not cafe["connected"]
    assert cafe["state"] == "disconnected" and cafe["signalStrength"] == 0.4
    assert nets["Neighbour"]["security"] == "wpa2Psk"
    far = nets["FarAway"]
    assert far["known"] and not far["visible"] and far["signalStrength"] == 0 and far["accessPoints"] == {}
    eth = net["devices"]["eth0"]
    assert eth["type"] == "wired" and eth["linkSpeed"] == 1000 and eth["hasLink"] is True
    assert eth["state"] == "disconnected" and eth["connected"] is False
    assert set(eth["networks"]) == {"eth0"}
    assert eth["networks"]["eth0"]["name"] == "eth0" and eth["networks"]["eth0"]["device"] == "eth0"


def test_access_points_and_devices_come_and_go(world):
    m = world.m
    ap = m.add_ap(world.wlan, "ap_new", "Fresh", "00:11:22:33:44:88", strength=60, security=SEC_NONE)
    world.wait("/network/devices/wlan0/networks/Fresh/signalStrength", 0.6)
    m.iface(ap).UpdateProperties(AP, {"Strength": dbus.Byte(71)})
    world.wait("/network/devices/wlan0/networks/Fresh/accessPoints/00:11:22:33:44:88/strength", 0.71)
    # Two APs, no profile: the strongest is the reference; a strength change can move it.
    ap2 = m.add_ap(world.wlan, "ap_new2", "Fresh", "00:11:22:33:44:89", strength=20, security=SEC_NONE)
    world.wait("/network/devices/wlan0/networks/Fresh/accessPoints/00:11:22:33:44:89/strength", 0.2)
    m.iface(ap2).UpdateProperties(AP, {"Strength": dbus.Byte(90)})
    world.wait("/network/devices/wlan0/networks/Fresh/signalStrength", 0.9)
    m.iface(ap2).UpdateProperties(AP, {"Strength": dbus.Byte(10)})
    world.wait("/network/devices/wlan0/networks/Fresh/signalStrength", 0.71)
    # The active AP stays the reference whatever the others do.
    m.iface(P + "/AccessPoint/ap_home5").UpdateProperties(AP, {"Strength": dbus.Byte(95)})
    world.wait("/network/devices/wlan0/networks/HomeNet/accessPoints/00:11:22:33:44:56/strength", 0.95)
    assert world.get("/network/devices/wlan0/networks/HomeNet/signalStrength") == 0.82
    m.iface(world.home_ap).UpdateProperties(AP, {"Strength": dbus.Byte(61)})
    world.wait("/network/devices/wlan0/networks/HomeNet/signalStrength", 0.61)
    m.mock.RemoveAccessPoint(world.wlan, ap2)
    m.mock.RemoveAccessPoint(world.wlan, ap)
    world.absent("/network/devices/wlan0/networks/Fresh")
    # The weaker HomeNet AP leaving keeps the network.
    m.mock.RemoveAccessPoint(world.wlan, P + "/AccessPoint/ap_home5")
    world.wait("/network/devices/wlan0/networks/HomeNet/accessPoints", predicate=lambda v: v and len(v) == 1)
    w2 = m.add_wifi("wlan1")
    world.wait("/network/devices/wlan1/type", "wifi")
    m.mock.RemoveDevice(w2)
    world.absent("/network/devices/wlan1")
    m.mock.RemoveDevice(world.eth)
    world.absent("/network/devices/eth0")
    assert "wlan0" in world.get("/network/devices")


def test_state_changes(world):
    m = world.m
    m.mock.SetDeviceDisconnected(world.wlan)
    world.wait("/network/devices/wlan0/state", "disconnected")
    world.wait("/network/devices/wlan0/networks/HomeNet/connected", False)
    m.props(world.wlan).Set(DEV, "State", dbus.UInt32(120))
    world.wait("/network/devices/wlan0/state", "failed")
    m.props(world.wlan).Set(DEV, "State", dbus.UInt32(110))
    world.wait("/network/devices/wlan0/state", "disconnecting")
    m.props(world.wlan).Set(DEV, "State", dbus.UInt32(50))
    world.wait("/network/devices/wlan0/state", "connecting")
    # An activating connection: the network is changing state.
    ac = m.activate(world.wlan, world.home, world.home_ap, "Activating", state=1)
    world.wait("/network/devices/wlan0/networks/HomeNet/stateChanging", True)
    world.wait("/network/devices/wlan0/networks/HomeNet/state", "connecting")
    m.iface(ac).UpdateProperties(NM + ".Connection.Active", {"State": dbus.UInt32(2)})
    world.wait("/network/devices/wlan0/networks/HomeNet/connected", True)
    # Manager properties.
    m.mock.SetConnectivity(2)
    world.wait("/network/connectivity", "portal")
    m.iface(P).UpdateProperties(NM, {"WirelessHardwareEnabled": False})
    world.wait("/network/wifiHardwareEnabled", False)
    # Carrier loss removes the wired network; speed follows.
    m.set_carrier(world.eth, False)
    world.wait("/network/devices/eth0/hasLink", False)
    world.wait("/network/devices/eth0/networks", {})
    m.set_carrier(world.eth, True)
    m.iface(world.eth).UpdateProperties(NM + ".Device.Wired", {"Speed": dbus.UInt32(100)})
    world.wait("/network/devices/eth0/linkSpeed", 100)
    world.wait("/network/devices/eth0/networks/eth0/name", "eth0")


def test_saved_profiles_follow_settings(world):
    m, c = world.m, world.c
    uuid = next(iter(world.get("/network/devices/wlan0/networks/HomeNet/profiles")))
    prof = c.call("network.getProfile", {"profile": uuid})
    assert prof["id"] == "HomeNet" and prof["uuid"] == uuid and prof["type"] == "802-11-wireless"
    assert prof["settings"]["802-11-wireless"]["ssid"] == list(b"HomeNet")
    # Rename through the mock: the Updated signal refreshes the profile.
    m.iface(world.home, CONN).Update({"connection": {"id": "Home renamed"}})
    world.wait(f"/network/devices/wlan0/networks/HomeNet/profiles/{uuid}/id", "Home renamed")
    # A new profile for an out-of-range network appears as known but not visible.
    m.add_saved("Elsewhere")
    world.wait("/network/devices/wlan0/networks/Elsewhere/visible", False)
    assert world.get("/network/devices/wlan0/networks/Elsewhere/known") is True


def test_manager_actions(world):
    m, c = world.m, world.c
    assert c.call("network.setWifiEnabled", {"enabled": False}) == {"enabled": False}
    world.wait("/network/wifiEnabled", False)
    assert m.props(P).Get(NM, "WirelessEnabled") == 0
    c.call("network.setConnectivityCheckEnabled", {"enabled": False})
    world.wait("/network/connectivityCheckEnabled", False)
    assert c.call("network.checkConnectivity") == {"connectivity": "full"}
    assert len(m.calls(P, "CheckConnectivity")) == 1


def test_device_actions(world):
    m, c = world.m, world.c
    c.call("network.setAutoconnect", {"device": "wlan0", "autoconnect": False})
    world.wait("/network/devices/wlan0/autoconnect", False)
    c.call("network.setManaged", {"device": "eth0", "managed": False})
    world.wait("/network/devices/eth0/nmManaged", False)
    assert c.call("network.disconnectDevice", {"device": "wlan0"}) == {"device": "wlan0"}
    assert len(m.calls(world.wlan, "Disconnect")) == 1
    world.wait("/network/devices/wlan0/state", "disconnected")
    with pytest.raises(RpcError) as err:
        c.call("network.disconnectDevice", {"device": "nope"})
    assert err.value.code == -32001 and err.value.data["param"] == "device"
    with pytest.raises(RpcError) as err:
        c.call("network.setAutoconnect", {"device": "wlan0", "autoconnect": "yes"})
    assert err.value.code == -32602 and err.value.data["param"] == "autoconnect"


def test_scanner_is_held_by_its_client(world):
    m, c, env = world.m, world.c, world.env
    other = env.client()
    other.call("network.setScannerEnabled", {"device": "wlan0", "enabled": True})
    world.wait("/network/devices/wlan0/scannerEnabled", True)
    wait_until(lambda: len(m.calls(world.wlan, "RequestScan")) >= 1, what="RequestScan")
    assert m.calls(world.wlan, "RequestScan")[0] == [{}]
    other.close()  # the connection holding the scanner goes away
    world.wait("/network/devices/wlan0/scannerEnabled", False)
    c.call("network.setScannerEnabled", {"device": "wlan0", "enabled": True})
    world.wait("/network/devices/wlan0/scannerEnabled", True)
    c.call("network.setScannerEnabled", {"device": "wlan0", "enabled": False})
    world.wait("/network/devices/wlan0/scannerEnabled", False)
    with pytest.raises(RpcError) as err:
        c.call("network.setScannerEnabled", {"device": "eth0", "enabled": True})
    assert err.value.code == -32602


def test_connect_actions(world):
    m, c = world.m, world.c
    # Unknown open network: AddAndActivateConnection with the reference AP.
    c.call("network.connect", {"device": "wlan0", "network": "CafeOpen"})
    calls = m.calls(P, "AddAndActivateConnection")
    assert calls[-1][0] == {} and calls[-1][1] == world.wlan and calls[-1][2] == P + "/AccessPoint/ap_cafe"
    world.wait("/network/devices/wlan0/networks/CafeOpen/known", True)
    # Saved network: ActivateConnection with its profile.
    m.mock.SetDeviceDisconnected(world.wlan)
    world.wait("/network/devices/wlan0/networks/HomeNet/connected", False)
    c.call("network.connect", {"device": "wlan0", "network": "HomeNet"})
    act = m.calls(P, "ActivateConnection")[-1]
    assert act == [world.home, world.wlan, "/"]
    # With a PSK and a saved profile: Update with the key, then ActivateConnection.
    c.call("network.connect", {"device": "wlan0", "network": "HomeNet", "psk": "correct horse"})
    upd = m.calls(world.home, "Update")[-1][0]
    assert upd["802-11-wireless-security"]["psk"] == "correct horse"
    assert bytes(upd["802-11-wireless"]["ssid"]) == b"HomeNet"
    # With a PSK and no profile: AddAndActivateConnection carrying the key.
    c.call("network.connect", {"device": "wlan0", "network": "Neighbour", "psk": "12345678"})
    add = m.calls(P, "AddAndActivateConnection")[-1]
    assert add[0]["802-11-wireless-security"]["psk"] == "12345678"
    assert add[0]["802-11-wireless-security"]["key-mgmt"] == "wpa-psk"
    assert add[2] == P + "/AccessPoint/ap_nb"
    # A hidden network: the SSID and hidden flag, no AP.
    # (the template cannot add a connection without an AP, so it refuses: qsd passes its error on)
    with pytest.raises(RpcError) as err:
        c.call("network.connect", {"device": "wlan0", "network": "Hidden/One", "hidden": True, "psk": "abcdefgh"})
    assert err.value.code == -32002 and err.value.data["name"] == NM + ".DoesNotExist"
    add = m.calls(P, "AddAndActivateConnection")[-1]
    assert bytes(add[0]["802-11-wireless"]["ssid"]) == b"Hidden/One" and add[0]["802-11-wireless"]["hidden"]
    assert add[2] == "/"
    # Refusals: unknown network without hidden, PSK for an open network, bad PSK.
    for params, code in [({"network": "Nowhere"}, -32001), ({"network": "CafeOpen", "psk": "12345678"}, -32602),
                         ({"network": "Neighbour", "psk": "short"}, -32602)]:
        with pytest.raises(RpcError) as err:
            c.call("network.connect", {"device": "wlan0", **params})
        assert err.value.code == code, params
    # No secret ever reaches the tree or the log.
    assert "correct horse" not in str(c.mirror(world.sub)) and "correct horse" not in world.env.qsd_log()
    assert "12345678" not in world.env.qsd_log()


def test_profile_actions(world):
    m, c = world.m, world.c
    uuid = next(iter(world.get("/network/devices/wlan0/networks/HomeNet/profiles")))
    c.call("network.connectProfile", {"device": "wlan0", "profile": uuid})
    assert m.calls(P, "ActivateConnection")[-1] == [world.home, world.wlan, "/"]
    c.call("network.updateProfile", {"profile": uuid, "settings": {
        "connection": {"autoconnect": False, "autoconnect-priority": 5}, "ipv4": {"method": "auto"}}})
    upd = m.calls(world.home, "Update")[-1][0]
    assert upd["connection"]["autoconnect"] is not None and bool(upd["connection"]["autoconnect"]) is False
    assert upd["connection"]["autoconnect-priority"] == 5 and upd["connection"]["id"] == "HomeNet"
    assert upd["ipv4"]["method"] == "auto" and bytes(upd["802-11-wireless"]["ssid"]) == b"HomeNet"
    with pytest.raises(RpcError) as err:
        c.call("network.updateProfile", {"profile": uuid, "settings": {"connection": {"autoconnect": "no"}}})
    assert err.value.code == -32602 and err.value.data["param"] == "settings.connection.autoconnect"
    c.call("network.clearSecrets", {"profile": uuid})
    assert len(m.calls(world.home, "ClearSecrets")) == 1
    c.call("network.deleteProfile", {"profile": uuid})
    world.wait("/network/devices/wlan0/networks/HomeNet/known", False)
    with pytest.raises(RpcError) as err:
        c.call("network.getProfile", {"profile": uuid})
    assert err.value.code == -32001


def test_disconnect_and_forget(world):
    m, c = world.m, world.c
    with pytest.raises(RpcError) as err:
        c.call("network.disconnect", {"device": "wlan0", "network": "CafeOpen"})
    assert err.value.code == -32602
    c.call("network.disconnect", {"device": "wlan0", "network": "HomeNet"})
    assert len(m.calls(world.wlan, "Disconnect")) == 1
    world.wait("/network/devices/wlan0/networks/HomeNet/connected", False)
    res = c.call("network.forget", {"network": "FarAway"})
    assert res["network"] == "FarAway" and len(res["profiles"]) == 1
    world.absent("/network/devices/wlan0/networks/FarAway")
    with pytest.raises(RpcError) as err:
        c.call("network.forget", {"network": "CafeOpen"})
    assert err.value.code == -32001


def test_connection_failed_event(world):
    m, c = world.m, world.c
    c.call("events.subscribe", {"topics": ["network.connectionFailed"]})
    # The device fails with SUPPLICANT_TIMEOUT, then its active connection is deactivated
    # because the device disconnected: Quickshell's rule.
    m.iface(world.wlan).EmitSignal(DEV, "StateChanged", "uuu", [dbus.UInt32(120), dbus.UInt32(50), dbus.UInt32(11)])
    m.iface(world.ac).EmitSignal(NM + ".Connection.Active", "StateChanged", "uu", [dbus.UInt32(4), dbus.UInt32(3)])
    c.wait_for(lambda: any(n["method"] == "event" for n in c.notifications), what="event")
    ev = [n["params"] for n in c.notifications if n["method"] == "event"][0]
    assert ev["topic"] == "network.connectionFailed"
    assert ev["data"] == {"device": "wlan0", "network": "HomeNet", "reason": "wifiAuthTimeout"}
    # A reason Quickshell does not map (e.g. 4 CONFIG_FAILED) emits nothing; a user
    # disconnect (reason 2) neither.
    c.notifications.clear()
    m.iface(world.wlan).EmitSignal(DEV, "StateChanged", "uuu", [dbus.UInt32(120), dbus.UInt32(50), dbus.UInt32(4)])
    m.iface(world.ac).EmitSignal(NM + ".Connection.Active", "StateChanged", "uu", [dbus.UInt32(4), dbus.UInt32(3)])
    m.iface(world.wlan).EmitSignal(DEV, "StateChanged", "uuu", [dbus.UInt32(120), dbus.UInt32(50), dbus.UInt32(7)])
    m.iface(world.ac).EmitSignal(NM + ".Connection.Active", "StateChanged", "uu", [dbus.UInt32(4), dbus.UInt32(2)])
    m.iface(world.wlan).EmitSignal(DEV, "StateChanged", "uuu", [dbus.UInt32(120), dbus.UInt32(50), dbus.UInt32(53)])
    m.iface(world.ac).EmitSignal(NM + ".Connection.Active", "StateChanged", "uu", [dbus.UInt32(4), dbus.UInt32(3)])
    c.wait_for(lambda: any(n["method"] == "event" for n in c.notifications), what="event")
    evs = [n["params"]["data"] for n in c.notifications if n["method"] == "event"]
    assert evs == [{"device": "wlan0", "network": "HomeNet", "reason": "wifiNetworkLost"}]


def test_networkmanager_restart(world):
    m, c, env = world.m, world.c, world.env
    m.kill()
    world.wait("/network", {"available": False})
    with pytest.raises(RpcError) as err:
        c.call("network.setWifiEnabled", {"enabled": True})
    assert err.value.code == -32000
    status = c.call("tree.get", {"path": "/daemon/backends/nm"})["value"]
    assert status["state"] == "unavailable"
    # Back with different content: the tree is rebuilt from scratch.
    m2 = NmMock(env)
    w = m2.add_wifi("wlp2s0")
    m2.add_ap(w, "ap1", "Again", "00:aa:bb:cc:dd:ee", strength=55, security=SEC_NONE)
    world.wait("/network/available", True)
    world.wait("/network/devices/wlp2s0/networks/Again/signalStrength", 0.55)
    assert set(world.get("/network/devices")) == {"wlp2s0"}
    assert c.call("tree.get", {"path": "/daemon/backends/nm"})["value"]["state"] == "running"


def test_started_before_networkmanager(env):
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network"])
    c.wait_value(sub, "/network", {"available": False})
    wait_until(lambda: c.call("tree.get", {"path": "/daemon/backends/nm/state"})["value"] == "unavailable")
    m = NmMock(env)
    m.add_wired("eth0")
    c.wait_value(sub, "/network/devices/eth0/hasLink", True)


def test_odd_ssids(world):
    m = world.m
    odd = {"a/b~c": "a~1b~0c", "caf\u00e9 \u2615\U0001f600": None, "x-ssid:41": None}
    for i, ssid in enumerate(odd):
        m.add_ap(world.wlan, f"odd{i}", ssid, f"00:00:00:00:00:0{i}", strength=20 + i, security=SEC_NONE)
    key = "x-ssid:" + b"x-ssid:41".hex()
    for k in ["a/b~c", "caf\u00e9 \u2615\U0001f600", key]:
        world.wait("/network/devices/wlan0/networks/" + esc(k) + "/visible", True)
    nets = world.get("/network/devices/wlan0/networks")
    assert nets["caf\u00e9 \u2615\U0001f600"]["name"] == "caf\u00e9 \u2615\U0001f600"
    # A text SSID that looks like an escaped key is escaped itself, so keys never collide.
    assert nets[key]["name"] == "x-ssid:41" and nets[key]["ssidHex"] == b"x-ssid:41".hex()
    # Bytes that are not UTF-8: a reversible hex key, the exact bytes in ssidHex.
    ap = m.add_ap(world.wlan, "oddbin", "tmp", "00:00:00:00:00:09", strength=33, security=SEC_NONE)
    m.iface(ap).UpdateProperties(AP, {"Ssid": dbus.ByteArray(b"\xff\xfeAB")})
    world.wait("/network/devices/wlan0/networks/x-ssid:fffe4142/ssidHex", "fffe4142")
    assert world.get("/network/devices/wlan0/networks/x-ssid:fffe4142/name") == "\ufffd\ufffdAB"
    assert world.get("/network/devices/wlan0/networks/tmp") is None
    # Those keys work as action arguments.
    # (the template itself chokes on such an SSID; the call reached it with the right AP)
    try:
        world.c.call("network.connect", {"device": "wlan0", "network": "x-ssid:fffe4142"})
    except RpcError as err:
        assert err.code == -32002
    assert m.calls(P, "AddAndActivateConnection")[-1][2] == ap
    # qsctl reaches them too (JSON Pointer escaping on the command line).
    out = world.env.qsctl("get", "/network/devices/wlan0/networks/" + esc("a/b~c") + "/name", "--raw")
    assert out.returncode == 0 and out.stdout.strip() == "a/b~c"


def test_wrong_property_type_degrades_and_logs_once(world):
    m = world.m
    nb = P + "/AccessPoint/ap_nb"
    for _ in range(3):
        m.iface(nb).UpdateProperties(AP, {"Strength": "very strong"})
    # Null, not dropped (wait_value tells the two apart): the access point is still shown.
    world.wait("/network/devices/wlan0/networks/Neighbour/accessPoints/00:11:22:33:44:77/strength", None)
    assert world.get("/network/devices/wlan0/networks/Neighbour/signalStrength") == 0
    m.iface(world.wlan).UpdateProperties(DEV, {"State": "activated"})
    world.wait("/network/devices/wlan0/state", "unknown")
    m.iface(world.wlan).UpdateProperties(DEV, {"State": dbus.UInt32(100)})
    world.wait("/network/devices/wlan0/state", "connected")
    log = world.env.qsd_log()
    assert log.count("property Strength has the unexpected D-Bus type 's'") == 1, log
    assert world.env.daemon.poll() is None
    # Still serving the rest.
    m.iface(nb).UpdateProperties(AP, {"Strength": dbus.Byte(64)})
    world.wait("/network/devices/wlan0/networks/Neighbour/signalStrength", 0.64)


def test_what_is_kept_of_an_access_point_goes_with_it(world):
    # An access point that left and comes back at the same path with the same wrongly typed
    # property is reported again: its "warned once" entry went with it. It stayed before, one for
    # every access point that ever left (NetworkManager gives each new one a new path).
    m = world.m
    strength = "/network/devices/wlan0/networks/Back/accessPoints/00:11:22:33:44:99/strength"
    for _ in range(2):
        ap = m.add_ap(world.wlan, "ap_back", "Back", "00:11:22:33:44:99")
        world.wait(strength, 0.5)
        m.iface(ap).UpdateProperties(AP, {"Strength": "strong"})
        world.wait(strength, None)
        m.mock.RemoveAccessPoint(world.wlan, ap)
        world.absent("/network/devices/wlan0/networks/Back")
    log = world.env.qsd_log()
    assert log.count("AccessPoint/ap_back: property Strength has the unexpected D-Bus type 's'") == 2, log


def test_actions_are_reachable_through_qsctl(world):
    out = world.env.qsctl("call", "network.setWifiEnabled", "enabled=false")
    assert out.returncode == 0, out.stderr
    world.wait("/network/wifiEnabled", False)
    out = world.env.qsctl("call", "network.connect", "device=wlan0", "network=Nowhere")
    assert out.returncode == 1 and "Nowhere" in out.stderr


def test_actions_and_tree_are_described(world):
    doc = world.c.call("rpc.discover")
    names = {m["name"] for m in doc["methods"]}
    for name in ["setWifiEnabled", "setConnectivityCheckEnabled", "checkConnectivity", "disconnectDevice",
                 "setAutoconnect", "setManaged", "setScannerEnabled", "connect", "connectProfile", "disconnect",
                 "forget", "getProfile", "updateProfile", "clearSecrets", "deleteProfile"]:
        assert "network." + name in names
    assert doc["components"]["schemas"]["Tree"]["properties"]["network"] == {"$ref": "#/components/schemas/NetworkDomain"}
    assert any(e["name"] == "network.connectionFailed" for e in doc["x-events"])
    # Every field the backend writes is in the schema.
    schemas = doc["components"]["schemas"]
    net = world.get("/network")
    assert set(net) <= set(schemas["NetworkDomain"]["properties"])
    for dev in net["devices"].values():
        assert set(dev) <= set(schemas["NetworkDevice"]["properties"])
        for n in dev["networks"].values():
            assert set(n) <= set(schemas["Network"]["properties"])
            for ap in n.get("accessPoints", {}).values():
                assert set(ap) <= set(schemas["AccessPoint"]["properties"])
    out = world.env.qsctl("describe", "network.connect")
    assert out.returncode == 0 and "psk" in out.stdout


# NetworkManager busy while the system starts: the profile's first GetSettings answers after 6 s,
# past the 5 s qsd waits (and blocks the whole mock meanwhile).
SLOW_SETTINGS = answers_late_once("ret = self.ConnectionGetSettings(self)")


def test_a_profile_whose_settings_came_too_late_is_read_again(env):
    m = NmMock(env)
    w = m.add_wifi("wlan0")
    m.add_ap(w, "ap_home", "HomeNet", "00:11:22:33:44:55")
    home = m.add_profile(w, "conn_home", "HomeNet")
    m.iface(home).AddMethod(CONN, "GetSettings", "", "a{sa{sv}}", SLOW_SETTINGS)
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network"])
    c.wait_value(sub, "/network/available", True, timeout=30)
    c.wait_value(sub, "/network/devices/wlan0/networks/HomeNet/known", True, timeout=30)
    (uuid, prof), = pointer_get(c.mirror(sub), "/network/devices/wlan0/networks/HomeNet/profiles").items()
    assert prof["id"] == "HomeNet"
    assert len(m.calls(home, "GetSettings")) >= 2
    assert "GetSettings did not answer in time" in env.qsd_log()
    assert env.daemon.poll() is None
