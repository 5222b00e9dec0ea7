"""backends/cuda/nvtx.py (``mt.cuda.nvtx``): ranges reach the nvtx package when enabled, cost nothing and need
nothing when not."""
import sys
import types

import pytest

from minitorch_gpu.cuda import nvtx


@pytest.fixture
def fake_nvtx(monkeypatch):
    log = []
    mod = types.SimpleNamespace(push_range=lambda message, domain: log.append(("push", message, domain)),
                                pop_range=lambda domain: log.append(("pop", domain)))
    monkeypatch.setitem(sys.modules, "nvtx", mod)
    monkeypatch.setattr(nvtx, "_lib", None)
    yield log
    nvtx.enable(False)


def test_disabled_ranges_do_nothing(fake_nvtx):
    nvtx.enable(False)
    nvtx.range_push("x")
    nvtx.range_pop()
    with nvtx.range("y"):
        pass
    assert fake_nvtx == []


def test_enabled_ranges_nest(fake_nvtx):
    assert nvtx.enable(True) is True
    with nvtx.range("outer"):
        nvtx.range_push("inner")
        nvtx.range_pop()
    assert fake_nvtx == [("push", "outer", "minitorch_gpu"), ("push", "inner", "minitorch_gpu"),
                         ("pop", "minitorch_gpu"), ("pop", "minitorch_gpu")]


def test_range_pops_on_error(fake_nvtx):
    nvtx.enable(True)
    with pytest.raises(ValueError):
        with nvtx.range("boom"):
            raise ValueError
    assert fake_nvtx[-1] == ("pop", "minitorch_gpu")


def test_enable_without_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)  # import nvtx raises ImportError
    monkeypatch.setattr(nvtx, "_lib", None)
    assert nvtx.enable(True) is False and nvtx.enabled is False


def test_ops_backward_nodes_and_modules_get_ranges_through_the_op_range_switch(fake_nvtx):
    import minitorch_gpu as mt
    from minitorch_gpu import _op_range

    x = mt.ones(2, 3, requires_grad=True)
    lin = mt.nn.Linear(3, 2)
    assert _op_range.enabled is False
    lin(x).sum().backward()
    assert fake_nvtx == []
    nvtx.enable(True)
    assert _op_range.enabled is True
    lin(x).sum().backward()
    pushed = [e[1] for e in fake_nvtx if e[0] == "push"]
    assert pushed[0] == "Linear" and "SumBackward0" in pushed and "AccumulateGrad" in pushed
    assert len(pushed) == sum(e[0] == "pop" for e in fake_nvtx)
    nvtx.enable(False)
    assert _op_range.enabled is False
