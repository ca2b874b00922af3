"""Load time of run pages in headless Chromium: how long until a reader sees the first rows of predictions.

Writes the run pages of a results folder into a temporary HTML root (``medibio.book.runpages``), serves it
on localhost, and opens the chosen pages (default: JNLPBA's, the largest NER test set, and the largest page
written) ``--repeat`` times each in a fresh page of one headless Chromium, timing from navigation start to
the first table rows rendered by the page's script (also the browser's own load event). Prints one line per
page: its size, the median and slowest time.

    python -m benchmarks.run_page_load --results /work/after/results --profile cpu
    python -m benchmarks.run_page_load --html _build/html --pages finetune/cpu/minilm/base/JNLPBA
"""

from __future__ import annotations

import argparse
import functools
import http.server
import statistics
import tempfile
import threading
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
READY = "document.querySelectorAll('#examples-body tr').length > 0"


def _serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def measure(html: Path, pages: list[str], repeat: int) -> list[dict[str, object]]:
    """Seconds from navigation to the first rendered rows, per page (and the load event's time)."""
    from playwright.sync_api import sync_playwright

    server, base = _serve(html)
    out = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox",
                                                                          "--disable-gpu"])
            for rel in pages:
                times, loads, errors = [], [], []
                for _ in range(repeat):
                    page = browser.new_page(viewport={"width": 1280, "height": 900})
                    page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
                    page.on("pageerror", lambda exc, e=errors: e.append(str(exc)))
                    start = time.perf_counter()
                    page.goto(f"{base}/{rel}", wait_until="commit")
                    page.wait_for_function(READY, timeout=30_000)
                    times.append(time.perf_counter() - start)
                    page.wait_for_load_state("load")
                    loads.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
                    page.close()
                out.append({"page": rel, "bytes": (html / rel).stat().st_size, "median_s": statistics.median(times),
                            "max_s": max(times), "load_event_s": statistics.median(loads), "errors": errors})
            browser.close()
    finally:
        server.shutdown()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", help="results folder to render run pages from (into a temporary folder)")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--html", help="an HTML root that already has runs/ (instead of --results)")
    parser.add_argument("--pages", default="", help="comma list of run folders under runs/ (default: JNLPBA's "
                        "fine-tuning page and the largest page)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not args.results and not args.html:
        parser.error("give --results or --html")
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(args.html) if args.html else Path(tmp)
        if args.results:
            from medibio.book import runpages

            start = time.perf_counter()
            written = runpages.write_run_pages(args.results, args.profile, html, data_root=args.data_root)
            size = sum(p.stat().st_size for p in (html / runpages.RUNS_DIR).rglob("*") if p.is_file())
            print(f"wrote {len(written)} pages in {time.perf_counter() - start:.1f} s; runs/ holds {size / 1e6:.1f} MB")
        runs = html / "runs"
        if args.pages:
            chosen = [f"runs/{p.strip().strip('/')}" for p in args.pages.split(",")]
            pages = [str(next((html / c).rglob("index.html")).relative_to(html)) for c in chosen]
        else:
            listed = [p for p in runs.rglob("index.html") if "paired" not in p.parts and p.parent != runs]
            jnlpba = [p for p in listed if "JNLPBA" in p.parts and "finetune" in p.parts]
            largest = max(listed, key=lambda p: p.stat().st_size)
            pages = [str(p.relative_to(html)) for p in dict.fromkeys([*jnlpba, largest])]
        for row in measure(html, pages, args.repeat):
            print(f"{row['page']}: {row['bytes'] / 1e6:.2f} MB, first rows after {row['median_s']:.3f} s "
                  f"(median of {args.repeat}; slowest {row['max_s']:.3f} s), load event {row['load_event_s']:.3f} s, "
                  f"console errors: {len(row['errors'])}")


if __name__ == "__main__":
    main()
