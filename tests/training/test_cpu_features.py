"""bfloat16 on a CPU without bf16 products: built as asked, with one warning that names the missing feature."""

import warnings

import keras
import pytest

from kerasbert.training import cpu_features
from kerasbert.training.cpu_features import cpu_flags, warn_if_bfloat16_is_slow_here

AVX2_ONLY = frozenset({"fpu", "sse2", "avx", "avx2", "fma"})
SAPPHIRE_RAPIDS = AVX2_ONLY | {"avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"}


@pytest.fixture(autouse=True)
def fresh_warning_state(monkeypatch):
    monkeypatch.setattr(cpu_features, "_warned", False)


def caught(policy, flags):
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        warn_if_bfloat16_is_slow_here(keras.dtype_policies.get(policy), flags)
    return [str(record.message) for record in records]


def test_bfloat16_without_bf16_products_warns_once_naming_the_feature():
    first = caught("mixed_bfloat16", AVX2_ONLY)
    assert len(first) == 1 and "AVX512-BF16" in first[0] and "slower than float32" in first[0]
    assert caught("bfloat16", AVX2_ONLY) == []  # once per process


@pytest.mark.parametrize("policy, flags", [("mixed_bfloat16", SAPPHIRE_RAPIDS), ("float32", AVX2_ONLY),
                                           ("mixed_bfloat16", frozenset()), ("mixed_bfloat16", {"fp", "bf16"})])
def test_no_warning_with_bf16_products_in_float32_or_when_the_flags_are_unknown(policy, flags):
    assert caught(policy, flags) == []


def test_flags_are_read_from_cpuinfo(tmp_path):
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\n\nprocessor\t: 1\n")
    assert cpu_flags(str(tmp_path / "cpuinfo")) == {"fpu", "avx2", "avx512_bf16"}
    assert cpu_flags(str(tmp_path / "missing")) == frozenset()


def test_a_bfloat16_backbone_is_built_with_the_warning_on_an_avx2_cpu(monkeypatch, tiny_config):
    from kerasbert.families import BertBackbone

    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: AVX2_ONLY)
    with pytest.warns(UserWarning, match="no bfloat16 products"):
        backbone = BertBackbone(**tiny_config, dtype="mixed_bfloat16")
    assert backbone.encoder_blocks[0].dtype_policy.name == "mixed_bfloat16"  # built as asked
