// Locality-based relaxation (paper 000): a thread owns VPT consecutive vertices; from
// each flagged vertex it relaxes depth-first up to K hops, one atomicMin per relaxation,
// no thread synchronisation.  Vertices improved at depth K are flagged in the *other*
// flag array (FlagArray[i] read and cleared, FlagArray[i^1] written), so no flag is read
// and written in the same launch.  `active` (may be null) is raised when any flag is set:
// the host launches the kernel N times without reading it, then reads it after each
// launch until it stays 0.
//
// Correctness (label-correcting): whenever a thread lowers d[x] it is responsible for x:
// it either relaxes x's arcs itself (depth < K) with the value it wrote, or flags x.
// A frame whose vertex was lowered again by someone else is abandoned (that thread is
// now responsible).  Each launch therefore does at least one Bellman-Ford round, which
// bounds the launches by n without a negative cycle.
#include "common.cuh"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Distances are read with __ldcg (L2, never a stale L1 line): the persistent kernel
// reads values other blocks wrote in earlier phases of the same launch.
template <typename T> __device__ __forceinline__ T loc_ld(const T* p) { return __ldcg(p); }

// Depth-first relaxation of up to K hops from v; returns whether a flag was set.
template <typename W, typename D, int K>
__device__ __forceinline__ bool loc_visit(int v, const long long* __restrict__ ptr, const int* __restrict__ idx,
                                          const W* __restrict__ wt, unsigned char* fout, D* d,
                                          unsigned long long& cnt) {
    bool any = false;
    int sv[K];
    D sd[K];
    long long se[K], send[K];
    int top = 0;
    sv[0] = v;
    sd[0] = loc_ld(d + v);
    se[0] = ptr[v];
    send[0] = ptr[v + 1];
    while (top >= 0) {
        if (se[top] >= send[top] || loc_ld(d + sv[top]) < sd[top]) {
            --top;
            continue;
        }
        const long long e = se[top]++;
        const int x = idx[e];
        const D nd = sd[top] + (D)wt[e];
        ++cnt;
        if (nd < loc_ld(d + x)) {
            const D old = atomic_min(&d[x], nd);
            if (old > nd) {
                if (top + 1 < K) {
                    ++top;
                    sv[top] = x;
                    sd[top] = nd;
                    se[top] = ptr[x];
                    send[top] = ptr[x + 1];
                } else {
                    fout[x] = 1;
                    any = true;
                }
            }
        }
    }
    return any;
}

// The same k-step relaxation with the arcs of a frame relaxed together (AB at a time):
// their heads, weights and distances are loaded side by side and the atomicMins issued
// back to back, so a frame costs a few memory round trips instead of a few per arc.
// Improved children (at most AB per frame; more are flagged, which is always safe) are
// then visited depth-first.  Depth semantics as loc_visit: children of a frame at
// level L are at depth L + 1 and are flagged when L + 1 == K.
template <typename W, typename D, int K, int AB>
__device__ __forceinline__ bool loc_visit_batched(int v, const long long* __restrict__ ptr,
                                                  const int* __restrict__ idx, const W* __restrict__ wt,
                                                  unsigned char* fout, D* d, unsigned long long& cnt) {
    bool any = false;
    int kid[K][AB];
    D kval[K][AB];
    int kn[K], kp[K];
    int top = 0;
    int u = v;
    D du = loc_ld(d + v);
    long long e0 = ptr[v], e1 = ptr[v + 1];
    while (true) {
        // expand frame `top` (vertex u, value du, arcs e0..e1)
        kn[top] = 0;
        kp[top] = 0;
        const bool leaf = (top + 1 == K);
        for (long long b = e0; b < e1; b += AB) {
            int xs[AB];
            D nds[AB], cur[AB];
#pragma unroll
            for (int j = 0; j < AB; ++j) {
                if (b + j < e1) {
                    xs[j] = idx[b + j];
                    nds[j] = du + (D)wt[b + j];
                }
            }
#pragma unroll
            for (int j = 0; j < AB; ++j) cur[j] = (b + j < e1) ? loc_ld(d + xs[j]) : nds[j];
#pragma unroll
            for (int j = 0; j < AB; ++j) {
                if (b + j < e1 && nds[j] < cur[j]) cur[j] = atomic_min(d + xs[j], nds[j]);
                else cur[j] = nds[j];  // no improvement
            }
#pragma unroll
            for (int j = 0; j < AB; ++j) {
                if (cur[j] > nds[j]) {
                    if (leaf || kn[top] >= AB) {
                        fout[xs[j]] = 1;
                        any = true;
                    } else {
                        kid[top][kn[top]] = xs[j];
                        kval[top][kn[top]] = nds[j];
                        ++kn[top];
                    }
                }
            }
            cnt += (unsigned long long)min((long long)AB, e1 - b);
        }
        // next child, depth-first
        bool found = false;
        while (top >= 0) {
            if (kp[top] >= kn[top]) {
                --top;
                continue;
            }
            const int j = kp[top]++;
            const int x = kid[top][j];
            const D xv = kval[top][j];
            const long long a0 = ptr[x], a1 = ptr[x + 1];
            if (loc_ld(d + x) < xv) continue;  // lowered again: its improver is responsible
            ++top;
            u = x;
            du = xv;
            e0 = a0;
            e1 = a1;
            found = true;
            break;
        }
        if (!found) break;
    }
    (void)u;
    return any;
}

