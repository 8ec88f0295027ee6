"""Services started on demand: on a private system bus whose <servicedir> holds .service files
that start python-dbusmock stand-ins, qsd starts upowerd, power-profiles-daemon and
NetworkManager when their names have no owner (StartServiceByName, once); on a bus where they
are not activatable, the backends stay unavailable and say why in /daemon/backends/<id>/error."""

import json
import os

from qsdtest import BUS_CONF, PY, pointer_get

SERVICE = "[D-BUS Service]\nName={name}\nExec={script}\n"
# dbus-daemon starts the service with DBUS_STARTER_ADDRESS set to the bus that asked; the mock
# connects to the system bus, so that is its address. The pid file lets the test stop it.
SCRIPT = """#!/bin/sh
echo $$ > {pidfile}
DBUS_SYSTEM_BUS_ADDRESS="$DBUS_STARTER_ADDRESS" exec {py} -m dbusmock --system -t {template} -p '{params}' >> {log} 2>&1
"""


def start_buses(env, services):
    """System and session buses; `services` maps a bus name to (template, parameters) of a
    mock that the system bus can start."""
    svcdir = os.path.join(env.dir, "services")
    os.makedirs(svcdir)
    for name, (template, params) in services.items():
        script = os.path.join(env.dir, f"start-{name}.sh")
        with open(script, "w") as f:
            f.write(SCRIPT.format(pidfile=os.path.join(env.dir, f"{name}.pid"), py=PY, template=template,
                                  params=json.dumps(params), log=os.path.join(env.dir, f"{name}.log")))
        os.chmod(script, 0o755)
        with open(os.path.join(svcdir, f"{name}.service"), "w") as f:
            f.write(SERVICE.format(name=name, script=script))
    for kind in ("system", "session"):
        sock = os.path.join(env.dir, f"{kind}_bus_socket")
        conf = BUS_CONF.format(kind=kind, path=sock)
        if kind == "system":
            conf = conf.replace("<auth>EXTERNAL</auth>", f"<auth>EXTERNAL</auth>\n  <servicedir>{svcdir}</servicedir>")
        path = os.path.join(env.dir, f"{kind}.conf")
        with open(path, "w") as f:
            f.write(conf)
        env.env["DBUS_SYSTEM_BUS_ADDRESS" if kind == "system" else "DBUS_SESSION_BUS_ADDRESS"] = env.start_bus(kind, path)


def adopt(env, name):
    """The activated mock's pid, handed to env so that close() stops it."""
    pid = int(open(os.path.join(env.dir, f"{name}.pid")).read())
    env.procs.append(("pid", pid))
    return pid


def start_and_watch(env):
    env.start_qsd(backends=["upower", "nm"])
    c, sub = env.watch("/power", "/network", "/daemon/backends")
    return c, sub, (lambda path: pointer_get(c.mirror(sub), path, None))


def test_services_that_are_not_running_are_started(bare_env):
    env = bare_env
    start_buses(env, {
        "org.freedesktop.UPower": ("upower", {"OnBattery": True, "DaemonVersion": "0.99.20"}),
        "net.hadess.PowerProfiles": ("power_profiles_daemon", {"ActiveProfile": "power-saver"}),
        "org.freedesktop.NetworkManager": ("networkmanager", {"Version": "1.42.4"}),
    })
    c, sub, get = start_and_watch(env)
    c.wait_value(sub, "/power/available", True, timeout=30)
    c.wait_value(sub, "/power/profiles/profile", "powerSaver", timeout=30)
    c.wait_value(sub, "/network/available", True, timeout=30)
    pids = [adopt(env, n) for n in ("org.freedesktop.UPower", "net.hadess.PowerProfiles", "org.freedesktop.NetworkManager")]
    assert get("/power/onBattery") is True and get("/power/daemonVersion") == "0.99.20"
    assert get("/power/profiles/busName") == "net.hadess.PowerProfiles"
    c.wait_value(sub, "/daemon/backends/upower/state", "running")
    c.wait_value(sub, "/daemon/backends/nm/state", "running")
    # The newer power-profiles name is not activatable here: the hadess one serves.
    assert get("/daemon/backends/upower/error") is None
    # Started once: a service that goes away later is not started again by qsd.
    os.kill(pids[0], 15)
    c.wait_value(sub, "/power/available", False)
    assert get("/power/profiles/available") is True


def test_services_that_cannot_be_started_are_unavailable_with_the_reason(bare_env):
    env = bare_env
    start_buses(env, {})
    c, sub, get = start_and_watch(env)
    c.wait_value(sub, "/daemon/backends/upower/state", "unavailable", timeout=30)
    c.wait_value(sub, "/daemon/backends/nm/state", "unavailable", timeout=30)
    up = get("/daemon/backends/upower/error")
    assert up.startswith("neither UPower nor power-profiles-daemon is on the system bus")
    for name in ("org.freedesktop.UPower", "org.freedesktop.UPower.PowerProfiles", "net.hadess.PowerProfiles"):
        assert f"{name} could not be started: org.freedesktop.DBus.Error.ServiceUnknown" in up, up
    nm = get("/daemon/backends/nm/error")
    assert nm.startswith("NetworkManager is not on the system bus and could not be started: "
                         "org.freedesktop.DBus.Error.ServiceUnknown"), nm
    assert get("/power") == {"available": False, "profiles": {"available": False}}
    assert get("/network") == {"available": False}
    # A service that starts by itself later is picked up as before.
    env.spawn([PY, "-m", "dbusmock", "--system", "-t", "upower"], "mock-upower-late")
    c.wait_value(sub, "/power/available", True, timeout=30)
    c.wait_value(sub, "/daemon/backends/upower/state", "running")
    assert env.daemon.poll() is None
