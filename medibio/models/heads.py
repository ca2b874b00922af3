"""Model construction per problem type through the ``transformers`` Auto classes (any encoder).

NER/PICO use ``AutoModelForTokenClassification``; RE/QA ``AutoModelForSequenceClassification`` with
``problem_type="single_label_classification"``, HoC with ``"multi_label_classification"`` (BCE loss on
independent sigmoids) and BIOSSES with ``"regression"`` (one output, MSE loss). Dropout is set to 0.1 on
whichever dropout fields the architecture has (BERT, DeBERTa-v2/v3, ELECTRA, ALBERT name them alike).

Sequence heads read the architecture's own pooler by default (``pooling="cls"``: BERT's dense + tanh over
[CLS]). ``pooling="mean"`` replaces BERT-family poolers by the attention-masked mean of the last layer, the
pooling sentence-embedding encoders such as all-MiniLM-L6-v2 were trained with: their [CLS] pooler is a
left-over of the original checkpoint, so a head on it starts far from what the encoder already knows
(fine-tuned on [CLS], such an encoder can score below its own frozen mean-pooled cosine on BIOSSES).

``pooling="cosine"`` (sentence-pair regression only: BIOSSES, STS-B, SICK-R) is a bi-encoder head in the
manner of Sentence-BERT (Reimers & Gurevych 2019, its CosineSimilarityLoss): the two sentences of a pair are
encoded *separately*, mean-pooled, and the prediction is an affine map of their cosine, trained with MSE.
At step 0 it ranks pairs exactly like the frozen encoder's cosine baseline (Pearson ignores the affine map),
so fine-tuning starts from what a sentence-embedding encoder such as all-MiniLM-L6-v2 already knows instead
of from a fresh cross-encoder head; it departs from BLURB's cross-encoder protocol, and records say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medibio.models import zoo
from medibio.tasks.spec import Problem

PROBLEM_TYPES = {
    Problem.CLASSIFY: "single_label_classification",
    Problem.MULTILABEL: "multi_label_classification",
    Problem.REGRESSION: "regression",
}
DROPOUT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob")
# Tokenizers that need a leading space to split pre-tokenised words (byte-level BPE).
PREFIX_SPACE_TYPES = {"roberta", "deberta", "longformer", "bart", "gpt2", "mpnet"}
POOLINGS = ("cls", "mean", "cosine")


def auto_class(problem: Problem) -> Any:
    from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification

    return AutoModelForTokenClassification if Problem(problem) is Problem.TOKEN else AutoModelForSequenceClassification


def build_config(spec: Any, model_name_or_path: str | Path, dropout: float = 0.1,
                 cache_root: str | Path | None = None) -> Any:
    """The model config for a task: label count and names, problem type, dropout."""
    config = zoo.load_config(model_name_or_path, cache_root)
    problem = Problem(spec.problem)
    labels = list(spec.labels)
    if problem is Problem.REGRESSION:
        config.num_labels = 1
        config.id2label = {0: "score"}
        config.label2id = {"score": 0}
    else:
        config.num_labels = len(labels)
        config.id2label = dict(enumerate(labels))
        config.label2id = {name: i for i, name in enumerate(labels)}
    config.problem_type = PROBLEM_TYPES.get(problem)
    for name in DROPOUT_FIELDS:
        if hasattr(config, name):
            setattr(config, name, dropout)
    return config


def load_tokenizer(model_name_or_path: str | Path, problem: Problem, cache_root: str | Path | None = None) -> Any:
    """Fast tokenizer; byte-level BPE models get ``add_prefix_space`` for pre-split words."""
    from transformers import AutoTokenizer

    config = zoo.load_config(model_name_or_path, cache_root)
    if Problem(problem) is Problem.TOKEN and config.model_type in PREFIX_SPACE_TYPES:
        return AutoTokenizer.from_pretrained(zoo.resolve(model_name_or_path, cache_root), add_prefix_space=True)
    return zoo.load_tokenizer(model_name_or_path, cache_root)


def build_model(spec: Any, model_name_or_path: str | Path, dropout: float = 0.1,
                init_from: str | Path | None = None, seed: int | None = None, pooling: str = "cls",
                cache_root: str | Path | None = None) -> Any:
    """A model with a freshly initialised task head on the encoder of ``model_name_or_path``.

    ``init_from`` is a folder holding only encoder weights (an intermediate fine-tuning result, written
    by :func:`save_encoder`): the encoder comes from there, the head is new either way. ``seed`` seeds the
    random generators first, so the head does not depend on what ran earlier in the process. ``pooling``:
    see the module docstring (token tasks ignore it). ``cache_root``: see :func:`medibio.models.zoo.resolve`.
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
    if pooling == "cosine" and Problem(spec.problem) is not Problem.REGRESSION:
        raise ValueError(f"pooling='cosine' is a sentence-pair regression head; {spec.name} is "
                         f"{Problem(spec.problem).value}")
    from transformers.utils import logging as hf_logging

    if seed is not None:
        from accelerate.utils import set_seed

        set_seed(seed)

    source = str(init_from) if init_from else zoo.resolve(model_name_or_path, cache_root)
    config = build_config(spec, init_from or model_name_or_path, dropout, cache_root)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "newly initialised head" warnings are the point here
    try:
        if pooling == "cosine":
            from transformers import AutoModel

            low, high = getattr(spec, "value_range", None) or (0.0, 1.0)
            return siamese_cosine_regressor(AutoModel.from_pretrained(source, config=config), low, high)
        model = auto_class(spec.problem).from_pretrained(source, config=config)
    finally:
        hf_logging.set_verbosity(level)
    if pooling == "mean" and Problem(spec.problem) is not Problem.TOKEN:
        use_mean_pooling(model)
    return model


