// Delta-stepping (paper 003 and Meyer & Sanders) as one cooperative persistent kernel
// per source, grid.sync() between phases, no host communication.
//
// Buckets are a per-vertex index BIndex(v) = floor(d[v] / delta), computed from the
// tentative distance when needed.  For the current bucket B:
//   light phase  - iterate: every vertex of the current queue (vertices whose distance
//                  fell into B) relaxes its light arcs (w <= delta, decided on the fly);
//                  an improved vertex still in B joins the next queue (stamp dedup),
//                  one in a later bucket joins the far pile (flag dedup); every vertex
//                  taken from the queue joins the list R of bucket B once;
//   heavy phase  - every vertex of R relaxes its heavy arcs (w > delta) once, into the
//                  far pile; the same phase finds the least bucket index of the live
//                  far entries (atomicMin);
//   split        - far entries of that bucket become the next queue, later ones move to
//                  the other far pile, stale ones (settled in an earlier bucket) drop.
// Requests are placed by prefix positions from atomicAdd on the queue counters.
// Queue counts rotate so that no counter is reset and used in the same phase.
#include "common.cuh"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define DLT_INF_B 0x7fffffffffffffffLL

template <typename D> __device__ __forceinline__ long long bucket_of(D x, D delta) {
    return (long long)(x / delta);
}
template <> __device__ __forceinline__ long long bucket_of<float>(float x, float delta) {
    const double q = floor((double)x / (double)delta);
    return q >= 9.0e18 ? 9000000000000000000LL : (long long)q;
}
template <> __device__ __forceinline__ long long bucket_of<double>(double x, double delta) {
    const double q = floor(x / delta);
    return q >= 9.0e18 ? 9000000000000000000LL : (long long)q;
}

template <typename T> __device__ __forceinline__ T ldg_cg(const T* p) { return __ldcg(p); }

template <typename W, typename D>
__global__ void delta_solve(const long long* __restrict__ ptr, const int* __restrict__ idx,
                            const W* __restrict__ wt, D* d, D delta, int* cq0, int* cq1, int* fq0, int* fq1,
                            int* rq, int* cmark, int* rmark, int* infar, int* cc, int* fc, int* rc,
                            long long* mins, int* info, unsigned long long* relax) {
    cg::grid_group grid = cg::this_grid();
    const int tid = (int)grid.thread_rank();
    const int T = (int)grid.size();
    int t = 0, p = 0;
    long long B = 0;
    unsigned long long work = 0;
    while (true) {
        // ------------------------------------------------------------ light phase
        int* far = (p & 1) ? fq1 : fq0;
        while (true) {
            const int* qin = (t & 1) ? cq1 : cq0;
            int* qout = (t & 1) ? cq0 : cq1;
            const int nin = ldg_cg(cc + t % 3);
            if (tid == 0) cc[(t + 2) % 3] = 0;
            for (int i = tid; i < nin; i += T) {
                const int v = ldg_cg(qin + i);
                const D dv = ldg_cg(d + v);
                const int seen = atomicExch(rmark + v, p);  // its result is needed only after the arcs
                const long long e1 = ptr[v + 1];
                for (long long e = ptr[v]; e < e1; ++e) {
                    const D w = (D)wt[e];
                    if (w > delta) continue;
                    ++work;
                    const int x = idx[e];
                    const D c = dv + w;
                    if (c < ldg_cg(d + x)) {
                        const D old = atomic_min(d + x, c);
                        if (old > c) {
                            if (bucket_of<D>(c, delta) == B) {
                                if (atomicExch(cmark + x, t + 1) != t + 1) qout[atomicAdd(cc + (t + 1) % 3, 1)] = x;
                            } else if (atomicExch(infar + x, 1) == 0) {
                                far[atomicAdd(fc + (p & 1), 1)] = x;
                            }
                        }
                    }
                }
                if (seen != p) rq[atomicAdd(rc, 1)] = v;
            }
            grid.sync();
            ++t;
            if (ldg_cg(cc + t % 3) == 0) break;
        }
        // ------------------------------------------------- heavy phase + next bucket
        if (tid == 0) fc[(p + 1) & 1] = 0;
        long long* mn = mins + (p & 1);
        const int nr = ldg_cg(rc);
        for (int i = tid; i < nr; i += T) {
            const int v = ldg_cg(rq + i);
            const D dv = ldg_cg(d + v);
            const long long e1 = ptr[v + 1];
            for (long long e = ptr[v]; e < e1; ++e) {
                const D w = (D)wt[e];
                if (!(w > delta)) continue;
                ++work;
                const int x = idx[e];
                const D c = dv + w;
                if (c < ldg_cg(d + x)) {
                    const D old = atomic_min(d + x, c);
                    if (old > c) {
                        const long long b = bucket_of<D>(c, delta);
                        if (b < ldg_cg(mn)) atomicMin(mn, b);
                        if (atomicExch(infar + x, 1) == 0) far[atomicAdd(fc + (p & 1), 1)] = x;
                    }
                }
            }
        }
        const int nf0 = ldg_cg(fc + (p & 1));
        for (int i = tid; i < nf0; i += T) {
            const int x = ldg_cg(far + i);
            const long long b = bucket_of<D>(ldg_cg(d + x), delta);
            if (b > B && b < ldg_cg(mn)) atomicMin(mn, b);
        }
        grid.sync();
        const long long nb = ldg_cg(mn);
        if (nb == DLT_INF_B) break;
        // ------------------------------------------------------------------ split
        if (tid == 0) {
            mins[(p + 1) & 1] = DLT_INF_B;
            *rc = 0;
        }
        {
            int* far_out = (p & 1) ? fq0 : fq1;
            int* qnext = (t & 1) ? cq1 : cq0;
            const int nf = ldg_cg(fc + (p & 1));
            for (int i = tid; i < nf; i += T) {
                const int x = ldg_cg(far + i);
                const long long b = bucket_of<D>(ldg_cg(d + x), delta);
                if (b == nb) {
                    atomicExch(infar + x, 0);
                    atomicExch(cmark + x, t);
                    qnext[atomicAdd(cc + t % 3, 1)] = x;
                } else if (b > nb) {
                    far_out[atomicAdd(fc + ((p + 1) & 1), 1)] = x;
                } else {
                    atomicExch(infar + x, 0);
                }
            }
        }
        grid.sync();
        ++p;
        B = nb;
    }
    if (tid == 0) {
        info[0] = t;
        info[1] = p + 1;
    }
    if (relax != nullptr) add_count(relax, work);
}

