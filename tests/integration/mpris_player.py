#!/usr/bin/python3
"""An MPRIS player for the edge cases real players do not show (dbus-python on GLib), on the
session bus, configured by a JSON object given as the first argument (or "@file" holding it):

  name          the bus name to own (org.mpris.MediaPlayer2.<key>)
  root, player  property values of org.mpris.MediaPlayer2 / .Player over the defaults below;
                a value {"type": "i", "value": 5} is sent with that D-Bus type ("ay": that
                many bytes)
  metadata      Metadata entries: xesam:artist may be a list (as) or a string (s); an
                mpris:trackid that is not a path is sent as a string
  omit          property names the player does not have at all (e.g. ["Rate"])
  positionFails Get(Position) answers an error, and GetAll has no Position
  noSeeked      Seek and SetPosition move the position without a Seeked signal
  previousRestarts  Previous goes back to the start of the same track and says nothing
  getAllFails   the first N GetAll calls answer an error (a player not ready yet)
  rootFails     GetAll of org.mpris.MediaPlayer2 answers an error until RootWorks() (a player
                that is never shown, while its .Player interface is read and its signals come)
  metadataEntries  N: Metadata has N more entries x:0 … x:<N-1> (integers)
  silent        never answers any call (an unresponsive player)
  getAllDelay   seconds every GetAll waits before it is answered, without blocking the player (a
                player a moment late, within qsd's timeouts)
  aliases       N: also owns <name>.a0 … <name>.a<N-1> (one process, many players)
  replaceable   owns its name so that another process may take it over (allow_replacement)
  replace       takes its name over from the process that owns it (replace_existing)

The player keeps a position that moves while it plays. Control interface org.qsdtest.Control
at /org/mpris/MediaPlayer2: Calls() the method calls it got as JSON, Change(iface, prop, json)
changes a property and emits PropertiesChanged, Junk(iface, prefix, n, size) emits one
PropertiesChanged of n properties <prefix>0 … that no interface has, each a string of `size`
bytes, BigMetadata(n) emits a Metadata of n integer entries (x:0 …), RootWorks() lets
GetAll of the root interface answer, Malformed() emits a PropertiesChanged of the Player
interface with nothing after its interface, Release(name) gives up one of its names, NewTrack(trackid, title) starts the next track
at 0 and says so only in its Metadata, SetStatus(s) changes PlaybackStatus as a
player does (the position stops or starts moving), EmitSeeked(us) emits Seeked with that value
without moving, Invalidate(iface, prop) emits it as invalidated, GoSilent() stops answering
any call from then on, Emit(n) toggles
PlaybackStatus n times (a PropertiesChanged each) and returns CLOCK_MONOTONIC (ns) just before the
last.
Prints "ready" once it owns its name."""

import json
import sys
import time

import dbus
import dbus.lowlevel
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

PATH = "/org/mpris/MediaPlayer2"
ROOT = "org.mpris.MediaPlayer2"
PLAYER = "org.mpris.MediaPlayer2.Player"
PROPS = "org.freedesktop.DBus.Properties"
CTL = "org.qsdtest.Control"

ROOT_DEFAULTS = {"Identity": "Test Player", "DesktopEntry": "", "CanQuit": True, "CanRaise": True,
                 "CanSetFullscreen": False, "Fullscreen": False, "HasTrackList": False,
                 "SupportedUriSchemes": ["file"], "SupportedMimeTypes": ["audio/ogg"]}
PLAYER_DEFAULTS = {"PlaybackStatus": "Paused", "LoopStatus": "None", "Rate": 1.0, "Shuffle": False,
                   "Volume": 1.0, "MinimumRate": 0.5, "MaximumRate": 2.0, "CanGoNext": True,
                   "CanGoPrevious": True, "CanPlay": True, "CanPause": True, "CanSeek": True,
                   "CanControl": True}


