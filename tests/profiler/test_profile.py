"""minitorch_gpu.profiler: which events a known workload records (CPU ops, backward nodes, record_function
ranges, kernels), how they nest, and what recording leaves behind when it stops."""
import sys
import types

import pytest

import minitorch_gpu as mt
from minitorch_gpu import _op_range
from minitorch_gpu.backends import get_backend
from minitorch_gpu.backends.cuda import counting
from minitorch_gpu.backends.cuda.loader import exports
from minitorch_gpu.backends.cuda.hooks import Hooked
from minitorch_gpu.cuda import nvtx
from minitorch_gpu.profiler import DeviceType, ProfilerActivity, profile, record_function

ALL = [ProfilerActivity.CPU, ProfilerActivity.CUDA]


def _names(events, device_type=DeviceType.CPU):
    """Event names of one device type, without the CUDA runtime calls that launched kernels."""
    return [e.name for e in events if e.device_type is device_type and e.category != "cuda_runtime"]


def _linear_step(device):
    mt.manual_seed(0)
    lin = mt.nn.Linear(4, 3).to(device)
    x = mt.randn(2, 4, device=device)
    with profile(activities=ALL) as prof:
        lin(x).sum().backward()
    return prof


def test_linear_forward_backward_records_ops_backward_nodes_and_kernels(device):
    prof = _linear_step(device)
    names = _names(prof.events())
    assert names.count("aten::addmm") == 1 and names.count("aten::sum") == 2
    assert names.count("aten::mm") == 1  # the weight's gradient
    for node in ("SumBackward0", "AddmmBackward0", "torch::autograd::AccumulateGrad"):
        evaluate = "autograd::engine::evaluate_function: " + node
        assert names.count(evaluate) == (2 if "Accumulate" in node else 1)
        assert names.count(node) == names.count(evaluate)
        # the node runs inside the engine's range for it, as in PyTorch
        inner = [e for e in prof.events() if e.name == node]
        assert all(e.cpu_parent.name == evaluate for e in inner)
    kernels = [e for e in prof.events() if e.device_type is DeviceType.CUDA]
    if device == "cpu":
        assert kernels == []
        return
    addmm = next(e for e in prof.events() if e.name == "aten::addmm")
    mm = next(e for e in prof.events() if e.name == "aten::mm")
    gemms = set(exports("matmul.cu"))
    assert [k.name in gemms for k in addmm.kernels] == [True] and [k.name in gemms for k in mm.kernels] == [True]
    assert addmm.kernels[0].grid and addmm.kernels[0].block
    # every launch of our kernels has its runtime event on the CPU, a child of the op that launched it
    launch = next(e for e in prof.events() if e.id == addmm.kernels[0].correlation_id)
    assert launch.name == "cudaLaunchKernel" and launch.cpu_parent is addmm
    assert addmm.self_device_time_total == pytest.approx(addmm.kernels[0].time_range.elapsed_us())
    assert all(k.time_range.elapsed_us() >= 0 for k in kernels)


def test_record_function_ranges_nest_around_the_ops_they_hold(device):
    x = mt.ones(3, device=device)
    with profile(activities=ALL) as prof:
        with record_function("outer"):
            with record_function("inner"):
                y = x * 2
            z = y + 1
    ev = {e.name: e for e in prof.events() if e.device_type is DeviceType.CPU}
    outer, inner = ev["outer"], ev["inner"]
    assert outer.cpu_parent is None and inner.cpu_parent is outer
    assert ev["aten::mul"].cpu_parent is inner and ev["aten::add"].cpu_parent is outer
    assert outer.time_range.start <= inner.time_range.start <= inner.time_range.end <= outer.time_range.end
    assert outer.is_user_annotation and not ev["aten::mul"].is_user_annotation
    assert outer.cpu_time_total >= inner.cpu_time_total + ev["aten::add"].cpu_time_total
    del z


def test_record_function_as_a_decorator_and_outside_a_profiler(device):
    @record_function("helper")
    def helper(t):
        return t.exp()

    helper(mt.ones(2, device=device))  # nothing recording: a no-op
    with profile(activities=ALL) as prof:
        helper(mt.ones(2, device=device))
        helper(mt.ones(2, device=device))
    avg = {a.key: a for a in prof.key_averages()}
    assert avg["helper"].count == 2 and avg["aten::exp"].count == 2


