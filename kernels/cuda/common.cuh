// Shared device helpers for the SSSP kernels: distance types, +inf sentinels,
// atomicMin for every distance type, order-preserving 32-bit keys (for the
// 64-bit (distance, iteration) words of H-BF), and the passes that run after the
// distances are known (sink fix-up, predecessors, reached-arc counts).
//
// Template parameters used everywhere:  W = weight type (int, long long, float,
// double), D = distance type (W, or long long for int weights whose paths could
// overflow 32 bits).
#pragma once

typedef unsigned long long u64;

template <typename T> struct Lim;
template <> struct Lim<int> {
    __device__ __forceinline__ static int inf() { return 0x7fffffff; }
};
template <> struct Lim<long long> {
    __device__ __forceinline__ static long long inf() { return 0x7fffffffffffffffLL; }
};
template <> struct Lim<float> {
    __device__ __forceinline__ static float inf() { return __int_as_float(0x7f800000); }
};
template <> struct Lim<double> {
    __device__ __forceinline__ static double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
};

// atomic_min returns the previous value; the caller improved the word iff old > val.
__device__ __forceinline__ int atomic_min(int* a, int v) { return atomicMin(a, v); }
__device__ __forceinline__ long long atomic_min(long long* a, long long v) { return atomicMin(a, v); }
__device__ __forceinline__ float atomic_min(float* a, float v) {
    int* ai = reinterpret_cast<int*>(a);
    int old = *((volatile int*)ai);
    while (__int_as_float(old) > v) {
        int assumed = old;
        old = atomicCAS(ai, assumed, __float_as_int(v));
        if (old == assumed) break;
    }
    return __int_as_float(old);
}
__device__ __forceinline__ double atomic_min(double* a, double v) {
    unsigned long long* ai = reinterpret_cast<unsigned long long*>(a);
    unsigned long long old = *((volatile unsigned long long*)ai);
    while (__longlong_as_double((long long)old) > v) {
        unsigned long long assumed = old;
        old = atomicCAS(ai, assumed, (unsigned long long)__double_as_longlong(v));
        if (old == assumed) break;
    }
    return __longlong_as_double((long long)old);
}

// Order-preserving maps of 32-bit distances to unsigned keys (for packed words).
__device__ __forceinline__ unsigned key32(int d) { return ((unsigned)d) ^ 0x80000000u; }
__device__ __forceinline__ unsigned key32(float d) {
    unsigned u = __float_as_uint(d);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
template <typename D> __device__ __forceinline__ D unkey32(unsigned k);
template <> __device__ __forceinline__ int unkey32<int>(unsigned k) { return (int)(k ^ 0x80000000u); }
template <> __device__ __forceinline__ float unkey32<float>(unsigned k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
template <typename D> __device__ __forceinline__ u64 pack(D d, unsigned stamp) {
    return ((u64)key32(d) << 32) | (u64)stamp;
}
template <typename D> __device__ __forceinline__ D packed_dist(u64 p) { return unkey32<D>((unsigned)(p >> 32)); }

__device__ __forceinline__ void add_count(unsigned long long* ctr, unsigned long long c) {
    if (ctr != nullptr && c != 0ull) atomicAdd(ctr, c);
}

// Warp-aggregated append of p (lanes with want) to a block's stage in shared memory
// (sbuf, *scount, cap entries); what does not fit goes straight to the global list
// (list, *gcount).  Returns whether this lane's entry went to a global position at or
// beyond lcap (the caller's overflow; nothing is written there).  The whole warp calls it.
__device__ __forceinline__ bool stage_append(bool want, unsigned p, unsigned* sbuf, int* scount, int cap,
                                             unsigned* list, int* gcount, long long lcap = 0x7fffffffffffffffLL) {
    const unsigned b = __ballot_sync(0xffffffffu, want);
    if (b == 0u) return false;
    const int lane = threadIdx.x & 31;
    const int leader = __ffs(b) - 1;
    const int k = __popc(b);
    int sbase = 0, gbase = 0;
    if (lane == leader) {
        sbase = atomicAdd(scount, k);
        const int spill = sbase + k - cap;
        if (spill > 0) gbase = atomicAdd(gcount, min(spill, k));
    }
    sbase = __shfl_sync(0xffffffffu, sbase, leader);
    gbase = __shfl_sync(0xffffffffu, gbase, leader);
    if (want) {
        const int at = sbase + __popc(b & ((1u << lane) - 1u));
        if (at < cap) {
            sbuf[at] = p;
        } else {
            const long long pos = (long long)gbase + (at - max(sbase, cap));
            if (pos >= lcap) return true;
            list[pos] = p;
        }
    }
    return false;
}

// Grid-wide barrier of a co-resident grid, second half: one thread per block (after a
// __syncthreads of its block) adds `add` to the barrier word *w with release semantics
// (red.release), spins with relaxed loads until the word's low 32 bits reach `target`,
// then fences (a relaxed load that saw the releases followed by fence.acq_rel is PTX's
// acquire pattern; spinning with ld.acquire would invalidate the SM's L1 on every poll).
// Returns the word it saw.  Measured on NY against __threadfence + atomicAdd + volatile
// spin + __threadfence: 1-4% faster hbf.  Keep the word on a cache line of its own.
template <typename T>
__device__ __forceinline__ T grid_arrive_wait_word(T* w, T add, unsigned target) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "32- or 64-bit barrier words");
    T seen;
    if constexpr (sizeof(T) == 8)
        asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(w), "l"(add) : "memory");
    else
        asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(w), "r"(add) : "memory");
    do {
        if constexpr (sizeof(T) == 8)
            asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(w) : "memory");
        else
            asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(w) : "memory");
    } while ((int)((unsigned)seen - target) < 0);
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    return seen;
}

