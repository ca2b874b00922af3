"""Install what the book needs besides Python packages: a local MathJax 3 and a Jupyter kernel.

* MathJax: the book must render equations offline, so MathJax 3 comes from npm (``mathjax@3``) into
  ``.cache/mathjax/npm`` and the parts the CommonHTML renderer loads are copied to
  ``.cache/mathjax/static/mathjax/``. ``_config.yml`` lists ``.cache/mathjax/static`` as a Sphinx static
  path and sets ``mathjax_path: mathjax/tex-chtml.js``, so every built page loads it from ``_static``.
* Kernel: papermill starts notebooks with the ``medibio`` kernelspec, installed into this interpreter's
  prefix with an absolute path to this interpreter. A ``python3`` spec elsewhere on the Jupyter path (for
  example in ``~/.local``) can then never make the book run under another Python.

``python -m medibio.book.assets`` (run by ``make install``) does both; it is idempotent and fast when
everything is already in place.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from medibio.core.atomic import publish_folder
from medibio.core.errors import MedibioError
from medibio.core.paths import REPO_ROOT

MATHJAX_SPEC = "mathjax@3"
MATHJAX_ROOT = REPO_ROOT / ".cache" / "mathjax"
MATHJAX_STATIC = MATHJAX_ROOT / "static"  # listed in _config.yml (html_static_path)
MATHJAX_ENTRY = "tex-chtml.js"  # _config.yml: mathjax_path: mathjax/tex-chtml.js
# What tex-chtml.js may load lazily: TeX extensions, CHTML fonts, the menu and its accessibility tools.
_MATHJAX_PARTS = (MATHJAX_ENTRY, "input", "output", "a11y", "ui", "sre", "adaptors")

KERNEL_NAME = "medibio"


class AssetError(MedibioError):
    """An asset could not be installed; the message says what to install by hand."""


def mathjax_dir(static_root: Path = MATHJAX_STATIC) -> Path:
    """Folder that ends up as ``_static/mathjax`` in the built book."""
    return static_root / "mathjax"


def mathjax_ready(static_root: Path = MATHJAX_STATIC) -> bool:
    return (mathjax_dir(static_root) / MATHJAX_ENTRY).is_file()


def install_mathjax(root: Path = MATHJAX_ROOT, force: bool = False) -> Path:
    """Install MathJax 3 from npm and copy its browser build into ``root/static/mathjax``; return that."""
    target = mathjax_dir(root / "static")
    if mathjax_ready(root / "static") and not force:
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise AssetError("npm is needed once to install MathJax 3 for the book (offline equations): "
                         "install Node.js/npm (Debian: apt-get install npm) and re-run "
                         "`python -m medibio.book.assets`")
    prefix = root / "npm"
    prefix.mkdir(parents=True, exist_ok=True)
    cmd = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error", MATHJAX_SPEC]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    es5 = prefix / "node_modules" / "mathjax" / "es5"
    if proc.returncode != 0 or not (es5 / MATHJAX_ENTRY).is_file():
        raise AssetError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {proc.stderr.strip()[-600:]}")

    def copy(staging: Path) -> None:
        for part in _MATHJAX_PARTS:
            src = es5 / part
            if src.is_dir():
                shutil.copytree(src, staging / part)
            elif src.is_file():
                shutil.copy2(src, staging / part)

    return publish_folder(target, copy)  # the entry file appears only once the copy is complete


def kernel_spec_dir(prefix: str | Path = sys.prefix) -> Path:
    return Path(prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME


def install_kernel(prefix: str | Path = sys.prefix) -> Path:
    """Install the ``medibio`` kernelspec (this interpreter, absolute path) into ``prefix``; return its dir."""
    from ipykernel.kernelspec import install

    return Path(install(kernel_name=KERNEL_NAME, display_name="Python (medibio)", prefix=str(prefix)))


def kernel_ready(prefix: str | Path = sys.prefix) -> bool:
    """True when the kernelspec exists and starts *this* interpreter."""
    spec = kernel_spec_dir(prefix) / "kernel.json"
    if not spec.is_file():
        return False
    argv = json.loads(spec.read_text(encoding="utf-8")).get("argv", [])
    return bool(argv) and Path(argv[0]) == Path(sys.executable)


def ensure_all() -> dict[str, Path]:
    """Install whatever is missing (MathJax, kernel); return where each lives."""
    out = {"mathjax": install_mathjax()}
    out["kernel"] = kernel_spec_dir() if kernel_ready() else install_kernel()
    return out


def main() -> None:
    try:
        done = ensure_all()
    except MedibioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    for what, where in done.items():
        print(f"{what}: {where}")


if __name__ == "__main__":
    main()
