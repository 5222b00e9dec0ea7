// runtime.cpp: the scheduler behind cuda_sim.h, built once into its own shared library that every simulated
// kernel module links against.
//
//   launch   cs_run: validates the configuration, hands the grid's blocks to a small worker pool (the calling
//            thread works too) and returns the first fault as a message instead of crashing.
//   block    every CUDA thread is a fiber on the worker's OS thread. A fiber runs until it reaches a barrier or a
//            warp collective, or exits; when no fiber can run, the scheduler completes the warp collectives whose
//            lanes have all arrived, or else releases a barrier that every live thread has reached, or else
//            reports why the block is stuck (divergent barrier, thread exited before a barrier, deadlock).
//   fibers   a region of CUDA_SIM_STACK_SIZE bytes per fiber, aligned to its size: the context (where
//            cuda_sim::self() finds it), a guard page, then the stack. A fiber that exits without blocking hands
//            its region straight to the next thread, so kernels without barriers touch a single hot stack.
//   switch   a hand-written x86-64 context switch (callee-saved registers only);
//            ucontext elsewhere (correct, slower: swapcontext makes a system call).
#include "cuda_sim.h"

#include <atomic>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#if defined(__x86_64__) && !defined(CUDA_SIM_USE_UCONTEXT)
#define CS_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace cuda_sim {
namespace {

constexpr size_t kRegion = CUDA_SIM_STACK_SIZE;
constexpr unsigned kMaxThreads = 1024;
constexpr unsigned kMaxWarps = kMaxThreads / 32;
static_assert((kRegion & (kRegion - 1)) == 0, "CUDA_SIM_STACK_SIZE must be a power of 2");

enum State : unsigned char { kRunnable, kAtBarrier, kAtWarp, kExited };

const char* const kWarpNames[] = {
    "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync",
    "__all_sync", "__syncwarp", "__match_any_sync", "__match_all_sync", "__reduce_add_sync", "__reduce_min_sync",
    "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync",
    "a warp-wide matrix instruction (mma.sync, ldmatrix)"};
const char* const kBarrierNames[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                     "__syncthreads_or"};

struct Block;

struct Fiber {
    ThreadCtx pub;  // first member: kernel code reads the built-ins through cuda_sim::self()
    Block* blk;
    unsigned tid;
#ifdef CS_ASM_SWITCH
    void* sp;
#else
    ucontext_t uc;
#endif
    // the collective or barrier this fiber waits at
    int kind, pred, arg, width, line;
    unsigned mask;
    const char* file;
    unsigned long long value, result;
};
static_assert(sizeof(Fiber) <= 4096, "a fiber's context must stay small");

// Region layout: the context at colour * 64 (see cuda_sim::self()), a guard page past the largest colour, the
// stack from there up to the region end less the colour.
inline size_t colour_offset(const char* region) {
    return size_t(reinterpret_cast<uintptr_t>(region) / kRegion % CUDA_SIM_COLORS) * 64;
}
inline size_t page_size() {
    static const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return page;
}
inline size_t guard_offset() {
    size_t page = page_size();
    return (CUDA_SIM_COLORS * 64 + sizeof(Fiber) + page - 1) / page * page;
}
inline Fiber* fiber_at(char* region) { return reinterpret_cast<Fiber*>(region + colour_offset(region)); }
inline char* region_of(Fiber* f) {
    return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(f) & ~uintptr_t(kRegion - 1));
}
inline char* stack_top(char* region) { return region + kRegion - colour_offset(region); }

}  // namespace
}  // namespace cuda_sim

#ifdef CS_ASM_SWITCH
// cs_ctx_switch(save, to): push the callee-saved registers, store the stack pointer in *save, switch to `to`,
// pop. NOTE: MXCSR and the x87 control word are not switched (fnstcw/fldcw cost more than the rest of the
// switch together): device code never changes rounding modes, so every fiber shares its thread's settings.
// cs_ctx_trampoline: the first "return address" of a new fiber; calls r13(r12) and never returns.
asm(R"(
    .text
    .p2align 4
    .hidden cs_ctx_switch
    .type cs_ctx_switch,@function
cs_ctx_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cs_ctx_switch, .-cs_ctx_switch

    .p2align 4
    .hidden cs_ctx_trampoline
    .type cs_ctx_trampoline,@function
cs_ctx_trampoline:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size cs_ctx_trampoline, .-cs_ctx_trampoline
)");
extern "C" void cs_ctx_switch(void** save, void* to);
extern "C" void cs_ctx_trampoline();
#endif

