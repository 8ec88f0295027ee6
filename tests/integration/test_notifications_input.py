"""What senders put in a notification besides text, and what hostile or careless senders do:
images (image-data with padded rows, the legacy hints, image-path files that vanish, icon names),
hints of the wrong type, refused image data, oversized text, and floods. Everything is sent over
the private session bus with exact D-Bus types (notifyutil.Bus) and checked through qsd's socket."""

import os
import struct
import zlib

import notifyutil as n
import trayutil
from notifyutil import history, items
import pytest

from qsdtest import wait_until


@pytest.fixture(autouse=True)
def clean_exit(env):
    yield
    n.check_clean_exit(env)


@pytest.fixture
def bus(env):
    b = n.Bus(env)
    yield b
    b.close()


def padded_rgb_3x3():
    """3x3 RGB with rowstride 12: three bytes of padding after each row but the last. Pixel
    (x, y) is (10y + x, 100 + x, 200 + y); the padding is 0xEE, which must never show."""
    data = bytearray()
    for y in range(3):
        for x in range(3):
            data += bytes([10 * y + x, 100 + x, 200 + y])
        if y < 2:
            data += b"\xee\xee\xee"
    return (3, 3, 12, False, 8, 3, bytes(data))


def pixels(path):
    w, h, rows = trayutil.read_png(path)
    return [[tuple(p) for p in row] for row in rows]


EXPECTED_3X3 = [[(10 * y + x, 100 + x, 200 + y, 255) for x in range(3)] for y in range(3)]


def store_dir(env):
    return os.path.join(env.run, "qsd", "notifications")


def test_image_data_becomes_a_png_and_history_keeps_its_own_copy(env, bus):
    c, sub = n.start(env)
    nid = bus.notify("Photo", hints={"image-data": padded_rgb_3x3()}, timeout=0)
    c.wait_for(lambda: str(nid) in items(c, sub), what="item")
    url = items(c, sub)[str(nid)]["image"]
    path = trayutil.file_of(url)
    assert os.path.dirname(path) == store_dir(env)
    assert pixels(path) == EXPECTED_3X3
    # No pixel data in the tree, anywhere.
    assert "pixels" not in str(c.call("tree.get", {"path": "/notifications"})["value"])
    c.call("notifications.dismiss", {"id": nid})
    c.wait_for(lambda: str(nid) in history(c, sub), what="history")
    copy = trayutil.file_of(history(c, sub)[str(nid)]["image"])
    assert copy != path and os.path.dirname(copy) == os.path.join(store_dir(env), "history")
    # The notification's file went with it; history's copy stays until the entry goes.
    wait_until(lambda: not os.path.exists(path), what="image file removed with its notification")
    assert pixels(copy) == EXPECTED_3X3
    c.call("notifications.removeFromHistory", {"id": nid})
    wait_until(lambda: not os.path.exists(copy), what="history's copy removed")


def test_legacy_image_hints_and_the_order_of_image_sources(env, bus):
    theme = os.path.join(env.dir, "home", ".local", "share", "icons", "hicolor", "64x64", "apps")
    trayutil.write_png(os.path.join(theme, "qsd-test-app.png"), 64, 64, (0, 200, 0, 255))
    photo = os.path.join(env.dir, "photo.png")
    trayutil.write_png(photo, 8, 8, (0, 0, 200, 255))
    env.env["XDG_DATA_HOME"] = os.path.join(env.dir, "home", ".local", "share")
    c, sub = n.start(env)
    red = (1, 1, 3, False, 8, 3, b"\xff\x00\x00")
    cases = {
        # The pixel hints, each alone (image_data and icon_data are the older names).
        "image_data": dict(hints={"image_data": red}),
        "icon_data": dict(hints={"icon_data": red}),
        # image-data > image-path > app_icon; image-data > image_data > icon_data.
        "all": dict(icon="qsd-test-app", hints={"image-path": photo, "icon_data": (1, 1, 3, False, 8, 3, b"\x00\x00\xff"),
                                                 "image-data": red}),
        "path": dict(icon="qsd-test-app", hints={"image-path": "file://" + photo}),
        "legacy path": dict(hints={"image_path": photo}),
        "icon": dict(icon="qsd-test-app"),
        "missing": dict(icon="no-such-icon-anywhere", hints={"image-path": "/no/such/file.png"}),
    }
    ids = {name: bus.notify(name, timeout=0, **kw) for name, kw in cases.items()}
    c.wait_for(lambda: len(items(c, sub)) == len(cases), what="all items")
    got = {name: items(c, sub)[str(i)] for name, i in ids.items()}
    for name in ("image_data", "icon_data", "all"):
        assert pixels(trayutil.file_of(got[name]["image"])) == [[(255, 0, 0, 255)]], name
    for name in ("path", "legacy path"):
        # A PNG image-path is copied (its sender may delete it while it is shown).
        assert pixels(trayutil.file_of(got[name]["image"]))[0][0] == (0, 0, 200, 255), name
    theme_file = os.path.join(theme, "qsd-test-app.png")
    assert trayutil.file_of(got["icon"]["appIcon"]) == theme_file
    assert got["icon"]["image"] == got["icon"]["appIcon"]
    assert trayutil.file_of(got["all"]["appIcon"]) == theme_file
    assert got["missing"]["image"] is None and got["missing"]["appIcon"] is None


