"""plotly.js on the wire: served by the app from the plotly package, compressed, and not sent again to a browser that
has it (bench/bench_static.py measures the bytes; docs/benchmarks.md)."""

from __future__ import annotations

import gzip
from pathlib import Path

import plotly

PLOTLY_URL = "/static/plotly/plotly.min.js"
BROWSER = "gzip, deflate, br"


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_plotly_comes_compressed_from_the_plotly_package(client):
    response = client.get(PLOTLY_URL, HTTP_ACCEPT_ENCODING=BROWSER)
    sent = body(response)
    assert response.status_code == 200 and response["Content-Encoding"] == "gzip"
    packaged = (Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js").read_bytes()
    assert gzip.decompress(sent) == packaged and len(sent) < len(packaged) / 3


def test_a_browser_that_has_plotly_gets_a_304_not_the_file_again(client):
    first = client.get(PLOTLY_URL, HTTP_ACCEPT_ENCODING=BROWSER)
    body(first)
    etag = first["ETag"]
    assert etag.startswith('W/"')  # compressed on the way out: the tag is weak, and the browser sends it back so
    again = client.get(PLOTLY_URL, HTTP_ACCEPT_ENCODING=BROWSER, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and body(again) == b""
    assert again["Cache-Control"] == first["Cache-Control"]
    # Another file's tag, or none: the file.
    other = client.get(PLOTLY_URL, HTTP_ACCEPT_ENCODING=BROWSER, HTTP_IF_NONE_MATCH='W/"not-this-one"')
    assert other.status_code == 200 and len(body(other)) > 1_000_000
