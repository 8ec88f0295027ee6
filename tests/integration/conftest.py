import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from qsdtest import Env  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Keeps each phase's report on the test, for the fixtures' teardown to see how it went.
    outcome = yield
    report = outcome.get_result()
    setattr(item, "report_" + report.when, report)


def failed(request):
    report = getattr(request.node, "report_call", None)
    return report is not None and report.failed


@pytest.fixture
def env(request):
    """A private world with system and session buses; closed after the test (kept, with every
    log, when the test failed and QSD_TEST_KEEP=failed)."""
    e = Env(buses=True)
    yield e
    e.close(keep=failed(request) and os.environ.get("QSD_TEST_KEEP") == "failed")


@pytest.fixture
def bare_env(request):
    """A private world without D-Bus (core tests that need no services)."""
    e = Env(buses=False)
    yield e
    e.close(keep=failed(request) and os.environ.get("QSD_TEST_KEEP") == "failed")
