"""L-BFGS (Nocedal 1980; Liu & Nocedal 1989) with an optional strong-Wolfe line search, the algorithm of Mark
Schmidt's minFunc as torch/optim (Lua) and PyTorch's ``torch.optim.LBFGS`` implement it.

Scalars derived from tensors (dot products, curvature pairs, step lengths) stay 0-d tensors of the parameters'
dtype, as in PyTorch: in float32 the arithmetic and every comparison that steers the search then round the same
way, so the iterates follow PyTorch's.
"""
import math
from collections.abc import Callable
from typing import Any

from ..autograd.grad_mode import enable_grad, no_grad
from ..ops.conversion import contiguous_format
from ..ops.shape import cat
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, _check_lr, _to_scalar

__all__ = ["LBFGS"]


def _sqrt(x):
    return x.sqrt() if isinstance(x, Tensor) else math.sqrt(x)


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through ``(x1, f1)`` and ``(x2, f2)`` with slopes ``g1`` and ``g2``, clamped to
    ``bounds`` (by default the interval between the two points); the middle of the bounds when the cubic has no
    minimizer (a negative or NaN discriminant)."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    discriminant = d1 ** 2 - g1 * g2
    if not discriminant >= 0:
        return (lo + hi) / 2.0
    d2 = _sqrt(discriminant)
    # written from the point farther along, so that the formula stays accurate whichever point is first
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


