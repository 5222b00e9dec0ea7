// pool_cpu.cpp: the one process-wide pool of worker threads behind every CPU kernel library's parallel entries
// (kernels/pool_cpu.h's MT_PARALLEL twins), built and loaded by backends/_cpu_library.py like the other CPU files.
//
// Why native: the calls it splits last 0.05-5 ms, and a Python pool paid about 75 microseconds to start a helper
// (a futex wake-up of a sleeping thread, then a GIL hand-off before the helper's own ctypes call). Here the caller
// publishes the task in one atomic word and the helpers, spinning for a short while after their last task, pick it
// up within a microsecond or two, without the GIL.
//
// Entry points (C ABI):
//   int mt_pool_run(task, ctx, workers)
//     task(ctx) on up to `workers` threads: this one and workers - 1 helpers of the pool (started on first need,
//     never more than kMaxHelpers). Returns when every call that started has returned, with how many ran (>= 1).
//     The tasks share their work through a counter, so a helper that has not taken the task by the time the
//     caller's own call returns would find nothing left: the caller closes the task then, and a late helper skips
//     it (a busy or slow-waking CPU never holds the caller up). A second caller while a task runs (another Python
//     thread) runs its task alone, which is correct for the same reason.
//   long long mt_pool_configure(spin_ns)
//     how long an idle helper (and a caller waiting for its helpers) spins before it sleeps; returns the previous
//     value; a negative argument only reads it.
//   int mt_pool_threads()
//     helpers started (tests).
//   void mt_pool_shutdown()
//     stops the helpers (the interpreter's exit); later calls run on the caller alone.
//   mt_pool_probe(pieces, work_ns, fail_at, fail_code, owner, next) and its twin mt_pool_probe_parallel
//     an entry for tests and for measuring the hand-off: takes pieces 0 .. pieces - 1 from `next`, spends work_ns
//     on each, records in owner[p] a number naming the thread that took piece p, and returns `fail_code` after the
//     piece `fail_at`.
//
// Idle helpers spin on the task word with the pause instruction, calling sched_yield every kYieldEvery rounds so
// that another spinning thread on the same core (OpenBLAS's, OpenMP's) is not starved, for spin_ns after their
// last task; then they sleep on a condition variable, and a caller wakes only as many sleepers as it needs.
//
// Fork: threads do not survive fork(); a child process drops the parent's pool (without touching its locks, which
// a parent thread may have held) and starts its own on first need. Exit: the pool's state is never destroyed (no
// destructor runs while a helper may still use it), and the helpers are detached, so exit never waits on them.
//
// v1: one task word (generation, claims, wanted helpers), spinning helpers, condition-variable sleep.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>

#include <pthread.h>
#include <sched.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "pool_cpu.h"

namespace {

constexpr int kMaxHelpers = 255;
constexpr int kYieldEvery = 64;    // pause rounds between sched_yield calls
constexpr int kClockEvery = 16;    // pause rounds between clock reads
// a millisecond, as long as libgomp's default spin: the gaps of Python between two split calls of a training step
// are tens to hundreds of microseconds, and a helper asleep by then wakes ~150 us late on a VM (benchmarks.compare
// --threads 2, ours, 100 us -> 1 ms: GPT train 16.5 -> 14.9 ms, LSTM 36.0 -> 32.2, MLP 7.9 -> 5.4, ResNet 34.2 ->
// 32.7)
constexpr long long kDefaultSpinNs = 1000000;

std::atomic<long long> g_spin_ns{kDefaultSpinNs};

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

using Clock = std::chrono::steady_clock;

inline bool spun_out(Clock::time_point since) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - since).count() >=
           g_spin_ns.load(std::memory_order_relaxed);
}

// The task word: generation (32 bits) | claims (16) | wanted helpers (16). One word, so that a helper claims a
// place in exactly the task it saw, and the caller closes a task in one step.
constexpr uint64_t kClaim = 1ull << 16;
constexpr uint64_t kClosed = 0xFFFFull;
inline uint32_t generation(uint64_t w) { return (uint32_t)(w >> 32); }
inline uint64_t claims(uint64_t w) { return (w >> 16) & 0xFFFF; }
inline uint64_t wanted(uint64_t w) { return w & 0xFFFF; }

