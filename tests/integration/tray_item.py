#!/usr/bin/python3
"""StatusNotifierItems written for the tray tests (dbus-python on GLib): real items on the
session bus, configured by a JSON list given as the first argument, all served by this one
process. Each entry:

  register   "name" (own `name`, register it), "unique" (register the unique name), "path"
             (register only the object path, as libappindicator does), or "none"
  name       the well-known name to own ("name" registration)
  path       the item's object path (default /StatusNotifierItem)
  props      item properties; pixmaps are [[w, h, [r, g, b, a], "tl"?], ...] ("tl": only the
             top-left quadrant has the colour, the rest is transparent), or an entry
             {"width": w, "height": h, "bytes": n}: n zero bytes whatever the size
  menu       "demo" (a submenu, a checkbox and a radio group), "deep" (20 nested submenus), an
             integer N (N flat entries), "icons:N" (N entries whose icon-names no theme has) or
             "icondata:N:BYTES" (N entries, each with its own icon-data of BYTES bytes)
  getAllFails  GetAll answers an error (the host must read property by property)
  slow       seconds Activate takes to answer (an unresponsive item)
  holdActivate  Activate is recorded at once and answered only when Control.ReleaseActivate is
             called (an application busy with it); from then on at once
  slowLayouts  the first N GetLayout calls are answered after 6 s, past the host's 5 s (an app
             busy at login)
  slowReads  the first N GetAll calls, and every Get until the last of them, are answered after
             6 s (an app busy at login, too long for the host to read it one property at a time)
  readDelay  seconds every GetAll waits before it is answered, without blocking the item (an app
             a moment late, within the host's timeouts)
  reregister register again whenever the watcher name changes owner (as ayatana does)
  swapMenu   a menu spec: at the first AboutToShow of an entry other than 0 the item moves to a
             new menu of that spec (at <path>/Menu2, its calls logged with "Menu2" last) and sends
             NewMenu; that AboutToShow and the host's Get of Menu are then held (Control.Held()
             counts the Gets) until Control.Release() answers them, the Get first, and returns
             once the bus daemon answered a call made after them

Every item also exports org.qsdtest.Control at its path: Calls() returns the calls and signals it
saw as JSON, Set(prop, json, signal) changes a property and emits a signal, AddMenuEntry(label)
adds an entry and emits LayoutUpdated, BenchIcon(n) changes the icon and emits NewIcon,
returning CLOCK_MONOTONIC (ns) just before the emission. What a broken or hostile item does:
LongNames(n, bytes) sends n icon names of that length, one NewIcon each (the next once the host
read the last), then sets Title "long names done"; NewIcons(n) emits NewIcon n times the same way,
with nothing changed, then sets Title "new icons done"; Flood(ids, times) emits ItemsPropertiesUpdated
`times` times, each naming `ids` entries the menu does not have and setting entry 1's label to
"Flood k"; Relayouts(times) emits LayoutUpdated `times` times at once, each after changing
entry 1's label to "Relayout k"; Relayout(n, rounds, bytes) replaces the menu `rounds` times with n entries whose
icon-names (of that length) are new each round, one LayoutUpdated each (the next once the host
read the last); Grow(parent, n, label) adds n entries under `parent`, sets its label and emits
LayoutUpdated(parent); UpdatedParents(n, label) sets entry 1's label, emits LayoutUpdated(0)
then n LayoutUpdated naming distinct entries the menu does not have, all before it answers
anything, and returns once the watcher answered a call made after them (so qsd handled them all);
Register(destination, arg) calls RegisterStatusNotifierItem(arg) on `destination` (the watcher
name when "") and returns "ok" or the error's name. A busy moment: SlowGet(prop) answers the next
Get of `prop` after 6 s, past the host's 5 s; SlowLayouts(n) the next n GetLayout calls. Prints "ready" once every item's
registration was answered (either way)."""

import json
import os
import struct
import sys
import time
import zlib

import dbus
import dbus.lowlevel
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

