// H-BF (Busato & Bombieri): frontier-based Bellman-Ford with its optimisations, each
// switchable for ablation:
//   classes    edge classification, 2 bits in the high bits of each arc's head id:
//              1 = skip (self-loop, or head whose out-arcs cannot help: out-degree 0,
//              or (non-negative weights) a leaf whose only out-arc returns to the
//              tail) - fixed after the loop by sink_fixup; 2 = head of in-degree 1
//              (plain store, no atomic; only with duplicate removal, which makes the
//              tail the only writer in a round); source arcs in round 0 are plain
//              stores (the lightest of each parallel group, the others skipped).
//   MODE       0 = no duplicate removal; 1 = duplicates removed with a per-vertex
//              iteration stamp (atomicExch; the sound variant for 64-bit distances);
//              2 = H-BF's single 64-bit atomicMin on (key(distance) << 32 | iteration)
//              for 32-bit distances.
//   coalesced  1 = warp-aggregated enqueue (ballot + popc, one atomicAdd per warp step,
//              contiguous writes: H-BF's) instead of one atomicAdd per enqueued vertex;
//              2 = block-staged (warps append to a shared-memory stage, the block
//              reserves its range with one atomicAdd per round and copies it out): the
//              thousands of same-address atomics of a round become one per block.
//   lanes      0 = dynamic virtual warps: lanes per frontier vertex = largest power of
//              two <= resident threads / |F|, clamped to [4, 32]; else fixed lanes.
//   heavy      frontier vertices of out-degree > heavy go to a separate queue whose
//              arcs the whole grid splits (H-BF's dynamic-parallelism launch).
//   HOPS       1 = H-BF.  2 (kernels hbf_step_h2 / hbf_persistent_h2; an addition from
//              the locality paper, not part of H-BF): a lane whose relaxation of v
//              returns "enqueue" also relaxes v's out-arcs at once with the distance it
//              wrote (v of out-degree <= 32 and not heavy); every arc is then an atomic
//              relaxation (no plain stores: v's in-arcs may have two writers in a round).
// Round r reads frontier F[r & 1] and heavy queue H[r & 1] (counts in the int2 at
// st[4 * (r % 3)]), writes F/H[(r + 1) & 1] and zeroes the counts of round r + 2, so a
// round needs no host work: one persistent kernel (co-resident grid) runs every round
// with a grid-wide barrier between rounds, or the host queues single-round launches and reads
// the counts every few launches.
// st[12] = rounds done, st[13] = 2 when the round limit (a negative cycle) was hit,
// st[14] = 1 when a queue overflowed (possible only without duplicate removal), st[15] = 1
// once the loop has stopped (later single-round launches then do nothing); the grid
// barrier's words live in their own 128-byte line (st[32..]; st[32] = arrivals,
// monotonic within a solve, or the three per-round words of the block-staged enqueue at
// st[34..39]), away from the counts that every block's atomics hit.
#include "common.cuh"

#define HBF_MASK 0x3fffffff
#define ST_ROUNDS 12
#define ST_STATUS 13
#define ST_OVF 14
#define ST_DONE 15
#define ST_BAR 32
#define ST_WORDS 64
__device__ __forceinline__ int* fcount(int* st, int r) { return &st[4 * (r % 3)]; }
// Barrier word of round r (block-staged enqueue): arrivals in the low 32 bits, the
// round's enqueued vertices in the high 32 bits; three rotate in st[34..39].
#define ST_BW 34
__device__ __forceinline__ u64* bar_word(int* st, int r) { return reinterpret_cast<u64*>(&st[ST_BW]) + (r % 3); }
__device__ __forceinline__ int* hcount(int* st, int r) { return &st[4 * (r % 3) + 1]; }
#define HBF_SKIP 1
#define HBF_INDEG1 2

