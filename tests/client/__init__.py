"""The `kbpo` command-line client (client/), driven against a live server."""
