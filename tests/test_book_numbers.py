"""The numbers the chapters' prose glues (medibio.book.numbers): computed from the paper's tables, the
presets and run summaries, with the same keys whatever the build holds."""

from __future__ import annotations

import pandas as pd
import pytest

from medibio.book import notebook, numbers
from medibio.paper import table4, tables
from medibio.paper.audit import RUNS_TABLE4
from medibio.results import ift as experiments
from medibio.scierc import presets


def _text(found: numbers.Numbers) -> dict[str, str]:
    """What each key reads on the page."""
    return {key: notebook.glue_text(value, fmt) for key, (value, fmt) in found.items()}


def test_table4_gains_come_from_the_printed_means_and_spreads() -> None:
    printed = tables.load_table(4)
    mean = printed.pivot(index="task", columns="model", values="mean")
    sd = printed.pivot(index="task", columns="model", values="std")
    found = numbers.table4_gains(table4.paper_gains(printed), RUNS_TABLE4)
    assert found["t4_runs"][0] == 5
    for task in ("NER", "JRE", "Coref"):
        key = f"t4_{task.lower()}"
        diff = mean.loc[task, "SciDeBERTa v2"] - mean.loc[task, "SciDeBERTa"]
        assert found[f"{key}_diff"][0] == pytest.approx(diff)
        assert found[f"{key}_sd_v1"][0] == pytest.approx(diff / sd.loc[task, "SciDeBERTa"])
        assert found[f"{key}_sd_v2"][0] == pytest.approx(diff / sd.loc[task, "SciDeBERTa v2"])
        assert 0.0 < found[f"{key}_p"][0] < 1.0 and (found[f"{key}_t"][0] > 0) == (diff > 0)
    shown = _text(found)
    assert shown["t4_ner_diff"].startswith(("+", "-")) and len(shown["t4_ner_p"].split(".")[1]) == 3


def _cfg(**changes: object) -> presets.SciercConfig:
    base = {"epochs": 3, "max_train_docs": 120, "max_dev_docs": 50, "max_test_docs": None, "train_layers": 2,
            "ner_negatives": 64, "relation_negatives": 32, "max_span_width": 8, "reuse_frozen_layers": True}
    return presets.SciercConfig(**{**base, **changes})


SIZES = {"train": 350, "dev": 50, "test": 100}


def test_scierc_budget_says_what_a_capped_profile_leaves_out() -> None:
    found = _text(numbers.scierc_budget(_cfg(), SIZES, 6, [1, 2, 3], "all-MiniLM-L6-v2", _cfg(epochs=30), [1, 2, 3, 4, 5]))
    assert found["scierc_seeds_n"] == "3 seeds" and found["scierc_seeds"] == "1, 2, 3"
    assert (found["scierc_train_used"], found["scierc_train_total"]) == ("120", "350")
    assert (found["scierc_dev_used"], found["scierc_test_used"], found["scierc_test_official"]) == ("50", "100", "yes")
    assert (found["scierc_layers_trained"], found["scierc_layers"], found["scierc_layers_kept"]) == ("2", "6", "4")
    assert found["scierc_frozen_reused"] == "yes"
    assert _text(numbers.scierc_budget(_cfg(reuse_frozen_layers=False), SIZES, 6, [1], "m", _cfg(),
                                       [1]))["scierc_frozen_reused"] == "no"
    assert (found["scierc_ner_negatives"], found["scierc_relation_negatives"]) == ("at most 64", "at most 32")
    assert (found["scierc_gpu_epochs"], found["scierc_gpu_seeds"]) == ("30", "5")


def test_scierc_budget_without_caps_sampling_or_frozen_layers() -> None:
    cfg = _cfg(max_train_docs=None, max_dev_docs=10_000, max_test_docs=40, train_layers=None, ner_negatives=None,
               relation_negatives=None)
    found = _text(numbers.scierc_budget(cfg, SIZES, 12, [1], "tiny", cfg, [1]))
    assert (found["scierc_train_used"], found["scierc_dev_used"]) == ("350", "50")  # a cap above the split is the split
    assert (found["scierc_test_used"], found["scierc_test_official"]) == ("40", "no")
    assert (found["scierc_layers_trained"], found["scierc_layers_kept"]) == ("12", "0")
    assert found["scierc_frozen_reused"] == "no"  # nothing frozen below the layers that learn
    nothing_learns = numbers.scierc_budget(_cfg(train_layers=0), SIZES, 12, [1], "tiny", cfg, [1])
    assert _text(nothing_learns)["scierc_frozen_reused"] == "no"  # no layer above a split to run each step
    assert found["scierc_ner_negatives"] == found["scierc_relation_negatives"] == "all"


def test_scierc_budget_of_the_real_presets_has_the_same_keys_on_every_profile() -> None:
    keys = None
    for profile in ("smoke", "cpu", "gpu", "paper"):
        found = numbers.scierc_budget(presets.preset(profile), SIZES, 6, presets.seeds(profile), "m",
                                      presets.preset("gpu"), presets.seeds("gpu"))
        assert keys is None or set(found) == keys
        keys = set(found)
    smoke = _text(numbers.scierc_budget(presets.preset("smoke"), SIZES, 2, presets.seeds("smoke"), "m",
                                        presets.preset("gpu"), presets.seeds("gpu")))
    n = len(presets.seeds("smoke"))
    assert smoke["scierc_seeds_n"] == f"{n} seed{'' if n == 1 else 's'}"  # never "1 seed(s)"


