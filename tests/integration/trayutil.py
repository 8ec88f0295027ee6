"""Helpers of the tray tests: starting the test items (tray_item.py), the small watcher
(tray_watcher.py) and the ayatana item, talking to them, and reading PNG files."""

import json
import os
import struct
import zlib

from qsdtest import PY, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
WATCHER = "org.kde.StatusNotifierWatcher"


def session(env):
    import dbus  # noqa: only under /usr/bin/python3
    return dbus.bus.BusConnection(env.env["DBUS_SESSION_BUS_ADDRESS"])


def _wait_ready(env, log, proc, what, timeout=30):
    path = os.path.join(env.dir, log + ".log")

    def ready():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {open(path).read()}")
        return os.path.exists(path) and "ready" in open(path).read()

    wait_until(ready, timeout, what=f"{what} ready")


def start_items(env, configs, log="items", extra_env=None):
    """Starts one tray_item.py process serving `configs`; returns its Popen once every item
    is registered (or, with "register": "none", exported)."""
    log = f"{log}-{len(env.procs)}"
    e = dict(env.env)
    e.update(extra_env or {})
    p = env.spawn([PY, os.path.join(HERE, "tray_item.py"), json.dumps(configs)], log, env=e)
    _wait_ready(env, log, p, "tray items")
    return p


def start_watcher(env, slow=False):
    """slow: the first Get and the first RegisterStatusNotifierHost answer after 6 s."""
    log = f"watcher-{len(env.procs)}"
    p = env.spawn([PY, os.path.join(HERE, "tray_watcher.py")] + (["--slow"] if slow else []), log)
    _wait_ready(env, log, p, "watcher")
    return p


def control(env, service, path="/StatusNotifierItem"):
    import dbus
    return dbus.Interface(session(env).get_object(service, path), "org.qsdtest.Control")


def calls(env, service, path="/StatusNotifierItem"):
    return json.loads(str(control(env, service, path).Calls()))


def bus_barrier(env, c):
    """Proves that qsd handled every message the session bus queued for it before now, and that
    the tree changes they caused reached client c: a D-Bus call to qsd's watcher (the bus routes
    it behind them), then a round trip on c's socket."""
    registered(env)
    c.sync()


def set_prop(env, service, prop, value, signal, path="/StatusNotifierItem"):
    control(env, service, path).Set(prop, json.dumps(value), signal)


def registered(env):
    """RegisteredStatusNotifierItems of whoever owns the watcher name."""
    obj = session(env).get_object(WATCHER, "/StatusNotifierWatcher")
    return [str(s) for s in obj.Get(WATCHER, "RegisteredStatusNotifierItems", dbus_interface="org.freedesktop.DBus.Properties")]


def owner(env, name):
    import dbus
    try:
        return str(session(env).get_name_owner(name))
    except dbus.exceptions.DBusException:
        return ""


def unique_name_of(env, name):
    return owner(env, name)


def pixmap(w, h, rgba, quadrant=False):
    return [w, h, list(rgba)] + (["tl"] if quadrant else [])


# ---------------------------------------------------------------------------------------------
# PNG


def write_png(path, w, h, rgba):
    """A solid w x h RGBA PNG."""
    raw = b"".join(b"\x00" + bytes(rgba) * w for _ in range(h))

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)

    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return data


def read_png(path):
    """(width, height, rows of RGBA tuples) of an 8-bit RGBA or RGB PNG (what libpng writes)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + bpp]) + ((255,) if bpp == 3 else ()) for x in range(0, stride, bpp)])
        prev = line
    return w, h, rows


def file_of(url):
    assert url and url.startswith("file://"), url
    from urllib.parse import unquote
    return unquote(url[len("file://"):])
