"""`repair` (docs/architecture.md#repair): the plan and the fix of one session (`plan`), and
`repair ROOT` as one run of the ROOT runner (`root`)."""
