"""Does warming MiniLM's new MLM head up, with the encoder frozen, help its continued pretraining (issue 40)?

MiniLM ships no MLM head, so the study's arm #2 (MiniLM continued on SumPubMed abstracts) starts with a
random one. Learning it alone first, the encoder frozen (the trainer's ``head_warmup_steps``), would keep the
random head's gradients from the pretrained encoder. This runs the arm's first ``--steps`` steps twice, from the
same seed, on the same batches, masks, head initialisation and learning-rate schedule (the 1,221-step one,
stopped early): with the head alone for ``WARMUP_SHARE`` of the steps (61) and without, one process per core.
What it found (docs/pretraining.md) is why the study's MiniLM arms run without it. It prints each one's training
loss over the last ``--window`` steps and its held-out MLM loss on BLURB text at the last step
(:mod:`medibio.pretrain.heldout`, the measure the study's records hold). The two runs live in their own results
root under the work root (``head-warmup/``), not among the study's; a second call reuses their checkpoints.

    python -m benchmarks.head_warmup --steps 200
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

VARIANTS = ("warm-up", "none")
WARMUP_SHARE = 0.05  # of the arm's steps: the head alone for 61 of 1,221


def _settings(work_root: Path, data_root: str | None) -> Any:
    from medibio.core.settings import Settings

    return Settings(results_root=work_root / "head-warmup" / "results", cache_root=work_root / "cache",
                    **({"data_root": Path(data_root)} if data_root else {}), progress=False)


def _config(variant: str, seed: int) -> Any:
    from medibio.experiments import table5

    config = table5.arm_config(table5.STUDY.arms["2"], seed, table5.TOKENS)
    return config.with_overrides(head_warmup_steps=round(config.max_steps * WARMUP_SHARE) if variant == "warm-up"
                                 else 0)


def _tokenizer(settings: Any, config: Any, folder: Path) -> tuple[str, Any]:
    """MiniLM's place and its tokenizer in the SumPubMed form, as the trainer prepares them for arm #2."""
    from medibio.experiments import table5
    from medibio.models import zoo
    from medibio.pretrain.trainer import prepare_tokenizer

    arm = table5.STUDY.arms["2"]
    init = zoo.resolve(arm.init, settings.cache_root)
    return init, prepare_tokenizer(config, arm.corpus, arm.text, folder, init, settings.data_root)


def train(variant: str, steps: int, seed: int, work_root: Path, data_root: str | None) -> Path:
    """Train one variant to ``steps`` (resuming its checkpoints) and return its work folder."""
    from medibio.experiments import table5
    from medibio.pretrain.plan import effective_config, plan_pretraining
    from medibio.pretrain.trainer import Stopped, latest_checkpoint, run_pretraining

    settings, config, arm = _settings(work_root, data_root), _config(variant, seed), table5.STUDY.arms["2"]
    tag = f"head-{variant}"
    plan = plan_pretraining(effective_config(config), arm.corpus, arm.text, arm.init, None, tag, settings)
    folder = plan.key.work_path(settings.results_root)
    ckpt = latest_checkpoint(folder)
    if ckpt is None or int(ckpt.name.split("-")[1]) < steps:
        try:
            run_pretraining(config, arm.corpus, arm.text, init=arm.init, stop_after=steps, tag=tag,
                            settings=settings, progress=True)
        except Stopped as stopped:
            folder = stopped.workdir
    return folder


