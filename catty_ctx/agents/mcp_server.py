"""`catty-ctx mcp`: the recall tools (`recall`) as a stdio MCP server, on the official SDK's
low-level server (docs/agents.md#the-recall-server).

The protocol layer only: each tool's arguments are declared once (`TOOLS`), which gives both
the input schema the client lists and the check a call's arguments pass before the library
answers. A call that cannot be answered — arguments that are not the tool's, a seq the session
does not hold, a session that cannot be read — is a tool result with `isError` and one line, so
the model can correct itself; an unknown tool is a JSON-RPC error. Nothing stops the server but
the end of its input. Every question runs in a worker thread, one at a time, so pings are
answered while a large session is read.
"""
from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, cast

import anyio
import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from .._version import __version__
from ..errors import CattyError
from ..visible import one_line
from .mcp_start import INSTRUCTIONS, Wire
from .recall import SEARCH_LIMIT, SEARCH_LIMIT_MAX, SHOW_CHARS, SHOW_CHARS_MAX, Recall, RecallError
from .recall_all import recall_search
from .settings import RECALL_SERVER

_INT_MAX = 10**18 - 1  # an integer argument beyond this names no seq, count or size


@dataclass(frozen=True)
class Arg:
    """One argument of a tool: its JSON type, what it means, and its bounds."""

    name: str
    kind: type
    help: str
    required: bool = False
    default: Any = None
    least: int | None = None
    most: int | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": {str: "string", bool: "boolean", int: "integer"}[self.kind], "description": self.help}
        if self.default is not None:
            out["default"] = self.default
        if self.least is not None:
            out["minimum"] = self.least
        if self.most is not None:
            out["maximum"] = self.most
        return out

    def check(self, value: Any) -> Any:
        if self.kind is int and type(value) is int and abs(value) > _INT_MAX:
            raise RecallError(f"{self.name} must be an integer of at most 18 digits, not {_shown(value)}")
        if self.kind is int and (type(value) is not int):
            if type(value) is float and value.is_integer():
                value = int(value)
            else:
                raise RecallError(f"{self.name} must be an integer, not {_shown(value)}")
        elif self.kind is not int and type(value) is not self.kind:
            raise RecallError(f"{self.name} must be a {self.schema()['type']}, not {_shown(value)}")
        if self.least is not None and value < self.least:
            raise RecallError(f"{self.name} must be at least {self.least}" + (f" and at most {self.most}" if self.most is not None else "") + f", not {value}")
        if self.most is not None and value > self.most:
            raise RecallError(f"{self.name} must be at most {self.most}, not {value}")
        return value


@dataclass(frozen=True)
class Tool:
    name: str
    help: str
    args: tuple[Arg, ...]
    answer: Callable[..., dict[str, Any]]

    def listed(self) -> types.Tool:
        schema = {"type": "object", "properties": {a.name: a.schema() for a in self.args},
                  "required": [a.name for a in self.args if a.required], "additionalProperties": False}
        return types.Tool(name=self.name, description=self.help, input_schema=schema,
                          annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False))

    def arguments(self, given: dict[str, Any] | None) -> dict[str, Any]:
        """GIVEN checked against the declaration: the keyword arguments of ANSWER."""
        given = given or {}
        known = {a.name: a for a in self.args}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise RecallError(f"{self.name} takes no argument {', '.join(unknown)} (it takes: {', '.join(known) or 'none'})")
        out: dict[str, Any] = {}
        for a in self.args:
            if given.get(a.name) is not None:
                out[a.name] = a.check(given[a.name])
            elif a.required:
                raise RecallError(f"{self.name} needs {a.name}")
            elif a.default is not None:
                out[a.name] = a.default
        return out


def _shown(value: Any) -> str:
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= 40 else text[:39] + "…"