def wire(name, value):
    if isinstance(value, dict) and "type" in value:
        t, v = value["type"], value["value"]
        if t == "ay":   # value: the length of an array of bytes
            return dbus.ByteArray(b"x" * v)
        return {"i": dbus.Int32, "s": dbus.String, "d": dbus.Double, "b": dbus.Boolean, "x": dbus.Int64}[t](v)
    if name == "Metadata":
        return metadata(value)
    if isinstance(value, bool):
        return dbus.Boolean(value)
    if isinstance(value, float):
        return dbus.Double(value)
    if isinstance(value, int):
        return dbus.Int64(value) if name == "Position" else dbus.Int32(value)
    if isinstance(value, list):
        return dbus.Array(value, signature="s")
    return dbus.String(value)


def metadata(m):
    out = {}
    for k, v in m.items():
        if k == "mpris:trackid":
            out[k] = dbus.ObjectPath(v) if v.startswith("/") else dbus.String(v)
        elif k == "mpris:length":
            out[k] = dbus.Int64(v)
        elif isinstance(v, list):
            out[k] = dbus.Array(v, signature="s")
        elif isinstance(v, int):
            out[k] = dbus.Int32(v)
        else:
            out[k] = dbus.String(v)
    return dbus.Dictionary(out, signature="sv")


def big_metadata(n):
    return dbus.Dictionary({f"x:{i}": dbus.Int32(i) for i in range(n)}, signature="sv")