template <typename W, typename D, int K, int AB>
__device__ __forceinline__ bool loc_visit_any(int v, const long long* __restrict__ ptr, const int* __restrict__ idx,
                                              const W* __restrict__ wt, unsigned char* fout, D* d,
                                              unsigned long long& cnt) {
    if (AB == 0) return loc_visit<W, D, K>(v, ptr, idx, wt, fout, d, cnt);
    return loc_visit_batched<W, D, K, (AB > 0 ? AB : 1)>(v, ptr, idx, wt, fout, d, cnt);
}

__device__ __forceinline__ void loc_count(unsigned long long* relax, unsigned long long cnt) {
    if (relax == nullptr) return;
    for (int o = 16; o > 0; o >>= 1) cnt += __shfl_down_sync(0xffffffffu, cnt, o);
    if ((threadIdx.x & 31) == 0) add_count(relax, cnt);
}

// One launch (the paper's Kernel_1 when active == null, Kernel_2 otherwise).
template <typename W, typename D, int K, int VPT, int AB>
__global__ void loc_step(int n, const long long* __restrict__ ptr, const int* __restrict__ idx,
                         const W* __restrict__ wt, unsigned char* __restrict__ fin,
                         unsigned char* __restrict__ fout, D* d, int* active, unsigned long long* relax) {
    const int nt = (n + VPT - 1) / VPT;
    unsigned long long cnt = 0;
    bool any = false;
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < nt; t += gridDim.x * blockDim.x) {
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int v = t * VPT + j;
            if (v >= n || !fin[v]) continue;
            fin[v] = 0;
            any |= loc_visit_any<W, D, K, AB>(v, ptr, idx, wt, fout, d, cnt);
        }
    }
    if (active != nullptr && __syncthreads_or(any) && threadIdx.x == 0) *active = 1;
    loc_count(relax, cnt);
}

