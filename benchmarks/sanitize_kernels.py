"""Every kernel of kernels/*.cu launched a few times on small awkward shapes, checked against NumPy: the
workload ``compute-sanitizer`` (memcheck, racecheck) runs over in ``python -m benchmarks.gpu_report``.

The test suite is too slow for the sanitizer (about 50x slower under it) and has few ``cuda``-parametrised
kernel tests; this script is seconds long on a GPU and covers each kernel file's entry points: odd sizes (tails
of the 128-bit paths), a 4-byte offset that breaks 16-byte alignment, transposed and broadcast operands, rows
below and above the warp-per-row limit, batched GEMM with misaligned batch offsets, the tensor-core GEMMs of every
type and layout, all five fused optimizers, the LSTM and GRU cells forward and backward; every kernel in each
float type it is instantiated for (float32, float64, float16, bfloat16).

``python -m benchmarks.sanitize_kernels`` runs on the GPU (says so and exits 0 without one); ``--sim`` runs the
same launches on the CPU simulator (the test suite checks the script that way). Exit 1 if a check fails.
"""
from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from minitorch_gpu.backends import get_backend
from minitorch_gpu.backends._random import dropout_threshold

F32, F64, F16, BF16 = np.float32, np.float64, np.float16, ml_dtypes.bfloat16
# the 16-bit types: the kernels compute in float32 and round once per stored value
HALVES = (F16, BF16)
HALF_TOL = {F16: 4e-3, BF16: 3e-2}


