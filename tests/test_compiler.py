"""``mt.compiler``: nothing is ever compiled here, so eager code sees PyTorch's answers outside ``torch.compile``."""
import minitorch_gpu as mt


def test_is_compiling_is_false_as_in_eager_torch(torch):
    assert mt.compiler.is_compiling() is False is torch.compiler.is_compiling()
    assert mt.compiler.is_dynamo_compiling() is False is torch.compiler.is_dynamo_compiling()


def test_disable_returns_the_function_bare_or_called():
    def f(x):
        return x

    assert mt.compiler.disable(f) is f
    assert mt.compiler.disable(recursive=False)(f) is f
    assert mt.compiler.disable(reason="eager")(f) is f
