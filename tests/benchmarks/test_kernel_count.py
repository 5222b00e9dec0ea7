"""Counting mode (backends/cuda/counting.py, benchmarks/kernel_count.py): launches, bytes, built-in calls and
syncs of a tiny GPT step on the simulator, and the extrapolation from small points."""
import json

import numpy as np
import pytest

from benchmarks import kernel_count as kc
from minitorch_gpu.backends.cuda.counting import LaunchCounter


def test_one_binary_launch_counts_its_bytes_and_detach_restores(sim):
    a = np.arange(1000, dtype=np.float32)
    b = np.ones(1000, dtype=np.float32)
    with LaunchCounter().attach(sim) as c:
        out = sim.binary("add", a, b)
        sim.to_numpy(out)
        sim.sum(out, None, False)
    np.testing.assert_array_equal(out, a + 1)
    st = c.kernels["binary_forward<float>"]
    assert st.file == "elementwise.cu" and st.launches == 1
    assert st.bytes_read == 2 * a.nbytes and st.bytes_written == a.nbytes
    assert c.syncs["to_numpy"].calls == 1
    assert c.builtins["sum"].calls == 1 and c.builtins["sum"].bytes_read == a.nbytes
    # the routed primitive launched a kernel: it is not also a built-in call
    assert "binary" not in c.builtins
    assert sim.kernels.observer is None and not isinstance(sim.kernels.xp, type(c)) and sim.kernels.xp is np
    assert "binary" not in vars(sim) and "optim_step" not in vars(sim.kernels)


def test_tiny_gpt_step_counts(tmp_path):
    cfg = kc.TINY_CONFIG
    run = kc.count_step(cfg, cfg["batch_size"], cfg["block_size"])
    files = {r["file"] for r in run["kernels"].values() if r["launches"] > 0}
    # dropout > 0: the Philox stream runs too
    assert {"matmul.cu", "elementwise.cu", "layernorm.cu", "cross_entropy.cu", "optim.cu", "random.cu"} <= files
    P = run["params"]
    adam = run["kernels"]["adam_step<float>"]
    # params, grads, exp_avg, exp_avg_sq read (plus the pointer tables, sizes, chunk list and scalars: a few
    # hundred bytes a group); all but the grads written
    assert 16 * P < adam["bytes_read"] < 16 * P + 4096 and adam["bytes_written"] == 12 * P
    # loss.item() at least
    assert sum(s["calls"] for s in run["syncs"].values()) >= 1
    assert run["host_to_device"]["calls"] == 2  # x and y
    doc = kc.run_count(dict(cfg), quick=False)
    moved = doc["totals"]["kernel_bytes"] + doc["totals"]["builtin_bytes"]
    assert moved >= doc["minimum_bytes"]["total"] > 0
    assert doc["bytes_over_minimum"] == pytest.approx(moved / doc["minimum_bytes"]["total"])
    kc.write(doc, str(tmp_path))
    assert json.loads((tmp_path / "kernels_count.json").read_text())["totals"] == doc["totals"]
    md = (tmp_path / "kernels_count.md").read_text()
    assert ("`matmul_forward" in md or "`sgemm_" in md) and "Device-to-host syncs" in md


def test_extrapolation_is_exact_for_the_model_and_flags_changing_launches():
    def run(b, t):
        n = b * t
        return {"batch": b, "block": t,
                "kernels": {"k": {"file": "x.cu", "launches": 3 if b < 4 else 4,
                                  "bytes_read": 7 + 3 * t + 5 * n + 11 * t * t + 2 * n * t, "bytes_written": 11 * n}},
                "builtins": {}, "syncs": {"s": {"calls": 1, "bytes": 4}}, "views": {"v": 2},
                "host_to_device": {"calls": 2, "bytes": 16 * n}}
    res = kc.extrapolate([run(b, t) for b, t in kc.quick_points(8)], 64, 256)
    n = 64 * 256
    k = res["kernels"]["k"]
    assert k["bytes_read"] == 7 + 3 * 256 + 5 * n + 11 * 256 * 256 + 2 * n * 256 and k["bytes_written"] == 11 * n
    assert res["syncs"]["s"]["calls"] == 1 and res["views"] == {"v": 2}
    assert res["host_to_device"]["bytes"] == 16 * n
    assert any("launches differ" in note for note in res["notes"])


def test_quick_mode_fit_holds_at_a_point_it_did_not_see():
    cfg = dict(kc.TINY_CONFIG, block_size=32, batch_size=8)
    doc = kc.run_count(cfg, quick=True, t0=2)
    check = doc["fit_check"]
    assert check["point"] == [4, 8]
    assert check["measured"]["kernel_launches"] == check["fitted"]["kernel_launches"] > 0
    assert check["relative_error"]["kernel_bytes"] < 1e-2 and check["relative_error"]["builtin_bytes"] < 1e-2


def test_minimum_bytes_formula():
    cfg = dict(kc.TINY_CONFIG, dropout=0.0)
    B, T, C, H, L, V = 2, 8, cfg["n_embd"], cfg["n_head"], cfg["n_layer"], cfg["vocab_size"]
    m = kc.minimum_bytes(cfg, 1000, B, T)
    N = B * T
    A = L * (16 * N * C + 4 * N + B * H * T * T) + 2 * N * C + 3 * N + N * V
    assert m["total"] == 32 * 1000 + 8 * A + 16 * N
    assert kc.minimum_bytes(dict(cfg, dropout=0.1), 1000, B, T)["total"] > m["total"]
