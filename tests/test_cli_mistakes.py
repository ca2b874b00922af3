"""Command-line mistakes (issue 12): each gives one line on stderr saying what was wrong and what is allowed,
exit code 2, no traceback, before any work starts. Run through ``medibio.cli.main``, the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medibio.tasks import predictions
from tests.support.cli import run_main as _run

METRICS_ROOT = Path(__file__).parent / "fixtures" / "metrics" / "data"
DATASETS = "BC5-chem, BC5-disease, NCBI-disease"
PROFILES = "smoke, cpu, gpu, paper"


# (argv, fragments of the one error line). A missing option check would start real work, so every finetune
# and grid case points at an empty data root: a slip fails fast instead of training.
MISTAKES: list[tuple[list[str], tuple[str, ...]]] = [
    (["finetune", "--task", "BOGUS"], ("'--task'", "unknown dataset 'BOGUS'", DATASETS, "a group NER, PICO")),
    (["finetune", "--task", ","], ("'--task'", "unknown dataset selection",)),
    (["finetune", "--task", "BIOSSES", "--profile", "bogus"], ("'--profile'", "unknown profile 'bogus'", PROFILES)),
    (["finetune", "--task", "BIOSSES", "--seeds", "a,b"], ("'--seeds'", "comma list of distinct integers", "'a,b'")),
    (["finetune", "--task", "BIOSSES", "--seeds", "1,1"], ("'--seeds'", "distinct", "'1,1'")),
    (["finetune", "--task", "BIOSSES", "--seeds", "-1"], ("'--seeds'", "in [0, 4294967295]")),
    (["finetune", "--task", "BIOSSES", "--seeds", "1,4294967296"], ("'--seeds'", "in [0, 4294967295]",
                                                                    "'1,4294967296'")),
    (["scierc", "train", "--seeds", "99999999999"], ("'--seeds'", "in [0, 4294967295]")),
    (["grid", "--task", "BIOSSES", "--seeds", "4294967296"], ("'--seeds'", "in [0, 4294967295]")),
    (["finetune", "--task", "BIOSSES", "--model", ""], ("'--model'", "not empty", "''")),
    (["finetune", "--task", "BIOSSES", "--model", " minilm"], ("'--model'", "no surrounding spaces")),
    (["grid", "--task", "BIOSSES", "--model", ""], ("'--model'", "not empty")),
    (["scierc", "train", "--model", ""], ("'--model'", "not empty")),
    (["blurb", "frozen", "--model", ""], ("'--model'", "not empty")),
    (["pretrain", "--from", ""], ("'--from'", "not empty")),
    (["finetune", "--task", "BIOSSES", "--intermediate", "NOPE"], ("'--intermediate'", "unknown task 'NOPE'",
                                                                   "STS-B", "BIOSSES")),
    (["finetune", "--task", "BIOSSES", "--config", "/missing.yaml"], ("'--config'", "/missing.yaml", "does not exist")),
    (["finetune", "--task", "BIOSSES", "--lr", "-1"], ("'--lr'", "a finite number > 0", "-1")),
    (["finetune", "--task", "BIOSSES", "--lr", "nan"], ("'--lr'", "a finite number > 0", "nan")),
    (["finetune", "--task", "BIOSSES", "--lr", "inf"], ("'--lr'", "a finite number > 0", "inf")),
    (["finetune", "--task", "BIOSSES", "--epochs", "0"], ("'--epochs'", "an integer >= 1", "got 0")),
    (["finetune", "--task", "BIOSSES", "--epochs", "abc"], ("'--epochs'", "integer")),
    (["finetune", "--task", "BIOSSES", "--batch-size", "0"], ("'--batch-size'", "an integer >= 1")),
    (["finetune", "--task", "BIOSSES", "--max-length", "1"], ("'--max-length'", "an integer >= 2")),
    (["finetune", "--task", "BIOSSES", "--grad-accum", "0"], ("'--grad-accum'", "an integer >= 1")),
    (["finetune", "--task", "BIOSSES", "--max-train-examples", "0"], ("'--max-train-examples'", ">= 1")),
    (["finetune", "--task", "BIOSSES", "--max-dev-examples", "-5"], ("'--max-dev-examples'", ">= 1")),
    (["finetune", "--task", "BIOSSES", "--llrd", "0"], ("'--llrd'", "a number in (0, 1]")),
    (["finetune", "--task", "BIOSSES", "--llrd", "1.5"], ("'--llrd'", "a number in (0, 1]")),
    (["finetune", "--task", "BIOSSES", "--reinit-top", "-1"], ("'--reinit-top'", ">= 0")),
    (["finetune", "--task", "BIOSSES", "--longer-training", "0"], ("'--longer-training'", "> 0")),
    (["finetune", "--task", "BIOSSES", "--class-weighting", "bogus"], ("'--class-weighting'", "balanced")),
    (["finetune", "--task", "BIOSSES", "--variant", "../up"], ("'--variant'", "folder name", "'../up'")),
    (["finetune"], ("Missing option '--task'",)),
    (["grid", "--task", "BOGUS"], ("'--task'", "unknown dataset 'BOGUS'")),
    (["grid", "--task", "BIOSSES", "--profile", "bogus"], ("'--profile'", PROFILES)),
    (["grid", "--task", "BIOSSES", "--seeds", "x"], ("'--seeds'", "comma list")),
    (["grid", "--task", "BIOSSES", "--lrs", "0,1e-5"], ("'--lrs'", "numbers > 0")),
    (["grid", "--task", "BIOSSES", "--lrs", "1e-5,fast"], ("'--lrs'", "numbers > 0")),
    (["grid", "--task", "BIOSSES", "--batch-sizes", "16,0"], ("'--batch-sizes'", "integers >= 1")),
    (["grid", "--task", "BIOSSES", "--epochs", "0,3"], ("'--epochs'", "integers >= 1")),
    (["grid", "--task", "BIOSSES", "--config", "/missing.yaml"], ("'--config'", "does not exist")),
    (["grid", "--task", "BIOSSES", "--max-train-examples", "0"], ("'--max-train-examples'", ">= 1")),
    (["presets", "--profile", "bogus"], ("'--profile'", "unknown profile 'bogus'", PROFILES)),
    (["pretrain", "--config", "nope"], ("'--config'", "unknown pretraining config 'nope'", "mini", "gpu-mini")),
    (["pretrain", "--experiment", "nope"], ("'--experiment'", "unknown experiment 'nope'", "table5-1")),
    (["pretrain", "--max-steps", "0"], ("'--max-steps'", ">= 1")),
    (["pretrain", "--effective-batch", "0"], ("'--effective-batch'", ">= 1")),
    (["pretrain", "--per-device-batch", "0"], ("'--per-device-batch'", ">= 1")),
    (["pretrain", "--show", "table9"], ("'--show'", "table3")),
    (["vocab", "train", "biomed-abstracts", "--out", "/tmp/never", "--size", "0"], ("'--size'", ">= 8")),
    (["vocab", "train", "biomed-abstracts", "--out", "/tmp/never", "--max-mb", "-1"], ("'--max-mb'", ">= 0")),
    (["fields", "cooccurrence", "/missing.jsonl"], ("'inputs'", "does not exist")),
    (["fields", "cooccurrence", "{records}", "--seeds", "Medicin"], ("'--seeds'", "unknown field of study",
                                                                     "Medicine")),
    (["fields", "cooccurrence", "{records}", "--k", "0"], ("'--k'", ">= 1")),
    (["fields", "cooccurrence", "{records}", "--min-share", "1"], ("'--min-share'", "[0, 1)")),
    (["fields", "cooccurrence", "{records}", "--order", "size"], ("'--order'", "group, count, canonical")),
    (["fields", "cooccurrence", "{records}", "--examples", "-1"], ("'--examples'", ">= 0")),
    (["fields", "cooccurrence", "{records}", "--threads", "0"], ("'--threads'", ">= 1")),
    (["fields", "cooccurrence", "{records}", "--memory-limit", "lots"], ("'--memory-limit'", "1GB")),
    (["fields", "subset", "{records}", "--out", "/tmp/never", "--text", "all"], ("'--text'", "abstract, body, both")),
    (["fields", "subset", "{records}", "--out", "/tmp/never", "--group", "nope"], ("'--group'", "field of study")),
    (["fields", "subset", "{records}", "--out", "/tmp/never", "--fields", "Medicine,nope"], ("'--fields'", "'nope'")),
    (["fields", "subset", "{records}", "--out", "/tmp/never", "--shard-size", "0"], ("'--shard-size'", ">= 1")),
    (["fields", "subset", "{records}", "--out", "/tmp/never", "--text-source", "/missing"], ("'--text-source'",
                                                                                          "does not exist")),
    (["book", "--profile", "fast"], ("'--profile'", PROFILES)),
    (["book", "--only", "nothere"], ("'--only'", "unknown chapter 'nothere'", "appendix_a_paper_audit")),
    (["data", "check", "--only", "NOPE"], ("'--only'", "unknown dataset 'NOPE'", DATASETS)),
    (["data", "fetch", "--only", "nope", "--list"], ("'--only'", "unknown source 'nope'", "pubmedqa")),
    (["blurb", "score", "/missing-folder"], ("'PRED_DIR'", "does not exist")),
    (["blurb", "score", "{empty}"], ("expected a prediction file <dataset>.jsonl", "no *.jsonl file")),
    (["blurb", "score", "{empty}", "--split", "validation"], ("'--split'", "train, dev, test")),
    (["blurb", "gold", "/tmp/never", "--datasets", "XX"], ("'--datasets'", "unknown dataset 'XX'")),
    (["results", "table", "--profile", "bogus"], ("'--profile'", "unknown profile 'bogus'", PROFILES)),
    (["results", "list", "--profile", "bogus"], ("'--profile'", "unknown profile 'bogus'", PROFILES)),
    (["results", "record", "--profile", "bogus"], ("'--profile'", "unknown profile 'bogus'", PROFILES)),
    (["results", "table", "--dataset", "BOGUS"], ("'--dataset'", "unknown dataset 'BOGUS'", DATASETS, "STS-B",
                                                  "SciERC")),
    (["results", "list", "--dataset", "BOGUS"], ("'--dataset'", "unknown dataset 'BOGUS'", DATASETS)),
    (["results", "table", "--split", "validation"], ("'--split'", "'test', 'dev'")),
    (["results", "table", "--resamples", "0"], ("'--resamples'", "greater than or equal to 1")),
    (["results", "table", "--bootstrap", "--split", "dev"], ("--bootstrap resamples the test predictions",)),
    (["results", "compare", "cpu/minilm/a", "cpu/minilm/b", "--results-root", "{empty}"],
     ("no run records match cpu/minilm/a", "systems there: none")),
    (["results", "compare", "cpu/minilm/base", "cpu/minilm/b", "--task", "BOGUS"], ("'--task'",
                                                                                   "unknown dataset 'BOGUS'")),
    (["results", "compare", "cpu", "cpu/minilm/b"], ("'A'", "expected PROFILE/MODEL/VARIANT")),
    (["results", "compare", "cpu/minilm/a", "bogus/minilm/b"], ("'B'", "unknown profile 'bogus'", PROFILES)),
    (["results", "compare", "cpu/minilm/a"], ("Missing argument 'B'",)),
    (["blurb", "frozen", "--profile", "bogus"], ("'--profile'", "unknown profile 'bogus'", PROFILES)),
    (["paper-table", "9"], ("'NUMBER'", "7")),
    (["audit", "--bogus"], ("No such option", "--bogus")),
    (["no-such-verb"], ("No such command 'no-such-verb'",)),
]


@pytest.mark.parametrize(("argv", "fragments"), MISTAKES, ids=[" ".join(a) for a, _ in MISTAKES])
def test_mistake_gives_one_line_and_exit_2(argv: list[str], fragments: tuple[str, ...], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    records = Path(__file__).parent / "fixtures" / "fields" / "records.jsonl"
    (tmp_path / "empty").mkdir()
    argv = [a.format(records=records, empty=tmp_path / "empty") for a in argv]
    if argv[0] in ("finetune", "grid"):
        argv += ["--data-root", str(tmp_path / "empty"), "--results-root", str(tmp_path / "results")]
    code, out, err = _run(argv, capsys)
    assert code == 2, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err + out
    for fragment in fragments:
        assert fragment.lower() in lines[0].lower(), lines[0]
    assert not (tmp_path / "results").exists()


def test_score_accepts_a_trailing_blank_line_but_not_an_inner_one(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    written, _ = predictions.write_gold(tmp_path, data_root=METRICS_ROOT, datasets="GAD")
    path = written[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    code, out, err = _run(["blurb", "score", str(tmp_path), "--data-root", str(METRICS_ROOT), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["datasets"]["GAD"]["score"] == 100.0
    path.write_text("\n".join([lines[0], "", *lines[1:]]) + "\n", encoding="utf-8")
    code, _, err = _run(["blurb", "score", str(tmp_path), "--data-root", str(METRICS_ROOT)], capsys)
    assert code == 2 and f"{path}:2: expected a JSON object" in err and "not a blank line" in err


def test_commands_own_exit_codes_pass_through(capsys: pytest.CaptureFixture[str]) -> None:
    """main() keeps a command's exit code: 0 on success, data check's 1 for a split that needs attention."""
    code, out, _ = _run(["version"], capsys)
    assert code == 0 and out.startswith("medibio ")
    fixture_root = Path(__file__).parent / "fixtures" / "blurb" / "root"
    code, out, _ = _run(["data", "check", "--data-root", str(fixture_root), "--only", "BC5-chem", "--json"], capsys)
    rows = json.loads(out)
    assert code == 1  # the tiny fixture files do not have the paper's mention counts
    assert [(r["split"], r["status"]) for r in rows] == [("train", "mismatch"), ("dev", "mismatch"),
                                                          ("test", "mismatch")]


def test_library_lookups_raise_one_error_type() -> None:
    """Unknown names from every registry are UnknownNameError: a MedibioError (one CLI line) that is still
    the KeyError/ValueError older callers catch, printed without KeyError's quotes."""
    from medibio.core import profiles
    from medibio.core.errors import MedibioError, UnknownNameError
    from medibio.experiments import table5
    from medibio.pretrain import configs
    from medibio.tasks import fetch, loaders, registry
    from medibio.training.config import trainable_task

    lookups = [registry.get, registry.resolve, profiles.get, lambda name: registry.get(name, "ift"),
               lambda name: registry.get(name, "blurb"), trainable_task, registry.names,
               configs.get_config, configs.config_for_profile, table5.resolve_ids, fetch.get_source,
               lambda name: loaders.split_files("GAD", name)]
    for lookup in lookups:
        with pytest.raises(UnknownNameError) as info:
            lookup("nope")
        err = info.value
        assert isinstance(err, MedibioError) and isinstance(err, KeyError) and isinstance(err, ValueError)
        assert str(err).startswith("unknown ") and "'nope'; known: " in str(err)


