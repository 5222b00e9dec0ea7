"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode. Thread-local, as in PyTorch.

Each is a context manager and a decorator. ``_state`` is read on every op, so it is a thread-local
object whose class attributes give every new thread the default mode without any setup.
"""
import functools
import inspect

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


from .._mode import _state


def is_grad_enabled():
    return _state.grad


def is_inference_mode_enabled():
    return _state.inference


class _DecoratorContextManager:
    """Lets a context manager class also decorate functions and generator functions."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                # the mode is on only while the generator body runs, not while the caller holds it
                gen = func(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as e:
                            with self.clone():
                                response = gen.throw(e)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording: ops inside behave as if no input required grad."""

    def __init__(self):
        self.prev = True

    def __enter__(self):
        self.prev = _state.grad
        _state.grad = False

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording inside a no_grad region (not inside inference_mode)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _state.grad
        _state.grad = True

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode``; takes effect at once, and as a context manager restores on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled() expects a bool, got {type(mode).__name__}")
        self.prev = _state.grad
        self.mode = mode
        _state.grad = mode

    def __call__(self, func):
        # used as a decorator the mode applies to calls only: undo what __init__ switched on
        _state.grad = self.prev
        return super().__call__(func)

    def __enter__(self):
        _state.grad = self.mode

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False

    def clone(self):
        prev = _state.grad
        c = self.__class__(self.mode)
        # the clone is entered right away; its prev must be the mode at entry, not at construction
        c.prev = prev
        return c


class inference_mode(_DecoratorContextManager):
    """No-grad mode whose results are inference tensors, which autograd refuses to record later."""

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode() expects a bool, got {type(mode).__name__}")
        self.mode = mode
        self.prev = None

    def __call__(self, func=None):
        return super().__call__(func)

    def __enter__(self):
        self.prev = (_state.grad, _state.inference)
        # as PyTorch's InferenceMode guard: inference_mode(False) turns grad mode back on
        _state.grad = not self.mode
        _state.inference = self.mode

    def __exit__(self, *exc):
        _state.grad, _state.inference = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)
