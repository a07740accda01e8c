"""Agent formats (docs/architecture.md#formats-and-sources): `registry` holds one record per
format, `roots` walks ROOTs of native homes and mixed trees, `database` reads session rows,
`ownership` tells whose log a file is."""