# --- --config files: the same checks as the flags, with the file and the key's line -------------------

CONFIG_MISTAKES: list[tuple[str, tuple[str, ...]]] = [
    ("epochs: 0\n", ("bad.yaml:1:", "epochs to be an integer >= 1", "'0'")),
    ("# per task\ntasks:\n  BIOSSES:\n    epochs: 0\n", ("bad.yaml:4:", "tasks.BIOSSES.epochs to be an integer >= 1")),
    ("tasks:\n  BOGUS:\n    epochs: 2\n", ("bad.yaml:2:", "'BOGUS'", "BC5-chem", "BIOSSES", "STS-B")),
    ("learning_rate: -1\n", ("bad.yaml:1:", "learning_rate to be a finite number > 0")),
    ("learning_rate: .nan\n", ("bad.yaml:1:", "learning_rate to be a finite number > 0")),
    ("epochs: abc\n", ("bad.yaml:1:", "epochs to be an integer >= 1", "'abc'")),
    ("epochs: 2.5\n", ("bad.yaml:1:", "epochs to be an integer >= 1")),
    ("tasks: [BIOSSES]\n", ("bad.yaml:1:", "tasks to map dataset names to their options")),
    ("tasks:\n  BIOSSES: 3\n", ("bad.yaml:2:", "a mapping of fine-tuning options")),
    ("tasks:\n  BIOSSES:\n    warmup_steps: 3\n", ("bad.yaml:3:", "a fine-tuning option", "under tasks.BIOSSES",
                                                   "'warmup_steps'")),
    ("warmup_ratio: 2\n", ("bad.yaml:1:", "warmup_ratio to be a number in [0, 1]")),
    ("dropout: 1\n", ("bad.yaml:1:", "dropout to be a number in [0, 1)")),
    ("llrd: 0\n", ("bad.yaml:1:", "llrd to be a number in (0, 1]")),
    ("freeze_lower: maybe\n", ("bad.yaml:1:", "freeze_lower to be true or false")),
    ("pooling: max\n", ("bad.yaml:1:", "pooling to be one of cls, mean")),
    ("mixed_precision: fp8\n", ("bad.yaml:1:", "mixed_precision to be one of auto, bf16")),
    ("max_train_examples:\n", ("bad.yaml:1:", "max_train_examples to have a value")),
    ("epochs: 2\nepochs: 3\n", ("bad.yaml:2:", "each key once; epochs is already on line 1")),
    ("tasks:\n  BIOSSES: {epochs: 2}\n  biosses: {epochs: 3}\n", ("bad.yaml:3:", "each dataset once")),
    ("epochs: [\n", ("bad.yaml:", "valid YAML")),
    ("- 1\n- 2\n", ("bad.yaml:1:", "a mapping of fine-tuning options")),
]


