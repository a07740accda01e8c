"""Request-copy pruning (docs/prune.md): `pipeline` prunes a view's copy, `strategies` (tiered,
cache-aware, images), `forms` (item forms), `options`, `reuse` (prefix reuse)."""
