"""The scaled-down Table 5 arms beside the paper's columns (the chapter's plan table, ``medibio pretrain --show
table5``)."""

from __future__ import annotations

import pandas as pd

from medibio.experiments.table5 import SCALED_DOWN, scaled_steps
from medibio.pretrain.configs import PretrainConfig, get_config


def table5(config: PretrainConfig | str = "mini") -> pd.DataFrame:
    """Table 5 with the scaled-down arms next to the paper's columns."""
    cfg = get_config(config) if isinstance(config, str) else config
    rows = []
    for arm in SCALED_DOWN.arms.values():
        rows.append({"experiment": arm.id, "algorithm": arm.algorithm, "paper base model": arm.paper_base,
                     "paper corpus": arm.text if arm.configuration is not None else "S2ORC (all fields)",
                     "paper steps": arm.paper_steps, "paper BLURB avg": arm.paper_blurb,
                     "here: base": arm.init or "random init", "here: corpus": arm.corpus,
                     f"here: steps ({cfg.name})": scaled_steps(arm, cfg)})
    frame = pd.DataFrame(rows).set_index("experiment")
    frame["paper steps"] = frame["paper steps"].astype("Int64")
    return frame
