"""The usage ledger (docs/usage.md): `pipeline` walks, scans, dedupes and prices; one parser
module per agent format; `walk`, `filescan`, `fanout`, the caches, `prices`, `ledger`."""
