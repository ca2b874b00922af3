"""The tiny model builds to the same bytes every time, safely from several processes at once, without
touching the caller's random state and without the data root (its vocabulary ships with the package);
fingerprints cover the tokenizer; a missing folder is named as one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from medibio.core.errors import ModelUnavailableError
from medibio.core.settings import Settings
from medibio.models import tiny
from medibio.models import zoo as modelzoo

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_two_builds_give_identical_bytes_and_leave_the_global_rng_alone(tmp_path: Path) -> None:
    import torch

    torch.manual_seed(7)
    expected = torch.rand(4)
    torch.manual_seed(7)
    first = tiny.build(out_dir=tmp_path / "a")
    assert torch.equal(torch.rand(4), expected), "building the tiny model moved torch's global generator"
    second = tiny.build(out_dir=tmp_path / "b")
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    assert {"config.json", "model.safetensors", "spm.model", "tokenizer.json"} <= set(names)
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), f"{name} differs between builds"
    assert modelzoo.fingerprint(first) == modelzoo.fingerprint(second)
    assert not list(tmp_path.glob(".*.building")), "a temporary build folder was left behind"


def test_loaders_build_the_tiny_model_in_the_cache_they_are_given(tmp_path: Path) -> None:
    """A tiny model named by its alias is built where the settings say, by every loader, never in a default."""
    from medibio.models import heads
    from medibio.tasks import registry
    from medibio.tasks.spec import Problem

    for i, load in enumerate((lambda c: modelzoo.load_config("tiny-deberta", c),
                              lambda c: heads.load_tokenizer("tiny-deberta", Problem.TOKEN, c),
                              lambda c: heads.build_model(registry.get("BIOSSES"), "tiny-deberta", cache_root=c))):
        cache = tmp_path / f"cache{i}"
        assert not cache.exists()
        assert load(cache) is not None
        assert [p.name for p in cache.rglob("model.safetensors")] == ["model.safetensors"]


def test_fingerprint_covers_config_weights_and_tokenizer(tmp_path: Path) -> None:
    source = modelzoo.minilm_path()
    copy = tmp_path / "model"
    shutil.copytree(source, copy)
    base = modelzoo.fingerprint(copy)
    assert base.startswith("sha256:") and base == modelzoo.fingerprint(source)
    covered = [p.name for p in modelzoo.model_files(copy)]
    assert "config.json" in covered and "vocab.txt" in covered and any("safetensors" in n or ".bin" in n
                                                                       for n in covered)
    seen = {base}
    for name in ("vocab.txt", "tokenizer_config.json", "config.json"):
        path = copy / name
        original = path.read_bytes()
        path.write_bytes(original + b"\n")
        changed = modelzoo.fingerprint(copy)
        assert changed not in seen, f"the fingerprint ignores {name}"
        seen.add(changed)
        path.write_bytes(original)
    (copy / "optimizer.pt").write_bytes(b"not part of the model")
    assert modelzoo.fingerprint(copy) == base


# A process's own boundary: its settings (the cache) from its environment.
_BUILD = ("from medibio.core.settings import Settings; from medibio.models import tiny; "
          "print(tiny.build(Settings.from_env().cache_root))")


@pytest.mark.slow
def test_two_processes_building_on_an_empty_cache_both_succeed(tmp_path: Path) -> None:
    env = {**os.environ, "MEDIBIO_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPO),
           "TOKENIZERS_PARALLELISM": "false"}
    procs = [subprocess.Popen([sys.executable, "-c", _BUILD], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    paths = {out.strip().splitlines()[-1] for out, _ in outputs}
    assert len(paths) == 1
    built = Path(paths.pop())
    assert tiny._complete(built)
    leftovers = [p.name for p in (tmp_path / "cache").iterdir() if p.name.endswith(".building")]
    assert leftovers == []


_BUILD_AND_HASH = ("import json; from medibio.core.settings import Settings; from medibio.models import tiny, zoo; "
                   "path = tiny.build(Settings.from_env().cache_root); "
                   "print(json.dumps([str(path), zoo.fingerprint(path)]))")


@pytest.mark.slow
def test_separate_processes_with_separate_cold_caches_build_identical_bytes(tmp_path: Path) -> None:
    """What two machines (or a cold CI cache and a warm laptop) see: each process builds from nothing, with its
    own hash seed and thread count; every file of the model and the fingerprint must be the same."""
    built = []
    for name, hash_seed, threads in (("a", "1", "1"), ("b", "2", "2")):
        env = {**os.environ, "MEDIBIO_CACHE": str(tmp_path / name), "PYTHONPATH": str(REPO),
               "PYTHONHASHSEED": hash_seed, "OMP_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "false"}
        proc = subprocess.run([sys.executable, "-c", _BUILD_AND_HASH], env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        path, digest = json.loads(proc.stdout.strip().splitlines()[-1])
        assert Path(path).is_relative_to(tmp_path / name)  # really its own cache
        built.append((Path(path), digest))
    (first, first_digest), (second, second_digest) = built
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert {"config.json", "model.safetensors", "spm.model", "tokenizer.json"} <= {p.name for p in files}
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), f"{rel} differs between the processes"
    assert first_digest == second_digest and first_digest.startswith("sha256:")


def test_a_killed_builds_leftovers_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "tiny"
    stale = tmp_path / f".{out.name}.dead1234.building"
    stale.mkdir()
    (stale / "spm.model").write_bytes(b"half")
    tiny.build(out_dir=out)
    assert not stale.exists() and tiny._complete(out)


@pytest.mark.realdata
def test_first_run_after_a_cold_build_scores_like_later_runs(session_settings: Settings, data_root: Path,
                                                             tmp_path: Path) -> None:
    from medibio.finetune import runner

    cold_cache = session_settings.replace(data_root=data_root, cache_root=tmp_path / "cache")
    scores = []
    for name in ("cold", "warm"):
        (record,) = runner.run_finetune("BIOSSES", "tiny-deberta", seeds=1, profile="smoke",
                                        settings=cold_cache.replace(results_root=tmp_path / name))
        scores.append((record.model["hash"], record.test, record.dev_curve))
    assert scores[0] == scores[1]
    assert (tmp_path / "cache" / tiny.folder_name()).is_dir()  # the cold run built it in the cache it was given


@pytest.mark.parametrize("path", ["/nonexistent/folder", "./no/such/model", "~/missing-model", "a/b/c"])
def test_a_missing_folder_is_not_sent_to_the_hub(path: str) -> None:
    with pytest.raises(ModelUnavailableError) as info:
        modelzoo.resolve(path)
    message = str(info.value)
    assert f"model folder {path} does not exist" in message and "huggingface-cli" not in message


def test_hub_ids_still_resolve_to_themselves() -> None:
    assert modelzoo.resolve("microsoft/deberta-v3-base") == "microsoft/deberta-v3-base"
    assert modelzoo.resolve("scideberta") == "KISTI-AI/Scideberta-full"
    assert modelzoo.resolve("bert-base-uncased") == "bert-base-uncased"


def test_a_local_models_layer_count_is_its_configurations_read_without_transformers(tmp_path: Path) -> None:
    code = ("import sys; from medibio.models import zoo; print(zoo.layer_count('minilm')); "
            "print('transformers' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert shown.stdout.split() == [str(modelzoo.load_config("minilm").num_hidden_layers), "False"]
    folder = tmp_path / "model"  # a configuration that names its depth another way: transformers reads it
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 3}), encoding="utf-8")
    assert modelzoo.layer_count(folder) == 3


@pytest.mark.realdata
def test_cli_names_the_missing_model_folder(data_root: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from medibio.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["finetune", "--task", "BIOSSES", "--profile", "smoke", "--model", "/nonexistent/folder",
              "--data-root", str(data_root), "--results-root", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1, err
    assert "model folder /nonexistent/folder does not exist" in err and "huggingface-cli" not in err
    assert not (tmp_path / "results").exists()


# A child process, because huggingface_hub reads HF_HOME and HF_HUB_OFFLINE when it is imported.
_FINGERPRINTS = r"""
import json, sys
from medibio.models import zoo as modelzoo
from medibio.core.errors import ModelUnavailableError