namespace cuda_sim {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

struct Block {
    const LaunchCfg* cfg;
    void (*thunk)(void*);
    void* pack;
    uint3 idx;
    unsigned nthreads, nwarps;
    unsigned live, at_barrier;
    Fiber* fibers[kMaxThreads];  // by linear thread index; null once exited
    State state[kMaxThreads];
    unsigned warp_live[kMaxWarps];  // lanes that exist and have not exited
    unsigned warp_wait[kMaxWarps];  // lanes waiting at a warp collective
    std::vector<unsigned> ready;
#ifdef CS_ASM_SWITCH
    void* sched_sp;
#else
    ucontext_t sched_uc;
#endif
    bool failed;
    std::string error;
    int error_line;

    std::string thread(unsigned tid) const {
        unsigned bx = cfg->block[0], by = cfg->block[1];
        return format("(%u,%u,%u)", tid % bx, tid / bx % by, tid / (bx * by));
    }
    std::string where() const { return format("block (%u,%u,%u)", idx.x, idx.y, idx.z); }
    void fail(int line, std::string msg) {
        if (failed) return;
        failed = true;
        error = std::move(msg);
        error_line = line;
    }
    unsigned lanes_in_warp(unsigned w) const { return std::min(32u, nthreads - 32 * w); }
};

std::string loc(const char* file, int line) { return format("%s:%d", file ? file : "?", line); }

// ---------------------------------------------------------------------------------------------- fiber stacks
struct Worker {
    char* mapping = nullptr;
    size_t mapping_len = 0;
    char* base = nullptr;
    unsigned ninit = 0;
    std::vector<char*> free_regions;
    std::vector<char> smem_storage;
    Block* blk = nullptr;

    ~Worker() {
        if (mapping) munmap(mapping, mapping_len);
        delete blk;
    }
    char* acquire() {
        if (!free_regions.empty()) {
            char* r = free_regions.back();
            free_regions.pop_back();
            return r;
        }
        if (!mapping) {
            // Reserve address space for the largest block at once, inaccessible (so not charged against a strict
            // overcommit limit); regions become writable as blocks first need them.
            mapping_len = (kMaxThreads + 1) * kRegion;
            void* m = mmap(nullptr, mapping_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (m == MAP_FAILED) return nullptr;
            mapping = static_cast<char*>(m);
            base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(mapping) + kRegion - 1) & ~(kRegion - 1));
        }
        if (ninit == kMaxThreads) return nullptr;
        char* r = base + size_t(ninit) * kRegion;
        // NOTE: the guard page stays inaccessible: a stack overflow crashes instead of corrupting the context.
        size_t guard_end = guard_offset() + page_size();
        if (mprotect(r, guard_offset(), PROT_READ | PROT_WRITE) != 0 ||
            mprotect(r + guard_end, kRegion - guard_end, PROT_READ | PROT_WRITE) != 0)
            return nullptr;
        ninit++;
        return r;
    }
    void release(char* r) { free_regions.push_back(r); }
    char* smem(unsigned long long bytes) {
        size_t need = size_t(bytes) + 128;
        if (smem_storage.size() < need) smem_storage.assign(std::max<size_t>(need, 256), 0);
        return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(smem_storage.data()) + 127) & ~uintptr_t(127));
    }
};

thread_local Worker tl_worker;

Fiber* current() { return reinterpret_cast<Fiber*>(const_cast<ThreadCtx*>(self())); }