template <typename D>
__global__ void delta_init(int n, D* __restrict__ d, int* __restrict__ cq0, int* __restrict__ cmark,
                           int* __restrict__ rmark, int* __restrict__ infar, int* __restrict__ cc,
                           int* __restrict__ fc, int* __restrict__ rc, long long* __restrict__ mins, int src) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        d[v] = (v == src) ? (D)0 : Lim<D>::inf();
        cmark[v] = (v == src) ? 0 : -1;
        rmark[v] = -1;
        infar[v] = 0;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        cq0[0] = src;
        cc[0] = 1;
        cc[1] = 0;
        cc[2] = 0;
        fc[0] = 0;
        fc[1] = 0;
        *rc = 0;
        mins[0] = DLT_INF_B;
        mins[1] = DLT_INF_B;
    }
}

#ifdef SSSP_NVCC_CHECK
#define DLT_INST(W, D)                                                                                  \
    template __global__ void delta_solve<W, D>(const long long*, const int*, const W*, D*, D, int*, int*, \
                                               int*, int*, int*, int*, int*, int*, int*, int*, int*,      \
                                               long long*, int*, unsigned long long*);                   \
    SSSP_COMMON_INST(W, D)
DLT_INST(int, int)
DLT_INST(int, long long)
DLT_INST(long long, long long)
DLT_INST(float, float)
DLT_INST(double, double)
template __global__ void delta_init<int>(int, int*, int*, int*, int*, int*, int*, int*, int*, long long*, int);
template __global__ void delta_init<long long>(int, long long*, int*, int*, int*, int*, int*, int*, int*, long long*, int);
template __global__ void delta_init<float>(int, float*, int*, int*, int*, int*, int*, int*, int*, long long*, int);
template __global__ void delta_init<double>(int, double*, int*, int*, int*, int*, int*, int*, int*, long long*, int);
#endif
