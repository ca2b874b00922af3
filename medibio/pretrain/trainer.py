"""The masked-LM training loop (accelerate): AdamW, linear warm-up and decay, gradient accumulation, mixed
precision on a GPU, periodic checkpoints that a killed run resumes from, and a run record with the curves.

Pretraining is a kind of run like any other (:mod:`medibio.runs.protocol`): :func:`run_pretraining` plans it
(:mod:`medibio.pretrain.plan`), and the protocol reuses its record or trains it. Training happens in the run's
work folder: ``checkpoints/step-NNNNNNN/`` hold accelerate's ``save_state`` (model, optimizer, scheduler, RNG
states) and ``trainer_state.json`` (step, curve so far, data position), written last so that its presence
marks a complete checkpoint. The data order is a pure function of (seed, epoch) and each micro-batch's masks
a pure function of its position, so the data position is just the step count: a run killed and started
again resumes from its newest checkpoint and sees exactly the batches, masks and dropout an uninterrupted
run would. At the end ``model/`` (a Hugging Face folder: config, weights, tokenizer, loadable by
``medibio finetune --model`` and every ``AutoModelFor...``) is published with the record as an artifact.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import resource
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medibio.core import progress as live
from medibio.core.atomic import publish_folder, write_json
from medibio.core.errors import MedibioError
from medibio.core.precision import AcceleratorWhenTraining
from medibio.core.settings import Settings
from medibio.models import weights, zoo
from medibio.pretrain import corpus as corpora
from medibio.pretrain.batching import BatchLayout, plan_batch
from medibio.pretrain.configs import PretrainConfig
from medibio.pretrain.plan import KIND, SCRATCH, Job, effective_config, plan_pretraining, rebuild_config
from medibio.pretrain.vocab import in_sumpubmed_form, is_sumpubmed_form, train_corpus_vocabulary
from medibio.runs import protocol
from medibio.runs import records as rec
from medibio.runs.protocol import Outcome, Plan, RunContext

if TYPE_CHECKING:
    from medibio.pretrain import mlm

STATE_FILE = "trainer_state.json"


class ResumeError(MedibioError, RuntimeError):
    """A checkpoint that belongs to another configuration (the data position would not match)."""


class Stopped(MedibioError):
    """A run ended after ``stop_after`` steps, as a kill would: only its checkpoints remain (tests)."""

    def __init__(self, steps_done: int, workdir: Path) -> None:
        self.steps_done = steps_done
        self.workdir = workdir
        super().__init__(f"pretraining stopped after step {steps_done}; its checkpoints are in {workdir}")


def has_tokenizer(folder: Path) -> bool:
    """Whether ``folder`` holds a finished tokenizer (its ``tokenizer.json``, written last)."""
    return (folder / "tokenizer.json").is_file()


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

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _optimizer(model: Any, config: PretrainConfig):
    """AdamW with weight decay on weights only (not biases or LayerNorm), as in BERT/DeBERTa."""

    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


    from medibio.training.stability import adamw  # torch, as below: imported where a model trains

    return adamw(groups, lr=config.learning_rate, betas=config.adam_betas, eps=config.adam_eps)


def checkpoint_state(ckpt: Path) -> dict[str, Any]:
    """What the trainer saved beside a checkpoint's weights: step, data position, tokens seen, step time, curve."""
    return json.loads((ckpt / STATE_FILE).read_text(encoding="utf-8"))


def _resumable_state(ckpt: Path, digest: str, effective_batch: int, seed: int) -> dict[str, Any]:
    """The saved state of ``ckpt`` when this configuration may resume from it, else :class:`ResumeError`."""
    state = checkpoint_state(ckpt)
    if state.get("config_digest") != digest:
        raise ResumeError(f"{ckpt}: saved by a run of configuration {state.get('config_digest')}, this "
                          f"one is {digest}")
    if state["effective_batch"] != effective_batch or state["seed"] != seed:
        raise ResumeError(f"{ckpt}: saved with effective batch {state['effective_batch']} and seed "
                          f"{state['seed']}, now {effective_batch} and {seed}; the data position "
                          "would not match")
    weights.check_folder(ckpt)  # a checkpoint cut short is named here, not deep inside accelerate's loading
    return state


