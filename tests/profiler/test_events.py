"""The summary table, the Chrome trace, and each launch's bytes, FLOPs and roofline fraction."""
import json
import types

import pytest

import minitorch_gpu as mt
from minitorch_gpu.profiler import DeviceType, EventList, FunctionEvent, ProfilerActivity, profile
from minitorch_gpu.profiler import _rules
from minitorch_gpu.profiler._clock import CudaEventClock

ALL = [ProfilerActivity.CPU, ProfilerActivity.CUDA]


def _header(table):
    """Column names of a table: its header line split on the runs of spaces between right-aligned columns."""
    line = table.splitlines()[1]
    return [c.strip() for c in line.split("  ") if c.strip()]


def _workload(lib, device="cpu"):
    a = lib.ones(8, 8, device=device)
    b = lib.ones(8, 8, device=device)
    for _ in range(3):
        (a @ b).sum()
    (a * b).relu()


def test_table_columns_follow_pytorchs(torch):
    for kw in (dict(), dict(record_shapes=True), dict(profile_memory=True, record_shapes=True)):
        with profile(activities=[ProfilerActivity.CPU], **kw) as ours:
            _workload(mt)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], **kw) as theirs:
            _workload(torch)
        assert _header(ours.key_averages().table()) == _header(theirs.key_averages().table())
        assert ours.key_averages().table().splitlines()[-1].startswith("Self CPU time total: ")


def test_table_sorts_limits_and_rejects_unknown_keys(device):
    with profile(activities=ALL) as prof:
        _workload(mt, device)
    avg = prof.key_averages()
    table = avg.table(sort_by="self_cpu_time_total", row_limit=3)
    rows = table.splitlines()[3:-2 if device == "cpu" else -4]
    assert len(rows) == 3
    expected = sorted(avg, key=lambda e: e.self_cpu_time_total, reverse=True)[:3]
    assert [r.split()[0] for r in rows] == [e.key.split()[0] for e in expected]
    calls = {e.key: e.count for e in avg}
    assert calls["aten::mm"] == 3 and calls["aten::sum"] == 3 and calls["aten::relu"] == 1
    with pytest.raises(AttributeError):
        avg.table(sort_by="no_such_column")
    if device == "cuda":
        full = avg.table(sort_by="cuda_time_total")
        head = _header(full)
        assert head[6:10] == ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
        assert head[-3:] == ["CUDA bytes", "CUDA FLOPs", "Roofline"]
        assert "Self CUDA time total: " in full
        if mt.cuda.is_simulated():
            assert "host's clock" in full and " n/a" in full


