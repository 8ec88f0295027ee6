"""/network against a REAL NetworkManager, run by the test in its own network namespace where it
manages a veth pair, talking to qsd over the test's private system bus. Real property types,
real signal batching, and the properties the mock lacks (InterfacesFlags, Speed, IP config); the
secret agent with a real 802.1X authenticator (hostapd) and supplicant on the veth pair.
Skipped only when a network namespace cannot be created (not root)."""

import os
import shutil
import signal
import subprocess
import uuid as uuidlib

import pytest

from qsdtest import RpcError, pointer_get, wait_until

NM_CONF = """[main]
plugins=keyfile
no-auto-default=*
dhcp=internal
dns=none
rc-manager=unmanaged
[keyfile]
path={keyfiles}
[connectivity]
enabled=false
[logging]
level=INFO
"""


def _netns_possible(name):
    if shutil.which("NetworkManager") is None and not os.path.exists("/usr/sbin/NetworkManager"):
        return False
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True)
    return r.returncode == 0


class RealNm:
    def __init__(self, env):
        self.env = env
        self.ns = f"qsdnm-{os.getpid()}-{uuidlib.uuid4().hex[:6]}"
        if not _netns_possible(self.ns):
            pytest.skip("cannot create a network namespace (needs root and NetworkManager)")
        self.proc = None
        d = env.dir
        self.keyfiles = os.path.join(d, "keyfiles")
        os.makedirs(self.keyfiles)
        os.makedirs(os.path.join(d, "nm-none"))
        self.conf = os.path.join(d, "nm.conf")
        with open(self.conf, "w") as f:
            f.write(NM_CONF.format(keyfiles=self.keyfiles))
        self.ip("link", "set", "lo", "up")
        self.ip("link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b")

    def ip(self, *args):
        subprocess.run(["ip", "-n", self.ns, *args], check=True, capture_output=True)

    def start(self):
        d = self.env.dir
        # A read-only /sys makes NetworkManager treat links as initialised without udev; tmpfs
        # keeps its state off the host. --debug logs to stderr, into the NM log the harness
        # keeps with a failed test (QSD_TEST_KEEP=failed), instead of syslog; raise [logging]
        # level to TRACE there to see each secrets request.
        script = (
            "mount -o remount,ro /sys && "
            "mount -t tmpfs tmpfs /var/lib/NetworkManager && "
            "mkdir -p /run/NetworkManager && mount -t tmpfs tmpfs /run/NetworkManager && "
            f"exec NetworkManager --no-daemon --debug --config={self.conf} --config-dir={d}/nm-none "
            "--state-file=/run/NetworkManager/state --pid-file=/run/NetworkManager/pid"
        )
        self.proc = self.env.spawn(["ip", "netns", "exec", self.ns, "unshare", "--mount", "sh", "-c", script],
                                   f"nm-{len(self.env.procs)}")
        self.env.wait_bus_name("org.freedesktop.NetworkManager", timeout=20)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def nmcli(self, *args):
        return subprocess.run(["nmcli", *args], check=True, capture_output=True, text=True, env=self.env.env,
                              timeout=30).stdout

    def stored_secrets(self, uuid, setting):
        """The secrets NetworkManager holds for the profile's setting, from its own
        Settings.Connection.GetSecrets. Not `nmcli -s`: NetworkManager sends the connection's
        Updated signal just before the reply (the request refreshes the profile), and nmcli, which
        merged the secrets into its cached copy of the profile, can print that copy after the
        refetch the signal caused has replaced it, without the secrets (one run in a hundred).
        NetworkManager answers NoSecrets when it holds none and no agent gave any: {} here."""
        import dbus  # noqa: imported lazily, as in qsdtest
        bus = self.env.dbus()
        try:
            settings = bus.get_object("org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager/Settings")
            path = settings.GetConnectionByUuid(uuid, dbus_interface="org.freedesktop.NetworkManager.Settings")
            conn = bus.get_object("org.freedesktop.NetworkManager", path)
            try:
                secrets = conn.GetSecrets(setting, dbus_interface="org.freedesktop.NetworkManager.Settings.Connection")
            except dbus.exceptions.DBusException as e:
                if e.get_dbus_name() == "org.freedesktop.NetworkManager.AgentManager.NoSecrets":
                    return {}
                raise
            return {str(k): str(v) for k, v in secrets.get(setting, {}).items()}
        finally:
            bus.close()

    def close(self):
        self.stop()
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


