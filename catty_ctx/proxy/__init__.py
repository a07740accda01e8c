"""The live request path: `catty-ctx proxy` (docs/proxy.md).

A local HTTP server between an agent (Claude Code, Codex, any OpenAI or Anthropic client) and
its provider. Each conversation it carries is recorded as a catty session, and the copy of
each request it forwards goes through the context lifecycle first (repair, prune,
compaction). Only the `proxy` command imports this package; it needs the extra
`catty-ctx[proxy]` (aiohttp).

Modules: `sse` (the tee's event reader), `families` (the API families and the session-key
table), `anthropic` and `openai` (each family's request and answer shapes), `reuse` (the
previous request's parse, reused), `recorder` (conversations as sessions), `lifecycle`
(repair, prune, compaction on the request copy), `summarize` (the client's upstream as the
summariser), `pass1` (pass 1 in a process of its own), `server` (the HTTP server and client),
`main` (settings, the event loop).
"""
