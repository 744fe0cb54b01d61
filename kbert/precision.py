"""Precision names and the Keras dtype policy of each; which precision this machine runs fast.

The one home of the precision vocabulary: training's `--mixed-precision` names (`MIXED_PRECISIONS`),
an export's `--precision` names (`PRECISIONS`) and the Keras dtype policy each stands for
(`KERAS_POLICIES`, `keras_policy`), and a TFLite file's weight modes (`QUANTIZE_MODES`), each with one
check. `kbert.training.mixed_precision` and `kbert.export.model_precision` apply these policies; the
command line offers these names.

TensorFlow-free, so the command line can decide (and warn) before TensorFlow loads. Every function takes
the CPU's flags as an argument as well, so the decisions are testable on any machine.

    >>> has_native_bf16({"avx512f", "avx512_bf16"}, machine="x86_64")
    True
    >>> resolve_mixed_precision("auto", flags={"avx2"}, machine="x86_64", gpu=False)
    'none'
    >>> keras_policy("bfloat16")
    'mixed_bfloat16'
"""

from __future__ import annotations

import functools
import platform
from typing import Iterable, Literal, get_args

# Keras' mixed policies: products and activations in 16 bits, variables in float32.
MIXED_FLOAT16 = "mixed_float16"
MIXED_BFLOAT16 = "mixed_bfloat16"
# Every precision name, training's and an export's, with the Keras dtype policy it runs under
# ("float32" is also accepted for training, as "none").
KERAS_POLICIES = {"none": "float32", "float32": "float32", MIXED_FLOAT16: MIXED_FLOAT16,
                  MIXED_BFLOAT16: MIXED_BFLOAT16, "bfloat16": MIXED_BFLOAT16}
# `--mixed-precision` of `kbert finetune` and `kbert pretrain`: "auto" is resolved per machine.
MixedPrecision = Literal["none", "mixed_float16", "mixed_bfloat16", "auto"]
MIXED_PRECISIONS: tuple[str, ...] = get_args(MixedPrecision)
MIXED_PRECISION_HELP = (f"Keras mixed-precision policy, one of {', '.join(MIXED_PRECISIONS)}; auto: {MIXED_BFLOAT16} "
                        f"on a CPU with AMX or AVX512-BF16, {MIXED_FLOAT16} on a GPU, none (float32) elsewhere")
PRECISIONS = ("float32", "bfloat16", "auto")  # `--precision` of `kbert export`; auto: `resolve_precision`
QUANTIZE_MODES = ("none", "dynamic", "float16")  # of a TFLite file's weights: float32, int8, float16
# x86 flags (as /proc/cpuinfo spells them) of instructions that multiply bfloat16 natively.
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
_X86 = frozenset({"x86_64", "amd64", "i386", "i686", "x86"})

# Measured on an AVX-512 host with oneDNN held to AVX-512 without BF16 (ONEDNN_MAX_CPU_ISA=AVX512_CORE):
# a 2048x2048 bfloat16 matmul ran at 41 GFLOP/s against 116 for float32.
EMULATED_BF16_SLOWDOWN = "about 2.8x slower than float32 for the matrix products on AVX-512 without BF16"


class PrecisionWarning(UserWarning):
    """A precision that runs slowly on this CPU, or that part of an export does not get."""


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU feature flags of this machine (Linux /proc/cpuinfo); empty where they cannot be read.

    Read with `open()`: /proc/cpuinfo is a local kernel file, never a user path.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def has_native_bf16(flags: Iterable[str] | None = None, machine: str | None = None) -> bool:
    """Whether the CPU multiplies bfloat16 in hardware (x86 AVX512-BF16 or AMX-BF16).

    Args:
        flags: the CPU's feature flags; default: this machine's (`cpu_flags()`).
        machine: `platform.machine()`-style name; default: this machine's. Other architectures than x86
            count as without native bfloat16 (TensorFlow's bfloat16 kernels there are not oneDNN's).

    Returns:
        bool.
    """
    machine = (machine if machine is not None else platform.machine()).lower()
    if machine not in _X86:
        return False
    flags = cpu_flags() if flags is None else frozenset(flags)
    return bool(flags & NATIVE_BF16_FLAGS)


