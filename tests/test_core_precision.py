"""Precision decisions (issue 14 §2): the decision table with mocked devices, the one call site in the
fine-tuning trainer, DeBERTa's fp16 handling in the installed transformers, and the shipped accelerate
configuration files loaded by accelerate's own loader."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from medibio.core import precision as accel
from medibio.core.errors import MedibioError
from medibio.core.precision import Device, precision_for

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "accelerate"
AMPERE, VOLTA = Device("cuda", True), Device("cuda", False)
CPU_BF16, CPU = Device("cpu", True), Device("cpu", False)

TABLE = [  # device, requested, expected
    (AMPERE, "auto", "bf16"), (AMPERE, "bf16", "bf16"), (AMPERE, "fp16", "fp16"), (AMPERE, "no", "no"),
    (AMPERE, "fp32", "no"),
    (VOLTA, "auto", "fp16"), (VOLTA, "bf16", "fp16"), (VOLTA, "fp16", "fp16"), (VOLTA, "no", "no"),
    (CPU_BF16, "auto", "bf16"), (CPU_BF16, "bf16", "bf16"), (CPU_BF16, "fp16", "no"), (CPU_BF16, "no", "no"),
    (CPU, "auto", "no"), (CPU, "bf16", "no"), (CPU, "fp16", "no"), (CPU, "fp32", "no"),
]


@pytest.mark.parametrize(("device", "requested", "expected"), TABLE)
def test_decision_table(device: Device, requested: str, expected: str) -> None:
    assert precision_for(device, requested) == expected


def test_unknown_request_is_refused() -> None:
    with pytest.raises(MedibioError, match="unknown precision 'fp8'"):
        precision_for(CPU, "fp8")


@pytest.mark.parametrize(("cuda", "gpu_bf16", "cpu_bf16", "expected"), [
    (True, True, False, "bf16"), (True, False, True, "fp16"), (False, False, True, "bf16"),
    (False, False, False, "no")])
def test_current_device_reads_the_hardware(monkeypatch: pytest.MonkeyPatch, cuda: bool, gpu_bf16: bool,
                                           cpu_bf16: bool, expected: str) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: gpu_bf16)
    monkeypatch.setattr(accel, "cpu_has_bf16", lambda: cpu_bf16)
    assert accel.current_device() == Device("cuda" if cuda else "cpu", gpu_bf16 if cuda else cpu_bf16)
    assert precision_for(requested="bf16") == expected


def test_without_a_gpu_driver_the_device_is_known_without_torch() -> None:
    code = ("import sys\nfrom medibio.core import precision\nprecision.GPU_DEVICE_FILES = ()\n"
            "print(precision.current_device().kind, 'torch' in sys.modules)\n"
            f"precision.GPU_DEVICE_FILES = ({__file__!r},)  # a driver's file: torch is asked\n"
            "print(precision.gpu_possible())")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.split() == ["cpu", "False", "True"]


def test_cpu_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    for flags, expected in (("fpu avx2 avx512f", False), ("avx512f avx512_bf16", True), ("amx_bf16 amx_tile", True)):
        monkeypatch.setattr(Path, "read_text", lambda self, *a, _f=flags, **k: f"flags\t\t: {_f}\n")
        assert accel.cpu_has_bf16() is expected


def test_fine_tuning_asks_precision_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fine-tuning runner builds its accelerator with medibio.core.precision.accelerator, which asks
    precision_for (the Accelerator itself is replaced: no GPU here)."""
    import accelerate
    from accelerate.state import AcceleratorState

    from medibio.finetune import runner

    seen: dict[str, Any] = {}
    monkeypatch.setattr(accel, "current_device", lambda: VOLTA)
    monkeypatch.setattr(AcceleratorState, "_shared_state", {})  # no accelerator made before this one
    monkeypatch.setattr(accelerate, "Accelerator",
                        lambda cpu, mixed_precision: seen.setdefault("precision", mixed_precision))
    assert runner.AcceleratorWhenTraining is accel.AcceleratorWhenTraining
    assert runner.AcceleratorWhenTraining("bf16").made == "fp16"  # a GPU without bf16: loss-scaled fp16


