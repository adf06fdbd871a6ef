"""The pytest plugin tested as a plugin, with pytest's own pytester: each test writes a test file, runs pytest on it
and reads the outcome. Against a live `blemu run` of profiles/heart-rate.yaml whose control socket is
BLEMU_TEST_CONTROL, presented as the lab presents its peripherals (BLEMU_LAB_CONTROLS); the fixture's other way in,
`--blemu-profile` starting `blemu run` itself, is Tests/BlueZTests/BlemuRunOnFakeBluetoothdTests.swift's, which runs
this file too (`-p pytester` loads pytest's plugin for testing plugins).

    BLEMU_TEST_CONTROL=/path/control.sock python -m pytest -p pytester python/tests/plugin_test.py
"""

import os

import pytest

CONTROL = os.environ.get("BLEMU_TEST_CONTROL")
pytestmark = pytest.mark.skipif(not CONTROL, reason="needs a running blemu (BLEMU_TEST_CONTROL)")


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment `blemu lab run --profile ...` gives its command, naming the live peripheral."""
    monkeypatch.setenv("BLEMU_LAB_CONTROLS", str(CONTROL))
    monkeypatch.delenv("BLEMU_LAB_EVENT_LOGS", raising=False)


def test_each_test_starts_from_the_profiles_state(pytester: pytest.Pytester, lab: None) -> None:
    pytester.makepyfile(
        """
        def test_one_changes_the_battery(blemu_peripheral):
            blemu_peripheral.set("battery-level", fields={"percent": 50})
            blemu_peripheral.pause_schedules("battery-level")

        def test_the_next_does_not_see_it(blemu_peripheral):
            assert blemu_peripheral.get("battery-level").fields == {"percent": 87}
            assert not any(schedule.paused for schedule in blemu_peripheral.schedules())
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_a_marked_test_keeps_what_the_one_before_it_left(pytester: pytest.Pytester, lab: None) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_one_changes_the_battery(blemu_peripheral):
            blemu_peripheral.set("battery-level", fields={"percent": 42})

        @pytest.mark.blemu_keep_state
        def test_the_next_builds_on_it(blemu_peripheral):
            assert blemu_peripheral.get("battery-level").fields == {"percent": 42}
        """
    )
    pytester.runpytest("-p", "no:cacheprovider", "--strict-markers").assert_outcomes(passed=2)


def test_the_async_fixture_awaits_commands_and_events(pytester: pytest.Pytester, lab: None) -> None:
    pytester.makepyfile(
        """
        import asyncio

        from blemu import AsyncPeripheral

        def test_awaited(blemu_async_peripheral):
            assert isinstance(blemu_async_peripheral, AsyncPeripheral)

            async def scenario():
                await blemu_async_peripheral.set("battery-level", fields={"percent": 30})
                async with blemu_async_peripheral.expect("reset") as seen:
                    await blemu_async_peripheral.reset()
                assert seen.event["changed"] == ["battery-level"]

            asyncio.run(scenario())
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_refused_command_fails_the_test_naming_the_command_and_the_reason(
    pytester: pytest.Pytester, lab: None
) -> None:
    pytester.makepyfile(
        """
        def test_asks_for_what_the_profile_lacks(blemu_peripheral):
            blemu_peripheral.get("no-such-characteristic")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ControlError: blemu get: unknown characteristic `no-such-characteristic`*"])


def test_without_a_peripheral_the_fixture_says_how_to_get_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BLEMU_LAB_CONTROLS", raising=False)
    pytester.makepyfile(
        """
        def test_needs_one(blemu_peripheral):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no blemu peripheral: run the tests inside `blemu lab run --profile FILE -- pytest`*"])


def test_a_peripheral_that_went_away_is_said_before_the_test_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("BLEMU_LAB_CONTROLS", f"{tmp_path}/gone.sock")
    pytester.makepyfile(
        """
        def test_needs_one(blemu_peripheral):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*blemu fixture: could not reset the peripheral before the test: blemu reset:*"])