@pytest.fixture
def real(env):
    nm = RealNm(env)
    try:
        nm.start()
        yield nm
    finally:
        nm.close()


def test_real_networkmanager_wired(env, real):
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network"])
    get = lambda p: pointer_get(c.mirror(sub), p, None)  # noqa: E731
    wait = lambda p, v=None, predicate=None, timeout=20: c.wait_value(sub, p, v, predicate, timeout)  # noqa: E731

    wait("/network/available", True)
    wait("/network/devices/veth-a/nmManaged", True)
    dev = get("/network/devices/veth-a")
    assert dev["type"] == "wired" and dev["name"] == "veth-a"
    assert len(dev["address"]) == 17
    assert "lo" not in get("/network/devices")
    assert get("/network/version")

    # Carrier: veth-a has a link only while its peer is up.
    real.ip("link", "set", "veth-b", "up")
    real.ip("link", "set", "veth-a", "up")
    wait("/network/devices/veth-a/hasLink", True)
    wait("/network/devices/veth-a/linkSpeed", 10000)  # veth reports 10 Gb/s once the link is up
    wait("/network/devices/veth-a/networks/veth-a/known", False)

    # A profile written by another client appears as a saved profile of the wired network.
    real.nmcli("connection", "add", "type", "ethernet", "ifname", "veth-a", "con-name", "wired-a",
               "ipv4.method", "disabled", "ipv6.method", "disabled", "connection.autoconnect", "no")
    wait("/network/devices/veth-a/networks/veth-a/known", True)
    (uuid, prof), = get("/network/devices/veth-a/networks/veth-a/profiles").items()
    assert prof == {"id": "wired-a", "uuid": uuid}

    # Connect through qsd: ActivateConnection with that profile.
    c.call("network.connect", {"device": "veth-a", "network": "veth-a"})
    wait("/network/devices/veth-a/state", "connected")
    wait("/network/devices/veth-a/networks/veth-a/connected", True)
    assert get("/network/devices/veth-a/connected") is True

    # Profile read and write through qsd; NetworkManager persists it (keyfile) and signals.
    p = c.call("network.getProfile", {"profile": uuid})
    assert p["id"] == "wired-a" and p["type"] == "802-3-ethernet"
    assert p["settings"]["connection"]["interface-name"] == "veth-a"
    c.call("network.updateProfile", {"profile": uuid, "settings": {"connection": {"id": "wired-renamed"}}})
    wait(f"/network/devices/veth-a/networks/veth-a/profiles/{uuid}/id", "wired-renamed")
    assert "wired-renamed" in real.nmcli("-g", "connection.id", "connection", "show", uuid)
    with pytest.raises(RpcError) as err:
        c.call("network.updateProfile", {"profile": uuid, "settings": {"ipv4": {"method": "no-such-method"}}})
    assert err.value.code == -32002 and err.value.data["name"].startswith("org.freedesktop.NetworkManager")

    # Disconnect through qsd (Device.Disconnect).
    c.call("network.disconnect", {"device": "veth-a", "network": "veth-a"})
    wait("/network/devices/veth-a/networks/veth-a/connected", False)
    wait("/network/devices/veth-a/state", "disconnected")

    # Carrier loss removes the wired network (NetworkManager notices with some delay).
    real.ip("link", "set", "veth-b", "down")
    wait("/network/devices/veth-a/hasLink", False, timeout=30)
    wait("/network/devices/veth-a/networks", {})
    real.ip("link", "set", "veth-b", "up")
    wait("/network/devices/veth-a/hasLink", True, timeout=30)

    # Delete through qsd.
    c.call("network.deleteProfile", {"profile": uuid})
    wait("/network/devices/veth-a/networks/veth-a/known", False)
    assert uuid not in real.nmcli("-g", "UUID", "connection", "show")

    # NetworkManager restarted: unavailable and empty meanwhile, complete again after.
    real.stop()
    wait("/network", {"available": False})
    with pytest.raises(RpcError) as err:
        c.call("network.disconnectDevice", {"device": "veth-a"})
    assert err.value.code == -32000
    real.start()
    wait("/network/available", True)
    wait("/network/devices/veth-a/linkSpeed", 10000)
    wait("/network/devices/veth-a/hasLink", True)
    assert env.daemon.poll() is None
    assert c.call("tree.get", {"path": "/daemon/backends/nm/state"})["value"] == "running"