def test_an_icon_installed_while_qsd_runs_is_found(env, bus):
    """The icon theme is indexed once and followed through inotify: an application installed
    after qsd started has its icon found, and a name once missing is not missing for good."""
    theme = os.path.join(env.dir, "home", ".local", "share", "icons", "hicolor", "64x64", "apps")
    trayutil.write_png(os.path.join(theme, "qsd-test-app.png"), 64, 64, (0, 200, 0, 255))
    env.env["XDG_DATA_HOME"] = os.path.join(env.dir, "home", ".local", "share")
    c, sub = n.start(env)
    first = bus.notify("Before", icon="qsd-late-app", timeout=0)
    c.wait_for(lambda: str(first) in items(c, sub), what="item")
    assert items(c, sub)[str(first)]["appIcon"] is None
    # Installed the way a package manager does: written aside, renamed into place.
    late = os.path.join(theme, "qsd-late-app.png")
    trayutil.write_png(late + ".tmp", 64, 64, (200, 0, 0, 255))
    os.rename(late + ".tmp", late)

    def found():
        nid = bus.notify("After", icon="qsd-late-app", timeout=0)
        c.wait_for(lambda: str(nid) in items(c, sub), what="item")
        return items(c, sub)[str(nid)]["appIcon"]
    assert trayutil.file_of(wait_until(found, timeout=10, interval=0.05, what="the icon installed later")) == late


def noise_png(path, w, h, depth=8):
    """A w x h RGBA PNG of random pixels, stored uncompressed: w*h*4 bytes (8 a pixel at depth
    16) and a little more."""
    raw = b"".join(b"\x00" + os.urandom(w * 4 * depth // 8) for _ in range(h))

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, 6, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))


def test_each_application_has_its_own_room_for_images(env, bus):
    """Image files are charged to the connection that sent them: one application's photos do not
    leave the others without images."""
    c, sub = n.start(env)
    # Five photos of 1.3 MB each from one application, copied into qsd's store (410 px a side at
    # 16 bits a sample: within the 512 px qsd stores as they are).
    photos = []
    for i in range(5):
        path = os.path.join(env.dir, f"photo{i}.png")
        noise_png(path, 410, 410, 16)
        photos.append(bus.notify(f"photo {i}", hints={"image-path": path}, timeout=0))
    # Then another application's picture of 260 KB.
    avatar_png = os.path.join(env.dir, "avatar.png")
    noise_png(avatar_png, 256, 256)
    other = n.Bus(env)
    try:
        avatar = other.notify("Ann", hints={"image-path": avatar_png}, timeout=0)
    finally:
        other.close()
    c.wait_for(lambda: {str(i) for i in photos + [avatar]} <= set(items(c, sub)), what="items")
    for i in [avatar] + photos:
        path = trayutil.file_of(items(c, sub)[str(i)]["image"])
        assert os.path.dirname(path) == store_dir(env), i
    assert open(trayutil.file_of(items(c, sub)[str(avatar)]["image"]), "rb").read() == open(avatar_png, "rb").read()


