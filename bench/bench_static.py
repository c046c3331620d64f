"""The static files of a chart page on the wire: bytes per encoding, and how long a browser may keep them.

    .venv/bin/python bench/bench_static.py                      # the dashboards' page (default)
    .venv/bin/python bench/bench_static.py --template reports/page_detail.html

In-process, no database: production settings (DEBUG off, the manifest storage WhiteNoise compresses at
collectstatic, as `make install`'s deployment recipe runs it), collected into a temporary STATIC_ROOT, then each
static file the page's template and base.html load is asked for through the app's middleware with Django's test
client, three times: without Accept-Encoding, with `gzip`, and with `gzip, deflate, br` (what browsers send). Bytes
are the body as sent. It also asks for plotly.js as the embedded default serves it (`make run`: DEBUG, files found
in place, no manifest), to show what that mode sends. Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ENCODINGS = (("none", ""), ("gzip", "gzip"), ("browser", "gzip, deflate, br"))
_STATIC = re.compile(r"\{% static '([^']+)' %\}")


def page_assets(template: str) -> list[str]:
    """The static paths a page loads: its template's, then base.html's (the templates between are read too)."""
    paths: list[str] = []
    name: str | None = template
    while name:
        text = (ROOT / "templates" / name).read_text(encoding="utf-8")
        paths += [p for p in _STATIC.findall(text) if p not in paths]
        parent = re.search(r'\{% extends "([^"]+)" %\}', text)
        name = parent.group(1) if parent else None
    return paths


def fetch(client: object, url: str, accept: str) -> tuple[int, str, str]:
    headers = {"HTTP_ACCEPT_ENCODING": accept} if accept else {}
    response = client.get(url, **headers)  # type: ignore[attr-defined]
    assert response.status_code == 200, (url, response.status_code)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return len(body), response.get("Content-Encoding", "—"), response.get("Cache-Control", "—")


def revalidated(client: object, url: str) -> str:
    """What a browser's second visit costs when its copy is stale: a conditional request with the validators the
    first answer gave (ETag, Last-Modified)."""
    first = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")  # type: ignore[attr-defined]
    if first.streaming:
        b"".join(first.streaming_content)
    headers = {"HTTP_ACCEPT_ENCODING": "gzip, deflate, br"}
    if first.get("ETag"):
        headers["HTTP_IF_NONE_MATCH"] = first["ETag"]
    if first.get("Last-Modified"):
        headers["HTTP_IF_MODIFIED_SINCE"] = first["Last-Modified"]
    again = client.get(url, **headers)  # type: ignore[attr-defined]
    body = b"".join(again.streaming_content) if again.streaming else again.content
    return f"{again.status_code}, {len(body):,} bytes"


def kb(n: int) -> str:
    return f"{n / 1024:,.1f} KB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--template", default="reports/dashboards/index.html")
    args = parser.parse_args()
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "bench.settings_static", "DEBUG": "0", "STATIC_MANIFEST": "1",
        "BENCH_STATIC_ROOT": tempfile.mkdtemp(prefix="docket-static-"),
        "SECRET_KEY": "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "ALLOWED_HOSTS": "testserver", "SECURE_SSL_REDIRECT": "0", "LOG_LEVEL": "ERROR",
    })
    import django

    django.setup()
    from django.contrib.staticfiles.storage import staticfiles_storage
    from django.core.management import call_command
    from django.test import Client, override_settings

    call_command("collectstatic", interactive=False, verbosity=0)
    client = Client()
    rows, totals = [], dict.fromkeys((name for name, _ in ENCODINGS), 0)
    for path in page_assets(args.template):
        url = staticfiles_storage.url(path)
        sizes = {}
        for name, accept in ENCODINGS:
            size, encoding, cache = fetch(client, url, accept)
            sizes[name] = (size, encoding)
            totals[name] += size
        rows.append((path, sizes, cache))
    print(f"Static files of `{args.template}` (manifest storage, DEBUG off):\n")
    print("| file | no Accept-Encoding | gzip | browser (gzip, deflate, br) | Cache-Control |")
    print("|---|---:|---:|---:|---|")
    for path, sizes, cache in rows:
        cells = [f"{kb(size)} ({encoding})" for size, encoding in sizes.values()]
        print(f"| {path} | {' | '.join(cells)} | {cache} |")
    print(f"| **all** | {kb(totals['none'])} | {kb(totals['gzip'])} | {kb(totals['browser'])} | |")
    print("\nplotly.min.js asked again with its validators (a stale copy): "
          + revalidated(client, staticfiles_storage.url("plotly/plotly.min.js")))

    # The embedded default (`make run`): DEBUG on, files served from where the finders find them.
    with override_settings(DEBUG=True, WHITENOISE_USE_FINDERS=True, WHITENOISE_AUTOREFRESH=True):
        client = Client()
        found = {name: fetch(client, "/static/plotly/plotly.min.js", accept) for name, accept in ENCODINGS}
        again = revalidated(client, "/static/plotly/plotly.min.js")
    cells = [f"{kb(size)} ({encoding})" for size, encoding, _cache in found.values()]
    sizes = ", ".join(f"{name} {cell}" for name, cell in zip(found, cells, strict=True))
    print(f"\nplotly.min.js as `make run` serves it (DEBUG, finders, no manifest): {sizes}; "
          f"Cache-Control {found['none'][2]}; asked again with its validators: {again}")


if __name__ == "__main__":
    main()