template <typename D, int MODE> struct Dist;
template <typename D> struct Dist<D, 0> {
    D* d;
    unsigned* stamp;
    __device__ __forceinline__ D load(int v) const { return ((volatile D*)d)[v]; }
    __device__ __forceinline__ bool relax_atomic(int v, D c, unsigned) const { return atomic_min(&d[v], c) > c; }
    __device__ __forceinline__ bool relax_store(int v, D c, unsigned) const {
        if (c < load(v)) { d[v] = c; return true; }
        return false;
    }
    __device__ __forceinline__ void init(int v, bool src) const { d[v] = src ? (D)0 : Lim<D>::inf(); }
};
template <typename D> struct Dist<D, 1> {
    D* d;
    unsigned* stamp;
    __device__ __forceinline__ D load(int v) const { return ((volatile D*)d)[v]; }
    __device__ __forceinline__ bool relax_atomic(int v, D c, unsigned s) const {
        if (atomic_min(&d[v], c) > c) return atomicExch(&stamp[v], s) != s;
        return false;
    }
    __device__ __forceinline__ bool relax_store(int v, D c, unsigned s) const {
        if (c < load(v)) { d[v] = c; return atomicExch(&stamp[v], s) != s; }
        return false;
    }
    __device__ __forceinline__ void init(int v, bool src) const {
        d[v] = src ? (D)0 : Lim<D>::inf();
        stamp[v] = 0u;
    }
};
template <typename D> struct Dist<D, 2> {
    u64* p;
    unsigned* stamp;
    __device__ __forceinline__ D load(int v) const { return packed_dist<D>(((volatile u64*)p)[v]); }
    __device__ __forceinline__ bool relax_atomic(int v, D c, unsigned s) const {
        u64 old = atomicMin(&p[v], pack<D>(c, s));
        return packed_dist<D>(old) > c && (unsigned)old != s;
    }
    __device__ __forceinline__ bool relax_store(int v, D c, unsigned s) const {
        u64 cur = ((volatile u64*)p)[v];
        if (c < packed_dist<D>(cur)) { p[v] = pack<D>(c, s); return (unsigned)cur != s; }
        return false;
    }
    __device__ __forceinline__ void init(int v, bool src) const { p[v] = pack<D>(src ? (D)0 : Lim<D>::inf(), 0u); }
};

struct HbfArgs {
    int n, src, heavy, classes, lanes, coalesced, cap, max_rounds;
    const long long* ptr;
    const int* idx;
    int* F0; int* F1; int* H0; int* H1;
    int* st;
    unsigned long long* relax;
};

__device__ __forceinline__ int vol(const int* p) { return *((volatile const int*)p); }

#define HBF_STAGE 2048
struct HbfStage {
    unsigned buf[HBF_STAGE];
    int n;        // entries appended this round (may exceed HBF_STAGE: the rest went straight out)
    int base, k;  // the block's reserved range when flushing
    int total;    // the round's n, kept by the flush for the barrier
};

// Out-degree test of a head, issued before the relaxation's atomic so that its loads
// overlap it (the enqueue then needs no dependent load).
// Whether a vertex with arcs [vb, ve) takes the heavy path (never when no vertex is heavy).
__device__ __forceinline__ bool hbf_heavy_range(const HbfArgs& a, long long vb, long long ve) {
    return a.heavy != 0x7fffffff && (ve - vb) > (long long)a.heavy;
}
__device__ __forceinline__ bool hbf_is_heavy(const HbfArgs& a, int v) {
    if (a.heavy == 0x7fffffff) return false;
    return hbf_heavy_range(a, __ldg(&a.ptr[v]), __ldg(&a.ptr[v + 1]));
}