// ---------------------------------------------------------------------------------------------- switching
extern "C" [[noreturn]] void cs_fiber_main(Fiber* f) {
    Block* b = f->blk;
    b->thunk(b->pack);
    b->state[f->tid] = kExited;
#ifdef CS_ASM_SWITCH
    cs_ctx_switch(&f->sp, b->sched_sp);
#else
    swapcontext(&f->uc, &b->sched_uc);
#endif
    abort();  // an exited fiber is never resumed
}

#ifndef CS_ASM_SWITCH
void fiber_main_uc(unsigned lo, unsigned hi) {
    cs_fiber_main(reinterpret_cast<Fiber*>((uintptr_t(hi) << 32) | lo));
}
#endif

void prepare(Fiber* f, char* region) {
#ifdef CS_ASM_SWITCH
    // After the pops and the `ret` into the trampoline, rsp is the (16-aligned) stack top, as a call expects.
    void** sp = reinterpret_cast<void**>(stack_top(region)) - 7;
    sp[0] = nullptr;                                              // r15
    sp[1] = nullptr;                                              // r14
    sp[2] = reinterpret_cast<void*>(&cs_fiber_main);              // r13: entry
    sp[3] = f;                                                    // r12: its argument
    sp[4] = nullptr;                                              // rbx
    sp[5] = nullptr;                                              // rbp: ends frame-pointer backtraces
    sp[6] = reinterpret_cast<void*>(&cs_ctx_trampoline);          // "return address"
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = region + guard_offset() + page_size();
    f->uc.uc_stack.ss_size = size_t(stack_top(region) - (region + guard_offset() + page_size()));
    f->uc.uc_link = nullptr;
    uintptr_t p = reinterpret_cast<uintptr_t>(f);
    makecontext(&f->uc, reinterpret_cast<void (*)()>(&fiber_main_uc), 2, unsigned(p), unsigned(p >> 32));
#endif
}

inline void to_fiber(Block& b, Fiber* f) {
#ifdef CS_ASM_SWITCH
    cs_ctx_switch(&b.sched_sp, f->sp);
#else
    swapcontext(&b.sched_uc, &f->uc);
#endif
}

inline void to_scheduler(Fiber* f) {
#ifdef CS_ASM_SWITCH
    cs_ctx_switch(&f->sp, f->blk->sched_sp);
#else
    swapcontext(&f->uc, &f->blk->sched_uc);
#endif
}

// ---------------------------------------------------------------------------------------------- the block
void resume(Worker& w, Block& b, unsigned tid) {
    Fiber* f = b.fibers[tid];
    b.state[tid] = kRunnable;
    to_fiber(b, f);
    switch (b.state[tid]) {
        case kExited:
            b.live--;
            b.warp_live[tid / 32] &= ~(1u << (tid % 32));
            b.fibers[tid] = nullptr;
            w.release(region_of(f));
            break;
        case kAtBarrier:
            b.at_barrier++;
            break;
        case kAtWarp:
            b.warp_wait[tid / 32] |= 1u << (tid % 32);
            break;
        case kRunnable:
            break;
    }
}

void release(Block& b, unsigned tid, unsigned long long result) {
    b.fibers[tid]->result = result;
    b.state[tid] = kRunnable;
    b.ready.push_back(tid);
}