def test_chrome_trace_is_valid_json_with_complete_events_and_flows(device, tmp_path):
    with profile(activities=ALL, record_shapes=True) as prof:
        with mt.profiler.record_function("block"):
            _workload(mt, device)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == len(prof.events())
    for e in complete:
        assert {"name", "cat", "ts", "dur", "pid", "tid"} <= set(e) and e["dur"] >= 0
    cpu = [e for e in complete if e["cat"] != "kernel"]
    assert {e["pid"] for e in cpu} == {prof.events()[0].thread and cpu[0]["pid"]}
    assert any(e["name"] == "block" and e["cat"] == "user_annotation" for e in cpu)
    mm = next(e for e in cpu if e["name"] == "aten::mm")
    assert mm["args"]["Input Dims"] == [[8, 8], [8, 8]]
    kernels = [e for e in complete if e["cat"] == "kernel"]
    if device == "cpu":
        assert kernels == []
        return
    # device work on its own track, each kernel tied to the CPU event that launched it
    assert {(k["pid"], k["tid"]) for k in kernels} == {(0, 7)}
    by_id = {e["args"]["External id"]: e for e in cpu}
    starts = {f["id"]: f for f in events if f["ph"] == "s"}
    ends = {f["id"]: f for f in events if f["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    for k in kernels:
        if k["args"]["correlation"] >= 0:
            assert k["args"]["correlation"] in by_id
        assert set(k["args"]) >= {"grid", "block", "bytes read", "bytes written", "FLOPs"}
    assert any(e["ph"] == "M" and e["pid"] == 0 and e["args"].get("name") == "GPU 0" for e in events)
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    import gzip
    assert json.loads(gzip.open(gz, "rt").read())["traceEvents"] == events


# ---------------------------------------------------------------------- bytes and FLOPs, from first principles
@pytest.fixture
def sim():
    prev = mt.cuda.use_simulator(True)
    yield "cuda"
    mt.cuda.use_simulator(prev)


def _kernels(prof):
    return [e for e in prof.events() if e.device_type is DeviceType.CUDA]


@pytest.mark.parametrize("M,K,N", [(8, 16, 12), (3, 5, 7)])
def test_a_gemm_reports_2mnk_flops_and_its_operands_bytes(sim, M, K, N):
    a, b = mt.randn(M, K, device=sim), mt.randn(K, N, device=sim)
    with profile(activities=ALL) as prof:
        a @ b
    (k,) = _kernels(prof)
    assert k.device_flops == 2 * M * N * K
    assert k.bytes_written == 4 * M * N
    # A and B, plus the launch's table of batch offsets (three int64 per batch entry)
    assert k.bytes_read == 4 * (M * K + K * N) + 3 * 8
    assert k.grid and k.block


def test_an_elementwise_op_reads_two_operands_writes_one_and_does_one_flop_each(sim):
    n = 1000
    a, b = mt.randn(n, device=sim), mt.randn(n, device=sim)
    with profile(activities=ALL, with_flops=True) as prof:
        a + b
    (k,) = _kernels(prof)
    assert k.name == "binary_forward<float>"
    assert (k.bytes_read, k.bytes_written, k.device_flops) == (8 * n, 4 * n, n)
    add = next(e for e in prof.events() if e.name == "aten::add")
    assert add.device_bytes == 12 * n and add.device_flops_total == n and add.flops == n


def test_op_flops_for_with_flops_on_the_cpu():
    a, b = mt.ones(4, 6), mt.ones(6, 5)
    lin = mt.nn.Linear(6, 3)
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        a @ b
        lin(a)
        a * 2
    flops = {e.key: e.flops for e in prof.key_averages()}
    assert flops["aten::mm"] == 2 * 4 * 6 * 5 and flops["aten::addmm"] == 2 * 4 * 6 * 3
    assert flops["aten::mul"] == 24
    assert "Total KFLOPs" in _header(prof.key_averages().table()) or "Total FLOPs" in _header(
        prof.key_averages().table())


def test_attention_and_split_k_rules():
    i64, i32 = __import__("numpy").int64, __import__("numpy").int32
    arr = types.SimpleNamespace(ndim=2, size=10, dtype=None)
    shape = (i64(6), i32(3), i32(128), i32(128), i32(64), i32(64), 0.125, i32(0))
    full = _rules.kernel_flops("attention.cu", "attention_forward_d64<float>", (arr,) * 6 + (arr, arr) + shape)
    assert full == 4 * 6 * 128 * 128 * 64
    causal = shape[:7] + (i32(1),)
    assert _rules.kernel_flops("attention.cu", "attention_forward_d64<float>", (arr,) * 8 + causal) == full // 2
    assert _rules.kernel_flops("attention.cu", "attention_backward_dkv_d64<float>", (arr,) * 11 + shape) == 2 * full
    assert _rules.kernel_flops("matmul.cu", "matmul_splitk_reduce<float>",
                               (arr, arr, arr, i64(96), i64(12), i32(4), i32(0))) == 96 * 4
    assert _rules.kernel_flops("optim.cu", "adam_step<float>", (arr,)) == 0


def test_op_names_follow_aten():
    assert _rules.op_name("AddmmBackward0") == "aten::addmm"
    assert _rules.op_name("NativeLayerNormBackward0") == "aten::native_layer_norm"
    assert _rules.op_name("SumBackward1") == "aten::sum"
    assert _rules.op_name("CopyBackwards") == "aten::copy"
    assert _rules.op_name("ScaledDotProductFlashAttentionBackward0") == "aten::scaled_dot_product_flash_attention"


# ---------------------------------------------------------------------- roofline and GPU timing
def test_roofline_is_the_ideal_time_over_the_measured_one():
    assert _rules.device_peaks("NVIDIA H100 80GB HBM3") == (3.35e12, 67.0e12)
    assert _rules.device_peaks("NVIDIA H100 PCIe")[0] == 2.0e12
    assert _rules.device_peaks("minitorch_gpu CUDA simulator") is None
    k = FunctionEvent(1, "copy_kernel", 0, 0.0, 10.0, device_type=DeviceType.CUDA, use_device="cuda")
    k.bytes_read, k.bytes_written = 8_000_000, 8_000_000   # 16 MB in 10 us: 1.6 TB/s
    m = FunctionEvent(2, "gemm", 0, 10.0, 30.0, device_type=DeviceType.CUDA, use_device="cuda")
    m.device_flops = 670_000_000  # 0.67 GFLOP in 20 us: 33.5 TFLOP/s
    table = EventList([k, m], use_device="cuda", peaks=(3.2e12, 67e12), device_note="note").table()
    rows = {line.split()[0]: line.split()[-1] for line in table.splitlines()[3:5]}
    assert rows == {"copy_kernel": "0.50", "gemm": "0.50"}
    assert table.rstrip().endswith("note")


def test_cuda_event_clock_places_kernels_on_the_host_timeline():
    class Event:
        now = 0.0  # ms on the fake device

        def record(self):
            self.t = Event.now

        def synchronize(self):
            pass

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event,
                                                            get_elapsed_time=lambda a, b: b.t - a.t))
    clock = CudaEventClock(fake)
    assert clock.measures_device
    Event.now = 2.0
    first = clock.mark()
    Event.now = 2.5
    second = clock.mark()
    start, dur = clock.span(first, second)
    assert dur == 500_000 and start == clock._ref_ns + 2_000_000
