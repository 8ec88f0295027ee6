import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from qsdtest import Env  # noqa: E402


@pytest.fixture
def env():
    """A private world with system and session buses; closed after the test."""
    e = Env(buses=True)
    yield e
    e.close()


@pytest.fixture
def bare_env():
    """A private world without D-Bus (core tests that need no services)."""
    e = Env(buses=False)
    yield e
    e.close()