@pytest.mark.parametrize(("verb", "text", "fragments"),
                         [(v, t, f) for v in ("finetune", "grid") for t, f in CONFIG_MISTAKES],
                         ids=[f"{v} {t!r}" for v in ("finetune", "grid") for t, _ in CONFIG_MISTAKES])
def test_config_file_mistake_gives_one_line_naming_file_and_line(verb: str, text: str, fragments: tuple[str, ...],
                                                                tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(text, encoding="utf-8")
    (tmp_path / "empty").mkdir()
    code, out, err = _run([verb, "--task", "BIOSSES", "--profile", "smoke", "--config", str(config),
                           "--data-root", str(tmp_path / "empty"), "--results-root", str(tmp_path / "results")],
                          capsys)
    assert code == 2, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(config) in lines[0], err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (tmp_path / "results").exists()


def test_config_file_that_is_not_utf8_names_the_line_and_byte(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_bytes(b"epochs: 2\nvariant_note: caf\xe9\n")
    code, _, err = _run(["finetune", "--task", "BIOSSES", "--config", str(config), "--results-root",
                         str(tmp_path / "results")], capsys)
    assert code == 2 and f"{config}:2: expected UTF-8 text" in err and "0xe9 at column 18" in err


def test_a_valid_config_file_with_a_bom_and_string_numbers_is_read(tmp_path: Path) -> None:
    from medibio.training import config as presets

    config = tmp_path / "ok.yaml"
    config.write_bytes("\ufefflearning_rate: 3e-5\r\ntasks:\r\n  biosses:\r\n    epochs: 5\r\n".encode())
    assert presets.load_config_file(config) == {"learning_rate": 3e-5, "tasks": {"BIOSSES": {"epochs": 5}}}


# --- data a request needs: checked before anything trains ----------------------------------------------

GAD_ROWS = ("index\tsentence\tlabel", "0\t@GENE$ causes @DISEASE$ .\t1", "1\t@GENE$ near @DISEASE$ .\t0")
BIOSSES_ROWS = ("pair_id\tsent1\tsent2\tscore", "7\tA cat sat .\tA cat is sitting .\t3.8",
                "8\tDogs run .\tA dog runs .\t2.5")


def _write(root: Path, folder: str, split: str, rows: tuple[str, ...]) -> Path:
    path = root / "blurb" / folder / f"{split}.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _finetune(task: str, data_root: Path, results: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, out, err = _run(["finetune", "--task", task, "--profile", "smoke", "--model", "minilm",
                           "--data-root", str(data_root), "--results-root", str(results)], capsys)
    assert "Traceback" not in out + err
    return code, err