// Enqueue v (when want) into the next frontier or (hv) the next heavy queue.  Warp-collective.
__device__ __forceinline__ void hbf_enqueue(const HbfArgs& a, int r, bool want, int v, bool hv, HbfStage* stg) {
    hv = want && hv;
    int* Fout = (r & 1) ? a.F0 : a.F1;
    if (hv) {
        int* Hout = (r & 1) ? a.H0 : a.H1;
        int pos = atomicAdd(hcount(a.st, r + 1), 1);
        if (pos < a.cap) Hout[pos] = v; else a.st[ST_OVF] = 1;
    }
    bool nv = want && !hv;
    if (a.coalesced == 2) {
        if (stage_append(nv, (unsigned)v, stg->buf, &stg->n, HBF_STAGE, reinterpret_cast<unsigned*>(Fout),
                         fcount(a.st, r + 1), a.cap))
            a.st[ST_OVF] = 1;
    } else if (a.coalesced) {
        unsigned b = __ballot_sync(0xffffffffu, nv);
        if (b == 0u) return;
        int lane = threadIdx.x & 31;
        int leader = __ffs(b) - 1;
        int base = 0;
        if (lane == leader) base = atomicAdd(fcount(a.st, r + 1), __popc(b));
        base = __shfl_sync(0xffffffffu, base, leader);
        if (nv) {
            int pos = base + __popc(b & ((1u << lane) - 1u));
            if (pos < a.cap) Fout[pos] = v; else a.st[ST_OVF] = 1;
        }
    } else if (nv) {
        int pos = atomicAdd(fcount(a.st, r + 1), 1);
        if (pos < a.cap) Fout[pos] = v; else a.st[ST_OVF] = 1;
    }
}

// coalesced == 2: copy the block's stage to the next frontier (one atomicAdd per block).
// The whole block calls it at the end of a round.
__device__ __forceinline__ void hbf_flush(const HbfArgs& a, int r, HbfStage* stg) {
    if (a.coalesced != 2) return;
    __syncthreads();
    if (threadIdx.x == 0) {
        const int k = min(stg->n, HBF_STAGE);
        stg->base = k > 0 ? atomicAdd(fcount(a.st, r + 1), k) : 0;
        stg->k = k;
        stg->total = stg->n;
        stg->n = 0;
        if (k > 0 && stg->base + k > a.cap) a.st[ST_OVF] = 1;
    }
    __syncthreads();
    int* Fout = (r & 1) ? a.F0 : a.F1;
    for (int t = threadIdx.x; t < stg->k; t += blockDim.x) {
        const int pos = stg->base + t;
        if (pos < a.cap) Fout[pos] = (int)stg->buf[t];
    }
}

// Relax arc k of frontier vertex u (distance du); returns whether to enqueue *v.
// HOPS = 2: *cout = the distance offered to *v; no plain stores.
// *hv = whether v is heavy; HOPS = 2: *vb, *ve = v's arc range (for the second hop).
// Both are loaded before the atomic, so their latency hides behind it.
template <typename W, typename D, int MODE, int HOPS>
__device__ __forceinline__ bool hbf_relax(const HbfArgs& a, const Dist<D, MODE>& dist, const W* __restrict__ wt,
                                          int r, int u, D du, long long beg, long long k, int* vout,
                                          D* cout, bool* hv, long long* vb, long long* ve,
                                          unsigned long long& cnt) {
    int raw = __ldg(&a.idx[k]);
    int v = a.classes ? (raw & HBF_MASK) : raw;
    *vout = v;
    int cls = a.classes ? (int)((unsigned)raw >> 30) : 0;
    if (cls == HBF_SKIP) return false;
    if constexpr (HOPS > 1) {
        *vb = __ldg(&a.ptr[v]);
        *ve = __ldg(&a.ptr[v + 1]);
        *hv = hbf_heavy_range(a, *vb, *ve);
    } else {
        *hv = hbf_is_heavy(a, v);
    }
    bool plain = false;
    if (a.classes) {
        if (r == 0 && u == a.src) {
            if (k > beg && (__ldg(&a.idx[k - 1]) & HBF_MASK) == v) return false;  // heavier parallel arc
            plain = HOPS == 1;
        } else if (cls == HBF_INDEG1 && MODE != 0 && HOPS == 1) {
            plain = true;
        }
    }
    D c = du + (D)__ldg(&wt[k]);
    if constexpr (HOPS > 1) *cout = c;
    ++cnt;
    unsigned s = (unsigned)r + 1u;
    return plain ? dist.relax_store(v, c, s) : dist.relax_atomic(v, c, s);
}

