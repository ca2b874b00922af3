"""Where a training step's time goes: ``torch.profiler`` over steps of a token task, a sequence task and SciERC.

Each step runs under four labels, in the engine's order: ``collate`` (the DataLoader making the next batch),
``forward`` (under the run's autocast), ``backward``, ``optimizer`` (gradient clipping, the AdamW step,
``zero_grad``). The self CPU time of every operator is put into one class:

    matmul       aten::mm, addmm, linear, matmul (dense layers, forward and backward)
    attention    aten::bmm, baddbmm, softmax and its backward, scaled-dot-product attention (the S x S part)
    cast         aten::_to_copy, copy_, to (autocast's bf16 copies of weights and activations)
    random       aten::bernoulli_ and the other random draws: dropout's masks (one number per element of
                 every dropped activation, attention probabilities included)
    elementwise  every other operator under forward or backward (GELU, layer norm, dropout, add, embedding...)
    optimizer    every operator under the optimizer label
    collation    the collate label (its operators and its Python)
    python       time inside forward, backward or optimizer that no operator accounts for (the interpreter,
                 the dispatcher, autograd bookkeeping)

The shares are of the profiled steps' wall time (``ms/step``); the profiler's own overhead inflates the
python share a little. SciERC's span heads are matmuls and element-wise operators like the encoder's.

    python -m benchmarks.profile_step                         # BC5-chem, GAD, SciERC on the cpu profile
    python -m benchmarks.profile_step --workloads GAD --steps 16 --json
    python -m benchmarks.profile_step --workloads GAD --top 12     # and the operators that cost the most
    python -m benchmarks.profile_step --workloads BC5-chem --warmup 17 --steps 16   # steady state: after an epoch
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from medibio.core.settings import Settings

LABELS = ("collate", "forward", "backward", "optimizer")
CLASSES = ("matmul", "attention", "cast", "random", "elementwise", "optimizer", "collation", "python")
MATMUL = {"aten::mm", "aten::addmm", "aten::linear", "aten::matmul", "aten::addmv", "aten::mv", "aten::dot"}
ATTENTION = {"aten::bmm", "aten::baddbmm", "aten::softmax", "aten::_softmax", "aten::_softmax_backward_data",
             "aten::_safe_softmax"}
CAST = {"aten::_to_copy", "aten::copy_", "aten::to", "aten::type_as"}
RANDOM = {"aten::bernoulli_", "aten::bernoulli", "aten::uniform_", "aten::random_", "aten::normal_",
          "aten::native_dropout"}
DEFAULT_WORKLOADS = ("BC5-chem", "GAD", "SciERC")


def classify(name: str, label: str) -> str:
    """The class of an operator that ran under ``label`` (module docstring)."""
    if label == "collate":
        return "collation"
    if label == "optimizer":
        return "optimizer"
    if name in MATMUL:
        return "matmul"
    if name in ATTENTION or "scaled_dot_product" in name:
        return "attention"
    if name in CAST:
        return "cast"
    if name in RANDOM:
        return "random"
    return "elementwise"


def breakdown(events: Any) -> dict[str, float]:
    """Microseconds per class over the profiled ``events`` (``profiler.events()``)."""
    totals = dict.fromkeys(CLASSES, 0.0)
    for event in events:
        if event.name in LABELS:
            totals["collation" if event.name == "collate" else "python"] += event.self_cpu_time_total
            continue
        label = _label_of(event)
        if label is not None:
            totals[classify(event.name, label)] += event.self_cpu_time_total
    return totals


def _label_of(event: Any) -> str | None:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name in LABELS:
            return parent.name
        parent = parent.cpu_parent
    return None


def profile(step: Callable[[Any], Any], batches: Callable[[], Iterator[Any]], optimizer_step: Callable[[], None],
            steps: int, warmup: int = 2, top: int = 0) -> dict[str, Any]:
    """Profile ``steps`` steps after ``warmup`` unprofiled ones: ``step(batch)`` returns the loss; ``top``: also
    the operators with the most self time (ms per step and share of the step)."""
    import torch
    from torch.profiler import ProfilerActivity, record_function

    def run(n: int) -> None:
        source = batches()
        for _ in range(n):
            with record_function("collate"):
                batch = next(source)
            with record_function("forward"):
                loss = step(batch)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer"):
                optimizer_step()

    run(warmup)
    start = time.perf_counter()
    with torch.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
        run(steps)
    wall = time.perf_counter() - start
    totals = breakdown(prof.events())
    accounted = sum(totals.values())
    return {"steps": steps, "ms_per_step": round(1000 * wall / steps, 2),
            "accounted_share": round(accounted / 1e6 / wall, 3),
            "share": {k: round(v / accounted, 4) if accounted else 0.0 for k, v in totals.items()},
            "ms_per_step_by_class": {k: round(v / 1000 / steps, 2) for k, v in totals.items()},
            "torch_threads": torch.get_num_threads(),
            "top_operators": [{"operator": e.key, "ms_per_step": round(e.self_cpu_time_total / 1000 / steps, 2),
                               "share": round(e.self_cpu_time_total / 1e6 / wall, 4), "calls_per_step": e.count / steps}
                              for e in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:top]]}


def _endless(loader: Any) -> Iterator[Any]:
    while True:
        yield from loader


def blurb_workload(task: str, profile_name: str, examples: int, settings: Settings) -> tuple[Any, ...]:
    """A BLURB task as the engine trains it (:func:`benchmarks.finetune_engine.prepare`)."""
    import torch

    from benchmarks.finetune_engine import prepare

    engine = prepare(task, examples=examples, profile=profile_name, settings=settings)
    engine.model.train()
    train_loader, _, _ = engine.loader("train", True, engine.cfg.batch_size)

    def step(batch: dict) -> Any:
        with engine.autocast():
            return engine.model(**engine.to_device(batch)).loss

    def optimizer_step() -> None:
        torch.nn.utils.clip_grad_norm_(engine.model.parameters(), engine.cfg.max_grad_norm)
        engine.optimizer.step()
        engine.optimizer.zero_grad()

    return step, lambda: _endless(train_loader), optimizer_step, {
        "batch_size": engine.cfg.batch_size, "precision": "bf16" if engine.use_amp else "fp32"}


def scierc_workload(profile_name: str, docs: int, settings: Settings) -> tuple[Any, ...]:
    """SciERC's joint span model as its runner trains it, in a step after the first epoch (where the frozen
    layers' output is kept, :mod:`medibio.models.split`, it is computed for every document first)."""
    import torch

    from medibio.core.precision import precision_for
    from medibio.models import heads as modeling
    from medibio.models import zoo
    from medibio.models.dropout import use_cheap_dropout
    from medibio.scierc import presets, runner
    from medibio.scierc.task import SciercTask
    from medibio.tasks import scierc as data
    from medibio.tasks.spec import Problem
    from medibio.training.loop import stability_options
    from medibio.training.stability import make_optimizer

    prof = settings.profile(profile_name)
    cfg = presets.preset(prof)
    plan = runner.plan_run(None, 1, prof, None, settings)
    source = zoo.resolve(plan.job.model, settings.cache_root)
    tokenizer = modeling.load_tokenizer(source, Problem.TOKEN)
    task = SciercTask({"train": data.load_split("train", settings.data_root)[:docs]}, tokenizer, cfg,
                      ("ner", "relation", "coref"))
    net = runner._build(plan.job, source, task.heads, typed=False)
    use_cheap_dropout(net, "cpu")  # as fit() does
    net.train()
    fcfg = cfg.finetune_config()
    optimizer = make_optimizer(runner._groups(net, cfg), lr=fcfg.learning_rate, opts=stability_options(fcfg))
    loader, _ = task.setup(None, fcfg.batch_size, 1, [])
    use_amp = precision_for(requested=cfg.mixed_precision) == "bf16"
    if net.split is not None:  # a step after the first epoch: every document's frozen-layer output is kept
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_amp):
            for batch in loader:
                net.span_embeddings(batch)

    def step(batch: dict) -> Any:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_amp):
            return net(batch)["loss"]

    def optimizer_step() -> None:
        torch.nn.utils.clip_grad_norm_(net.parameters(), fcfg.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad()

    return step, lambda: _endless(loader), optimizer_step, {
        "batch_size": fcfg.batch_size, "precision": "bf16" if use_amp else "fp32"}


def run(workloads: tuple[str, ...], profile_name: str, steps: int, examples: int,
        settings: Settings, top: int = 0, warmup: int = 2) -> list[dict[str, Any]]:
    rows = []
    for name in workloads:
        if name == "SciERC":
            step, batches, opt, info = scierc_workload(profile_name, examples, settings)
        else:
            step, batches, opt, info = blurb_workload(name, profile_name, examples, settings)
        rows.append({"workload": name, "profile": profile_name, **info, **profile(step, batches, opt, steps, warmup, top)})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = f"{'workload':<10} {'ms/step':>8} " + " ".join(f"{c:>11}" for c in CLASSES)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['workload']:<10} {r['ms_per_step']:8.1f} "
                     + " ".join(f"{100 * r['share'][c]:10.1f}%" for c in CLASSES))
    for r in rows:
        if r["top_operators"]:
            lines.append(f"\n{r['workload']}: operators with the most self time (ms per step, share of the step)")
            lines += [f"  {o['operator']:<36} {o['ms_per_step']:8.1f} {100 * o['share']:6.1f}%  "
                      f"({o['calls_per_step']:g} calls)" for o in r["top_operators"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS),
                        help="comma list of BLURB datasets and/or SciERC")
    parser.add_argument("--profile", default="cpu", help="whose batch sizes, lengths and precision")
    parser.add_argument("--steps", type=int, default=8, help="profiled steps (after the warm-up steps)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="unprofiled steps first; a whole epoch (examples / batch size + 1) profiles steady-state "
                             "steps, whose batch shapes already have their oneDNN kernels")
    parser.add_argument("--examples", type=int, default=256, help="training examples (SciERC: documents) sampled")
    parser.add_argument("--top", type=int, default=0, help="also list the N operators with the most self time")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    settings = Settings.from_env()  # this command is a boundary
    rows = run(tuple(w for w in args.workloads.split(",") if w), args.profile, args.steps, args.examples, settings,
               top=args.top, warmup=args.warmup)
    print(json.dumps(rows, indent=2) if args.json else table(rows))


if __name__ == "__main__":
    main()
