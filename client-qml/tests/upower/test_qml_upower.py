"""The QML client against qsd's UPower backend and python-dbusmock's UPower on a private system
bus: runs upower/tst_upower.qml in qsd-qml-tests and renders the example bar with a battery."""

import os
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("QSD_INTEGRATION_DIR", os.path.join(HERE, "..", "..", "..", "tests", "integration")))
from qsdtest import Env  # noqa: E402

UP = "org.freedesktop.UPower"
UP_PATH = "/org/freedesktop/UPower"
MOCK = "org.freedesktop.DBus.Mock"


@pytest.fixture
def env():
    e = Env(buses=True)
    yield e
    e.close()


def up_mock(env):
    import dbus
    return dbus.Interface(env.dbus().get_object(UP, UP_PATH), MOCK)


def test_qml_upower(env):
    import dbus
    env.start_mock("upower", {"OnBattery": True, "DaemonVersion": "0.99.20"}, name=UP)
    up_mock(env).AddDischargingBattery("BAT0", "Mock Battery", 73.5, 7200)
    up_mock(env).SetupDisplayDevice(2, 2, 73.5, 36.7, 50.0, 12.3, 7200, 0, True, "battery-good-symbolic", 3)
    env.start_qsd(backends=["upower"])

    # The QML test asks for each change by writing /debug/step; this thread makes it on the mock.
    client = env.client()
    sub = client.subscribe(["/debug/step"])
    done = threading.Event()
    errors = []

    def drive():
        try:
            for expected in ("charge", "unplug", "plug"):
                client.wait_value(sub, "/debug/step", expected, timeout=60)
                mock = up_mock(env)
                if expected == "charge":
                    mock.SetDeviceProperties(UP_PATH + "/devices/BAT0",
                                             {"Percentage": dbus.Double(42.0), "State": dbus.UInt32(1, variant_level=1)})
                elif expected == "unplug":
                    mock.RemoveObject(UP_PATH + "/devices/BAT0")
                    mock.EmitSignal(UP, "DeviceRemoved", "o", [dbus.ObjectPath(UP_PATH + "/devices/BAT0")])
                else:
                    mock.AddDischargingBattery("BAT0", "Mock Battery", 50.0, 3600)
        except Exception as e:  # reported by the main thread
            errors.append(e)
        finally:
            done.set()

    worker = threading.Thread(target=drive, daemon=True)
    worker.start()

    run_env = dict(env.env, QSD_SOCKET=env.socket, QSD_QML_EXTERNAL_DAEMON="1", QT_QPA_PLATFORM="offscreen")
    result = subprocess.run([os.environ["QSD_QML_TESTS_BIN"], "-input", os.path.join(HERE, "tst_upower.qml")],
                            env=run_env, capture_output=True, text=True, timeout=240)
    print(result.stdout, result.stderr)
    assert result.returncode == 0, "tst_upower.qml failed"
    done.wait(10)
    assert not errors, errors

    # The example bar with a battery, for a person to look at.
    png = os.path.join(os.environ.get("QSD_QML_OUT_DIR", env.dir), "example-bar-upower.png")
    render = subprocess.run([os.environ["QSD_QML_RENDER_BIN"], os.environ["QSD_QML_BAR"], png],
                            env=run_env, capture_output=True, text=True, timeout=120)
    print(render.stdout, render.stderr)
    assert render.returncode == 0
