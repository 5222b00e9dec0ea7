"""``mt.jit``: eager code asking TorchScript questions gets PyTorch's eager answers, and the decorators that only
matter to the script compiler leave functions as they are."""
import minitorch_gpu as mt


def test_nothing_is_scripted_or_traced(torch):
    assert mt.jit.is_scripting() is False is torch.jit.is_scripting()
    assert mt.jit.is_tracing() is False is torch.jit.is_tracing()


def test_compiler_only_decorators_return_the_function():
    def f(x):
        return x + 1

    assert mt.jit.ignore(f) is f
    assert mt.jit.ignore(drop=True)(f) is f
    assert mt.jit.unused(f) is f
    assert mt.jit.export(f) is f
    assert mt.jit.annotate(list[int], [1, 2]) == [1, 2]


def test_branching_on_is_scripting_takes_the_eager_branch():
    def scaled(x):
        if mt.jit.is_scripting():
            raise AssertionError("eager code took the TorchScript branch")
        return x * 2

    assert scaled(mt.tensor([1.0])).tolist() == [2.0]