ITEM = "org.kde.StatusNotifierItem"
MENU = "com.canonical.dbusmenu"
PROPS = "org.freedesktop.DBus.Properties"
CTL = "org.qsdtest.Control"
WATCHER = "org.kde.StatusNotifierWatcher"

PIXMAP_PROPS = {"IconPixmap", "AttentionIconPixmap", "OverlayIconPixmap"}


def pixmaps(spec):
    out = []
    for p in spec:
        if isinstance(p, dict):
            # An entry whose data does not match its size: {"width", "height", "bytes"} of zeros.
            out.append(dbus.Struct((dbus.Int32(p["width"]), dbus.Int32(p["height"]), dbus.ByteArray(bytes(p["bytes"]))),
                                   signature="iiay"))
            continue
        w, h, rgba = p[0], p[1], p[2]
        quadrant = len(p) > 3 and p[3] == "tl"
        data = bytearray()
        for y in range(h):
            for x in range(w):
                on = not quadrant or (x < w // 2 and y < h // 2)
                r, g, b, a = rgba if on else (0, 0, 0, 0)
                data += bytes((a, r, g, b))  # ARGB32, network byte order
        out.append(dbus.Struct((dbus.Int32(w), dbus.Int32(h), dbus.ByteArray(bytes(data))), signature="iiay"))
    return dbus.Array(out, signature="(iiay)")


def png_bytes(w, h, rgba):
    raw = b"".join(b"\x00" + bytes(rgba) * w for _ in range(h))

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def typed(name, value):
    if name in PIXMAP_PROPS and isinstance(value, str):
        return dbus.String(value)  # a mistyped pixmap on purpose
    if name in PIXMAP_PROPS:
        return pixmaps(value)
    if name == "ToolTip":
        return dbus.Struct((value.get("icon", ""), pixmaps(value.get("pixmaps", [])), value.get("title", ""),
                            value.get("description", "")), signature="sa(iiay)ss")
    if name == "Menu":
        return dbus.ObjectPath(value)
    if name == "WindowId":
        return dbus.Int32(value)
    if isinstance(value, bool):
        return dbus.Boolean(value)
    if isinstance(value, int):
        return dbus.Int32(value)  # a mistyped property on purpose (e.g. a numeric Category)
    return dbus.String(value)


class Menu(dbus.service.Object):
    def __init__(self, bus, path, spec, log, slow_layouts=0, tag=None, about_to_show=None):
        super().__init__(bus, path)
        self.bus = bus
        self.tag = tag
        self.about_to_show = about_to_show
        self.log = log
        self.slow_layouts = slow_layouts
        self.revision = 1
        self.entries = {0: {"props": {"children-display": "submenu"}, "children": []}}
        self.junk = spec == "demo"
        if spec == "demo":
            self.add(0, 1, {"label": "_Open", "icon-data": dbus.ByteArray(png_bytes(16, 16, (0, 200, 0, 255)))})
            self.add(0, 2, {"type": "separator"})
            self.add(0, 3, {"label": "Options", "children-display": "submenu"})
            self.add(3, 4, {"label": "Sync", "toggle-type": "checkmark", "toggle-state": dbus.Int32(1)})
            self.add(3, 5, {"label": "Mode A", "toggle-type": "radio", "toggle-state": dbus.Int32(1)})
            self.add(3, 6, {"label": "Mode B", "toggle-type": "radio", "toggle-state": dbus.Int32(0)})
            self.add(0, 7, {"label": "Disabled", "enabled": dbus.Boolean(False), "icon-name": "qsd-test-menu-icon"})
            self.add(0, 8, {"label": "Quit", "shortcut": dbus.Array([dbus.Array(["Control", "q"], signature="s")],
                                                                      signature="as")})
        elif isinstance(spec, str) and spec.startswith("icons:"):
            for i in range(1, int(spec[6:]) + 1):
                self.add(0, i, {"label": f"Entry {i}", "icon-name": f"qsd-missing-{i}"})
        elif isinstance(spec, str) and spec.startswith("icondata:"):
            _, n, size = spec.split(":")
            for i in range(1, int(n) + 1):
                data = b"\x89PNG\r\n\x1a\n" + i.to_bytes(4, "big") + os.urandom(int(size) - 12)
                self.add(0, i, {"label": f"Entry {i}", "icon-data": dbus.ByteArray(data)})
        elif spec == "deep":
            for i in range(1, 21):  # a chain of 20 submenus
                self.add(i - 1, i, {"label": f"Level {i}", "children-display": "submenu"})
        else:
            for i in range(1, int(spec) + 1):
                self.add(0, i, {"label": f"Entry {i}", "enabled": dbus.Boolean(i % 3 != 0)})
        self.next_id = max(self.entries) + 1
        self.relayout = None

    def record(self, *call):
        self.log.append(list(call) + ([self.tag] if self.tag else []))

    def add(self, parent, eid, props):
        self.entries[eid] = {"props": props, "children": []}
        self.entries[parent]["children"].append(eid)

    def node(self, eid, depth):
        e = self.entries[eid]
        children = [] if depth == 0 else [dbus.Struct(self.node(c, depth - 1), signature="ia{sv}av", variant_level=1)
                                           for c in e["children"]]
        if eid == 0 and depth != 0 and self.junk:
            # A child that is not a layout: the host must skip it.
            children.append(dbus.String("not an entry", variant_level=1))
        return dbus.Struct((dbus.Int32(eid), dbus.Dictionary(e["props"], signature="sv"),
                            dbus.Array(children, signature="v")), signature="ia{sv}av")

    @dbus.service.method(MENU, in_signature="iias", out_signature="u(ia{sv}av)", async_callbacks=("ok", "fail"))
    def GetLayout(self, parent, depth, names, ok, fail):
        self.record("GetLayout", int(parent))
        if parent not in self.entries:
            fail(dbus.exceptions.DBusException("no such entry", name="org.freedesktop.DBus.Error.InvalidArgs"))
            return
        reply = dbus.UInt32(self.revision), self.node(parent, 1000 if depth < 0 else depth)
        if self.relayout and parent == 0:
            GLib.idle_add(self.next_layout)
        if self.slow_layouts > 0:
            # Answered late without blocking the loop: the item's other calls are answered.
            self.slow_layouts -= 1
            GLib.timeout_add(6000, lambda: ok(*reply) and False)
        else:
            ok(*reply)

    def relayout_start(self, n, rounds, size):
        self.relayout = [n, rounds, size, 0]
        self.next_layout()

    def next_layout(self):
        n, rounds, size, done = self.relayout
        if done == rounds:
            self.relayout = None
            return False
        done += 1
        self.relayout[3] = done
        self.entries = {0: {"props": {"children-display": "submenu"}, "children": []}}
        for i in range(1, n + 1):
            name = f"r{done}-{i}-"
            self.add(0, i, {"label": f"Entry {i}", "icon-name": name + "x" * max(0, size - len(name))})
        self.revision += 1
        self.LayoutUpdated(self.revision, 0)
        return False

    def relayouts(self, times):
        for k in range(1, times + 1):
            self.entries[1]["props"]["label"] = f"Relayout {k}"
            self.revision += 1
            self.LayoutUpdated(self.revision, 0)

    def flood(self, ids, times):
        unknown = [dbus.Struct((dbus.Int32(100000 + j), dbus.Dictionary({}, signature="sv")), signature="ia{sv}")
                   for j in range(ids)]
        for k in range(1, times + 1):
            self.entries[1]["props"]["label"] = f"Flood {k}"
            known = dbus.Struct((dbus.Int32(1), dbus.Dictionary({"label": f"Flood {k}"}, signature="sv")), signature="ia{sv}")
            self.ItemsPropertiesUpdated(dbus.Array(unknown + [known], signature="(ia{sv})"), dbus.Array([], signature="(ias)"))

    @dbus.service.method(MENU, in_signature="aias", out_signature="a(ia{sv})")
    def GetGroupProperties(self, ids, names):
        return dbus.Array([dbus.Struct((dbus.Int32(i), dbus.Dictionary(self.entries[i]["props"], signature="sv")))
                           for i in ids if i in self.entries], signature="(ia{sv})")

    @dbus.service.method(MENU, in_signature="i", out_signature="b", async_callbacks=("ok", "fail"))
    def AboutToShow(self, eid, ok, fail):
        self.record("AboutToShow", int(eid))
        if self.about_to_show and self.about_to_show(int(eid), ok):
            return
        # The submenu is filled when it is about to be shown (as lazy apps do), without a
        # LayoutUpdated: the host must read it again itself.
        if eid == 3 and 3 in self.entries and not any(self.entries[c]["props"].get("label") == "Recent"
                                                      for c in self.entries[3]["children"]):
            self.add(3, self.next_id, {"label": "Recent"})
            self.next_id += 1
            self.revision += 1
            ok(True)
            return
        ok(False)

    @dbus.service.method(MENU, in_signature="isvu", out_signature="")
    def Event(self, eid, event, data, timestamp):
        self.record("Event", int(eid), str(event))
        if event != "clicked" or eid not in self.entries:
            return
        props = self.entries[eid]["props"]
        if props.get("toggle-type") == "checkmark":
            props["toggle-state"] = dbus.Int32(0 if props["toggle-state"] == 1 else 1)
            self.ItemsPropertiesUpdated([(eid, {"toggle-state": props["toggle-state"]})], [])
        elif props.get("toggle-type") == "radio":
            parent = next(p for p, e in self.entries.items() if eid in e["children"])
            changed = []
            for c in self.entries[parent]["children"]:
                cp = self.entries[c]["props"]
                if cp.get("toggle-type") == "radio":
                    cp["toggle-state"] = dbus.Int32(1 if c == eid else 0)
                    changed.append((c, {"toggle-state": cp["toggle-state"]}))
            self.ItemsPropertiesUpdated(changed, [])

    @dbus.service.signal(MENU, signature="ui")
    def LayoutUpdated(self, revision, parent):
        pass

    @dbus.service.signal(MENU, signature="a(ia{sv})a(ias)")
    def ItemsPropertiesUpdated(self, updated, removed):
        pass

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, iface, prop):
        return {"Version": dbus.UInt32(3), "Status": "normal", "TextDirection": "ltr"}[prop]

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, iface):
        return dbus.Dictionary({"Version": dbus.UInt32(3), "Status": "normal", "TextDirection": "ltr"}, signature="sv")

    def grow(self, parent, n, label):
        for _ in range(n):
            self.add(parent, self.next_id, {"label": f"Grown {self.next_id}"})
            self.next_id += 1
        self.entries[parent]["props"]["label"] = label
        self.revision += 1
        self.LayoutUpdated(self.revision, parent)

    def updated_parents(self, n, label):
        self.entries[1]["props"]["label"] = label
        self.revision += 1
        self.LayoutUpdated(self.revision, 0)
        # Built by hand: the decorated signal costs several times as much per emission, and the
        # host must see them all before its first read can be answered.
        for k in range(n):
            m = dbus.lowlevel.SignalMessage(self.__dbus_object_path__, MENU, "LayoutUpdated")
            m.append(dbus.UInt32(self.revision), dbus.Int32(1000000 + k), signature="ui")
            self.bus.send_message(m)
        # qsd answers this after it handled every signal sent before it (D-Bus keeps a sender's
        # order).
        self.bus.call_blocking(WATCHER, "/StatusNotifierWatcher", PROPS, "Get", "ss", (WATCHER, "ProtocolVersion"))

    def add_entry(self, label):
        self.add(0, self.next_id, {"label": label})
        self.next_id += 1
        self.revision += 1
        self.LayoutUpdated(self.revision, 0)