// Complete one warp collective over the lanes `g` (all waiting, all with the same effective mask).
void execute(Block& b, unsigned w, unsigned g) {
    Fiber* lanes[32] = {};
    for (unsigned i = 0; i < 32; ++i)
        if (g >> i & 1) lanes[i] = b.fibers[32 * w + i];
    unsigned first = unsigned(__builtin_ctz(g));
    Fiber* f0 = lanes[first];
    int kind = f0->kind;
    unsigned live = b.warp_live[w];
    unsigned long long res[32] = {};
    switch (kind) {
        case CS_WARP_CALL: {
            // mma.sync and ldmatrix are .aligned: the whole warp executes them together, each lane contributing
            // its fragment. The call runs here, between the lanes' steps, and reads and writes every lane's
            // fragments in place (their stacks stay mapped while they wait).
            if (g != 0xffffffffu) {
                unsigned missing = ~g;
                unsigned lane = unsigned(__builtin_ctz(missing));
                std::string why = lane >= b.lanes_in_warp(w)
                    ? format("the block has %u threads, so warp %u has only lanes 0-%u", b.nthreads, w,
                             b.lanes_in_warp(w) - 1)
                    : format("lane %u has already exited", lane);
                b.fail(f0->line, format("%s at %s needs all 32 lanes of warp %u, but %s (%s)", kWarpNames[kind],
                                        loc(f0->file, f0->line).c_str(), w, why.c_str(), b.where().c_str()));
                return;
            }
            void* payload[32];
            for (unsigned i = 0; i < 32; ++i) payload[i] = reinterpret_cast<void*>(lanes[i]->value);
            reinterpret_cast<const WarpCall*>(payload[0])->fn(payload);
            break;
        }
        case CS_SHFL_IDX: case CS_SHFL_UP: case CS_SHFL_DOWN: case CS_SHFL_XOR:
            for (unsigned i = 0; i < 32; ++i) {
                if (!lanes[i]) continue;
                Fiber* f = lanes[i];
                int width = f->width;
                if (width < 1 || width > 32 || (width & (width - 1))) {
                    b.fail(f->line, format("%s at %s: width %d is not a power of 2 between 1 and 32 (thread %s, %s)",
                                           kWarpNames[kind], loc(f->file, f->line).c_str(), width,
                                           b.thread(32 * w + i).c_str(), b.where().c_str()));
                    return;
                }
                int seg = int(i) & ~(width - 1), src = int(i);
                if (kind == CS_SHFL_IDX) src = seg + (f->arg & (width - 1));
                else if (kind == CS_SHFL_UP) src = int(i) - f->arg >= seg ? int(i) - f->arg : int(i);
                else if (kind == CS_SHFL_DOWN) src = int(i) + f->arg < seg + width ? int(i) + f->arg : int(i);
                else src = (int(i) ^ f->arg) < seg + width ? (int(i) ^ f->arg) : int(i);
                if (src < 0 || src > 31 || !(g >> src & 1)) {
                    std::string why;
                    if (src < 0 || src > 31 || unsigned(src) >= b.lanes_in_warp(w))
                        why = format("which does not exist (the block has %u threads, so warp %u has lanes 0-%u)",
                                     b.nthreads, w, b.lanes_in_warp(w) - 1);
                    else if (!(live >> src & 1))
                        why = "which has already exited";
                    else
                        why = format("which is not in the mask 0x%08x", f->mask);
                    b.fail(f->line, format("%s at %s: lane %u of warp %u (thread %s, %s) reads lane %d, %s",
                                           kWarpNames[kind], loc(f->file, f->line).c_str(), i, w,
                                           b.thread(32 * w + i).c_str(), b.where().c_str(), src, why.c_str()));
                    return;
                }
                res[i] = lanes[src]->value;
            }
            break;
        case CS_BALLOT: case CS_ANY: case CS_ALL: {
            unsigned bits = 0;
            for (unsigned i = 0; i < 32; ++i)
                if (lanes[i] && lanes[i]->value) bits |= 1u << i;
            unsigned long long r = kind == CS_BALLOT ? bits : kind == CS_ANY ? (bits != 0) : (bits == g);
            for (unsigned i = 0; i < 32; ++i) res[i] = r;
            break;
        }
        case CS_SYNCWARP:
            break;
        case CS_MATCH_ANY: case CS_MATCH_ALL: {
            bool all_equal = true;
            for (unsigned i = 0; i < 32; ++i) {
                if (!lanes[i]) continue;
                unsigned same = 0;
                for (unsigned j = 0; j < 32; ++j)
                    if (lanes[j] && lanes[j]->value == lanes[i]->value) same |= 1u << j;
                res[i] = same;
                all_equal = all_equal && same == g;
            }
            if (kind == CS_MATCH_ALL)
                for (unsigned i = 0; i < 32; ++i) res[i] = all_equal ? (g | (1ull << 32)) : 0;
            break;
        }
        default: {  // __reduce_*_sync on 32-bit values; arg says whether they are signed
            bool is_signed = f0->arg != 0;
            unsigned acc = unsigned(f0->value);
            for (unsigned i = first + 1; i < 32; ++i) {
                if (!lanes[i]) continue;
                unsigned v = unsigned(lanes[i]->value);
                switch (kind) {
                    case CS_REDUCE_ADD: acc += v; break;
                    case CS_REDUCE_MIN:
                        acc = is_signed ? unsigned(std::min(int(acc), int(v))) : std::min(acc, v);
                        break;
                    case CS_REDUCE_MAX:
                        acc = is_signed ? unsigned(std::max(int(acc), int(v))) : std::max(acc, v);
                        break;
                    case CS_REDUCE_AND: acc &= v; break;
                    case CS_REDUCE_OR: acc |= v; break;
                    default: acc ^= v; break;
                }
            }
            for (unsigned i = 0; i < 32; ++i) res[i] = acc;
        }
    }
    for (unsigned i = 0; i < 32; ++i)
        if (lanes[i]) release(b, 32 * w + i, res[i]);
    b.warp_wait[w] &= ~g;
}