struct Pool {
    std::atomic<uint64_t> word{0};
    // written by the caller before it publishes a generation, read by the helpers that claim it
    mt_pool_task task = nullptr;
    void* ctx = nullptr;
    std::atomic<int> done{0};          // helpers of the current task that have returned
    std::atomic<bool> busy{false};     // a caller owns the pool
    std::atomic<bool> stop{false};
    std::atomic<int> helpers{0};       // started
    std::atomic<int> alive{0};         // not yet exited
    std::atomic<int> sleepers{0};
    std::atomic<int> caller_sleeps{0};
    std::mutex m;
    std::condition_variable wake;      // helpers: a new task, or stop
    std::condition_variable finished;  // the caller: its helpers are done; shutdown: helpers exited
};

std::atomic<Pool*> g_pool{nullptr};
std::once_flag g_atfork_once;

void forget_after_fork() {
    // the child's only thread is the one that forked: the parent's helpers are gone, and its mutex may be held
    // by one of them, so the old state is dropped (leaked) rather than reset
    g_pool.store(nullptr, std::memory_order_relaxed);
}

Pool* pool() {
    Pool* p = g_pool.load(std::memory_order_acquire);
    if (p != nullptr) return p;
    std::call_once(g_atfork_once, [] { pthread_atfork(nullptr, nullptr, &forget_after_fork); });
    Pool* fresh = new (std::nothrow) Pool;
    if (fresh == nullptr) return nullptr;  // the caller runs alone
    if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return fresh;
    delete fresh;  // another thread's won; nothing was started on ours
    return p;
}

// Run the claimed task and report it done, waking the caller if it went to sleep.
void run_claimed(Pool* p) {
    p->task(p->ctx);
    p->done.fetch_add(1);
    if (p->caller_sleeps.load() != 0) {
        std::lock_guard<std::mutex> lk(p->m);
        p->finished.notify_all();
    }
}

// Wait until the generation differs from `seen` (true) or the pool stops (false): spin until spin_ns after
// `last` (the last task), then sleep.
bool wait_for_task(Pool* p, uint32_t seen, Clock::time_point& last) {
    for (int round = 1;; ++round) {
        if (generation(p->word.load(std::memory_order_acquire)) != seen) return true;
        if (p->stop.load(std::memory_order_relaxed)) return false;
        relax();
        if (round % kYieldEvery == 0) sched_yield();
        if (round % kClockEvery == 0 && spun_out(last)) break;
    }
    std::unique_lock<std::mutex> lk(p->m);
    p->sleepers.fetch_add(1);  // seq_cst: a caller publishing now either sees this or we see its generation
    while (generation(p->word.load()) == seen && !p->stop.load()) p->wake.wait(lk);
    p->sleepers.fetch_sub(1);
    last = Clock::now();  // woken for work: the next task is likely close behind, spin for it
    return !p->stop.load();
}

void helper(Pool* p, uint32_t seen) {
    Clock::time_point last = Clock::now();
    for (;;) {
        uint64_t w = p->word.load(std::memory_order_acquire);
        if (generation(w) == seen) {
            if (!wait_for_task(p, seen, last)) break;
            continue;
        }
        seen = generation(w);
        while (generation(w) == seen && claims(w) < wanted(w)) {
            if (p->word.compare_exchange_weak(w, w + kClaim, std::memory_order_acq_rel, std::memory_order_acquire)) {
                run_claimed(p);
                last = Clock::now();
                break;
            }
        }
    }
    std::lock_guard<std::mutex> lk(p->m);
    p->alive.fetch_sub(1);
    p->finished.notify_all();
}

// Start helpers until there are `want` (or no more can start); returns how many there are.
int grow(Pool* p, int want, uint32_t gen) {
    int have = p->helpers.load(std::memory_order_relaxed);
    while (have < want) {
        try {
            p->alive.fetch_add(1);
            std::thread(helper, p, gen).detach();
        } catch (const std::system_error&) {
            p->alive.fetch_sub(1);
            break;
        }
        p->helpers.store(++have, std::memory_order_relaxed);
    }
    return have;
}