@pytest.mark.slow
def test_installed_deberta_scales_before_the_matmul_and_masks_with_the_dtype_minimum() -> None:
    """What we rely on (huggingface/transformers#24116, microsoft/DeBERTa#77): if a transformers upgrade
    drops either, fp16 DeBERTa runs may overflow again and this test says so."""
    from transformers.models.deberta_v2 import modeling_deberta_v2 as m

    forward = inspect.getsource(m.DisentangledSelfAttention.forward)
    assert "key_layer.transpose(-1, -2) / scale" in forward.replace("\n", " ")
    assert "torch.finfo(query_layer.dtype).min" in forward
    bias = inspect.getsource(m.DisentangledSelfAttention.disentangled_attention_bias)
    assert bias.count("/ scale") >= 2  # c2p and p2c terms


def test_tiny_deberta_fp16_forward_is_finite_and_close_to_fp32(session_settings) -> None:
    """The fp16 forward pass of DeBERTa (padded batch, masked positions) on CPU: no inf/NaN, same
    predictions as fp32 within fp16 rounding."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from medibio.models import tiny

    path = tiny.build(session_settings.cache_root)
    tokenizer = AutoTokenizer.from_pretrained(path)
    batch = tokenizer(["Aspirin inhibits COX-2.", "A much longer sentence about insulin receptor expression "
                       "in hepatocytes of diabetic mice after treatment."], padding=True, return_tensors="pt")
    assert int(batch["attention_mask"].sum()) < batch["attention_mask"].numel()  # some positions are masked
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=3).eval()
    with torch.no_grad():
        full = model(**batch).logits
        half = model.to(torch.float16)(**batch).logits
    assert half.dtype == torch.float16 and torch.isfinite(half).all()
    assert torch.allclose(half.float(), full, atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize(("name", "processes", "machines", "kind"), [
    ("one_gpu.yaml", 1, 1, "NO"), ("eight_gpus.yaml", 8, 1, "MULTI_GPU"),
    ("three_nodes_eight_gpus.yaml", 24, 3, "MULTI_GPU")])
def test_accelerate_configs_load(name: str, processes: int, machines: int, kind: str) -> None:
    from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file

    config = load_config_from_file(str(CONFIGS / name))
    assert isinstance(config, ClusterConfig)
    assert (config.num_processes, config.num_machines, config.distributed_type.value) == (processes, machines, kind)
    assert config.mixed_precision == "bf16" and config.use_cpu is False
    assert config.num_processes % config.num_machines == 0


def test_readme_names_every_config_and_the_gpu_commands() -> None:
    text = (CONFIGS / "README.md").read_text(encoding="utf-8")
    for name in ("one_gpu.yaml", "eight_gpus.yaml", "three_nodes_eight_gpus.yaml"):
        assert f"--config_file configs/accelerate/{name}" in text
    for command in ("-p profile gpu", "make book PROFILE=gpu", "-m medibio finetune", "-m medibio pretrain",
                    "--machine_rank 2", "--main_process_ip"):
        assert command in text


def test_shutdown_leaves_a_process_group_and_is_a_no_op_without_one(tmp_path):
    import torch.distributed as dist

    from medibio.core import precision as accel

    accel.shutdown()  # nothing initialised: nothing to do
    assert not dist.is_initialized()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    assert dist.is_initialized()
    accel.shutdown()
    assert not dist.is_initialized()


def test_cpu_bf16_evaluation_runs_a_bf16_copy_and_leaves_the_trained_model_alone() -> None:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    if not accel.cpu_has_bf16():
        pytest.skip("this CPU has no native bf16: evaluation stays in fp32 here")
    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1,
                                                     num_attention_heads=2, intermediate_size=64, num_labels=3))
    acc = accel.accelerator("bf16")
    prepared = acc.prepare(model)
    inputs = {"input_ids": torch.randint(0, 64, (4, 9)), "attention_mask": torch.ones(4, 9, dtype=torch.long)}
    prepared.eval()
    with torch.no_grad():
        autocast = prepared(**inputs).logits
        net = accel.evaluation_model(prepared, acc)
        copied = net(**inputs).logits
    assert net is not prepared and not net.training
    assert {p.dtype for p in net.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # training keeps its fp32 weights ...
    assert "forward" in vars(acc.unwrap_model(prepared))  # ... and accelerate's autocast around forward
    assert torch.allclose(copied.float(), autocast.float(), atol=0.05)
    assert accel.evaluation_model(prepared, accel.accelerator("no")) is prepared  # fp32: the model itself


def test_attention_kernels_leave_out_cudnn_on_a_gpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU the context disables cuDNN's attention and keeps the other kernels, then restores the flags;
    on a CPU it changes no flag (reference/gpu/README.md: cuDNN's per-shape plans under dynamic padding)."""
    import torch

    flags = torch.backends.cuda

    def enabled() -> tuple[bool, bool, bool, bool]:  # cuDNN, flash, memory-efficient, math
        return (flags.cudnn_sdp_enabled(), flags.flash_sdp_enabled(), flags.mem_efficient_sdp_enabled(),
                flags.math_sdp_enabled())

    before = enabled()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with accel.attention_kernels():
        assert enabled() == before
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with accel.attention_kernels():
        assert enabled() == (False, True, True, True)
    assert enabled() == before


