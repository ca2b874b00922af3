"""Registry, aggregates, atomic writes, paths and the CLI root."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medibio.cli.main import app
from medibio.core import atomic, paths
from medibio.core.errors import DataMissingError, InputFormatError
from medibio.core.settings import DATA_ENV, Settings
from medibio.tasks import registry, scoring
from medibio.tasks.spec import Group, Problem

# Table 6, column #1 of the paper (MediBioDeBERTa), in registry order.
TABLE6_COL1 = dict(zip(registry.names(), [93.04, 85.13, 89.08, 83.94, 80.23, 73.73, 77.80, 80.47, 82.23,
                                          57.68, 61.09, 56.84, 93.14], strict=True))


def test_registry_has_the_13_blurb_datasets_in_six_groups() -> None:
    assert len(registry.DATASETS) == 13
    assert {s.group for s in registry.DATASETS} == set(Group)
    assert [s.name for s in registry.by_group("NER")] == ["BC5-chem", "BC5-disease", "NCBI-disease", "BC2GM", "JNLPBA"]
    assert registry.get("chemprot").name == "ChemProt"
    assert registry.get("Chem Prot").name == "ChemProt"
    assert registry.get("BC5CDR-chem").name == "BC5-chem"
    assert registry.get("HoC").problem is Problem.MULTILABEL
    assert registry.get("BIOSSES").problem is Problem.REGRESSION
    assert registry.get("DDI").negative_label == "DDI-false"
    assert registry.get("ChemProt").max_length == 256 and registry.get("GAD").max_length == 128
    with pytest.raises(KeyError, match="unknown BLURB dataset"):
        registry.get("nope", "blurb")


def test_registry_resolve_accepts_all_groups_and_lists() -> None:
    assert len(registry.resolve("all")) == 13
    assert [s.name for s in registry.resolve("QA")] == ["PubMedQA", "BioASQ"]
    assert [s.name for s in registry.resolve("DDI,bc2gm,DDI")] == ["DDI", "BC2GM"]


def test_paper_average_reproduces_table6_column1() -> None:
    # (93.04+85.13+89.08+83.94+80.23+73.73+77.80+80.47+82.23+57.68+61.09+56.84+93.14)/13 = 1014.40/13 = 78.03
    agg = scoring.paper_average(TABLE6_COL1)
    assert agg.complete and round(agg.value, 2) == 78.03


def test_blurb_score_is_macro_over_groups() -> None:
    # NER 431.42/5=86.284, PICO 73.73, RE 240.50/3=80.1667, SS 57.68, DC 61.09, QA 149.98/2=74.99
    # -> (86.284+73.73+80.1667+57.68+61.09+74.99)/6 = 72.3234
    agg = scoring.blurb_score(TABLE6_COL1)
    assert agg.complete
    assert agg.value == pytest.approx(72.3234, abs=1e-3)
    groups = scoring.group_averages(TABLE6_COL1)
    assert groups["NER"] == pytest.approx(86.284) and groups["QA"] == pytest.approx(74.99)


def test_aggregates_say_what_they_cover() -> None:
    partial = {k: v for k, v in TABLE6_COL1.items() if k != "EBM-PICO"}
    agg = scoring.blurb_score(partial)
    assert agg.missing == ("PICO",) and not agg.complete
    assert "missing PICO" in agg.describe()
    assert scoring.paper_average(partial).missing == ("EBM-PICO",)
    only_ner = {"BC5-chem": 90.0, "BC2GM": 80.0}
    assert scoring.group_averages(only_ner) == {}  # incomplete group is not averaged
    assert scoring.partial_group_averages(only_ner)["NER"] == (85.0, 2, 5)
    assert scoring.blurb_score({}).value is None


def test_atomic_write_replaces_and_leaves_no_temp_on_error(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "rec.json"
    atomic.write_json(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    with pytest.raises(RuntimeError), atomic.atomic_open(target) as fh:
        fh.write("{half")
        raise RuntimeError("killed")
    assert json.loads(target.read_text()) == {"a": 1}  # old content intact
    assert [p.name for p in target.parent.iterdir()] == ["rec.json"]  # no temp file left
    atomic.write_jsonl(tmp_path / "p.jsonl", [{"id": "1"}, {"id": "2"}])
    assert (tmp_path / "p.jsonl").read_text().splitlines() == ['{"id": "1"}', '{"id": "2"}']


def test_errors_name_file_line_and_expectation(tmp_path: Path) -> None:
    err = InputFormatError(tmp_path / "train.tsv", 7, "3 tab-separated columns", "a\tb")
    assert f"{tmp_path / 'train.tsv'}:7" in str(err) and "3 tab-separated columns" in str(err)
    missing = DataMissingError(tmp_path / "x.tsv", "run medibio data fetch")
    assert "x.tsv" in str(missing) and "medibio data fetch" in str(missing)


def test_data_root_env_override_and_missing_root(tmp_path: Path) -> None:
    # MEDIBIO_DATA is read at a boundary (Settings.from_env) and reaches the library as a folder
    given = Settings.from_env({DATA_ENV: str(tmp_path)})
    assert paths.data_root(given.data_root) == tmp_path.resolve()
    absent = Settings.from_env({DATA_ENV: str(tmp_path / "absent")})
    with pytest.raises(DataMissingError, match="MEDIBIO_DATA"):
        paths.data_root(absent.data_root)
    assert paths.data_root(tmp_path) == tmp_path.resolve()


def test_cli_root_help_lists_every_area() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for verb in ("data", "blurb", "audit", "claims", "finetune", "results", "fields", "pretrain", "vocab", "book"):
        assert verb in result.output, verb


def test_cli_error_exit_code_is_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, DATA_ENV: str(tmp_path / "absent")}
    proc = subprocess.run([sys.executable, "-m", "medibio", "data", "check"], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 2
    assert "missing data" in proc.stderr and "absent" in proc.stderr


@pytest.mark.slow
def test_unreachable_hub_model_gives_a_plain_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from medibio.core.errors import ModelUnavailableError
    from medibio.models import zoo as modelzoo

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match="Hugging Face hub") as info:
        modelzoo.load_config("medibio-test/no-such-model")
    assert "huggingface-cli download medibio-test/no-such-model" in str(info.value)


def test_settings_reach_a_child_process_unchanged(tmp_path: Path) -> None:
    """Every field a process medibio starts needs (folders, limit, processes, progress, the shared-core
    process) survives ``to_env`` in the parent and ``from_env`` in the child."""
    made = Settings(data_root=tmp_path / "data", results_root=tmp_path / "results", cache_root=tmp_path / "cache",
                    limit=7, processes=3, progress=False, share_cores_with=4242)
    assert Settings.from_env(made.to_env()) == made
    plain = Settings(data_root=tmp_path / "d", results_root=tmp_path / "r", cache_root=tmp_path / "c")
    assert Settings.from_env(plain.to_env()) == plain
    assert Settings.from_env(plain.to_env(), limit=2, results_root=tmp_path / "flag") == plain.replace(
        limit=2, results_root=tmp_path / "flag")  # flags win over the environment