// Persistent variant (option persistent=True): the same steps inside one cooperative
// launch, grid.sync() between steps instead of kernel boundaries; act[i % 3] is raised
// when step i sets a flag and read after the barrier by one thread per block, which
// shares it through shared memory (act[(i+1) % 3] is reset during step i).  info[0] =
// steps, info[1] = 1 if maxit steps were not enough (a negative cycle).  (A hand-made
// barrier whose counter shared a line with the act words measured twice as slow on NY,
// one on a line of its own 10% slower than grid.sync().)
template <typename W, typename D, int K, int VPT, int AB>
__global__ void loc_persistent(int n, const long long* __restrict__ ptr, const int* __restrict__ idx,
                               const W* __restrict__ wt, unsigned char* f0, unsigned char* f1, D* d, int* act,
                               int maxit, int* info, unsigned long long* relax) {
    const int tid = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    const int T = (int)(gridDim.x * blockDim.x);
    const int nt = (n + VPT - 1) / VPT;
    constexpr int U = 4;  // thread units whose flags are loaded together
    __shared__ int more;
    unsigned long long cnt = 0;
    int i = 0;
    bool overflow = false;
    while (true) {
        unsigned char* fin = (i & 1) ? f1 : f0;
        unsigned char* fout = (i & 1) ? f0 : f1;
        if (tid == 0) act[(i + 1) % 3] = 0;
        bool any = false;
        for (int t0 = tid; t0 < nt; t0 += U * T) {
            unsigned char fl[U][VPT];
#pragma unroll
            for (int q = 0; q < U; ++q)
#pragma unroll
                for (int j = 0; j < VPT; ++j) {
                    const long long v = (long long)(t0 + q * T) * VPT + j;
                    fl[q][j] = (t0 + q * T < nt && v < n) ? loc_ld(fin + v) : 0;
                }
#pragma unroll
            for (int q = 0; q < U; ++q)
#pragma unroll
                for (int j = 0; j < VPT; ++j) {
                    if (!fl[q][j]) continue;
                    const int v = (t0 + q * T) * VPT + j;
                    fin[v] = 0;
                    any |= loc_visit_any<W, D, K, AB>(v, ptr, idx, wt, fout, d, cnt);
                }
        }
        if (any) act[i % 3] = 1;
        cg::this_grid().sync();
        if (threadIdx.x == 0) more = loc_ld(act + i % 3);
        __syncthreads();
        ++i;
        if (more == 0) break;
        if (i >= maxit) {
            overflow = true;
            break;
        }
    }
    if (tid == 0) {
        info[0] = i;
        info[1] = overflow ? 1 : 0;
    }
    loc_count(relax, cnt);
}

// Block-resident variant (option resident, persistent mode, k = 1 or 2, one vertex per
// thread unit): block b owns the contiguous vertices [b * span, (b + 1) * span) and copies
// their CSR slice (row offsets relative to the slice, heads, weights) into shared memory
// once per solve - the paper's thread-owns-its-vertices locality carried to the adjacency
// itself.  Each step a thread loads the flags of its vertices (SPEC: their distances too,
// in the same round trip), reads the flagged ones' arcs from shared memory, loads the
// heads' distances side by side and, for each improvement, issues the atomicMin without
// waiting for its result.  k = 1: the improved head is flagged (a head lowered further by
// another thread is flagged by that thread as well, so no flag is spurious).  k = 2: the
// improved heads (depth 1) go to a per-warp list and the warp relaxes their arcs
// together, a lane per head (arcs from shared memory when the head is the block's own,
// else from global memory), flagging the heads improved at depth 2; a list that fills up
// flags the rest, which is always safe.  A head relaxed with a value another thread has
// since beaten only relaxes weaker (every value is a real path length), and that thread
// relaxes or flags it too, so the label-correcting argument of loc_visit holds.
// Steps are separated by a count-carrying barrier word (grid_arrive_wait_word; three
// rotate in bar[0..2]): the number of threads that set a flag arrives with the barrier,
// so the quiet test needs no further load.
// Dynamic shared memory: W sw[cap]; int sx[cap]; int sp[span + 1].
#define LOC_HOP 64
#define LOC_WARPS 8
template <typename D> struct LocHop {
    int n;
    int x[LOC_HOP];
    D v[LOC_HOP];
};

