/* cuemu_exec.cpp -- running a kernel launch on the CPU: every block in turn,
 * each CUDA thread of a block a fiber with its own stack on the launching
 * OS thread. A fiber runs until it reaches a synchronization point
 * (__syncthreads, a warp intrinsic) or returns; the scheduler then runs the
 * next runnable fiber. A barrier releases its waiters when every live
 * thread of the block has arrived (exited threads count as arrived, as on
 * sm_70+); a warp intrinsic completes when every lane of its mask has
 * arrived at the same intrinsic, and each lane then takes its result.
 *
 * Fibers of a block start in a shuffled order (seeded, so a run repeats),
 * so code that depends on one thread running before another without a
 * barrier between them gives different results than in thread order.
 *
 * What stops the program (cuemu_fail): no fiber can run while some wait (a
 * barrier not every thread reaches, a shuffle a lane never joins); warp
 * intrinsics of one warp that disagree on kind, mask or width; a mask that
 * names a lane which has exited or does not exist, or leaves out the
 * calling lane; a shuffle that reads a lane outside the mask.
 *
 * The switch is a few instructions of x86-64 assembly (the callee-saved
 * registers and the stack pointer), from fiber to fiber in run order;
 * other machines use ucontext. Under AddressSanitizer every switch is announced
 * to it (__sanitizer_start/finish_switch_fiber), so the fibers' stacks are
 * checked like any other.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "cuemu_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define CUEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUEMU_ASAN 1
#endif
#endif
#ifdef CUEMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

/* The scheduler's own hot paths are not instrumented: the sanitizers are
 * there for the kernels, and these run at every switch (about half the
 * time of a sanitized run otherwise). */
#define CUEMU_HOT __attribute__((no_sanitize("address", "undefined")))

__thread cuemu_where cuemu_now;

