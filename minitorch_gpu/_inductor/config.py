"""``mt._inductor.config``: the options of PyTorch's Inductor compiler that training scripts set, with PyTorch's
defaults. They are stored and read back and change nothing here (``mt.compile`` runs eagerly or replays CUDA
graphs). As in PyTorch, an option that does not exist is refused, so a misspelt name fails loudly:

    >>> import minitorch_gpu._inductor.config as config
    >>> config.coordinate_descent_tuning = True
    >>> config.triton.unique_kernel_names = True
"""
from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["Section"]


class Section:
    """A group of options (``config.triton``): its known names only."""

    def __init__(self, path: str, **defaults: Any) -> None:
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_names", frozenset(defaults))
        self.__dict__.update(defaults)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"{self._path}.{name} does not exist")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._names:
            raise AttributeError(f"{self._path}.{name} does not exist")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"<{self._path}: {', '.join(f'{n}={getattr(self, n)!r}' for n in sorted(self._names))}>"


aggressive_fusion = False
autotune_local_cache = True
benchmark_kernel = False
compile_threads = 1
conv_1x1_as_mm = False
coordinate_descent_check_all_directions = False
coordinate_descent_tuning = False
cpp_wrapper = False
debug = False
epilogue_fusion = True
fallback_random = False
force_disable_caches = False
force_fuse_int_mm_with_mul = False
freezing = False
fx_graph_cache = True
fx_graph_remote_cache: bool | None = None
group_fusion = False
layout_optimization = True
max_autotune = False
max_autotune_gemm = False
max_autotune_pointwise = False
pattern_matcher = True
permute_fusion = False
reorder_for_compute_comm_overlap = False
shape_padding = True
split_reductions = True
use_mixed_mm = True

triton = Section(__name__ + ".triton", autotune_pointwise=True, cudagraph_trees=True, cudagraphs=False,
                 descriptive_names="original_aten", max_tiles=None, multi_kernel=0, persistent_reductions=True,
                 unique_kernel_names=True)
cpp = Section(__name__ + ".cpp", simdlen=None, threads=-1)
trace = Section(__name__ + ".trace", enabled=False)


def __getattr__(name: str) -> Any:
    raise AttributeError(f"{__name__}.{name} does not exist")


class _ConfigModule(types.ModuleType):
    """This module's class: setting an option it does not have raises, as PyTorch's config modules do."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__dict__:
            raise AttributeError(f"{self.__name__}.{name} does not exist")
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ConfigModule
