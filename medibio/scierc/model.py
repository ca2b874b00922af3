"""The span model: NER, relation and coreference heads over span representations of any encoder.

A span ``(s, e)`` is represented as ``[h_first(s); h_last(e); w(e - s)]`` — the encoder's vector of its first
word's first sub-token, of its last word's last sub-token and a learned width embedding (the DyGIE++ / PURE
representation without DyGIE++'s attention head). On top of it:

* **NER**: a feed-forward classifier over all enumerated spans, with a null class (PURE, DyGIE++).
* **Relations**: a classifier over ordered pairs of candidate spans of one sentence,
  ``FFN([p_i; p_j; p_i ∘ p_j])`` with a null class, where ``p = W g`` projects the span to ``head_hidden``
  dimensions first (pairs are many; this keeps them cheap on a CPU); the pipeline's relation model appends the two argument
  types' embeddings (gold in training, predicted at test — PURE's typed entities).
* **Coreference**: the antecedent scorer of Lee et al. (2017) used by DyGIE++: mention scores
  ``m(i) = FFN(g_i)``, pair scores ``s(i, j) = m(i) + m(j) + FFN([p_i; p_j; p_i ∘ p_j])`` (projected as above) against a dummy
  antecedent scored 0, trained by the marginal likelihood of the gold antecedents; clusters follow each
  mention's best antecedent.

Everything is plain PyTorch around a ``transformers`` ``AutoModel``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from medibio.models.split import FrozenBottom
from medibio.scierc.presets import SPAN_MODEL, SciercConfig  # noqa: F401 - SPAN_MODEL versions this module
from medibio.tasks import scierc

NULL = 0


def _ffn(d_in: int, hidden: int, d_out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, d_out))


@dataclass
class DocFeatures:
    """One document ready for the model: its windows and, per enumerated span, where its ends are."""

    doc: scierc.Document
    windows: list[list[int]]
    spans: list[tuple[int, int, int]]  # (start, end, sentence), only spans whose words all fit a window
    span_first: list[int]  # flat position (window * window_length + position) of the span's first sub-token
    span_last: list[int]
    window_length: int
    lost_words: int


def featurize(docs: Sequence[scierc.Document], tokenizer: Any, cfg: SciercConfig) -> list[DocFeatures]:
    """Windows and span positions of each document (positions assume windows padded to ``max_length``;
    the collator re-bases them to the batch's padded length)."""
    out = []
    for doc in docs:
        windows, lost = scierc.make_windows(doc, tokenizer, cfg.max_length, cfg.context)
        first: dict[int, tuple[int, int]] = {}
        last: dict[int, tuple[int, int]] = {}
        for w, win in enumerate(windows):
            first.update({word: (w, pos) for word, pos in win.word_first.items()})
            last.update({word: (w, pos) for word, pos in win.word_last.items()})
        spans, sf, sl = [], [], []
        for s, e, i in scierc.enumerate_spans(doc, cfg.max_span_width):
            if s in first and e in last:
                spans.append((s, e, i))
                sf.append(first[s][0] * cfg.max_length + first[s][1])
                sl.append(last[e][0] * cfg.max_length + last[e][1])
        out.append(DocFeatures(doc, [w.input_ids for w in windows], spans, sf, sl, cfg.max_length, lost))
    return out


def collate(batch: Sequence[DocFeatures], pad_id: int, multiple: int = 1, device: Any = None) -> dict[str, Any]:
    """Stack every window of the batch's documents, padded to the longest rounded up to ``multiple``, the token
    tensors on ``device`` (default: the CPU); span positions re-based. Under bf16 on a CPU each new input shape
    costs oneDNN a kernel build (~6 ms, more than the matmul it serves), so SciERC's windows of every length from
    ~20 to 256 sub-tokens pay one per step unless their lengths are rounded (``SciercConfig.pad_to_multiple_of``)."""
    length = -(-max(len(w) for f in batch for w in f.windows) // multiple) * multiple
    ids, mask, firsts, lasts = [], [], [], []
    offset = 0
    for f in batch:
        for w in f.windows:
            ids.append(w + [pad_id] * (length - len(w)))
            mask.append([1] * len(w) + [0] * (length - len(w)))
        rebase = [offset * length + (p // f.window_length) * length + p % f.window_length for p in f.span_first]
        firsts.append(torch.tensor(rebase, dtype=torch.long))
        lasts.append(torch.tensor([offset * length + (p // f.window_length) * length + p % f.window_length
                                   for p in f.span_last], dtype=torch.long))
        offset += len(f.windows)
    return {"input_ids": torch.tensor(ids, dtype=torch.long, device=device),
            "attention_mask": torch.tensor(mask, dtype=torch.long, device=device),
            "span_first": firsts, "span_last": lasts, "features": list(batch)}


def heads_in_fp32(device: torch.device) -> Any:
    """The span heads compute in fp32 also where the encoder runs under autocast: their matmuls take the
    shape of each document's span and pair counts, and on a CPU every new shape of a bf16 matmul costs a oneDNN
    kernel build that outweighs the matmul (a SciERC step under bf16 took 438 ms with bf16 heads, against 348
    ms all in fp32); their FLOPs are a small share of a step. The encoder's output is cast to fp32 before
    them (:meth:`SpanModel.span_embeddings`)."""
    return torch.autocast(device.type, enabled=False)


class SpanModel(nn.Module):
    """Encoder + span heads. ``heads`` ⊆ {"ner", "relation", "coref"}; ``typed_relations`` gives the
    relation head the argument types (the pipeline's relation model)."""

    def __init__(self, encoder: nn.Module, cfg: SciercConfig, heads: Sequence[str] = ("ner", "relation", "coref"),
                 typed_relations: bool = False) -> None:
        super().__init__()
        self.encoder = encoder
        self.cfg = cfg
        reuse = cfg.reuses_frozen_layers(encoder.config.num_hidden_layers)
        self.split = FrozenBottom(encoder, cfg.train_layers) if reuse else None
        self.heads = tuple(heads)
        self.typed_relations = typed_relations
        hidden = encoder.config.hidden_size
        self.width = nn.Embedding(cfg.max_span_width, cfg.width_embedding)
        span_dim = 2 * hidden + cfg.width_embedding
        self.span_dim = span_dim
        self.dropout = nn.Dropout(cfg.dropout)
        if "ner" in self.heads:
            self.ner = _ffn(span_dim, cfg.head_hidden, len(scierc.ENTITY_TYPES) + 1, cfg.dropout)
        pair_dim = cfg.head_hidden
        if "relation" in self.heads:
            extra = 2 * cfg.type_embedding if typed_relations else 0
            if typed_relations:
                self.type_emb = nn.Embedding(len(scierc.ENTITY_TYPES) + 1, cfg.type_embedding)
            self.relation_proj = nn.Linear(span_dim, pair_dim)
            self.relation = _ffn(3 * pair_dim + extra, cfg.head_hidden, len(scierc.RELATION_TYPES) + 1, cfg.dropout)
        if "coref" in self.heads:
            self.mention = _ffn(span_dim, cfg.head_hidden, 1, cfg.dropout)
            self.coref_proj = nn.Linear(span_dim, pair_dim)
            self.antecedent = _ffn(3 * pair_dim, cfg.head_hidden, 1, cfg.dropout)

    def head_parameters(self) -> list[nn.Parameter]:
        return [p for n, p in self.named_parameters() if not n.startswith("encoder.")]

    def span_embeddings(self, batch: dict[str, Any]) -> list[torch.Tensor]:
        """Per document, ``[n_spans, span_dim]``, in fp32 (:func:`heads_in_fp32`)."""
        if self.split is not None:  # a window's key: its document and its place in it
            keys = [(f.doc.doc_key, w) for f in batch["features"] for w in range(len(f.windows))]
            hidden = self.split(keys, batch["input_ids"], batch["attention_mask"])
        else:
            hidden = self.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        flat = hidden.float().reshape(-1, hidden.shape[-1])
        embs = []  # index_select rather than x[idx] here and below: its backward (index_add) is 6-8x faster on a CPU
        for f, first, last in zip(batch["features"], batch["span_first"], batch["span_last"], strict=True):
            widths = torch.tensor([e - s for s, e, _ in f.spans], dtype=torch.long, device=flat.device)
            g = torch.cat([flat.index_select(0, first.to(flat.device)), flat.index_select(0, last.to(flat.device)),
                           self.width(widths)], dim=-1)
            embs.append(self.dropout(g))
        return embs

    # -- candidates ----------------------------------------------------------------------------------------

    @staticmethod
    def _entity_score(ner_logits: torch.Tensor) -> torch.Tensor:
        """How much more likely some entity type is than none (the pruning score)."""
        return torch.logsumexp(ner_logits[:, 1:], dim=-1) - ner_logits[:, NULL]

    def _top_spans(self, f: DocFeatures, score: torch.Tensor, per_word: float, by_sentence: bool) -> set[int]:
        if by_sentence:
            chosen: set[int] = set()
            for i, sent in enumerate(f.doc.sentences):
                idx = [k for k, sp in enumerate(f.spans) if sp[2] == i]
                if not idx:
                    continue
                k = max(1, math.ceil(per_word * len(sent)))
                top = torch.topk(score[idx], min(k, len(idx))).indices.tolist()
                chosen.update(idx[t] for t in top)
            return chosen
        k = max(1, math.ceil(per_word * f.doc.n_words))
        return set(torch.topk(score, min(k, len(f.spans))).indices.tolist())

    # -- losses and predictions ----------------------------------------------------------------------------

    def forward(self, batch: dict[str, Any], gold_types: bool = False) -> dict[str, Any]:
        """Training losses (``loss`` and one per head) for a batch of documents."""
        embs = self.span_embeddings(batch)
        with heads_in_fp32(embs[0].device):
            return self._losses(batch, embs, gold_types)

    def _losses(self, batch: dict[str, Any], embs: list[torch.Tensor], gold_types: bool) -> dict[str, Any]:
        device = embs[0].device
        losses = {h: torch.zeros((), device=device) for h in self.heads}
        scored = dict.fromkeys(self.heads, False)
        for f, g in zip(batch["features"], embs, strict=True):
            index = {(s, e): k for k, (s, e, _) in enumerate(f.spans)}
            gold_ent = {(s, e): t for s, e, t in f.doc.all_entities() if (s, e) in index}
            score = None
            if "ner" in self.heads:
                logits = self.ner(g)
                target = torch.zeros(len(f.spans), dtype=torch.long, device=device)
                for (s, e), t in gold_ent.items():
                    target[index[(s, e)]] = scierc.ENTITY_TYPES.index(t) + 1
                keep = self._ner_sample(target)
                losses["ner"] = losses["ner"] + nn.functional.cross_entropy(logits[keep].float(), target[keep],
                                                                            weight=self._ner_weights(device))
                score = self._entity_score(logits.detach())
                scored["ner"] = True
            gold_idx = {index[span] for span in gold_ent}
            if "relation" in self.heads:
                cand = set(gold_idx)
                if score is not None and not self.typed_relations:
                    cand |= self._top_spans(f, score, self.cfg.relation_spans_per_word, by_sentence=True)
                types = {index[span]: t for span, t in gold_ent.items()}
                rel_loss = self._relation_loss(f, g, sorted(cand), types, index)
                if rel_loss is not None:
                    losses["relation"] = losses["relation"] + rel_loss
                    scored["relation"] = True
            if "coref" in self.heads:
                cand = set(gold_idx)
                if score is not None:
                    cand |= self._top_spans(f, score, self.cfg.coref_spans_per_word, by_sentence=False)
                coref_loss = self._coref_loss(f, g, sorted(cand, key=lambda k: f.spans[k][:2]), index)
                if coref_loss is not None:
                    losses["coref"] = losses["coref"] + coref_loss
                    scored["coref"] = True
        for head in (h for h in self.heads if not scored[h]):
            losses[head] = losses[head] + self._zero_loss(head, embs)
        n = len(batch["features"])
        weights = {"ner": self.cfg.ner_weight, "relation": self.cfg.relation_weight, "coref": self.cfg.coref_weight}
        total = sum(weights[h] * losses[h] / n for h in self.heads)
        return {"loss": total, **{h: (losses[h] / n).detach() for h in self.heads}}

    def _head_modules(self, head: str) -> list[nn.Module]:
        names = {"ner": ("ner",), "relation": ("relation_proj", "relation", "type_emb"),
                 "coref": ("mention", "coref_proj", "antecedent")}[head]
        return [getattr(self, name) for name in names if hasattr(self, name)]

    def _zero_loss(self, head: str, embs: Sequence[torch.Tensor]) -> torch.Tensor:
        """A loss of value 0 that still reaches ``head``'s parameters and the encoder (through the span
        embeddings), for a batch that gives the head nothing to score (a document without two entities in one
        sentence: 3 of SciERC's 350 training abstracts). Backward then always has a graph, and under several
        processes every parameter gets its (zero) gradient, as DistributedDataParallel requires of each step."""
        params = [p.sum() for m in self._head_modules(head) for p in m.parameters()]
        return 0.0 * (torch.stack(params).sum() + sum(g.sum() for g in embs))

    def _ner_sample(self, target: torch.Tensor) -> torch.Tensor:
        """Indices of the spans in the NER loss: all, or every entity plus ``ner_negatives`` random others."""
        return self._sample(target, self.cfg.ner_negatives)

    @staticmethod
    def _sample(target: torch.Tensor, k: int | None) -> torch.Tensor:
        """Every positive index plus at most ``k`` random negative (``NULL``) ones; all when ``k`` is None."""
        negatives = (target == NULL).nonzero().squeeze(-1)
        if k is None or len(negatives) <= k:
            return torch.arange(len(target), device=target.device)
        chosen = negatives[torch.randperm(len(negatives), device=target.device)[:k]]
        return torch.cat([(target != NULL).nonzero().squeeze(-1), chosen])

    def _ner_weights(self, device: torch.device) -> torch.Tensor | None:
        if self.cfg.ner_null_weight == 1.0:
            return None
        weights = torch.ones(len(scierc.ENTITY_TYPES) + 1, device=device)
        weights[NULL] = self.cfg.ner_null_weight
        return weights

    def _pairs(self, f: DocFeatures, cand: Sequence[int]) -> list[tuple[int, int]]:
        return [(i, j) for i in cand for j in cand if i != j and f.spans[i][2] == f.spans[j][2]]

    def _relation_logits(self, g: torch.Tensor, pairs: Sequence[tuple[int, int]],
                         types: dict[int, str] | None) -> torch.Tensor:
        device = g.device
        rows = sorted({k for pair in pairs for k in pair})  # each candidate projected once, then paired
        at = {k: r for r, k in enumerate(rows)}
        proj = self.relation_proj(g.index_select(0, torch.tensor(rows, device=device)))
        a = proj.index_select(0, torch.tensor([at[p[0]] for p in pairs], device=device))
        b = proj.index_select(0, torch.tensor([at[p[1]] for p in pairs], device=device))
        parts = [a, b, a * b]
        if self.typed_relations:
            ids = [[scierc.ENTITY_TYPES.index(types[i]) + 1 if types and i in types else 0 for i in p] for p in pairs]
            t = self.type_emb(torch.tensor(ids, device=device))
            parts += [t[:, 0], t[:, 1]]
        return self.relation(torch.cat(parts, dim=-1))

    def _relation_loss(self, f: DocFeatures, g: torch.Tensor, cand: Sequence[int], types: dict[int, str],
                       index: dict[tuple[int, int], int]) -> torch.Tensor | None:
        pairs = self._pairs(f, cand)
        if not pairs:
            return None
        gold = {(index[(r[0], r[1])], index[(r[2], r[3])]): scierc.RELATION_TYPES.index(r[4]) + 1
                for r in f.doc.all_relations() if (r[0], r[1]) in index and (r[2], r[3]) in index}
        target = torch.tensor([gold.get(p, NULL) for p in pairs], device=g.device)
        keep = self._sample(target, self.cfg.relation_negatives)
        pairs = [pairs[k] for k in keep.tolist()]
        return nn.functional.cross_entropy(self._relation_logits(g, pairs, types).float(), target[keep])

    def _antecedent_scores(self, g: torch.Tensor, cand: Sequence[int]) -> torch.Tensor:
        """``[n, 1 + n]`` scores: column 0 the dummy, column 1 + j antecedent j (-inf unless j < i)."""
        device = g.device
        chosen = g.index_select(0, torch.tensor(list(cand), device=device))
        m = self.mention(chosen).squeeze(-1)
        n = len(cand)
        i_idx, j_idx = torch.tril_indices(n, n, offset=-1, device=device)
        keep = (i_idx - j_idx) <= self.cfg.max_antecedents
        i_idx, j_idx = i_idx[keep], j_idx[keep]
        scores = torch.full((n, n), float("-inf"), device=device)
        if len(i_idx):
            proj = self.coref_proj(chosen)
            gi, gj = proj.index_select(0, i_idx), proj.index_select(0, j_idx)
            pair = self.antecedent(torch.cat([gi, gj, gi * gj], dim=-1)).squeeze(-1)
            scores[i_idx, j_idx] = (m.index_select(0, i_idx) + m.index_select(0, j_idx) + pair).float()
        return torch.cat([torch.zeros((n, 1), device=device), scores], dim=1)

    def _coref_loss(self, f: DocFeatures, g: torch.Tensor, cand: Sequence[int],
                    index: dict[tuple[int, int], int]) -> torch.Tensor | None:
        if len(cand) < 2:
            return None
        cluster_of = {index[m]: c for c, cl in enumerate(f.doc.clusters) for m in cl if m in index}
        scores = self._antecedent_scores(g, cand)
        n = len(cand)
        gold = torch.zeros((n, n + 1), dtype=torch.bool, device=g.device)
        for a, i in enumerate(cand):
            for b in range(a):
                j = cand[b]
                if i in cluster_of and cluster_of.get(j) == cluster_of[i] and a - b <= self.cfg.max_antecedents:
                    gold[a, b + 1] = True
            if not gold[a].any():
                gold[a, 0] = True
        marginal = torch.logsumexp(scores.masked_fill(~gold, float("-inf")), dim=1)
        return (torch.logsumexp(scores, dim=1) - marginal).mean()

    @torch.no_grad()
    def predict(self, batch: dict[str, Any], entities: Sequence[Sequence[tuple[int, int, str]]] | None = None
                ) -> list[dict[str, Any]]:
        """Per document ``{"entities", "relations", "clusters"}``. ``entities`` (the pipeline's relation
        model) supplies the predicted entities instead of this model's NER head."""
        embs = self.span_embeddings(batch)
        with heads_in_fp32(embs[0].device):
            return self._predictions(batch, embs, entities)

    def _predictions(self, batch: dict[str, Any], embs: list[torch.Tensor],
                     entities: Sequence[Sequence[tuple[int, int, str]]] | None) -> list[dict[str, Any]]:
        out = []
        for d, (f, g) in enumerate(zip(batch["features"], embs, strict=True)):
            index = {(s, e): k for k, (s, e, _) in enumerate(f.spans)}
            if entities is not None:
                ents = [tuple(e) for e in entities[d] if (e[0], e[1]) in index]
            elif "ner" in self.heads:
                labels = self.ner(g).argmax(-1).tolist()
                ents = _non_overlapping([(s, e, scierc.ENTITY_TYPES[lab - 1]) for (s, e, _), lab in zip(f.spans, labels,
                                                                                                    strict=True)
                                         if lab != NULL])
            else:
                ents = []
            pred: dict[str, Any] = {"doc_key": f.doc.doc_key, "entities": [list(e) for e in ents],
                                    "relations": [], "clusters": []}
            cand = sorted(index[(s, e)] for s, e, _ in ents)
            if "relation" in self.heads:
                types = {index[(s, e)]: t for s, e, t in ents}
                pairs = self._pairs(f, cand)
                if pairs:
                    labels = self._relation_logits(g, pairs, types).argmax(-1).tolist()
                    pred["relations"] = [[*f.spans[i][:2], *f.spans[j][:2], scierc.RELATION_TYPES[lab - 1]]
                                         for (i, j), lab in zip(pairs, labels, strict=True) if lab != NULL]
            if "coref" in self.heads and len(cand) >= 2:
                best = self._antecedent_scores(g, cand).argmax(-1).tolist()
                pred["clusters"] = _clusters([f.spans[k][:2] for k in cand], best)
            out.append(pred)
        return out


def _non_overlapping(entities: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Flat entities: predicted spans are kept greedily, longest first, dropping any that overlaps a kept
    one. SciERC's gold is nearly flat (88 overlapping pairs among its 8,094 entities), so this costs at most
    about 1 % recall and removes many contradictory nested predictions."""
    kept: list[tuple[int, int, str]] = []
    for ent in sorted(entities, key=lambda x: (x[0] - x[1], x[0])):
        if all(ent[1] < k[0] or k[1] < ent[0] for k in kept):
            kept.append(ent)
    return sorted(kept)


def _clusters(mentions: Sequence[tuple[int, int]], antecedent: Sequence[int]) -> list[list[list[int]]]:
    """Clusters from each mention's best antecedent (``0`` = none; ``1 + j`` = mention ``j``)."""
    cluster_of: dict[int, int] = {}
    clusters: list[list[int]] = []
    for i, a in enumerate(antecedent):
        if a == 0:
            continue
        j = a - 1
        if j not in cluster_of:
            cluster_of[j] = len(clusters)
            clusters.append([j])
        cluster_of[i] = cluster_of[j]
        clusters[cluster_of[j]].append(i)
    return [[list(mentions[k]) for k in sorted(c)] for c in clusters]