// Complete every warp collective whose lanes have all arrived with the same mask.
void resolve_warp(Block& b, unsigned w) {
    unsigned live = b.warp_live[w], seen = 0;
    for (unsigned i = 0; i < 32 && !b.failed; ++i) {
        unsigned wait = b.warp_wait[w];
        if (!(wait >> i & 1) || (seen >> i & 1)) continue;
        Fiber* f = b.fibers[32 * w + i];
        if (!(f->mask >> i & 1)) {
            b.fail(f->line, format("%s at %s: lane %u of warp %u (thread %s, %s) passes mask 0x%08x, which does not "
                                   "include the calling lane", kWarpNames[f->kind], loc(f->file, f->line).c_str(), i,
                                   w, b.thread(32 * w + i).c_str(), b.where().c_str(), f->mask));
            return;
        }
        // Lanes of the mask waiting with the same mask form the group; a lane still busy elsewhere (another
        // collective, a barrier) delays it, and diagnose() explains it if that never resolves.
        unsigned need = f->mask & live, group = 0;
        for (unsigned j = 0; j < 32; ++j)
            if ((need & wait) >> j & 1 && (b.fibers[32 * w + j]->mask & live) == need) group |= 1u << j;
        seen |= group;
        if (group != need) continue;
        for (unsigned j = 0; j < 32; ++j) {
            if (!(need >> j & 1)) continue;
            Fiber* o = b.fibers[32 * w + j];
            bool same_place = o->line == f->line && std::strcmp(o->file, f->file) == 0;
            if (o->kind != f->kind || (f->kind != CS_SYNCWARP && !same_place)) {
                b.fail(f->line, format("divergent warp collectives in warp %u of %s: lane %u (thread %s) is at %s "
                                       "(%s) while lane %u (thread %s) is at %s (%s); every lane named in the mask "
                                       "must execute the same collective", w, b.where().c_str(), i,
                                       b.thread(32 * w + i).c_str(), kWarpNames[f->kind],
                                       loc(f->file, f->line).c_str(), j, b.thread(32 * w + j).c_str(),
                                       kWarpNames[o->kind], loc(o->file, o->line).c_str()));
                return;
            }
        }
        execute(b, w, need);
    }
}

// Why no thread of the block can make progress.
void diagnose(Block& b) {
    for (unsigned w = 0; w < b.nwarps; ++w) {
        unsigned wait = b.warp_wait[w], live = b.warp_live[w];
        for (unsigned i = 0; i < 32; ++i) {
            if (!(wait >> i & 1)) continue;
            Fiber* f = b.fibers[32 * w + i];
            unsigned need = f->mask & live;
            for (unsigned j = 0; j < 32; ++j) {
                if (!(need >> j & 1)) continue;
                unsigned tj = 32 * w + j;
                Fiber* o = b.fibers[tj];
                if (b.state[tj] == kAtBarrier) {
                    b.fail(f->line, format("deadlock in %s: lane %u of warp %u (thread %s) waits at %s (%s) for lane "
                                           "%u (thread %s), which waits at %s (%s)", b.where().c_str(), i, w,
                                           b.thread(32 * w + i).c_str(), kWarpNames[f->kind],
                                           loc(f->file, f->line).c_str(), j, b.thread(tj).c_str(),
                                           kBarrierNames[o->kind], loc(o->file, o->line).c_str()));
                    return;
                }
                if ((o->mask & live) != need) {
                    b.fail(f->line, format("deadlock in %s: lanes %u and %u of warp %u wait at %s (%s) and %s (%s) "
                                           "with different masks 0x%08x and 0x%08x", b.where().c_str(), i, j, w,
                                           kWarpNames[f->kind], loc(f->file, f->line).c_str(), kWarpNames[o->kind],
                                           loc(o->file, o->line).c_str(), f->mask, o->mask));
                    return;
                }
            }
        }
    }
    b.fail(0, format("deadlock in %s: no thread can make progress", b.where().c_str()));
}

