"""An agent's view of `blemu mcp`: the official MCP Python SDK (`mcp`, pinned in python/requirements-test.txt)
starts `blemu mcp --control SOCK` with its stdio client and drives a live `blemu run` of
profiles/heart-rate.yaml through the tools, as an agent would. Tests/BlueZTests/BlemuRunOnFakeBluetoothdTests.swift
runs it against a real `blemu run` on the fake bluetoothd; by hand:

    python python/tests-mcp/mcp_client.py --blemu .build/debug/blemu --control /tmp/hr.sock

Prints one line per check and exits 1 when any failed.
"""

import argparse
import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent, TextResourceContents
from pydantic import AnyUrl

# One tool per control command, `events` as two (docs/mcp.md, "Tools").
EXPECTED_TOOLS = {
    "describe", "status", "get", "set", "notify", "fault", "schedules", "centrals", "counters", "pairing", "reset",
    "advertising", "disconnect", "recent_events", "wait_for_event", "state",
}


class Checks:
    """Named checks, each printed as it is made; any failure fails the run."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.passed = 0

    def expect(self, condition: bool, name: str, detail: Any = "") -> None:
        if condition:
            self.passed += 1
            print(f"ok: {name}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAILED: {name}: {detail}", flush=True)


def text(result: CallToolResult) -> str:
    """A result's first text content."""
    return next((item.text for item in result.content if isinstance(item, TextContent)), "")


async def drive(blemu: str, control: str, checks: Checks) -> None:
    server = StdioServerParameters(command=blemu, args=["mcp", "--control", control])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        initialized = await session.initialize()
        checks.expect(initialized.serverInfo.name == "blemu", "the server is blemu", initialized.serverInfo)

        names = {tool.name for tool in (await session.list_tools()).tools}
        checks.expect(names == EXPECTED_TOOLS, "the tools are the control commands", sorted(names))

        stored = await session.call_tool("set", {"id": "battery-level", "fields": {"percent": 42}})
        checks.expect(
            not stored.isError and (stored.structuredContent or {}).get("hex") == "2A",
            "set battery-level by its fields", text(stored))

        # The wait listens before the notify is sent: its progress notification says when.
        listening = asyncio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            listening.set()

        wait = asyncio.create_task(session.call_tool(
            "wait_for_event",
            {"type": "notification", "characteristic": "battery-level", "timeout_seconds": 30},
            progress_callback=on_progress))
        await asyncio.wait_for(listening.wait(), timeout=30)
        notified = await session.call_tool("notify", {"id": "battery-level"})
        checks.expect(not notified.isError, "notify battery-level", text(notified))
        waited = await wait
        event = json.loads(text(waited)) if not waited.isError else {}
        checks.expect(
            event.get("type") == "notification" and event.get("characteristic") == "battery-level"
            and event.get("value") == "2A" and waited.structuredContent == event,
            "wait_for_event answers the notification with the value set", text(waited))

        unknown = await session.call_tool("get", {"id": "nope"})
        checks.expect(
            unknown.isError is True and text(unknown) == "get: unknown characteristic `nope`",
            "get of an unknown characteristic is an error naming it", text(unknown))

        contents = (await session.read_resource(AnyUrl("blemu://profile"))).contents
        profile = json.loads(contents[0].text) if isinstance(contents[0], TextResourceContents) else {}
        checks.expect(profile.get("name") == "Polar H10 A1B2", "blemu://profile is the profile served", contents)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--blemu", required=True, help="the built blemu, as the docs' client configuration runs it")
    parser.add_argument("--control", required=True, help="the control socket of a running blemu run")
    arguments = parser.parse_args()
    checks = Checks()
    asyncio.run(drive(arguments.blemu, arguments.control, checks))
    print(f"mcp client: {checks.passed} checks passed, {len(checks.failed)} failed", flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