def test_custom_function_and_module_events(device):
    class Double(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    lin = mt.nn.Linear(2, 2).to(device)
    x = mt.ones(1, 2, device=device, requires_grad=True)
    with profile(activities=ALL, with_modules=True) as prof:
        Double.apply(lin(x)).sum().backward()
    names = _names(prof.events())
    assert "Double" in names and "nn.Module: Linear" in names
    assert "autograd::engine::evaluate_function: DoubleBackward" in names
    double = next(e for e in prof.events() if e.name == "Double")
    assert [c.name for c in double.cpu_children] == ["aten::mul"]
    with profile(activities=ALL) as prof:
        lin(x)
    assert not any(n.startswith("nn.Module") for n in _names(prof.events()))


def test_profile_memory_counts_each_ops_new_tensors(device):
    x = mt.ones(100, device=device)
    with profile(activities=ALL, profile_memory=True) as prof:
        y = x * 2
        z = y.view(10, 10)
    mul = next(e for e in prof.events() if e.name == "aten::mul")
    view = next(e for e in prof.events() if e.name == "aten::view")
    if device == "cpu":
        assert (mul.cpu_memory_usage, mul.device_memory_usage) == (400, 0)
    else:
        assert (mul.cpu_memory_usage, mul.device_memory_usage) == (0, 400)
    assert (view.cpu_memory_usage, view.device_memory_usage) == (0, 0)  # a view allocates nothing
    del z
    # the CPU backend's memory hook is gone after the trace
    assert "count_memory" not in vars(get_backend("cpu")) and "counts_memory" not in vars(get_backend("cpu"))


def test_input_shapes_and_grouping(device):
    a, b = mt.ones(2, 3, device=device), mt.ones(3, 4, device=device)
    with profile(activities=ALL, record_shapes=True) as prof:
        a @ b
        a @ b
        b.t() @ a.t()
    mm = [e for e in prof.events() if e.name == "aten::mm"]
    assert [e.input_shapes for e in mm] == [[[2, 3], [3, 4]]] * 2 + [[[4, 3], [3, 2]]]
    grouped = [g for g in prof.key_averages(group_by_input_shape=True) if g.key == "aten::mm"]
    assert sorted((g.count, str(g.input_shapes)) for g in grouped) == [(1, "[[4, 3], [3, 2]]"),
                                                                       (2, "[[2, 3], [3, 4]]")]
    assert [g.count for g in prof.key_averages() if g.key == "aten::mm"] == [3]


def test_results_need_a_finished_trace():
    prof = profile(activities=[ProfilerActivity.CPU])
    with pytest.raises(RuntimeError, match="didn't finish running"):
        prof.events()
    with pytest.raises(AssertionError, match="No valid profiler activities"):
        profile(activities=[])


def test_the_legacy_autograd_profiler_spelling(device):
    import minitorch_gpu.autograd.profiler as legacy

    assert legacy is mt.autograd.profiler
    with mt.autograd.profiler.profile(use_device="cuda" if device == "cuda" else None) as prof:
        with mt.autograd.profiler.record_function("block"):
            mt.ones(3, device=device) * 2
    with pytest.raises(RuntimeError, match="didn't finish"):
        mt.autograd.profiler.profile().key_averages()
    assert _names(prof.function_events) == ["block", "aten::mul"]
    assert "aten::mul" in prof.key_averages().table()
    assert (any(e.device_type is DeviceType.CUDA for e in prof.function_events)) == (device == "cuda")


# ---------------------------------------------------------------------- the hot path when nothing records
def test_profiling_off_leaves_the_hot_path_as_it_was(device):
    be = get_backend(device)
    x = mt.ones(3, device=device)
    prof = profile(activities=ALL)  # made, never started: records nothing, installs nothing
    assert _op_range.enabled is False and _op_range._subscribers == ()
    x * 2
    with prof:
        x * 2
    assert _op_range.enabled is False and _op_range._subscribers == ()
    assert not any(isinstance(v, Hooked) for v in vars(be).values())
    if device == "cuda":
        assert be.kernels is None or be.kernels.observer is None
    assert be not in counting._observers
    x * 2
    assert _names(prof.events()) == ["aten::mul"]  # only what ran inside the block


def test_nvtx_and_the_profiler_share_the_switch(monkeypatch, device):
    log = []
    mod = types.SimpleNamespace(push_range=lambda message, domain: log.append(("push", message)),
                                pop_range=lambda domain: log.append(("pop",)))
    monkeypatch.setitem(sys.modules, "nvtx", mod)
    monkeypatch.setattr(nvtx, "_lib", None)
    try:
        assert nvtx.enable(True)
        x = mt.ones(3, device=device)
        with profile(activities=ALL) as prof:
            x * 2
        x + 1
        assert _names(prof.events()) == ["aten::mul"]
        # NVTX saw both ops, the one inside the profile and the one after it
        assert log == [("push", "MulBackward0"), ("pop",), ("push", "AddBackward0"), ("pop",)]
        assert _op_range.enabled is True
    finally:
        nvtx.enable(False)
    assert _op_range.enabled is False


def test_a_launch_counter_and_the_profiler_observe_one_backend_together():
    prev = mt.cuda.use_simulator(True)
    try:
        be = get_backend("cuda")
        x = mt.ones(64, device="cuda")
        with counting.LaunchCounter().attach(be) as c:
            with profile(activities=ALL) as prof:
                x * 2
            x + 1  # the profiler left: the counter still counts
        assert c.kernels["binary_forward<float>"].launches == 2
        assert _names(prof.events(), DeviceType.CUDA) == ["binary_forward<float>"]
        assert be not in counting._observers and be.kernels.observer is None
    finally:
        mt.cuda.use_simulator(prev)