def test_history_keeps_at_most_32_mib_of_images(env, bus):
    """History's image copies are on the session's tmpfs: past 32 MiB the oldest entries lose
    their images (the entries stay)."""
    c, sub = n.start(env)
    ids = []
    for i in range(30):
        path = os.path.join(env.dir, f"photo{i}.png")
        noise_png(path, 410, 410, 16)
        ids.append(bus.notify(f"photo {i}", hints={"image-path": path}, timeout=0))
        c.call("notifications.dismiss", {"id": ids[-1]})
        os.unlink(path)
    c.wait_for(lambda: str(ids[-1]) in history(c, sub), what="history")
    kept = history(c, sub)
    assert set(kept) == {str(i) for i in ids}
    copies = os.path.join(store_dir(env), "history")
    total = sum(os.path.getsize(os.path.join(copies, f)) for f in os.listdir(copies))
    assert total <= 32 << 20
    with_image = [i for i in ids if kept[str(i)]["image"] is not None]
    # The newest kept theirs: 24 of 1.34 MB fit.
    assert with_image == ids[-len(with_image):] and len(with_image) == (32 << 20) // os.path.getsize(
        trayutil.file_of(kept[str(ids[-1])]["image"]))
    assert sorted(os.listdir(copies)) == sorted(os.path.basename(trayutil.file_of(kept[str(i)]["image"]))
                                                for i in with_image)


def test_a_temporary_image_path_that_vanishes_is_kept(env, bus):
    """Chromium writes the image to a temporary file and deletes it while the notification is up."""
    c, sub = n.start(env)
    tmp = os.path.join(env.dir, ".org.chromium.Chromium.abc123")
    trayutil.write_png(tmp, 4, 4, (9, 8, 7, 255))
    nid = bus.notify("Chat message", hints={"image-path": tmp}, timeout=0)
    c.wait_for(lambda: str(nid) in items(c, sub), what="item")
    os.unlink(tmp)
    path = trayutil.file_of(items(c, sub)[str(nid)]["image"])
    assert path.startswith(store_dir(env))
    assert pixels(path)[0][0] == (9, 8, 7, 255)
    # A file that is not a PNG is shown where it is; a FIFO is never opened.
    svg = os.path.join(env.dir, "icon.svg")
    with open(svg, "w") as f:
        f.write("<svg xmlns='http://www.w3.org/2000/svg'/>")
    fifo = os.path.join(env.dir, "fifo.png")
    os.mkfifo(fifo)
    a = bus.notify("svg", hints={"image-path": svg}, timeout=0)
    b = bus.notify("fifo", hints={"image-path": fifo}, timeout=0)
    c.wait_for(lambda: {str(a), str(b)} <= set(items(c, sub)), what="items")
    assert trayutil.file_of(items(c, sub)[str(a)]["image"]) == svg
    assert items(c, sub)[str(b)]["image"] is None


def png_claiming(path, w, h):
    """A PNG file of 57 bytes whose header (IHDR, with its checksum) gives w x h pixels, and one
    tiny IDAT: what a sender needs to make every reader that trusts the header allocate w*h*4
    bytes."""
    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b""))


