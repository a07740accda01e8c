"""`repair` (docs/architecture.md#the-mechanisms): what a session needs (`plan`), the fix applied
under the lock and in memory (`fix`), and `repair ROOT` as one run of the ROOT runner (`root`)."""