def test_update_profile_keeps_the_stored_secrets(env, real):
    """network.updateProfile sends the merged settings without secrets: qsd never asks for them
    (GetSecrets), so they never enter its memory, the tree or the log. NetworkManager keeps a
    profile's stored secrets when an Update carries none (nm-settings-connection.c: "If the new
    connection has no secrets, we do not want to remove all secrets"): this checks that on the
    real service, on disk too."""
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network"])
    c.wait_value(sub, "/network/available", True, timeout=20)
    real.nmcli("connection", "add", "type", "wifi", "ifname", "*", "con-name", "wifi-secret", "ssid", "Secretive",
               "wifi-sec.key-mgmt", "wpa-psk", "wifi-sec.psk", "s3cret passphrase", "connection.autoconnect", "no")
    uuid = real.nmcli("-g", "connection.uuid", "connection", "show", "wifi-secret").strip()

    def known():
        try:
            return c.call("network.getProfile", {"profile": uuid})
        except RpcError:
            return None
    prof = wait_until(known, timeout=20, what="the profile in qsd")
    assert prof["settings"]["802-11-wireless-security"]["key-mgmt"] == "wpa-psk"
    assert "psk" not in prof["settings"]["802-11-wireless-security"]

    c.call("network.updateProfile", {"profile": uuid, "settings": {"connection": {"autoconnect-priority": 7}}})
    wait_until(lambda: real.nmcli("-g", "connection.autoconnect-priority", "connection", "show", uuid).strip() == "7",
               timeout=20, what="the update in NetworkManager")
    secret = lambda: real.stored_secrets(uuid, "802-11-wireless-security").get("psk")  # noqa: E731
    assert secret() == "s3cret passphrase"
    # Written to the keyfile as well: still there after NetworkManager reads its profiles again.
    real.nmcli("connection", "reload")
    assert secret() == "s3cret passphrase"
    assert "s3cret passphrase" not in env.qsd_log()
    assert "s3cret passphrase" not in str(c.mirror(sub))


def test_update_profile_of_a_renamed_property(env, real):
    """NetworkManager's GetSettings carries ipv4 addresses, routes (and dns) in two spellings, the
    legacy `addresses` and the newer `address-data`..., and when an Update carries both the daemon
    takes the legacy one (libnm's _nm_setting_use_legacy_property). qsd sends back the cached
    settings merged with the change: a change to one spelling must go without the other, or
    NetworkManager keeps the old value without a word. Checked in what NetworkManager stored."""
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network/available"])
    c.wait_value(sub, "/network/available", True, timeout=20)
    real.nmcli("connection", "add", "type", "ethernet", "ifname", "veth-a", "con-name", "manual",
               "ipv4.method", "manual", "ipv4.addresses", "10.0.0.1/24", "ipv4.gateway", "10.0.0.254",
               "ipv4.routes", "192.168.5.0/24 10.0.0.254", "ipv4.dns", "192.168.1.1",
               "ipv6.method", "disabled", "connection.autoconnect", "no")
    uuid = real.nmcli("-g", "connection.uuid", "connection", "show", "manual").strip()
    stored = lambda key: real.nmcli("-g", key, "connection", "show", uuid).strip()  # noqa: E731

    def ipv4():
        try:
            return c.call("network.getProfile", {"profile": uuid})["settings"]["ipv4"]
        except RpcError:
            return None

    def update(changes, check):
        """Updates through qsd, then waits until qsd's copy (getProfile reads it again, which is
        also what the next update merges into) shows the change."""
        c.call("network.updateProfile", {"profile": uuid, "settings": {"ipv4": changes}})
        wait_until(lambda: (v := ipv4()) is not None and check(v), timeout=20, what=f"the update {changes} in qsd")

    ip = wait_until(ipv4, timeout=20, what="the profile in qsd")
    # Both spellings, as NetworkManager sends them: the case this is about.
    assert "addresses" in ip and ip["address-data"] == [{"address": "10.0.0.1", "prefix": 24}]
    assert "routes" in ip and "route-data" in ip

    update({"address-data": [{"address": "10.0.0.2", "prefix": 24}]},
           lambda v: v.get("address-data") == [{"address": "10.0.0.2", "prefix": 24}])
    assert stored("ipv4.addresses") == "10.0.0.2/24"
    assert stored("ipv4.gateway") == "10.0.0.254"          # untouched
    assert "192.168.5.0/24" in stored("ipv4.routes")

    # The legacy addresses carry a gateway too, which NetworkManager would take instead.
    update({"gateway": "10.0.0.253"}, lambda v: v.get("gateway") == "10.0.0.253")
    assert stored("ipv4.gateway") == "10.0.0.253"
    assert stored("ipv4.addresses") == "10.0.0.2/24"

    update({"route-data": [{"dest": "192.168.6.0", "prefix": 24, "next-hop": "10.0.0.254"}]},
           lambda v: [r.get("dest") for r in v.get("route-data", [])] == ["192.168.6.0"])
    routes = stored("ipv4.routes")
    assert "192.168.6.0/24" in routes and "192.168.5.0" not in routes

    if "dns-data" in ipv4():   # NetworkManager 1.42 names the DNS servers both ways as well
        update({"dns-data": ["9.9.9.9"]}, lambda v: v.get("dns-data") == ["9.9.9.9"])
        assert stored("ipv4.dns") == "9.9.9.9"
    assert stored("ipv4.addresses") == "10.0.0.2/24" and stored("ipv4.gateway") == "10.0.0.253"


