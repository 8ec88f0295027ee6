"""Small drawn icons for the tray items of the QML tests and the example bar's picture: a notes
pad (a theme icon in an app's private icon theme), a chat bubble (an IconPixmap only), a cloud
(a passive item, which the bar hides) and a pencil (a menu entry's theme icon); for the
notifications, an avatar (image-data), an envelope and a battery (image-path files). Shapes are
sampled 4x4 per pixel, so edges are smooth at any size."""

import struct
import zlib

AMBER = (224, 175, 104)
BLUE = (122, 162, 247)
GREY = (141, 146, 168)
GREEN = (158, 206, 106)
DARK = (27, 29, 39)
WHITE = (240, 242, 250)


def _rounded(x, y, x0, y0, x1, y1, r):
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r and x0 <= x <= x1 and y0 <= y <= y1


def _circle(x, y, cx, cy, r):
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def _notes(x, y):
    """An amber pad with three dark lines."""
    if not _rounded(x, y, 0.12, 0.06, 0.88, 0.94, 0.12):
        return None
    for top in (0.30, 0.48, 0.66):
        if 0.26 <= x <= (0.74 if top < 0.6 else 0.56) and top <= y <= top + 0.07:
            return DARK
    return AMBER


def _chat(x, y):
    """A blue speech bubble with three white dots."""
    for cx in (0.32, 0.5, 0.68):
        if _circle(x, y, cx, 0.44, 0.065):
            return WHITE
    if _rounded(x, y, 0.04, 0.12, 0.96, 0.76, 0.2):
        return BLUE
    # The tail, bottom left.
    if 0.2 <= x <= 0.42 and 0.7 <= y <= 0.92 and y - 0.7 <= (0.42 - x) * 1.0:
        return BLUE
    return None


def _cloud(x, y):
    if _circle(x, y, 0.36, 0.58, 0.2) or _circle(x, y, 0.58, 0.46, 0.26) or _rounded(x, y, 0.16, 0.55, 0.86, 0.78, 0.11):
        return GREY
    return None


def _pencil(x, y):
    """A green pencil, diagonal, with a dark tip."""
    u, v = (x + y) / 2, (x - y)
    if abs(v) <= 0.24 and 0.3 <= u <= 0.86:
        return GREEN if u < 0.76 else DARK if u < 0.79 else GREY
    if 0.12 <= u < 0.3 and abs(v) <= 0.24 * (u - 0.12) / 0.18:
        return AMBER if u > 0.2 else DARK
    return None


RED = (247, 118, 142)
PURPLE = (187, 154, 247)


def _avatar(x, y):
    """A person on a purple disc: a notification's sender."""
    if not _circle(x, y, 0.5, 0.5, 0.5):
        return None
    if _circle(x, y, 0.5, 0.38, 0.16) or (_circle(x, y, 0.5, 0.92, 0.32) and y > 0.62):
        return WHITE
    return PURPLE


def _mail(x, y):
    """A blue envelope with its flap."""
    if not _rounded(x, y, 0.08, 0.2, 0.92, 0.8, 0.07):
        return None
    if abs(y - (0.24 + 0.36 * (1 - abs(x - 0.5) / 0.42))) < 0.045 and y < 0.62:
        return WHITE
    return BLUE


def _battery(x, y):
    """An empty battery with a red sliver of charge."""
    if _rounded(x, y, 0.4, 0.08, 0.6, 0.18, 0.03):
        return GREY
    if not _rounded(x, y, 0.24, 0.16, 0.76, 0.94, 0.08):
        return None
    if _rounded(x, y, 0.31, 0.23, 0.69, 0.87, 0.04):
        return RED if y > 0.76 else DARK
    return GREY


SHAPES = {"notes": _notes, "chat": _chat, "cloud": _cloud, "pencil": _pencil, "avatar": _avatar, "mail": _mail,
          "battery": _battery}


def rgba(shape, size):
    """Rows of (r, g, b, a) for `shape` at `size` x `size` pixels."""
    draw = SHAPES[shape]
    n = 4
    rows = []
    for py in range(size):
        row = []
        for px in range(size):
            acc = [0, 0, 0, 0]
            for sy in range(n):
                for sx in range(n):
                    c = draw((px + (sx + 0.5) / n) / size, (py + (sy + 0.5) / n) / size)
                    if c is not None:
                        acc[0] += c[0]
                        acc[1] += c[1]
                        acc[2] += c[2]
                        acc[3] += 1
            a = acc[3]
            row.append((acc[0] // a, acc[1] // a, acc[2] // a, 255 * a // (n * n)) if a else (0, 0, 0, 0))
        rows.append(row)
    return rows


def png(shape, size):
    """The icon as PNG bytes (8-bit RGBA)."""
    raw = b"".join(b"\x00" + b"".join(bytes(p) for p in row) for row in rgba(shape, size))

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def argb(shape, size):
    """The icon as a StatusNotifierItem pixmap's data: ARGB32 in network byte order."""
    return b"".join(bytes((a, r, g, b)) for row in rgba(shape, size) for (r, g, b, a) in row)
