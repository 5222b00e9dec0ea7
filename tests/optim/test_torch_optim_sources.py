"""PyTorch's own optimizer modules run unchanged with ``torch`` bound to this package.

Each test reads a file of the installed PyTorch's ``torch/optim`` (never a copy kept in this repository) and
executes it as a module whose ``import torch`` finds minitorch_gpu and whose ``from .optimizer import ...`` finds
our ``optim.optimizer``: its optimizer class then subclasses our Optimizer and calls our ``torch._foreach_*``,
``torch.jit``, ``torch.compiler`` and helpers. A few steps of that optimizer (its reference loop and its foreach
path) must land exactly where our own implementation lands.
"""
import pathlib
import sys
import types

import numpy as np
import pytest

import minitorch_gpu as mt


def _load_torch_optim_module(torch, name, monkeypatch):
    path = pathlib.Path(torch.__file__).parent / "optim" / f"{name}.py"
    if not path.exists():
        pytest.skip(f"the installed torch has no torch/optim/{name}.py")
    module = types.ModuleType(f"minitorch_gpu.optim._torch_{name}")
    module.__file__ = str(path)
    module.__package__ = "minitorch_gpu.optim"  # ``from .optimizer import ...`` resolves to ours
    with monkeypatch.context() as m:
        # ``import torch``, ``from torch import Tensor`` and ``from torch.utils._foreach_utils import ...`` resolve
        # to us: every loaded module of the package is also registered under its torch name
        for name, mod in list(sys.modules.items()):
            if name == "minitorch_gpu" or name.startswith("minitorch_gpu."):
                m.setitem(sys.modules, "torch" + name[len("minitorch_gpu"):], mod)
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def _steps(cls, kwargs, device, n=5):
    rng = np.random.default_rng(0)
    params = [mt.tensor(rng.standard_normal((3, 4)), device=device, requires_grad=True),
              mt.tensor(rng.standard_normal(4), device=device, requires_grad=True),
              mt.tensor(rng.standard_normal(2), device=device, requires_grad=True)]
    opt = cls(params[:2], **kwargs)
    opt.add_param_group({"params": params[2:], "lr": kwargs.get("lr", 1e-3) * 0.5})

    def closure():
        opt.zero_grad()
        loss = ((params[0] @ params[1]).tanh() ** 2).sum() + (params[1] ** 2).sum() + (params[2] ** 3).sum()
        loss.backward()
        return loss

    for _ in range(n):
        closure()
        opt.step()
    return [p.detach().cpu().numpy() for p in params], opt