def prepare_tokenizer(config: PretrainConfig, corpus: str, variant: str, out_dir: Path, init: str | None,
                      data_root: str | Path | None, tokenizer_dir: str | Path | None = None):
    """Continual: the checkpoint's own tokenizer. From scratch: ``tokenizer_dir`` or a new SentencePiece
    vocabulary trained on the corpus into ``out_dir/tokenizer`` (reused when already there). Under
    ``config.text_form="sumpubmed"`` the tokenizer normalises to SumPubMed's form (:mod:`medibio.pretrain.vocab`);
    a given vocabulary must already do so."""
    from transformers import AutoTokenizer

    if init is not None:
        tokenizer = zoo.load_tokenizer(init)
        return tokenizer if config.text_form == "as-is" else in_sumpubmed_form(tokenizer)
    folder = Path(tokenizer_dir) if tokenizer_dir else out_dir / "tokenizer"

    def train(building: Path) -> None:
        train_corpus_vocabulary(corpus, building, config.model.vocab_size, variant=variant,
                                max_mb=config.vocab_sample_mb, root=data_root, text_form=config.text_form)

    tokenizer = AutoTokenizer.from_pretrained(str(publish_folder(folder, train, complete=has_tokenizer)))
    if config.text_form != "as-is" and not is_sumpubmed_form(tokenizer):
        raise MedibioError(f"{folder}: the configuration asks for text in the {config.text_form} form, and "
                           "this tokenizer does not normalise to it (train it with text_form="
                           f"{config.text_form!r})")
    return tokenizer


@dataclasses.dataclass
class _Window:
    """The steps since the curve's last point: the next point is their mean loss and their throughput."""

    losses: list[float] = dataclasses.field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0


@dataclasses.dataclass
class _Progress:
    """Where a run stands: what a checkpoint saves beside the weights, and what the record reports at the end.
    A resumed run starts from a checkpoint's copy, so its curve and counts go on where the saved run's stopped."""

    step: int = 0
    curve: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    tokens_seen: int = 0
    elapsed: float = 0.0
    resumed_from: list[int] = dataclasses.field(default_factory=list)
    checkpoints: list[str] = dataclasses.field(default_factory=list)
    window: _Window = dataclasses.field(default_factory=_Window)

    @classmethod
    def saved(cls, state: Mapping[str, Any]) -> _Progress:
        """The progress a checkpoint's state holds; this start is added to the steps the run resumed from."""
        step = state["step"]
        return cls(step=step, curve=state["curve"], tokens_seen=state["tokens_seen"], elapsed=state["elapsed_s"],
                   resumed_from=[*state.get("resumed_from", []), step], checkpoints=state["checkpoints"])

    def state(self, digest: str, layout: BatchLayout, seed: int) -> dict[str, Any]:
        """The checkpoint's ``trainer_state.json``: with the digest, batch and seed a resume is checked against
        (:func:`_resumable_state`), since the data position is only the step count under those."""
        return {"config_digest": digest, "step": self.step, "data_offset": self.step * layout.effective,
                "effective_batch": layout.effective, "seed": seed, "tokens_seen": self.tokens_seen,
                "elapsed_s": self.elapsed, "curve": self.curve, "checkpoints": self.checkpoints,
                "resumed_from": self.resumed_from}

    def count(self, loss: float, seconds: float, tokens: int, lr: float, config: PretrainConfig) -> None:
        """Count a finished step; every ``log_every`` steps, the first and the last the curve gains a point
        for the steps since its previous one (the first shows where training starts)."""
        self.step += 1
        self.elapsed += seconds
        self.tokens_seen += tokens
        window = self.window
        window.losses.append(loss)
        window.tokens += tokens
        window.seconds += seconds
        if self.step % config.log_every == 0 or self.step == config.max_steps or self.step == 1:
            self.curve.append({"step": self.step, "loss": float(np.mean(window.losses)), "lr": lr,
                               "tokens_per_s": window.tokens / window.seconds if window.seconds else None,
                               "tokens_seen": self.tokens_seen, "elapsed_s": round(self.elapsed, 3)})
            self.window = _Window()