// Relax arcs [a0, a1) (heads I, weights Wt: shared or global) of a vertex at distance du,
// AB at a time; improved heads go to `hop` while it has room, else are flagged in fout.
template <typename W, typename D, int AB>
__device__ __forceinline__ void loc_res_relax(D du, const int* I, const W* Wt, long long a0, long long a1, D* d,
                                              unsigned char* fout, LocHop<D>* hop, int& set,
                                              unsigned long long& cnt) {
    for (long long b = a0; b < a1; b += AB) {
        int xs[AB];
        D nds[AB], cur[AB];
#pragma unroll
        for (int t = 0; t < AB; ++t) {
            xs[t] = b + t < a1 ? I[b + t] : 0;
            nds[t] = b + t < a1 ? du + (D)Wt[b + t] : (D)0;
        }
#pragma unroll
        for (int t = 0; t < AB; ++t) cur[t] = b + t < a1 ? loc_ld(d + xs[t]) : nds[t];
#pragma unroll
        for (int t = 0; t < AB; ++t) {
            if (nds[t] < cur[t]) {
                atomic_min(d + xs[t], nds[t]);
                const int pos = hop != nullptr ? atomicAdd(&hop->n, 1) : LOC_HOP;
                if (pos < LOC_HOP) {
                    hop->x[pos] = xs[t];
                    hop->v[pos] = nds[t];
                } else {
                    fout[xs[t]] = 1;
                    set = 1;
                }
            }
        }
        cnt += (unsigned long long)min((long long)AB, a1 - b);
    }
}

template <typename W, typename D, int SPEC, int K>
__global__ void __launch_bounds__(256, 4) loc_resident(int n, int span, int cap, const long long* __restrict__ ptr,
                                                       const int* __restrict__ idx, const W* __restrict__ wt,
                                                       unsigned char* f0, unsigned char* f1, D* d, u64* bar,
                                                       int maxit, int* info, unsigned long long* relax) {
    static_assert(K == 1 || K == 2, "resident steps relax one or two hops");
    extern __shared__ __align__(16) unsigned char loc_smem[];
    W* sw = reinterpret_cast<W*>(loc_smem);
    int* sx = reinterpret_cast<int*>(sw + cap);
    int* sp = sx + cap;
    __shared__ unsigned more;
    __shared__ LocHop<D> hops[K > 1 ? LOC_WARPS : 1];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    LocHop<D>* hop = K > 1 ? &hops[warp] : nullptr;
    if (K > 1 && lane == 0) hops[warp].n = 0;
    const int lo = (int)min((long long)n, (long long)blockIdx.x * span);
    const int nv = min(span, n - lo);
    const long long base = ptr[lo];
    for (int j = threadIdx.x; j <= nv; j += blockDim.x) sp[j] = (int)(ptr[lo + j] - base);
    const int na = (int)(ptr[lo + nv] - base);
    for (int e = threadIdx.x; e < na; e += blockDim.x) {
        sx[e] = idx[base + e];
        sw[e] = wt[base + e];
    }
    __syncthreads();
    constexpr int U = 4, AB = 8;
    unsigned long long cnt = 0;
    int i = 0;
    bool overflow = false;
    while (true) {
        unsigned char* fin = (i & 1) ? f1 : f0;
        unsigned char* fout = (i & 1) ? f0 : f1;
        if (blockIdx.x == 0 && threadIdx.x == 0) bar[(i + 1) % 3] = 0ull;  // last used by barrier i - 2
        int set = 0;
        for (int j0 = threadIdx.x; j0 < nv; j0 += U * blockDim.x) {
            unsigned char fl[U];
            D dv[U];
#pragma unroll
            for (int q = 0; q < U; ++q) {
                const int j = j0 + q * (int)blockDim.x;
                fl[q] = j < nv ? loc_ld(fin + lo + j) : (unsigned char)0;
                if (SPEC) dv[q] = j < nv ? loc_ld(d + lo + j) : (D)0;
            }
#pragma unroll
            for (int q = 0; q < U; ++q) {
                if (!fl[q]) continue;
                const int j = j0 + q * (int)blockDim.x;
                fin[lo + j] = 0;
                const D du = SPEC ? dv[q] : loc_ld(d + lo + j);
                loc_res_relax<W, D, AB>(du, sx, sw, sp[j], sp[j + 1], d, fout, hop, set, cnt);
            }
        }
        if (K > 1) {  // depth 2: the warp relaxes the heads its lanes improved
            __syncwarp();
            const int h = min(hops[warp].n, LOC_HOP);
            for (int e = lane; e < h; e += 32) {
                const int x = hops[warp].x[e];
                const D v = hops[warp].v[e];
                const int jx = x - lo;
                if (jx >= 0 && jx < nv)
                    loc_res_relax<W, D, AB>(v, sx, sw, sp[jx], sp[jx + 1], d, fout, nullptr, set, cnt);
                else
                    loc_res_relax<W, D, AB>(v, idx, wt, ptr[x], ptr[x + 1], d, fout, nullptr, set, cnt);
            }
            __syncwarp();
            if (lane == 0) hops[warp].n = 0;
        }
        const int c = __syncthreads_count(set);
        if (threadIdx.x == 0) {
            const u64 seen = grid_arrive_wait_word<u64>(bar + i % 3, ((u64)(unsigned)c << 32) | 1ull, gridDim.x);
            more = (unsigned)(seen >> 32);
        }
        __syncthreads();
        ++i;
        if (more == 0) break;
        if (i >= maxit) {
            overflow = true;
            break;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        info[0] = i;
        info[1] = overflow ? 1 : 0;
    }
    loc_count(relax, cnt);
}

template <typename D>
__global__ void loc_init(int n, unsigned char* __restrict__ f0, unsigned char* __restrict__ f1,
                         D* __restrict__ d, int src) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        d[v] = (v == src) ? (D)0 : Lim<D>::inf();
        f0[v] = (v == src);
        f1[v] = 0;
    }
}