// Every live thread is at a barrier: release it, unless they are at different barriers or some have exited.
void resolve_barrier(Block& b) {
    Fiber* first = nullptr;
    unsigned count = 0, n_first = 0;
    for (unsigned t = 0; t < b.nthreads; ++t) {
        if (b.state[t] != kAtBarrier) continue;
        Fiber* f = b.fibers[t];
        if (!first) first = f;
        if (f->line != first->line || std::strcmp(f->file, first->file) != 0) {
            b.fail(first->line, format("divergent %s in %s: thread %s waits at %s while thread %s waits at %s; "
                                       "every thread of the block must reach the same barrier",
                                       kBarrierNames[first->kind], b.where().c_str(), b.thread(first->tid).c_str(),
                                       loc(first->file, first->line).c_str(), b.thread(t).c_str(),
                                       loc(f->file, f->line).c_str()));
            return;
        }
        n_first++;
        count += f->pred;
    }
    if (b.live < b.nthreads) {
        unsigned gone = 0;
        while (b.state[gone] != kExited) gone++;
        b.fail(first->line, format("deadlock in %s: %u threads wait at %s (%s) but %u threads have exited (first: "
                                   "thread %s); every thread of the block must reach each barrier, so return after "
                                   "the last barrier or guard the work instead", b.where().c_str(), n_first,
                                   kBarrierNames[first->kind], loc(first->file, first->line).c_str(),
                                   b.nthreads - b.live, b.thread(gone).c_str()));
        return;
    }
    unsigned long long r = first->kind == CS_BAR_COUNT ? count
                           : first->kind == CS_BAR_AND ? (count == n_first)
                           : first->kind == CS_BAR_OR  ? (count != 0)
                                                       : 0;
    for (unsigned t = 0; t < b.nthreads; ++t) release(b, t, r);
    b.at_barrier = 0;
}

void run_block(Worker& w, Block& b, unsigned long long linear) {
    const LaunchCfg* cfg = b.cfg;
    unsigned gx = cfg->grid[0], gy = cfg->grid[1];
    b.idx = uint3{unsigned(linear % gx), unsigned(linear / gx % gy), unsigned(linear / (gx * (unsigned long long)gy))};
    b.nthreads = cfg->block[0] * cfg->block[1] * cfg->block[2];
    b.nwarps = (b.nthreads + 31) / 32;
    b.live = b.nthreads;
    b.at_barrier = 0;
    b.failed = false;
    for (unsigned i = 0; i < b.nwarps; ++i) {
        unsigned n = b.lanes_in_warp(i);
        b.warp_live[i] = n == 32 ? 0xffffffffu : (1u << n) - 1;
        b.warp_wait[i] = 0;
    }
    ThreadCtx ctx;
    ctx.block_idx = b.idx;
    ctx.block_dim = dim3(cfg->block[0], cfg->block[1], cfg->block[2]);
    ctx.grid_dim = dim3(cfg->grid[0], cfg->grid[1], cfg->grid[2]);
    ctx.dyn_smem = w.smem(cfg->shared_mem);
    unsigned bx = cfg->block[0], by = cfg->block[1];

    for (unsigned t = 0; t < b.nthreads && !b.failed; ++t) {
        char* region = w.acquire();
        if (!region) {
            b.fail(0, "out of memory for fiber stacks");
            break;
        }
        Fiber* f = fiber_at(region);
        f->pub = ctx;
        f->pub.thread_idx = uint3{t % bx, t / bx % by, t / (bx * by)};
        f->blk = &b;
        f->tid = t;
        prepare(f, region);
        b.fibers[t] = f;
        resume(w, b, t);
    }
    while (b.live > 0 && !b.failed) {
        b.ready.clear();
        for (unsigned i = 0; i < b.nwarps && !b.failed; ++i)
            if (b.warp_wait[i]) resolve_warp(b, i);
        if (b.ready.empty() && !b.failed) {
            if (b.at_barrier == b.live) resolve_barrier(b);
            else diagnose(b);
        }
        for (size_t k = 0; k < b.ready.size() && !b.failed; ++k) resume(w, b, b.ready[k]);
    }
    // A faulted block leaves fibers suspended: abandon them (device code owns no resources to unwind).
    for (unsigned t = 0; t < b.nthreads; ++t) {
        if (b.fibers[t]) w.release(region_of(b.fibers[t]));
        b.fibers[t] = nullptr;
    }
}