class Player(dbus.service.Object):
    def __init__(self, bus, cfg):
        super().__init__(bus, PATH)
        self.cfg = cfg
        self.omit = set(cfg.get("omit", []))
        self.root = dict(ROOT_DEFAULTS, **cfg.get("root", {}))
        self.player = dict(PLAYER_DEFAULTS, **cfg.get("player", {}))
        self.player["Metadata"] = cfg.get("metadata", {"mpris:trackid": "/track/1", "xesam:title": "One",
                                                       "xesam:artist": ["Artist"], "mpris:length": 60000000})
        self.calls = []
        self.pos_us = int(self.player.pop("Position", 0))   # where it starts
        self.pos_at = time.monotonic()
        self.get_all_fails = cfg.get("getAllFails", 0)
        self.root_fails = cfg.get("rootFails", False)
        self.track = 1
        self.silent = cfg.get("silent", False)

    # --- position
    def rate(self):
        r = self.player.get("Rate", 1.0)
        return r if isinstance(r, float) and 0 <= r <= 1000 else 1.0   # a hostile Rate is only shown

    def position(self):
        if self.player["PlaybackStatus"] == "Playing":
            return self.pos_us + int((time.monotonic() - self.pos_at) * 1e6 * self.rate())
        return self.pos_us

    def move_to(self, us):
        self.pos_us = max(0, us)
        self.pos_at = time.monotonic()
        if not self.cfg.get("noSeeked"):
            self.Seeked(dbus.Int64(self.pos_us))

    def set_status(self, status):
        self.pos_us = self.position()
        self.pos_at = time.monotonic()
        self.change(PLAYER, {"PlaybackStatus": status})

    def change(self, iface, values):
        store = self.root if iface == ROOT else self.player
        store.update(values)
        self.PropertiesChanged(iface, {k: wire(k, v) for k, v in values.items() if k not in self.omit}, [])

    def record(self, name, *args):
        self.calls.append([name] + [a if isinstance(a, (int, float, str, bool)) else str(a) for a in args])

    def props(self, iface):
        store = self.root if iface == ROOT else self.player
        out = {k: wire(k, v) for k, v in store.items() if k not in self.omit}
        if iface == PLAYER and self.cfg.get("metadataEntries"):
            out["Metadata"] = dbus.Dictionary(dict(out["Metadata"], **big_metadata(self.cfg["metadataEntries"])),
                                              signature="sv")
        if iface == PLAYER and not self.cfg.get("positionFails") and "Position" not in self.omit:
            out["Position"] = dbus.Int64(self.position())
        return dbus.Dictionary(out, signature="sv")

    # --- org.freedesktop.DBus.Properties
    @dbus.service.method(PROPS, in_signature="ss", out_signature="v", async_callbacks=("ok", "err"))
    def Get(self, iface, prop, ok, err):
        self.record("Get", iface, prop)
        if self.silent:
            return
        if iface == PLAYER and prop == "Position":
            if self.cfg.get("positionFails"):
                return err(dbus.exceptions.DBusException("Position is not available", name="org.qsdtest.Error.Failed"))
            return ok(dbus.Int64(self.position()))
        props = self.props(iface)
        if prop not in props:
            return err(dbus.exceptions.DBusException(prop, name="org.freedesktop.DBus.Error.UnknownProperty"))
        ok(props[prop])

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}", async_callbacks=("ok", "err"))
    def GetAll(self, iface, ok, err):
        self.record("GetAll", iface)
        if self.silent:
            return
        if self.get_all_fails > 0:
            self.get_all_fails -= 1
            return err(dbus.exceptions.DBusException("not yet", name="org.freedesktop.DBus.Error.UnknownObject"))
        if iface == ROOT and self.root_fails:
            return err(dbus.exceptions.DBusException("no root", name="org.freedesktop.DBus.Error.UnknownInterface"))
        if self.cfg.get("getAllDelay"):
            # The values of when it answers, as a player that was busy would send.
            GLib.timeout_add(int(self.cfg["getAllDelay"] * 1000), lambda: ok(self.props(iface)) and False)
            return
        ok(self.props(iface))

    @dbus.service.method(PROPS, in_signature="ssv", async_callbacks=("ok", "err"))
    def Set(self, iface, prop, value, ok, err):
        self.record("Set", iface, prop, value)
        if self.silent:
            return
        if prop in self.omit:
            return err(dbus.exceptions.DBusException(prop, name="org.freedesktop.DBus.Error.UnknownProperty"))
        if prop == "Rate":
            self.pos_us = self.position()
            self.pos_at = time.monotonic()
        py = bool(value) if isinstance(value, dbus.Boolean) else float(value) if isinstance(value, dbus.Double) else str(value)
        self.change(iface, {prop: py})
        ok()

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, iface, changed, invalidated):
        pass

    # --- org.mpris.MediaPlayer2
    def _call(self, name, ok, *args):
        self.record(name, *args)
        if self.silent:
            return False
        return True

    @dbus.service.method(ROOT, async_callbacks=("ok", "err"))
    def Raise(self, ok, err):
        if self._call("Raise", ok):
            ok()

    @dbus.service.method(ROOT, async_callbacks=("ok", "err"))
    def Quit(self, ok, err):
        if self._call("Quit", ok):
            ok()
            GLib.idle_add(loop.quit)

    # --- org.mpris.MediaPlayer2.Player
    @dbus.service.method(PLAYER, in_signature="s", async_callbacks=("ok", "err"))
    def OpenUri(self, uri, ok, err):
        if self._call("OpenUri", ok, uri):
            ok()

    @dbus.service.method(PLAYER, async_callbacks=("ok", "err"))
    def Play(self, ok, err):
        if self._call("Play", ok):
            self.set_status("Playing")
            ok()

    @dbus.service.method(PLAYER, async_callbacks=("ok", "err"))
    def Pause(self, ok, err):
        if self._call("Pause", ok):
            self.set_status("Paused")
            ok()

    @dbus.service.method(PLAYER, async_callbacks=("ok", "err"))
    def PlayPause(self, ok, err):
        if self._call("PlayPause", ok):
            self.set_status("Paused" if self.player["PlaybackStatus"] == "Playing" else "Playing")
            ok()

    @dbus.service.method(PLAYER, async_callbacks=("ok", "err"))
    def Stop(self, ok, err):
        if self._call("Stop", ok):
            self.set_status("Stopped")
            self.pos_us = 0
            ok()

    def _track(self, step):
        self.track = max(1, self.track + step)
        self.pos_us, self.pos_at = 0, time.monotonic()
        self.change(PLAYER, {"Metadata": {"mpris:trackid": f"/track/{self.track}", "xesam:title": f"Track {self.track}",
                                          "mpris:length": 60000000}})

    @dbus.service.method(PLAYER, async_callbacks=("ok", "err"))
    def Next(self, ok, err):
        if self._call("Next", ok):
            self._track(1)
            ok()

    @dbus.service.method(PLAYER, async_callbacks=("ok", "err"))
    def Previous(self, ok, err):
        if self._call("Previous", ok):
            if self.cfg.get("previousRestarts"):
                # Back to the start of the same track, saying nothing (no Seeked, the same
                # metadata), as players do when Previous comes a few seconds into a track.
                self.pos_us, self.pos_at = 0, time.monotonic()
            else:
                self._track(-1)
            ok()

    @dbus.service.method(PLAYER, in_signature="x", async_callbacks=("ok", "err"))
    def Seek(self, offset, ok, err):
        if self._call("Seek", ok, int(offset)):
            self.move_to(self.position() + int(offset))
            ok()

    @dbus.service.method(PLAYER, in_signature="ox", async_callbacks=("ok", "err"))
    def SetPosition(self, track, position, ok, err):
        if self._call("SetPosition", ok, str(track), int(position)):
            if str(track) == str(self.player["Metadata"].get("mpris:trackid")):
                self.move_to(int(position))
            ok()

    @dbus.service.signal(PLAYER, signature="x")
    def Seeked(self, position):
        pass

    # --- control
    @dbus.service.method(CTL, out_signature="s")
    def Calls(self):
        return json.dumps(self.calls)

    @dbus.service.method(CTL, in_signature="sss")
    def Change(self, iface, prop, value):
        self.change(iface, {prop: json.loads(value)})

    @dbus.service.method(CTL, in_signature="ssii")
    def Junk(self, iface, prefix, n, size):
        value = dbus.String("j" * size)
        self.PropertiesChanged(iface, dbus.Dictionary({f"{prefix}{i}": value for i in range(n)}, signature="sv"), [])

    @dbus.service.method(CTL, in_signature="i")
    def BigMetadata(self, n):
        self.PropertiesChanged(PLAYER, {"Metadata": big_metadata(n)}, [])

    @dbus.service.method(CTL)
    def Malformed(self):
        # A PropertiesChanged of the Player interface with nothing after the interface.
        msg = dbus.lowlevel.SignalMessage(PATH, PROPS, "PropertiesChanged")
        msg.append(PLAYER, signature="s")
        bus.send_message(msg)

    @dbus.service.method(CTL, in_signature="s")
    def Release(self, name):
        bus.release_name(name)

    @dbus.service.method(CTL)
    def RootWorks(self):
        self.root_fails = False

    @dbus.service.method(CTL, in_signature="x")
    def EmitSeeked(self, us):
        self.Seeked(dbus.Int64(us))

    @dbus.service.method(CTL)
    def GoSilent(self):
        self.silent = True

    @dbus.service.method(CTL, in_signature="sss")
    def Quiet(self, iface, prop, value):
        # A change the player does not announce (read by the next GetAll).
        (self.root if iface == ROOT else self.player)[prop] = json.loads(value)

    @dbus.service.method(CTL, in_signature="i")
    def FailGetAll(self, n):
        self.get_all_fails = n

    @dbus.service.method(CTL, in_signature="ss")
    def Invalidate(self, iface, prop):
        self.PropertiesChanged(iface, {}, [prop])

    @dbus.service.method(CTL, in_signature="ss")
    def NewTrack(self, trackid, title):
        # The next track, from its start, announced only by its Metadata (no Seeked).
        self.pos_us, self.pos_at = 0, time.monotonic()
        self.change(PLAYER, {"Metadata": {"mpris:trackid": trackid, "xesam:title": title, "mpris:length": 300000000}})

    @dbus.service.method(CTL, in_signature="s")
    def SetStatus(self, status):
        self.set_status(status)

    @dbus.service.method(CTL, in_signature="i", out_signature="x")
    def Emit(self, n):
        t = 0
        for _ in range(n):
            status = "Paused" if self.player["PlaybackStatus"] == "Playing" else "Playing"
            t = time.monotonic_ns()
            self.change(PLAYER, {"PlaybackStatus": status})
        return t

arg = sys.argv[1]
cfg = json.load(open(arg[1:])) if arg.startswith("@") else json.loads(arg)
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
player = Player(bus, cfg)
names = [dbus.service.BusName(cfg["name"], bus, allow_replacement=cfg.get("replaceable", False),
                              replace_existing=cfg.get("replace", False))]
names += [dbus.service.BusName(f"{cfg['name']}.a{i}", bus) for i in range(cfg.get("aliases", 0))]
print("ready", flush=True)
loop = GLib.MainLoop()
loop.run()
