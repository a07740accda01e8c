"""catty-ctx inside the agents people run: their hooks, a recall server and a status line.

- `settings`: installing and removing our entries in an agent's own settings files;
- `mirror`: a catty session kept beside a live agent transcript, brought up to date
  incrementally at each hook, with a segment per compaction;
- `continuation`: what only an agent's transcript tells the one continuation tracker
  (`view.continuation`), and the hook's reminder over the one renderer;
- `hooks`: the hook commands (fail-open: an error is one line, exit 0);
- `mcp_server`: the read-only recall tools over MCP;
- `statusline`: Claude Code's status line, over `transcript_tally` (a transcript read
  incrementally: the last request, the compactions, the calls counted once).

Nothing below this package imports it (see docs/agents.md).
"""