#ifdef SSSP_NVCC_CHECK
#define LOC_INST(W, D, K, V) LOC_INST2(W, D, K, V, 0) LOC_INST2(W, D, K, V, 8)
#define LOC_INST2(W, D, K, V, AB)                                                                     \
    template __global__ void loc_step<W, D, K, V, AB>(int, const long long*, const int*, const W*,          \
                                                  unsigned char*, unsigned char*, D*, int*,             \
                                                  unsigned long long*);                 \
    template __global__ void loc_persistent<W, D, K, V, AB>(int, const long long*, const int*, const W*,    \
                                                        unsigned char*, unsigned char*, D*, int*, int, int*, \
                                                        unsigned long long*);
#define LOC_ALLK(W, D, V) LOC_INST(W, D, 1, V) LOC_INST(W, D, 2, V) LOC_INST(W, D, 3, V) LOC_INST(W, D, 4, V) LOC_INST(W, D, 5, V)
// every k x vertices-per-thread x arc-batch for one type pair, one of each for the others
// (keeps the CI compile short; the templates do not depend on the types otherwise)
LOC_ALLK(long long, long long, 1) LOC_ALLK(long long, long long, 2) LOC_ALLK(long long, long long, 4)
SSSP_COMMON_INST(long long, long long)
LOC_INST(int, int, 2, 1) SSSP_COMMON_INST(int, int)
LOC_INST(int, long long, 2, 1) SSSP_COMMON_INST(int, long long)
LOC_INST(float, float, 2, 1) SSSP_COMMON_INST(float, float)
LOC_INST(double, double, 5, 2) SSSP_COMMON_INST(double, double)
#define LOC_RES1(W, D, S, K)                                                                            \
    template __global__ void loc_resident<W, D, S, K>(int, int, int, const long long*, const int*, const W*,  \
                                                      unsigned char*, unsigned char*, D*, u64*, int, int*, \
                                                      unsigned long long*);
#define LOC_RES(W, D) LOC_RES1(W, D, 0, 1) LOC_RES1(W, D, 1, 1) LOC_RES1(W, D, 0, 2) LOC_RES1(W, D, 1, 2)
LOC_RES(int, int) LOC_RES(long long, long long) LOC_RES(int, long long) LOC_RES(float, float) LOC_RES(double, double)
template __global__ void loc_init<int>(int, unsigned char*, unsigned char*, int*, int);
template __global__ void loc_init<long long>(int, unsigned char*, unsigned char*, long long*, int);
template __global__ void loc_init<float>(int, unsigned char*, unsigned char*, float*, int);
template __global__ void loc_init<double>(int, unsigned char*, unsigned char*, double*, int);
#endif
