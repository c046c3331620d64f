"""Compressed answers that keep a strong ETag.

Django's GZipMiddleware makes a strong ETag weak (`W/"…"`): it adds random bytes to each gzip stream
(against BREACH), so the compressed bytes differ on every answer and the ETag can no longer name them. The
scheduler API promises a strong ETag (docs/scheduler-api.md), and proxies and clients may refuse to reuse or
range-request a weak one. So an answer that carries a strong ETag — set only by the scheduler API's views,
which answer a token in the Authorization header, never a session cookie — is compressed without the random
bytes (gzip with mtime 0: the same body gives the same bytes) and gets a strong ETag of its own, the
uncompressed one with `-gzip` appended (`"abc"` → `"abc-gzip"`), as Apache's mod_deflate names it. A client
that sends either one back in If-None-Match gets its 304 (`etag_match`). Every other answer is compressed by
Django's middleware as before, random bytes included (docs/security.md, "Compressed pages and BREACH").

A streamed file with a strong ETag (a static file WhiteNoise serves from where it lies, as `make run` does, with
no precompressed copy beside it: plotly.min.js) is compressed by Django's middleware, which weakens its tag; the
browser then revalidates with `W/"…"`, which WhiteNoise compares strongly and answers with the whole file again
(1.4 MB of plotly.js on every chart page, bench/bench_static.py). If-None-Match always compares weakly (RFC 9110
13.1.2: `W/"x"` matches `"x"`), so a request's tags lose their `W/` here, before WhiteNoise or a view reads them:
the browser that has the file gets its 304.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.middleware.gzip import GZipMiddleware as DjangoGZipMiddleware
from django.middleware.gzip import re_accepts_gzip
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from django.utils.text import compress_string

GZIP_SUFFIX = "-gzip"
MIN_LENGTH = 200  # as Django's: shorter answers are not worth compressing


def gzip_etag(etag: str) -> str:
    """The strong ETag of the compressed form of the answer whose strong ETag is `etag`."""
    return etag[:-1] + GZIP_SUFFIX + '"'


def etag_match(if_none_match: str | None, etag: str) -> str | None:
    """The ETag a 304 answers with when `if_none_match` names `etag` or its compressed form; else None.

    If-None-Match compares weakly (RFC 9110 13.1.2): `W/"x"` matches `"x"`. The 304 carries the tag the
    client sent (strong), so a client keeps the one it has.
    """
    if not if_none_match:
        return None
    for tag in parse_etags(if_none_match):
        tag = tag.removeprefix("W/")
        if tag == "*":
            return etag
        if tag in (etag, gzip_etag(etag)):
            return tag
    return None


class GZipMiddleware(DjangoGZipMiddleware):
    """Django's GZipMiddleware; an answer with a strong ETag is compressed the same way every time and keeps one."""

    def process_request(self, request: HttpRequest) -> None:
        """If-None-Match's tags as the weak comparison reads them (no `W/`), for code that compares strongly."""
        tags = request.META.get("HTTP_IF_NONE_MATCH", "")
        if "W/" in tags:
            request.META["HTTP_IF_NONE_MATCH"] = ", ".join(tag.removeprefix("W/") for tag in parse_etags(tags))

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        etag = response.get("ETag") or ""
        if response.streaming or not etag.startswith('"') or response.has_header("Content-Encoding"):
            return super().process_response(request, response)
        content = response.content  # type: ignore[attr-defined]  # not streaming: an HttpResponse
        if len(content) < MIN_LENGTH:
            return response
        patch_vary_headers(response, ("Accept-Encoding",))
        if not re_accepts_gzip.search(request.META.get("HTTP_ACCEPT_ENCODING", "")):
            return response
        compressed = compress_string(content, max_random_bytes=0)
        if len(compressed) >= len(content):
            return response
        response.content = compressed  # type: ignore[attr-defined]
        response.headers["Content-Length"] = str(len(compressed))
        response.headers["ETag"] = gzip_etag(etag)
        response.headers["Content-Encoding"] = "gzip"
        return response