# --- the secret agent and every saved connection, against the real service --------------------

EAP_USER, EAP_PASSWORD = "alice", "md5 secret 42"


def _start_8021x(env, real):
    """An 802.1X authenticator on veth-b (hostapd, wired driver, its own EAP server knowing
    EAP_USER with EAP-MD5) and wpa_supplicant for NetworkManager on the private bus, both in the
    namespace: a wired profile with 802.1X then needs a password, and a wrong one is refused."""
    for tool in ("hostapd", "wpa_supplicant"):
        if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
            pytest.skip(f"{tool} is not installed (scripts/install-deps)")
    users = os.path.join(env.dir, "eap_users")
    with open(users, "w") as f:
        f.write(f'"{EAP_USER}" MD5 "{EAP_PASSWORD}"\n')
    conf = os.path.join(env.dir, "hostapd.conf")
    with open(conf, "w") as f:
        f.write(f"interface=veth-b\ndriver=wired\nieee8021x=1\neap_server=1\neap_user_file={users}\neapol_version=2\n")
    real.ip("link", "set", "veth-b", "up")
    real.ip("link", "set", "veth-a", "up")
    env.spawn(["ip", "netns", "exec", real.ns, "hostapd", conf], "hostapd")
    env.spawn(["ip", "netns", "exec", real.ns, "wpa_supplicant", "-u"], "wpa_supplicant")
    env.wait_bus_name("fi.w1.wpa_supplicant1")


