"""`fork --to` (docs/writeback.md): `pipeline` writes a new native session from the view of any
session; `steps` (the view as conversation steps), `slim` (large outputs moved out), `claude`
and `codex` (each agent's records and the checks its loader asks for)."""
