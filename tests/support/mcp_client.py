"""A real MCP client for tests/gateway.rs: the Python `mcp` SDK's ClientSession over stdio.

    python3 mcp_client.py STEPS_JSON -- COMMAND [ARGS...]
    python3 mcp_client.py - -- COMMAND [ARGS...]

starts COMMAND (the gateway, or a server directly) with this process's whole environment,
initializes, then runs STEPS_JSON, a list of steps (or, with `-`, the steps read from stdin one
JSON object a line, each run as it comes, until stdin ends):

    {"list": true}                                   tools/list
    {"call": "TOOL", "args": {...}, "progress": true} tools/call (with a progress token when
                                                     "progress" is true)
    {"wait_for": "PATH"}                             wait (up to 60 s) until PATH exists

and prints one JSON line per event, flushed at once:

    {"initialize": <InitializeResult as JSON>}
    {"list": [{"name": ..., "annotations": ...}, ...]}
    {"call": "TOOL", "result": <CallToolResult as JSON>, "progress": [[p, total, message], ...]}
    {"call": "TOOL", "error": "..."}               a protocol or transport error
"""

import json
import os
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def stdin_steps():
    """The steps on stdin, one JSON object a line, as they come (the test decides each next step
    after reading the answers so far)."""
    while True:
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line:
            return
        if line.strip():
            yield json.loads(line)


async def listed_steps(steps):
    for step in steps:
        yield step


def transport(command):
    """stdio to COMMAND, or Streamable HTTP when COMMAND is one URL (a bearer token from
    MCP_TEST_BEARER, when set)."""
    if len(command) == 1 and command[0].startswith("http"):
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

        token = os.environ.get("MCP_TEST_BEARER")
        headers = {"Authorization": f"Bearer {token}"} if token else None
        return streamable_http_client(command[0], http_client=create_mcp_http_client(headers=headers))
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    return stdio_client(params)


async def main(steps, command):
    async with transport(command) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            emit({"initialize": dump(init)})
            async for step in steps:
                if step.get("list"):
                    tools = await session.list_tools()
                    emit({"list": [
                        {"name": t.name, "annotations": dump(t.annotations) if t.annotations else None}
                        for t in tools.tools
                    ]})
                    continue
                if "wait_for" in step:
                    with anyio.fail_after(60):
                        while not os.path.exists(step["wait_for"]):
                            await anyio.sleep(0.02)
                    continue
                name = step["call"]
                progress = []

                async def on_progress(p, total, message, progress=progress):
                    progress.append([p, total, message])
                    emit({"progress": name, "at": [p, total, message]})

                try:
                    if "cancel_after" in step:
                        # The caller gives up: the SDK abandons the request and sends the
                        # server `notifications/cancelled` for it.
                        result = None
                        with anyio.move_on_after(step["cancel_after"]):
                            result = await session.call_tool(name, step.get("args", {}))
                        if result is None:
                            emit({"call": name, "cancelled": True, "progress": progress})
                            await anyio.sleep(step.get("linger", 1))
                            continue
                    else:
                        result = await session.call_tool(
                            name,
                            step.get("args", {}),
                            progress_callback=on_progress if step.get("progress") else None,
                        )
                    emit({"call": name, "result": dump(result), "progress": progress})
                except Exception as e:  # a protocol error is an answer too: the test reads it
                    emit({"call": name, "error": f"{type(e).__name__}: {e}", "progress": progress})


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: mcp_client.py STEPS_JSON -- (COMMAND [ARGS...] | URL)")
    steps = stdin_steps() if sys.argv[1] == "-" else listed_steps(json.loads(sys.argv[1]))
    anyio.run(main, steps, sys.argv[3:])