class _Point:
    """One evaluated step length of a line search: ``t``, the loss, the flat gradient and the directional
    derivative there. Never changed once made (brackets swap whole points)."""
    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step length along ``d`` that satisfies the strong Wolfe conditions (sufficient decrease ``c1``, curvature
    ``c2``), found by bracketing then zooming with cubic interpolation (Nocedal & Wright, algorithms 3.5 and 3.6).
    ``obj_func(x, t, d)`` evaluates the loss and flat gradient at ``x + t d``. Returns
    ``(loss, flat_grad, t, evaluations)``."""
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)

    def evaluate(step):
        f_new, g_new = obj_func(x, step, d)
        return f_new, g_new, g_new.dot(d)

    def armijo_fails(step, f_new):
        return f_new > (f + c1 * step * gtd)

    def curvature_holds(gtd_new):
        return abs(gtd_new) <= -c2 * gtd

    # bracketing: grow the step until an interval is known to hold an acceptable point
    f_new, g_new, gtd_new = evaluate(t)
    evals, ls_iter = 1, 0
    prev = start
    bracket: list[_Point] = []
    done = False
    while ls_iter < max_ls:
        if armijo_fails(t, f_new) or (ls_iter > 1 and f_new >= prev.f):
            bracket = [prev, _Point(t, f_new, g_new.clone(), gtd_new)]
            break
        if curvature_holds(gtd_new):
            bracket = [_Point(t, f_new, g_new, gtd_new)]
            done = True
            break
        if gtd_new >= 0:
            bracket = [prev, _Point(t, f_new, g_new.clone(), gtd_new)]
            break
        # extrapolate, at least 1% beyond the current step and at most 10 times it
        t_next = _cubic_interpolate(prev.t, prev.f, prev.gtd, t, f_new, gtd_new,
                                    bounds=(t + 0.01 * (t - prev.t), t * 10))
        prev = _Point(t, f_new, g_new.clone(), gtd_new)
        t = t_next
        f_new, g_new, gtd_new = evaluate(t)
        evals += 1
        ls_iter += 1
    if ls_iter >= max_ls:
        bracket = [start, _Point(t, f_new, g_new, gtd_new)]

    # zoom: shrink the bracket around a point that satisfies both conditions
    insufficient_progress = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and ls_iter < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        ends = [a.t, b.t]
        t_max, t_min = max(ends), min(ends)
        eps = 0.1 * (t_max - t_min)
        # a trial point this close to an end of the bracket makes little progress: the second time in a row (or
        # when it is at or outside an end) move it a tenth of the bracket inside
        if min(t_max - t, t - t_min) < eps:
            if insufficient_progress or t >= t_max or t <= t_min:
                t = t_max - eps if abs(t - t_max) < abs(t - t_min) else t_min + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False

        f_new, g_new, gtd_new = evaluate(t)
        evals += 1
        ls_iter += 1
        if armijo_fails(t, f_new) or f_new >= bracket[low].f:
            bracket[high] = _Point(t, f_new, g_new.clone(), gtd_new)
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if curvature_holds(gtd_new):
                done = True
            elif gtd_new * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = _Point(t, f_new, g_new.clone(), gtd_new)

    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    """L-BFGS, PyTorch's ``torch.optim.LBFGS``. Each ``step(closure)`` runs up to ``max_iter`` quasi-Newton
    iterations (at most ``max_eval`` evaluations of ``closure``, which must clear the gradients, compute the loss,
    call ``backward`` and return the loss), keeping the last ``history_size`` curvature pairs. Without a line
    search each iteration moves ``lr`` times the quasi-Newton direction (the first one scaled down to at most unit
    length); ``line_search_fn="strong_wolfe"`` picks the step length by a strong-Wolfe line search. Stops early
    when the largest gradient entry is at most ``tolerance_grad`` or the loss or the parameters change by less
    than ``tolerance_change``.

    One parameter group only, on one device. The whole state is kept under the first parameter::

        opt = mt.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss

        opt.step(closure)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache: int | None = None

    # ------------------------------------------------------------------ the parameters as one flat vector
    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self) -> Tensor:
        """Every parameter's gradient (zeros for one without) flattened into one new vector."""
        return cat([p.new_zeros(p.numel()) if p.grad is None else p.grad.reshape(-1) for p in self._params], 0)

    def _add_grad(self, step_size, update):
        """``params += step_size * update`` with ``update`` a flat vector over all parameters."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=step_size)
            offset += n
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _clone_param(self) -> list[Tensor]:
        return [p.clone(memory_format=contiguous_format) for p in self._params]

    def _set_param(self, params_data: list[Tensor]) -> None:
        for p, data in zip(self._params, params_data):
            p.copy_(data)

    def _directional_evaluate(self, closure, x, t, d):
        """The loss (a float) and flat gradient at ``x + t d``; the parameters are restored to ``x`` after."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    @staticmethod
    def _direction(flat_grad, old_dirs, old_stps, ro, H_diag, al):
        """The L-BFGS two-loop recursion: minus the inverse-Hessian estimate applied to the gradient, from the
        curvature pairs (``old_dirs`` y, ``old_stps`` s, ``ro`` 1 / y.s) and the initial scale ``H_diag``."""
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = q * H_diag
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` iterations; ``closure`` re-evaluates the model and returns the loss (it is
        called with grad mode on). Returns the loss of the first evaluation."""
        if len(self.param_groups) != 1:
            raise AssertionError(f"Expected exactly one param_group, but got {len(self.param_groups)}")

        def evaluate():
            with enable_grad():
                return closure()

        with no_grad():
            return self._iterate(evaluate)

    def _iterate(self, evaluate):
        group = self.param_groups[0]
        lr = _to_scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        # the optimizer's state is global; it lives under the first parameter so that load_state_dict casts it
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        opt_cond = flat_grad.abs().max() <= tolerance_grad
        if opt_cond:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # ---- the search direction
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                # keep the pair only when the curvature is positive (the update stays positive definite)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                if "al" not in state:
                    state["al"] = [None] * history_size
                d = self._direction(flat_grad, old_dirs, old_stps, ro, H_diag, state["al"])

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone(memory_format=contiguous_format)
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            # ---- the step length: the first step of a run is at most unit length
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break  # not a descent direction (to the tolerance)

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, step, direction):
                    return self._directional_evaluate(evaluate, x, step, direction)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                  max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    # the last iteration's loss is not needed: the next step starts with a fresh evaluation
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # ---- stopping tests
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = d
        state["t"] = t
        state["old_dirs"] = old_dirs
        state["old_stps"] = old_stps
        state["ro"] = ro
        state["H_diag"] = H_diag
        state["prev_flat_grad"] = prev_flat_grad
        state["prev_loss"] = prev_loss
        return orig_loss
