"""``mt.backends.cudnn``: PyTorch's switches, as attribute and as importable module, against a CPU build of
PyTorch (where cuDNN is not available either)."""
import importlib

import pytest

import minitorch_gpu as mt

SWITCHES = ["enabled", "benchmark", "deterministic", "allow_tf32"]


@pytest.fixture
def cudnn():
    mod = importlib.import_module("minitorch_gpu.backends.cudnn")
    saved = {name: getattr(mod, name) for name in SWITCHES}
    yield mod
    for name, value in saved.items():
        setattr(mod, name, value)


def test_importable_and_an_attribute(cudnn):
    import minitorch_gpu.backends.cudnn as imported
    assert imported is cudnn is mt.backends.cudnn


def test_answers_and_defaults_match_torch(cudnn, torch):
    theirs = torch.backends.cudnn
    assert cudnn.is_available() is theirs.is_available() is False
    assert cudnn.version() is theirs.version() is None
    assert cudnn.is_acceptable(mt.zeros(2)) is theirs.is_acceptable(torch.zeros(2)) is False
    assert cudnn.benchmark_limit == theirs.benchmark_limit
    for name in SWITCHES:
        assert getattr(cudnn, name) is getattr(theirs, name), name


@pytest.mark.parametrize("name", SWITCHES)
def test_switches_store_bools_and_refuse_anything_else(cudnn, torch, name):
    default = getattr(cudnn, name)
    setattr(cudnn, name, not default)
    assert getattr(mt.backends.cudnn, name) is (not default)
    for bad in (1, "yes", None):
        with pytest.raises(RuntimeError) as ours:
            setattr(cudnn, name, bad)
        with pytest.raises(RuntimeError) as theirs:
            setattr(torch.backends.cudnn, name, bad)
        assert str(ours.value) == str(theirs.value)
    assert getattr(cudnn, name) is (not default)  # a refused value leaves the switch as it was


def test_flags_block_sets_then_restores(cudnn, torch):
    cudnn.benchmark = True
    with cudnn.flags(enabled=False, deterministic=True):
        with torch.backends.cudnn.flags(enabled=False, deterministic=True):
            for name in SWITCHES:
                if name != "benchmark":
                    assert getattr(cudnn, name) is getattr(torch.backends.cudnn, name), name
            assert cudnn.benchmark is False
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, True, False)
    with pytest.raises(ValueError), cudnn.flags(benchmark=True):
        raise ValueError
    assert cudnn.benchmark is True


def test_matmul_switch_refuses_non_bools_like_torch(torch):
    with pytest.raises(RuntimeError) as ours:
        mt.backends.cuda.matmul.allow_tf32 = 0
    with pytest.raises(RuntimeError) as theirs:
        torch.backends.cuda.matmul.allow_tf32 = 0
    assert str(ours.value) == str(theirs.value)
    assert mt.backends.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is False


def test_float32_matmul_precision_tracks_allow_tf32_like_torch(torch):
    # the two spellings of one switch, step for step as PyTorch keeps them: "high"/"medium" allow TF32, setting
    # allow_tf32 reads back as "high"/"highest", another string warns and changes nothing
    # (PyTorch 2.13 refuses to read the precision when allow_tf32 was set right after set_float32_matmul_precision
    # changed it, calling that a mix of old and new APIs: those steps are left out)
    steps = [("precision", "high"), ("precision", "medium"), ("precision", "highest"), ("flag", True),
             ("flag", False), ("precision", "medium"), ("precision", "HIGH"), ("precision", "foo"),
             ("precision", "high"), ("precision", "highest")]
    try:
        assert mt.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
        for kind, value in steps:
            for lib in (mt, torch):
                if kind == "flag":
                    lib.backends.cuda.matmul.allow_tf32 = value
                elif value in ("highest", "high", "medium"):
                    lib.set_float32_matmul_precision(value)
                else:
                    with pytest.warns(UserWarning, match=f"^{value} is not one of 'highest', 'high', or 'medium'"):
                        lib.set_float32_matmul_precision(value)
            assert mt.get_float32_matmul_precision() == torch.get_float32_matmul_precision(), (kind, value)
            assert mt.backends.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32, (kind, value)
        with pytest.raises(RuntimeError) as ours:
            mt.set_float32_matmul_precision(1)
        with pytest.raises(RuntimeError) as theirs:
            torch.set_float32_matmul_precision(1)
        assert str(ours.value) == str(theirs.value)
    finally:
        mt.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("highest")
