"""A CPU simulator for our CUDA kernels: kernels/*.cu compiled by g++ and run on CPU threads, so code that
launches kernels runs (and its faults are found) without a GPU.

API (mirrors ``cupy.RawModule`` / ``cupy.RawKernel``)::

    from minitorch_gpu.backends.cuda import sim
    mod = sim.SimModule(code=source, options=("-DBLOCK=256",), name_expressions=("scale<float>",),
                        include_dirs=(kernels_dir,), filename="elementwise.cu")
    fn = mod.get_function("vec_add")            # extern "C" kernel, or one of the name_expressions
    fn((grid_x, grid_y, grid_z), (256,), (x, y, out, np.int64(n)), shared_mem=0)

Arguments are typed like a cuLaunchKernel parameter buffer, checked before the launch against the kernel's own
signature (SimArgumentError, a SimError and TypeError, naming the kernel, the argument index, the C type and
what was given):
  * pointer parameters (``T*``, ``const T*``, ``const float* const*`` ...): a NumPy array (its data pointer;
    the dtype must match an arithmetic pointee in kind and size), or an np.uint64 / np.int64 address (0 is
    the null pointer). A NumPy uint64 array of addresses serves as a device pointer table.
  * scalar parameters: a NumPy scalar of exactly the parameter's type (np.int32 for int, np.int64 for
    long long, np.float32 for float ...). Plain Python ints/floats and None are rejected: CuPy would pass them
    with a guessed width (or, for None, a garbage address).
  * struct parameters: an np.void (structured scalar) of the same size.

grid and block are ints or 1-3 tuples; ``shared_mem`` is the dynamic shared memory in bytes (48 KiB unless
``fn.max_dynamic_shared_size_bytes`` is raised, at most 227 KiB). A launch runs to completion before the call
returns (a synchronous stream).

Faults raise SimError with ``.kernel`` and ``.line``: divergent ``__syncthreads`` (threads at two barriers),
threads that exited while others wait at a barrier, deadlocks, warp collectives reading a lane that does not
exist / has exited / is outside the mask, masks that leave out the calling lane, ``assert`` and ``__trap``,
and invalid launch configurations. Compile failures raise SimCompileError with g++'s output.

What the kernels may use: see cuda_sim.h (built-ins, vector types, barriers, warp shuffles/votes/matches/
reductions, atomics, fences, math and bit intrinsics, ``__shared__`` and ``extern __shared__``) and the host
``<cuda_fp16.h>`` / ``<cuda_bf16.h>`` in include/ (``__half``, ``__nv_bfloat16`` and their pairs, with the
device's rounding; arrays of float16 and of ml_dtypes' bfloat16 pass for their pointers). Not modelled:
inline PTX, wmma/mma, cp.async, cooperative groups (``__CUDA_SIM__`` is defined: guard them and keep a
portable path), timing. ``__CUDA_ARCH__`` is undefined. ``__activemask()`` returns the warp's
lanes that have not exited (the simulator has no notion of divergent-but-live lanes). Threads of a block only
interleave at barriers and warp collectives, so a thread spinning on a flag that another thread of its block sets
never finishes. Out-of-bounds memory accesses are not checked: they crash or corrupt the process as they would
a GPU context.

Environment: ``MINITORCH_GPU_CACHE`` (cache root; compiled libraries go in its ``sim`` folder),
``MINITORCH_GPU_SIM_THREADS`` (OS threads that run blocks, default: the usable CPUs; 1 makes the order of
floating-point atomics, and so their rounding, reproducible), ``MINITORCH_GPU_SIM_UCONTEXT=1`` (the portable
fiber switch instead of the x86-64 one), ``CXX`` (the compiler).
"""
from .builder import cache_dir
from .errors import SimArgumentError, SimCompileError, SimError
from .module import SimFunction, SimModule

__all__ = ["SimModule", "SimFunction", "SimError", "SimCompileError", "SimArgumentError", "cache_dir"]
