"""The continuation eval (docs/eval.md): `pipeline` runs it over a corpus (summarisers x modes,
drives, scores), `drive`, `facts`, `metrics`, `judge`, `native` (the agents' own compactions),
`verdict` (what it found and its exit)."""