// HOPS = 2, second hop: the lane that got "enqueue v" (want) for distance c relaxes
// v's out-arcs with c now.  v is enqueued all the same, so whatever distance v holds at
// the start of round r + 1 (c, or lower from another lane) reaches v's arcs then; a
// lane that lowered v but found it already stamped does no second hop.
// Every write is relax_atomic with this round's stamp, so a vertex improved here is
// enqueued for round r + 1 exactly as by a first-hop relaxation.  Skipped arcs
// (class 1) stay skipped (sink_fixup); v of out-degree > 32 or heavy waits for the
// next round.  The warp relaxes the second-hop arcs of all its lanes together: a scan
// of the lanes' out-degrees numbers the arcs, each lane takes every 32nd of them and
// finds its arc's owner by a binary search over the scan (in shared memory), so the
// arcs cost one pass of memory round trips instead of one per arc of the longest list.
// Warp-collective (called by every lane of the warp).
template <typename D> struct HbfHopWarp {
    long long beg[32];  // owner's first arc minus its first slot number
    D c[32];            // owner's distance
    int end[32];        // inclusive scan of the out-degrees (slot ends)
};
#define HBF_WARPS 8     // warps per block (the kernels run 256 threads)

template <typename W, typename D, int MODE>
__device__ __forceinline__ void hbf_second_hop(const HbfArgs& a, const Dist<D, MODE>& dist,
                                               const W* __restrict__ wt, int r, bool want, long long vb,
                                               long long ve, D c, HbfHopWarp<D>* hop, HbfStage* stg,
                                               unsigned long long& cnt) {
    const int lane = threadIdx.x & 31;
    int deg = 0;
    if (want) {
        const long long d = ve - vb;
        deg = (d > 32 || d > (long long)a.heavy) ? 0 : (int)d;
    }
    int incl = deg;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += t;
    }
    const int total = __shfl_sync(0xffffffffu, incl, 31);
    if (total == 0) return;
    HbfHopWarp<D>& hw = hop[threadIdx.x >> 5];
    hw.end[lane] = incl;
    hw.beg[lane] = vb - (long long)(incl - deg);
    hw.c[lane] = c;
    __syncwarp();
    const unsigned s = (unsigned)r + 1u;
    for (int base = 0; base < total; base += 32) {  // warp-uniform
        const int j = base + lane;
        int x = 0;
        bool w2 = false, hx = false;
        if (j < total) {
            int o = 0;  // the first lane whose slots end after j
#pragma unroll
            for (int step = 16; step > 0; step >>= 1)
                if (hw.end[o + step - 1] <= j) o += step;
            const long long k = hw.beg[o] + j;
            const int raw = __ldg(&a.idx[k]);
            x = a.classes ? (raw & HBF_MASK) : raw;
            const int cls = a.classes ? (int)((unsigned)raw >> 30) : 0;
            if (cls != HBF_SKIP) {
                ++cnt;
                hx = hbf_is_heavy(a, x);
                w2 = dist.relax_atomic(x, hw.c[o] + (D)__ldg(&wt[k]), s);
            }
        }
        hbf_enqueue(a, r, w2, x, hx, stg);
    }
    __syncwarp();  // hw is reused by the warp's next call
}

