"""The GPU check (issue 36): run the ``gpu`` profile with real weights on a bare GPU machine, in one call.

This file is copied into the folder ``make gpu-check`` builds (``benchmarks/gpu_check/pack.py``) and runs from
there, on a machine without network that has Python 3.12, torch, transformers, accelerate, pandas, scipy,
scikit-learn, seaborn and the tokenizer libraries, but not the rest of medibio's environment::

    python3 run.py [--out DIR] [--budget 420] [--limit N]

Steps, each under its own timeout inside one overall budget (seconds), the results bundled into ``--out``
after every step (four files: ``summary.md``, ``summary.json``, ``records.tar.gz``, ``run.log``), so a
machine taken away mid-way still returns what was done:

0. setup: check the folder against its manifest, unpack medibio's source and the data, install the wheels of
   the distributions this Python lacks (``--no-index --no-deps --target``), upcast the fp16 model to fp32
   (transformers 5 loads a checkpoint in the dtype it was stored in, and the ``gpu`` profile trains fp32
   weights under bf16 autocast);
1. ``medibio finetune`` on GAD, BIOSSES and BC5-chem, ``gpu`` profile, full official splits, seed 1, through
   ``accelerate launch`` with ``configs/accelerate/one_gpu.yaml``;
2. the Tables 5-6 chapter executed through the book's papermill executor (``medibio.book.build``) with
   ``profile=gpu``, the carried model and step 1's datasets: it reuses step 1's records;
3. ``transformers.Trainer`` on step 1's GAD run: same model, data and hyperparameters (read from its record),
   examples/s and test score side by side;
4. the summary table.

``--limit N`` caps every split at N examples (medibio's ``--limit``; Trainer the same) and ``--epochs N``
trains every run N epochs (a fine-tuning override that step 1 and the chapter share): the CPU dry run of the
test suite (``tests/test_gpu_check.py``, ``--limit 16 --epochs 1``) runs this same file. Only the standard library is imported
at the top: the wheels are not installed yet when it starts. A Python that cannot run the check (a system
``python3`` without the image's packages, wheels built for another CPython, no pip) is told so in one line
before setup (:func:`preflight`, exit 2), with ``run.log`` and the summary still written to ``--out``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS = ("GAD", "BIOSSES", "BC5-chem")
CHAPTER = "tables_5_6_pretraining_configurations"
# the fp32 model the steps train, named on the pages and in the records by this folder name
MODEL_DIR = "all-MiniLM-L6-v2-from-fp16"
# Seconds each step may take at most (a step also never runs past the overall budget, less what the steps
# after it are guaranteed); measured nothing yet on a GPU: sized from the H100/H200 throughput of
# reference/gpu/README.md (MiniLM: ~40K training tokens/s, so GAD's 10 epochs ~1 min, BC5-chem's 20 ~2 min).
STEP_CAPS = {"setup": 120, "finetune": 330, "chapter": 150, "trainer": 150, "summary": 30}
RESERVE = {"setup": 0, "finetune": 60, "chapter": 45, "trainer": 10, "summary": 0}  # kept for the later steps
BUNDLE = ("summary.md", "summary.json", "records.tar.gz", "run.log")
# What the GPU machine's Python must have, since the folder does not carry it (docs/gpu-check.md): the image's
# packages by import name, and three that earlier GPU sessions found there which datasets needs.
IMAGE_MODULES = ("torch", "transformers", "accelerate", "pandas", "scipy", "sklearn", "seaborn", "sentencepiece",
                 "tokenizers", "safetensors", "huggingface_hub", "pyarrow", "xxhash", "requests")


class Check:
    """The state of one run: folders, the log, the clock and what each step gave."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.out = Path(args.out).resolve()
        self.work = Path(args.work).resolve()
        self.limit = args.limit
        self.epochs = args.epochs
        self.budget = args.budget
        self.cap_scale = args.cap_scale
        self.start = time.monotonic()
        self.steps: list[dict] = []
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.log_path = self.out / "run.log"
        self.log_path.write_text("", encoding="utf-8")

    @property
    def results(self) -> Path:
        return self.work / "results"

    @property
    def model(self) -> Path:
        return self.work / MODEL_DIR

    def fail(self, text: str) -> None:
        """One line on stderr (and in ``run.log``) for a check that cannot start."""
        print(f"error: {text}", file=sys.stderr, flush=True)
        with open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(f"error: {text}\n")

    def say(self, text: str) -> None:
        line = f"[{time.monotonic() - self.start:7.1f} s] {text}"
        print(line, flush=True)
        with open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.start)

    def timeout(self, step: str) -> float:
        later = sum(v for k, v in RESERVE.items() if list(RESERVE).index(k) > list(RESERVE).index(step))
        return max(5.0, min(STEP_CAPS[step] * self.cap_scale, self.left() - later))

    def env(self) -> dict[str, str]:
        """The environment of every medibio process: the unpacked source and the installed wheels on the path,
        the carried data, results and cache under the work folder, no network."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.work / "src"), str(self.work / "site"),
                                                            os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               "MEDIBIO_DATA": str(self.work / "data"), "MEDIBIO_RESULTS": str(self.results),
               "MEDIBIO_CACHE": str(self.work / "cache"), "JUPYTER_PATH": str(self.work / "jupyter" / "share" /
                                                                                "jupyter"),
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
        if self.limit:
            env["MEDIBIO_LIMIT"] = str(self.limit)
        return env

    def run(self, step: str, cmd: list[str], log: str) -> dict:
        """``cmd`` under the step's timeout, its output in ``<out>/../logs``; never raises."""
        limit = self.timeout(step)
        self.say(f"step {step}: {' '.join(cmd[:6])}{' ...' if len(cmd) > 6 else ''} (timeout {limit:.0f} s)")
        logs = self.work / "logs"
        logs.mkdir(exist_ok=True)
        started = time.monotonic()
        with open(logs / log, "w", encoding="utf-8") as fh:
            # a session of its own: a timeout ends the whole tree (accelerate's worker too), so the GPU is free
            # for the next step
            proc = subprocess.Popen(cmd, env=self.env(), stdout=fh, stderr=subprocess.STDOUT, cwd=self.work,
                                    start_new_session=True)
            try:
                code = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = "timeout"
        seconds = time.monotonic() - started
        tail = (logs / log).read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        outcome = {"step": step, "status": "ok" if code == 0 else f"failed ({code})", "seconds": round(seconds, 1),
                   "log": f"logs/{log}"}
        self.say(f"step {step}: {outcome['status']} in {seconds:.1f} s" +
                 ("" if code == 0 else "\n    " + "\n    ".join(tail)))
        self.steps.append(outcome)
        return outcome

    def bundle(self) -> None:
        """Write the summary and pack the records, the chapter and the logs into ``--out`` (after every step)."""
        summary = summarise(self)
        write(self.out / "summary.json", json.dumps(summary, indent=1, default=str))
        write(self.out / "summary.md", markdown(summary))
        tmp = self.out / "records.tar.gz.tmp"
        with tarfile.open(tmp, "w:gz") as tar:
            for folder in ("results", "book", "logs"):
                if (self.work / folder).is_dir():
                    tar.add(self.work / folder, arcname=folder, filter=_no_weights)
        os.replace(tmp, self.out / "records.tar.gz")