// Wait until `n` helpers have reported done: spin, then sleep.
void wait_done(Pool* p, int n) {
    Clock::time_point since = Clock::now();
    for (int round = 1; p->done.load(std::memory_order_acquire) < n; ++round) {
        relax();
        if (round % kYieldEvery == 0) sched_yield();
        if (round % kClockEvery == 0 && spun_out(since)) {
            std::unique_lock<std::mutex> lk(p->m);
            p->caller_sleeps.fetch_add(1);
            while (p->done.load() < n) p->finished.wait(lk);
            p->caller_sleeps.fetch_sub(1);
            return;
        }
    }
}

}  // namespace

extern "C" {

int mt_pool_run(mt_pool_task task, void* ctx, int workers) {
    if (workers <= 1) {
        task(ctx);
        return 1;
    }
    Pool* p = pool();
    if (p == nullptr || p->stop.load(std::memory_order_relaxed) || p->busy.exchange(true, std::memory_order_acquire)) {
        task(ctx);
        return 1;
    }
    uint32_t gen = generation(p->word.load(std::memory_order_relaxed));
    int want = grow(p, workers - 1 < kMaxHelpers ? workers - 1 : kMaxHelpers, gen);
    if (want > workers - 1) want = workers - 1;
    if (want <= 0) {
        p->busy.store(false, std::memory_order_release);
        task(ctx);
        return 1;
    }
    p->task = task;
    p->ctx = ctx;
    p->done.store(0, std::memory_order_relaxed);
    p->word.store((uint64_t)(gen + 1) << 32 | (uint64_t)want);  // seq_cst: against the helpers' sleepers count
    int asleep = p->sleepers.load();
    if (asleep > 0) {
        { std::lock_guard<std::mutex> lk(p->m); }  // a helper between its check and its wait gets into the wait
        if (asleep <= want) {
            p->wake.notify_all();
        } else {
            for (int i = 0; i < want; ++i) p->wake.notify_one();
        }
    }
    task(ctx);
    // close the task: helpers that have not claimed it by now would find no work left
    uint64_t w = p->word.load(std::memory_order_relaxed);
    while (!p->word.compare_exchange_weak(w, (w & ~(0xFFFFull << 16)) | kClosed << 16, std::memory_order_acq_rel,
                                          std::memory_order_relaxed)) {
    }
    int ran = (int)claims(w);
    wait_done(p, ran);
    p->busy.store(false, std::memory_order_release);
    return 1 + ran;
}

long long mt_pool_configure(long long spin_ns) {
    if (spin_ns < 0) return g_spin_ns.load();
    return g_spin_ns.exchange(spin_ns);
}

int mt_pool_threads() {
    Pool* p = g_pool.load(std::memory_order_acquire);
    return p == nullptr ? 0 : p->helpers.load();
}

void mt_pool_shutdown() {
    Pool* p = g_pool.load(std::memory_order_acquire);
    if (p == nullptr) return;
    std::unique_lock<std::mutex> lk(p->m);
    p->stop.store(true);
    p->wake.notify_all();
    // helpers leave between tasks; a bounded wait, so that a helper stuck in a task cannot hang the exit
    p->finished.wait_for(lk, std::chrono::seconds(2), [p] { return p->alive.load() == 0; });
}

int mt_pool_probe(long long pieces, long long work_ns, long long fail_at, int fail_code, long long* owner,
                  long long* next) {
    thread_local const long long me = (long long)(std::hash<std::thread::id>()(std::this_thread::get_id()) >> 1);
    for (;;) {
        long long piece = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
        if (piece >= pieces) return 0;
        Clock::time_point start = Clock::now();
        while (std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count() < work_ns) relax();
        owner[piece] = me;
        if (piece == fail_at) return fail_code;
    }
}

}  // extern "C"

MT_PARALLEL(mt_pool_probe)