template <typename W, typename D, int MODE, int HOPS>
__device__ void hbf_round(const HbfArgs& a, const Dist<D, MODE>& dist, const W* __restrict__ wt, int r, int n1,
                          int nh, HbfStage* stg, HbfHopWarp<D>* hop) {
    const int lane = threadIdx.x & 31;
    const long long tt = (long long)gridDim.x * blockDim.x;
    const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long gwarp = gtid >> 5, nwarps = tt >> 5;
    const int* Fin = (r & 1) ? a.F1 : a.F0;
    const int* Hin = (r & 1) ? a.H1 : a.H0;
    unsigned long long cnt = 0;
    int vw = a.lanes;
    if (vw == 0) {
        long long q = n1 > 0 ? tt / n1 : 32;
        vw = 4;
        while (vw < 32 && (long long)(vw * 2) <= q) vw *= 2;
    }
    const int per = 32 / vw, sub = lane & (vw - 1), slot = lane / vw;
    for (long long base = gwarp * per; base < n1; base += nwarps * per) {  // warp-uniform
        long long i = base + slot;
        bool valid = i < n1;
        int u = valid ? __ldcg(&Fin[i]) : 0;
        long long beg = valid ? a.ptr[u] : 0, end = valid ? a.ptr[u + 1] : 0;
        D du = valid ? dist.load(u) : (D)0;
        for (long long k = beg + sub;; k += vw) {
            bool active = k < end;
            if (!__any_sync(0xffffffffu, active)) break;
            int v = 0;
            D c = (D)0;
            bool hv = false;
            long long vb = 0, ve = 0;
            bool want = active && hbf_relax<W, D, MODE, HOPS>(a, dist, wt, r, u, du, beg, k, &v, &c, &hv, &vb, &ve, cnt);
            hbf_enqueue(a, r, want, v, hv, stg);
            if constexpr (HOPS > 1) hbf_second_hop<W, D, MODE>(a, dist, wt, r, want && !hv, vb, ve, c, hop, stg, cnt);
        }
    }
    for (int j = 0; j < nh; ++j) {  // heavy vertices: the whole grid splits their arcs
        int u = __ldcg(&Hin[j]);
        long long beg = a.ptr[u], end = a.ptr[u + 1];
        D du = dist.load(u);
        for (long long k0 = beg + gwarp * 32; k0 < end; k0 += tt) {  // warp-uniform
            long long k = k0 + lane;
            int v = 0;
            D c = (D)0;
            bool hv = false;
            long long vb = 0, ve = 0;
            bool want = k < end && hbf_relax<W, D, MODE, HOPS>(a, dist, wt, r, u, du, beg, k, &v, &c, &hv, &vb, &ve, cnt);
            hbf_enqueue(a, r, want, v, hv, stg);
            if constexpr (HOPS > 1) hbf_second_hop<W, D, MODE>(a, dist, wt, r, want && !hv, vb, ve, c, hop, stg, cnt);
        }
    }
    hbf_flush(a, r, stg);
    add_count(a.relax, cnt);
}

// Returns false when the loop must stop before round r (empty, overflow, round limit).
// The counts of round r are not written during round r, so every thread of the
// persistent grid reads the same values and takes the same branch.
// `known` (persistent kernel, rounds > 0): the counts the barrier read for the block.
__device__ __forceinline__ bool hbf_round_start(const HbfArgs& a, int r, int* n1, int* nh, bool persistent,
                                                const int2* known = nullptr) {
    if (!persistent && vol(&a.st[ST_DONE]) != 0) return false;  // finished in an earlier launch
    int2 c = known != nullptr ? *known : __ldcg(reinterpret_cast<const int2*>(fcount(a.st, r)));
    *n1 = c.x;
    *nh = c.y;
    bool lead = blockIdx.x == 0 && threadIdx.x == 0;
    if (*n1 + *nh == 0) {
        if (lead) a.st[ST_DONE] = 1;
        return false;
    }
    if (*n1 > a.cap || *nh > a.cap) {  // a queue overflowed
        if (lead) { a.st[ST_OVF] = 1; a.st[ST_DONE] = 1; }
        return false;
    }
    if (r >= a.max_rounds) {
        if (lead) { a.st[ST_STATUS] = 2; a.st[ST_DONE] = 1; }
        return false;
    }
    if (lead) {
        *fcount(a.st, r + 2) = 0;
        *hcount(a.st, r + 2) = 0;
        *bar_word(a.st, r + 1) = 0ull;  // last used by barrier r - 2, which every block has left
        a.st[ST_ROUNDS] = r + 1;
    }
    return true;
}

#define HBF_PARAMS                                                                                      \
    int n, int src, int heavy, int classes, int lanes, int coalesced, int cap, int max_rounds,          \
        const long long *ptr, const int *idx, const W *wt, void *dptr, unsigned *stamp, int *F0, int *F1, \
        int *H0, int *H1, int *st, unsigned long long *relax


// The distance storage of each mode from the untyped kernel argument.
template <typename W, typename D, int MODE>
__device__ __forceinline__ Dist<D, MODE> make_dist(void* dptr, unsigned* stamp) {
    Dist<D, MODE> x;
    x.stamp = stamp;
    if constexpr (MODE == 2) x.p = (u64*)dptr; else x.d = (D*)dptr;
    return x;
}