// ---------------------------------------------------------------------------------------------- the grid
struct Launch {
    const LaunchCfg* cfg;
    void (*thunk)(void*);
    void* pack;
    unsigned long long nblocks;
    std::atomic<unsigned long long> next{0};
    std::atomic<bool> failed{false};
    std::mutex mu;
    std::string error;
    int error_line = 0;
};

void work(Launch& L) {
    Worker& w = tl_worker;
    if (!w.blk) w.blk = new Block();
    Block& b = *w.blk;
    b.cfg = L.cfg;
    b.thunk = L.thunk;
    b.pack = L.pack;
    while (!L.failed.load(std::memory_order_relaxed)) {
        unsigned long long i = L.next.fetch_add(1);
        if (i >= L.nblocks) break;
        run_block(w, b, i);
        if (b.failed) {
            std::lock_guard<std::mutex> lk(L.mu);
            if (!L.failed.load()) {
                L.error = b.error;
                L.error_line = b.error_line;
                L.failed.store(true);
            }
        }
    }
}

// Helper threads that run blocks next to the launching thread. Leaked on purpose: detached threads may still
// wait on its condition variable while the process exits.
struct Pool {
    std::mutex launch_mu;  // one grid at a time, like a single stream
    std::mutex mu;
    std::condition_variable start_cv, done_cv;
    unsigned nthreads = 0;
    bool started = false;
    Launch* job = nullptr;
    unsigned long long generation = 0;
    unsigned slots = 0, busy = 0;

    static void* loop(void* arg) {
        Pool* p = static_cast<Pool*>(arg);
        unsigned long long seen = 0;
        std::unique_lock<std::mutex> lk(p->mu);
        for (;;) {
            p->start_cv.wait(lk, [&] { return p->generation != seen; });
            seen = p->generation;
            if (p->slots == 0 || !p->job) continue;
            p->slots--;
            p->busy++;
            Launch* L = p->job;
            lk.unlock();
            work(*L);
            lk.lock();
            if (--p->busy == 0) p->done_cv.notify_all();
        }
        return nullptr;
    }
    void start() {
        started = true;
        unsigned n = 0;
        if (const char* env = getenv("MINITORCH_GPU_SIM_THREADS")) n = unsigned(std::max(1, atoi(env)));
        if (n == 0) {
            cpu_set_t set;
            n = sched_getaffinity(0, sizeof set, &set) == 0 ? unsigned(CPU_COUNT(&set)) : 1u;
            n = std::min(std::max(n, 1u), 16u);
        }
        for (unsigned i = 0; i + 1 < n; ++i) {
            pthread_t t;
            if (pthread_create(&t, nullptr, &Pool::loop, this) != 0) break;
            pthread_detach(t);
            nthreads++;
        }
    }
    void run(Launch& L) {
        std::lock_guard<std::mutex> launch(launch_mu);
        unsigned helpers;
        {
            std::lock_guard<std::mutex> lk(mu);
            if (!started) start();
            // Waking helpers costs more than a small grid's whole run: they join only for larger launches.
            unsigned long long threads = L.nblocks * L.cfg->block[0] * L.cfg->block[1] * L.cfg->block[2];
            helpers = threads < 2048 ? 0u : unsigned(std::min<unsigned long long>(nthreads, L.nblocks - 1));
            if (helpers) {
                job = &L;
                slots = helpers;
                generation++;
            }
        }
        if (helpers) start_cv.notify_all();
        work(L);
        if (helpers) {
            std::unique_lock<std::mutex> lk(mu);
            slots = 0;  // late helpers must not pick up a finished grid
            job = nullptr;
            done_cv.wait(lk, [&] { return busy == 0; });
        }
    }
};

