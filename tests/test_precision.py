"""`kbert.precision`: bfloat16 detection from CPU flags, `auto` resolution, the warning; no TensorFlow."""

from __future__ import annotations

import ast
import pathlib

import pytest

from kbert import precision

SAPPHIRE_RAPIDS = {"avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "amx_int8"}
ZEN4 = {"avx512f", "avx512bw", "avx512_bf16"}
SKYLAKE = {"avx2", "avx512f", "avx512bw"}
HASWELL = {"sse4_2", "avx", "avx2", "fma"}


@pytest.mark.parametrize("flags, machine, native", [
    (SAPPHIRE_RAPIDS, "x86_64", True),
    (ZEN4, "x86_64", True),
    ({"amx_bf16"}, "AMD64", True),
    (SKYLAKE, "x86_64", False),
    (HASWELL, "x86_64", False),
    (set(), "x86_64", False),
    ({"fp", "asimd", "bf16"}, "aarch64", False),  # not x86: TensorFlow's bf16 here is not oneDNN's AMX path
    (ZEN4, "arm64", False),
])
def test_has_native_bf16(flags, machine, native):
    assert precision.has_native_bf16(flags, machine=machine) is native


def test_warning_only_without_native_bf16():
    assert precision.bf16_warning(SAPPHIRE_RAPIDS, machine="x86_64") is None
    message = precision.bf16_warning(HASWELL, machine="x86_64")
    assert "no native bfloat16" in message and "slower than float32" in message and "x86_64" in message
    assert "aarch64" in precision.bf16_warning({"bf16"}, machine="aarch64")


@pytest.mark.parametrize("policy, gpu, flags, want", [
    ("auto", False, SAPPHIRE_RAPIDS, "mixed_bfloat16"),
    ("auto", False, ZEN4, "mixed_bfloat16"),
    ("auto", False, HASWELL, "none"),
    ("auto", True, HASWELL, "mixed_float16"),
    ("auto", True, SAPPHIRE_RAPIDS, "mixed_float16"),  # a GPU trains in float16 whatever its host CPU
    ("none", False, SAPPHIRE_RAPIDS, "none"),
    ("float32", False, SAPPHIRE_RAPIDS, "none"),
    ("mixed_bfloat16", False, HASWELL, "mixed_bfloat16"),  # asked for explicitly: kept
])
def test_resolve_mixed_precision(policy, gpu, flags, want):
    assert precision.resolve_mixed_precision(policy, gpu=gpu, flags=flags, machine="x86_64") == want


def test_bad_names_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="none, mixed_float16, mixed_bfloat16, auto"):
        precision.resolve_mixed_precision("bf16")
    with pytest.raises(ValueError, match="float32, bfloat16"):
        precision.check_precision("float16")
    with pytest.raises(ValueError, match="none, dynamic, float16"):
        precision.check_quantize("int8")


def test_cpu_flags_reads_this_machine():
    flags = precision.cpu_flags()
    assert isinstance(flags, frozenset)
    if pathlib.Path("/proc/cpuinfo").is_file() and "flags" in pathlib.Path("/proc/cpuinfo").read_text():
        assert flags  # a Linux x86 machine lists its flags


def test_module_imports_only_the_standard_library():
    tree = ast.parse(pathlib.Path(precision.__file__).read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names <= {"__future__", "functools", "platform", "typing"}


def test_keras_policy_of_every_name():
    names = [name for name in (*precision.MIXED_PRECISIONS, *precision.PRECISIONS) if name != "auto"]
    assert {name: precision.keras_policy(name) for name in names} == {
        "none": "float32", "mixed_float16": "mixed_float16", "mixed_bfloat16": "mixed_bfloat16",
        "float32": "float32", "bfloat16": "mixed_bfloat16"}
    assert precision.keras_policy(precision.resolve_mixed_precision("float32")) == "float32"


def test_policy_names_live_only_in_this_module():
    """The Keras policy names are written in `kbert/precision.py` alone: training, export, the optimizer and
    the command line take them (and their choices) from it."""
    package = pathlib.Path(precision.__file__).parent
    found = sorted(str(path.relative_to(package.parent)) for path in package.rglob("*")
                   if path.is_file() and path.suffix in (".py", ".yaml", ".yml", ".json", ".txt", ".md")
                   and any(name in path.read_text(encoding="utf-8") for name in ("mixed_bfloat16", "mixed_float16")))
    assert found == ["kbert/precision.py"]


@pytest.mark.parametrize("flags, expected", [({"avx512f", "avx512_bf16"}, "bfloat16"), ({"amx_bf16"}, "bfloat16"),
                                             ({"avx512f", "avx2"}, "float32"), (set(), "float32")])
def test_an_exports_auto_precision_follows_the_cpu(flags, expected):
    chosen, why = precision.resolve_precision("auto", flags=flags, machine="x86_64")
    assert chosen == expected and why.startswith("auto: ")
    assert ("natively" in why) == (expected == "bfloat16")
    assert precision.resolve_precision("auto", flags=flags, machine="aarch64")[0] == "float32"
    for given in ("float32", "bfloat16"):
        assert precision.resolve_precision(given, flags=flags) == (given, "")
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16, auto"):
        precision.resolve_precision("float16")
