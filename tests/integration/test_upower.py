"""The upower backend against python-dbusmock's upower and power_profiles_daemon templates on a
private system bus. Every assertion goes through the socket (the test client's mirror of its
subscription, or a call), the mocks are driven through org.freedesktop.DBus.Mock, and what qsd
asked the mocks is read from their call logs."""

import json
import os
import re
import signal

import pytest

from qsdtest import PY, RpcError, answers_late_once, wait_until
from upmock import (DEV_IFACE, DISPLAY, HADESS, MOCK, NEW_PPD, UP, UP_PATH, add_battery, add_mouse, dbus_mod,  # noqa: F401
                    method_calls, ppd_obj, setup_display, start_hadess, start_new_ppd, start_upower, up_mock)


HERE = os.path.dirname(os.path.abspath(__file__))


def power(c, sub):
    return c.mirror(sub)["power"]


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(10)


# ------------------------------------------------------------------------------------------------


def test_enumeration_at_start(env):
    start_upower(env)
    start_hadess(env)
    add_battery(env)
    up_mock(env).AddAC("line_power_AC", "Mock AC")
    add_mouse(env)
    setup_display(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power", "/daemon/backends/upower")
    c.wait_value(sub, "/power/available", True)
    c.wait_value(sub, "/power/profiles/available", True)
    c.wait_value(sub, "/daemon/backends/upower/state", "running")
    p = power(c, sub)
    assert p["onBattery"] is True
    assert p["lidIsPresent"] is True and p["lidIsClosed"] is False
    assert p["criticalAction"] == "powerOff"
    assert p["daemonVersion"] == "0.99.20"
    assert set(p["devices"]) == {"BAT0", "line_power_AC", "mouse_hidpp"}
    bat = p["devices"]["BAT0"]
    assert bat["type"] == "battery" and bat["state"] == "discharging"
    assert bat["percentage"] == pytest.approx(0.735)
    assert bat["timeToEmpty"] == 7200 and bat["timeToFull"] == 0
    assert bat["isLaptopBattery"] is True and bat["powerSupply"] is True
    assert bat["model"] == "Mock Battery"
    mouse = p["devices"]["mouse_hidpp"]
    assert mouse["type"] == "mouse" and mouse["isLaptopBattery"] is False and mouse["vendor"] == "Logitech"
    assert mouse["batteryLevel"] == "none" and mouse["serial"] == "4c-a1-2f"
    assert p["devices"]["line_power_AC"]["online"] is True
    # The display device is not a device, and it is on the 0..1 scale too.
    assert "DisplayDevice" not in p["devices"]
    d = p["displayDevice"]
    assert d["percentage"] == pytest.approx(0.735) and d["warningLevel"] == "low"
    assert d["iconName"] == "battery-good-symbolic" and d["changeRate"] == pytest.approx(12.3)
    # Every device carries every field of the schema.
    schema = c.call("rpc.discover")["components"]["schemas"]
    fields = set(schema["PowerDevice"]["required"])
    for dev in list(p["devices"].values()) + [d]:
        assert set(dev) == fields
    prof = p["profiles"]
    assert prof["profile"] == "balanced"
    assert prof["profiles"] == ["powerSaver", "balanced", "performance"]
    assert prof["hasPerformanceProfile"] is True
    assert prof["degradationReason"] == "none"
    assert prof["holds"] == {}
    assert prof["busName"] == HADESS[0]
    # The API description knows the domain and its actions.
    doc = c.call("rpc.discover")
    names = {m["name"] for m in doc["methods"]}
    assert {"power.setProfile", "power.holdProfile", "power.releaseProfile"} <= names
    assert "power" in doc["components"]["schemas"]["Tree"]["properties"]


def test_devices_added_and_removed_at_runtime(env):
    start_upower(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/available", True)
    assert power(c, sub)["devices"] == {}
    bat = add_battery(env, "battery_BAT1", 40.0, 3600)
    c.wait_value(sub, "/power/devices/battery_BAT1/percentage", 0.4)
    mouse = add_mouse(env)
    c.wait_value(sub, "/power/devices/mouse_hidpp/type", "mouse")
    # A device appears complete: its first patch carries every field.
    adds = [ch for n in c.notifications if n["method"] == "tree.changed" for ch in n["params"]["changes"]
            if ch["path"] == "/power/devices/mouse_hidpp"]
    assert adds and adds[0]["op"] == "add" and adds[0]["value"]["percentage"] == pytest.approx(0.55)
    up_mock(env).RemoveDevice(mouse)
    c.wait_for(lambda: "mouse_hidpp" not in power(c, sub)["devices"], what="mouse removed")
    up_mock(env).RemoveDevice(bat)
    c.wait_for(lambda: power(c, sub)["devices"] == {}, what="battery removed")
    # Removing what is not there, or adding twice, is harmless.
    dbus = dbus_mod()
    up_mock(env).EmitSignal(UP, "DeviceRemoved", "o", [dbus.ObjectPath(UP_PATH + "/devices/nothing")])
    add_battery(env, "battery_BAT1", 41.0, 3600)
    up_mock(env).EmitSignal(UP, "DeviceAdded", "o", [dbus.ObjectPath(UP_PATH + "/devices/battery_BAT1")])
    c.wait_value(sub, "/power/devices/battery_BAT1/percentage", 0.41)
    # A sentinel device added through the same mock after them: qsd reads a device once it is
    # announced and the mock answers in order, so once the sentinel is in the tree whatever the
    # signals before it caused is in the tree too.
    add_battery(env, "battery_BAT9", 9.0, 3600)
    c.wait_value(sub, "/power/devices/battery_BAT9/percentage", 0.09)
    assert sorted(power(c, sub)["devices"]) == ["battery_BAT1", "battery_BAT9"]
    adds = [ch for n in c.notifications if n["method"] == "tree.changed" for ch in n["params"]["changes"]
            if ch["path"] == "/power/devices/battery_BAT1"]
    assert [ch["op"] for ch in adds] == ["add", "remove", "add"], adds


def test_property_changes(env):
    start_upower(env)
    add_battery(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/devices/BAT0/percentage", 0.735)
    dbus = dbus_mod()
    c.notifications.clear()
    up_mock(env).SetDeviceProperties(UP_PATH + "/devices/BAT0",
                                     {"Percentage": dbus.Double(42.0), "State": dbus.UInt32(1, variant_level=1)})
    c.wait_value(sub, "/power/devices/BAT0/percentage", 0.42)
    c.wait_value(sub, "/power/devices/BAT0/state", "charging")
    # Changes address single fields, not the whole device.
    paths = {ch["path"] for n in c.notifications if n["method"] == "tree.changed" for ch in n["params"]["changes"]}
    assert paths == {"/power/devices/BAT0/percentage", "/power/devices/BAT0/state"}
    env.gdbus("-d", UP, "-o", UP_PATH, "-m", "org.freedesktop.DBus.Properties.Set", UP, "OnBattery", "<false>")
    c.wait_value(sub, "/power/onBattery", False)
    env.gdbus("-d", UP, "-o", UP_PATH, "-m", "org.freedesktop.DBus.Mock.UpdateProperties", UP,
              "{'LidIsClosed': <true>}")
    c.wait_value(sub, "/power/lidIsClosed", True)
    # A property the device did not have before, and an enum outside UPower's table.
    env.gdbus("-d", UP, "-o", UP_PATH + "/devices/BAT0", "-m", MOCK + ".AddProperty", DEV_IFACE, "Capacity", "<0.0>")
    env.gdbus("-d", UP, "-o", UP_PATH + "/devices/BAT0", "-m", MOCK + ".AddProperty", DEV_IFACE, "Technology",
              "<uint32 1>")
    env.gdbus("-d", UP, "-o", UP_PATH + "/devices/BAT0", "-m", MOCK + ".UpdateProperties", DEV_IFACE,
              "{'Capacity': <87.5>, 'Technology': <uint32 99>}")
    c.wait_value(sub, "/power/devices/BAT0/healthPercentage", 0.875)
    assert power(c, sub)["devices"]["BAT0"]["healthSupported"] is True
    assert power(c, sub)["devices"]["BAT0"]["technology"] == "unknown"


def test_display_device(env):
    start_upower(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/available", True)
    d = power(c, sub)["displayDevice"]
    assert d["type"] == "unknown" and d["isPresent"] is False and d["percentage"] == 0
    setup_display(env, 61.0, 1)
    c.wait_value(sub, "/power/displayDevice/percentage", 0.61)
    c.wait_value(sub, "/power/displayDevice/state", "charging")
    c.wait_value(sub, "/power/displayDevice/isPresent", True)
    assert power(c, sub)["devices"] == {}
    r = c.call("tree.get", {"path": "/power/displayDevice/percentage"})
    assert r["value"] == pytest.approx(0.61)


def test_set_profile(env):
    start_hadess(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/profiles/available", True)
    assert power(c, sub)["available"] is False  # no UPower: its part is unavailable, profiles are not
    assert c.call("power.setProfile", {"profile": "powerSaver"}) == {"profile": "powerSaver"}
    c.wait_value(sub, "/power/profiles/profile", "powerSaver")
    props = dbus_mod().Interface(ppd_obj(env), "org.freedesktop.DBus.Properties")
    assert props.Get(HADESS[2], "ActiveProfile") == "power-saver"
    # The daemon's spelling is accepted too.
    c.call("power.setProfile", {"profile": "performance"})
    c.wait_value(sub, "/power/profiles/profile", "performance")
    assert props.Get(HADESS[2], "ActiveProfile") == "performance"
    # A change made by someone else arrives.
    props.Set(HADESS[2], "ActiveProfile", "balanced")
    c.wait_value(sub, "/power/profiles/profile", "balanced")
    dbus_mod().Interface(ppd_obj(env), MOCK).UpdateProperties(HADESS[2], {"PerformanceDegraded": "lap-detected"})
    c.wait_value(sub, "/power/profiles/degradationReason", "lapDetected")

    with pytest.raises(RpcError) as e:
        c.call("power.setProfile", {"profile": "turbo"})
    assert e.value.code == -32602 and e.value.data["param"] == "profile"
    with pytest.raises(RpcError) as e:
        c.call("power.setProfile", {})
    assert e.value.code == -32602 and e.value.data["param"] == "profile"

    # A machine without the performance profile refuses it clearly.
    dbus = dbus_mod()
    dbus.Interface(ppd_obj(env), MOCK).UpdateProperties(HADESS[2], {"Profiles": dbus.Array(
        [dbus.Dictionary({"Profile": x, "Driver": "placeholder"}, signature="sv") for x in ("power-saver", "balanced")],
        signature="a{sv}")})
    c.wait_value(sub, "/power/profiles/hasPerformanceProfile", False)
    assert power(c, sub)["profiles"]["profiles"] == ["powerSaver", "balanced"]
    before = len(method_calls(ppd_obj(env), "Set"))
    for method, params in (("power.setProfile", {"profile": "performance"}),
                           ("power.holdProfile", {"profile": "performance", "reason": "x"})):
        with pytest.raises(RpcError) as e:
            c.call(method, params)
        assert e.value.code == -32602
        assert e.value.data["param"] == "profile"
        assert "not available" in e.value.message
        assert e.value.data["available"] == ["powerSaver", "balanced"]
    assert len(method_calls(ppd_obj(env), "Set")) == before


def test_holds_belong_to_the_client_connection(env):
    start_hadess(env)
    env.start_qsd(backends=["upower"])
    watcher, sub = env.watch("/power")
    watcher.wait_value(sub, "/power/profiles/available", True)
    holder = env.client()
    r = holder.call("power.holdProfile", {"profile": "performance", "reason": "game running",
                                          "applicationId": "org.example.Game"})
    cookie = r["cookie"]
    assert isinstance(cookie, int) and cookie > 0
    obj = ppd_obj(env)
    assert method_calls(obj, "HoldProfile") == [["performance", "game running", "org.example.Game"]]
    watcher.wait_value(sub, "/power/profiles/holds", {"org.example.Game:performance": {
        "profile": "performance", "applicationId": "org.example.Game", "reason": "game running", "state": "active",
        "cookie": cookie}})

    # Another connection cannot release it.
    with pytest.raises(RpcError) as e:
        watcher.call("power.releaseProfile", {"cookie": cookie})
    assert e.value.code == -32001 and e.value.data["param"] == "cookie"

    # Explicit release.
    holder.call("power.releaseProfile", {"cookie": cookie})
    wait_until(lambda: len(method_calls(obj, "ReleaseProfile")) == 1, what="ReleaseProfile")
    watcher.wait_value(sub, "/power/profiles/holds", {})
    with pytest.raises(RpcError) as e:
        holder.call("power.releaseProfile", {"cookie": cookie})
    assert e.value.code == -32001

    # A client that goes away releases what it held, and only that.
    r1 = holder.call("power.holdProfile", {"profile": "power-saver", "reason": "battery", "applicationId": "a"})
    keeper = env.client()
    keeper.call("power.holdProfile", {"profile": "performance", "reason": "render", "applicationId": "b"})
    watcher.wait_for(lambda: len(power(watcher, sub)["profiles"]["holds"] or {}) == 2, what="two holds")
    holder.close()
    wait_until(lambda: len(method_calls(obj, "ReleaseProfile")) == 2, what="ReleaseProfile on disconnect")
    watcher.wait_value(sub, "/power/profiles/holds", predicate=lambda v: v and list(v) == ["b:performance"]
                       and v["b:performance"]["state"] == "active" and v["b:performance"]["reason"] == "render")
    assert r1["cookie"] != cookie
    # The mock numbers its cookies 1, 2, 3 in order: the disconnect released the second.
    assert [c[0] for c in method_calls(obj, "ReleaseProfile")] == [1, 2]
    keeper.close()
    wait_until(lambda: len(method_calls(obj, "ReleaseProfile")) == 3, what="ReleaseProfile of the keeper")


def test_upower_restart(env):
    up = start_upower(env)
    start_hadess(env)
    add_battery(env)
    setup_display(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power", "/daemon/backends/upower")
    c.wait_value(sub, "/power/devices/BAT0/percentage", 0.735)
    c.wait_value(sub, "/power/profiles/available", True)
    for _ in range(2):
        stop(up)
        c.wait_value(sub, "/power/available", False)
        p = power(c, sub)
        assert set(p) == {"available", "profiles"}  # content removed, profiles untouched
        assert p["profiles"]["available"] is True
        assert c.call("power.setProfile", {"profile": "balanced"}) == {"profile": "balanced"}
        up = start_upower(env, OnBattery=False)
        add_battery(env, "BAT0", 50.0, 100)
        setup_display(env, 50.0)
        c.wait_value(sub, "/power/available", True)
        c.wait_value(sub, "/power/devices/BAT0/percentage", 0.5)
        c.wait_value(sub, "/power/displayDevice/percentage", 0.5)
        p = power(c, sub)
        assert p["onBattery"] is False and p["criticalAction"] == "powerOff"
        assert c.mirror(sub)["daemon"]["backends"]["upower"]["state"] == "running"
    assert env.daemon.poll() is None


def test_ppd_restart_keeps_client_holds(env):
    start_upower(env)
    ppd = start_hadess(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/available", True)
    c.wait_value(sub, "/power/profiles/available", True)
    cookie = c.call("power.holdProfile", {"profile": "performance", "reason": "game", "applicationId": "g"})["cookie"]
    dropped = c.call("power.holdProfile", {"profile": "power-saver", "reason": "dropped", "applicationId": "d"})
    c.wait_for(lambda: len(power(c, sub)["profiles"].get("holds") or {}) == 2, what="holds shown")
    stop(ppd)
    c.wait_value(sub, "/power/profiles", {"available": False})
    assert power(c, sub)["available"] is True  # UPower's part is untouched
    # Released while the daemon is away: not made again when it returns.
    assert c.call("power.releaseProfile", {"cookie": dropped["cookie"]}) == {"cookie": dropped["cookie"]}
    with pytest.raises(RpcError) as e:
        c.call("power.setProfile", {"profile": "balanced"})
    assert e.value.code == -32000
    with pytest.raises(RpcError) as e:
        c.call("power.holdProfile", {"profile": "balanced"})
    assert e.value.code == -32000
    start_hadess(env, ActiveProfile="power-saver")
    c.wait_value(sub, "/power/profiles/available", True)
    c.wait_value(sub, "/power/profiles/profile", "powerSaver")
    # The hold was made again with the new instance, and the client's cookie still works.
    wait_until(lambda: method_calls(ppd_obj(env), "HoldProfile") == [["performance", "game", "g"]], what="re-hold")
    c.wait_value(sub, "/power/profiles/holds/g:performance/profile", "performance")
    c.call("power.releaseProfile", {"cookie": cookie})
    wait_until(lambda: len(method_calls(ppd_obj(env), "ReleaseProfile")) == 1, what="release")
    c.wait_value(sub, "/power/profiles/holds", {})


def test_a_hold_the_daemon_released_is_over(env):
    # power-profiles-daemon releases every hold when the user picks a profile (ProfileReleased
    # with each cookie, and an empty ActiveProfileHolds; the mock does neither on its own, so the
    # test does it as the daemon would). qsd went on showing the hold "active", and made it again
    # after a restart of the daemon, undoing the user's choice.
    ppd = start_hadess(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/profiles/available", True)
    holder = env.client()
    cookie = holder.call("power.holdProfile", {"profile": "performance", "reason": "game", "applicationId": "g"})["cookie"]
    c.wait_value(sub, "/power/profiles/holds/g:performance/state", "active")
    c.call("power.setProfile", {"profile": "powerSaver"})
    mock = dbus_mod().Interface(ppd_obj(env), MOCK)
    ppd_cookie = 1   # the mock counts its cookies from 1
    mock.UpdateProperties(HADESS[2], {"ActiveProfileHolds": dbus_mod().Array([], signature="a{sv}")})
    mock.EmitSignal(HADESS[2], "ProfileReleased", "u", [dbus_mod().UInt32(ppd_cookie)])
    c.wait_value(sub, "/power/profiles/holds", {})
    # Over for its client too: its cookie names no hold any more.
    with pytest.raises(RpcError) as e:
        holder.call("power.releaseProfile", {"cookie": cookie})
    assert e.value.code == -32001
    assert method_calls(ppd_obj(env), "ReleaseProfile") == []
    # A new instance of the daemon does not get it again.
    stop(ppd)
    c.wait_value(sub, "/power/profiles", {"available": False})
    start_hadess(env, ActiveProfile="power-saver")
    c.wait_value(sub, "/power/profiles/profile", "powerSaver")
    holder.sync()
    assert method_calls(ppd_obj(env), "HoldProfile") == []
    assert power(c, sub)["profiles"]["holds"] == {}


def test_no_services(env):
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power", "/daemon/backends/upower")
    c.wait_value(sub, "/daemon/backends/upower/state", "unavailable")
    assert power(c, sub) == {"available": False, "profiles": {"available": False}}
    with pytest.raises(RpcError) as e:
        c.call("power.setProfile", {"profile": "balanced"})
    assert e.value.code == -32000
    with pytest.raises(RpcError) as e:
        c.call("power.releaseProfile", {"cookie": 5})
    assert e.value.code == -32001
    # Services that come later are picked up.
    start_upower(env)
    start_hadess(env)
    c.wait_value(sub, "/power/available", True)
    c.wait_value(sub, "/power/profiles/available", True)
    c.wait_value(sub, "/daemon/backends/upower/state", "running")


def test_wrong_types_degrade_and_log_once(env):
    start_upower(env)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/available", True)
    dbus = dbus_mod()
    path = UP_PATH + "/devices/battery_odd"
    mock = up_mock(env)
    mock.AddObject(path, DEV_IFACE, {
        "Type": dbus.UInt32(2), "PowerSupply": True, "Percentage": "73%",  # s instead of d
        "State": dbus.UInt32(2), "Model": "Odd", "TimeToEmpty": dbus.Int64(60),
    }, dbus.Array([], signature="(ssss)"))
    mock.EmitSignal(UP, "DeviceAdded", "o", [dbus.ObjectPath(path)])
    c.wait_value(sub, "/power/devices/battery_odd/model", "Odd")
    dev = power(c, sub)["devices"]["battery_odd"]
    assert dev["percentage"] is None
    assert dev["state"] == "discharging" and dev["isLaptopBattery"] is True
    # More changes to it: still one log line, and the good fields keep updating.
    for i in range(3):
        env.gdbus("-d", UP, "-o", path, "-m", MOCK + ".UpdateProperties", DEV_IFACE,
                  "{'Percentage': <'%d%%'>, 'TimeToEmpty': <int64 %d>}" % (70 - i, 100 + i))
    c.wait_value(sub, "/power/devices/battery_odd/timeToEmpty", 102)
    # And the wrong type on the daemon object and on power-profiles-daemon's.
    env.gdbus("-d", UP, "-o", UP_PATH, "-m", MOCK + ".UpdateProperties", UP, "{'OnBattery': <'yes'>}")
    c.wait_value(sub, "/power/onBattery", None)   # null, not dropped
    start_hadess(env)
    c.wait_value(sub, "/power/profiles/available", True)
    dbus.Interface(ppd_obj(env), MOCK).UpdateProperties(HADESS[2], {"ActiveProfile": dbus.UInt32(3)})
    c.wait_value(sub, "/power/profiles/profile", None)   # null, not dropped
    # Fixed by the peer: the field comes back.
    env.gdbus("-d", UP, "-o", path, "-m", MOCK + ".UpdateProperties", DEV_IFACE, "{'Percentage': <64.0>}")
    c.wait_value(sub, "/power/devices/battery_odd/percentage", 0.64)
    assert c.call("hello")["protocol"] == 1
    log = env.qsd_log()
    assert log.count("property Percentage has the unexpected D-Bus type 's'") == 1, log
    assert log.count("property OnBattery") == 1, log
    assert log.count("property ActiveProfile") == 1, log
    assert env.daemon.poll() is None


def test_new_ppd_name_preferred(env):
    start_hadess(env, ActiveProfile="power-saver")
    start_new_ppd(env, active="performance")
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/profiles/busName", NEW_PPD[0])
    p = power(c, sub)["profiles"]
    assert p["profile"] == "performance" and p["daemonVersion"] == "0.21"
    c.call("power.setProfile", {"profile": "balanced"})
    props = dbus_mod().Interface(env.dbus().get_object(NEW_PPD[0], NEW_PPD[1]), "org.freedesktop.DBus.Properties")
    assert props.Get(NEW_PPD[2], "ActiveProfile") == "balanced"
    c.wait_value(sub, "/power/profiles/profile", "balanced")
    # The hadess instance was not touched.
    hadess = dbus_mod().Interface(ppd_obj(env), "org.freedesktop.DBus.Properties")
    assert hadess.Get(HADESS[2], "ActiveProfile") == "power-saver"
    cookie = c.call("power.holdProfile", {"profile": "performance", "applicationId": "x"})["cookie"]
    assert method_calls(env.dbus().get_object(NEW_PPD[0], NEW_PPD[1]), "HoldProfile") == [["performance", "", "x"]]
    c.call("power.releaseProfile", {"cookie": cookie})
    wait_until(lambda: method_calls(env.dbus().get_object(NEW_PPD[0], NEW_PPD[1]), "ReleaseProfile") == [[7]],
               what="release with the daemon's cookie")


def test_falls_back_to_the_hadess_name(env):
    new = start_new_ppd(env, active="performance")
    start_hadess(env, ActiveProfile="power-saver")
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/profiles/busName", NEW_PPD[0])
    stop(new)
    c.wait_value(sub, "/power/profiles/busName", HADESS[0])
    c.wait_value(sub, "/power/profiles/profile", "powerSaver")
    assert power(c, sub)["profiles"]["available"] is True
    start_new_ppd(env, active="balanced")
    c.wait_value(sub, "/power/profiles/busName", NEW_PPD[0])
    c.wait_value(sub, "/power/profiles/profile", "balanced")


# A device object whose properties the test can take away and give back: while they are away,
# GetAll of org.freedesktop.UPower.Device fails (python-dbusmock answers UnknownInterface).
HIDE = "self._hidden = self.props.pop('org.freedesktop.UPower.Device')"
SHOW = "self.props['org.freedesktop.UPower.Device'] = self._hidden"


def invalidate(obj, *names):
    dbus = dbus_mod()
    dbus.Interface(obj, MOCK).EmitSignal("org.freedesktop.DBus.Properties", "PropertiesChanged", "sa{sv}as",
                                        [DEV_IFACE, dbus.Dictionary({}, signature="sv"), dbus.Array(names, signature="s")])


def test_display_device_leaves_the_tree_while_it_cannot_be_read(env):
    start_upower(env)
    setup_display(env, 73.5)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/displayDevice/percentage", 0.735)
    display = env.dbus().get_object(UP, DISPLAY)
    mock = dbus_mod().Interface(display, MOCK)
    mock.AddMethod(MOCK, "Hide", "", "", HIDE)
    mock.AddMethod(MOCK, "Show", "", "", SHOW)
    # Its properties are invalidated and the re-read fails: the stale values leave the tree.
    mock.Hide()
    invalidate(display, "Percentage")
    c.wait_absent(sub, "/power/displayDevice")
    assert power(c, sub)["available"] is True
    # Readable again (with a new value): it is read again by itself and comes back complete.
    mock.Show()
    env.gdbus("-d", UP, "-o", DISPLAY, "-m", "org.freedesktop.DBus.Properties.Set", DEV_IFACE, "Percentage", "<42.0>")
    c.wait_value(sub, "/power/displayDevice/percentage", 0.42, timeout=30)
    assert power(c, sub)["displayDevice"]["state"] == "discharging"
    assert env.qsd_log().count("it leaves the tree until it is read again") == 1
    assert env.daemon.poll() is None



def test_daemon_properties_invalidated_are_read_again(env):
    """UPower's own properties invalidated without values (the Properties interface allows
    it): qsd reads them again. Before, only a device's invalidation was read again; the daemon's
    kept showing the old value."""
    start_upower(env, OnBattery=False)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/onBattery", False)
    obj = env.dbus().get_object(UP, UP_PATH)
    mock = dbus_mod().Interface(obj, MOCK)
    mock.AddMethod(MOCK, "Unplug", "", "", f"self.props['{UP}']['OnBattery'] = True")
    mock.Unplug()   # changed without a signal: only the invalidation below tells qsd
    mock.EmitSignal("org.freedesktop.DBus.Properties", "PropertiesChanged", "sa{sv}as",
                    [UP, dbus_mod().Dictionary({}, signature="sv"), dbus_mod().Array(["OnBattery"], signature="s")])
    c.wait_value(sub, "/power/onBattery", True)
    assert power(c, sub)["devices"] == {} and env.daemon.poll() is None

# power-profiles-daemon (hadess name, python-dbusmock's template) whose HoldProfile fails while
# the mock's SetFailHolds(true) is in force (from the start with -p '{"FailHolds": true}').
FAILING_PPD_TEMPLATE = """
import dbus
from dbusmock.templates import power_profiles_daemon as base
from dbusmock.templates.power_profiles_daemon import BUS_NAME, MAIN_OBJ, MAIN_IFACE, SYSTEM_BUS  # noqa: F401


def load(mock, parameters):
    base.load(mock, parameters)
    mock.fail_holds = bool(parameters.get("FailHolds", False))

    def hold(self, profile, reason, application_id):
        if self.fail_holds:
            raise dbus.exceptions.DBusException("the profile cannot be held now", name="org.example.Busy")
        return base.hold_profile(self, profile, reason, application_id)
    mock.hold_profile = hold
    mock.AddMethod("org.freedesktop.DBus.Mock", "SetFailHolds", "b", "", "self.fail_holds = bool(args[0])")
"""


def start_failing_hadess(env, fail):
    path = os.path.join(env.dir, "failing_ppd_template.py")
    with open(path, "w") as f:
        f.write(FAILING_PPD_TEMPLATE)
    from qsdtest import PY
    p = env.spawn([PY, "-m", "dbusmock", "--system", "-t", path, "-p", json.dumps({"FailHolds": fail})],
                  "mock-failing-ppd-%d" % len(env.procs))
    env.wait_bus_name(HADESS[0])
    return p


def test_a_hold_made_again_shows_its_failure_and_is_retried(env):
    ppd = start_failing_hadess(env, False)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/profiles/available", True)
    cookie = c.call("power.holdProfile", {"profile": "performance", "reason": "game", "applicationId": "g"})["cookie"]
    c.wait_value(sub, "/power/profiles/holds/g:performance/state", "active")
    assert power(c, sub)["profiles"]["holds"]["g:performance"]["cookie"] == cookie
    # power-profiles-daemon restarts, and refuses to make the hold again.
    stop(ppd)
    c.wait_value(sub, "/power/profiles", {"available": False})
    start_failing_hadess(env, True)
    c.wait_value(sub, "/power/profiles/holds/g:performance/state", "failed")
    hold = power(c, sub)["profiles"]["holds"]["g:performance"]
    assert hold["cookie"] == cookie and hold["error"]["name"] == "org.example.Busy"
    assert hold["error"]["message"] == "the profile cannot be held now"
    # It is tried again: once the daemon agrees, the hold is active.
    obj = ppd_obj(env)
    wait_until(lambda: len(method_calls(obj, "HoldProfile")) >= 2, timeout=30, what="a retry")
    dbus_mod().Interface(obj, MOCK).SetFailHolds(False)
    c.wait_value(sub, "/power/profiles/holds/g:performance/state", "active", timeout=60)
    assert "error" not in power(c, sub)["profiles"]["holds"]["g:performance"]
    # The client's cookie still releases it.
    c.call("power.releaseProfile", {"cookie": cookie})
    wait_until(lambda: len(method_calls(obj, "ReleaseProfile")) == 1, what="ReleaseProfile")
    c.wait_value(sub, "/power/profiles/holds", {})


def test_a_failed_hold_released_by_its_client_leaves_the_tree(env):
    ppd = start_failing_hadess(env, False)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/profiles/available", True)
    holder = env.client()
    cookie = holder.call("power.holdProfile", {"profile": "power-saver", "reason": "r", "applicationId": "a"})["cookie"]
    c.wait_value(sub, "/power/profiles/holds/a:powerSaver/state", "active")
    stop(ppd)
    start_failing_hadess(env, True)
    c.wait_value(sub, "/power/profiles/holds/a:powerSaver/state", "failed")
    holder.call("power.releaseProfile", {"cookie": cookie})
    c.wait_value(sub, "/power/profiles/holds", {})
    # A new hold that the daemon refuses answers the error and is not kept.
    with pytest.raises(RpcError) as e:
        c.call("power.holdProfile", {"profile": "performance"})
    assert e.value.code == -32002 and e.value.data["name"] == "org.example.Busy"
    c.wait_value(sub, "/power/profiles/holds", {})


# ------------------------------------------------------------------------------------------------
# Services busy at start-up: qsd waits 5 s for a read, then shows what it has and asks again.

TIMED_OUT = re.compile(r"org\.freedesktop\.DBus\.Error\.(NoReply|Timeout)|did not answer in time")


def test_services_busy_at_start_are_asked_again(env):
    """UPower and power-profiles-daemon are stopped (SIGSTOP) when qsd starts, as services still
    starting can be: every start-up read times out. The domain is published with what it has
    (nothing), and once the services answer everything is read."""
    up = start_upower(env)
    ppd = start_hadess(env)
    add_battery(env)
    setup_display(env)
    for p in (up, ppd):
        p.send_signal(signal.SIGSTOP)
    try:
        env.start_qsd(backends=["upower"])
        c, sub = env.watch("/power", "/daemon/backends/upower")
        # Both are up once their reads timed out; no value could be read.
        c.wait_value(sub, "/daemon/backends/upower/state", "running", timeout=30)
        p = power(c, sub)
        assert p["available"] is True and p["devices"] == {} and "displayDevice" not in p
        assert p["profiles"]["available"] is True and p["profiles"]["profiles"] == []
    finally:
        for p in (up, ppd):
            p.send_signal(signal.SIGCONT)
    c.wait_value(sub, "/power/devices/BAT0/percentage", 0.735, timeout=60)
    c.wait_value(sub, "/power/displayDevice/percentage", 0.735, timeout=60)
    c.wait_value(sub, "/power/onBattery", True, timeout=60)
    c.wait_value(sub, "/power/criticalAction", "powerOff", timeout=60)
    c.wait_value(sub, "/power/profiles/profile", "balanced", timeout=60)
    assert power(c, sub)["profiles"]["profiles"] == ["powerSaver", "balanced", "performance"]
    log = env.qsd_log()
    assert "UPower did not answer in time" in log and f"{HADESS[0]} did not answer in time" in log
    assert env.daemon.poll() is None


# The device's GetAll sleeps through qsd's 5 s on its first call (blocking the whole mock).
SLOW_GETALL = answers_late_once("ret = self.props[args[0]]")


def test_a_device_that_answered_too_late_is_read_again(env):
    start_upower(env)
    add_battery(env)
    add_mouse(env)
    battery = env.dbus().get_object(UP, UP_PATH + "/devices/BAT0")
    dbus_mod().Interface(battery, MOCK).AddMethod("org.freedesktop.DBus.Properties", "GetAll", "s", "a{sv}", SLOW_GETALL)
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/devices/mouse_hidpp/percentage", 0.55, timeout=30)
    c.wait_value(sub, "/power/devices/BAT0/percentage", 0.735, timeout=60)
    assert re.search(r"reading /org/freedesktop/UPower/devices/BAT0 failed: " + TIMED_OUT.pattern, env.qsd_log())
    assert env.daemon.poll() is None


def fails(calls, body):
    """python-dbusmock method code (for AddMethod on one object) whose calls numbered in `calls`
    (from 1) fail with an error, as a service's reads can while it is busy; the others run
    `body`. One such method per object: the count is the object's."""
    return (f"self._calls = getattr(self, '_calls', 0) + 1\n"
            f"if self._calls in {tuple(calls)!r}:\n"
            f"    raise dbus.exceptions.DBusException('busy', name='org.freedesktop.DBus.Error.Failed')\n") + body


def test_a_device_whose_reads_fail_twice_is_read_until_it_answers(env):
    """A battery read before is invalidated, and the read of it fails twice in a row: it leaves
    the tree and is read again until it answers. The second failure made it look never read,
    and it was forgotten while it was still there."""
    start_upower(env)
    add_battery(env)
    battery = env.dbus().get_object(UP, UP_PATH + "/devices/BAT0")
    dbus_mod().Interface(battery, MOCK).AddMethod("org.freedesktop.DBus.Properties", "GetAll", "s", "a{sv}",
                                                  fails((2, 3), "ret = self.props[args[0]]"))
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/devices/BAT0/percentage", 0.735, timeout=30)
    invalidate(battery, "Percentage")
    wait_until(lambda: len(method_calls(battery, "GetAll")) >= 4, 30, what="a fourth read of the battery")
    c.wait_value(sub, "/power/devices/BAT0/percentage", 0.735, timeout=30)
    assert env.daemon.poll() is None


def test_start_up_reads_answered_with_an_error_are_asked_again(env):
    """UPower's EnumerateDevices and power-profiles-daemon's GetAll fail once (an error, not a
    timeout): both are asked again. Before, the batteries and the profiles stayed out until the
    services restarted or happened to signal a change."""
    start_upower(env)
    start_hadess(env)
    add_battery(env)
    up_mock(env).AddMethod(UP, "EnumerateDevices", "", "ao",
                           fails((1,), 'ret = [k for k in objects if "/devices/" in k and not k.endswith("/DisplayDevice")]'))
    dbus_mod().Interface(ppd_obj(env), MOCK).AddMethod("org.freedesktop.DBus.Properties", "GetAll", "s", "a{sv}",
                                                      fails((1,), "ret = self.props[args[0]]"))
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/devices/BAT0/percentage", 0.735, timeout=30)
    c.wait_value(sub, "/power/profiles/profile", "balanced", timeout=30)
    log = env.qsd_log()
    assert "reading EnumerateDevices of UPower failed: org.freedesktop.DBus.Error.Failed" in log, log
    assert "properties failed: org.freedesktop.DBus.Error.Failed" in log, log
    assert env.daemon.poll() is None


def ppd_restarts_with_a_hold(env, *mode):
    """power-profiles-daemon 0.20 (ppd_two_names.py) with a client's hold, stopped and started
    again (with `mode`), once the hold is back: returns (c, sub, the hold's cookie, a function
    giving the new instance's calls as lists of words)."""
    start_upower(env)
    first = os.path.join(env.dir, "ppd-first.log")
    p = env.spawn([PY, os.path.join(HERE, "ppd_two_names.py"), first], "ppd-first")
    env.wait_bus_name("org.freedesktop.UPower.PowerProfiles")
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/profiles/busName", "org.freedesktop.UPower.PowerProfiles", timeout=30)
    cookie = c.call("power.holdProfile", {"profile": "performance", "reason": "game", "applicationId": "game"})["cookie"]
    c.wait_value(sub, "/power/profiles/holds/game:performance/state", "active")
    p.terminate()
    p.wait(10)
    c.wait_value(sub, "/power/profiles/available", False, timeout=30)
    again = os.path.join(env.dir, "ppd-again.log")
    env.spawn([PY, os.path.join(HERE, "ppd_two_names.py"), again, *mode], "ppd-again")
    c.wait_value(sub, "/power/profiles/busName", "org.freedesktop.UPower.PowerProfiles", timeout=30)
    c.wait_value(sub, "/power/profiles/holds/game:performance/state", "active", timeout=30)
    return c, sub, cookie, lambda: [line.split() for line in open(again).read().splitlines()]


def test_a_hold_is_made_again_when_the_daemon_comes_back_under_both_names(env):
    """power-profiles-daemon 0.20 restarts: one connection takes the old name, then the new one.
    The client's hold is made again on the new instance. Before, the second name's arrival
    cancelled the HoldProfile the first had caused, and the hold stayed "pending" for good."""
    # The client is kept: closing its connection would release the hold.
    c, sub, _, calls = ppd_restarts_with_a_hold(env)
    # Made once, not once per name (the two names share their holds).
    assert [(m[0], m[3]) for m in calls()] == [("HoldProfile", "game")], calls()
    assert c.mirror(sub)["power"]["profiles"]["holds"]["game:performance"]["state"] == "active"


def test_a_hold_out_while_the_daemon_takes_its_second_name_is_made_once_and_released(env):
    """The new name comes while the HoldProfile that makes a client's hold again is out (one
    connection, the same daemon): that call's answer is the hold. Before, the name change
    cancelled it, the daemon's hold was never released (the profile stayed held until qsd
    exited), and a second HoldProfile was sent."""
    c, sub, cookie, calls = ppd_restarts_with_a_hold(env, "late")
    c.call("power.releaseProfile", {"cookie": cookie})
    c.wait_absent(sub, "/power/profiles/holds/game:performance")
    wait_until(lambda: any(m[0] == "ReleaseProfile" for m in calls()), 10, what="the ReleaseProfile")
    made = [m[4] for m in calls() if m[0] == "HoldProfile"]
    released = [m[2] for m in calls() if m[0] == "ReleaseProfile"]
    assert len(made) == 1 and released == made, calls()


def test_a_profile_set_while_the_daemon_takes_its_second_name_is_answered(env):
    """power-profiles-daemon 0.20 takes its second name while a power.setProfile is out (one
    connection, the same daemon): the daemon's answer is the call's. Before, the name change
    cancelled it and the client got -32000 for a profile the daemon had set."""
    start_upower(env)
    log = os.path.join(env.dir, "ppd.log")
    env.spawn([PY, os.path.join(HERE, "ppd_two_names.py"), log, "late-set"], "ppd")
    env.wait_bus_name("net.hadess.PowerProfiles")
    env.start_qsd(backends=["upower"])
    c, sub = env.watch("/power")
    c.wait_value(sub, "/power/profiles/busName", "net.hadess.PowerProfiles", timeout=30)
    assert c.call("power.setProfile", {"profile": "performance"}) == {"profile": "performance"}
    c.wait_value(sub, "/power/profiles/busName", "org.freedesktop.UPower.PowerProfiles", timeout=30)
    c.wait_value(sub, "/power/profiles/profile", "performance", timeout=30)
    assert [line.split()[:3] for line in open(log).read().splitlines()] == [
        ["Set", "net.hadess.PowerProfiles", "ActiveProfile"]]
