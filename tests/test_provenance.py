"""What a record says about the CPU it ran on: the model name and the flags that decide its precision."""

from __future__ import annotations

from medibio.core import provenance


def test_cpu_features_names_the_bf16_flags_a_cpu_has(tmp_path):
    amx = tmp_path / "amx"
    amx.write_text("model name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n")
    plain = tmp_path / "plain"
    plain.write_text("model name\t: Intel(R) Xeon(R) Processor @ 2.80GHz\nflags\t\t: fpu avx2 avx512f avx512bw\n")
    assert provenance.cpu_features(amx) == ["avx2", "avx512f", "avx512_bf16", "amx_bf16"]
    assert provenance.cpu_features(plain) == ["avx2", "avx512f"]
    assert provenance.cpu_features(tmp_path / "missing") == []


def test_the_environment_block_names_this_cpus_flags():
    env = provenance.environment()
    assert env["cpu_flags"] == provenance.cpu_features()
    assert set(env["cpu_flags"]) <= set(provenance.CPU_FEATURES)
