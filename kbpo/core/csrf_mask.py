"""Django's CSRF token masking, the same distribution at a fraction of the cost.

Every signed-in page carries a CSRF token (the navigation's log-out form), masked anew
per response so that a compressed page does not leak the secret (BREACH). Django draws
the 32-character mask one `secrets.choice` at a time and finds each character's place
with `str.index`: ≈0.16 ms per signed-in request on a slow machine (≈0.035 ms this way).
`new_csrf_string` draws the characters from one `secrets.token_bytes` read (a byte
below 248 = 4·62 maps to the 62-character alphabet uniformly; the rest are redrawn) and
`mask_cipher_secret` looks places up in a table: tokens of the same form and law, from
the same random source, that Django's own unmasking reads back (tests/core/test_csrf_mask.py).

`install` puts both where `django.middleware.csrf` looks them up (its `get_token` and
new secrets); the middleware module installs them when it loads.
"""

from __future__ import annotations

import secrets

from django.middleware import csrf as _csrf

CHARS = _csrf.CSRF_ALLOWED_CHARS
_PLACE = {c: i for i, c in enumerate(CHARS)}
_LIMIT = 256 - 256 % len(CHARS)  # bytes below it cover the alphabet evenly


def new_csrf_string(length: int = _csrf.CSRF_SECRET_LENGTH) -> str:
    """``length`` characters drawn uniformly and independently from CHARS."""
    out: list[str] = []
    n = len(CHARS)
    while len(out) < length:
        out += [CHARS[b % n] for b in secrets.token_bytes(length) if b < _LIMIT]
    return "".join(out[:length])


def mask_cipher_secret(secret: str) -> str:
    """A fresh mask and the secret shifted by it, character by character (Django's form)."""
    mask = new_csrf_string()
    n, place = len(CHARS), _PLACE
    return mask + "".join(CHARS[(place[x] + place[y]) % n]
                          for x, y in zip(secret, mask, strict=True))


def install() -> None:
    _csrf._get_new_csrf_string = new_csrf_string
    _csrf._mask_cipher_secret = mask_cipher_secret
