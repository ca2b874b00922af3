"""Pretraining configurations: the paper's Table 3 settings and the small profiles that run here.

One set of objects serves two purposes: the trainer reads them, and the book renders Table 3 from them
(`table3()`), so the printed hyperparameters cannot drift from the ones the code uses.

Paper values (Table 3, Section V-A): SciDeBERTa v2 trained from scratch for 500K steps (50K warm-up) with a
batch of 8,192 at learning rate 1e-4; MediBioDeBERTa continued from it for 10K steps (1K warm-up) with a
batch of 4,096 per device x 3 nodes x 4 accumulation steps = 49,152 at 5e-4; both AdamW, weight decay 0.01,
linear decay. The architecture is DeBERTa-v2 base (12 layers, hidden 768) with a 128K SentencePiece vocabulary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from medibio.core import profiles
from medibio.core.errors import UnknownNameError


@dataclass(frozen=True)
class ModelShape:
    """DeBERTa-v2 architecture of a from-scratch model (continual runs keep their checkpoint's shape)."""

    layers: int = 12
    hidden: int = 768
    heads: int = 12
    intermediate: int = 3072
    vocab_size: int = 128_000
    max_position: int = 512
    position_buckets: int = 256
    dropout: float = 0.1


@dataclass(frozen=True)
class PretrainConfig:
    """Everything a masked-LM pretraining run needs besides its corpus and starting point."""

    name: str
    description: str
    model: ModelShape = field(default_factory=ModelShape)
    max_steps: int = 1000
    warmup_steps: int = 100
    effective_batch: int = 32
    per_device_batch: int = 16
    # The layout the paper reports (processes x accumulation); None where the paper does not say.
    paper_processes: int | None = None
    paper_accumulation: int | None = None
    learning_rate: float = 5e-4
    optimizer: str = "AdamW"
    weight_decay: float = 0.01
    lr_decay: str = "linear"
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-6
    max_grad_norm: float = 1.0
    seq_length: int = 128
    mlm_probability: float = 0.15
    mask_replace_prob: float = 0.8
    random_replace_prob: float = 0.1
    whole_word_mask: bool = False
    save_every: int = 100
    keep_checkpoints: int = 2
    heldout_per_set: int = 0  # >0: the record gets the held-out MLM loss on this many BLURB dev sentences a set
    log_every: int = 10
    seed: int = 42
    mixed_precision: str = "gpu"  # mixed precision on a GPU, fp32 on a CPU (medibio.core.precision)
    # "sumpubmed": the tokenizer lower-cases and writes numbers as <dig>, as SumPubMed does (pretrain.vocab)
    text_form: str = "as-is"
    # first steps in which only the MLM head learns (the encoder's gradients are dropped): a head that a
    # continued checkpoint lacks (MiniLM's) is warmed up before it sends its random gradients down
    head_warmup_steps: int = 0
    corpus_max_mb: float | None = None  # cap on raw text read per corpus (None: everything)
    vocab_sample_mb: float = 50.0  # raw text used to train a new SentencePiece vocabulary
    paper: bool = False  # True for the paper's own settings (not runnable on this machine)

    def with_overrides(self, **changes: Any) -> PretrainConfig:
        """A copy with some fields changed (None values are ignored, so CLI options can pass through)."""
        kept = {k: v for k, v in changes.items() if v is not None}
        if "max_steps" in kept and "warmup_steps" not in kept:
            # Keep the warm-up share of the profile (10% in the paper) when only the length changes.
            kept["warmup_steps"] = round(kept["max_steps"] * self.warmup_steps / max(self.max_steps, 1))
        return replace(self, **kept)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for run records (every field, nested shape included)."""
        return asdict(self)


DEBERTA_V2_BASE = ModelShape()

CONFIGS: dict[str, PretrainConfig] = {
    "scideberta-v2": PretrainConfig(
        name="scideberta-v2",
        description="SciDeBERTa v2: DeBERTa-v2 base from scratch on S2ORC (paper Table 3, left column)",
        model=DEBERTA_V2_BASE, max_steps=500_000, warmup_steps=50_000, effective_batch=8_192,
        per_device_batch=8_192, learning_rate=1e-4, seq_length=512, save_every=10_000, log_every=100,
        paper=True,
    ),
    "medibiodeberta": PretrainConfig(
        name="medibiodeberta",
        description="MediBioDeBERTa: continual from SciDeBERTa v2 on the medicine-related S2ORC subset "
        "(paper Table 3, right column; 4,096 per device x 3 nodes x 4 accumulation steps)",
        model=DEBERTA_V2_BASE, max_steps=10_000, warmup_steps=1_000, effective_batch=49_152,
        per_device_batch=4_096, paper_processes=3, paper_accumulation=4, learning_rate=5e-4,
        seq_length=512, save_every=1_000, log_every=50, paper=True,
    ),
    "mini": PretrainConfig(
        name="mini",
        description="CPU profile: 2-layer DeBERTa-v2 (hidden 128), 4K vocabulary, 3 MB of real text; minutes",
        model=ModelShape(layers=2, hidden=128, heads=2, intermediate=512, vocab_size=4_000, max_position=128,
                         position_buckets=64),
        max_steps=150, warmup_steps=15, effective_batch=16, per_device_batch=16, learning_rate=5e-4,
        seq_length=128, save_every=50, log_every=10, corpus_max_mb=3.0, vocab_sample_mb=3.0,
    ),
    "gpu-mini": PretrainConfig(
        name="gpu-mini",
        description="One-GPU profile: 6-layer DeBERTa-v2 (hidden 384), 16K vocabulary, whole local corpora; "
        "the five Table 5 experiments in about 20 minutes on one H100 (estimate)",
        model=ModelShape(layers=6, hidden=384, heads=6, intermediate=1536, vocab_size=16_000, max_position=512,
                         position_buckets=128),
        max_steps=3_000, warmup_steps=300, effective_batch=256, per_device_batch=128, learning_rate=5e-4,
        seq_length=128, save_every=500, log_every=25, corpus_max_mb=None, vocab_sample_mb=50.0,
    ),
    "study": PretrainConfig(
        name="study",
        description="CPU Table 5 study: 4-layer DeBERTa-v2 (hidden 256), 30K vocabulary, 8,192 "
        "tokens a step, 1,221 steps = 10M tokens; bf16 autocast where the CPU computes bf16 natively",
        model=ModelShape(layers=4, hidden=256, heads=4, intermediate=1024, vocab_size=30_000, max_position=512,
                         position_buckets=128),
        max_steps=1_221, warmup_steps=122, effective_batch=64, per_device_batch=64, learning_rate=5e-4,
        seq_length=128, save_every=25, log_every=5, corpus_max_mb=None, vocab_sample_mb=50.0,
        mixed_precision="auto", text_form="sumpubmed", heldout_per_set=400,
    ),
    "smoke": PretrainConfig(
        name="smoke",
        description="Test profile: a 1-layer toy model and a few steps (seconds)",
        model=ModelShape(layers=1, hidden=32, heads=2, intermediate=64, vocab_size=500, max_position=64,
                         position_buckets=16),
        max_steps=6, warmup_steps=1, effective_batch=8, per_device_batch=4, learning_rate=1e-3,
        seq_length=32, save_every=3, log_every=1, corpus_max_mb=0.3, vocab_sample_mb=0.3,
    ),
}


def get_config(name: str) -> PretrainConfig:
    """Look a config up by name, with the list of known names in the error."""
    try:
        return CONFIGS[name]
    except KeyError:
        raise UnknownNameError("pretraining config", name, CONFIGS) from None


def for_run(config: PretrainConfig, limit: int | None = None) -> PretrainConfig:
    """The config a run actually uses: itself, or under ``--limit N`` a copy named ``<name>-limitN`` with at
    most N steps of at most N sequences per device (the gradient-accumulation factor kept), a 2,000-piece
    vocabulary and 1 MB of text — the same code path in seconds, written to records of its own so it never
    passes for a real run."""
    n = limit
    if n is None or config.name.endswith(f"-limit{n}"):
        return config
    steps = min(config.max_steps, n)
    per_device = min(config.per_device_batch, n)
    accumulation = max(1, config.effective_batch // max(config.per_device_batch, 1))
    return replace(config, name=f"{config.name}-limit{n}", max_steps=steps,
                   per_device_batch=per_device, effective_batch=min(config.effective_batch, per_device * accumulation),
                   warmup_steps=max(1, round(steps * config.warmup_steps / max(config.max_steps, 1))),
                   save_every=min(config.save_every, steps), log_every=min(config.log_every, steps),
                   corpus_max_mb=min(config.corpus_max_mb or 1.0, 1.0),
                   vocab_sample_mb=min(config.vocab_sample_mb, 1.0),
                   model=replace(config.model, vocab_size=min(config.model.vocab_size, 2_000)))


def batch_layout_text(config: PretrainConfig) -> str:
    """The batch as the paper writes it: '49,152 (4,096 x 3 x 4)' when the layout is known."""
    total = f"{config.effective_batch:,}"
    if config.paper_processes and config.paper_accumulation:
        return (f"{total} ({config.per_device_batch:,} \u00d7 {config.paper_processes} \u00d7 "
                f"{config.paper_accumulation})")
    return total


def _steps_text(n: int) -> str:
    return f"{n // 1000}K" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


def table3(names: tuple[str, ...] = ("scideberta-v2", "medibiodeberta")):
    """Paper Table 3 as a DataFrame (rows = hyperparameters, columns = models), built from ``CONFIGS``."""
    import pandas as pd

    rows = {
        "max training steps": lambda c: _steps_text(c.max_steps),
        "warmup steps": lambda c: _steps_text(c.warmup_steps),
        "batch size": batch_layout_text,
        "learning rate": lambda c: f"{c.learning_rate:g}",
        "optimizer": lambda c: c.optimizer,
        "weight decay": lambda c: f"{c.weight_decay:g}",
        "learning rate decay": lambda c: c.lr_decay,
    }
    data = {get_config(n).name: [fmt(get_config(n)) for fmt in rows.values()] for n in names}
    frame = pd.DataFrame(data, index=list(rows))
    frame.index.name = "hyperparameter"
    return frame


def configs_table(names: tuple[str, ...] | None = None):
    """Every config (paper and small profiles) side by side, numbers kept numeric (for the book)."""
    import pandas as pd

    rows = []
    for name in names or tuple(CONFIGS):
        c = get_config(name)
        rows.append({
            "config": c.name, "layers": c.model.layers, "hidden": c.model.hidden, "vocab": c.model.vocab_size,
            "seq_length": c.seq_length, "max_steps": c.max_steps, "warmup_steps": c.warmup_steps,
            "effective_batch": c.effective_batch, "per_device_batch": c.per_device_batch,
            "learning_rate": c.learning_rate, "weight_decay": c.weight_decay, "tokens_per_step":
            c.effective_batch * c.seq_length, "paper": c.paper,
        })
    return pd.DataFrame(rows).set_index("config")


def lr_at(config: PretrainConfig, step: int) -> float:
    """Learning rate after ``step`` optimizer steps: linear warm-up to the peak, then linear decay to 0.

    Same formula as ``transformers.get_linear_schedule_with_warmup`` (which the trainer uses).
    """
    if step < config.warmup_steps:
        return config.learning_rate * step / max(1, config.warmup_steps)
    remaining = max(0, config.max_steps - step)
    return config.learning_rate * remaining / max(1, config.max_steps - config.warmup_steps)


def lr_schedule(config: PretrainConfig | str, points: int = 200):
    """The learning-rate schedule of a config as a DataFrame (step, learning_rate) for plotting."""
    import pandas as pd

    cfg = get_config(config) if isinstance(config, str) else config
    stride = max(1, cfg.max_steps // points)
    steps = sorted({*range(0, cfg.max_steps + 1, stride), cfg.warmup_steps, cfg.max_steps})
    return pd.DataFrame({"config": cfg.name, "step": steps, "learning_rate": [lr_at(cfg, s) for s in steps]})


def config_for_profile(profile: str) -> PretrainConfig:
    """The pretraining config a run profile uses (:attr:`medibio.core.profiles.Profile.pretrain_config`;
    ``paper`` gives the paper's, not runnable here)."""
    return get_config(profiles.get(profile).pretrain_config)