template <typename W, typename D, int MODE>
__global__ void __launch_bounds__(256) hbf_init(HBF_PARAMS) {
    HbfArgs a{n, src, heavy, classes, lanes, coalesced, cap, max_rounds, ptr, idx, F0, F1, H0, H1, st, relax};
    Dist<D, MODE> dist = make_dist<W, D, MODE>(dptr, stamp);
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) dist.init(v, v == src);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (int i = 0; i < ST_WORDS; ++i) st[i] = 0;
        bool hv = heavy != 0x7fffffff && (ptr[src + 1] - ptr[src]) > (long long)heavy;
        if (hv) { H0[0] = src; st[1] = 1; } else { F0[0] = src; st[0] = 1; }
    }
}

// One round per launch (the host queues several and reads st every few launches).
template <typename W, typename D, int MODE, int HOPS>
__device__ __forceinline__ void hbf_step_body(HBF_PARAMS, int r) {
    HbfArgs a{n, src, heavy, classes, lanes, coalesced, cap, max_rounds, ptr, idx, F0, F1, H0, H1, st, relax};
    Dist<D, MODE> dist = make_dist<W, D, MODE>(dptr, stamp);
    __shared__ HbfStage stg;
    __shared__ HbfHopWarp<D> hop[HOPS > 1 ? HBF_WARPS : 1];
    if (threadIdx.x == 0) stg.n = 0;
    __syncthreads();
    int n1, nh;
    if (!hbf_round_start(a, r, &n1, &nh, false)) return;
    hbf_round<W, D, MODE, HOPS>(a, dist, wt, r, n1, nh, &stg, hop);
}
template <typename W, typename D, int MODE>
__global__ void __launch_bounds__(256) hbf_step(HBF_PARAMS, int r) {
    hbf_step_body<W, D, MODE, 1>(n, src, heavy, classes, lanes, coalesced, cap, max_rounds, ptr, idx, wt, dptr,
                                 stamp, F0, F1, H0, H1, st, relax, r);
}
template <typename W, typename D, int MODE>
__global__ void __launch_bounds__(256) hbf_step_h2(HBF_PARAMS, int r) {
    hbf_step_body<W, D, MODE, 2>(n, src, heavy, classes, lanes, coalesced, cap, max_rounds, ptr, idx, wt, dptr,
                                 stamp, F0, F1, H0, H1, st, relax, r);
}

// Grid-wide barrier for the persistent kernel.  The grid is sized on the host to be
// co-resident (blocks per SM from the kernel's register use), so every block reaches it.
// Block-staged enqueue (coalesced == 2): one thread per block adds (1 | the block's
// enqueued count << 32) to round r's barrier word and spins until all blocks arrived
// (grid_arrive_wait_word); the same load gives round r + 1's
// frontier size, so no further load is needed (the heavy queue's count is read only
// when heavy vertices exist).  Otherwise st[ST_BAR] counts arrivals, never reset within
// a solve (the barrier after round r is passed at (r + 1) x gridDim.x), and the waiting
// thread then reads round r + 1's counts.  Either way the counts reach the block's
// threads through shared memory (*next).
__device__ __forceinline__ void grid_barrier(const HbfArgs& a, int r, int2* next, const HbfStage* stg) {
    __syncthreads();
    if (threadIdx.x == 0) {
        if (a.coalesced == 2) {
            const u64 add = ((u64)(unsigned)stg->total << 32) | 1ull;
            const u64 seen = grid_arrive_wait_word<u64>(bar_word(a.st, r), add, gridDim.x);
            next->x = (int)(seen >> 32);
            next->y = a.heavy != 0x7fffffff ? __ldcg(hcount(a.st, r + 1)) : 0;
        } else {
            grid_arrive_wait(reinterpret_cast<unsigned*>(&a.st[ST_BAR]), (unsigned)(r + 1) * gridDim.x);
            *next = __ldcg(reinterpret_cast<const int2*>(fcount(a.st, r + 1)));
        }
    }
    __syncthreads();
}

