"""Hostile inputs on a fresh clone: each ends in one line naming the value and what to do, and a non-zero exit.

The classes of docs/errors.md ("Hostile inputs"): a study report on a work root that is not there (3b),
command-line values the library refused only with a traceback, and the GPU check's script under a Python without
the project's packages (4), values without an upper bound (5), model folders whose files are all there but hold
what fine-tuning cannot use (6), the book hiding why a local model folder was refused (7), a disk that fills while
jupyter-book writes the HTML (8). Every model here is tiny and built from a transformers configuration in
``tmp_path``, beside the packaged MiniLM's tokenizer (30,522 WordPiece pieces); no test needs the data root.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from benchmarks.gpu_check import pack, run
from medibio.book import assets, build
from medibio.cli import pretrain as pretrain_cli
from medibio.cli import study as study_cli
from medibio.core.errors import ModelUnavailableError
from medibio.core.settings import LIMIT_ENV, MAX_LIMIT, Settings, SettingsError
from medibio.models import zoo
from tests.support.cli import run_main

MINILM_TOKENIZER = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _one_line(code: int, err: str, *parts: str) -> str:
    """The error line of a refused command: non-zero exit, one line on stderr, no traceback, every part named."""
    line = err.strip()
    assert code != 0 and "\n" not in line and "Traceback" not in line, (code, err)
    for part in parts:
        assert part in line, (part, line)
    return line


# ------------------------------------------------------------------------------------ 3b. study status

def test_study_status_of_a_missing_work_root_is_an_error_not_a_study_at_zero_steps(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "no-such-work-root"
    code, out, err = run_main(["study", "status", "--work-root", str(missing)], capsys)
    _one_line(code, err, str(missing), "no such folder", "--work-root")
    assert "steps" not in out and not missing.exists()

    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    code, out, err = run_main(["study", "status", "--work-root", str(a_file)], capsys)
    _one_line(code, err, str(a_file), "expected a folder", "got a file")

    empty = tmp_path / "empty"  # an existing work root where nothing has started: every run at step 0
    empty.mkdir()
    code, out, err = run_main(["study", "status", "--work-root", str(empty)], capsys)
    assert code == 0 and not err and any(line.startswith("#3 seed 1: 0/1221 steps") for line in out.splitlines())
    assert not list(empty.iterdir())  # a report creates nothing


# ------------------------------------------------------------------------------------ 4. command-line checks

@pytest.mark.parametrize("argv, parts", [
    (["study", "unit", "--arm", "2", "--seed", "1", "--unit-steps", "7"],
     ("'--unit-steps'", "a positive multiple of 25", "checkpoint", "got 7")),
    (["study", "unit", "--arm", "9", "--seed", "1"], ("'--arm'", "unknown study arm '9'", "known: 0, 2, 3, 4")),
    (["study", "unit", "--arm", "3", "--seed", str(2**32)], ("'--seed'", "4294967295")),
    (["study", "finetune", "--arm", "2", "--pretrain-seeds", "abc"], ("'--pretrain-seeds'", "got 'abc'")),
    (["study", "finetune", "--arm", "2", "--seeds", "1,x"], ("'--seeds'", "got '1,x'")),
    (["study", "finetune", "--arm", "2", "--task", "BOGUS"], ("'--task'", "BOGUS")),
])
def test_study_values_are_checked_on_the_command_line(argv: list[str], parts: tuple[str, ...], tmp_path: Path,
                                                      capsys) -> None:
    work = tmp_path / "work"
    code, _, err = run_main([*argv, "--work-root", str(work), "--data-root", str(tmp_path / "no-data")], capsys)
    assert code == 2
    _one_line(code, err, *parts)
    assert not work.exists()  # refused before any run was planned


def _gpu_check_folder(folder: Path) -> Path:
    """A GPU check folder as ``make gpu-check`` lays it out, with stand-ins for the source and the data."""
    folder.mkdir()
    (folder / "stub").mkdir()
    (folder / "stub" / "README").write_text("stand-in\n")
    pack.archive(folder / "src.tar.gz", folder, ("stub",))
    pack.archive(folder / "data.tar.gz", folder, ("stub",))
    shutil.rmtree(folder / "stub")
    shutil.copyfile(Path(run.__file__), folder / "run.py")
    pack.manifest(folder)
    return folder


def test_the_gpu_check_under_a_python_without_the_projects_packages_is_one_line(tmp_path: Path) -> None:
    """``python -S`` has the standard library only, as a system python3 without the image's packages."""
    folder = _gpu_check_folder(tmp_path / "gpu-check")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-S", str(folder / "run.py"), "--out", str(out), "--work",
                           str(tmp_path / "work"), "--budget", "60"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, check=False)
    line = _one_line(done.returncode, done.stderr, "lacks torch, transformers", "docs/gpu-check.md", ".venv/bin/python")
    assert done.returncode == 2 and "Traceback" not in done.stdout
    assert line in (out / "run.log").read_text(encoding="utf-8")  # what the device tool brings back says it too
    assert sorted(p.name for p in out.iterdir()) == sorted(run.BUNDLE)


