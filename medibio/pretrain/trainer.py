"""The masked-LM training loop (accelerate): AdamW, linear warm-up and decay, gradient accumulation, bf16 on
GPU, periodic checkpoints that a killed run resumes from, and a JSON run record with the training curves.

Resumability: a checkpoint is ``out/checkpoints/step-NNNNNNN/`` holding accelerate's ``save_state`` (model,
optimizer, scheduler, RNG states) and ``trainer_state.json`` (step, curve so far, data position), written
last so that its presence marks a complete checkpoint. The data order is a pure function of (seed, epoch)
and each micro-batch's masks a pure function of its position, so the data position is just the step count:
a resumed run sees exactly the batches, masks and dropout an uninterrupted run would.

Output: ``out/model/`` is a Hugging Face folder (config, weights, tokenizer) that ``medibio finetune --model``
and ``AutoModelFor{Token,Sequence}Classification.from_pretrained`` load; ``out/run.json`` is the record, with
the digest of the run's effective configuration (:mod:`medibio.pretrain.plan`) and the provenance every
record carries (:func:`medibio.provenance.environment`). ``out`` defaults to the folder that digest names.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from medibio import cores, provenance
from medibio.accel import accelerator as make_accelerator
from medibio.atomic import write_json
from medibio.errors import MedibioError
from medibio.paths import results_root
from medibio.pretrain.batching import BatchLayout, plan_batch
from medibio.pretrain.configs import PretrainConfig

SCHEMA = "medibio.pretrain.run/1"
STATE_FILE = "trainer_state.json"


class ResumeError(MedibioError, RuntimeError):
    """Checkpoints exist but resuming was not requested (or they belong to a different run)."""


def resolve_precision(setting: str) -> str:
    """'auto' -> on a GPU the one precision decision of :func:`medibio.accel.precision_for` (bf16 where
    native, loss-scaled fp16 elsewhere); on a CPU fp32, so CPU pretraining stays bit-for-bit resumable."""
    if setting != "auto":
        return setting
    import torch

    if torch.cuda.is_available():
        from medibio.accel import precision_for

        return precision_for(requested="auto")
    return "no"


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    """The newest complete checkpoint folder (one with ``trainer_state.json``), or None."""
    folder = Path(out_dir) / "checkpoints"
    done = sorted(p for p in folder.glob("step-*") if (p / STATE_FILE).exists()) if folder.is_dir() else []
    return done[-1] if done else None


class DataOrder:
    """Which block each example of each micro-batch reads: epoch-wise permutations of the block cache."""

    def __init__(self, n_blocks: int, seed: int) -> None:
        self.n = n_blocks
        self.seed = seed
        self._perms: dict[int, np.ndarray] = {}

    def _perm(self, epoch: int) -> np.ndarray:
        if epoch not in self._perms:
            self._perms = {epoch: np.random.default_rng([self.seed, epoch]).permutation(self.n)}
        return self._perms[epoch]

    def indices(self, step: int, micro: int, rank: int, layout: BatchLayout) -> np.ndarray:
        start = step * layout.effective + micro * layout.per_micro_step + rank * layout.per_device
        out = np.empty(layout.per_device, dtype=np.int64)
        for j, g in enumerate(range(start, start + layout.per_device)):
            out[j] = self._perm(g // self.n)[g % self.n]
        return out


def _peak_memory_mb(device_type: str) -> float:
    import torch

    if device_type == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _optimizer(model: Any, config: PretrainConfig):
    """AdamW with weight decay on weights only (not biases or LayerNorm), as in BERT/DeBERTa."""

    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    from medibio.finetune.stability import adamw

    return adamw(groups, lr=config.learning_rate, betas=config.adam_betas, eps=config.adam_eps)


def prepare_tokenizer(config: PretrainConfig, corpus: str, variant: str, out_dir: Path, init: str | None,
                      data_root: str | Path | None, tokenizer_dir: str | Path | None = None):
    """Continual: the checkpoint's own tokenizer. From scratch: ``tokenizer_dir`` or a new SentencePiece
    vocabulary trained on the corpus into ``out_dir/tokenizer`` (reused when already there)."""
    from transformers import AutoTokenizer

    if init is not None:
        from medibio.modelzoo import load_tokenizer

        return load_tokenizer(init)
    folder = Path(tokenizer_dir) if tokenizer_dir else out_dir / "tokenizer"
    if (folder / "tokenizer.json").exists():
        return AutoTokenizer.from_pretrained(str(folder))
    from medibio.pretrain.vocab import train_corpus_vocabulary

    building = folder.with_name(folder.name + ".building")
    if building.exists():
        shutil.rmtree(building)
    train_corpus_vocabulary(corpus, building, config.model.vocab_size, variant=variant,
                            max_mb=config.vocab_sample_mb, root=data_root)
    if folder.exists():
        shutil.rmtree(folder)
    building.rename(folder)
    return AutoTokenizer.from_pretrained(str(folder))


def complete_record(out_dir: str | Path, digest: str | None = None) -> dict[str, Any] | None:
    """The record of a finished run in ``out_dir`` (of configuration ``digest``, when given), else None."""
    rec = load_record(out_dir)
    if (rec and rec.get("status") == "complete" and (Path(out_dir) / "model" / "config.json").exists()
            and (digest is None or rec.get("config_digest") == digest)):
        return rec
    return None


def run_pretraining(config: PretrainConfig | str, corpus: str = "biomed-abstracts", variant: str = "abstract",
                    init: str | Path | None = None, out_dir: str | Path | None = None, resume: bool = False,
                    max_steps: int | None = None, effective_batch: int | None = None,
                    per_device_batch: int | None = None, stop_after: int | None = None,
                    data_root: str | Path | None = None, tokenizer_dir: str | Path | None = None,
                    tag: str = "custom", progress: bool = True, notes: list[str] | None = None) -> dict[str, Any]:
    """Pretrain a masked LM and return its run record (also written to ``run.json`` in its folder).

    ``init`` None trains from scratch (new vocabulary); otherwise it is a checkpoint folder or model name
    to continue from (its vocabulary is kept). Without ``out_dir`` the run lives in the folder its
    configuration's digest names (:mod:`medibio.pretrain.plan`): a finished run there is returned as it is,
    an interrupted one resumes, and a changed configuration gets a folder of its own. With ``out_dir``,
    ``resume`` continues from its newest checkpoint (which must come from the same configuration).
    ``stop_after`` ends the run after that step as a kill would, keeping only the checkpoints already
    written (tests).
    """
    import torch
    from transformers import get_linear_schedule_with_warmup

    from medibio.pretrain.corpus import cached_blocks, tokenizer_fingerprint
    from medibio.pretrain.mlm import MLMCollator, load_checkpoint, mask_seed, new_model
    from medibio.pretrain.plan import effective_config, plan_pretraining

    cfg = effective_config(config, max_steps, effective_batch, per_device_batch)
    plan = plan_pretraining(cfg, corpus, variant, init, tokenizer_dir, data_root, tag)
    if cfg.paper:
        notes = [*(notes or []), f"config {cfg.name} holds the paper's settings; expect it not to fit here"]
    keyed = out_dir is None
    out = plan.folder(results_root()) if keyed else Path(out_dir)
    if keyed and (done := complete_record(out, plan.digest)) is not None:
        return done
    init_str = plan.init
    ckpt = latest_checkpoint(out)
    if ckpt is not None and not (resume or keyed):
        raise ResumeError(f"{out} already holds checkpoints (latest {ckpt.name}); pass --resume to continue "
                          "or choose another --out")

    accelerator = make_accelerator(resolve_precision(cfg.mixed_precision))
    device_type = accelerator.device.type
    layout = plan_batch(cfg.effective_batch, cfg.per_device_batch, accelerator.num_processes)

    with accelerator.main_process_first():
        tokenizer = prepare_tokenizer(cfg, corpus, variant, out, init_str, data_root, tokenizer_dir)
        blocks = cached_blocks(corpus, tokenizer, cfg.seq_length, variant=variant, root=data_root,
                               max_mb=cfg.corpus_max_mb)
    if init_str is None:
        model = new_model(cfg.model, tokenizer, seed=cfg.seed)
    else:
        model, _ = load_checkpoint(init_str)
    max_pos = getattr(model.config, "max_position_embeddings", cfg.seq_length)
    if cfg.seq_length > max_pos:
        raise ValueError(f"sequence length {cfg.seq_length} exceeds the model's {max_pos} positions")
    n_params = sum(p.numel() for p in model.parameters())

    optimizer = _optimizer(model, cfg)
    scheduler = get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps, cfg.max_steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.register_for_checkpointing(scheduler)
    collator = MLMCollator(tokenizer, cfg)
    order = DataOrder(len(blocks), cfg.seed)
    rank = accelerator.process_index

    step, curve, tokens_seen, elapsed, resumed_from, checkpoints = 0, [], 0, 0.0, [], []
    if ckpt is not None:
        accelerator.load_state(str(ckpt))
        state = json.loads((ckpt / STATE_FILE).read_text(encoding="utf-8"))
        if state.get("config_digest", plan.digest) != plan.digest:
            raise ResumeError(f"{ckpt}: saved by a run of configuration {state['config_digest']}, this one is "
                              f"{plan.digest} (another config, corpus, starting point or --limit); choose "
                              "another --out, or leave --out out to train in the folder of this configuration")
        if state["effective_batch"] != layout.effective or state["seed"] != cfg.seed:
            raise ResumeError(f"{ckpt}: saved with effective batch {state['effective_batch']} and seed "
                              f"{state['seed']}, now {layout.effective} and {cfg.seed}; the data position "
                              "would not match")
        step, curve, tokens_seen = state["step"], state["curve"], state["tokens_seen"]
        elapsed, checkpoints = state["elapsed_s"], state["checkpoints"]
        resumed_from = [*state.get("resumed_from", []), step]

    env = provenance.environment()
    record: dict[str, Any] = {
        "schema": SCHEMA, "kind": "pretrain", "run_id": uuid.uuid4().hex[:12], "config": cfg.name, "tag": tag,
        "config_digest": plan.digest, "effective_config": plan.payload, "out_dir": str(out),
        "hyperparameters": cfg.to_dict(),
        "init": {"kind": "scratch" if init_str is None else "continual", "from": init_str},
        "corpus": {"spec": corpus, "variant": variant, "blocks": len(blocks), "block_size": blocks.block_size,
                   "tokens": len(blocks) * blocks.block_size, "stats": blocks.meta.get("stats"),
                   "cache": str(blocks.folder)},
        "tokenizer": {"vocab_size": len(tokenizer), "fingerprint": tokenizer_fingerprint(tokenizer),
                      "class": type(tokenizer).__name__},
        "model": {"model_type": accelerator.unwrap_model(model).config.model_type, "parameters": n_params},
        "batch": {"per_device": layout.per_device, "processes": layout.processes,
                  "accumulation": layout.accumulation, "effective": layout.effective,
                  "seq_length": cfg.seq_length, "tokens_per_step": layout.effective * cfg.seq_length},
        "device": env["device"], "num_processes": accelerator.num_processes,
        "mixed_precision": accelerator.mixed_precision, "versions": env["versions"],
        "git_commit": env["git_commit"], "torch_threads": env["torch_threads"],
        "notes": list(notes or []),
    }

    def finish(status: str) -> dict[str, Any]:
        tokens_per_s = tokens_seen / elapsed if elapsed > 0 else None
        record.update({
            "status": status, "steps_done": step, "max_steps": cfg.max_steps, "curve": curve,
            "final_loss": curve[-1]["loss"] if curve else None, "tokens_seen": tokens_seen,
            "wall_time_s": round(elapsed, 3), "tokens_per_s": tokens_per_s,
            "peak_memory_mb": round(_peak_memory_mb(device_type), 1), "checkpoints": checkpoints,
            "resumed_from": resumed_from, "output": str(out / "model") if status == "complete" else None,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        })
        if accelerator.is_main_process:
            write_json(out / "run.json", record)
        return record

    def save_checkpoint() -> None:
        folder = out / "checkpoints" / f"step-{step:07d}"
        accelerator.save_state(str(folder))
        checkpoints.append(folder.name)
        if accelerator.is_main_process:
            write_json(folder / STATE_FILE, {
                "config_digest": plan.digest, "step": step, "data_offset": step * layout.effective, "effective_batch": layout.effective,
                "seed": cfg.seed, "tokens_seen": tokens_seen, "elapsed_s": elapsed, "curve": curve,
                "checkpoints": checkpoints, "resumed_from": resumed_from})
            complete = sorted(p for p in folder.parent.glob("step-*") if (p / STATE_FILE).exists())
            for old in complete[:-max(1, cfg.keep_checkpoints)]:
                shutil.rmtree(old, ignore_errors=True)
        accelerator.wait_for_everyone()
        finish("running")

    bar = None
    if progress and accelerator.is_local_main_process and step < cfg.max_steps:
        from medibio import progress as live

        bar = live.bar(f"pretrain {cfg.name}/{tag}", cfg.max_steps - step)
    tokens_per_step = layout.effective * cfg.seq_length
    window_loss, window_tokens, window_time = [], 0, 0.0
    model.train()
    cores.follow()  # one thread count for the whole run (medibio.cores)
    while step < cfg.max_steps:
        t0 = time.perf_counter()
        lr_used = scheduler.get_last_lr()[0]
        micro_losses = []
        for micro in range(layout.accumulation):
            # Data, masks and dropout depend on the micro-batch's slot in the effective batch only, so
            # 1 process x 2 accumulation steps and 2 processes x 1 step train on the same examples.
            slot = micro * layout.processes + rank
            idx = order.indices(step, micro, rank, layout)
            torch.manual_seed(mask_seed(cfg.seed, step, slot, stream=1))  # dropout
            batch = collator(blocks[idx], mask_seed(cfg.seed, step, slot, stream=0))
            batch = {k: v.to(accelerator.device) for k, v in batch.items()}
            sync = micro == layout.accumulation - 1
            with contextlib.nullcontext() if sync else accelerator.no_sync(model), accelerator.autocast():
                loss = model(**batch).loss
            accelerator.backward(loss / layout.accumulation)
            micro_losses.append(loss.detach().float())
        accelerator.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step_loss = accelerator.reduce(torch.stack(micro_losses).mean(), reduction="mean").item()
        if device_type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        step += 1
        elapsed += dt
        tokens_seen += tokens_per_step
        window_loss.append(step_loss)
        window_tokens += tokens_per_step
        window_time += dt
        if not math.isfinite(step_loss):
            record["notes"].append(f"non-finite loss at step {step}")
        if step % cfg.log_every == 0 or step == cfg.max_steps or step == 1:
            curve.append({"step": step, "loss": float(np.mean(window_loss)), "lr": lr_used,
                          "tokens_per_s": window_tokens / window_time if window_time else None,
                          "tokens_seen": tokens_seen, "elapsed_s": round(elapsed, 3)})
            window_loss, window_tokens, window_time = [], 0, 0.0
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"step {step}/{cfg.max_steps}, loss {step_loss:.3f}", refresh=False)
        if step % cfg.save_every == 0 or step == cfg.max_steps:
            save_checkpoint()
        if stop_after is not None and step >= stop_after and step < cfg.max_steps:
            if bar is not None:
                bar.close()
            return finish("stopped")  # like a kill: only the checkpoints already written survive
    if bar is not None:
        bar.close()
    if accelerator.is_main_process:
        final = out / "model"
        building = out / "model.building"
        if building.exists():
            shutil.rmtree(building)
        accelerator.unwrap_model(model).save_pretrained(str(building))
        tokenizer.save_pretrained(str(building))
        if final.exists():
            shutil.rmtree(final)
        building.rename(final)
    accelerator.wait_for_everyone()
    return finish("complete")


def load_record(out_dir: str | Path) -> dict[str, Any] | None:
    """The run record in ``out_dir`` (None when the run never wrote one)."""
    path = Path(out_dir) / "run.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def curve_frame(record: dict[str, Any] | str | Path):
    """The training curve of a run record (or of ``run.json`` in a folder) as a DataFrame for plotting."""
    import pandas as pd

    rec = record if isinstance(record, dict) else load_record(record)
    if rec is None:
        raise FileNotFoundError(f"no run.json in {record}")
    frame = pd.DataFrame(rec["curve"])
    frame.insert(0, "run", rec.get("tag", rec["config"]))
    return frame
