"""Where the client keeps its tokens: one JSON file in the user's config directory
(platformdirs; KBPO_CONFIG_DIR overrides it), readable by the user alone, holding each
server's tokens by username and the user who logged in last."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

FILE_NAME = "credentials.json"


class ConfigError(Exception):
    """A problem with the server address or the stored credentials, worded for the user."""


def config_dir() -> Path:
    configured = os.environ.get("KBPO_CONFIG_DIR", "").strip()
    return Path(configured) if configured else Path(platformdirs.user_config_dir("kbpo"))


def server_url(option: str | None) -> str:
    """The server: --url, else KBPO_URL; no trailing slash, so it keys the store."""
    url = (option or os.environ.get("KBPO_URL", "")).strip().rstrip("/")
    if not url:
        raise ConfigError("No server given: pass --url https://kbpo.example.org or set "
                          "KBPO_URL.")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"The server address {url!r} must start with http:// or https:// "
                          "(--url or KBPO_URL).")
    return url


@dataclass
class Store:
    path: Path
    data: dict

    @classmethod
    def load(cls) -> Store:
        path = config_dir() / FILE_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError) as exc:
            raise ConfigError(f"Cannot read {path}: {exc}. Delete it and log in again.") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{path} is not a credentials file. Delete it and log in again.")
        data.setdefault("servers", {})
        return cls(path, data)

    def token(self, url: str, user: str | None) -> tuple[str, str] | None:
        """(user, token) stored for `url`: `user`'s, or the last logged-in user's."""
        server = self.data["servers"].get(url) or {}
        name = user or server.get("current")
        key = (server.get("tokens") or {}).get(name) if name else None
        return (name, key) if key else None

    def save_token(self, url: str, user: str, token: str) -> None:
        server = self.data["servers"].setdefault(url, {})
        server.setdefault("tokens", {})[user] = token
        server["current"] = user
        self._write()

    def _write(self) -> None:
        # Tokens are passwords: the directory and the file are the user's alone, and the
        # file is replaced whole so a crash never leaves half of it.
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self.data, fh, indent=1, sort_keys=True)
        os.replace(tmp, self.path)