class Item(dbus.service.Object):
    def __init__(self, bus, cfg):
        self.bus = bus
        self.cfg = cfg
        self.path = cfg.get("path", "/StatusNotifierItem")
        super().__init__(bus, self.path)
        self.log = []
        self.props = {}
        for k, v in cfg.get("props", {}).items():
            self.props[k] = typed(k, v)
        self.menu = None
        self.held = None   # swapMenu: the answers held, AboutToShow's first
        if cfg.get("menu") is not None:
            mpath = self.path.rstrip("/") + "/Menu"
            self.menu = Menu(bus, mpath, cfg["menu"], self.log, cfg.get("slowLayouts", 0),
                             about_to_show=self.swap_menu if cfg.get("swapMenu") is not None else None)
            self.props["Menu"] = dbus.ObjectPath(mpath)
        if cfg.get("name"):
            self.bus_name = dbus.service.BusName(cfg["name"], bus, do_not_queue=True)
        self.bench_n = 0
        self.long_names = None
        self.slow_reads = cfg.get("slowReads", 0)
        self.getalls = 0   # GetAll calls so far
        self.held_activations = []   # Activate calls not answered yet (holdActivate)
        self.slow_gets = set()   # SlowGet

    # --- org.kde.StatusNotifierItem
    def record(self, *call):
        self.log.append(list(call))

    @dbus.service.method(ITEM, in_signature="ii", out_signature="", async_callbacks=("ok", "fail"))
    def Activate(self, x, y, ok, fail):
        if self.cfg.get("slow"):
            time.sleep(self.cfg["slow"])
        self.record("Activate", int(x), int(y))
        if self.cfg.get("holdActivate"):
            self.held_activations.append(ok)
        else:
            ok()

    @dbus.service.method(ITEM, in_signature="ii", out_signature="")
    def SecondaryActivate(self, x, y):
        self.record("SecondaryActivate", int(x), int(y))

    @dbus.service.method(ITEM, in_signature="ii", out_signature="")
    def ContextMenu(self, x, y):
        self.record("ContextMenu", int(x), int(y))

    @dbus.service.method(ITEM, in_signature="is", out_signature="")
    def Scroll(self, delta, orientation):
        self.record("Scroll", int(delta), str(orientation))

    @dbus.service.signal(ITEM, signature="")
    def NewTitle(self):
        pass

    @dbus.service.signal(ITEM, signature="")
    def NewIcon(self):
        pass

    @dbus.service.signal(ITEM, signature="")
    def NewAttentionIcon(self):
        pass

    @dbus.service.signal(ITEM, signature="")
    def NewOverlayIcon(self):
        pass

    @dbus.service.signal(ITEM, signature="")
    def NewToolTip(self):
        pass

    @dbus.service.signal(ITEM, signature="s")
    def NewStatus(self, status):
        pass

    @dbus.service.signal(ITEM, signature="")
    def NewMenu(self):
        pass

    def answer(self, ok, *reply):
        """Answers now, or after 6 s (past the host's 5 s) while the item is slow (slowReads),
        without blocking the loop."""
        if self.slow_reads and self.getalls <= self.slow_reads:
            GLib.timeout_add(6000, lambda: ok(*reply) and False)
        elif self.cfg.get("readDelay"):
            GLib.timeout_add(int(self.cfg["readDelay"] * 1000), lambda: ok(*reply) and False)
        else:
            ok(*reply)

    def swap_menu(self, eid, ok):
        if eid == 0 or self.held is not None:
            return False
        mpath = self.path.rstrip("/") + "/Menu2"
        self.menu2 = Menu(self.bus, mpath, self.cfg["swapMenu"], self.log, tag="Menu2")
        self.props["Menu"] = dbus.ObjectPath(mpath)
        self.held = [lambda: ok(False)]
        self.NewMenu()
        return True

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v", async_callbacks=("ok", "fail"))
    def Get(self, iface, prop, ok, fail):
        if prop == "IconName" and self.long_names:
            GLib.idle_add(self.next_long_name)
        if prop in self.slow_gets:
            self.slow_gets.discard(prop)
            if iface == ITEM and prop in self.props:
                value = self.props[prop]
                GLib.timeout_add(6000, lambda: ok(value) and False)
                return
        if self.held and prop == "Menu":
            self.held.append(lambda: self.Get(iface, prop, ok, fail))
            return
        if iface != ITEM or prop not in self.props:
            fail(dbus.exceptions.DBusException(f"no property {prop}", name="org.freedesktop.DBus.Error.InvalidArgs"))
            return
        self.answer(ok, self.props[prop])

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}", async_callbacks=("ok", "fail"))
    def GetAll(self, iface, ok, fail):
        self.record("GetAll")
        self.getalls += 1
        if self.cfg.get("getAllFails"):
            fail(dbus.exceptions.DBusException("GetAll is broken here", name="org.freedesktop.DBus.Error.Failed"))
            return
        self.answer(ok, dbus.Dictionary(self.props, signature="sv"))

    # --- org.qsdtest.Control
    @dbus.service.method(CTL, in_signature="", out_signature="s")
    def Calls(self):
        return json.dumps(self.log)

    @dbus.service.method(CTL, in_signature="", out_signature="")
    def ReleaseActivate(self):
        self.cfg["holdActivate"] = False
        held, self.held_activations = self.held_activations, []
        for ok in held:
            ok()

    @dbus.service.method(CTL, in_signature="sss", out_signature="")
    def Set(self, prop, value, signal):
        v = json.loads(value)
        if v is None:
            self.props.pop(prop, None)
        else:
            self.props[prop] = typed(prop, v)
        if signal == "NewStatus":
            self.NewStatus(str(v))
        elif signal:
            getattr(self, signal)()

    @dbus.service.method(CTL, in_signature="s", out_signature="")
    def SlowGet(self, prop):
        self.slow_gets.add(str(prop))

    @dbus.service.method(CTL, in_signature="u", out_signature="")
    def SlowLayouts(self, n):
        self.menu.slow_layouts = int(n)

    @dbus.service.method(CTL, in_signature="s", out_signature="")
    def AddMenuEntry(self, label):
        self.menu.add_entry(label)

    @dbus.service.method(CTL, in_signature="uu", out_signature="")
    def LongNames(self, n, size):
        self.long_names = [n, size, 0]
        self.next_long_name()

    def next_long_name(self):
        if not self.long_names:
            return False
        n, size, done = self.long_names
        if done == n:
            self.long_names = None
            self.props["Title"] = dbus.String("long names done" if size is not None else "new icons done")
            self.NewTitle()
            return False
        self.long_names[2] = done + 1
        if size is not None:
            self.props["IconName"] = dbus.String(f"{done}-" + "n" * size)
        self.NewIcon()
        return False

    @dbus.service.method(CTL, in_signature="u", out_signature="")
    def NewIcons(self, n):
        self.long_names = [n, None, 0]
        self.next_long_name()

    @dbus.service.method(CTL, in_signature="uu", out_signature="")
    def Flood(self, ids, times):
        self.menu.flood(ids, times)

    # ItemsPropertiesUpdated with its first argument only (a(ia{sv}), the removed list missing):
    # a malformed signal that gives entry `eid` the label `label`.
    @dbus.service.method(CTL, in_signature="is", out_signature="")
    def HalfUpdate(self, eid, label):
        msg = dbus.lowlevel.SignalMessage(self.menu.__dbus_object_path__, MENU, "ItemsPropertiesUpdated")
        msg.append(dbus.Array([dbus.Struct((dbus.Int32(eid), dbus.Dictionary({"label": label}, signature="sv")),
                                           signature="ia{sv}")], signature="(ia{sv})"), signature="a(ia{sv})")
        self.bus.send_message(msg)

    # A well-formed ItemsPropertiesUpdated that gives entry `eid` the label `label`.
    @dbus.service.method(CTL, in_signature="is", out_signature="")
    def Relabel(self, eid, label):
        self.menu.entries[eid]["props"]["label"] = label
        self.menu.ItemsPropertiesUpdated(
            dbus.Array([dbus.Struct((dbus.Int32(eid), dbus.Dictionary({"label": label}, signature="sv")), signature="ia{sv}")],
                       signature="(ia{sv})"), dbus.Array([], signature="(ias)"))

    @dbus.service.method(CTL, in_signature="uuu", out_signature="")
    def Relayout(self, n, rounds, size):
        self.menu.relayout_start(n, rounds, size)

    @dbus.service.method(CTL, in_signature="u", out_signature="")
    def Relayouts(self, times):
        self.menu.relayouts(times)

    @dbus.service.method(CTL, in_signature="ius", out_signature="")
    def Grow(self, parent, n, label):
        self.menu.grow(int(parent), int(n), str(label))

    @dbus.service.method(CTL, in_signature="us", out_signature="")
    def UpdatedParents(self, n, label):
        self.menu.updated_parents(int(n), str(label))

    @dbus.service.method(CTL, in_signature="", out_signature="u")
    def Held(self):
        return len(self.held or []) - 1 if self.held else 0

    @dbus.service.method(CTL, in_signature="", out_signature="")
    def Release(self):
        held, self.held = self.held, []
        for answer in held[1:] + held[:1]:
            answer()
        # The bus daemon handles a connection's messages in order: once it answered this, it
        # has passed the answers above on.
        self.bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", ())

    @dbus.service.method(CTL, in_signature="ss", out_signature="s", async_callbacks=("ok", "fail"))
    def Register(self, destination, arg, ok, fail):
        self.bus.call_async(str(destination) or WATCHER, "/StatusNotifierWatcher", WATCHER, "RegisterStatusNotifierItem", "s",
                            (str(arg),), lambda *_: ok("ok"), lambda e: ok(e.get_dbus_name()))

    @dbus.service.method(CTL, in_signature="u", out_signature="t")
    def BenchIcon(self, n):
        if self.cfg.get("bench") == "pixmap":
            self.props["IconPixmap"] = pixmaps([[32, 32, [n % 256, 0, 255 - n % 256, 255]]])
        else:
            self.props["IconName"] = dbus.String(f"qsd-bench-{n % 2}")
        t = time.monotonic_ns()
        self.NewIcon()
        return dbus.UInt64(t)

    @dbus.service.method(CTL, in_signature="", out_signature="")
    def Quit(self):
        GLib.idle_add(loop.quit)

    def arg(self):
        kind = self.cfg.get("register", "name")
        if kind == "name":
            return self.cfg["name"]
        if kind == "unique":
            return self.bus.get_unique_name()
        return self.path

    def register(self):
        if self.cfg.get("register") == "none":
            return
        pending[0] += 1

        def done(*_):
            self.record("registered")
            pending[0] -= 1
            if pending[0] == 0:
                print("ready", flush=True)

        def failed(e):
            self.record("registerFailed", str(e))
            pending[0] -= 1
            if pending[0] == 0:
                print("ready", flush=True)

        self.bus.call_async(WATCHER, "/StatusNotifierWatcher", WATCHER, "RegisterStatusNotifierItem", "s", (self.arg(),),
                            done, failed)


pending = [0]
loop = None


def main():
    global loop
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    items = [Item(bus, cfg) for cfg in json.loads(sys.argv[1])]

    def host_registered():
        for it in items:
            it.record("StatusNotifierHostRegistered")

    bus.add_signal_receiver(host_registered, "StatusNotifierHostRegistered", WATCHER, WATCHER, "/StatusNotifierWatcher")

    def watcher_changed(name, old, new):
        for it in items:
            it.record("watcherChanged", str(new))
            if new and it.cfg.get("reregister"):
                it.register()

    bus.add_signal_receiver(watcher_changed, "NameOwnerChanged", "org.freedesktop.DBus", "org.freedesktop.DBus",
                            "/org/freedesktop/DBus", arg0=WATCHER)
    for it in items:
        it.register()
    if pending[0] == 0:
        print("ready", flush=True)
    loop = GLib.MainLoop()
    loop.run()


if __name__ == "__main__":
    main()
