"""What `medibio book` shows while it works and when it ends, on tiny fake chapters (not the real ones).

The chapters run in Jupyter kernels whose cell outputs become the page; their progress (a bar with the time
left, a line per finished run) must reach the terminal that started the build, never the page. At the end
the build prints a table of chapter times and where the HTML is; a failing chapter names its notebook, cell
and error, the others still build, and the exit code says something failed — also when the HTML build
itself fails. The build runs in a child process on a pseudo-terminal, as a person would start it; the HTML
step is replaced by a stub (jupyter-book is tested with the real chapters in test_notebooks.py).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import nbformat
import pytest

from medibio.core.paths import REPO_ROOT

WORK = '''\
import time
from medibio.core import progress

with chapter.quiet("training"):
    with progress.bar("fake BIOSSES seed 1 [tiny]", 12) as bar:
        for _ in range(12):
            time.sleep(0.25)
            bar.update(1)
    progress.say("✓ fake BIOSSES seed 1 [tiny]: test 42.00 (3 s)", kind="run", reused=False, seconds=3.0)
print("work done")
'''

DRIVER = '''\
import functools
import sys
from pathlib import Path

from medibio.book import build, chapters

base, mode = Path(sys.argv[1]), sys.argv[2]
build.CHAPTERS = tuple(chapters.TocEntry(slug, slug.replace("_", " ").title(), str(base / "src" / f"{slug}.ipynb"))
                       for slug in ("fake_one", "fake_bad", "fake_two"))


def html_stub(root, keep_going=False, finish=None):
    if mode == "html-fails":
        raise build.BookBuildError("jupyter-book build failed (exit 2):\\nWARNING: broken on purpose")
    html = Path(root) / "_build" / "html"
    html.mkdir(parents=True, exist_ok=True)
    (html / "index.html").write_text("<html></html>")
    if finish is not None:  # the run pages
        finish(html)
    return html


build.build_html = html_stub
build.build_book = functools.partial(build.build_book, root=build.book_root(base / "root"))
from medibio.cli.main import main  # noqa: E402

main(["book", "--profile", "smoke", "--keep-going", "--results-root", str(base / "results")])
'''


def _notebook(path: Path, *cells: str) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "cpu"\ndata_root = ""\nresults_root = ""')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}"), params,
                *(nbformat.v4.new_code_cell(c) for c in cells)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def _build(base: Path, mode: str) -> tuple[int, str, str]:
    """Run the driver with stderr on a pseudo-terminal (what `make book` in a terminal has); return the exit
    code, the terminal's text and stdout."""
    src = base / "src"
    src.mkdir(parents=True)
    setup = 'from medibio.book import notebook as nb\nchapter = nb.setup("{}", profile, data_root, results_root)'
    _notebook(src / "fake_one.ipynb", setup.format("fake_one"), WORK)
    _notebook(src / "fake_bad.ipynb", "x = 1", "raise ValueError('broken on purpose')", "y = 2")
    _notebook(src / "fake_two.ipynb", "print(profile)")
    (base / "driver.py").write_text(DRIVER, encoding="utf-8")
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # 40 rows, 120 columns
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(main, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {k: v for k, v in os.environ.items() if k not in ("MEDIBIO_PROGRESS", "TQDM_DISABLE")}
    proc = subprocess.run([sys.executable, str(base / "driver.py"), str(base), mode], cwd=REPO_ROOT, env=env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=child, timeout=600)
    os.close(child)
    reader.join(timeout=10)
    os.close(main)
    terminal = b"".join(chunks).decode("utf-8", errors="replace")
    return proc.returncode, terminal, proc.stdout.decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, int, str, str]:
    base = tmp_path_factory.mktemp("progress")
    return (base, *_build(base, "ok"))


@pytest.mark.slow
def test_terminal_shows_chapters_bars_with_time_left_and_finished_runs(built) -> None:
    _, _, terminal, _ = built
    assert re.search(r"▶ \[1/3\] Fake One", terminal), terminal
    bars = re.findall(r"fake BIOSSES seed 1 \[tiny\]:\s+\d+%\|[^|\r\n]*\| *(\d+)/12 \[(\d\d:\d\d)<(\d\d:\d\d)", terminal)
    assert bars, terminal  # a bar with elapsed<left
    assert any(0 < int(done) < 12 and left != "00:00" for done, _, left in bars), bars  # an estimate while it ran
    assert "✓ fake BIOSSES seed 1 [tiny]: test 42.00" in terminal
    assert re.search(r"✓ fake_one: executed \(\d+\.\d s\)", terminal)