def _no_weights(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Records, predictions, notebooks and logs come back; model weights and optimiser states do not."""
    return None if info.name.endswith((".safetensors", ".bin", ".pt")) else info


def write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# ----------------------------------------------------------------------------------------------- step 0

def preflight() -> str | None:
    """What keeps this Python from running the check, in one line, or None: the image's packages it lacks
    (started by a system Python, every step would end in an import traceback), wheels carried for another
    CPython than this one, or no pip to install them."""
    import importlib.util

    python = f"this Python ({sys.executable}, {sys.version.split()[0]})"
    lacking = [name for name in IMAGE_MODULES if importlib.util.find_spec(name) is None]
    if lacking:
        return (f"{python} lacks {', '.join(lacking)}, which the GPU machine's image provides and this folder does "
                "not carry (docs/gpu-check.md): run run.py with the image's python3, or for a CPU dry run with the "
                "project's environment (.venv/bin/python .gpu-check/run.py)")
    wheels = _missing_wheels()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    # name-version[-build]-python-abi-platform.whl: a CPython build for another minor version will not install
    foreign = sorted({python for python, abi in (w.name.split("-")[-3:-1] for w in wheels)
                      if python.startswith("cp") and abi not in ("abi3", "none") and python != tag})
    if foreign:
        return (f"{python} lacks {len(wheels)} distribution(s) whose carried wheels are built for {', '.join(foreign)}, "
                f"not {tag}: run run.py with that Python (the GPU image's), or rebuild the folder for this one")
    if wheels and importlib.util.find_spec("pip") is None:
        return f"{python} has no pip to install the {len(wheels)} carried wheel(s) it lacks: run run.py with a Python that has pip"
    return None


def unpack(archive: Path, folder: Path) -> None:
    """Extract one of the folder's archives (checked against the manifest first) into ``folder``; a Python
    without extraction filters (before 3.11.4) extracts it as it is."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(folder, filter="data")
        else:
            tar.extractall(folder)


def setup(check: Check) -> dict:
    started = time.monotonic()
    problems = []
    for line in (HERE / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        path, size, digest = line.split("\t")
        file = HERE / path
        if not file.is_file() or file.stat().st_size != int(size) or sha256(file) != digest:
            problems.append(path)
    if problems:
        raise SystemExit(f"the folder does not match MANIFEST.tsv: {', '.join(problems)}")
    for archive, folder in (("src.tar.gz", "src"), ("data.tar.gz", "data")):
        unpack(HERE / archive, check.work / folder)
    wheels = _missing_wheels()
    if wheels:
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target",
                              str(check.work / "site"), *map(str, wheels)], check=False)
        if pip.returncode != 0:
            check.fail(f"setup: pip could not install the carried wheels (exit {pip.returncode}; its message is above)")
            outcome = {"step": "setup", "status": f"failed (pip exit {pip.returncode})",
                       "seconds": round(time.monotonic() - started, 1), "wheels": [w.name for w in wheels]}
            check.steps.append(outcome)
            return outcome
    check.say(f"setup: {len(wheels)} wheels installed ({', '.join(w.name.split('-')[0] for w in wheels) or 'none'})")
    outcome = {"step": "setup", "status": "ok", "seconds": 0.0, "wheels": [w.name for w in wheels]}
    upcast = check.run("setup", [sys.executable, str(Path(__file__).resolve()), "_upcast", "--work", str(check.work)],
                       "upcast.log")
    check.steps.pop()
    outcome["status"] = upcast["status"]
    outcome["seconds"] = round(time.monotonic() - started, 1)
    check.steps.append(outcome)
    return outcome


