"""CSRF tokens masked faster (kbpo/core/csrf_mask.py): Django's form and law."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from django.middleware import csrf
from scipy import stats

import kbpo.core.middleware  # noqa: F401  (installs the masking)
from kbpo.core import csrf_mask


def test_installed_where_django_looks_them_up() -> None:
    assert csrf._mask_cipher_secret is csrf_mask.mask_cipher_secret
    assert csrf._get_new_csrf_string is csrf_mask.new_csrf_string


def test_django_unmasks_every_token_to_its_secret() -> None:
    for _ in range(500):
        secret = csrf_mask.new_csrf_string()
        token = csrf_mask.mask_cipher_secret(secret)
        assert len(secret) == csrf.CSRF_SECRET_LENGTH
        assert len(token) == csrf.CSRF_TOKEN_LENGTH
        assert set(token) <= set(csrf.CSRF_ALLOWED_CHARS)
        assert csrf._unmask_cipher_token(token) == secret
        csrf._check_token_format(token)  # raises if Django would refuse its form


def test_every_byte_value_maps_evenly_and_the_rest_are_redrawn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """All 256 byte values once: the 248 below the limit give each character exactly
    4 times; the 8 above are dropped and more bytes read."""
    reads: list[int] = []

    def every_byte(n: int) -> bytes:
        reads.append(n)
        return bytes(range(256)) if len(reads) == 1 else bytes(n)

    monkeypatch.setattr(secrets, "token_bytes", every_byte)
    out = csrf_mask.new_csrf_string(250)
    counts = {c: out[:248].count(c) for c in csrf.CSRF_ALLOWED_CHARS}
    assert set(counts.values()) == {4}
    assert len(reads) == 2 and len(out) == 250  # 248 kept from the first read


def test_masks_are_uniform_over_the_alphabet() -> None:
    """3,000 masks (96,000 characters): Pearson's χ² over the 62 characters, and over
    the 32 positions of the most frequent one, below their 1 − 10⁻⁶ quantiles (a
    correct uniform draw fails this once in a million runs)."""
    chars = csrf.CSRF_ALLOWED_CHARS
    masks = [csrf_mask.mask_cipher_secret("a" * 32)[:32] for _ in range(3000)]
    grid = np.array([[chars.index(c) for c in m] for m in masks])
    counts = np.bincount(grid.ravel(), minlength=len(chars))
    chi2 = ((counts - grid.size / len(chars)) ** 2 / (grid.size / len(chars))).sum()
    assert chi2 < stats.chi2.ppf(1 - 1e-6, len(chars) - 1)
    top = int(counts.argmax())
    per_pos = (grid == top).sum(axis=0)
    expected = per_pos.sum() / grid.shape[1]
    assert ((per_pos - expected) ** 2 / expected).sum() < stats.chi2.ppf(1 - 1e-6, 31)