TOOLS = {t.name: t for t in (
    Tool("recall_search",
         "Search what the compactions took out of your context: every event of this session up to its last "
         "compaction, and its segments archive. Each match gives the event's seq, who said it (user, assistant, "
         "tool_call NAME, tool_result NAME), the matching line and the lines around it. Use it to find an exact "
         "error, command, path or instruction from before a compaction; then recall_show the seq for the whole text.",
         (Arg("pattern", str, "What to look for: a fixed string (a Python regular expression with regex=true).", required=True),
          Arg("regex", bool, "Read pattern as a regular expression.", default=False),
          Arg("ignore_case", bool, "Match regardless of case.", default=False),
          Arg("limit", int, "At most this many matches.", default=SEARCH_LIMIT, least=1, most=SEARCH_LIMIT_MAX),
          Arg("scope", str, 'Where to look: "session" (this session, up to its last compaction) or "all" (every session '
                            "of this project, Claude Code's and Codex's, best ranked first).", default="session")),
         recall_search),
    Tool("recall_show",
         "The exact text of this session's events: one seq, or from_seq..to_seq. An answer holds at most max_chars "
         "characters; when there is more, next_cursor is set: call again with cursor=next_cursor (and nothing else).",
         (Arg("seq", int, "One event's seq (from recall_search).", least=0),
          Arg("from_seq", int, "The first seq of a range.", least=0),
          Arg("to_seq", int, "The last seq of a range (default: from_seq).", least=0),
          Arg("cursor", str, "next_cursor of the previous answer, to continue it."),
          Arg("max_chars", int, "At most this many characters of text in this answer.", default=SHOW_CHARS, least=1, most=SHOW_CHARS_MAX)),
         Recall.show),
    Tool("context_status",
         "Where this session's context stands: window, tokens now, percent used, the compaction threshold and the "
         "tokens left before it, compactions so far and the largest items (what `catty-ctx inspect` reports).",
         (), Recall.status),
    Tool("session_usage",
         "This session's tokens (input, output, cache read and write) and cost by model, each provider call counted once.",
         (), Recall.usage),
)}


def failure(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def answer(recall: Recall, tool: Tool, arguments: dict[str, Any]) -> types.CallToolResult:
    """TOOL's answer for ARGUMENTS, or the one line that says why there is none."""
    try:
        doc = tool.answer(recall, **tool.arguments(arguments))
    except CattyError as exc:
        return failure(str(exc))
    except OSError as exc:
        return failure(f"cannot read the session: {exc.strerror or exc}")
    except RecursionError:
        return failure("the session is nested too deeply to read")
    except Exception as exc:  # whatever else: still one line for the model, never a traceback in the protocol
        return failure(f"cannot answer: {type(exc).__name__}: {one_line(str(exc))[:300]}")
    return types.CallToolResult(content=[types.TextContent(text=orjson.dumps(doc).decode())])


def build_server(recall: Recall) -> Server[Any]:
    """The MCP server answering the recall tools over RECALL."""
    limiter = anyio.CapacityLimiter(1)  # one question at a time: the Recall keeps one session open

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t.listed() for t in TOOLS.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"no tool {params.name!r} (the tools: {', '.join(TOOLS)})")
        return await anyio.to_thread.run_sync(functools.partial(answer, recall, tool, params.arguments or {}), limiter=limiter)

    return Server(RECALL_SERVER, version=__version__,
                  instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def _lines(wire: Wire) -> AsyncIterator[str]:
    """The wire's input lines: those read before the SDK was loaded, then the rest."""
    for line in wire.replay:
        yield line
    async for line in anyio.wrap_file(wire.reader):
        yield line


class _Output:
    """The SDK's writes to the wire, less its answer to the replayed first request when the
    client has one already (`Wire.answered`): the two are the same, or a stderr line says how not."""

    def __init__(self, wire: Wire) -> None:
        self.out = anyio.wrap_file(wire.writer)
        self.answered = wire.answered

    async def write(self, text: str) -> None:
        if self.answered is not None:
            doc = orjson.loads(text)
            if type(doc) is dict and doc.get("id") == self.answered["id"] and ("result" in doc or "error" in doc):
                sent, self.answered = self.answered, None
                if doc != sent:
                    sys.stderr.write(f"catty-ctx mcp: the SDK's answer to the first request differs from the one sent: {one_line(text)[:300]}\n")
                return
        await self.out.write(text)

    async def flush(self) -> None:
        await self.out.flush()


def run_sdk(recall: Recall, wire: Wire | None) -> None:
    """Serve RECALL with the SDK's server on WIRE (`mcp_start` took it and may have answered
    its first request), or on the SDK's own stdio transport when there is none."""
    server = build_server(recall)

    async def run() -> None:
        streams = (cast(Any, _lines(wire)), cast(Any, _Output(wire))) if wire is not None else (None, None)
        async with stdio_server(*streams) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