def masked_mean_pooler() -> Any:
    """A parameter-free stand-in for a BERT-family pooler: the attention-masked mean of the last layer.

    The encoder calls its pooler with the hidden states only, so :func:`use_mean_pooling` hands it the
    attention mask of the encoder's own call through a forward pre-hook.
    """
    import torch

    class MaskedMeanPooler(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mask: Any = None

        def forward(self, hidden: Any) -> Any:
            if self.mask is None:
                return hidden.mean(dim=1)
            m = self.mask[:, : hidden.shape[1]].unsqueeze(-1).to(hidden.dtype)
            return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)

    return MaskedMeanPooler()


def use_mean_pooling(model: Any) -> Any:
    """Replace the model's pooler by :func:`masked_mean_pooler`, in place: the encoder's own pooler in the BERT
    family (BERT, MiniLM, RoBERTa ...), the head's ``ContextPooler`` in DeBERTa's (which pools the first token
    through a dense layer, as BERT's pooler does); a model with neither raises ``ValueError``."""
    base = model.base_model
    pooler = masked_mean_pooler()
    if getattr(base, "pooler", None) is not None:
        owner = base
    elif hasattr(getattr(model, "pooler", None), "output_dim"):  # DeBERTa-v2/v3 sequence classification
        owner = model
        pooler.output_dim = model.pooler.output_dim  # what the classifier reads off its pooler
    else:
        raise ValueError(f"pooling='mean' needs a pooler to replace (BERT's encoder or DeBERTa's head); "
                         f"{type(model).__name__} has none")
    owner.pooler = pooler
    owner.register_forward_pre_hook(_remember_mask, with_kwargs=True)
    return model


def _remember_mask(owner: Any, args: tuple, kwargs: dict) -> None:
    """Hand the attention mask of the call to the pooler of the module it is called on (the encoder, or
    DeBERTa's classification model). The hook reaches the pooler through that module, so a copy of the model
    (the bf16 copy that evaluates) feeds its own pooler."""
    mask = kwargs.get("attention_mask")
    if mask is None and len(args) > 1:
        mask = args[1]
    owner.pooler.mask = mask