def _missing_wheels() -> list[Path]:
    """The carried wheels of distributions this Python does not have (any version)."""
    import importlib.metadata as md

    missing = []
    for wheel in sorted((HERE / "wheels").glob("*.whl")):
        name = wheel.name.split("-")[0]
        try:
            md.distribution(name)
        except md.PackageNotFoundError:
            missing.append(wheel)
    return missing


def upcast(work: Path) -> None:
    """The carried fp16 model as fp32 in ``<work>/<MODEL_DIR>`` (same bytes on every run: its fingerprint is
    the same across machines), with the medibio kernelspec installed for this interpreter."""
    import torch
    from safetensors.torch import load_file, save_file

    source, target = HERE / "model", work / MODEL_DIR
    target.mkdir(parents=True, exist_ok=True)
    for file in source.iterdir():
        if file.name != "model.safetensors":
            shutil.copyfile(file, target / file.name)
    tensors = {k: (v.float() if v.is_floating_point() else v) for k, v in load_file(source / "model.safetensors").items()}
    save_file(tensors, str(target / "model.safetensors"), metadata={"format": "pt"})
    from medibio.book import assets

    assets.install_kernel(prefix=work / "jupyter")
    print(f"fp32 model: {sum(v.numel() for v in tensors.values()):,} values; torch {torch.__version__}")


# ----------------------------------------------------------------------------------------------- steps 1-3

