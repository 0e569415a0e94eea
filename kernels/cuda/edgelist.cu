// Edge-list Bellman-Ford (paper 001): a thread per edge.  For undirected graphs each
// pair {u, v} is stored once and the thread relaxes both directions
// (`if d[u] > d[v] + w ... else if d[v] > d[u] + w ...`); for directed graphs a thread
// per arc relaxes one direction.  A device word `modif` receives the number of the last
// iteration that changed a distance; the host stops after an iteration that did not.
// RESTRICT: distances are read through a `const __restrict__` alias (the read-only
// data cache) and written through the plain pointer, as in the paper.  The read-only
// cache may serve a stale (larger) value inside an iteration: that only costs another
// iteration, and the last iteration writes nothing, so its reads are exact.
#include "common.cuh"

template <typename D, bool RESTRICT>
__device__ __forceinline__ D el_load(const D* d, const D* __restrict__ dr, int v) {
    if (RESTRICT) return __ldg(dr + v);
    return *((volatile const D*)(d + v));
}

template <typename W, typename D, bool RESTRICT>
__global__ void el_undirected(long long m, const int* __restrict__ eu, const int* __restrict__ ev,
                              const W* __restrict__ ew, D* d, const D* __restrict__ dr, int* modif, int iter) {
    bool changed = false;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < m;
         e += (long long)gridDim.x * blockDim.x) {
        const int u = eu[e], v = ev[e];
        const D w = (D)ew[e];
        const D du = el_load<D, RESTRICT>(d, dr, u);
        const D dv = el_load<D, RESTRICT>(d, dr, v);
        if (du != Lim<D>::inf() && dv > du + w) {
            atomic_min(d + v, (D)(du + w));
            changed = true;
        } else if (dv != Lim<D>::inf() && du > dv + w) {
            atomic_min(d + u, (D)(dv + w));
            changed = true;
        }
    }
    if (__syncthreads_or(changed) && threadIdx.x == 0) *modif = iter;
}

template <typename W, typename D, bool RESTRICT>
__global__ void el_directed(long long m, const int* __restrict__ eu, const int* __restrict__ ev,
                            const W* __restrict__ ew, D* d, const D* __restrict__ dr, int* modif, int iter) {
    bool changed = false;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < m;
         e += (long long)gridDim.x * blockDim.x) {
        const int u = eu[e];
        const D du = el_load<D, RESTRICT>(d, dr, u);
        if (du == Lim<D>::inf()) continue;
        const int v = ev[e];
        const D c = du + (D)ew[e];
        if (el_load<D, RESTRICT>(d, dr, v) > c) {
            atomic_min(d + v, c);
            changed = true;
        }
    }
    if (__syncthreads_or(changed) && threadIdx.x == 0) *modif = iter;
}

template <typename D>
__global__ void el_init(int n, D* __restrict__ d, int src) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x)
        d[v] = (v == src) ? (D)0 : Lim<D>::inf();
}

#ifdef SSSP_NVCC_CHECK
#define EL_INST(W, D)                                                                                   \
    template __global__ void el_undirected<W, D, true>(long long, const int*, const int*, const W*, D*,   \
                                                       const D*, int*, int);                             \
    template __global__ void el_undirected<W, D, false>(long long, const int*, const int*, const W*, D*,  \
                                                        const D*, int*, int);                            \
    template __global__ void el_directed<W, D, true>(long long, const int*, const int*, const W*, D*,     \
                                                     const D*, int*, int);                               \
    template __global__ void el_directed<W, D, false>(long long, const int*, const int*, const W*, D*,    \
                                                      const D*, int*, int);                              \
    template __global__ void el_init<D>(int, D*, int);                                                  \
    SSSP_COMMON_INST(W, D)
EL_INST(int, int)
EL_INST(long long, long long)
EL_INST(float, float)
EL_INST(double, double)
template __global__ void el_undirected<int, long long, true>(long long, const int*, const int*, const int*,
                                                             long long*, const long long*, int*, int);
#endif
