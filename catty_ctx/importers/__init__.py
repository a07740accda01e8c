"""Importers (docs/import.md): other agents' session files become catty-ctx events. `pipeline`
drives one import, one module per format turns records into events over `common`, `detect`
names a file's format."""
