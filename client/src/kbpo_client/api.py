"""The KBPO HTTP API as the client uses it (the endpoints of docs/reference/api.md).
Every call returns the decoded JSON; an answer the caller did not ask to handle raises
`ApiError` with the server's own message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from kbpo_client import __version__

TIMEOUT = httpx.Timeout(30.0, read=300.0)  # an upload is validated inside its request


class ApiError(Exception):
    """An HTTP answer other than success, or no answer at all (status 0)."""

    def __init__(self, status: int, message: str, body: Any = None,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after


def describe(body: Any) -> str:
    """The server's error body as one readable text: `detail`, else `field: message`."""
    if isinstance(body, dict):
        if "detail" in body:
            return str(body["detail"])
        parts = []
        for field, value in body.items():
            items = value if isinstance(value, list) else [value]
            parts.append(f"{field}: {' '.join(str(v) for v in items)}")
        if parts:
            return "; ".join(parts)
    return str(body)[:500] if body not in (None, "") else "no details"


class Api:
    def __init__(self, url: str, token: str | None = None) -> None:
        headers = {"User-Agent": f"kbpo-client/{__version__}", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Token {token}"
        self.url = url
        self.http = httpx.Client(base_url=url, headers=headers, timeout=TIMEOUT)

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, ok: tuple[int, ...] = (200,),
                **kwargs: Any) -> tuple[int, Any]:
        try:
            resp = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiError(0, f"Cannot reach {self.url}: {exc}") from exc
        try:
            body = resp.json()
        except ValueError:
            body = resp.text
        if resp.status_code in ok:
            return resp.status_code, body
        retry = resp.headers.get("Retry-After")
        message = describe(body)
        if resp.status_code == 401 and "Authorization" in self.http.headers:
            message += (" The server refused your token: run `kbpo login` again, or check "
                        "KBPO_TOKEN.")
        raise ApiError(resp.status_code, message, body,
                       int(retry) if retry and retry.isdigit() else None)

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items()
                                                 if v is not None})[1]

    # --- endpoints ---------------------------------------------------------------------

    def login(self, username: str, password: str) -> str:
        _, body = self.request("POST", "/api/auth/token/",
                               json={"username": username, "password": password})
        return str(body["token"])

    def upload(self, path: Path, corpus: str, name: str, public: bool,
               drop_invalid: bool) -> tuple[int, Any]:
        """(status, submission): 201 accepted or queued, 422 rejected at once."""
        data = {"corpus": corpus, "name": name, "public": str(public).lower(),
                "drop_invalid": str(drop_invalid).lower()}
        with path.open("rb") as fh:
            return self.request("POST", "/api/submissions/", ok=(201, 422), data=data,
                                files={"file": (path.name, fh, "application/octet-stream")})

    def submission(self, pk: int) -> Any:
        return self.get(f"/api/submissions/{pk}/")

    def submissions(self) -> Any:
        return self.get("/api/submissions/")

    def progress(self, pk: int) -> Any:
        return self.get(f"/api/submissions/{pk}/progress/")

    def scores(self, pk: int) -> Any:
        return self.get(f"/api/submissions/{pk}/scores/")

    def history(self, pk: int, scheme: str) -> Any:
        return self.get(f"/api/submissions/{pk}/history/", scheme=scheme)

    def samples(self, pk: int) -> list[Any]:
        """Every sampled prediction, following the pages."""
        results: list[Any] = []
        page: int | None = 1
        while page is not None:
            body = self.get(f"/api/submissions/{pk}/samples/", page=page)
            results.extend(body["results"])
            page = body["next"]
        return results

    def compare(self, corpus: str, a: int, b: int, scheme: str) -> Any:
        return self.get(f"/api/compare/{corpus}/", a=a, b=b, scheme=scheme)