def test_a_missing_training_split_is_an_error_naming_the_file(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Only a split the registry documents as absent (EBM-PICO train) may be missing; BIOSSES without its
    train file is an error naming that file, and nothing is recorded as skipped."""
    root = tmp_path / "data"
    _write(root, "BIOSSES", "dev", BIOSSES_ROWS)
    code, err = _finetune("BIOSSES", root, tmp_path / "results", capsys)
    assert code == 2 and f"missing data: {root / 'blurb' / 'BIOSSES' / 'train.tsv'}" in err, err
    assert not list(tmp_path.rglob("seed*.json"))
    (tmp_path / "empty").mkdir()
    code, err = _finetune("BIOSSES", tmp_path / "empty", tmp_path / "results", capsys)
    assert code == 2 and f"missing data: {tmp_path / 'empty' / 'blurb' / 'BIOSSES' / 'train.tsv'}" in err, err
    assert "(has )" not in err and not list(tmp_path.rglob("seed*.json"))


@pytest.mark.parametrize("what", ["directory", "broken symbolic link"])
def test_a_training_file_that_is_a_directory_or_a_broken_link_is_said_to_be_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str) -> None:
    """Not "missing data" with a download hint: the user has something there, and it is the wrong thing."""
    root = tmp_path / "data"
    for split in ("dev", "test"):
        _write(root, "BIOSSES", split, BIOSSES_ROWS)
    train = root / "blurb" / "BIOSSES" / "train.tsv"
    if what == "directory":
        train.mkdir()
    else:
        train.symlink_to(root / "elsewhere" / "train.tsv")
    code, err = _finetune("BIOSSES", root, tmp_path / "results", capsys)
    [line] = err.splitlines()
    assert code == 2 and line.startswith(f"error: {train}: expected a file, got a {what}"), err
    assert "missing data" not in err and "how to get it" not in err
    assert not list(tmp_path.rglob("seed*.json"))


def test_every_dataset_of_a_request_is_checked_before_the_first_trains(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """GAD trains before BIOSSES (registry order); a bad BIOSSES test score stops the request first."""
    root = tmp_path / "data"
    for split in ("train", "dev", "test"):
        # ids and content of each split its own (splits sharing a sentence are refused, see test_malformed_inputs)
        _write(root, "GAD", split, (GAD_ROWS[0], *(f"{split}{row}".replace(" .", f" ({split}) .")
                                                   for row in GAD_ROWS[1:])))
        _write(root, "BIOSSES", split, (BIOSSES_ROWS[0], *(f"{split}{row}".replace(" .", f" ({split}) .")
                                                           for row in BIOSSES_ROWS[1:])))
    bad = _write(root, "BIOSSES", "test", (*BIOSSES_ROWS, "9\tA .\tB .\t9.5"))
    code, err = _finetune("GAD,BIOSSES", root, tmp_path / "results", capsys)
    assert code == 2 and f"{bad}:4: expected a finite numeric score in [0, 4]" in err, err
    assert not list(tmp_path.rglob("seed*.json")) and "training" not in err


@pytest.mark.parametrize("argv", [["blurb", "frozen", "--help"], ["results", "table", "--help"],
                                  ["results", "list", "--help"], ["finetune", "--help"]])
def test_profile_help_is_generated_from_the_profiles(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from medibio.core import profiles

    code, out, _ = _run(argv, capsys)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0
    for name in profiles.names():
        assert name in text
    if argv[0] != "results":
        assert " ".join(profiles.help_text().split()) in text


def test_overlapping_splits_stop_fine_tuning_unless_allowed_and_the_record_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A test sentence pasted into GAD's train split (GAD's ids are row numbers: only the content tells)."""
    root = tmp_path / "data"
    for split in ("train", "dev", "test"):
        _write(root, "GAD", split, (GAD_ROWS[0], *(row.replace(" .", f" ({split}) .") for row in GAD_ROWS[1:])))
    leaked = GAD_ROWS[1].replace(" .", " (test) .").replace("0\t", "2\t", 1)
    train = _write(root, "GAD", "train", (GAD_ROWS[0], *(r.replace(" .", " (train) .") for r in GAD_ROWS[1:]),
                                          leaked))
    test = root / "blurb" / "GAD" / "test.tsv"
    code, out, err = _run(["finetune", "--task", "GAD", "--profile", "smoke", "--data-root", str(root),
                           "--results-root", str(tmp_path / "results")], capsys)
    [line] = err.splitlines()
    assert code == 2 and line.startswith(f"error: {test}:2: expected no example of the train split again"), err
    assert f"also at {train}:4" in line and "--allow-overlap" in line
    assert not list(tmp_path.rglob("seed*.json"))

    code, out, err = _run(["finetune", "--task", "GAD", "--profile", "smoke", "--data-root", str(root),
                           "--results-root", str(tmp_path / "results"), "--allow-overlap", "--json"], capsys)
    assert code == 0, err
    [record] = json.loads(out)
    assert record["request"]["allow_overlap"] is True and record["details"]["official_splits"] is False
    notes = "\n".join(record["notes"])
    assert "splits overlap (allowed by --allow-overlap): 1 test example(s) repeat 1 train example(s) by content " \
           "(test.tsv:2 = train.tsv:4)" in notes
    assert "not BLURB's official train split: 3 relation instances, the official one has 4261" in notes


@pytest.mark.parametrize("what", ["file", "broken symbolic link"])
def test_a_data_root_that_is_no_folder_is_said_to_be_what_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 what: str) -> None:
    root = tmp_path / "data"
    if what == "file":
        root.write_text("")
    else:
        root.symlink_to(tmp_path / "unmounted")
    code, _, err = _run(["data", "check", "--data-root", str(root)], capsys)
    [line] = err.splitlines()
    assert code == 2 and line.startswith(f"error: {root}: expected a folder (the data root), got a {what}"), err
    assert "missing data" not in err