def test_the_gpu_check_names_wheels_built_for_another_python(tmp_path: Path, monkeypatch) -> None:
    other = f"cp{sys.version_info.major}{sys.version_info.minor + 1}"
    wheels = [tmp_path / f"pyzmq-26.2.0-{other}-{other}-manylinux_2_28_x86_64.whl",
              tmp_path / "tornado-6.4-cp38-abi3-manylinux_2_17_x86_64.whl",  # abi3: installs on any newer CPython
              tmp_path / "attrs-24.2.0-py3-none-any.whl"]
    monkeypatch.setattr(run, "_missing_wheels", lambda: wheels)
    problem = run.preflight()
    assert problem is not None and f"built for {other}, not cp" in problem and "cp38" not in problem
    monkeypatch.setattr(run, "_missing_wheels", lambda: wheels[1:])
    assert run.preflight() is None


def test_the_gpu_check_unpacks_on_a_python_without_extraction_filters(tmp_path: Path, monkeypatch) -> None:
    """Python before 3.11.4 (Debian 12's system python3 is 3.11.2) has no ``filter`` argument: setup stopped with
    a TypeError traceback."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a\n")
    pack.archive(tmp_path / "src.tar.gz", tmp_path, ("src",))
    real = tarfile.TarFile.extractall

    def old_extractall(self: tarfile.TarFile, path: Any = ".", members: Any = None, **kwargs: Any) -> None:
        if "filter" in kwargs:
            raise TypeError("TarFile.extractall() got an unexpected keyword argument 'filter'")
        real(self, path, members, **kwargs)

    monkeypatch.delattr(tarfile, "data_filter")
    monkeypatch.setattr(tarfile.TarFile, "extractall", old_extractall)
    run.unpack(tmp_path / "src.tar.gz", tmp_path / "out")
    assert (tmp_path / "out" / "src" / "a.txt").read_text() == "a\n"


def test_the_gpu_check_builder_names_a_data_root_without_the_carried_datasets(tmp_path: Path) -> None:
    (tmp_path / "data" / "blurb").mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check.pack", "--no-wheels", "--out",
                           str(tmp_path / "out"), "--data-root", str(tmp_path / "data")], capture_output=True,
                          text=True, timeout=120, cwd=Path(pack.__file__).resolve().parents[2], check=False)
    _one_line(done.returncode, done.stderr, f"missing data: {tmp_path / 'data' / 'blurb' / 'GAD'}", "--data-root")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------ 5. upper bounds

def test_study_tokens_have_an_upper_bound_that_says_why(tmp_path: Path, capsys) -> None:
    no_data = ["--data-root", str(tmp_path / "no-data")]  # nothing to train from, had the value been taken
    code, _, err = run_main(["study", "unit", "--arm", "2", "--seed", "1", "--tokens", "9" * 23, "--work-root",
                             str(tmp_path / "work"), *no_data], capsys)
    assert code == 2
    _one_line(code, err, "'--tokens'", f"[1, {study_cli.MAX_STUDY_TOKENS}]", "9" * 23, "100 times the study's",
              "steps of 8,192 tokens")
    code, _, err = run_main(["study", "status", "--tokens", str(study_cli.MAX_STUDY_TOKENS + 1), "--work-root",
                             str(tmp_path)], capsys)
    _one_line(code, err, "'--tokens'")
    code, _, err = run_main(["pretrain", "--max-steps", "9" * 23, *no_data], capsys)
    _one_line(code, err, "'--max-steps'", f"[1, {pretrain_cli.MAX_STEPS}]", "the paper's 500,000")


@pytest.mark.parametrize("value", ["1" + "0" * 23, "1e23", str(MAX_LIMIT + 1)])
def test_a_limit_has_an_upper_bound_that_says_why(value: str, tmp_path: Path, capsys, monkeypatch) -> None:
    with pytest.raises(SettingsError, match=rf"\$MEDIBIO_LIMIT must be a whole number in \[1, 10,000,000\], not "
                                            rf"'{value}': a limit runs a profile's code path on a few examples"):
        Settings.from_env({LIMIT_ENV: value})
    no_data = ["--data-root", str(tmp_path / "no-data"), "--results-root", str(tmp_path / "r")]
    monkeypatch.setattr(build, "build_book", lambda *a, **k: pytest.fail("the book started"))
    monkeypatch.setenv(LIMIT_ENV, value)
    code, _, err = run_main(["finetune", "--task", "BIOSSES", *no_data], capsys)
    assert code == 2
    _one_line(code, err, "$MEDIBIO_LIMIT", value, "more limits nothing")
    monkeypatch.delenv(LIMIT_ENV)
    if value.isdigit():  # "1e23" is no integer to the parser already
        for argv in (["finetune", "--task", "BIOSSES"], ["book"], ["pretrain"]):
            code, _, err = run_main([*argv, "--limit", value, *no_data], capsys)
            _one_line(code, err, "'--limit'", "more limits nothing")
    assert not (tmp_path / "r").exists()


def test_the_largest_limit_is_taken() -> None:
    assert Settings.from_env({LIMIT_ENV: str(MAX_LIMIT)}).limit == MAX_LIMIT
    with pytest.raises(SettingsError, match="more limits nothing"):
        Settings(limit=MAX_LIMIT + 1)


# ------------------------------------------------------------------------------------ 6. what a model holds

def _with_minilm_tokenizer(folder: Path) -> Path:
    for name in MINILM_TOKENIZER:
        if (zoo.minilm_path() / name).is_file():
            shutil.copyfile(zoo.minilm_path() / name, folder / name)
    return folder


def _tiny(tmp_path: Path, name: str, make: Any) -> Path:
    """``make()``'s model saved with transformers into ``tmp_path/name``, beside MiniLM's tokenizer."""
    folder = tmp_path / name
    make().save_pretrained(str(folder))
    return _with_minilm_tokenizer(folder)


def _gpt2(tmp_path: Path) -> Path:
    from transformers import GPT2Config, GPT2Model

    return _tiny(tmp_path, "gpt2", lambda: GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=16, n_positions=64,
                                                                vocab_size=30522)))


def _bert(tmp_path: Path, rows: int, name: str = "bert") -> Path:
    from transformers import BertConfig, BertModel

    return _tiny(tmp_path, name, lambda: BertModel(BertConfig(
        vocab_size=rows, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)))


def test_a_decoder_only_model_is_refused_before_training(tmp_path: Path, capsys) -> None:
    model = _gpt2(tmp_path)
    with pytest.raises(ModelUnavailableError, match=r"is a decoder-only \(causal\) language model \('gpt2'\)"):
        zoo.check_loadable(model)
    capsys.readouterr()  # what building the model printed
    code, _, err = run_main(["finetune", "--task", "BIOSSES", "--profile", "smoke", "--model", str(model),
                             "--results-root", str(tmp_path / "results"), "--data-root", str(tmp_path)], capsys)
    assert code == 2
    _one_line(code, err, f"model folder {model}", "decoder-only", "medibio fine-tunes encoders", "--model")
    assert "[transformers]" not in err and not (tmp_path / "results").exists()


def test_a_tokenizer_larger_than_the_embedding_is_refused_before_training(tmp_path: Path, capsys) -> None:
    model = _bert(tmp_path, rows=1000)
    capsys.readouterr()
    code, _, err = run_main(["finetune", "--task", "BIOSSES", "--profile", "smoke", "--model", str(model),
                             "--results-root", str(tmp_path / "results"), "--data-root", str(tmp_path)], capsys)
    assert code == 2
    _one_line(code, err, f"model folder {model}", "token ids up to 30,521", "its embedding has 1,000 rows",
              "the tokenizer the model was trained with")
    code, _, err = run_main(["grid", "--task", "BIOSSES", "--profile", "smoke", "--model", str(model),
                             "--results-root", str(tmp_path / "results"), "--data-root", str(tmp_path)], capsys)
    _one_line(code, err, "its embedding has 1,000 rows")


def test_a_folder_without_a_tokenizer_vocabulary_is_refused(tmp_path: Path) -> None:
    """tokenizer_config.json alone loads as a BERT tokenizer of five special tokens: every word [UNK]."""
    model = _bert(tmp_path, rows=30522)
    for name in ("vocab.txt", "tokenizer.json"):
        (model / name).unlink()
    with pytest.raises(ModelUnavailableError, match="has no tokenizer vocabulary"):
        zoo.check_loadable(model)
    (model / "tokenizer_config.json").unlink()
    (model / "special_tokens_map.json").unlink(missing_ok=True)
    with pytest.raises(ModelUnavailableError, match="lacks a tokenizer file"):
        zoo.check_loadable(model)


def test_encoders_of_other_families_pass_the_check(tmp_path: Path) -> None:
    from transformers import (
        AlbertConfig,
        AlbertModel,
        DistilBertConfig,
        DistilBertModel,
        ElectraConfig,
        ElectraModel,
    )

    small = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32}
    made = {
        "electra": lambda: ElectraModel(ElectraConfig(vocab_size=30522, embedding_size=16, **small)),
        "albert": lambda: AlbertModel(AlbertConfig(vocab_size=30522, embedding_size=16, **small)),
        "distilbert": lambda: DistilBertModel(DistilBertConfig(vocab_size=30522, dim=16, n_layers=1, n_heads=2,
                                                               hidden_dim=32)),
    }
    for name, make in made.items():
        zoo.check_loadable(_tiny(tmp_path, name, make))
    zoo.check_loadable("minilm")
    zoo.check_loadable(zoo.TINY_DEBERTA, tmp_path / "cache")
    zoo.check_loadable(_bert(tmp_path, rows=40000, name="bert-bigger-embedding"))  # more rows than pieces: fine
    decoder = _bert(tmp_path, rows=30522, name="bert-as-decoder")
    config = json.loads((decoder / "config.json").read_text(encoding="utf-8"))
    (decoder / "config.json").write_text(json.dumps({**config, "is_decoder": True}), encoding="utf-8")
    with pytest.raises(ModelUnavailableError, match=r"decoder-only \(causal\) language model \('bert'\)"):
        zoo.check_loadable(decoder)


def test_an_unknown_model_type_is_said_as_such(tmp_path: Path) -> None:
    model = _bert(tmp_path, rows=30522)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    (model / "config.json").write_text(json.dumps({**config, "model_type": "no-such-type"}), encoding="utf-8")
    with pytest.raises(ModelUnavailableError, match=f"config of the model folder {model} is not one transformers"):
        zoo.check_loadable(model)


# ------------------------------------------------------------------------------------ 7. the book's model check

@pytest.mark.parametrize("make, cause", [
    (lambda folder: folder.mkdir(), "lacks config.json; weights ("),
    (lambda folder: (folder.mkdir(), (folder / "config.json").write_text('{"model_type": "bert"}'),
                     _with_minilm_tokenizer(folder)), "lacks weights ("),
])
def test_the_book_says_why_a_local_model_folder_is_refused(make: Any, cause: str, tmp_path: Path, monkeypatch,
                                                           capsys) -> None:
    folder = tmp_path / "my-encoder"
    make(folder)
    capsys.readouterr()
    started: list[Any] = []
    monkeypatch.setattr(build, "build_book", lambda *a, **k: started.append(a))
    code, out, err = run_main(["book", "--profile", "smoke", "--model", str(folder), "--results-root",
                               str(tmp_path / "results")], capsys)
    assert code == 2 and not started and "▶" not in out
    line = _one_line(code, err, f"model '{folder}' (profile smoke)", f"model folder {folder} {cause}", "--model")
    assert "Hugging Face hub" not in line and "neither a local folder" not in line


def test_the_book_refuses_a_decoder_only_model_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    model = _gpt2(tmp_path)
    capsys.readouterr()
    monkeypatch.setattr(build, "build_book", lambda *a, **k: pytest.fail("a chapter started"))
    code, _, err = run_main(["book", "--profile", "smoke", "--model", str(model), "--results-root",
                             str(tmp_path / "results")], capsys)
    line = _one_line(code, err, "decoder-only", "pass an encoder with --model")
    assert line.count("--model") == 1


# ------------------------------------------------------------------------------------ 8. a full disk in the HTML step

SPHINX_ENOSPC = """\
Running Jupyter-Book v1.0.4
Source Folder: {root}
Running Sphinx v7.4.7
writing output... [ 40%] tables_1_2_ift
Exception occurred:
  File "/venv/lib/python3.11/site-packages/sphinx/builders/html/__init__.py", line 1236, in handle_page
    with open(outfilename, 'w', encoding=ctx['encoding'], errors='xmlcharrefreplace') as f:
