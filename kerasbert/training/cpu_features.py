"""What the CPU can do in reduced precision, and a warning where bfloat16 would be slower than float32.

bfloat16 pays on a CPU only with bf16 products in hardware (x86: AVX512-BF16 or AMX-BF16; Arm: BF16). Without
them every bf16 matmul is converted to float32 and back: measured on an AVX2 machine, `mixed_bfloat16` trained
at 0.88-0.98x and predicted at 0.77-0.87x of float32 (docs, results page). kerasbert refuses nothing, but says
so once.

Examples:
    >>> "avx2" in cpu_flags()  # on most x86 machines
    True
    >>> warn_if_bfloat16_is_slow_here(keras.dtype_policies.get("mixed_bfloat16"))  # a warning on an AVX2-only CPU
"""

import functools
import warnings
from pathlib import Path

BF16_PRODUCT_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")  # x86 (/proc/cpuinfo "flags"), Arm ("Features")


@functools.cache
def cpu_flags(cpuinfo="/proc/cpuinfo"):
    """The CPU's feature flags from `/proc/cpuinfo` (empty where it cannot be read: then nothing is claimed)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


_warned = False


def warn_if_bfloat16_is_slow_here(policy, flags=None):
    """Warn once per process when `policy` computes in bfloat16 on a CPU without bf16 products."""
    global _warned
    flags = cpu_flags() if flags is None else flags
    if _warned or policy.compute_dtype != "bfloat16" or not flags or any(f in flags for f in BF16_PRODUCT_FLAGS):
        return
    _warned = True
    warnings.warn(
        f"dtype={policy.name!r} on this CPU will be slower than float32, not faster: it has no bfloat16 products "
        "in hardware (no AVX512-BF16 or AMX-BF16 flag in /proc/cpuinfo), so every bf16 matmul runs as float32 "
        "with conversions around it. Use the default float32 here, or a CPU with AVX512-BF16/AMX or a GPU for bf16.",
        stacklevel=3,
    )