def finetune(check: Check) -> dict:
    config = check.work / "src" / "configs" / "accelerate" / "one_gpu.yaml"
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config), "-m", "medibio",
           "finetune", "--task", ",".join(TASKS), "--profile", "gpu", "--seeds", "1", "--model", str(check.model),
           "--json"]
    if check.epochs:
        cmd += ["--config", str(overrides(check.work, check.epochs))]
    return check.run("finetune", cmd, "finetune.log")


def overrides(work: Path, epochs: int | None) -> Path | None:
    """The fine-tuning overrides file of a dry run with fewer epochs (step 1 and the chapter read the same one,
    so the chapter finds step 1's records), None without."""
    if not epochs:
        return None
    path = work / "overrides.yaml"
    write(path, f"# the CPU dry run's epochs (run.py --epochs)\nepochs: {epochs}\n")
    return path


def chapter(check: Check) -> dict:
    return check.run("chapter", [sys.executable, str(Path(__file__).resolve()), "_chapter", "--work",
                                 str(check.work)] + (["--epochs", str(check.epochs)] if check.epochs else []),
                     "chapter.log")


def run_chapter(work: Path, epochs: int | None) -> None:
    """One chapter through the book's own executor, as ``medibio book --profile gpu --model ...`` runs it."""
    from dataclasses import asdict

    from medibio.book import assets, build, chapters
    from medibio.book.notebook import QUIET_ENV
    from medibio.core import launch
    from medibio.core.settings import Settings

    settings = Settings.from_env()
    prefix = work / "jupyter"
    if not assets.kernel_ready(prefix):
        assets.install_kernel(prefix)
    book = work / "book"
    book.mkdir(exist_ok=True)
    params = {"profile": "gpu", "model": str(work / MODEL_DIR), "tasks": ",".join(TASKS), "seeds": "1",
              "table5_experiments": False}
    if epochs:
        params["finetune_config"] = str(overrides(work, epochs))
    with launch.kernel_environment(settings, QUIET_ENV):
        result = build.execute_chapter(chapters.get(CHAPTER), book, params)
    print(json.dumps(asdict(result), indent=1))
    if result.failed:
        raise SystemExit(f"{CHAPTER}: {result.describe()}")


def trainer(check: Check) -> dict:
    return check.run("trainer", [sys.executable, str(Path(__file__).resolve()), "_trainer", "--work",
                                 str(check.work)] + (["--limit", str(check.limit)] if check.limit else []),
                     "trainer.log")