def split_pairs(input_ids: Any, attention_mask: Any, token_type_ids: Any, cls_id: int,
                pad_id: int) -> tuple[Any, Any]:
    """One batch of ``[CLS] A [SEP] B [SEP]`` encodings as two stacked batches: ``[CLS] A [SEP]`` rows, then
    ``[CLS] B [SEP]`` rows (ids and attention mask, right-padded), i.e. what the tokenizer gives for each
    sentence alone. Segments are read from ``token_type_ids``, so every collated pair batch works unchanged;
    a tokenizer that gives none (the study's SentencePiece vocabularies) has them found after the first ``[SEP]``
    (:func:`segments_after_first_sep`).
    """
    import torch
    from torch.nn.utils.rnn import pad_sequence

    real = attention_mask.bool()
    if token_type_ids is None:
        token_type_ids = segments_after_first_sep(input_ids, real)
    cls = input_ids.new_tensor([cls_id])
    firsts = [row[keep] for row, keep in zip(input_ids, real & (token_type_ids == 0), strict=True)]
    seconds = [torch.cat([cls, row[keep]]) for row, keep in zip(input_ids, real & (token_type_ids == 1), strict=True)]
    if any(len(s) < 2 for s in seconds):
        raise ValueError("pooling='cosine' got an example without a second sentence (token_type_ids all 0)")
    rows = firsts + seconds
    ids = pad_sequence(rows, batch_first=True, padding_value=pad_id)
    mask = pad_sequence([torch.ones_like(r) for r in rows], batch_first=True, padding_value=0)
    return ids, mask


def segments_after_first_sep(input_ids: Any, real: Any) -> Any:
    """BERT's segment ids of ``[CLS] A [SEP] B [SEP]`` rows: 1 after the first separator, else 0. The separator is
    each row's last real token (truncation keeps it), so no tokenizer or config needs to name it."""
    import torch

    last = real.long().sum(dim=1) - 1
    sep = input_ids.gather(1, last.clamp(min=0).unsqueeze(1))
    is_sep = (input_ids == sep) & real
    return ((torch.cumsum(is_sep.long(), dim=1) - is_sep.long()) >= 1).long() * real.long()


def siamese_cosine_regressor(encoder_model: Any, low: float, high: float) -> Any:
    """The ``pooling="cosine"`` model (module docstring): ``encoder_model`` is a bare ``AutoModel``; the
    prediction ``shift + scale * cos`` starts by mapping cosine 1 to ``high`` and -1 to ``low``."""
    import torch
    from transformers.modeling_outputs import SequenceClassifierOutput

    prefix = encoder_model.base_model_prefix
    cls_id = getattr(encoder_model.config, "cls_token_id", None)
    pad_id = getattr(encoder_model.config, "pad_token_id", None) or 0

    class SiameseCosineRegressor(torch.nn.Module):
        base_model_prefix = prefix

        def __init__(self) -> None:
            super().__init__()
            self.add_module(prefix, encoder_model)
            self.config = encoder_model.config
            self.scale = torch.nn.Parameter(torch.tensor((high - low) / 2.0))
            self.shift = torch.nn.Parameter(torch.tensor((high + low) / 2.0))
            self.cls_token_id = cls_id

        @property
        def base_model(self) -> Any:
            return getattr(self, prefix)

        def _init_weights(self, module: Any) -> None:  # stability.reinit_top re-draws encoder layers with it
            self.base_model._init_weights(module)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None,
                    labels: Any = None, **_: Any) -> Any:
            first = self.cls_token_id if self.cls_token_id is not None else int(input_ids[0, 0])
            ids, mask = split_pairs(input_ids, attention_mask, token_type_ids, first, pad_id)
            hidden = self.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
            a, b = pooled.float().chunk(2)
            pred = self.shift + self.scale * torch.nn.functional.cosine_similarity(a, b, dim=-1)
            loss = torch.nn.functional.mse_loss(pred, labels.float().view(-1)) if labels is not None else None
            return SequenceClassifierOutput(loss=loss, logits=pred.unsqueeze(-1))

    return SiameseCosineRegressor()


def encoder(model: Any) -> Any:
    """The shared encoder (``model.base_model``: ``bert``, ``deberta``, ``electra``, ``albert`` ...)."""
    return model.base_model


def head_parameter_names(model: Any) -> list[str]:
    """Names of the task-head parameters (everything outside the encoder)."""
    prefix = model.base_model_prefix + "."
    return [n for n, _ in model.named_parameters() if not n.startswith(prefix)]


def save_encoder(model: Any, tokenizer: Any, out_dir: str | Path) -> Path:
    """Save the encoder alone (no head) plus the tokenizer, loadable by :func:`build_model`'s ``init_from``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = encoder(model)
    base.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


def count_parameters(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())