Pool* g_pool = nullptr;

void reset_after_fork() {
    // The child has only the forking thread: start a fresh pool on its first launch.
    g_pool = new Pool();
}

Pool& pool() {
    static std::once_flag once;
    std::call_once(once, [] {
        g_pool = new Pool();
        pthread_atfork(nullptr, nullptr, &reset_after_fork);
    });
    return *g_pool;
}

void copy_error(const std::string& msg, char* err, int errlen) {
    if (errlen <= 0) return;
    size_t n = std::min(msg.size(), size_t(errlen - 1));
    std::memcpy(err, msg.data(), n);
    err[n] = 0;
}

}  // namespace
}  // namespace cuda_sim

using namespace cuda_sim;

extern "C" {

int cs_runtime_abi(void) { return 1; }

int cs_run(const LaunchCfg* cfg, void (*thunk)(void*), void* pack, char* err, int errlen, int* errline) {
    *errline = 0;
    const unsigned* g = cfg->grid;
    const unsigned* k = cfg->block;
    unsigned long long nthreads = (unsigned long long)k[0] * k[1] * k[2];
    if (!g[0] || !g[1] || !g[2] || !k[0] || !k[1] || !k[2] || g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535 ||
        k[0] > 1024 || k[1] > 1024 || k[2] > 64 || nthreads > kMaxThreads) {
        copy_error(format("invalid configuration argument: grid (%u,%u,%u), block (%u,%u,%u); a block holds at most "
                          "1024 threads (x, y <= 1024, z <= 64) and every dimension must be at least 1",
                          g[0], g[1], g[2], k[0], k[1], k[2]), err, errlen);
        return 1;
    }
    Launch L;
    L.cfg = cfg;
    L.thunk = thunk;
    L.pack = pack;
    L.nblocks = (unsigned long long)g[0] * g[1] * g[2];
    pool().run(L);
    if (L.failed.load()) {
        copy_error(L.error, err, errlen);
        *errline = L.error_line;
        return 1;
    }
    return 0;
}

int cs_barrier(int kind, int pred, int line, const char* file) {
    Fiber* f = current();
    f->kind = kind;
    f->pred = pred;
    f->line = line;
    f->file = file;
    f->blk->state[f->tid] = kAtBarrier;
    to_scheduler(f);
    return int(f->result);
}

unsigned long long cs_warp(int kind, unsigned mask, unsigned long long value, int arg, int width, int line,
                           const char* file) {
    Fiber* f = current();
    f->kind = kind;
    f->mask = mask;
    f->value = value;
    f->arg = arg;
    f->width = width;
    f->line = line;
    f->file = file;
    f->blk->state[f->tid] = kAtWarp;
    to_scheduler(f);
    return f->result;
}

unsigned cs_activemask(void) {
    Fiber* f = current();
    return f->blk->warp_live[f->tid / 32];
}

void cs_fault(const char* message, int line, const char* file) {
    Fiber* f = current();
    Block& b = *f->blk;
    b.fail(line, format("%s at %s (thread %s, %s)", message, loc(file, line).c_str(), b.thread(f->tid).c_str(),
                        b.where().c_str()));
    b.state[f->tid] = kExited;
    to_scheduler(f);
    abort();  // a faulted block is abandoned, never resumed
}

}  // extern "C"