def _masked_lm(config: PretrainConfig, tokenizer: Any, init: str | None, device: Any) -> tuple[Any, int]:
    """The model to train and its parameter count. From scratch it is built from ``config.model`` with the run's
    seed; continued, the seed is set first so that a head the checkpoint lacks and new embedding rows (``<dig>``
    of the SumPubMed form) start alike in every run. It is wrapped so that its forward returns the loss from
    logits at the masked positions only (the rest would cost memory and time for nothing)."""
    import torch

    from medibio.models.dropout import use_cheap_dropout
    from medibio.pretrain import mlm

    if init is None:
        model = mlm.new_model(config.model, tokenizer, seed=config.seed)
    else:
        torch.manual_seed(config.seed)
        model = mlm.load_checkpoint(init)[0]
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(len(tokenizer))
    max_pos = getattr(model.config, "max_position_embeddings", config.seq_length)
    if config.seq_length > max_pos:
        raise ValueError(f"sequence length {config.seq_length} exceeds the model's {max_pos} positions")
    n_params = sum(p.numel() for p in model.parameters())
    use_cheap_dropout(model, device)
    return mlm.MaskedPositionsLM(model), n_params


@dataclasses.dataclass
class _Steps:
    """What every optimizer step uses, set up once: the prepared model and optimizer, the schedule (registered
    so that a checkpoint saves it), the data order and the collator that masks each micro-batch."""

    config: PretrainConfig
    layout: BatchLayout
    accelerator: Any
    blocks: Any
    model: Any
    optimizer: Any
    scheduler: Any
    collator: mlm.MLMCollator
    order: DataOrder
    encoder_parameters: list[Any]

    @classmethod
    def prepare(cls, config: PretrainConfig, layout: BatchLayout, accelerator: Any, tokenizer: Any, blocks: Any,
                model: Any) -> _Steps:
        """AdamW with linear warm-up and decay, prepared by ``accelerator``; the encoder's parameters are kept
        apart for the head warm-up, which leaves them untouched."""
        from transformers import get_linear_schedule_with_warmup

        from medibio.pretrain import mlm

        encoder_parameters = list(model.lm.base_model.parameters())
        optimizer = _optimizer(model, config)
        scheduler = get_linear_schedule_with_warmup(optimizer, config.warmup_steps, config.max_steps)
        model, optimizer = accelerator.prepare(model, optimizer)
        accelerator.register_for_checkpointing(scheduler)
        return cls(config, layout, accelerator, blocks, model, optimizer, scheduler,
                   mlm.MLMCollator(tokenizer, config), DataOrder(len(blocks), config.seed), encoder_parameters)

    def step(self, step: int) -> float:
        """Optimizer step ``step`` (counted from 0) over the effective batch; its loss, averaged over the
        micro-batches and processes. Before ``head_warmup_steps`` only the MLM head learns (the tied word
        embeddings do not): the encoder's gradients are dropped."""
        import torch

        config, accelerator = self.config, self.accelerator
        micro_losses = [self._micro_step(step, micro) for micro in range(self.layout.accumulation)]
        if step < config.head_warmup_steps:
            for p in self.encoder_parameters:
                p.grad = None
        accelerator.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        loss = accelerator.reduce(torch.stack(micro_losses).mean(), reduction="mean").item()
        if accelerator.device.type == "cuda":  # the step's time is then the GPU's, not the launch's
            torch.cuda.synchronize()
        return loss

    def _micro_step(self, step: int, micro: int) -> Any:
        """Forward and backward of one micro-batch; its loss. Data, masks and dropout depend on the micro-batch's
        slot in the effective batch only, so 1 process x 2 accumulation steps and 2 processes x 1 step train
        on the same examples, and a resumed run sees what an uninterrupted one would."""
        import torch

        from medibio.pretrain import mlm

        config, layout, accelerator = self.config, self.layout, self.accelerator
        rank = accelerator.process_index
        slot = micro * layout.processes + rank
        idx = self.order.indices(step, micro, rank, layout)
        torch.manual_seed(mlm.mask_seed(config.seed, step, slot, stream=1))  # dropout
        batch = self.collator(self.blocks[idx], mlm.mask_seed(config.seed, step, slot, stream=0))
        batch = {k: v.to(accelerator.device) for k, v in batch.items()}
        sync = micro == layout.accumulation - 1  # gradients are all-reduced once, on the last micro-batch
        with contextlib.nullcontext() if sync else accelerator.no_sync(self.model), accelerator.autocast():
            loss = self.model(**batch)
        accelerator.backward(loss / layout.accumulation)
        return loss.detach().float()