def png_sides(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path
    return struct.unpack(">II", head[16:24])


def test_a_png_is_stored_at_most_512_px_a_side_and_a_huge_header_is_refused(env, bus):
    """An image-path or app_icon PNG is read by its header before it is copied: one larger than
    512 px a side is decoded and scaled down, as image-data is, so that what qsd publishes never
    makes a shell decode more; one whose header claims more than 4096 px a side (a 57-byte file
    claiming 30000 x 30000 pixels, 3.6 GB to a decoder) is neither copied nor shown, whatever
    its size, and the next image source is used."""
    c, sub = n.start(env)
    wide = os.path.join(env.dir, "wide.png")
    trayutil.write_png(wide, 1024, 600, (10, 20, 30, 255))
    huge = os.path.join(env.dir, "huge.png")
    png_claiming(huge, 30000, 30000)
    # The same header in a file too large to copy (past 8 MiB): not shown where it is either.
    padded = os.path.join(env.dir, "padded.png")
    png_claiming(padded, 30000, 30000)
    with open(padded, "ab") as f:
        f.truncate(9 << 20)
    red = (1, 1, 3, False, 8, 3, b"\xff\x00\x00")
    ids = {
        "wide": bus.notify("wide", hints={"image-path": wide}, timeout=0),
        "huge": bus.notify("huge", hints={"image-path": huge}, timeout=0),
        "padded": bus.notify("padded", icon=padded, timeout=0),
        "huge, then pixels": bus.notify("huge, then pixels", icon=huge, hints={"image-data": red}, timeout=0),
        "huge icon, wide path": bus.notify("huge icon, wide path", icon="file://" + huge, hints={"image-path": wide},
                                           timeout=0),
    }
    c.wait_for(lambda: {str(i) for i in ids.values()} <= set(items(c, sub)), what="every notification shown")
    got = {name: items(c, sub)[str(i)] for name, i in ids.items()}
    path = trayutil.file_of(got["wide"]["image"])
    assert os.path.dirname(path) == store_dir(env)
    assert png_sides(path) == (512, 300)
    assert pixels(path)[150][256] == (10, 20, 30, 255)
    assert got["huge"]["image"] is None and got["huge"]["appIcon"] is None
    assert got["padded"]["image"] is None and got["padded"]["appIcon"] is None
    assert got["huge, then pixels"]["appIcon"] is None
    assert pixels(trayutil.file_of(got["huge, then pixels"]["image"])) == [[(255, 0, 0, 255)]]
    assert got["huge icon, wide path"]["appIcon"] is None
    assert png_sides(trayutil.file_of(got["huge icon, wide path"]["image"])) == (512, 300)
    # Nothing in the store claims more than 512 px.
    for name in os.listdir(store_dir(env)):
        if name.endswith(".png"):
            assert max(png_sides(os.path.join(store_dir(env), name))) <= 512, name
    assert "30000x30000" in env.qsd_log()


def test_control_characters_are_dropped_from_what_is_shown(env, bus):
    """C0 control characters (but tab and line feed) and DEL have nothing to show, and JSON
    writes each as six bytes (\\u0001): they are dropped from the texts before these are cut.
    Action keys keep them, as the application gets its key back."""
    c, sub = n.start(env)
    nid = bus.notify("a\x01b\tc\nd\re\x7f", "x\x02<b>y</b>&#1;z", app="my\x03app",
                     actions=["k\x04", "La\x05bel"], hints={"category": "im\x06.received"}, timeout=0)
    cut = bus.notify("\x01" * 5000 + "summary", timeout=0)
    c.wait_for(lambda: {str(nid), str(cut)} <= set(items(c, sub)), what="items")
    it = items(c, sub)[str(nid)]
    assert it["summary"] == "ab\tc\nde"
    assert it["body"] == "x<b>y</b>&#1;z" and it["bodyText"] == "xyz"
    assert it["appName"] == "myapp" and it["category"] == "im.received"
    assert it["actions"] == [{"key": "k\x04", "label": "Label"}]
    # Dropped before the cut: the summary is what remains, whole.
    assert items(c, sub)[str(cut)]["summary"] == "summary"
    c.call("notifications.invokeAction", {"id": nid, "action": "k\x04"})
    bus.wait_signal(lambda s: ("ActionInvoked", nid, "k\x04") in s, what="ActionInvoked with the key as sent")


def test_one_notify_with_two_hundred_thousand_image_hints_is_read_at_once(env, bus):
    """A hints a{sv} may name image-data any number of times (the bus carries it, though a
    dictionary is meant to name each key once). Each pixel hint name has one slot, and the last
    value sent counts, as for every hint: the call is read in one pass over the message. Before,
    each one was placed by a search from the start of those read so far: 200 000 of them kept
    qsd's only loop busy for about four minutes before the reply. The deadlines only catch that
    hang; meanwhile another client's call is answered too."""
    from gi.repository import Gio, GLib
    c, sub = n.start(env)

    def entry(w, data):
        return GLib.Variant.new_dict_entry(
            GLib.Variant("s", "image-data"),
            GLib.Variant("v", GLib.Variant("(iiibiiay)", (w, w, 3 * w, False, 8, 3, data))))

    hints = GLib.Variant.new_array(None, [entry(0, b"")] * 200_000 + [entry(1, b"\x00\x80\xff")])
    args = GLib.Variant.new_tuple(GLib.Variant("s", "many"), GLib.Variant("u", 0), GLib.Variant("s", ""),
                                  GLib.Variant("s", "Many images"), GLib.Variant("s", ""), GLib.Variant("as", []),
                                  hints, GLib.Variant("i", 0))
    replies = []

    def done(conn, result):
        try:
            replies.append(conn.call_finish(result).unpack()[0])
        except GLib.Error as e:
            replies.append(e)

    bus.conn.call(n.NAME, n.PATH, n.IFACE, "Notify", args, GLib.VariantType("(u)"), Gio.DBusCallFlags.NONE, 60_000,
                  None, done)
    other = env.client()
    assert other.call("notifications.setDnd", {"enabled": False}, timeout=60) == {"enabled": False}
    wait_until(lambda: bus.pump() or replies, timeout=60, interval=0.05, what="Notify's reply")
    nid = replies[0]
    assert isinstance(nid, int), nid
    c.wait_for(lambda: str(nid) in items(c, sub), what="the notification")
    assert pixels(trayutil.file_of(items(c, sub)[str(nid)]["image"])) == [[(0, 128, 255, 255)]]
    other.close()


def test_wrong_hint_types_are_ignored_and_logged_once(env, bus):
    from gi.repository import GLib
    c, sub = n.start(env)
    bad = {"urgency": GLib.Variant("s", "critical"), "resident": GLib.Variant("i", 1),
           "category": GLib.Variant("u", 5), "image-data": GLib.Variant("s", "not pixels"),
           "image-path": GLib.Variant("as", ["/x"]), "transient": GLib.Variant("y", 1)}
    first = bus.notify("Wrong types", hints=bad, timeout=0)
    second = bus.notify("Wrong types again", hints=bad, timeout=0)
    c.wait_for(lambda: {str(first), str(second)} <= set(items(c, sub)), what="both shown")
    it = items(c, sub)[str(second)]
    assert (it["urgency"], it["resident"], it["category"], it["image"], it["transient"]) == \
        ("normal", False, None, None, False)
    log = env.qsd_log()
    for hint in bad:
        assert log.count(f'the hint "{hint}"') == 1, (hint, log)


def test_image_data_qsd_cannot_use_is_a_refused_hint(env, bus):
    c, sub = n.start(env)
    cases = {
        "16 bits": (2, 2, 12, False, 16, 3, bytes(24)),
        "4 channels without alpha": (2, 2, 8, False, 8, 4, bytes(16)),
        "short rows": (4, 2, 6, False, 8, 3, bytes(24)),
        "too few bytes": (3, 3, 9, False, 8, 3, bytes(10)),
        "negative": (-3, 3, 9, False, 8, 3, bytes(27)),
    }
    ids = {name: bus.notify(name, hints={"image-data": raw}, timeout=0) for name, raw in cases.items()}
    # With alpha, 4 channels: fine.
    good = bus.notify("rgba", hints={"image-data": (1, 1, 4, True, 8, 4, b"\x01\x02\x03\x80")}, timeout=0)
    c.wait_for(lambda: len(items(c, sub)) == len(cases) + 1, what="every notification shown")
    for name, i in ids.items():
        assert items(c, sub)[str(i)]["image"] is None, name
    assert pixels(trayutil.file_of(items(c, sub)[str(good)]["image"])) == [[(1, 2, 3, 128)]]
    assert "bits per sample is 16" in env.qsd_log()


def test_oversized_text_is_cut_and_bad_markup_is_harmless(env, bus):
    c, sub = n.start(env)
    mib = "x" * (1 << 20)
    nid = bus.notify(mib, "é" * (1 << 19) + "<b>" * 1000, app="a" * 5000,
                     actions=["k" * 5000, "l" * 5000, "odd"], hints={"category": "c" * 5000}, timeout=0)
    ent = bus.notify("Entities", "&#xD800; &#0; &lt;b&gt; &amp;amp; <a href='x'>link</a> & < >", timeout=0)
    c.wait_for(lambda: {str(nid), str(ent)} <= set(items(c, sub)), what="items")
    it = items(c, sub)[str(nid)]
    ellipsis = "\u2026"
    assert it["summary"] == "x" * 1024 + ellipsis
    assert len(it["body"].encode()) <= 16 * 1024 + 3 and it["body"].endswith(ellipsis)
    assert it["body"].startswith("é" * 100)
    assert it["appName"] == "a" * 256 + ellipsis
    assert it["category"] == "c" * 256 + ellipsis
    assert it["actions"] == [{"key": "k" * 256 + ellipsis, "label": "l" * 256 + ellipsis}]
    assert items(c, sub)[str(ent)]["bodyText"] == "\ufffd \ufffd <b> &amp; link & < >"


def test_at_most_a_thousand_notifications_are_shown(env, bus):
    c, sub = n.start(env)
    crit = bus.notify("Critical first", hints={"urgency": 2})
    # Eleven applications (connections), 92 each that stay until closed.
    for _ in range(11):
        last = n.flood(env, 91, timeout=0)
    # The last one answered: every Notify before it was handled.
    c.wait_for(lambda: str(last) in items(c, sub), timeout=30, what="the last one")
    live = items(c, sub)
    assert len(live) == 1000
    # The oldest that are not critical were closed as expired; the critical one stays.
    assert str(crit) in live
    for i in range(crit + 1, crit + 14):
        assert str(i) not in live
        assert history(c, sub)[str(i)]["closeReason"] == "expired"
    assert str(crit + 14) in live
    # Their senders were told: NotificationClosed with reason 1.
    bus.wait_signal(lambda s: ("NotificationClosed", crit + 13, 1) in s, what="NotificationClosed(oldest, 1)")
    assert ("NotificationClosed", crit + 1, 1) in bus.signals
    assert "more than 1000 notifications are shown in all" in env.qsd_log()


def test_one_application_cannot_push_the_others_out(env, bus):
    c, sub = n.start(env)
    other = bus.notify("From another application", timeout=0)
    first = n.flood(env, 104, timeout=0) - 104
    c.wait_for(lambda: str(first + 104) in items(c, sub), timeout=30, what="the flood")
    live = items(c, sub)
    assert str(other) in live
    assert len(live) == 101
    assert all(str(i) not in live and history(c, sub)[str(i)]["closeReason"] == "expired" for i in range(first, first + 5))
    assert all(str(i) in live for i in range(first + 5, first + 105))
    assert "more than 100 notifications are shown from one connection" in env.qsd_log()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_a_hundred_thousand_notify_calls_leave_rss_bounded(env):
    c, sub = n.start(env)
    if env.sanitized():
        pytest.skip("ASan's allocator and quarantine, not glibc's heap: RSS says nothing about qsd's bound")
    # No subscriber during the flood: a client that does not read would hold qsd's queue for it.
    c.close()
    n.flood(env, 10)
    before = rss_kib(env.daemon.pid)
    # One sender at full speed, replies not asked for; half with the default timeout (5 s),
    # half with 1 ms. The id of the call after them says every one was handled.
    last = n.flood(env, 100_000)
    assert last >= 100_000
    peak = rss_kib(env.daemon.pid)
    # Bounded while it lasts (at most 1000 shown), and given back once they expired.
    c = env.client()
    wait_until(lambda: not c.call("tree.get", {"path": "/notifications/items"})["value"], timeout=30,
               what="every flooded notification expired")
    assert len(c.call("tree.get", {"path": "/notifications/history"})["value"]) == 200
    wait_until(lambda: rss_kib(env.daemon.pid) - before <= 5 * 1024, timeout=10, what="RSS within 5 MiB of the start")
    print(f"RSS before {before} KiB, right after 100 000 Notify {peak} KiB, once expired {rss_kib(env.daemon.pid)} KiB")
    assert env.daemon.poll() is None
