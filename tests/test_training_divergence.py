"""A learning rate that makes training diverge stops the run at once with one line saying so and what to
change (issue 20, §5), instead of NaN predictions blamed on one test example, and leaves no record."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from medibio.core.precision import accelerator as make_accelerator
from medibio.training import loop
from medibio.training.config import FinetuneConfig
from tests.support.cli import run_main


def _epochs(losses: list[float], grad_accum: int = 1) -> loop._Loop:
    """Train a one-weight model whose loss at each batch is the next of ``losses`` (times the weight)."""
    weight = torch.nn.Parameter(torch.ones(1))
    model = torch.nn.Module()
    model.weight = weight
    optimizer = torch.optim.SGD([weight], lr=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    batches = iter(losses)
    cfg = FinetuneConfig(learning_rate=3e-5, grad_accum=grad_accum)
    acc = make_accelerator()
    return loop._train_epochs(model, optimizer, scheduler, list(range(len(losses))), None, cfg, acc, 1,
                              lambda _: weight.sum() * next(batches), lambda _: 1, lambda _: {"score": 1.0},
                              (), "test")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_loss_stops_at_its_step(bad: float) -> None:
    with pytest.raises(loop.TrainingDivergedError) as info:
        _epochs([1.0, 2.0, bad, 1.0])
    assert str(info.value) == ("the loss diverged (NaN/inf at step 3, epoch 1); lower --lr "
                               "(the learning rate was 3e-05)")


def test_finite_losses_train_on() -> None:
    assert _epochs([1.0, 2.0, 3.0]).step == 3


def test_nan_in_the_dev_outputs_is_divergence_too() -> None:
    with pytest.raises(loop.TrainingDivergedError, match=r"NaN/inf in the dev outputs after step 1, epoch 1"):
        weight = torch.nn.Parameter(torch.ones(1))
        model = torch.nn.Module()
        model.weight = weight
        optimizer = torch.optim.SGD([weight], lr=0.0)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)

        def dev(_: object) -> dict[str, float]:
            raise loop._NonFiniteOutputs("dev")

        loop._train_epochs(model, optimizer, scheduler, [0], None, FinetuneConfig(), make_accelerator(), 1,
                           lambda _: weight.sum(), lambda _: 1, dev, (), "test")


@pytest.mark.realdata
def test_lr_1e9_is_one_line_about_divergence(tmp_path: Path, data_root: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    code, out, err = run_main(["finetune", "--task", "BIOSSES", "--profile", "smoke", "--lr", "1e9", "--limit",
                               "16", "--data-root", str(data_root), "--results-root", str(results)], capsys)
    [line] = [x[x.index("error:"):] for x in err.replace("\r", "\n").splitlines() if "error:" in x]
    assert code == 2 and "Traceback" not in err, err
    assert "diverged (NaN/inf" in line and "lower --lr (the learning rate was 1e+09)" in line, line
    assert "example" not in line
    assert not [p for p in results.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]


class _TwoProcesses:
    """An accelerator of two processes whose other process reports ``other`` (1.0: not finite there)."""

    num_processes = 2
    device = "cpu"

    def __init__(self, other: float) -> None:
        self.other = other

    def reduce(self, tensor: torch.Tensor, reduction: str) -> torch.Tensor:
        assert reduction == "sum"
        return tensor + self.other


def test_every_process_takes_the_divergence_branch_together() -> None:
    """A NaN in one process stops all of them: a lone raise would leave the others in the next all-reduce."""
    assert loop._everywhere(_TwoProcesses(0.0), True)
    assert not loop._everywhere(_TwoProcesses(1.0), True)  # finite here, diverged in the other process
    assert not loop._everywhere(_TwoProcesses(0.0), False)
