"""The `catty-ctx` command line (docs/architecture.md#cli): `app` the entry (the fast dispatcher,
the typer app), `registry` the commands, one module per command, `fastpath` and `options` the
option tables (`plain` reads their plain spellings), `output` and `errors` the one way out.
Empty on purpose: `--version` and `--help` load only what they need."""