def bf16_warning(flags: Iterable[str] | None = None, machine: str | None = None) -> str | None:
    """The warning for running bfloat16 on this CPU, or None where it has native bfloat16.

    Args:
        flags, machine: as in `has_native_bf16`.

    Returns:
        A message saying that the CPU lacks native bfloat16 and how slow emulation is, or None.
    """
    if has_native_bf16(flags, machine):
        return None
    machine = machine if machine is not None else platform.machine()
    return (f"this CPU ({machine}) has no native bfloat16 (no avx512_bf16 or amx_bf16 flag): bfloat16 "
            f"matrix products are emulated, {EMULATED_BF16_SLOWDOWN} (slower still without AVX-512). "
            "The bfloat16 export still runs, with the same answers as on a bfloat16 CPU; serve float32 "
            "on this CPU for speed.")


def resolve_mixed_precision(policy: str, gpu: bool = False, flags: Iterable[str] | None = None,
                            machine: str | None = None) -> str:
    """Resolves `--mixed-precision auto`; other values pass through after checking.

    `auto` is "mixed_float16" on a GPU, "mixed_bfloat16" on a CPU with native bfloat16 (AMX or
    AVX512-BF16), and "none" (float32) elsewhere.

    Args:
        policy: one of `MIXED_PRECISIONS`, or "float32" (the same as "none").
        gpu: bool. Training runs on a GPU.
        flags, machine: as in `has_native_bf16`.

    Returns:
        "none", "mixed_float16" or "mixed_bfloat16".

    Raises:
        ValueError: an unknown policy.
    """
    if policy == "float32":
        policy = "none"
    if policy not in MIXED_PRECISIONS:
        raise ValueError(f"mixed precision must be one of {', '.join(MIXED_PRECISIONS)}; got {policy!r}")
    if policy != "auto":
        return policy
    if gpu:
        return MIXED_FLOAT16
    return MIXED_BFLOAT16 if has_native_bf16(flags, machine) else "none"


def check_precision(precision: str) -> str:
    """`precision` if it is one of `PRECISIONS`; ValueError naming the choices otherwise."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    return precision


def resolve_precision(precision: str, flags: Iterable[str] | None = None, machine: str | None = None
                      ) -> tuple[str, str]:
    """An export's precision with "auto" decided for this CPU, and why: bfloat16 where the products run in
    bfloat16 natively (AVX512-BF16 or AMX), float32 elsewhere, where bfloat16 is emulated and slower.

    Args:
        precision: one of `PRECISIONS`.
        flags, machine: as in `has_native_bf16`.

    Returns:
        ("float32" or "bfloat16", a reason to print: empty unless `precision` was "auto").

    Example:
    >>> resolve_precision("auto", flags={"avx512f", "avx512_bf16"}, machine="x86_64")
    ('bfloat16', 'auto: this CPU multiplies bfloat16 natively (avx512_bf16)')
    >>> resolve_precision("auto", flags={"avx2"}, machine="x86_64")[0], resolve_precision("float32")
    ('float32', ('float32', ''))
    """
    if check_precision(precision) != "auto":
        return precision, ""
    if has_native_bf16(flags, machine):
        native = sorted(NATIVE_BF16_FLAGS & frozenset(cpu_flags() if flags is None else flags))
        return "bfloat16", f"auto: this CPU multiplies bfloat16 natively ({', '.join(native)})"
    return "float32", "auto: this CPU has no native bfloat16 (no avx512_bf16 or amx_bf16), where float32 is faster"


def keras_policy(name: str) -> str:
    """The Keras dtype policy that a precision name runs under.

    Args:
        name: str. A key of `KERAS_POLICIES`: a checked `--mixed-precision` name other than "auto"
            (`resolve_mixed_precision`), or an export's precision (`check_precision`).

    Returns:
        The Keras dtype policy name, e.g. "float32" for "none".

    Raises:
        KeyError: a name that is not in the table (check it first).

    Example:
    >>> keras_policy("none"), keras_policy("float32")
    ('float32', 'float32')
    """
    return KERAS_POLICIES[name]


def check_quantize(quantize: str) -> str:
    """`quantize` if it is one of `QUANTIZE_MODES`; ValueError naming the choices otherwise."""
    if quantize not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be one of {', '.join(QUANTIZE_MODES)}; got {quantize!r}")
    return quantize