def test_networkmanager_asks_qsds_agent(env, real):
    """A wired profile with 802.1X whose password an agent owns (password-flags 1): activated
    through network.activateProfile, NetworkManager asks qsd's agent; a wrong answer makes it ask
    again (REQUEST_NEW), the right one lets the activation go on to connected."""
    _start_8021x(env, real)
    env.start_qsd("-v", backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network"])
    get = lambda p: pointer_get(c.mirror(sub), p, None)  # noqa: E731
    wait = lambda p, v=None, predicate=None, timeout=30: c.wait_value(sub, p, v, predicate, timeout)  # noqa: E731
    wait("/network/available", True)
    wait("/network/secretAgentRegistered", True)
    c.call("network.handleSecrets", {"enabled": True})
    real.nmcli("connection", "add", "type", "ethernet", "ifname", "veth-a", "con-name", "dot1x",
               "802-1x.eap", "md5", "802-1x.identity", EAP_USER, "802-1x.password-flags", "1",
               "ipv4.method", "disabled", "ipv6.method", "disabled", "connection.autoconnect", "no")
    uuid = real.nmcli("-g", "connection.uuid", "connection", "show", "dot1x").strip()
    wait(f"/network/profiles/{uuid}/type", "wired")

    assert c.call("network.activateProfile", {"profile": uuid, "device": "veth-a"}) == {"profile": uuid, "device": "veth-a"}
    wait("/network/secretRequests", predicate=lambda v: v and len(v) == 1)
    (rid, req), = get("/network/secretRequests").items()
    assert req["profile"] == uuid and req["profileName"] == "dot1x"
    assert req["type"] == "8021x" and req["setting"] == "802-1x"
    assert req["fields"] == [{"key": "identity", "label": "Username", "secret": False},
                             {"key": "password", "label": "Password", "secret": True}]
    assert req["reason"] == "missing" and req["userRequested"] is True
    # The profile's state comes from the active connection, which qsd reads on its own when it
    # appears: that read and NetworkManager's call to the agent race, so the state is waited for.
    wait(f"/network/profiles/{uuid}/state", "connecting")

    # The authenticator refuses a wrong password; NetworkManager asks again for a new one.
    c.call("network.answerSecrets", {"request": rid, "secrets": {"password": "not the password"}})
    wait("/network/secretRequests", predicate=lambda v: v and rid not in v, timeout=60)
    (rid2, req2), = get("/network/secretRequests").items()
    assert req2["reason"] == "new" and req2["profile"] == uuid

    c.call("network.answerSecrets", {"request": rid2, "secrets": {"password": EAP_PASSWORD}})
    wait(f"/network/profiles/{uuid}/state", "connected", timeout=60)
    prof = get(f"/network/profiles/{uuid}")
    assert prof["active"] is True and prof["device"] == "veth-a"
    assert get("/network/secretRequests") == {}
    wait("/network/devices/veth-a/state", "connected")
    log = env.qsd_log()
    assert EAP_PASSWORD not in log and "not the password" not in log
    # qsd stores nothing and deletes nothing: NetworkManager still has no password of its own.
    assert "password" not in real.stored_secrets(uuid, "802-1x")


def test_real_profiles_and_activation(env, real):
    """/network/profiles lists NetworkManager's profiles with their types; activating and
    deactivating a second veth profile through qsd changes its `active`."""
    real.ip("link", "set", "veth-b", "up")
    real.ip("link", "set", "veth-a", "up")
    env.start_qsd(backends=["nm"])
    c = env.client()
    sub = c.subscribe(["/network"])
    wait = lambda p, v=None, predicate=None, timeout=30: c.wait_value(sub, p, v, predicate, timeout)  # noqa: E731
    wait("/network/available", True)
    real.nmcli("connection", "add", "type", "ethernet", "ifname", "veth-a", "con-name", "wired-a",
               "ipv4.method", "disabled", "ipv6.method", "disabled", "connection.autoconnect", "no")
    real.nmcli("connection", "add", "type", "ethernet", "ifname", "veth-b", "con-name", "wired-b",
               "ipv4.method", "disabled", "ipv6.method", "disabled", "connection.autoconnect", "no")
    real.nmcli("connection", "add", "type", "bridge", "ifname", "br-qsd", "con-name", "bridge-qsd",
               "ipv4.method", "disabled", "ipv6.method", "disabled", "connection.autoconnect", "no")
    real.nmcli("connection", "add", "type", "wireguard", "ifname", "wg-qsd", "con-name", "wg-qsd",
               "ipv4.method", "disabled", "ipv6.method", "disabled", "connection.autoconnect", "no")
    uuids = {}
    for line in real.nmcli("-g", "NAME,UUID,TYPE", "connection", "show").splitlines():
        name, uuid, _ = line.split(":")
        uuids[name] = uuid
    wait("/network/profiles", predicate=lambda v: v is not None and set(uuids.values()) <= set(v))
    profiles = pointer_get(c.mirror(sub), "/network/profiles")
    types = {p["id"]: p["type"] for p in profiles.values()}
    assert types["wired-a"] == "wired" and types["wired-b"] == "wired"
    assert types["bridge-qsd"] == "bridge" and types["wg-qsd"] == "wireguard"
    assert profiles[uuids["wg-qsd"]]["vpnService"] == "wireguard"
    assert profiles[uuids["wired-b"]]["interfaceName"] == "veth-b"
    assert profiles[uuids["wired-b"]]["autoconnect"] is False
    if "lo" in uuids:   # NetworkManager 1.42 keeps the loopback as an in-memory profile
        assert types["lo"] == "loopback" and profiles[uuids["lo"]]["active"] is True

    b = uuids["wired-b"]
    assert profiles[b]["active"] is False and profiles[b]["state"] == "disconnected"
    c.call("network.activateProfile", {"profile": b})
    wait(f"/network/profiles/{b}/state", "connected")
    assert pointer_get(c.mirror(sub), f"/network/profiles/{b}/active") is True
    assert pointer_get(c.mirror(sub), f"/network/profiles/{b}/device") == "veth-b"
    assert pointer_get(c.mirror(sub), f"/network/profiles/{uuids['wired-a']}/active") is False
    c.call("network.deactivateProfile", {"profile": b})
    wait(f"/network/profiles/{b}/active", False)
    assert pointer_get(c.mirror(sub), f"/network/profiles/{b}/device") is None
    assert "wired-b" not in real.nmcli("-g", "NAME", "connection", "show", "--active")
    assert c.call("network.deactivateProfile", {"profile": b}) == {"profile": b}