def _resume(accelerator: Any, ckpt: Path | None, state: Mapping[str, Any]) -> _Progress:
    """A fresh start, or the newest checkpoint's model, optimizer, schedule and RNG states loaded and its saved
    progress: the run then goes on exactly as if it had never stopped."""
    if ckpt is None:
        return _Progress()
    accelerator.load_state(str(ckpt))
    return _Progress.saved(state)


def _save_checkpoint(steps: _Steps, progress: _Progress, out: Path, digest: str) -> None:
    """Save the training state at ``progress.step``. The state file is written last, so that its presence
    marks a complete checkpoint (a kill while saving leaves one :func:`latest_checkpoint` skips); only the
    newest ``keep_checkpoints`` complete ones are kept, to bound the disk a long run takes."""
    accelerator, config = steps.accelerator, steps.config
    folder = out / "checkpoints" / f"step-{progress.step:07d}"
    accelerator.save_state(str(folder))
    progress.checkpoints.append(folder.name)
    if accelerator.is_main_process:
        write_json(folder / STATE_FILE, progress.state(digest, steps.layout, config.seed))
        complete = sorted(p for p in folder.parent.glob("step-*") if (p / STATE_FILE).exists())
        for old in complete[:-max(1, config.keep_checkpoints)]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()


def _publish(steps: _Steps, tokenizer: Any, out: Path) -> None:
    """Publish ``out/model`` (weights, config and tokenizer: a Hugging Face folder that ``medibio finetune
    --model`` and every ``AutoModelFor...`` load) in one atomic step, so a reader finds all of it or nothing."""
    accelerator = steps.accelerator
    if accelerator.is_main_process:
        def save(building: Path) -> None:
            accelerator.unwrap_model(steps.model).lm.save_pretrained(str(building))
            tokenizer.save_pretrained(str(building))

        publish_folder(out / "model", save)
    accelerator.wait_for_everyone()


def _heldout(steps: _Steps, tokenizer: Any, data_root: Path) -> dict[str, Any] | None:
    """The trained model's MLM loss on held-out text when the configuration asks for it (main process only):
    the training loss alone cannot tell a model that learned from one that memorised."""
    config, accelerator = steps.config, steps.accelerator
    if not (config.heldout_per_set and accelerator.is_main_process):
        return None
    from medibio.pretrain.heldout import heldout_loss

    return heldout_loss(accelerator.unwrap_model(steps.model).lm, tokenizer, config, data_root, config.heldout_per_set)


