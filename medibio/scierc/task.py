"""SciERC as a :class:`medibio.training.loop.TrainingTask`: batches of documents, the span model's loss,
and evaluation with the SciERC metrics (the dev ``score`` that picks the epoch is the mean F1 of the tasks
the model has heads for)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from medibio.core import progress
from medibio.scierc.model import SpanModel, collate, featurize
from medibio.scierc.presets import SciercConfig
from medibio.tasks import scierc, scierc_metrics

# the dev score of each head set: the F1s averaged for model selection
SELECTION = {("ner", "relation", "coref"): ("ner_f1", "rel_f1", "coref_f1"), ("ner", "coref"): ("ner_f1", "coref_f1"),
             ("relation",): ("rel_f1",)}


class SciercTask:
    """Documents of each split, featurised once; ``entities`` (pipeline) are the entity model's predictions
    that the relation model relates at evaluation, per split and document key."""

    def __init__(self, splits: Mapping[str, Sequence[scierc.Document]], tokenizer: Any, cfg: SciercConfig,
                 heads: Sequence[str], name: str = "SciERC",
                 entities: Mapping[str, Mapping[str, list[Any]]] | None = None) -> None:
        self.name = name
        self.cfg = cfg
        self.heads = tuple(heads)
        self.docs = {k: list(v) for k, v in splits.items()}
        self.features = {k: featurize(v, tokenizer, cfg) for k, v in self.docs.items()}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.entities = entities or {}

    def lost_words(self) -> dict[str, int]:
        """Words cut off because a sentence was longer than a window, per split."""
        return {k: sum(f.lost_words for f in v) for k, v in self.features.items()}

    def split_size(self, split: str) -> int:
        return len(self.docs.get(split, ()))

    def setup(self, accelerator: Any, per_device_batch_size: int, seed: int, notes: list[str]) -> tuple[Any, Any]:
        import torch
        from torch.utils.data import BatchSampler, DataLoader, RandomSampler

        generator = torch.Generator().manual_seed(seed)
        sampler = BatchSampler(RandomSampler(range(len(self.features["train"])), generator=generator),
                               per_device_batch_size, drop_last=False)
        feats = self.features["train"]
        loader = DataLoader(range(len(feats)), batch_sampler=sampler,
                            collate_fn=lambda idx: collate([feats[i] for i in idx], self.pad_id, self.cfg.pad_to_multiple_of))
        self.accelerator = accelerator
        return loader, sampler

    def batch_examples(self, batch: Any) -> int:
        return len(batch["features"])

    def loss(self, model: Any, batch: Any) -> Any:
        return model(batch)["loss"]

    def predict(self, model: SpanModel, split: str) -> list[dict[str, Any]]:
        """Predictions for every document of ``split``, in split order."""
        feats = self.features[split]
        device = next(model.parameters()).device
        given = self.entities.get(split)
        model.eval()
        preds: list[dict[str, Any]] = []
        size = self.cfg.eval_batch_size
        with progress.bar(f"{self.name} {split}", len(feats), unit="doc", minor=True) as bar:
            for k in range(0, len(feats), size):
                chunk = feats[k:k + size]
                batch = collate(chunk, self.pad_id, self.cfg.pad_to_multiple_of, device)
                ents = [given[f.doc.doc_key] for f in chunk] if given is not None else None
                preds.extend(model.predict(batch, ents))
                bar.update(len(chunk))
        return preds

    def evaluate(self, model: Any, split: str, selected: dict[str, float] | None = None
                 ) -> tuple[dict[str, float], list[Any]]:
        preds = self.predict(self.accelerator.unwrap_model(model), split)
        scores = scierc_metrics.flat(scierc_metrics.score_documents(self.docs[split], preds))
        chosen = SELECTION[self.heads]
        scores["score"] = round(sum(scores[k] for k in chosen) / len(chosen), 4)
        return scores, preds