def _summary(runs: int) -> dict:
    return {"runs": runs, "wall_total_s": 725.04, "wall_per_run_s": 241.68, "train_docs_per_s": 3.21,
            "train_docs_per_s_min": 2.9, "train_docs_per_s_max": 3.5, "train_docs": 120, "epochs": 3,
            "peak_memory_mb": 900.0, "device": "cpu"}


REACH = {"entities": 1685, "too_wide": 9, "relations": 974, "relations_touching": 3}


def test_scierc_cost_reads_the_records_summary_and_the_unreachable_entities() -> None:
    found = numbers.scierc_cost(_summary(3), REACH)
    shown = _text(found)
    assert found["wall_total_s"][0] == 725.0 and shown["wall_total_s"] == "12 min 05 s"
    assert shown["scierc_wall_per_run"] == "4 min 02 s" and shown["scierc_device"] == "cpu"
    assert (shown["scierc_docs_per_s"], shown["scierc_docs_per_s_min"], shown["scierc_docs_per_s_max"]) == ("3.2", "2.9", "3.5")
    assert (shown["unreachable_test_entities"], shown["scierc_test_entities"]) == ("9", "1,685")
    assert shown["scierc_unreachable_share"] == "0.5"
    assert (shown["scierc_unreachable_relations"], shown["scierc_test_relations"]) == ("3", "974")


def test_scierc_cost_without_runs_glues_the_same_keys_as_not_available() -> None:
    empty = {**_summary(0), "wall_total_s": 0.0, "wall_per_run_s": float("nan"), "train_docs_per_s": float("nan"),
             "train_docs": 0, "device": ""}
    found = _text(numbers.scierc_cost(empty, REACH))
    assert set(found) == set(numbers.scierc_cost(_summary(3), REACH))
    assert found["scierc_runs"] == "0" and found["wall_total_s"] == found["scierc_device"] == notebook.NOT_AVAILABLE
    assert found["unreachable_test_entities"] == "9"  # the data's property, with or without runs


def test_minutes() -> None:
    assert numbers.minutes(38.4) == "38 s" and numbers.minutes(60) == "1 min 00 s" and numbers.minutes(3725) == "62 min 05 s"


def _ift(with_tests: bool = True) -> pd.DataFrame:
    frame = pd.DataFrame({"mean": [84.0, 86.5, 83.0], "dev mean": [80.0, 82.0, 81.0],
                          "frozen encoder": [84.6, 84.6, 84.6]},
                         index=[experiments.BASELINE, "STS-B", "SICK-R"])
    frame["gain over baseline"] = frame["mean"] - frame.loc[experiments.BASELINE, "mean"]
    if with_tests:
        frame["95% CI of the gain"] = ["", "[+0.50, +4.25]", "[-2.00, +0.10]"]
        frame["p"] = [float("nan"), 0.012, 0.21]
        frame["significant"] = ["", "yes", "no"]
    return frame


def test_ift_summary_names_the_task_chosen_on_dev_with_its_interval() -> None:
    found = _text(numbers.ift_summary(_ift(), experiments.BASELINE, "STS-B"))
    assert found["ift_chosen"] == "STS-B" and found["ift_tried"] == "2" and found["ift_significant_n"] == "1"
    assert (found["ift_chosen_mean"], found["ift_direct_mean"], found["ift_chosen_gain"]) == ("86.50", "84.00", "+2.50")
    assert (found["ift_chosen_gain_ci"], found["ift_chosen_p"], found["ift_chosen_significant"]) == ("[+0.50, +4.25]", "0.012", "yes")
    assert found["ift_frozen"] == "84.60" and found["ift_direct_seeds"] == notebook.NOT_AVAILABLE  # no "n" column
    counted = _ift()
    counted["n"] = [3, 3, 3]
    assert _text(numbers.ift_summary(counted, experiments.BASELINE, "STS-B"))["ift_direct_seeds"] == "3"


def test_ift_summary_without_a_choice_or_tests_keeps_every_key() -> None:
    keys = set(numbers.ift_summary(_ift(), experiments.BASELINE, "STS-B"))
    found = _text(numbers.ift_summary(_ift(with_tests=False), experiments.BASELINE, None))
    assert set(found) == keys
    assert found["ift_chosen"] == found["ift_chosen_gain"] == found["ift_chosen_p"] == notebook.NOT_AVAILABLE
    assert found["ift_significant_n"] == notebook.NOT_AVAILABLE and found["ift_direct_mean"] == "84.00"


def test_below_frozen_lists_rows_or_says_none() -> None:
    assert _text(numbers.below_frozen([], "rows")) == {"rows_n": "0", "rows": "none"}
    assert _text(numbers.below_frozen(["MiniLM / DDI", "MiniLM / HoC"], "rows"))["rows"] == "MiniLM / DDI, MiniLM / HoC"


def test_pretrain_batch_multiplies_out_the_papers_layout() -> None:
    from medibio.pretrain import configs

    found = _text(numbers.pretrain_batch(configs.get_config("medibiodeberta"), "m"))
    assert (found["m_per_device"], found["m_processes"], found["m_accumulation"]) == ("4,096", "3", "4")
    assert found["m_batch"] == f"{4096 * 3 * 4:,}" == "49,152"
    assert (found["m_warmup"], found["m_steps"], found["m_warmup_share"]) == ("1,000", "10,000", "10")
