"""pytest fixtures for tests against a blemu peripheral (entry point `pytest11`: installed, it is loaded).

- Inside `blemu lab run --profile ...`, `blemu_peripheral` is the lab's first peripheral (`blemu_peripherals`:
  all of them), found from `BLEMU_LAB_*`.
- Elsewhere (a machine with a Bluetooth adapter), give a profile with `--blemu-profile FILE` (or the ini option
  `blemu_profile`): the fixture starts `blemu run FILE` with a control socket and an event log for the session,
  waits until it answers, and stops it with SIGINT at the end, which unregisters everything.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Iterator, List

import pytest

from .control import ControlError, Peripheral


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("blemu")
    group.addoption("--blemu-profile", default=None, help="profile for blemu run when not inside blemu lab run")
    group.addoption("--blemu-adapter", default=None, help="adapter for blemu run (default: blemu's, hci0)")
    group.addoption("--blemu", default=None, help="the blemu executable (default: blemu on PATH)")
    group.addoption("--blemu-bus", default=None, help="D-Bus address for blemu run (default: the system bus)")
    parser.addini("blemu_profile", "profile for blemu run when not inside blemu lab run", default="")


@pytest.fixture(scope="session")
def blemu_peripherals(request: pytest.FixtureRequest) -> Iterator[List[Peripheral]]:
    """Every peripheral under test: the lab's, or one `blemu run` of `--blemu-profile` started for the session."""
    if os.environ.get("BLEMU_LAB_CONTROLS"):
        controls = [item for item in os.environ["BLEMU_LAB_CONTROLS"].split(",") if item]
        yield [Peripheral.from_lab(index) for index in range(len(controls))]
        return
    profile = request.config.getoption("blemu_profile") or request.config.getini("blemu_profile")
    if not profile:
        pytest.fail(
            "no blemu peripheral: run the tests inside `blemu lab run --profile FILE -- pytest`, "
            "or give --blemu-profile FILE (with an adapter here)",
            pytrace=False,
        )
    executable = request.config.getoption("blemu") or shutil.which("blemu")
    if not executable:
        pytest.fail("blemu is not on PATH (or give --blemu PATH)", pytrace=False)
    directory = tempfile.mkdtemp(prefix="blemu-pytest-")
    control, events = os.path.join(directory, "control.sock"), os.path.join(directory, "events.jsonl")
    arguments = [executable, "run", str(profile), "--control", control, "--events", events]
    adapter = request.config.getoption("blemu_adapter")
    if adapter:
        arguments += ["--adapter", adapter]
    bus = request.config.getoption("blemu_bus")
    if bus:
        arguments += ["--bus", bus]
    with open(os.path.join(directory, "blemu.log"), "wb") as log:
        process = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    peripheral = Peripheral(control, events=events)
    try:
        _wait_until_it_answers(peripheral, process, os.path.join(directory, "blemu.log"))
        yield [peripheral]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def blemu_peripheral(blemu_peripherals: List[Peripheral]) -> Peripheral:
    """The first peripheral under test (the lab's hci0, or the one `--blemu-profile` started)."""
    return blemu_peripherals[0]


def _wait_until_it_answers(peripheral: Peripheral, process: subprocess.Popen, log: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            with open(log, errors="replace") as output:
                pytest.fail(f"blemu run exited with {process.returncode}:\n{output.read()}", pytrace=False)
        try:
            peripheral.counters()
            return
        except ControlError:
            time.sleep(0.1)
    pytest.fail(f"blemu run did not answer on {peripheral.control} within {seconds:.0f} s", pytrace=False)
