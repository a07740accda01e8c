"""`repair` (docs/architecture.md#the-mechanisms): the plan and the fix of one session (`plan`), and
`repair ROOT` as one run of the ROOT runner (`root`)."""