// The same for a plain arrival counter that is never reset within a launch (the caller
// passes (phase + 1) x gridDim.x, modulo 2^32: wrap-safe), so no reset is on the
// critical path.
__device__ __forceinline__ void grid_arrive_wait(unsigned* arrive, unsigned target) {
    grid_arrive_wait_word<unsigned>(arrive, 1u, target);
}

// ----------------------------------------------------------------- after the loop

// Distances held as packed (distance, iteration) words -> plain distances.
template <typename D>
__global__ void unpack_dist(const u64* __restrict__ p, D* __restrict__ d, int n) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x)
        d[v] = packed_dist<D>(p[v]);
}

// H-BF's out-degree-0 class: vertices whose incoming arcs were skipped during the
// iterations get min over in-arcs of d[u] + w here (pull over the reverse CSR).
template <typename W, typename D>
__global__ void sink_fixup(const int* __restrict__ list, int count, const long long* __restrict__ rptr,
                           const int* __restrict__ rsrc, const W* __restrict__ rw, D* __restrict__ d) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        int v = list[i];
        D best = d[v];
        for (long long e = rptr[v]; e < rptr[v + 1]; ++e) {
            D du = d[rsrc[e]];
            if (du == Lim<D>::inf()) continue;
            D c = du + (D)rw[e];
            if (c < best) best = c;
        }
        d[v] = best;
    }
}

// Predecessors once the distances are final, for B sources laid out vertex-major
// (d[v * B + s], B = 1 for one source; slots s >= nb are unused), as a tree of tight
// arcs built in rounds that cannot close a cycle, zero-weight cycles included:
//   pred_init (round 0): each slot's source gets rank 0; with strict != 0 (no negative
//     weight) so does every vertex with a tight in-arc from a strictly closer vertex,
//     which becomes its predecessor (the first such in-arc);
//   pred_round r = 1, 2, ...: a reached vertex still unranked takes the first tight
//     in-arc from a vertex ranked before r (0 <= rank < r) and gets rank r; *flag = r
//     when any did.  A rank written during the launch is r, never below r, so what a
//     thread sees does not depend on the others' timing.
// Along a predecessor arc (distance, rank) strictly decreases lexicographically (a
// strictly closer vertex, or an equally close one ranked earlier), so every chain ends
// at the source.  Every reached vertex is ranked: the rounds are a BFS over the tight
// arcs from the ranked vertices; with strict, as many rounds as the longest chain of
// zero-weight tight arcs (about 15 on BAY with weights 0..3), none when every weight
// is a positive integer; without strict (negative weights), the tree's hop depth.
template <typename W, typename D, typename I, typename P>
__global__ void pred_init(int n, int B, int nb, const I* __restrict__ rptr, const int* __restrict__ rsrc,
                          const W* __restrict__ rw, const D* __restrict__ d, const long long* __restrict__ src,
                          P* __restrict__ pred, int* __restrict__ rank, int strict) {
    const long long total = (long long)n * B;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const int v = (int)(t / B);
        const int s = (int)(t - (long long)v * B);
        P p = -1;
        int k = -1;
        if (s < nb) {
            const D dv = d[t];
            if ((long long)v == src[s]) {
                k = 0;
            } else if (strict && dv != Lim<D>::inf()) {
                for (I e = rptr[v]; e < rptr[v + 1]; ++e) {
                    const int u = rsrc[e];
                    const D du = d[(long long)u * B + s];
                    if (du != Lim<D>::inf() && du < dv && du + (D)rw[e] == dv) {
                        p = (P)u;
                        k = 0;
                        break;
                    }
                }
            }
        }
        pred[t] = p;
        rank[t] = k;
    }
}

template <typename W, typename D, typename I, typename P>
__global__ void pred_round(int n, int B, int nb, const I* __restrict__ rptr, const int* __restrict__ rsrc,
                           const W* __restrict__ rw, const D* __restrict__ d, P* __restrict__ pred,
                           int* __restrict__ rank, int r, int* __restrict__ flag) {
    const long long total = (long long)n * B;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        if (rank[t] != -1) continue;
        const int v = (int)(t / B);
        const int s = (int)(t - (long long)v * B);
        if (s >= nb) continue;
        const D dv = d[t];
        if (dv == Lim<D>::inf()) continue;
        for (I e = rptr[v]; e < rptr[v + 1]; ++e) {
            const int u = rsrc[e];
            const long long tu = (long long)u * B + s;
            const int ku = rank[tu];
            if (ku < 0 || ku >= r) continue;  // ranked vertices are reached: d[tu] is finite
            if (d[tu] + (D)rw[e] == dv) {
                pred[t] = (P)u;
                rank[t] = r;
                *flag = r;
                break;
            }
        }
    }
}

// Distances in the kernels' type -> float64 with +inf for unreachable (one row).
template <typename D>
__global__ void to_float64(const D* __restrict__ d, double* __restrict__ out, int n) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        D x = d[v];
        out[v] = (x == Lim<D>::inf()) ? __longlong_as_double(0x7ff0000000000000LL) : (double)x;
    }
}

#ifdef SSSP_NVCC_CHECK
#define SSSP_COMMON_INST(W, D)                                                                       \
    template __global__ void sink_fixup<W, D>(const int*, int, const long long*, const int*, const W*, D*); \
    template __global__ void pred_init<W, D, long long, long long>(                                  \
        int, int, int, const long long*, const int*, const W*, const D*, const long long*, long long*, \
        int*, int);                                                                                  \
    template __global__ void pred_round<W, D, long long, long long>(                                 \
        int, int, int, const long long*, const int*, const W*, const D*, long long*, int*, int, int*);
#endif