def gad_record(results: Path) -> dict | None:
    """Step 1's GAD record (the newest, if several)."""
    found = sorted((results / "finetune").glob("gpu*/*/base/GAD/*/seed1.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(found[-1].read_text(encoding="utf-8")) if found else None


def run_trainer(work: Path, limit: int | None) -> None:
    """``transformers.Trainer`` with step 1's GAD hyperparameters: the peer a user would pick instead.

    Same model folder, same splits (medibio's loader), same learning rate, batch, epochs, warm-up, weight
    decay, clipping, Adam epsilon, maximum length, bf16 where the GPU has it, dev F1 picking the epoch as
    medibio does, medibio's metric on the test predictions. What differs is each library's own machinery
    (Trainer's length grouping, collator, schedule implementation)."""
    import inspect

    import numpy as np
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    from medibio.core.settings import Settings
    from medibio.tasks import loaders, metrics

    settings = Settings.from_env()
    record = gad_record(settings.results_root)
    if record is None:
        raise SystemExit("no GAD record from step 1: nothing to compare with")
    hp = record["hyperparameters"]
    model_dir = str(work / MODEL_DIR)
    data = loaders.load_blurb("GAD", settings.data_root)
    if limit:
        data = {k: v.select(range(min(limit, len(v)))) for k, v in data.items()}
    labels = ["0", "1"]
    tok = AutoTokenizer.from_pretrained(model_dir)

    def encode(batch):
        out = tok(batch["text"], truncation=True, max_length=hp["max_length"])
        out["labels"] = [labels.index(x) for x in batch["label"]]
        return out

    enc = {k: v.map(encode, batched=True, remove_columns=v.column_names) for k, v in data.items()}
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2, dtype=torch.float32)
    cuda = torch.cuda.is_available()
    # the precision medibio's run used (it decides per device: bf16 autocast where the hardware has it)
    bf16 = hp.get("mixed_precision_used", hp["mixed_precision"]) == "bf16"

    def f1(pred):
        return {"f1": metrics.evaluate("GAD", [labels[i] for i in pred.label_ids],
                                       [labels[i] for i in np.argmax(pred.predictions, -1)])["score"]}

    # the same choices under the names of the installed transformers (5.x renamed two of them)
    known = inspect.signature(TrainingArguments).parameters
    versioned = {"warmup_ratio": hp["warmup_ratio"]} if "warmup_ratio" in known else {
        "warmup_steps": float(hp["warmup_ratio"])}
    if hp["length_bucketing"] and "group_by_length" in known:
        versioned["group_by_length"] = True
    elif hp["length_bucketing"] and "train_sampling_strategy" in known:
        versioned["train_sampling_strategy"] = "group_by_length"
    args = TrainingArguments(**versioned,
        output_dir=str(work / "trainer"), learning_rate=hp["learning_rate"],
        per_device_train_batch_size=hp["batch_size"], per_device_eval_batch_size=hp["eval_batch_size"],
        gradient_accumulation_steps=hp["grad_accum"], num_train_epochs=hp["effective_epochs"],
        weight_decay=hp["weight_decay"], max_grad_norm=hp["max_grad_norm"],
        adam_epsilon=hp["adam_epsilon"], lr_scheduler_type="linear", bf16=bf16, use_cpu=not cuda,
        eval_strategy="epoch", save_strategy="epoch", save_total_limit=1, load_best_model_at_end=True,
        metric_for_best_model="f1", greater_is_better=True,
        seed=record["seed"], data_seed=record["seed"], report_to=[], logging_strategy="no",
        dataloader_num_workers=0, disable_tqdm=True, save_only_model=True)
    run = Trainer(model=model, args=args, train_dataset=enc["train"], eval_dataset=enc["dev"],
                  data_collator=DataCollatorWithPadding(tok), compute_metrics=f1)
    started = time.perf_counter()
    out = run.train()
    train_seconds = time.perf_counter() - started
    test = run.predict(enc["test"])
    print(json.dumps({"record": record["run_id"], "train_examples": len(enc["train"]),
                      "epochs": hp["effective_epochs"], "train_seconds": round(train_seconds, 2),
                      "train_examples_per_s": round(out.metrics["train_samples_per_second"], 2),
                      "test_f1": round(test.metrics["test_f1"], 4),
                      "bf16": bf16, "device": torch.cuda.get_device_name(0) if cuda else "cpu"}), flush=True)
    write(work / "trainer.json", json.dumps({"record": record["run_id"], "train_seconds": train_seconds,
                                             "train_examples_per_s": out.metrics["train_samples_per_second"],
                                             "test_f1": test.metrics["test_f1"], "bf16": bf16,
                                             "epochs": hp["effective_epochs"], "train_examples": len(enc["train"]),
                                             "device": torch.cuda.get_device_name(0) if cuda else "cpu"}))


# ----------------------------------------------------------------------------------------------- step 4

def summarise(check: Check) -> dict:
    """The steps so far, one row per step-1 record, and medibio against Trainer on GAD."""
    runs = []
    for path in sorted((check.results / "finetune").glob("gpu*/*/*/*/*/seed*.json")):
        r = json.loads(path.read_text(encoding="utf-8"))
        runs.append({"dataset": r["dataset"], "status": r["status"], "model": r["model"]["tag"],
                     "fingerprint": r["model"]["hash"][:19], "train_examples": r.get("train_examples"),
                     "epochs": r["hyperparameters"].get("effective_epochs"), "score_dev": r.get("score_dev"),
                     "score_test": r.get("score_test"), "wall_time_s": r.get("wall_time_s"),
                     "train_examples_per_s": r.get("train_examples_per_s"),
                     "device": r["environment"].get("device"), "record": str(path.relative_to(check.work))})
    peer = check.work / "trainer.json"
    comparison = None
    gad = next((r for r in runs if r["dataset"] == "GAD"), None)
    if peer.is_file() and gad:
        t = json.loads(peer.read_text(encoding="utf-8"))
        comparison = {"medibio_examples_per_s": gad["train_examples_per_s"], "medibio_test_f1": gad["score_test"],
                      "trainer_examples_per_s": t["train_examples_per_s"], "trainer_test_f1": t["test_f1"],
                      "speed_ratio": (gad["train_examples_per_s"] / t["train_examples_per_s"]
                                      if gad["train_examples_per_s"] and t["train_examples_per_s"] else None)}
    return {"limit": check.limit, "epochs": check.epochs, "budget_s": check.budget, "elapsed_s": round(time.monotonic() - check.start, 1),
            "python": sys.version.split()[0], "steps": check.steps, "runs": runs, "trainer_vs_medibio": comparison}


def markdown(summary: dict) -> str:
    def num(x, fmt="{:.2f}"):
        return "–" if x is None else fmt.format(x)

    lines = [f"# medibio GPU check{' (limit ' + str(summary['limit']) + ' examples per split)' if summary['limit'] else ''}",
             "", f"Python {summary['python']}, {summary['elapsed_s']} s of a {summary['budget_s']} s budget.", "",
             "| step | status | seconds |", "|---|---|---:|"]
    lines += [f"| {s['step']} | {s['status']} | {s['seconds']} |" for s in summary["steps"]]
    lines += ["", "| dataset | model | epochs | train examples | dev | test | train examples/s | wall s | device |",
              "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {r['dataset']} | {r['model']} | {r['epochs']} | {r['train_examples']} | {num(r['score_dev'])} | "
              f"{num(r['score_test'])} | {num(r['train_examples_per_s'], '{:.1f}')} | {num(r['wall_time_s'], '{:.1f}')} "
              f"| {r['device']} |" for r in summary["runs"]]
    c = summary["trainer_vs_medibio"]
    if c:
        lines += ["", "| GAD | train examples/s | test F1 |", "|---|---:|---:|",
                  f"| medibio | {num(c['medibio_examples_per_s'], '{:.1f}')} | {num(c['medibio_test_f1'])} |",
                  f"| transformers.Trainer | {num(c['trainer_examples_per_s'], '{:.1f}')} | "
                  f"{num(c['trainer_test_f1'])} |",
                  f"| medibio / Trainer | {num(c['speed_ratio'])} | |"]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", nargs="?", default="all", choices=["all", "_upcast", "_chapter", "_trainer"])
    parser.add_argument("--out", default=os.environ.get("OUT", str(HERE / "out")),
                        help="where the bundle goes (default: $OUT, the device tool's folder)")
    parser.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "medibio-gpu-check"),
                        help="scratch folder (unpacked source, data, model, results)")
    parser.add_argument("--budget", type=float, default=420.0, help="overall seconds")
    parser.add_argument("--limit", type=int, default=None, help="at most N examples per split (the CPU dry run)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="train every run this many epochs instead of the profile's (the CPU dry run: 1)")
    parser.add_argument("--cap-scale", type=float, default=1.0,
                        help="multiply every step's cap (a CPU dry run is slower than the GPU the caps were made for)")
    args = parser.parse_args(argv)
    work = Path(args.work).resolve()
    if args.step == "_upcast":
        upcast(work)
        return 0
    if args.step == "_chapter":
        run_chapter(work, args.epochs)
        return 0
    if args.step == "_trainer":
        run_trainer(work, args.limit)
        return 0
    check = Check(args)
    problem = preflight()
    if problem is not None:
        check.fail(problem)
        check.bundle()
        return 2
    check.say(f"medibio GPU check: budget {args.budget:.0f} s, work {work}, out {check.out}"
              + (f", limit {args.limit}" if args.limit else ""))
    if setup(check)["status"] != "ok":
        check.bundle()
        return 1
    check.bundle()
    for step in (finetune, chapter, trainer):
        step(check)
        check.bundle()
    check.say("summary:\n" + markdown(summarise(check)))
    check.bundle()
    return 0 if all(s["status"] == "ok" for s in check.steps) else 1


if __name__ == "__main__":
    sys.exit(main())
