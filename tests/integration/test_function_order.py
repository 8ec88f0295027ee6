"""The daemon's binary lays out the functions daemon/function-order.txt lists together, before the
code that does not run at start-up or on a service's change (daemon/CMakeLists.txt): the kernel
maps code 64 KiB around each page that runs, so left in the order of the sources, about every
64 KiB window of the binary holds something that runs and the whole binary is resident
(docs/performance.md, "Where the rest is"). This checks the link, not the list: a list older than
the code still has most of its functions in the binary, and those are what is checked."""

import os
import subprocess

import pytest

from qsdtest import BUILD, QSD, listed_functions


def cache(name):
    path = os.path.join(BUILD, "CMakeCache.txt")
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            if key.split(":")[0] == name:
                return value
    return ""


def test_the_listed_functions_are_laid_out_together():
    if cache("SANITIZE") == "ON" or cache("CMAKE_BUILD_TYPE") not in ("Release", "RelWithDebInfo") \
            or cache("QSD_HAVE_GOLD_ICF") != "1":
        pytest.skip("the daemon is ordered only in an optimised build linked with gold")
    listed = listed_functions()
    out = subprocess.run(["nm", "-n", "-S", "--defined-only", QSD], check=True,
                         capture_output=True, text=True).stdout
    functions = []   # (address, size, listed)
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tTwW":
            functions.append((int(p[0], 16), int(p[1], 16), p[3] in listed))
    # Identical code folding keeps one function of those it merges: an address is listed when
    # any name at it is.
    at = {}
    for address, size, is_listed in functions:
        old = at.get(address, (0, False))
        at[address] = (max(size, old[0]), old[1] or is_listed)
    hot = [(address, size) for address, (size, is_listed) in at.items() if is_listed]
    assert len(hot) > len(listed) // 2, f"only {len(hot)} of the {len(listed)} listed functions are in the binary"
    window = 65536
    size = sum(size for _, size in hot)
    windows = {w for address, size in hot for w in range(address // window, (address + max(size, 1) - 1) // window + 1)}
    # Laid out together, the listed functions fill as many windows as their size takes, and the
    # first one (the program's entry, which is not in a section of its own to order, and local
    # functions of the same name as a listed one); in the order of the sources they are in every
    # window of the binary.
    assert len(windows) <= -(-size // window) + 3, (
        f"the {len(hot)} listed functions ({size} bytes) are in {len(windows)} windows of 64 KiB: "
        + " ".join(hex(w * window) for w in sorted(windows)))