namespace {

/* ---- context switch -------------------------------------------------------- */

/* The floating-point control state (MXCSR, x87) is not switched: every
 * fiber of an OS thread shares it, and kernels never change it. */
#if defined(__x86_64__)
extern "C" void cuemu_switch(void **save_sp, void *load_sp);
asm(R"(
    .text
    .p2align 4
    .type cuemu_switch, @function
cuemu_switch:
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
    .size cuemu_switch, .-cuemu_switch
    .section .note.GNU-stack,"",@progbits
    .text
)");
struct context {
    void *sp;
};
void raw_switch(context *from, context *to)
{
    cuemu_switch(&from->sp, to->sp);
}
#else
struct context {
    ucontext_t uc;
};
void raw_switch(context *from, context *to)
{
    swapcontext(&from->uc, &to->uc);
}
#endif

enum fiber_state { F_RUN, F_BARRIER, F_WARP, F_DONE };

struct fiber {
    context ctx;
    char *stack;              /* usable part of the mapping, above the guard page */
    size_t stack_size;
    uint3 idx;
    int warp, lane;
    int pos;                  /* place in the block's run order */
    fiber_state state;
    void *asan_fake;          /* AddressSanitizer's fake stack of this fiber */
};

struct warp_meet {
    unsigned exists;          /* lanes the block has */
    unsigned exited;
    unsigned arrived, want;   /* the pending intrinsic: lanes in, lanes it waits for */
    cuemu_warp_kind kind;
    int width;
    uint64_t value[32];
    int arg[32];
    uint64_t result[32];
};

struct block_run {
    const cuemu_cfg *cfg;
    const std::function<void()> *body;
    uint3 idx;
    std::vector<fiber> *fibers;
    std::vector<int> order;   /* fiber indices in run order */
    std::vector<warp_meet> warps;
    int live;                 /* threads not yet returned */
    int at_barrier;
    void *smem;
    context sched;            /* the scheduler, on the OS thread's own stack */
    void *sched_fake;
    const void *sched_stack_bottom;
    size_t sched_stack_size;
};

thread_local block_run *cur_block;
thread_local fiber *cur_fiber;

/* ---- stacks -------------------------------------------------------------------- */

#ifdef CUEMU_ASAN
constexpr size_t STACK_BYTES = (size_t)1 << 20;   /* ASan's frames are larger */
#else
constexpr size_t STACK_BYTES = (size_t)256 << 10;
#endif

/* Stacks of this OS thread, kept for the next launch: mmap'd with a guard
 * page below, committed only as touched. */
struct stack_pool {
    std::vector<char *> maps;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    char *get(size_t i)
    {
        while (maps.size() <= i) {
            void *m = mmap(nullptr, STACK_BYTES + page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (m == MAP_FAILED)
                cuemu_fail("cannot map a fiber stack of %zu bytes", STACK_BYTES);
            mprotect(m, page, PROT_NONE);
            maps.push_back((char *)m);
        }
        return maps[i] + page;
    }
    ~stack_pool()
    {
        for (char *m : maps)
            munmap(m, STACK_BYTES + page);
    }
};
thread_local stack_pool stacks;

/* The OS thread's own stack, where the scheduler runs (AddressSanitizer
 * must be told where a switch lands). */
void os_stack(const void **bottom, size_t *size)
{
    thread_local void *addr = nullptr;
    thread_local size_t bytes = 0;
#ifdef CUEMU_ASAN
    pthread_attr_t a;
    if (!addr && pthread_getattr_np(pthread_self(), &a) == 0) {   /* once: it reads /proc */
        pthread_attr_getstack(&a, &addr, &bytes);
        pthread_attr_destroy(&a);
    }
#endif
    *bottom = addr;
    *size = bytes;
}

/* ---- switching ------------------------------------------------------------------- */

CUEMU_HOT void set_where(const fiber &f)
{
    const cuemu_cfg &c = *cur_block->cfg;
    cuemu_now.thread = f.idx;
    cuemu_now.block = cur_block->idx;
    cuemu_now.block_dim = uint3{ c.block.x, c.block.y, c.block.z };
    cuemu_now.grid_dim = uint3{ c.grid.x, c.grid.y, c.grid.z };
}

/* The first runnable fiber after run-order position 'pos', or null. */
CUEMU_HOT fiber *next_runnable(block_run &b, int pos)
{
    std::vector<fiber> &fs = *b.fibers;
    for (size_t i = (size_t)(pos + 1); i < b.order.size(); i++)
        if (fs[(size_t)b.order[i]].state == F_RUN)
            return &fs[(size_t)b.order[i]];
    return nullptr;
}

/* From 'from' to 'to' (null: the scheduler); returns when 'from' runs
 * again, never when it is 'dying' (a fiber that has returned). */
CUEMU_HOT void go(block_run &b, fiber *from, fiber *to, bool dying)
{
    context *save = from ? &from->ctx : &b.sched;
    context *load = to ? &to->ctx : &b.sched;
    cur_fiber = to;
    if (to)
        set_where(*to);
#ifdef CUEMU_ASAN
    void **fake = dying ? nullptr : from ? &from->asan_fake : &b.sched_fake;
    __sanitizer_start_switch_fiber(fake, to ? to->stack : b.sched_stack_bottom,
                                   to ? to->stack_size : b.sched_stack_size);
#else
    (void)dying;
#endif
    raw_switch(save, load);
#ifdef CUEMU_ASAN
    __sanitizer_finish_switch_fiber(from ? from->asan_fake : b.sched_fake, nullptr, nullptr);
#endif
}

/* The calling fiber waits (or has returned): run the next one in order. */
CUEMU_HOT void yield(bool dying)
{
    block_run &b = *cur_block;
    fiber &f = *cur_fiber;
    go(b, &f, next_runnable(b, f.pos), dying);
}

[[noreturn]] void fail_here(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail_here(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const block_run &b = *cur_block;
    if (cur_fiber)
        cuemu_fail("kernel %s, block (%u,%u,%u), thread (%u,%u,%u): %s", b.cfg->name, b.idx.x,
                   b.idx.y, b.idx.z, cur_fiber->idx.x, cur_fiber->idx.y, cur_fiber->idx.z, msg);
    cuemu_fail("kernel %s, block (%u,%u,%u): %s", b.cfg->name, b.idx.x, b.idx.y, b.idx.z, msg);
}

void release_barrier(block_run &b)
{
    for (fiber &f : *b.fibers)
        if (f.state == F_BARRIER)
            f.state = F_RUN;
    b.at_barrier = 0;
}

/* A thread returned: it no longer holds up barriers; a pending warp
 * intrinsic that waits for it can never complete. */
void thread_exit(block_run &b, fiber &f)
{
    warp_meet &w = b.warps[(size_t)f.warp];
    const unsigned me = 1u << f.lane;
    if (w.arrived && (w.want & me))
        fail_here("returned while lanes 0x%08x wait for it in a warp intrinsic", w.arrived);
    w.exited |= me;
    f.state = F_DONE;
    b.live--;
    if (b.at_barrier > 0 && b.at_barrier == b.live)
        release_barrier(b);
}

extern "C" void fiber_main(void)
{
    block_run &b = *cur_block;
#ifdef CUEMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    (*b.body)();
    thread_exit(b, *cur_fiber);
    yield(true);
    __builtin_unreachable();
}

void start_fiber(fiber &f)
{
    f.asan_fake = nullptr;
#ifdef CUEMU_ASAN
    /* An earlier fiber on this stack returned from every frame of its body
     * (ASan unpoisons a frame as it returns); only the few frames live at
     * its last switch (fiber_main, yield, go) stay poisoned, at the top. */
    const size_t top_bytes = (size_t)64 << 10;
    ASAN_UNPOISON_MEMORY_REGION(f.stack + f.stack_size - top_bytes, top_bytes);
#endif
#if defined(__x86_64__)
    uint64_t *top = (uint64_t *)(f.stack + f.stack_size);   /* 16-byte aligned */
    *--top = 0;                          /* fiber_main's return slot: it never returns */
    *--top = (uint64_t)(uintptr_t)&fiber_main;
    for (int r = 0; r < 6; r++)
        *--top = 0;                      /* rbp rbx r12 r13 r14 r15 */
    f.ctx.sp = top;
#else
    getcontext(&f.ctx.uc);
    f.ctx.uc.uc_stack.ss_sp = f.stack;
    f.ctx.uc.uc_stack.ss_size = f.stack_size;
    f.ctx.uc.uc_link = nullptr;
    makecontext(&f.ctx.uc, fiber_main, 0);
#endif
}

uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

[[noreturn]] void deadlock(block_run &b)
{
    int at_bar = 0;
    char warps[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < b.warps.size(); i++) {
        const warp_meet &w = b.warps[i];
        if (w.arrived && used < sizeof(warps) - 64)
            used += (size_t)snprintf(warps + used, sizeof(warps) - used,
                                     " warp %zu: lanes 0x%08x of 0x%08x in;", i, w.arrived,
                                     w.want);
    }
    for (const fiber &f : *b.fibers)
        at_bar += f.state == F_BARRIER;
    fail_here("deadlock: %d of %d live threads wait at __syncthreads;%s", at_bar, b.live,
              used ? warps : " no warp intrinsic is pending");
}

void run_block(block_run &b, uint64_t seed)
{
    std::vector<fiber> &fs = *b.fibers;
    const dim3 bd = b.cfg->block;
    const int n = (int)(bd.x * bd.y * bd.z);
    b.order.resize((size_t)n);
    for (int t = 0; t < n; t++)
        b.order[(size_t)t] = t;
    for (int t = n - 1; t > 0; t--)
        std::swap(b.order[(size_t)t], b.order[mix(seed + (uint64_t)t) % (uint64_t)(t + 1)]);
    for (int i = 0; i < n; i++)
        fs[(size_t)b.order[(size_t)i]].pos = i;
    for (int t = 0; t < n; t++) {
        fiber &f = fs[(size_t)t];
        f.idx = uint3{ (unsigned)t % bd.x, (unsigned)t / bd.x % bd.y, (unsigned)t / (bd.x * bd.y) };
        f.warp = t / 32;
        f.lane = t % 32;
        f.state = F_RUN;
        f.stack = stacks.get((size_t)t);
        f.stack_size = STACK_BYTES;
        start_fiber(f);
    }
    b.warps.assign((size_t)(n + 31) / 32, warp_meet{});
    for (int t = 0; t < n; t++)
        b.warps[(size_t)t / 32].exists |= 1u << (t % 32);
    b.live = n;
    b.at_barrier = 0;

    while (b.live > 0) {   /* one pass: the fibers hand on to each other in order */
        fiber *f = next_runnable(b, -1);
        if (!f)
            deadlock(b);
        go(b, nullptr, f, false);
    }
}

/* Lane 'lane' reads lane 'src' of the intrinsic's segment. */
CUEMU_HOT unsigned shfl_source(const warp_meet &w, int lane)
{
    const int seg = lane / w.width * w.width, arg = w.arg[lane];
    int src = lane;
    switch (w.kind) {
    case CUEMU_SHFL_XOR: src = lane ^ arg; src = src >= seg + w.width ? lane : src; break;
    case CUEMU_SHFL_IDX: src = seg + (arg % w.width + w.width) % w.width; break;
    case CUEMU_SHFL_DOWN: src = lane + arg >= seg + w.width ? lane : lane + arg; break;
    case CUEMU_SHFL_UP: src = lane - arg < seg ? lane : lane - arg; break;
    default: break;
    }
    return (unsigned)src;
}

/* kernels/common.cuh's butterfly reductions, every lane at once. */
CUEMU_HOT void butterfly(warp_meet &w)
{
    float v[32], next[32];
    for (int l = 0; l < 32; l++)
        v[l] = cuemu_from_bits<float>(w.value[l]);
    for (int off = w.width / 2; off > 0; off >>= 1) {
        for (int l = 0; l < 32; l++)
            next[l] = w.kind == CUEMU_BUTTERFLY_MAX ? fmaxf(v[l], v[l ^ off]) : v[l] + v[l ^ off];
        memcpy(v, next, sizeof(v));
    }
    for (int l = 0; l < 32; l++)
        w.result[l] = cuemu_bits(v[l]);
}

CUEMU_HOT void complete_warp_op(warp_meet &w)
{
    if (w.kind == CUEMU_BUTTERFLY_SUM || w.kind == CUEMU_BUTTERFLY_MAX) {
        butterfly(w);   /* always a full mask */
        return;
    }
    unsigned votes = 0;
    for (int l = 0; l < 32; l++)
        if ((w.want >> l & 1u) && w.value[l])
            votes |= 1u << l;
    for (int l = 0; l < 32; l++) {
        if (!(w.want >> l & 1u))
            continue;
        switch (w.kind) {
        case CUEMU_SHFL_XOR: case CUEMU_SHFL_IDX: case CUEMU_SHFL_DOWN: case CUEMU_SHFL_UP: {
            const unsigned src = shfl_source(w, l);
            if (!(w.want >> src & 1u))
                fail_here("lane %d shuffles from lane %u, which is not in the mask 0x%08x", l,
                          src, w.want);
            w.result[l] = w.value[src];
            break;
        }
        case CUEMU_BALLOT: w.result[l] = votes; break;
        case CUEMU_ALL: w.result[l] = votes == w.want; break;
        case CUEMU_ANY: w.result[l] = votes != 0; break;
        case CUEMU_MATCH_ANY: {
            unsigned same = 0;
            for (int o = 0; o < 32; o++)
                if ((w.want >> o & 1u) && w.value[o] == w.value[l])
                    same |= 1u << o;
            w.result[l] = same;
            break;
        }
        case CUEMU_SYNCWARP: w.result[l] = 0; break;
        case CUEMU_BUTTERFLY_SUM: case CUEMU_BUTTERFLY_MAX: break;   /* done above */
        }
    }
}

const char *kind_name(cuemu_warp_kind k)
{
    static const char *const names[] = { "__shfl_xor_sync", "__shfl_sync", "__shfl_down_sync",
                                         "__shfl_up_sync", "__ballot_sync", "__match_any_sync",
                                         "__all_sync", "__any_sync", "__syncwarp",
                                         "kq_group_sum", "kq_warp_max" };
    return names[k];
}

} // namespace

/* ---- the device-side entry points ------------------------------------------------- */

CUEMU_HOT void __syncthreads(void)
{
    block_run &b = *cur_block;
    fiber &f = *cur_fiber;
    if (++b.at_barrier == b.live) {
        release_barrier(b);
        return;
    }
    f.state = F_BARRIER;
    yield(false);
}

CUEMU_HOT uint64_t cuemu_warp_op(cuemu_warp_kind kind, unsigned mask, uint64_t value, int arg,
                                 int width)
{
    block_run &b = *cur_block;
    fiber &f = *cur_fiber;
    warp_meet &w = b.warps[(size_t)f.warp];
    const unsigned me = 1u << f.lane;
    if (!(mask & me))
        fail_here("%s with mask 0x%08x, which leaves out the calling lane %d", kind_name(kind),
                  mask, f.lane);
    if (mask & ~w.exists)
        fail_here("%s with mask 0x%08x names lanes the block does not have (0x%08x)",
                  kind_name(kind), mask, w.exists);
    if (mask & w.exited)
        fail_here("%s with mask 0x%08x names lanes that have returned (0x%08x)", kind_name(kind),
                  mask, w.exited);
    if (width < 1 || width > 32 || (width & (width - 1)))
        fail_here("%s with width %d (a power of two up to 32)", kind_name(kind), width);
    if (w.arrived == 0) {
        w.kind = kind;
        w.want = mask;
        w.width = width;
    } else if (w.kind != kind || w.want != mask || w.width != width) {
        fail_here("%s (mask 0x%08x) while lanes 0x%08x of the warp wait in %s (mask 0x%08x): "
                  "divergent warp intrinsics", kind_name(kind), mask, w.arrived,
                  kind_name(w.kind), w.want);
    }
    w.value[f.lane] = value;
    w.arg[f.lane] = arg;
    w.arrived |= me;
    if (w.arrived == w.want) {
        complete_warp_op(w);
        for (int l = 0; l < 32; l++)
            if (w.want >> l & 1u)
                (*b.fibers)[(size_t)(f.warp * 32 + l)].state = F_RUN;
        w.arrived = 0;
        return w.result[f.lane];
    }
    f.state = F_WARP;
    yield(false);
    return w.result[f.lane];
}

void *cuemu_dyn_smem(void)
{
    return cur_block->smem;
}

void cuemu_exec_grid(const cuemu_cfg &c, const std::function<void()> &body)
{
    static std::atomic<uint64_t> launches{ 0 };
    thread_local std::vector<fiber> fibers;
    const size_t n = (size_t)c.block.x * c.block.y * c.block.z;
    if (fibers.size() < n)
        fibers.resize(n);
    std::vector<unsigned char> smem(c.smem ? c.smem : 1, 0xff);   /* NaN until written */
    const uint64_t launch = launches.fetch_add(1);

    block_run *outer = cur_block;
    if (outer)
        cuemu_fail("kernel %s launched from inside kernel %s", c.name, outer->cfg->name);
    block_run b{};
    os_stack(&b.sched_stack_bottom, &b.sched_stack_size);
    b.cfg = &c;
    b.body = &body;
    b.fibers = &fibers;
    cur_block = &b;
    for (unsigned z = 0; z < c.grid.z; z++)
        for (unsigned y = 0; y < c.grid.y; y++)
            for (unsigned x = 0; x < c.grid.x; x++) {
                b.idx = uint3{ x, y, z };
                memset(smem.data(), 0xff, smem.size());
                b.smem = smem.data();
                run_block(b, mix(launch * 0x9e3779b97f4a7c15ULL + ((uint64_t)z << 42) +
                                 ((uint64_t)y << 21) + x));
            }
    cur_block = nullptr;
}

void cuemu_fail(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuemu: %s\n", msg);
    fflush(stderr);
    abort();
}
