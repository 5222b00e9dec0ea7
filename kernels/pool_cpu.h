// pool_cpu.h: what a CPU kernel library needs of the one process-wide worker pool (kernels/pool_cpu.cpp, a library
// of its own): the pool's run function, handed to the library once after loading, and MT_PARALLEL, which makes the
// parallel twin of an entry point.
//
// Every entry point of the CPU libraries shares its work between threads through counters in its arguments (a
// piece counter `next`, sometimes a slot counter), so running the same call on several threads at once is all a
// split takes, and results cannot depend on the number of threads. The twin of `int mt_x(A...)` is
// `int (int workers, A...)`: it runs mt_x(A...) on up to `workers` threads (this one included) through the pool and
// returns the first non-zero code any of them returned. One call from Python, one GIL release: the hand-off to the
// pool's spinning workers costs a few microseconds instead of the tens a Python pool pays to wake a thread and hand
// it the GIL.
//
// MT_PARALLEL(mt_x) exports the twin's address as the data symbol `mt_x_parallel` (a pointer), so that no
// signature is written twice: the Python side reads it with c_void_p.in_dll and calls it through a CFUNCTYPE of
// the entry's own argument types with an int in front (backends/_cpu_library.py's `parallel_entry`).
//
// `mt_pool_attach(run)`, exported by every library that includes this header, hands it the pool's `mt_pool_run`
// (_cpu_library.build calls it on every library it loads, so there is exactly one pool however many libraries
// use it). Until then, or with a null `run` (the pool switched off or not built), a twin runs its entry once, on
// the calling thread.
#pragma once

#include <atomic>
#include <tuple>

extern "C" {
typedef void (*mt_pool_task)(void*);
// mt_pool_run(task, ctx, workers): task(ctx) on up to `workers` threads, this one included; returns how many ran it
typedef int (*mt_pool_run_fn)(mt_pool_task, void*, int);
}

namespace {

// set once by mt_pool_attach before any entry runs; atomic only so that the read is not a data race on paper
std::atomic<mt_pool_run_fn> mt_pool_runner{nullptr};

template <auto Entry>
struct MtParallel;

template <typename... A, int (*Entry)(A...)>
struct MtParallel<Entry> {
    struct Call {
        std::tuple<A...> args;
        std::atomic<int> rc;
    };

    static void task(void* p) {
        Call* call = static_cast<Call*>(p);
        int rc = std::apply(Entry, call->args);
        int none = 0;
        if (rc != 0) call->rc.compare_exchange_strong(none, rc);
    }

    static int run(int workers, A... args) {
        mt_pool_run_fn pool = mt_pool_runner.load(std::memory_order_relaxed);
        if (workers <= 1 || pool == nullptr) return Entry(args...);
        Call call{std::tuple<A...>(args...), {0}};
        pool(&task, &call, workers);
        return call.rc.load();
    }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) void mt_pool_attach(mt_pool_run_fn run) {
    mt_pool_runner.store(run);
}

#define MT_PARALLEL(entry)                                                                     \
    extern "C" {                                                                               \
    __attribute__((visibility("default"))) extern void* const entry##_parallel;                \
    void* const entry##_parallel = reinterpret_cast<void*>(&MtParallel<entry>::run);           \
    }
