"""Held-out masked-LM loss on BLURB text: how well a pretrained model predicts masked tokens of biomedical
text it did not train on, measured with no fine-tuning (so with no fine-tuning noise).

The text is the first ``per_set`` development sentences of BLURB's five NER sets (their words joined by
spaces; the relation sets are left out because their entities are replaced by ``@GENE$``-style
placeholders), packed into blocks as the pretraining corpus is and masked with a fixed seed, so that every
model with the same tokenizer sees the same masked positions. A loss is comparable only between models that
share a tokenizer (#0, #3 and #4 of the study; not MiniLM's #2): it is a mean over that tokenizer's pieces.
SumPubMed and BLURB both come from PubMed, so a sentence may occur in both; the text is held out from
training by construction only for the runs that read other corpora.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from medibio.core.errors import DataMissingError
from medibio.pretrain.configs import PretrainConfig
from medibio.pretrain.corpus import Document, iter_blocks
from medibio.pretrain.mlm import MaskedPositionsLM, MLMCollator, mask_seed
from medibio.tasks import loaders, registry
from medibio.tasks.spec import Group

SETS = tuple(name for name in registry.LARGE_SETS if registry.get(name).group is Group.NER)  # the five NER sets
SEED = 0  # of the masks


def blurb_text(data_root: str | Path, per_set: int) -> tuple[list[str], list[str]]:
    """The first ``per_set`` development sentences of each of :data:`SETS` the data root holds, in that order,
    and the sets they come from (the record names them: a root without some sets measures on fewer)."""
    sentences: list[str] = []
    found: list[str] = []
    for name in SETS:
        try:
            dev = loaders.load_task(name, data_root)["dev"]
        except DataMissingError:
            continue
        sentences += [" ".join(words) for words in dev.select(range(min(per_set, len(dev))))["tokens"]]
        found.append(name)
    return sentences, found


def heldout_loss(model: Any, tokenizer: Any, config: PretrainConfig, data_root: str | Path, per_set: int,
                 batch: int = 32) -> dict[str, Any]:
    """The mean MLM loss over the masked pieces of :func:`blurb_text` (``model``: a Hugging Face masked LM, in
    eval mode here), with what it was computed on."""
    import torch

    sentences, sets = blurb_text(data_root, per_set)
    docs = [Document(str(i), text, "blurb-dev") for i, text in enumerate(sentences)]
    blocks = np.asarray(list(iter_blocks(docs, tokenizer, config.seq_length)), dtype=np.int64)
    collator = MLMCollator(tokenizer, config)
    scorer = MaskedPositionsLM(model)
    was_training = model.training
    model.eval()
    total, masked = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(blocks), batch):
            inputs = collator(blocks[start:start + batch], mask_seed(SEED, start, 0))
            inputs = {k: v.to(model.device) for k, v in inputs.items()}
            n = int((inputs["labels"] != -100).sum())
            total += float(scorer(**inputs)) * n
            masked += n
    model.train(was_training)
    return {"loss": total / masked if masked else None, "masked_pieces": masked, "blocks": int(len(blocks)),
            "sentences": len(docs), "sets": sets, "split": "dev", "per_set": per_set, "mask_seed": SEED}
