"""Refusing oversized uploads while they stream in.

Django would otherwise spool a whole upload to a temporary file before any view sees
it, so a huge file could fill the disk. This handler runs first: once a file passes the
size cap it stops storing it, marks the request, and the rest of the body is read and
discarded. The form and the API then report the limit instead of a missing file.
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest

REFUSED_ATTR = "kbpo_upload_too_large"


class CappedUploadHandler(FileUploadHandler):
    """Stop receiving files as soon as the request's files together exceed
    `KBPO_SUBMISSION_MAX_BYTES`: counted per file, a request of a hundred files (Django's
    default DATA_UPLOAD_MAX_NUMBER_FILES) just under the cap each would be spooled to
    disk whole, on any URL and before any login check (the CSRF check reads the body)."""

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        limit = settings.KBPO_SUBMISSION_MAX_BYTES
        self.received += len(raw_data)
        if self.received > limit:
            setattr(self.request, REFUSED_ATTR, limit)
            raise StopUpload(connection_reset=False)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handlers (memory or temporary file) build the file


def upload_refused_message(request: HttpRequest) -> str | None:
    """The error to show when the handler refused this request's upload."""
    limit = getattr(request, REFUSED_ATTR, None)
    if limit is None:
        return None
    return (f"The file is larger than the limit of {limit:,} bytes, so it was not "
            "accepted. Compress it with gzip (the limit applies to the uncompressed "
            "size too) or split the knowledge base.")