def checks(be: Any) -> list[tuple[str, Callable[[], None]]]:
    """(name, check) pairs; a check launches kernels through ``be`` and raises AssertionError on a mismatch."""
    k = be.kernels
    xp = be.xp
    host = be.to_numpy
    rng = np.random.default_rng(0)

    def dev(a: np.ndarray) -> Any:
        return be.asarray(np.ascontiguousarray(a))

    def close(got: Any, want: np.ndarray, tol: float = 1e-4) -> None:
        got = host(got)
        if got.dtype in HALVES:
            # one rounding of the result to 16 bits (of inputs already in the type), on top of the float tolerance
            got, tol = got.astype(F32), max(tol, HALF_TOL[got.dtype.type])
        np.testing.assert_allclose(got, np.asarray(want, F32 if want.dtype in HALVES else want.dtype), rtol=tol,
                                   atol=tol)

    def wide(a: np.ndarray) -> np.ndarray:
        """The host reference's operand: a 16-bit array widened to float32 (its values exactly)."""
        return a.astype(F32) if a.dtype in HALVES else a

    def misaligned(n: int, dt: Any = F32) -> tuple[Any, np.ndarray]:
        base = rng.standard_normal(n + 1).astype(dt)
        return dev(base)[1:], base[1:]

    def elementwise() -> None:
        for dt in (F32, F64, *HALVES):
            for n in (1, 33, 1027):
                x, hx = misaligned(n, dt)
                hx = wide(hx)
                y = dev(rng.standard_normal(n).astype(dt))
                hy = wide(host(y))
                close(k.unary("exp", x), np.exp(hx), 1e-5)
                close(k.binary("mul", x, y), hx * hy)
                close(k.binary("add", x, 2.5), hx + 2.5)
                assert (host(k.binary("lt", x, y)) == (hx < hy)).all()
                assert (host(k.unary("isnan", x)) == np.isnan(hx)).all()
            if dt in HALVES:
                _rows_and_strides(dt)
                continue
            a = rng.standard_normal((37, 29)).astype(dt)
            da = dev(a)
            col = dev(a[:, :1])
            close(k.binary("sub", da.T, da.T[:, :1]), a.T - a.T[:, :1])
            close(k.binary("add", da, col), a + a[:, :1])
            close(k.unary("neg", da[:, ::2]), -a[:, ::2])  # not dense: the strided map
            close(k.unary("neg", da[1:, 3:]), -a[1:, 3:])   # rows contiguous, not dense: the row map
            for n in (1, 33, 1027):
                x, hx = misaligned(n, dt)
                res = dev(rng.standard_normal(n).astype(dt))
                for r in (None, res):
                    got = k.dropout(7, 3, x, 0.25, dropout_threshold(0.25), r)
                    assert got is not None
                    y = host(got[0]) - (0 if r is None else host(r))
                    kept = np.isclose(y, hx / 0.75, rtol=1e-5, atol=1e-6)
                    assert (kept | np.isclose(y, 0.0, atol=1e-6)).all()
            close(k.ternary("clamp", da.T, -0.5, 0.5), np.clip(a.T, -0.5, 0.5))
            close(k.where(dev(a > 0), da, 0.0), np.where(a > 0, a, 0.0))
            c0 = rng.standard_normal(a.shape).astype(dt)
            out = dev(c0)
            k.ternary("lerp", out, da, 0.25, out=out)
            close(out, c0 + 0.25 * (a - c0))

    def _rows_and_strides(dt: Any) -> None:
        # the 16-bit forms of the strided, row and ternary maps
        a = rng.standard_normal((37, 29)).astype(dt)
        da, wa = dev(a), wide(a)
        close(k.binary("sub", da.T, da.T[:, :1]), wa.T - wa.T[:, :1])
        close(k.binary("add", da, dev(a[:, :1])), wa + wa[:, :1])
        close(k.unary("neg", da[:, ::2]), -wa[:, ::2])
        close(k.unary("neg", da[1:, 3:]), -wa[1:, 3:])
        close(k.ternary("clamp", da.T, -0.5, 0.5), np.clip(wa.T, -0.5, 0.5))
        close(k.where(dev(a > 0), da, 0.0), np.where(wa > 0, wa, 0.0))

    def softmax() -> None:
        for dt, cols in ((F32, 1), (F32, 31), (F32, 1025), (F32, 6000), (F64, 1500), (F64, 33), (F64, 5000),
                         (F16, 31), (F16, 3000), (BF16, 5), (BF16, 6000)):
            x = rng.standard_normal((7, cols)).astype(dt)
            e = np.exp(wide(x) - wide(x).max(1, keepdims=True))
            want = e / e.sum(1, keepdims=True)
            y = k.softmax(dev(x), False, 1)
            close(y, want)
            close(k.softmax(dev(x), True, 1), np.log(want), 1e-4)
            g = rng.standard_normal(x.shape).astype(dt)
            yw, gw = wide(host(y)), wide(g)
            close(k.softmax_backward(y, dev(g), False, 1), yw * (gw - (gw * yw).sum(1, keepdims=True)), 1e-4)
        xt = rng.standard_normal((40, 9)).astype(F32)
        k.softmax(dev(xt).T, False, 1)  # a transposed input: the launcher copies it first

    def cross_entropy() -> None:
        for dt, rows, C in ((F32, 1, 3), (F32, 17, 97), (F32, 3, 5000), (F64, 5, 1300), (F64, 9, 96),
                            (F16, 17, 97), (F16, 3, 5000), (BF16, 9, 96), (BF16, 2, 3000)):
            x = rng.standard_normal((rows, C)).astype(dt)
            t = rng.integers(0, C, rows).astype(np.int64)
            t[0] = -100
            loss, wsum, lse = k.cross_entropy(dev(x), dev(t), None, -100, 0.1)
            xw = wide(x)
            m = xw.max(1)
            ref_lse = np.log(np.exp(xw - m[:, None]).sum(1))
            close(lse, ref_lse, 1e-4)
            d = k.cross_entropy_backward(dev(x), dev(t), None, lse, dev(np.ones(1, dt)), 1.0 / rows, -100, 0.1)
            assert host(d).shape == x.shape and np.isfinite(host(d)).all()
            assert host(loss)[0] == 0.0 and float(host(wsum)[0]) == 0.0
            # the fused pass (loss and dlogits together) and the scale by the loss gradient
            fl, _, flse, fd = k.cross_entropy_fused(dev(x), dev(t), None, -100, 0.1)
            close(flse, ref_lse, 1e-4)
            close(fl, host(loss), 1e-4)
            scaled = k.cross_entropy_scale(fd, dev(np.ones((), dt)), 1.0 / rows)
            close(scaled, host(d), 1e-4)

    def layer_norm() -> None:
        for dt, rows, N in ((F32, 1, 1), (F32, 13, 33), (F32, 5, 2000), (F32, 3, 9000), (F64, 3, 1029),
                            (F64, 4, 40), (F64, 2, 9000), (F16, 13, 33), (F16, 2, 9000), (BF16, 3, 40),
                            (BF16, 2, 9000)):
            x = rng.standard_normal((rows, N)).astype(dt)
            w = rng.standard_normal(N).astype(dt)
            b = rng.standard_normal(N).astype(dt)
            y, mean, rstd = k.layer_norm(dev(x), dev(w), dev(b), 1e-5)
            xw, ww, bw = wide(x), wide(w), wide(b)
            mu = xw.mean(1, keepdims=True)
            r = 1 / np.sqrt(xw.var(1, keepdims=True) + 1e-5)
            close(y, (xw - mu) * r * ww + bw, 1e-3)
            dy = rng.standard_normal(x.shape).astype(dt)
            dx, dw, db = k.layer_norm_backward(dev(dy), dev(x), dev(w), mean, rstd, True, True)
            dyw = wide(dy)
            # summed over rows: a 16-bit result of a sum of up to 13 terms
            close(db, dyw.sum(0), 1e-3 * rows)
            close(dw, (dyw * (xw - mu) * r).sum(0), 1e-3 * rows)
            assert np.isfinite(host(dx)).all()

    def matmul() -> None:
        # the tile and split-K plan depends on the SM count: run it as on the simulator (1) and as on an H100
        # (132), so that every variant (128 and 64 tiles, split-K with its reduction) is launched on either
        sms = k.sms
        try:
            for k.sms in sorted({sms, 1, 132}):
                _matmul()
        finally:
            k.sms = sms
        # every float32 variant of the plan table, with and without the L2 block swizzle
        from minitorch_gpu.backends.cuda.launch import SGEMM_KERNELS
        for M, K, N in ((130, 40, 129), (64, 33, 257)):
            a = rng.standard_normal((M, K)).astype(F32)
            b = rng.standard_normal((K, N)).astype(F32)
            bias = rng.standard_normal(N).astype(F32)
            for name in SGEMM_KERNELS:
                for swizzle in (0, 2):
                    close(k.matmul(dev(a), dev(b.T.copy()).T, dev(bias), variant=(name, swizzle)), a @ b + bias,
                          1e-3)

    def _matmul() -> None:
        for dt, tol in ((F32, 1e-3), (F64, 1e-9)):
            for M, K, N in ((1, 1, 1), (65, 33, 67), (3, 129, 5), (64, 4096, 64), (32, 1100, 40)):
                a = rng.standard_normal((M, K)).astype(dt)
                b = rng.standard_normal((K, N)).astype(dt)
                bias = rng.standard_normal(N).astype(dt)
                close(k.matmul(dev(a), dev(b)), a @ b, tol)
                close(k.matmul(dev(a.T.copy()).T, dev(b.T.copy()).T, dev(bias)), a @ b + bias, tol)
        # batch entries whose starts are 4 mod 16 bytes: the 128-bit path must not be taken
        big = rng.standard_normal((3, 33)).astype(F32)
        a3 = dev(big)[:, :32].reshape(3, 4, 8)
        b3 = rng.standard_normal((8, 5)).astype(F32)
        close(k.matmul(a3, dev(b3)), big[:, :32].reshape(3, 4, 8) @ b3, 1e-3)

    def matmul_tc() -> None:
        # every tensor-core entry point: three types x two tiles x four shared layouts (each operand k- or
        # m/n-contiguous), odd sizes, the bias epilogue, a misaligned view (element-wise copies), and split-K with
        # its reduction (the plan as on an H100)
        if not k.tensor_cores:
            return  # a GPU before sm_80: the built-ins serve these products
        from minitorch_gpu.backends.cuda.launch import TC_KERNELS
        types: list[Any] = [np.float16, F32]
        try:
            import ml_dtypes
            be.asarray(np.zeros(1, ml_dtypes.bfloat16))
            types.append(ml_dtypes.bfloat16)
        except (ImportError, TypeError, ValueError):
            pass  # an array library without bfloat16 (CuPy before 14)

        def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return a.astype(F64) @ b.astype(F64)

        for dt in types:
            tol = 1e-2 if dt == F32 else 3e-2  # tf32 inputs; 16-bit outputs
            M, K, N = 67, 40, 130
            a = rng.standard_normal((M, K)).astype(dt)
            b = rng.standard_normal((K, N)).astype(dt)
            bias = rng.standard_normal(N).astype(dt)
            want = product(a, b)
            for tile in TC_KERNELS:
                for da in (dev(a), dev(a.T.copy()).T):
                    for db in (dev(b), dev(b.T.copy()).T):
                        close(k.matmul(da, db, tf32=True, tc_tile=tile).astype(F64), want, tol)
                close(k.matmul(dev(a), dev(b), dev(bias), tf32=True, tc_tile=tile).astype(F64),
                      want + bias.astype(F64), tol)
            x, hx = misaligned(M * K, dt)
            close(k.matmul(x.reshape(M, K), dev(b), tf32=True).astype(F64), product(hx.reshape(M, K), b), tol)
            sms = k.sms
            try:
                k.sms = 132
                g = rng.standard_normal((2048, 40)).astype(dt)
                # g.T @ g over K = 2048 (sums of size ~45): one 64 x 64 tile, K split in four
                close(k.matmul(dev(g).T, dev(g), dev(bias[:40]), tf32=True).astype(F64),
                      product(g.T, g) + bias[:40].astype(F64), 0.25)
            finally:
                k.sms = sms

    def optimizers() -> None:
        shapes = [(1,), (33,), (70001,)]
        for dt in (F32, F64, *HALVES):
            _optimizers(dt, shapes)

    def _optimizers(dt: Any, shapes: list[tuple[int, ...]]) -> None:
        def arrays(fill: float | None = None) -> list[Any]:
            return [dev(np.full(s, fill, dt) if fill is not None else rng.standard_normal(s).astype(dt))
                    for s in shapes]
        steps = [3.0] * len(shapes)
        be.fused_adam(arrays(), arrays(), arrays(0.0), arrays(0.0), arrays(0.0), steps, 1e-3, 0.9, 0.999, 1e-8,
                      0.01, True, False, True)
        be.fused_sgd(arrays(), arrays(), arrays(), [False] * len(shapes), 0.1, 0.01, 0.9, 0.0, True, False)
        be.fused_rmsprop(arrays(), arrays(), arrays(0.0), arrays(0.0), arrays(0.0), 0.01, 0.99, 1e-8, 0.0, 0.9,
                         True, False)
        be.fused_adagrad(arrays(), arrays(), arrays(0.0), steps, 0.01, 0.0, 0.0, 1e-10, False)
        ps = arrays()
        before = [host(p).copy() for p in ps]
        be.fused_lion(ps, arrays(), arrays(0.0), 1e-3, 0.9, 0.99, 0.0, False)
        assert any((host(p) != b0).any() for p, b0 in zip(ps, before))

    def multi_tensor() -> None:
        shapes = [(1,), (33,), (70001,)]
        for dt in (F32, F64, *HALVES):
            hs = [rng.standard_normal(s).astype(dt) for s in shapes]
            want = np.sqrt(sum((h.astype(np.float64) ** 2).sum() for h in hs))
            xs = [dev(h) for h in hs]
            total = be.total_norm(xs, 2.0)
            close(total, np.asarray(want), 1e-4)
            for x, n in zip(be.foreach_norm(xs, 1.0), (np.abs(h.astype(F64)).sum() for h in hs)):
                close(x, np.asarray(n), 1e-4)
            be.foreach_clip_(xs, total, 0.5)
            close(be.total_norm(xs, 2.0), np.asarray(0.5), 1e-3)
            be.foreach_clamp_(xs, 0.01)
            bound = float(np.asarray(0.01, dt))  # the bound in the tensors' type
            assert all(np.abs(host(x).astype(F64)).max() <= bound for x in xs)
            ys, zs = [dev(h + 2) for h in hs], [dev(h * h + 1) for h in hs]
            got = be.foreach_lerp([dev(h) for h in hs], ys, 0.25)
            for g, h in zip(got, hs):
                close(g, wide(h) + 0.25 * 2, 1e-5)
            got = be.foreach_addcdiv([dev(h) for h in hs], ys, zs, 0.5)
            for g, h, y, z in zip(got, hs, ys, zs):
                close(g, wide(h) + 0.5 * wide(host(y)) / wide(host(z)), 1e-5)
            # GradScaler's unscale: a clean list, then one with an inf in the long tensor's tail
            xs = [dev(h) for h in hs]
            found, inv = dev(np.zeros(1, F32)), dev(np.full(1, 0.25, F32))
            be.amp_unscale_(xs, found, inv)
            assert host(found)[0] == 0.0
            for x, h in zip(xs, hs):
                close(x, wide(h) * 0.25, 1e-6)
            bad = [h.copy() for h in hs]
            bad[-1][-3] = np.inf
            be.amp_unscale_([dev(h) for h in bad], found, inv)
            assert host(found)[0] == 1.0

    def attention() -> None:
        # every head-dim variant, causal with L != S, a 1-element tail and dropout (the in-kernel Philox)
        for dt, tol in ((F32, 2e-3), (F64, 1e-9), (F16, 1e-2), (BF16, 6e-2)):
            for D in (32, 64, 128):
                for L, S, causal, p in ((5, 7, True, 0.0), (65, 33, False, 0.0), (17, 17, True, 0.25)):
                    q, kk, v, g = (rng.standard_normal((1, 2, n, D)).astype(dt) for n in (L, S, S, L))
                    scale = D ** -0.5
                    r = k.attention_forward(dev(q), dev(kk), dev(v), None, causal, scale, p, 7, 3)
                    assert r is not None, (dt, D)
                    out, lse = r
                    grads = k.attention_backward(dev(g), dev(q), dev(kk), dev(v), out, lse, None, causal, scale,
                                                 p, 7, 3)
                    assert all(np.isfinite(host(a)).all() for a in grads)
                    if p:
                        continue
                    q, kk, v, g = (wide(a) for a in (q, kk, v, g))
                    s_ = (q @ kk.swapaxes(-1, -2)) * scale
                    if causal:
                        s_ = np.where(np.tril(np.ones((L, S), bool)), s_, -np.inf)
                    w = np.exp(s_ - s_.max(-1, keepdims=True))
                    w /= w.sum(-1, keepdims=True)
                    close(out, w @ v, tol)
                    close(grads[2], w.swapaxes(-1, -2) @ g, tol)

    def random() -> None:
        for n in (1, 5, 1031):
            w = k.philox_words(7, 3, n)
            assert host(w).shape == (n, 4)
            for dt in (F32, F64, *HALVES):
                u, _ = k.uniform(7, 3, n, np.dtype(dt), -1.0, 1.0)
                assert ((host(u) >= -1) & (host(u) < 1)).all()
                z, _ = k.normal(7, 3, n, np.dtype(dt), 0.0, 1.0)
                assert np.isfinite(host(z)).all()
            for dt in HALVES:
                x, hx = misaligned(n, dt)
                got = k.dropout(7, 3, x, 0.25, dropout_threshold(0.25), None)
                assert got is not None
                y, want = wide(host(got[0])), wide(hx) / 0.75
                assert (np.isclose(y, want, rtol=HALF_TOL[dt]) | (y == 0)).all()
            r, _ = k.randint(7, 3, n, -5, 1 << 40)
            assert ((host(r) >= -5) & (host(r) < 1 << 40)).all()

    def embedding() -> None:
        for dt, rows, dim, n in ((F32, 1, 1, 1), (F32, 50, 33, 257), (F64, 7, 5, 9), (F16, 50, 33, 257),
                                 (BF16, 7, 5, 9)):
            idx = rng.integers(0, rows, n).astype(np.int64)
            g = rng.standard_normal((n, dim)).astype(dt)
            out = xp.zeros((rows, dim), dtype=dt)
            assert k.embedding_backward(out, dev(idx), dev(g))
            want = np.zeros((rows, dim), F64)
            np.add.at(want, idx, wide(g))
            close(out, want, 1e-4)

    def rnn() -> None:
        # the CPU backend's bodies are the reference; gi is a row block of a taller array, as a layer passes it
        ref = get_backend("cpu")
        for dt, tol in ((F32, 1e-5), (F64, 1e-12), (F16, 1e-2), (BF16, 6e-2)):
            for B, H in ((1, 1), (3, 33), (17, 70)):
                hs = [rng.standard_normal((B, H)).astype(dt) for _ in range(3)]
                for gates in (4, 3):
                    tall = rng.standard_normal((B + 2, gates * H)).astype(dt)
                    gi, gh = tall[1:B + 1], rng.standard_normal((B, gates * H)).astype(dt)
                    dgi, dgh = dev(tall)[1:B + 1], dev(gh)
                    if gates == 4:
                        want: Any = ref.lstm_cell_forward(gi, gh, hs[0])
                        got: Any = be.lstm_cell_forward(dgi, dgh, dev(hs[0]))
                        for dh, dc in ((hs[1], hs[2]), (None, hs[2]), (hs[1], None)):
                            want += ref.lstm_cell_backward(dh, dc, gi, gh, hs[0])
                            got += be.lstm_cell_backward(None if dh is None else dev(dh),
                                                         None if dc is None else dev(dc), dgi, dgh, dev(hs[0]))
                    else:
                        want = (ref.gru_cell_forward(gi, gh, hs[0]), *ref.gru_cell_backward(hs[1], gi, gh, hs[0]))
                        got = (be.gru_cell_forward(dgi, dgh, dev(hs[0])),
                               *be.gru_cell_backward(dev(hs[1]), dgi, dgh, dev(hs[0])))
                    for g_, w_ in zip(got, want):
                        close(g_, w_, tol)

    return [("elementwise.cu", elementwise), ("softmax.cu", softmax), ("cross_entropy.cu", cross_entropy),
            ("layernorm.cu", layer_norm), ("matmul.cu", matmul), ("matmul_tc.cu", matmul_tc), ("optim.cu", optimizers),
            ("multi_tensor.cu", multi_tensor),
            ("attention.cu", attention), ("random.cu", random),
            ("embedding.cu", embedding), ("rnn.cu", rnn)]