def test_every_run_trains_inside_the_attention_kernels(monkeypatch: pytest.MonkeyPatch, settings) -> None:
    """The run protocol trains every kind of run inside :func:`medibio.core.precision.attention_kernels`."""
    import contextlib

    from medibio.runs import protocol
    from tests.support.runs import NotingKind

    entered: list[str] = []

    @contextlib.contextmanager
    def noting():
        entered.append("in")
        yield
        entered.append("out")

    def training() -> dict:
        entered.append("train")
        return {}

    monkeypatch.setattr(accel, "attention_kernels", noting)
    plan = protocol.plan("finetune", "cpu", "m", "base", "BIOSSES", 1, {"kernels": 1}, {}, "noting")
    protocol.run(NotingKind(training), plan, settings)
    assert entered == ["in", "train", "out"]


@pytest.mark.parametrize(("value", "expected"), [("off", False), ("OFF ", False), ("", True), ("on", True)])
def test_native_bf16_can_be_switched_off(monkeypatch: pytest.MonkeyPatch, value: str, expected: bool) -> None:
    """``$MEDIBIO_CPU_BF16=off`` (read into the settings at the boundary) keeps ``auto`` at fp32 on a CPU with
    native bf16 (the study's declared precision), and a process started with those settings inherits it."""
    from medibio.cli import session
    from medibio.core.settings import CPU_BF16_ENV, Settings

    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "flags\t\t: avx512f avx512_bf16\n")
    monkeypatch.setattr(accel, "_native_bf16", True)
    monkeypatch.setenv(CPU_BF16_ENV, value)
    made = session.settings()
    assert made.native_bf16 is expected and accel.cpu_has_bf16() is expected
    assert precision_for(requested="auto") == ("bf16" if expected else "no")
    assert Settings.from_env(made.to_env()).native_bf16 is expected


def test_the_accelerator_of_runs_on_record_is_never_made(monkeypatch: pytest.MonkeyPatch, settings) -> None:
    """A list of runs gets its accelerator when one trains: a chapter whose runs are all recorded imports no
    torch for one. Until then a process no launcher started is the only process and the main one."""
    from medibio.core.settings import Settings
    from medibio.runs import protocol
    from tests.support.runs import NotingKind

    made: list[str] = []
    real = accel.accelerator
    monkeypatch.setattr(accel, "accelerator", lambda requested="no": made.append(requested) or real(requested))
    plan = protocol.plan("finetune", "cpu", "m", "base", "BIOSSES", 1, {"lazy": 1}, {}, "noting")
    waiting = accel.AcceleratorWhenTraining("no")
    assert (waiting.num_processes, waiting.is_main_process) == (1, True) and made == []
    first, reused = protocol.run(NotingKind(dict), plan, settings, waiting)
    assert not reused and made == ["no"] and accel.made(waiting) is waiting.made
    again, reused = protocol.run(NotingKind(dict), plan, settings, accel.AcceleratorWhenTraining("no"))
    assert reused and again.created == first.created and made == ["no"]
    launched = Settings.from_env({"WORLD_SIZE": "2", "LOCAL_RANK": "0"}).launched  # started by a launcher:
    assert launched and accel.AcceleratorWhenTraining("no", launched).is_main_process  # asked, it is made
    assert made == ["no", "no"] and not Settings.from_env({}).launched