// Every round in one launch of a co-resident grid, a grid-wide barrier between rounds.
template <typename W, typename D, int MODE, int HOPS>
__device__ __forceinline__ void hbf_persistent_body(HBF_PARAMS) {
    HbfArgs a{n, src, heavy, classes, lanes, coalesced, cap, max_rounds, ptr, idx, F0, F1, H0, H1, st, relax};
    Dist<D, MODE> dist = make_dist<W, D, MODE>(dptr, stamp);
    __shared__ HbfStage stg;
    __shared__ HbfHopWarp<D> hop[HOPS > 1 ? HBF_WARPS : 1];
    __shared__ int2 next;
    if (threadIdx.x == 0) stg.n = 0;
    __syncthreads();
    for (int r = 0;; ++r) {
        int n1, nh;
        if (!hbf_round_start(a, r, &n1, &nh, true, r > 0 ? &next : nullptr)) break;
        hbf_round<W, D, MODE, HOPS>(a, dist, wt, r, n1, nh, &stg, hop);
        grid_barrier(a, r, &next, &stg);
    }
}
template <typename W, typename D, int MODE>
__global__ void __launch_bounds__(256) hbf_persistent(HBF_PARAMS) {
    hbf_persistent_body<W, D, MODE, 1>(n, src, heavy, classes, lanes, coalesced, cap, max_rounds, ptr, idx, wt,
                                       dptr, stamp, F0, F1, H0, H1, st, relax);
}
template <typename W, typename D, int MODE>
__global__ void __launch_bounds__(256) hbf_persistent_h2(HBF_PARAMS) {
    hbf_persistent_body<W, D, MODE, 2>(n, src, heavy, classes, lanes, coalesced, cap, max_rounds, ptr, idx, wt,
                                       dptr, stamp, F0, F1, H0, H1, st, relax);
}

#ifdef SSSP_NVCC_CHECK
#define INSTM(W, D, M)                                                                                  \
    template __global__ void hbf_init<W, D, M>(int, int, int, int, int, int, int, int, const long long*, \
                                               const int*, const W*, void*, unsigned*, int*, int*, int*, \
                                               int*, int*, unsigned long long*);                        \
    template __global__ void hbf_step<W, D, M>(int, int, int, int, int, int, int, int, const long long*, \
                                               const int*, const W*, void*, unsigned*, int*, int*, int*, \
                                               int*, int*, unsigned long long*, int);                   \
    template __global__ void hbf_persistent<W, D, M>(int, int, int, int, int, int, int, int,             \
                                                     const long long*, const int*, const W*, void*,      \
                                                     unsigned*, int*, int*, int*, int*, int*,            \
                                                     unsigned long long*);                              \
    template __global__ void hbf_step_h2<W, D, M>(int, int, int, int, int, int, int, int,                \
                                                  const long long*, const int*, const W*, void*,         \
                                                  unsigned*, int*, int*, int*, int*, int*,               \
                                                  unsigned long long*, int);                             \
    template __global__ void hbf_persistent_h2<W, D, M>(int, int, int, int, int, int, int, int,          \
                                                        const long long*, const int*, const W*, void*,   \
                                                        unsigned*, int*, int*, int*, int*, int*,         \
                                                        unsigned long long*);
#define INST(W, D) INSTM(W, D, 0) INSTM(W, D, 1) SSSP_COMMON_INST(W, D)
INST(int, int)
INST(int, long long)
INST(long long, long long)
INST(float, float)
INST(double, double)
INST(long long, int)
INSTM(int, int, 2)
INSTM(long long, int, 2)
INSTM(float, float, 2)
template __global__ void unpack_dist<int>(const u64*, int*, int);
template __global__ void unpack_dist<float>(const u64*, float*, int);
template __global__ void to_float64<int>(const int*, double*, int);
template __global__ void to_float64<long long>(const long long*, double*, int);
template __global__ void to_float64<float>(const float*, double*, int);
template __global__ void to_float64<double>(const double*, double*, int);
#endif
