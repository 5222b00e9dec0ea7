"""The compile gate: every kernels/*.cu compiles with NVRTC for sm_80 (A100) and sm_90 (H100), without a GPU,
and no kernel spills registers to local memory. ptxas's per-kernel report (registers, stack, spills, shared
memory) is printed (``pytest -s``) and attached to the test report."""
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from minitorch_gpu.backends.cuda import loader, nvrtc

ARCHS = ["sm_80", "sm_90"]
FILES = loader.kernel_files()
EXPECTED = {"elementwise.cu", "softmax.cu", "cross_entropy.cu", "layernorm.cu", "matmul.cu", "matmul_tc.cu", "optim.cu",
            "random.cu", "embedding.cu", "multi_tensor.cu", "attention.cu", "rnn.cu"}
# files whose float32 kernels the launcher runs in blocks of 512 threads (launch.py's _multi_block)
WIDE_FLOAT_BLOCKS = {"optim.cu", "multi_tensor.cu"}


def _need_nvrtc():
    if not nvrtc.available():
        if os.environ.get("CI"):
            pytest.fail("NVRTC is missing in CI: the `test` extra installs nvidia-cuda-nvrtc-cu12")
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    # every file includes the toolkit's <cuda_fp16.h> and <cuda_bf16.h>, which NVRTC does not ship
    if nvrtc.header_dir() is None:
        if os.environ.get("CI"):
            pytest.fail("the CUDA headers are missing in CI: the `test` extra installs nvidia-cuda-runtime-cu12")
        pytest.skip("cuda_fp16.h / cuda_bf16.h not found (pip install nvidia-cuda-runtime-cu12)")


def test_every_kernel_family_has_a_file():
    assert EXPECTED <= set(FILES)


@pytest.fixture(scope="module")
def compiled():
    """{(file, arch): (exported names, the compile's future)}: every program submitted at once to a thread per
    core. ctypes releases the GIL around NVRTC, whose programs compile independently, so the gate's few minutes
    of compiling (the largest step of the test suite) divide between the cores; each test waits for its own."""
    _need_nvrtc()
    jobs = {}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for fname in FILES:
            text = loader.source(fname)
            names = loader.exports(fname, text)
            for arch in ARCHS:
                fut = pool.submit(nvrtc.compile, text, fname, arch, loader.nvrtc_options(), names, verbose=True) \
                    if names else None
                jobs[(fname, arch)] = (names, fut)
        # leaving the pool waits for every program: a failure is reported by its own test below
    return jobs


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fname", FILES)
def test_compiles_without_spills(fname, arch, record_property, compiled):
    names, fut = compiled[(fname, arch)]
    assert names, f"{fname} exports no kernel"
    res = fut.result()
    assert res.cubin[:4] == b"\x7fELF"
    usage = res.resource_usage()
    readable = {mangled: expr for expr, mangled in res.lowered.items()}
    report = {readable.get(sym, sym): u for sym, u in usage.items()}
    # every exported kernel was compiled (a name expression that matched nothing would be missing here)
    assert set(names) <= set(report), f"kernels missing from the ptxas report: {set(names) - set(report)}"
    lines = [f"{fname} [{arch}]"]
    for name, u in sorted(report.items()):
        lines.append(f"  {name:34s} regs {u['registers']:3d}  stack {u['stack']:4d}  spill st/ld "
                     f"{u['spill_stores']}/{u['spill_loads']}  smem {u['smem']}")
    print("\n".join(lines))
    record_property("ptxas", report)
    spilled = {n: u for n, u in report.items() if u["spill_stores"] or u["spill_loads"]}
    assert not spilled, f"register spills in {fname} for {arch}: {spilled}"
    # a block of 256 threads must fit the register file (64K registers per SM)
    assert all(u["registers"] * 256 <= 65536 for u in report.values())
    if fname in WIDE_FLOAT_BLOCKS:
        wide = {n: u["registers"] for n, u in report.items() if n.endswith("<float>")}
        assert wide and all(r * 512 <= 65536 for r in wide.values()), f"512-thread blocks would not fit: {wide}"


def test_half_headers_come_from_the_toolkit():
    _need_nvrtc()
    src = ('#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n'
           'extern "C" __global__ void k(__half* h, __nv_bfloat16* b) {\n'
           '    h[0] = __float2half_rn(__half2float(h[1]) + 1.0f);\n'
           '    b[0] = __float2bfloat16_rn(__bfloat162float(b[1]) * 2.0f);\n}\n')
    assert nvrtc.compile(src, "half.cu", "sm_80", loader.nvrtc_options()).cubin[:4] == b"\x7fELF"
    # the simulator's host versions stay out of NVRTC's path, and the toolkit's out of the simulator's
    assert "cuda/sim" not in nvrtc.header_dir().replace(os.sep, "/")


def test_template_types_per_file_and_per_kernel():
    text = ("// @template-types: float __half\n"
            "template <typename T> __global__ void a(T* x) {}\n"
            "// @types: double\n"
            "template <typename T> __global__ void __launch_bounds__(256) b(T* x) {}\n"
            'extern "C" __global__ void c(float* x) {}\n')
    assert loader.exports("x.cu", text) == ["c", "a<float>", "a<__half>", "b<double>"]
    assert loader.exports("x.cu", text.split("\n", 1)[1]) == ["c", "a<float>", "a<double>", "b<double>"]


def test_compile_errors_carry_the_log():
    _need_nvrtc()
    with pytest.raises(nvrtc.NVRTCError, match="undeclared_thing"):
        nvrtc.compile('extern "C" __global__ void k(float* x) { x[0] = undeclared_thing; }', arch="sm_80")


def test_header_is_inlined_with_line_markers():
    text = loader.source("elementwise.cu")
    assert not any(line.strip().startswith('#include "common.cuh"') for line in text.splitlines())
    assert "MT_COMMON_CUH" in text and '#line 1 "common.cuh"' in text


def test_enum_codes_match_the_source_order():
    codes = loader.enum_codes("elementwise.cu", "BinaryOp")
    assert codes["add"] == 0 and codes["sub"] == 1 and len(set(codes.values())) == len(codes)


def test_resource_usage_parser():
    log = ("ptxas info    : Compiling entry function '_Z1kIfEvPT_x' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z1kIfEvPT_x\n"
           "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 512 bytes smem\n")
    assert nvrtc.resource_usage(log) == {"_Z1kIfEvPT_x": {"registers": 40, "stack": 8, "spill_stores": 4,
                                                          "spill_loads": 12, "smem": 512}}
