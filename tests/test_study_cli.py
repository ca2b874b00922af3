"""The study's command line (``medibio study ...``, :mod:`medibio.cli.study`): a unit says by its exit status
whether its run finished, a queue goes on by those statuses and stops at any other, and the study root comes
from ``--work-root``, else ``$MEDIBIO_STUDY_ROOT``, else its default. No training: the launcher and the unit's
run are stand-ins."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from medibio.cli import study as study_cli
from medibio.core import launch
from medibio.core.settings import DEFAULT_STUDY_ROOT, STUDY_ENV, Settings
from medibio.experiments import table5 as design
from tests.support.cli import run_main


class Children:
    """A stand-in for :func:`medibio.core.launch.run`: records each child's command line (after
    ``python -m medibio``) and answers with the exit status ``status(argv, times seen before)`` says."""

    def __init__(self, status) -> None:
        self.calls: list[list[str]] = []
        self.status = status

    def __call__(self, cmd: Sequence[str], settings: Any = None, extra: Any = None, **kwargs: Any):
        assert list(cmd[:3]) == [sys.executable, "-m", "medibio"] and extra == {"OMP_NUM_THREADS": "1",
                                                                               "MKL_NUM_THREADS": "1"}
        argv = list(cmd[3:])
        code = self.status(argv, sum(call == argv for call in self.calls))
        self.calls.append(argv)
        return subprocess.CompletedProcess(list(cmd), code)


@pytest.fixture
def children(monkeypatch):
    """Install a :class:`Children` with the given status function; the queue yields no CPU here."""
    monkeypatch.setattr(launch, "yield_to_interactive_work", lambda: False)
    monkeypatch.delenv(STUDY_ENV, raising=False)

    def install(status) -> Children:
        fake = Children(status)
        monkeypatch.setattr(launch, "run", fake)
        return fake

    return install


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_a_queue_runs_units_until_one_exits_0_then_the_next_step(children, tmp_path: Path, capsys) -> None:
    # each pretraining run stops at a checkpoint twice (exit 3) and finishes in its third unit
    fake = children(lambda argv, seen: study_cli.UNIT_STOPPED if argv[1] == "unit" and seen < 2 else 0)
    code, out, err = run_main(["study", "queue", "a", "--work-root", str(tmp_path)], capsys)
    assert code == 0, err
    expected = []
    for step, arm, seed in design.STUDY.queues["a"]:
        verb = "unit" if step == "pretrain" else "finetune"
        expected += [(verb, arm, str(seed))] * (3 if step == "pretrain" else 1)
    seeds = {"unit": "--seed", "finetune": "--pretrain-seeds"}
    assert [(c[1], _option(c, "--arm"), _option(c, seeds[c[1]])) for c in fake.calls] == expected
    assert {_option(c, "--work-root") for c in fake.calls} == {str(tmp_path)}
    assert {_option(c, "--tokens") for c in fake.calls} == {str(design.TOKENS)}
    assert out.splitlines()[0] == "queue a: pretrain #3 seed 1" and not err


@pytest.mark.parametrize("fails, code", [("unit", 1), ("unit", 2), ("finetune", 1), ("finetune", 3), ("unit", -15)])
def test_any_other_exit_status_stops_the_queue_in_one_line_naming_the_step(children, tmp_path: Path, capsys,
                                                                           fails: str, code: int) -> None:
    """A unit's error (1, 2), a fine-tuning step's error, even one exiting 3 (only a unit's 3 means "go on"), and
    a child killed by a signal all stop the queue at that step: later steps do not start on a failed one."""
    first = next(k for k, (step, _, _) in enumerate(design.STUDY.queues["b"]) if (step == "pretrain") == (fails == "unit"))
    step, arm, seed = design.STUDY.queues["b"][first]
    fake = children(lambda argv, seen: code if argv[1] == fails and _option(argv, "--arm") == arm else 0)
    exit_code, _, err = run_main(["study", "queue", "b", "--work-root", str(tmp_path)], capsys)
    line = err.strip()
    assert exit_code != 0 and "\n" not in line and "Traceback" not in line
    assert f"queue b: step {step} #{arm} seed {seed} failed" in line and f"exited with status {code}" in line
    assert f"medibio study {fails} --arm {arm}" in line
    assert len(fake.calls) == first + 1  # nothing after the failed step, and a failed unit is not run again


def test_a_queue_hands_its_children_the_study_root_of_its_environment(children, monkeypatch, tmp_path: Path,
                                                                      capsys) -> None:
    fake = children(lambda argv, seen: 0)
    monkeypatch.setenv(STUDY_ENV, str(tmp_path / "from-env"))
    code, _, err = run_main(["study", "queue", "a"], capsys)
    assert code == 0, err
    assert {_option(c, "--work-root") for c in fake.calls} == {str(tmp_path / "from-env")}


def _captured_unit(monkeypatch, result: Any) -> list[Settings]:
    """Make ``run_unit`` return ``result`` and record the settings it was given."""
    from medibio.experiments import study

    seen: list[Settings] = []

    def run_unit(arm, seed, tokens, settings, unit_steps=25, config=design.CONFIG, progress=False):
        assert (arm, seed, tokens, unit_steps) == (design.STUDY.get_arm("3"), 1, design.TOKENS, 25)
        seen.append(settings)
        return result

    monkeypatch.setattr(study, "run_unit", run_unit)
    return seen


def test_a_unit_that_stopped_at_a_checkpoint_exits_3_and_a_finished_one_0(monkeypatch, tmp_path: Path,
                                                                          capsys) -> None:
    argv = ["study", "unit", "--arm", "3", "--seed", "1", "--work-root", str(tmp_path)]
    _captured_unit(monkeypatch, 75)
    code, out, _ = run_main(argv, capsys)
    assert code == study_cli.UNIT_STOPPED == 3
    assert out.strip() == "arm #3 seed 1: stopped at step 75; run the command again to go on"

    record = SimpleNamespace(details={"steps_done": 1_221}, path=lambda root: Path(root) / "the-record.json")
    _captured_unit(monkeypatch, record)
    code, out, _ = run_main(argv, capsys)
    assert code == 0
    assert out.strip() == f"arm #3 seed 1: finished, 1221 steps -> {tmp_path / 'results' / 'the-record.json'}"


def test_the_study_root_comes_from_the_option_else_the_environment_else_the_default(monkeypatch, tmp_path: Path,
                                                                                   capsys) -> None:
    seen = _captured_unit(monkeypatch, 25)
    argv = ["study", "unit", "--arm", "3", "--seed", "1"]
    monkeypatch.delenv(STUDY_ENV, raising=False)
    run_main(argv, capsys)
    monkeypatch.setenv(STUDY_ENV, str(tmp_path / "env"))
    run_main(argv, capsys)
    run_main([*argv, "--work-root", str(tmp_path / "option")], capsys)  # the option wins over the environment
    default = DEFAULT_STUDY_ROOT.expanduser()
    assert default == Path.home() / ".cache" / "medibio-study"
    for settings, root in zip(seen, (default, tmp_path / "env", tmp_path / "option"), strict=True):
        assert (settings.study_root, settings.results_root, settings.cache_root) == (root, root / "results",
                                                                                    root / "cache")


def test_the_study_root_is_a_setting_a_child_process_receives(tmp_path: Path) -> None:
    assert Settings.from_env({}).study_root == DEFAULT_STUDY_ROOT.expanduser()
    made = Settings.from_env({STUDY_ENV: str(tmp_path / "study")})
    assert made.study_root == tmp_path / "study"
    assert Settings.from_env(made.to_env()) == made
    assert Settings.from_env({STUDY_ENV: str(tmp_path / "study")}, study_root=tmp_path / "flag").study_root == \
        tmp_path / "flag"


def test_status_names_a_missing_study_root_from_the_environment(monkeypatch, tmp_path: Path, capsys) -> None:
    missing = tmp_path / "no-such-study"
    monkeypatch.setenv(STUDY_ENV, str(missing))
    code, out, err = run_main(["study", "status"], capsys)
    line = err.strip()
    assert code == 2 and "\n" not in line and not out
    assert f"{missing}: no such folder" in line and f"--work-root or ${STUDY_ENV}" in line
    assert not missing.exists()


def test_the_command_line_reads_the_study_design_without_torch() -> None:
    """``medibio --help`` and a queue's long-lived parent load no torch: the study's defaults and names are in
    :mod:`medibio.experiments.table5`, which loads no torch; the arm's runs are tagged by the design."""
    probe = ("import sys, medibio.cli.main, medibio.cli.study as s; "
             "print('torch' in sys.modules, s.study_app.registered_commands[0].name)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "unit"]
    assert design.STUDY.tag(design.STUDY.get_arm("#3")) == "study-3" == design.study_variant("3")


def test_a_study_unit_plans_in_the_declared_fp32_on_a_cpu_with_native_bf16(monkeypatch, tmp_path: Path,
                                                                            capsys) -> None:
    """The study declares fp32; its configuration asks for ``auto``, so on a CPU with AMX or AVX512-BF16 a unit
    would pretrain in bf16 unless the study's commands switch native bf16 off (which a queue's children inherit)."""
    from medibio.core import precision
    from medibio.core.settings import CPU_BF16_ENV

    monkeypatch.setenv(CPU_BF16_ENV, "")  # restored afterwards, the command's own setting included
    monkeypatch.delenv(CPU_BF16_ENV)
    monkeypatch.setattr(precision, "_native_bf16", True)  # the process-wide switch too
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "flags\t\t: avx512f amx_bf16\n")
    assert precision.precision_for(requested="auto") == "bf16"
    used: list[str] = []

    def run_unit(arm, seed, tokens, settings, unit_steps=25, config=design.CONFIG, progress=False):
        used.append(precision.precision_for(requested="auto"))
        return 25

    from medibio.experiments import study

    monkeypatch.setattr(study, "run_unit", run_unit)
    code, _, err = run_main(["study", "unit", "--arm", "3", "--seed", "1", "--work-root", str(tmp_path)], capsys)
    assert code == study_cli.UNIT_STOPPED, err
    assert design.PRECISION == "fp32" and used == ["no"]
