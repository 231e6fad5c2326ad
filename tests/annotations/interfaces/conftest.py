"""Interface tests check what the pages and the intake keep; asking MTurk to confirm a
page's post is the crowd sync's job, tested against the fake MTurk in tests/annotations/crowd."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _no_confirmation_calls() -> Iterator[None]:
    from annotations.apps import _confirm_page_post
    from annotations.interfaces.intake import page_post_received

    page_post_received.disconnect(dispatch_uid="annotations-confirm")
    try:
        yield
    finally:
        page_post_received.connect(_confirm_page_post, dispatch_uid="annotations-confirm")
