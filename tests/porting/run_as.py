"""Run a PyTorch program with ``torch`` bound to a library: ``python run_as.py LIB program.py [args...]``.

``LIB`` is ``torch`` (PyTorch itself) or ``minitorch_gpu``: then every ``import torch`` / ``import torch.x.y`` in
the program resolves to ``minitorch_gpu`` / ``minitorch_gpu.x.y`` — the only change a user makes when porting.
"""
import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys


class TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves ``torch`` and its submodules to ``minitorch_gpu``'s."""

    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("minitorch_gpu" + spec.name[len("torch"):])

    def exec_module(self, module):
        pass


def main():
    lib, program, *args = sys.argv[1:]
    if lib == "minitorch_gpu":
        sys.meta_path.insert(0, TorchAlias())
    elif lib != "torch":
        raise SystemExit(f"unknown library {lib!r}: torch or minitorch_gpu")
    sys.argv = [program, *args]
    # as ``python program.py`` does: the program's folder comes first on the path, so its own modules import
    sys.path[0] = os.path.dirname(os.path.abspath(program))
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
