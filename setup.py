"""Packaging details pyproject.toml cannot express: the top-level kernels/ folder ships inside the wheel as
``minitorch_gpu/kernels`` (where the kernel loader looks in an installed package), together with the CPU
simulator's C++ sources."""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["minitorch_gpu", "minitorch_gpu.*"]) + ["minitorch_gpu.kernels"],
    package_dir={"minitorch_gpu.kernels": "kernels"},
    package_data={
        "minitorch_gpu.kernels": ["*.cu", "*.cuh", "*.cpp", "*.h", "README.md"],
        "minitorch_gpu.backends.cuda.sim": ["*.h", "*.cpp", "include/*"],
    },
)