def _record(ctx: RunContext, job: Job, init: str | None, steps: _Steps, tokenizer: Any, n_params: int,
            progress: _Progress, heldout: dict[str, Any] | None, notes: list[str]) -> rec.RunRecord:
    """The run record: where the model came from, the corpus and tokenizer it saw, the batch, the curve and
    the steps it resumed from, so a reader can tell what was trained and how without the weights."""
    config, layout, accelerator, blocks = steps.config, steps.layout, steps.accelerator, steps.blocks
    settings = ctx.settings
    architecture = {"model_type": accelerator.unwrap_model(steps.model).lm.config.model_type, "parameters": n_params}
    model_block = ({"name": SCRATCH, "path": "", "tag": SCRATCH, "hash": None, **architecture} if init is None
                   else {**zoo.model_info(job.init, cache_root=settings.cache_root,
                                          results_root=settings.results_root), "parameters": n_params})
    curve, elapsed = progress.curve, progress.elapsed
    details = {
        "init": {"kind": "scratch" if init is None else "continual", "from": job.init},
        "corpus": {"spec": job.corpus, "variant": job.variant, "blocks": len(blocks),
                   "block_size": blocks.block_size, "tokens": len(blocks) * blocks.block_size,
                   "stats": blocks.meta.get("stats"), "cache": str(blocks.folder)},
        "tokenizer": {"vocab_size": len(tokenizer), "fingerprint": corpora.tokenizer_fingerprint(tokenizer),
                      "class": type(tokenizer).__name__},
        "architecture": architecture,
        "batch": {"per_device": layout.per_device, "processes": layout.processes,
                  "accumulation": layout.accumulation, "effective": layout.effective,
                  "seq_length": config.seq_length, "tokens_per_step": layout.effective * config.seq_length},
        "mixed_precision": str(accelerator.mixed_precision), "steps_done": progress.step,
        "max_steps": config.max_steps, "curve": curve, "final_loss": curve[-1]["loss"] if curve else None,
        "tokens_seen": progress.tokens_seen, "tokens_per_s": progress.tokens_seen / elapsed if elapsed > 0 else None,
        "checkpoints": progress.checkpoints, "resumed_from": progress.resumed_from,
        **({"heldout": heldout} if heldout else {})}
    return ctx.record(model=model_block, hyperparameters=config.to_dict(), wall_time_s=round(elapsed, 3),
                      peak_memory_mb=round(_peak_memory_mb(accelerator.device.type), 1), notes=notes, details=details)


class PretrainKind:
    """Pretraining as a kind of run (:class:`medibio.runs.protocol.Kind`); ``stop_after`` ends a run after
    that step as a kill would (tests)."""

    name = KIND

    def __init__(self, progress: bool = True, stop_after: int | None = None) -> None:
        self.progress = progress
        self.stop_after = stop_after

    def replan(self, request: Mapping[str, Any], settings: Settings) -> Plan:
        return plan_pretraining(rebuild_config(dict(request)), request["corpus"], request["variant"],
                                request.get("init"), request.get("tokenizer_dir"), request["tag"],
                                dataclasses.replace(settings, limit=request.get("limit")), request.get("overrides"))

    def describe(self, record: rec.RunRecord) -> str:
        d = record.details
        loss = d.get("final_loss")
        return f"{d.get('steps_done')} steps, final loss {loss:.3f}" if loss is not None else "no steps"

    def train(self, plan: Plan, ctx: RunContext) -> Outcome:
        """Train (or resume) the run in its work folder; publish ``model`` and the last checkpoints."""
        job: Job = plan.job
        cfg, out, accelerator = job.config, ctx.workdir, ctx.accelerator
        data_root = ctx.settings.data_root
        digest = plan.key.config_digest
        notes = list(job.notes)
        if cfg.paper:
            notes.append(f"config {cfg.name} holds the paper's settings; expect it not to fit here")
        layout = plan_batch(cfg.effective_batch, cfg.per_device_batch, accelerator.num_processes)
        # a checkpoint of another configuration is refused before its tokenizer, the corpus or any tensor is
        # loaded: a model of another size would otherwise fail on a tensor size mismatch first
        ckpt = latest_checkpoint(out)
        state = _resumable_state(ckpt, digest, layout.effective, cfg.seed) if ckpt is not None else {}
        init = None if job.init is None else zoo.resolve(job.init, ctx.settings.cache_root, ctx.settings.results_root)
        with accelerator.main_process_first():
            tokenizer = prepare_tokenizer(cfg, job.corpus, job.variant, out, init, data_root, job.tokenizer_dir)
            blocks = corpora.cached_blocks(job.corpus, tokenizer, cfg.seq_length, variant=job.variant,
                                           root=data_root, max_mb=cfg.corpus_max_mb, cache=ctx.settings.cache_root)
        model, n_params = _masked_lm(cfg, tokenizer, init, accelerator.device)
        steps = _Steps.prepare(cfg, layout, accelerator, tokenizer, blocks, model)
        progress = _resume(accelerator, ckpt, state)
        self._run_steps(steps, progress, out, digest, notes, f"pretrain {cfg.name}/{job.tag}")
        _publish(steps, tokenizer, out)
        heldout = _heldout(steps, tokenizer, data_root)
        record = _record(ctx, job, init, steps, tokenizer, n_params, progress, heldout, notes)
        built = ("model", "checkpoints") + (("tokenizer",) if (out / "tokenizer").is_dir() else ())
        return Outcome(record, None, built)

    def _run_steps(self, steps: _Steps, progress: _Progress, out: Path, digest: str, notes: list[str],
                   title: str) -> None:
        """Step from ``progress.step`` to ``max_steps``, saving a checkpoint every ``save_every`` steps and at the
        end. A non-finite loss is noted in the record rather than stopping the run, so its curve shows where.
        Past ``stop_after`` it raises :class:`Stopped`, like a kill: only the checkpoints already written
        survive."""
        cfg = steps.config
        bar = self._bar(steps, progress, title)
        tokens_per_step = steps.layout.effective * cfg.seq_length
        steps.model.train()
        while progress.step < cfg.max_steps:
            t0 = time.perf_counter()
            lr_used = steps.scheduler.get_last_lr()[0]
            step_loss = steps.step(progress.step)
            progress.count(step_loss, time.perf_counter() - t0, tokens_per_step, lr_used, cfg)
            step = progress.step
            if not math.isfinite(step_loss):
                notes.append(f"non-finite loss at step {step}")
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"step {step}/{cfg.max_steps}, loss {step_loss:.3f}", refresh=False)
            if step % cfg.save_every == 0 or step == cfg.max_steps:
                _save_checkpoint(steps, progress, out, digest)
            if self._stops_after(step, cfg.max_steps):
                if bar is not None:
                    bar.close()
                raise Stopped(step, out)
        if bar is not None:
            bar.close()

    def _bar(self, steps: _Steps, progress: _Progress, title: str) -> Any:
        """The progress bar of the steps left, on one process per machine; None when off or nothing is left."""
        left = steps.config.max_steps - progress.step
        if self.progress and steps.accelerator.is_local_main_process and left > 0:
            return live.bar(title, left)
        return None

    def _stops_after(self, step: int, max_steps: int) -> bool:
        """Whether a run told to stop (``stop_after``) ends after ``step``; a run at its last step finishes."""
        return self.stop_after is not None and step >= self.stop_after and step < max_steps


