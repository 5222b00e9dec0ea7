"""The fused optimizer primitives (``Backend.fused_<kind>``) with option sets that between them switch on every
option bit of kernels/optim_math.cuh, and a way to run one on any backend: for tests that compare two
implementations of the same step (the GPU kernels, the native CPU loop, the NumPy bodies). Importable as
``fused_cases``."""
import numpy as np

DEFAULTS = {
    "adam": dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
                 decoupled=False),
    "sgd": dict(lr=0.05, weight_decay=0.0, momentum=0.0, dampening=0.0, nesterov=False, maximize=False),
    "rmsprop": dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False),
    "adagrad": dict(lr=1e-2, lr_decay=0.0, weight_decay=0.0, eps=1e-10, maximize=False),
    "lion": dict(lr=1e-3, beta1=0.9, beta2=0.99, weight_decay=0.0, maximize=False),
}

CASES = [
    ("adam", dict()),
    ("adam", dict(amsgrad=True, maximize=True, weight_decay=0.1)),
    ("adam", dict(amsgrad=True, weight_decay=0.1, decoupled=True)),
    ("adam", dict(maximize=True, weight_decay=0.1, decoupled=True)),
    ("sgd", dict()),
    ("sgd", dict(momentum=0.9, dampening=0.2, weight_decay=0.01)),
    ("sgd", dict(momentum=0.9, nesterov=True, maximize=True)),
    ("sgd", dict(weight_decay=0.1, maximize=True)),
    ("rmsprop", dict()),
    ("rmsprop", dict(centered=True, momentum=0.9, weight_decay=0.1, maximize=True)),
    ("rmsprop", dict(momentum=0.5)),
    ("rmsprop", dict(centered=True, maximize=True)),
    ("adagrad", dict()),
    ("adagrad", dict(weight_decay=0.1, lr_decay=0.01, maximize=True)),
    ("adagrad", dict(maximize=True)),
    ("lion", dict()),
    ("lion", dict(weight_decay=0.1, maximize=True)),
]
CASE_IDS = [f"{k}-{'-'.join(f'{a}={b}' for a, b in o.items()) or 'defaults'}" for k, o in CASES]

# roles after (params, grads): the states, in the primitive's argument order
_STATES = {"adam": 3, "sgd": 1, "rmsprop": 3, "adagrad": 1, "lion": 1}


def make_state(kind, dt, shapes, seed=0):
    """[params, grads, *states] lists of arrays; second-moment states are positive, and large enough that a
    centered RMSprop's variance stays positive."""
    rng = np.random.default_rng(seed)

    def role(scale=1.0, shift=0.0, positive=False):
        out = [rng.standard_normal(s) for s in shapes]
        return [((np.abs(x) if positive else x) * scale + shift).astype(dt) for x in out]

    roles = [role(), role()]
    if kind == "adam":
        roles += [role(0.1), role(0.01, positive=True), role(0.02, positive=True)]
    elif kind == "rmsprop":
        roles += [role(0.5, 1.0, positive=True), role(0.1), role(0.1)]
    elif kind == "adagrad":
        roles += [role(0.1, positive=True)]
    else:
        roles += [role(0.1)]
    return roles


def copy_state(state):
    return [[a.copy() for a in role] for role in state]


def run_step(be, kind, state, step, opts):
    """One ``be.fused_<kind>`` call on ``state`` (updated in place); ``step`` is the step number (1, 2, ...)."""
    args = {**DEFAULTS[kind], **opts}
    n = len(state[0])
    if kind == "adam":
        be.fused_adam(*state, [float(step)] * n, **args)
    elif kind == "sgd":
        be.fused_sgd(*state, [step == 1] * n, **args)
    elif kind == "rmsprop":
        be.fused_rmsprop(*state, **args)
    elif kind == "adagrad":
        be.fused_adagrad(*state, [float(step)] * n, **args)
    else:
        be.fused_lion(*state, **args)


def assert_states_equal(got, want, **tol):
    """Every array of two states equal: bitwise without ``tol``, else within ``assert_allclose``'s tolerances."""
    for r, (gr, wr) in enumerate(zip(got, want)):
        for i, (g, w) in enumerate(zip(gr, wr)):
            if tol:
                np.testing.assert_allclose(g, w, err_msg=f"role {r}, tensor {i}", **tol)
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"role {r}, tensor {i}")
