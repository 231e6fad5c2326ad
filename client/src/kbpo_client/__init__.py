"""Command-line client for KBPO: `kbpo login`, `submit`, `status`, `list`, `scores`,
`compare` and `report`, over the service's HTTP API only (see README.md)."""

__version__ = "0.1.0"