# --------------------------------------------------------------------------- bounds (issue 39 §7)


def test_processes_are_bounded_by_cores_gpus_and_memory_and_the_message_says_so(monkeypatch, capsys,
                                                                                tmp_path: Path) -> None:
    from medibio.core import capacity

    assert capacity.Capacity(cores=150, gpus=0, memory_gib=6.0).processes == 3  # the cgroup of the issue
    assert capacity.Capacity(cores=2, gpus=0, memory_gib=24.0).processes == 2
    assert capacity.Capacity(cores=16, gpus=1, memory_gib=128.0).processes == 1
    assert capacity.Capacity(cores=4, gpus=0, memory_gib=0.5).processes == 1
    here = capacity.capacity()
    assert 1 <= here.processes <= max(1, here.cores)
    monkeypatch.setattr(capacity, "capacity", lambda: capacity.Capacity(cores=2, gpus=0, memory_gib=20.0))
    monkeypatch.setenv("MEDIBIO_PROCESSES", "999")
    code, _, err = _run(["results", "table", "--results-root", str(tmp_path)], capsys)
    assert code == 2 and "999: more training processes than this machine holds; at most 2 here" in err
    assert "2 CPU core(s), no GPU, 20.0 GiB of memory available, at 2 GiB per process" in err
    monkeypatch.delenv("MEDIBIO_PROCESSES")
    code, _, err = _run(["book", "--processes", "999", "--no-execute", "--no-html"], capsys)
    assert code == 2 and "at most 2 here" in err