CASES = [
    ("sgd", "SGD", dict(lr=0.1)),
    ("sgd", "SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd", "SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("adam", "Adam", dict(lr=1e-2)),
    ("adam", "Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("adam", "Adam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("adamw", "AdamW", dict(lr=1e-2, amsgrad=True)),
    ("nadam", "NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("radam", "RAdam", dict(lr=1e-2, betas=(0.9, 0.9))),
    ("adamax", "Adamax", dict(lr=1e-2, weight_decay=0.1)),
    ("adadelta", "Adadelta", dict(weight_decay=0.1, maximize=True)),
    ("rmsprop", "RMSprop", dict(lr=1e-2, centered=True, momentum=0.5)),
    ("adagrad", "Adagrad", dict(lr=0.1, lr_decay=0.1)),
]


@pytest.mark.parametrize("foreach", [False, True], ids=["single", "foreach"])
@pytest.mark.parametrize("module,cls,kwargs", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_pytorchs_optimizer_file_runs_on_us(device, torch, monkeypatch, module, cls, kwargs, foreach):
    if module == "adamw":
        # adamw.py imports ``.adam``: load PyTorch's adam.py under that name first
        monkeypatch.setitem(sys.modules, "minitorch_gpu.optim.adam",
                            _load_torch_optim_module(torch, "adam", monkeypatch))
    theirs_cls = getattr(_load_torch_optim_module(torch, module, monkeypatch), cls)
    assert issubclass(theirs_cls, mt.optim.Optimizer)
    theirs, topt = _steps(theirs_cls, {**kwargs, "foreach": foreach}, device)
    ours, opt = _steps(getattr(mt.optim, cls), {**kwargs, "foreach": foreach}, device)
    for a, b in zip(theirs, ours):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    # and the state they keep is the same
    tsd, sd = topt.state_dict(), opt.state_dict()
    for tgroup, group in zip(tsd["param_groups"], sd["param_groups"]):
        # ours may have more (RMSprop's fused), never fewer or different
        assert {k: group[k] for k in tgroup} == tgroup
    for k, state in tsd["state"].items():
        assert sorted(state) == sorted(sd["state"][k])
        for key, value in state.items():
            np.testing.assert_allclose(value.cpu().numpy(), sd["state"][k][key].cpu().numpy(), rtol=1e-12, atol=1e-14)


def test_pytorchs_lbfgs_file_runs_on_us(device, torch, monkeypatch):
    theirs_cls = _load_torch_optim_module(torch, "lbfgs", monkeypatch).LBFGS
    results = []
    for cls in (theirs_cls, mt.optim.LBFGS):
        x = mt.tensor([-1.2, 1.0], dtype=mt.float64, device=device, requires_grad=True)
        opt = cls([x], line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        results.append((x.detach().cpu().numpy(), opt.state[x]["func_evals"], opt.state[x]["n_iter"]))
    (a, *counts_a), (b, *counts_b) = results
    np.testing.assert_array_equal(a, b)
    assert counts_a == counts_b


def test_optimizer_helpers_exist_where_pytorchs_files_import_them(torch):
    """Every name a file of the installed ``torch/optim`` imports from ``.optimizer`` is there in ours."""
    import ast

    from minitorch_gpu.optim import optimizer

    folder = pathlib.Path(torch.__file__).parent / "optim"
    wanted = set()
    for name in ("sgd", "adam", "adamw", "adagrad", "rmsprop", "adadelta", "adamax", "nadam", "radam", "asgd",
                 "lbfgs"):
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == "optimizer":
                wanted.update(alias.name for alias in node.names)
    missing = sorted(n for n in wanted if not hasattr(optimizer, n))
    assert not missing


def test_names_older_pytorch_2_releases_import_exist():
    """PyTorch 2.1-2.4's optimizer files import a few names that 2.13's no longer do; they exist here too."""
    from minitorch_gpu.optim import optimizer

    for name in ("_dispatch_sqrt", "_get_value", "_stack_if_compiling", "_default_to_fused_or_foreach",
                 "_view_as_real", "_get_scalar_dtype", "_capturable_doc", "_differentiable_doc", "_foreach_doc",
                 "_fused_doc", "_maximize_doc", "ParamsT", "_use_grad_for_differentiable"):
        assert hasattr(optimizer, name), name
    assert mt._utils.is_compiling() is False
    assert mt.utils._foreach_utils._get_fused_kernels_supported_devices() == ["cpu", "cuda"]
    assert optimizer._dispatch_sqrt(2.25) == 1.5 and optimizer._dispatch_sqrt(mt.tensor(6.25)).item() == 2.5
    a, b = mt.zeros(2), mt.zeros(2, dtype=mt.float64)
    groups = mt.utils._foreach_utils._group_tensors_by_device_and_dtype([[a, b, a], [1, 2, 3]], with_indices=True)
    assert [(k[1], v[0][1], v[1]) for k, v in groups.items()] == [(mt.float32, [1, 3], [0, 2]),
                                                                  (mt.float64, [2], [1])]
    # the older optimizers call the health check by its old name
    assert mt.optim.Optimizer._cuda_graph_capture_health_check is mt.optim.Optimizer._accelerator_graph_capture_health_check
