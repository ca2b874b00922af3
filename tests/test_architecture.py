"""The structure the code must keep: layered packages (import-linter), settings that never go through the
environment inside the library, and one run protocol that every kind of run uses."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "medibio"
# The one module that turns settings into environment variables for a process medibio starts.
ENV_WRITERS = {"core/launch.py"}
# The one module that reads the MEDIBIO_* variables (Settings.from_env), and the launcher, which copies the
# environment for a child process.
ENV_READERS = {"core/settings.py", "core/launch.py"}


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package under ``root`` with this repository's contract."""
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()", "--config", str(REPO / "pyproject.toml"), "--no-cache"],
                          cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)


def test_the_layers_contract_holds() -> None:
    proc = _lint_imports(REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 kept, 0 broken" in proc.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """A core module importing the book (inside a function, where a reader might not look) fails the check."""
    copy = tmp_path / "medibio"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    errors = copy / "core" / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") + "\n\ndef _upward():\n"
                      "    from medibio.book import chapters\n\n    return chapters\n", encoding="utf-8")
    proc = _lint_imports(tmp_path)
    assert proc.returncode != 0
    assert "medibio.core.errors -> medibio.book.chapters" in proc.stdout and "BROKEN" in proc.stdout


def _environ_uses(tree: ast.AST) -> tuple[list[int], list[int]]:
    """Line numbers where ``os.environ`` is written (assignment, deletion, mutating call, patch.dict) and
    where it (or ``os.getenv``) is read."""
    writes, reads = [], []

    def is_environ(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ"
                and isinstance(node.value, ast.Name) and node.value.id == "os")

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            writes += [node.lineno for t in targets if isinstance(t, ast.Subscript) and is_environ(t.value)]
        elif isinstance(node, ast.Call):
            func = node.func
            mutates_environ = (isinstance(func, ast.Attribute) and is_environ(func.value)
                               and func.attr in ("update", "setdefault", "pop", "popitem", "clear"))
            calls_putenv = (isinstance(func, ast.Attribute) and func.attr in ("putenv", "unsetenv")
                            and isinstance(func.value, ast.Name) and func.value.id == "os")
            if mutates_environ or calls_putenv:
                writes.append(node.lineno)
            elif isinstance(func, ast.Attribute) and func.attr == "dict" and node.args and is_environ(node.args[0]):
                writes.append(node.lineno)  # mock.patch.dict(os.environ, ...)
            elif isinstance(func, ast.Attribute) and func.attr == "getenv":
                reads.append(node.lineno)
        if is_environ(node):
            reads.append(node.lineno)
    return sorted(set(writes)), sorted(set(reads))


def test_the_library_never_writes_the_environment_and_reads_it_only_at_the_boundary() -> None:
    writers, readers = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        writes, reads = _environ_uses(ast.parse(path.read_text(encoding="utf-8")))
        if writes and name not in ENV_WRITERS:
            writers[name] = writes
        if reads and name not in ENV_READERS | ENV_WRITERS:
            readers[name] = reads
    assert not writers, f"os.environ written outside the launch helper: {writers}"
    assert not readers, f"os.environ read outside Settings.from_env and the launch helper: {readers}"


def test_the_scan_sees_every_way_of_writing(tmp_path: Path) -> None:
    source = ("import os\nfrom unittest import mock\nos.environ['A'] = '1'\nos.environ.update(B='2')\n"
              "del os.environ['A']\nos.putenv('C', '3')\nwith mock.patch.dict(os.environ, {'D': '4'}):\n    pass\n"
              "x = os.environ.get('E')\ny = os.getenv('F')\n")
    writes, reads = _environ_uses(ast.parse(source))
    assert writes == [3, 4, 5, 6, 7] and {9, 10} <= set(reads)


@pytest.mark.parametrize("kind", ["finetune", "frozen", "scierc", "ift-stage", "pretrain"])
def test_every_kind_of_run_goes_through_the_one_protocol(kind: str) -> None:
    """Each kind plans with medibio.runs.protocol.plan and is run by medibio.runs.protocol.run, whose plans
    stored requests again for ``medibio results list --stale``."""
    from medibio.results.listing import PLANNERS
    from medibio.runs import protocol
    from medibio.runs.records import KINDS

    assert kind in KINDS and PLANNERS[kind].name == kind
    planner = PLANNERS[kind]
    assert callable(planner.replan) and callable(planner.train) and callable(planner.describe)
    assert isinstance(planner, protocol.Kind)
    # the module that defines the kind hands its runs to protocol.run (and nothing but the protocol writes a record)
    module = Path(sys.modules[type(planner).__module__].__file__)
    calls = [node for node in ast.walk(ast.parse(module.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]
    assert any(c.func.attr == "run" and isinstance(c.func.value, ast.Name) and c.func.value.id == "protocol"
               for c in calls), f"{module.name} never calls protocol.run"
    writers = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
               if "write_record(" in p.read_text(encoding="utf-8")]
    assert sorted(writers) == ["runs/protocol.py", "runs/records.py"]


def test_no_package_file_is_ignored_by_git() -> None:
    """A fresh clone has every module: an ignore pattern such as ``results/`` once hid ``medibio/results``."""
    files = [str(p.relative_to(REPO)) for p in (REPO / "medibio").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *files], cwd=REPO, capture_output=True,
                             text=True).stdout.split()
    assert files and not ignored, f"ignored by .gitignore, so missing from a clone: {ignored}"


# Modules that are used without training or plotting: the data layer, the CLI's entry point, the settings, the
# experiments' designs and the modules the reading chapters (paper audit, claims, tables) compute with. They
# import the libraries that cost seconds (docs/architecture.md, "Deferred imports") only inside the functions
# that need them.
LIGHT_MODULES = ("medibio.cli.main", "medibio.core.settings", "medibio.core.profiles", "medibio.tasks.registry",
                 "medibio.tasks.loaders", "medibio.tasks.metrics", "medibio.tasks.datacheck",
                 "medibio.results.aggregate", "medibio.paper.audit", "medibio.paper.claims", "medibio.book.results",
                 "medibio.experiments.table5", "medibio.book.claims", "medibio.book.rules")
HEAVY_LIBRARIES = ("torch", "transformers", "accelerate", "datasets", "sklearn", "scipy", "seqeval", "seaborn",
                   "matplotlib", "papermill")


def test_the_light_modules_do_not_import_the_heavy_libraries() -> None:
    code = (f"import importlib, sys\nfor m in {LIGHT_MODULES!r}: importlib.import_module(m)\n"
            f"print(','.join(x for x in {HEAVY_LIBRARIES!r} if x in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", f"imported at module level: {proc.stdout.strip()}"