out = {}
for name in json.loads(sys.argv[1]):
    tries = []
    for _ in range(2):  # twice: the answer must not change between calls
        try:
            tries.append({"hash": modelzoo.fingerprint(name)})
        except ModelUnavailableError as exc:
            tries.append({"error": str(exc)})
    out[name] = tries
print("OUT " + json.dumps(out))
"""


def _offline_fingerprints(hf_home: Path, names: list[str]) -> dict[str, list[dict[str, str]]]:
    import json

    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    for var in ("HF_HUB_CACHE", "TRANSFORMERS_CACHE", "HUGGINGFACE_HUB_CACHE"):
        env.pop(var, None)
    done = subprocess.run([sys.executable, "-c", _FINGERPRINTS, json.dumps(names)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("OUT "))
    return json.loads(line[4:])


def test_a_partial_hub_snapshot_is_an_error_naming_its_missing_files_never_another_key(tmp_path: Path) -> None:
    """Loading only the config leaves a snapshot holding config.json; offline, its fingerprint is an error
    naming the weights and tokenizer it lacks (twice the same), not a hash of the config. Completed, the
    same hub id gets the fingerprint of the whole model: that of the local folder with the same bytes."""
    from tests.support import hub_cache

    minilm = {p.name: p.read_bytes() for p in modelzoo.model_files(modelzoo.minilm_path())}
    hf = tmp_path / "hf"
    hub_cache.add_model(hf, "someorg/config-only", {"config.json": minilm["config.json"]})
    hub_cache.add_model(hf, "someorg/no-tokenizer", {k: minilm[k] for k in ("config.json", "model.safetensors")})
    index = {"metadata": {}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                                            "b.weight": "model-00002-of-00002.safetensors"}}
    hub_cache.add_model(hf, "someorg/one-shard", {
        "config.json": minilm["config.json"], "vocab.txt": minilm["vocab.txt"],
        "model.safetensors.index.json": json.dumps(index).encode(),
        "model-00001-of-00002.safetensors": b"first half"})
    hub_cache.add_model(hf, "someorg/whole", minilm)
    names = ["someorg/config-only", "someorg/no-tokenizer", "someorg/one-shard", "someorg/whole",
             "someorg/never-downloaded"]
    found = _offline_fingerprints(hf, names)

    for name in names[:3]:
        first, second = found[name]
        assert first == second and "hash" not in first, f"{name} got a key from part of a model: {first}"
        assert "incomplete" in first["error"] and "huggingface-cli download " + name in first["error"]
    def lacks(name: str) -> list[str]:
        text = found[name][0]["error"]
        return text[text.index(" lacks ") + 7:text.index(". Its fingerprint")].split("; ")

    weights = "weights (" + " or ".join(modelzoo.WEIGHT_PATTERNS) + ")"
    tokenizer = "a tokenizer file (" + ", ".join(modelzoo.TOKENIZER_FILES) + ")"
    assert lacks("someorg/config-only") == [weights, tokenizer]
    assert lacks("someorg/no-tokenizer") == [tokenizer]
    assert lacks("someorg/one-shard") == ["model-00002-of-00002.safetensors"]
    missing = found["someorg/never-downloaded"][0]["error"]
    assert "could not be fetched" in missing and "huggingface-cli download someorg/never-downloaded" in missing
    whole = modelzoo.fingerprint(modelzoo.minilm_path())
    assert found["someorg/whole"] == [{"hash": whole}, {"hash": whole}]

    # the rest of the model arrives (a new revision of the same repository): the key of the whole model
    hub_cache.add_model(hf, "someorg/config-only", minilm)
    assert _offline_fingerprints(hf, ["someorg/config-only"])["someorg/config-only"][0] == {"hash": whole}


def test_missing_model_files_of_a_local_folder(tmp_path: Path) -> None:
    assert modelzoo.missing_model_files(modelzoo.minilm_path()) == []
    (tmp_path / "spm.model").write_bytes(b"x")
    assert modelzoo.missing_model_files(tmp_path) == [
        "config.json", "weights (" + " or ".join(modelzoo.WEIGHT_PATTERNS) + ")"]


def test_a_pretraining_run_names_its_model_without_its_weights(tmp_path) -> None:
    """``pretrain-run:<place>`` is its own fingerprint (the run's digest and seed), so runs planned from it are
    found in a results folder of records only; loading it needs the weights, and the error says what is there."""
    key = "study/scratch/study-3/biomed-abstracts/4c8431d3e779/seed1"
    name = modelzoo.run_reference(key)
    assert modelzoo.run_key(name) == key and modelzoo.fingerprint(name) == name
    assert modelzoo.model_tag(name) == "study-3-s1" and modelzoo.display_name(name) == "study-3-s1"
    assert modelzoo.run_key("minilm") is None
    with pytest.raises(ValueError, match="not a pretraining run's place"):
        modelzoo.run_reference("study/seed1")
    with pytest.raises(ModelUnavailableError, match="is named pretrain-run:<config>"):
        modelzoo.fingerprint("pretrain-run:../elsewhere")
    with pytest.raises(ModelUnavailableError, match="needs the results root"):
        modelzoo.resolve(name)
    with pytest.raises(ModelUnavailableError, match="holds neither its record nor its weights"):
        modelzoo.resolve(name, results_root=tmp_path)
    record = tmp_path / "pretrain" / f"{key}.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    with pytest.raises(ModelUnavailableError, match="holds its record but not its weights"):
        modelzoo.resolve(name, results_root=tmp_path)
    (record.parent / "seed1" / "model").mkdir(parents=True)
    assert modelzoo.resolve(name, results_root=tmp_path) == str(record.parent / "seed1" / "model")
