"""pytest fixtures for tests against a blemu peripheral (entry point `pytest11`: installed, it is loaded).

- Inside `blemu lab run --profile ...`, the peripherals are the lab's, found from `BLEMU_LAB_*`.
- Elsewhere (a machine with a Bluetooth adapter), give a profile with `--blemu-profile FILE` (or the ini option
  `blemu_profile`): `blemu run FILE` is started with a control socket and an event log for the session, waited for
  until it says it is advertising (its control socket is open by then), and stopped with SIGINT at the end, which
  unregisters everything.

`blemu_peripheral` (blocking) and `blemu_async_peripheral` (asyncio) are the first peripheral, `blemu_peripherals`
all of them. Each test that asks for one starts from the profile's state: the fixture sends `reset` first (values,
schedules and faults as at start; links, subscriptions and counters stay). `@pytest.mark.blemu_keep_state`, or
`--blemu-keep-state` for a whole run, skips that for a test that builds on the one before it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from typing import IO, Iterator, List

import pytest

from .aio import AsyncPeripheral
from .control import ControlError, Peripheral

KEEP_STATE = "blemu_keep_state"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("blemu")
    group.addoption("--blemu-profile", default=None, help="profile for blemu run when not inside blemu lab run")
    group.addoption("--blemu-adapter", default=None, help="adapter for blemu run (default: blemu's, hci0)")
    group.addoption("--blemu", default=None, help="the blemu executable (default: blemu on PATH)")
    group.addoption("--blemu-bus", default=None, help="D-Bus address for blemu run (default: the system bus)")
    group.addoption(
        "--blemu-keep-state",
        action="store_true",
        default=False,
        help="do not reset the peripherals before each test that uses them",
    )
    parser.addini("blemu_profile", "profile for blemu run when not inside blemu lab run", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{KEEP_STATE}: the blemu fixtures do not reset the peripheral before this test"
    )


@pytest.fixture(scope="session")
def blemu_session_peripherals(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[List[Peripheral]]:
    """Every peripheral under test, for the session: the lab's, or one `blemu run` of `--blemu-profile`."""
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
    # A short path: a Unix socket's path must fit in 107 bytes, and pytest's base temporary directory can be deep.
    directory = str(tmp_path_factory.mktemp("blemu", numbered=True))
    control, events = os.path.join(directory, "control.sock"), os.path.join(directory, "events.jsonl")
    arguments = [executable, "run", str(profile), "--control", control, "--events", events]
    adapter = request.config.getoption("blemu_adapter")
    if adapter:
        arguments += ["--adapter", adapter]
    bus = request.config.getoption("blemu_bus")
    if bus:
        arguments += ["--bus", bus]
    log = os.path.join(directory, "blemu.log")
    process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    assert process.stdout is not None
    output = _Output(process.stdout, log)
    peripheral = Peripheral(control, events=events)
    try:
        if not output.advertising.wait(timeout=30) and process.poll() is None:
            pytest.fail(f"blemu run did not start advertising within 30 s:\n{output.text()}", pytrace=False)
        if not output.advertised:
            process.wait(timeout=15)
            pytest.fail(f"blemu run exited with {process.returncode}:\n{output.text()}", pytrace=False)
        yield [peripheral]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def blemu_peripherals(request: pytest.FixtureRequest, blemu_session_peripherals: List[Peripheral]) -> List[Peripheral]:
    """Every peripheral under test, each reset to the profile's state first (unless `blemu_keep_state`)."""
    keep = request.node.get_closest_marker(KEEP_STATE) is not None or request.config.getoption("blemu_keep_state")
    if not keep:
        for peripheral in blemu_session_peripherals:
            try:
                peripheral.reset()
            except ControlError as error:
                pytest.fail(f"blemu fixture: could not reset the peripheral before the test: {error}", pytrace=False)
    return blemu_session_peripherals


@pytest.fixture
def blemu_peripheral(blemu_peripherals: List[Peripheral]) -> Peripheral:
    """The first peripheral under test (the lab's hci0, or the one `--blemu-profile` started), reset first."""
    return blemu_peripherals[0]


@pytest.fixture
def blemu_async_peripheral(blemu_peripherals: List[Peripheral]) -> AsyncPeripheral:
    """The first peripheral under test for asyncio tests: its commands awaited, its events followed; reset first."""
    return blemu_peripherals[0].aio()


class _Output:
    """What `blemu run` prints, copied to its log file for the whole session by a thread of its own (so the pipe
    never fills); `advertising` is set when it says it is advertising, or when its output ends first."""

    def __init__(self, stream: IO[bytes], log: str) -> None:
        self.log = log
        self.advertised = False
        self.advertising = threading.Event()
        copy = open(log, "wb")  # here, so `text` finds the file even before the first line
        threading.Thread(target=self._copy, args=(stream, copy), name="blemu run output", daemon=True).start()

    def _copy(self, stream: IO[bytes], copy: IO[bytes]) -> None:
        with copy as log:
            for line in stream:
                log.write(line)
                log.flush()
                # `blemu run` says this once everything is published and its control socket is open.
                if line.startswith(b"advertising "):
                    self.advertised = True
                    self.advertising.set()
        self.advertising.set()

    def text(self) -> str:
        with open(self.log, errors="replace") as log:
            return log.read()
