"""``mt._inductor.config``: the options scripts set, PyTorch's defaults, unknown names refused."""
import pytest

import minitorch_gpu as mt

TOP = ["coordinate_descent_tuning", "fx_graph_cache", "epilogue_fusion", "max_autotune", "freezing",
       "force_fuse_int_mm_with_mul", "use_mixed_mm", "conv_1x1_as_mm", "shape_padding", "layout_optimization"]
TRITON = ["unique_kernel_names", "cudagraphs", "cudagraph_trees", "descriptive_names"]


@pytest.fixture
def config():
    import minitorch_gpu._inductor.config as config
    saved = {n: getattr(config, n) for n in TOP}
    saved_triton = {n: getattr(config.triton, n) for n in TRITON}
    yield config
    for n, v in saved.items():
        setattr(config, n, v)
    for n, v in saved_triton.items():
        setattr(config.triton, n, v)


def test_defaults_match_torch(config, torch):
    import torch._inductor.config as theirs
    assert config is mt._inductor.config
    for name in TOP:
        assert getattr(config, name) == getattr(theirs, name), name
    for name in TRITON:
        assert getattr(config.triton, name) == getattr(theirs.triton, name), name


def test_options_are_stored_and_unknown_ones_refused(config):
    config.coordinate_descent_tuning = True
    config.triton.unique_kernel_names = False
    config.fx_graph_cache = False
    assert mt._inductor.config.coordinate_descent_tuning is True
    assert config.triton.unique_kernel_names is False and config.fx_graph_cache is False
    with pytest.raises(AttributeError, match=r"^minitorch_gpu\._inductor\.config\.no_such_option does not exist$"):
        config.no_such_option = 1
    with pytest.raises(AttributeError, match=r"config\.no_such_option does not exist"):
        config.no_such_option
    with pytest.raises(AttributeError, match=r"config\.triton\.nope does not exist"):
        config.triton.nope = 1
    with pytest.raises(AttributeError, match=r"config\.triton\.nope does not exist"):
        config.triton.nope
