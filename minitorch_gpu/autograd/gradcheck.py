"""gradcheck / gradgradcheck: analytical gradients against central finite differences.

Inputs should be float64 tensors; each Jacobian column comes from perturbing one input element by
±eps, each analytical row from one vector-Jacobian product through the engine. The function is always
evaluated with grad mode on: gradgradcheck's function itself runs a backward pass, so evaluating it
under no_grad would silently check nothing.
"""

import numpy as np

from ..tensor import Tensor
from ._api import grad as autograd_grad
from .grad_mode import enable_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck when the gradients do not match."""


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _outputs(fn, inputs):
    outs = _as_tuple(fn(*inputs))
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _flat_values(outs):
    return [o._be.to_numpy(o._data).astype(np.float64).reshape(-1) for o in outs]


def _numerical_jacobian(fn, inputs, diff_idx, eps):
    """jac[k][i]: array (n_in_i, n_out_k) of d out_k / d in_i by central differences."""
    with enable_grad():
        outs = _outputs(fn, inputs)
        jac = [[None] * len(inputs) for _ in outs]
        for i in diff_idx:
            arr = inputs[i]._data
            shape = arr.shape
            cols = [np.zeros((arr.size, o.numel())) for o in outs]
            for j in range(arr.size):
                # element-wise writes into the array itself work for any strides
                idx = np.unravel_index(j, shape) if shape else ()
                orig = arr[idx].item()
                arr[idx] = orig + eps
                plus = _flat_values(_outputs(fn, inputs))
                arr[idx] = orig - eps
                minus = _flat_values(_outputs(fn, inputs))
                arr[idx] = orig
                if len(plus) != len(outs) or len(minus) != len(outs):
                    raise GradcheckError("the number of differentiable outputs changed when the input was perturbed")
                for k in range(len(outs)):
                    cols[k][j] = (plus[k] - minus[k]) / (2 * eps)
            for k in range(len(outs)):
                jac[k][i] = cols[k]
    return jac, outs


def _analytical_jacobian(fn, inputs, diff_idx):
    with enable_grad():
        outs = _outputs(fn, inputs)
        jac = [[None] * len(inputs) for _ in outs]
        diff_inputs = [inputs[i] for i in diff_idx]
        for k, o in enumerate(outs):
            mats = {i: np.zeros((inputs[i].numel(), o.numel())) for i in diff_idx}
            if o.requires_grad:
                be = o._be
                for r in range(o.numel()):
                    onehot = be.zeros(o._data.size, o._data.dtype)
                    onehot[r] = 1.0
                    go = o._make(be.reshape(onehot, o._data.shape), be)
                    grads = autograd_grad(o, diff_inputs, go, retain_graph=True, allow_unused=True)
                    for i, g in zip(diff_idx, grads):
                        if g is not None:
                            mats[i][:, r] = g._be.to_numpy(g._data).astype(np.float64).reshape(-1)
            for i in diff_idx:
                jac[k][i] = mats[i]
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    """True when ``func``'s analytical gradients match finite differences for every differentiable input."""
    import warnings

    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This check "
                          "will likely fail if all the inputs are not of double precision floating point. ")
    numerical, outs = _numerical_jacobian(func, inputs, diff_idx, eps)
    analytical = _analytical_jacobian(func, inputs, diff_idx)
    if len(analytical) != len(outs):
        msg = "the number of differentiable outputs differs between the numerical and the analytical evaluation"
        if raise_exception:
            raise GradcheckError(msg)
        return False
    for k in range(len(outs)):
        for i in diff_idx:
            a, n = analytical[k][i], numerical[k][i]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                msg = (f"Jacobian mismatch for output {k} with respect to input {i},\n"
                       f"numerical:{n}\nanalytical:{a}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the gradient: checks second derivatives through ``create_graph=True``, with random
    (or the given) output gradients treated as extra differentiable inputs."""
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        # the Tensor methods are bound by ops (above this package): same draws as randn_like
        grad_outputs = tuple(o.detach().new_empty(o._data.shape).normal_().requires_grad_() for o in outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def new_func(*args):
        ins = args[:n_in]
        gos = args[n_in:]
        outputs = _outputs(func, ins)
        diff_in = [ins[i] for i in diff_idx]
        pairs = [(o, g) for o, g in zip(outputs, gos) if o.requires_grad]
        if not pairs:
            return ()
        # unused inputs get zeros, so that every evaluation has the same outputs
        return autograd_grad([o for o, _ in pairs], diff_in, [g for _, g in pairs], create_graph=True,
                             allow_unused=True, materialize_grads=True)

    return gradcheck(new_func, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