OSError: [Errno 28] No space left on device: '{root}/_build/.html-x/_build/html/tables_1_2_ift.html'
The full traceback has been saved in /tmp/sphinx-err-1.log, if you want to report the issue to the developers.
Traceback (most recent call last):
{frames}RuntimeError: There was an error in building your book. Look above for the cause.
"""


def test_a_disk_that_fills_during_the_html_step_is_one_line_naming_build(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(assets, "install_mathjax", lambda: None)
    (tmp_path / "_build" / "html").mkdir(parents=True)
    (tmp_path / "_build" / "html" / "index.html").write_text("previous")
    log = SPHINX_ENOSPC.format(root=tmp_path, frames="".join(f'  File "/venv/x{i}.py", line {i}, in f\n    g()\n'
                                                             for i in range(10)))

    def jupyter_book(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        staging = Path(cmd[cmd.index("--path-output") + 1])
        (staging / "_build" / "html").mkdir(parents=True)
        (staging / "_build" / "html" / "genindex.html").write_text("half")
        return subprocess.CompletedProcess(cmd, 1, log, "")

    monkeypatch.setattr(build.subprocess, "run", jupyter_book)
    with pytest.raises(build.BookBuildError) as info:
        build.build_html(tmp_path)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message and "File " not in message, message
    assert f"the disk holding {tmp_path / '_build'} is full" in message
    assert "[Errno 28] No space left on device" in message and "MiB are free there now" in message
    assert "Free space on that disk" in message and "make clean-book" in message
    assert (tmp_path / "_build" / "html" / "index.html").read_text() == "previous"
    assert sorted(p.name for p in (tmp_path / "_build").iterdir()) == ["html"]  # the half-built site is gone


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_disk_full_finds_the_line_and_nothing_else(code: int) -> None:
    text = os.strerror(code)
    assert build.disk_full(f"Running Sphinx\n\x1b[91mOSError: [Errno {code}] {text}: '/r/_build/x'\x1b[0m\n"
                           "Traceback (most recent call last):\n") == f"OSError: [Errno {code}] {text}: '/r/_build/x'"
    assert build.disk_full("WARNING: undefined label\nRuntimeError: Look above for the cause.\n") is None