@pytest.mark.parametrize("argv", [["book", "--from", ""], ["book", "--from="], ["results", "drift", ""],
                                  ["results", "verify", " "], ["finetune", "--task", "BIOSSES", "--data-root", ""]])
def test_an_empty_value_is_refused_everywhere_not_read_as_the_current_folder(argv: list[str], capsys) -> None:
    code, out, err = _run(argv, capsys)
    assert code == 2 and "expected a value (not empty)" in err and not out


def test_limit_1_on_a_correlation_task_is_refused_before_training(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    code, _, err = _run(["finetune", "--task", "BIOSSES", "--profile", "smoke", "--limit", "1", "--data-root",
                         str(tmp_path / "empty"), "--results-root", str(results)], capsys)
    assert code == 2 and "BIOSSES: 1 train example" in err and "needs at least 2" in err
    assert not results.exists() or not any(results.rglob("*.json"))
    # the frozen cosine baseline and an intermediate STS-B stage: the same rule, before anything is computed
    from medibio.baselines.frozen import plan_frozen
    from medibio.core.errors import MedibioError
    from medibio.core.profiles import get as profile
    from medibio.core.settings import Settings
    from medibio.ift.stages import stage_config

    with pytest.raises(MedibioError, match="BIOSSES: 1 train example"):
        plan_frozen("BIOSSES", profile="smoke", settings=Settings(limit=1, data_root=tmp_path / "empty"))
    with pytest.raises(MedibioError, match="STS-B: 1 train example"):
        stage_config("STS-B", profile("smoke").limited(1), tmp_path / "empty")


def test_a_cache_that_is_a_file_or_read_only_gets_advice_that_helps(tmp_path: Path, monkeypatch, capsys) -> None:
    import errno
    import os

    from medibio.cli.main import os_error_message

    cache = tmp_path / "cache"
    cache.write_text("")
    monkeypatch.setenv("MEDIBIO_CACHE", str(cache))
    code, _, err = _run(["finetune", "--task", "BIOSSES", "--results-root", str(tmp_path / "r")], capsys)
    assert code == 2 and f"{cache}: expected a folder (the cache, $MEDIBIO_CACHE), got a file" in err
    cache.unlink()
    cache.mkdir()
    inside = str(cache / "tiny-deberta" / "config.json")
    message = os_error_message(PermissionError(errno.EACCES, os.strerror(errno.EACCES), inside))
    assert "MEDIBIO_CACHE" in message and "--results-root" not in message
    message = os_error_message(OSError(errno.EROFS, os.strerror(errno.EROFS), inside))
    assert "read-only" in message and "point MEDIBIO_CACHE at a folder you may write" in message


@pytest.mark.parametrize("argv", [["claims", "--results-root", "reference"],
                                  ["book", "--from", "reference", "--no-html"]])
def test_recorded_runs_without_a_data_root_are_refused_not_read_as_untested(argv: list[str], tmp_path: Path,
                                                                           capsys) -> None:
    """Without the gold labels every claim would read "not testable here" (and six chapters fail): the command
    stops first, naming the missing folder and how to give one."""
    missing = tmp_path / "no-data"
    code, out, err = _run([*argv, "--data-root", str(missing), *(["--results-root", str(tmp_path / "r")]
                                                                 if argv[0] == "book" else [])], capsys)
    assert code == 2 and not out.strip(), out
    assert f"missing data: {missing}" in err and "MEDIBIO_DATA" in err and "gold test labels" in err
    assert not (tmp_path / "r").exists()  # nothing built