def run(be: Any, only: list[str] | None = None) -> int:
    """Run the checks on backend ``be``; prints one line per kernel file, returns the number of failures."""
    failed = 0
    for name, fn in checks(be):
        if only and not any(s in name for s in only):
            continue
        try:
            fn()
            be.synchronize()
            print(f"ok    {name}", flush=True)
        except Exception:  # noqa: BLE001 - every family reports, one failure does not hide the others
            failed += 1
            print(f"FAIL  {name}\n{traceback.format_exc()}", flush=True)
    return failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sim", action="store_true", help="run on the CPU simulator instead of a GPU")
    p.add_argument("--only", nargs="+", default=None, help="kernel files to check (substrings)")
    args = p.parse_args(argv)
    import minitorch_gpu as mt
    if args.sim:
        mt.cuda.use_simulator(True)
    elif mt.cuda.is_simulated() or not mt.cuda.is_available():
        print("benchmarks.sanitize_kernels: no GPU; nothing to check (--sim runs the checks on the simulator)")
        return 0
    if not args.sim:
        import cupy
        # without CuPy's memory pool every array is its own cudaMalloc, so memcheck sees a read past an array's
        # end; inside a pooled block it would land in a neighbour and go unreported
        cupy.cuda.set_allocator(None)
    be = get_backend("cuda")
    if be.kernels is None:
        print("benchmarks.sanitize_kernels: kernels are off (MINITORCH_GPU_KERNELS=0); nothing to check")
        return 0
    failed = run(be, args.only)
    print(f"{failed} kernel file(s) failed" if failed else "all kernel files ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