def measure(variant: str, folder: Path, seed: int, window: int, data_root: str | None, work_root: Path) -> dict:
    """Training loss over the last ``window`` steps and held-out MLM loss of the newest checkpoint."""
    import safetensors.torch
    import torch

    from medibio.pretrain.heldout import heldout_loss
    from medibio.pretrain.mlm import load_checkpoint
    from medibio.pretrain.trainer import STATE_FILE, latest_checkpoint

    settings, config = _settings(work_root, data_root), _config(variant, seed)
    ckpt = latest_checkpoint(folder)
    state = json.loads((ckpt / STATE_FILE).read_text())
    init, tokenizer = _tokenizer(settings, config, folder)
    torch.manual_seed(seed)
    lm = load_checkpoint(init)[0]
    lm.resize_token_embeddings(len(tokenizer))
    weights = {k.removeprefix("lm."): v for k, v in safetensors.torch.load_file(str(ckpt / "model.safetensors")).items()}
    missing, unexpected = lm.load_state_dict(weights, strict=False)
    lm.tie_weights()
    if unexpected or any(".decoder." not in k for k in missing):  # the decoder, tied to the embeddings, is saved once
        raise RuntimeError(f"{ckpt}: weights do not fit MiniLM with its head: missing {missing}, unexpected {unexpected}")
    last = [p for p in state["curve"] if p["step"] > state["step"] - window]
    held = heldout_loss(lm, tokenizer, config, settings.data_root, config.heldout_per_set)
    return {"variant": variant, "step": state["step"], "head_warmup_steps": config.head_warmup_steps,
            "train_loss_last": sum(p["loss"] for p in last) / len(last), "window_steps": window,
            "heldout_loss": held["loss"], "heldout_pieces": held["masked_pieces"],
            "train_s": state["elapsed_s"], "curve": [(p["step"], round(p["loss"], 4)) for p in state["curve"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps of each run (a multiple of 25)")
    parser.add_argument("--window", type=int, default=25, help="steps whose training loss is averaged")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-root", type=Path, default=None, help="default: the study's ($MEDIBIO_STUDY_ROOT, "
                        "else ~/.cache/medibio-study)")
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--only", choices=VARIANTS, default=None, help="train one variant (the parent runs both)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from medibio.core.settings import Settings

    work_root = args.work_root or Settings.from_env().study_root
    common = ["--steps", str(args.steps), "--seed", str(args.seed), "--work-root", str(work_root),
              *(["--data-root", args.data_root] if args.data_root else [])]
    if args.only:
        print(train(args.only, args.steps, args.seed, work_root, args.data_root))
        return
    start = time.perf_counter()
    _build_blocks(work_root, args.data_root, args.seed)  # once, before two processes would both build it
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    children = [subprocess.Popen([sys.executable, "-m", "benchmarks.head_warmup", "--only", variant, *common],
                                 env=env, stdout=subprocess.PIPE, text=True) for variant in VARIANTS]
    folders = []
    for child in children:
        out, _ = child.communicate()
        if child.returncode:
            raise SystemExit(f"a training child failed (exit {child.returncode})")
        folders.append(Path(out.strip().splitlines()[-1]))
    results = [measure(v, f, args.seed, args.window, args.data_root, work_root) for v, f in zip(VARIANTS, folders,
                                                                                                  strict=True)]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{time.perf_counter() - start:.0f} s in all")
    for r in results:
        print(f"{r['variant']:>8} (head alone for {r['head_warmup_steps']} steps): step {r['step']}, training loss "
              f"over the last {r['window_steps']} steps {r['train_loss_last']:.3f}, held-out MLM loss "
              f"{r['heldout_loss']:.3f} ({r['heldout_pieces']:,} pieces), {r['train_s'] / r['step']:.1f} s/step")
    print("curves (step, loss):")
    for r in results:
        print(f"  {r['variant']}: {r['curve']}")


def _build_blocks(work_root: Path, data_root: str | None, seed: int) -> None:
    """MiniLM's block cache of the abstracts, as the trainer asks for it (the study's arm #2 reuses it)."""
    from medibio.experiments import table5
    from medibio.pretrain import corpus as corpora

    settings, config, arm = _settings(work_root, data_root), _config("warm-up", seed), table5.STUDY.arms["2"]
    tokenizer = _tokenizer(settings, config, work_root)[1]
    corpora.cached_blocks(arm.corpus, tokenizer, config.seq_length, variant=arm.text, root=settings.data_root,
                          max_mb=config.corpus_max_mb, cache=settings.cache_root)


if __name__ == "__main__":
    main()