def run_pretraining(config: PretrainConfig | str, corpus: str = "biomed-abstracts", variant: str = "abstract",
                    init: str | Path | None = None, max_steps: int | None = None, effective_batch: int | None = None,
                    per_device_batch: int | None = None, stop_after: int | None = None,
                    tokenizer_dir: str | Path | None = None, tag: str = "custom", progress: bool = True,
                    notes: list[str] | None = None, force: bool = False,
                    settings: Settings | None = None) -> rec.RunRecord:
    """Pretrain a masked LM and return its run record.

    ``init`` None trains from scratch (new vocabulary, or ``tokenizer_dir``'s); otherwise it is a checkpoint
    folder or model name to continue from (its vocabulary is kept). A finished run of the same configuration
    is returned as it is, an interrupted one resumes from its newest checkpoint, and a changed configuration
    trains into a record of its own. ``stop_after`` ends the run after that step as a kill would, keeping the
    checkpoints already written, and raises :class:`Stopped` (tests).
    """
    settings = settings or Settings()
    overrides = {"max_steps": max_steps, "effective_batch": effective_batch, "per_device_batch": per_device_batch}
    cfg = effective_config(config, max_steps, effective_batch, per_device_batch, settings.limit)
    plan = plan_pretraining(cfg, corpus, variant, init, tokenizer_dir, tag, settings, overrides, tuple(notes or ()))
    accelerator = AcceleratorWhenTraining(cfg.mixed_precision, settings.launched)
    return protocol.run(PretrainKind(progress, stop_after), plan, settings, accelerator, force)[0]


def model_folder(record: rec.RunRecord, settings: Settings) -> Path:
    """The pretrained model of a pretraining record (its published ``model`` artifact)."""
    return record.artifact("model", settings.results_root)


def curve_frame(record: rec.RunRecord):
    """The training curve of a pretraining record as a DataFrame for plotting."""
    import pandas as pd

    frame = pd.DataFrame(record.details["curve"])
    frame.insert(0, "run", record.variant)
    return frame