def test_page_gets_no_progress_lines(built) -> None:
    base = built[0]
    executed = nbformat.read(str(base / "root" / "book" / "fake_one.ipynb"), as_version=4)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "work done" in text
    assert "%|" not in text and "step/s" not in text and "\r" not in text  # no tqdm bar on the page
    assert "[training]" not in text  # the run summary is a progress line: the terminal's, not the reader's


def test_a_failing_chapter_is_named_and_the_others_still_build(built) -> None:
    base, code, terminal, stdout = built
    assert code == 1
    assert re.search(r"✗ fake_bad: FAILED at cell 3 \(In \[\d+\]\) `raise ValueError\('broken on purpose'\)`: "
                     r"ValueError: broken on purpose", terminal), terminal
    assert "✓ fake_two: executed" in terminal and (base / "root" / "book" / "fake_two.ipynb").is_file()
    assert "1 chapter(s) failed: fake_bad" in terminal


def test_the_end_prints_the_timing_table_and_the_html(built) -> None:
    base, _, _, stdout = built
    table = stdout[stdout.index("chapter "):]
    for slug, status in (("fake_one", "executed"), ("fake_bad", "failed"), ("fake_two", "executed")):
        assert re.search(rf"^{slug}\s+{status}\s+\d:\d\d:\d\d", table, re.M), table
    assert "cell 3: ValueError: broken on purpose" in table
    assert re.search(r"^notebooks\s+\d:\d\d:\d\d$", table, re.M) and re.search(r"^html\s+\d:\d\d:\d\d$", table, re.M)
    assert f"book: {base / 'root' / '_build' / 'html'}/index.html" in stdout


@pytest.mark.slow
def test_a_failed_html_build_still_prints_the_timing_table(tmp_path) -> None:
    code, terminal, stdout = _build(tmp_path, "html-fails")
    assert code == 1
    assert re.search(r"^fake_two\s+executed", stdout, re.M) and re.search(r"^html\s+failed", stdout, re.M)
    assert "index.html" not in stdout
    assert "the HTML build failed: jupyter-book build failed (exit 2)" in terminal
    assert "broken on purpose" in terminal


def test_a_terminal_without_a_size_still_gets_the_bar() -> None:
    """A pseudo-terminal that reports 0 x 0 (script, some CI runners): tqdm alone would hide the bar."""
    main, child = pty.openpty()
    code = ("import time\nfrom medibio.core import progress\nwith progress.bar('sizeless', 4) as bar:\n"
            "    for _ in range(4):\n        time.sleep(0.3)\n        bar.update(1)\n")
    env = {k: v for k, v in os.environ.items() if k != "MEDIBIO_PROGRESS"}
    subprocess.run([sys.executable, "-c", code], env=env, stderr=child, stdout=subprocess.DEVNULL, timeout=60,
                   check=True)
    os.close(child)
    seen = os.read(main, 65536).decode("utf-8", errors="replace")
    os.close(main)
    assert re.search(r"sizeless:\s+\d+%\|.*\| [1-3]/4 \[00:0\d<00:0\d", seen), repr(seen)


def test_a_chapter_quiets_transformers_and_datasets_without_importing_them() -> None:
    """A chapter opened in JupyterLab (no book environment) gets transformers and datasets without progress bars
    and advisories whether or not it imports them, and one that never does pays for neither import; this
    library's own bars stay on (TQDM_DISABLE is left alone)."""
    code = """
import os, sys
for name in ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY",
             "DATASETS_VERBOSITY", "TRANSFORMERS_NO_ADVISORY_WARNINGS", "TQDM_DISABLE"):
    os.environ.pop(name, None)
from medibio.book import notebook
notebook.quiet_libraries()
print("datasets" in sys.modules, "transformers" in sys.modules)
from datasets.utils import are_progress_bars_disabled, logging as datasets_logging
from transformers.utils import logging as hf_logging
print(hf_logging.get_verbosity() == hf_logging.ERROR, hf_logging.is_progress_bar_enabled(),
      datasets_logging.get_verbosity() == datasets_logging.ERROR, are_progress_bars_disabled(),
      "TQDM_DISABLE" in os.environ)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["False False", "True False True True False"]
