// Min-plus SpMV Bellman-Ford (d_v = min(d_v, min_u d_u + c_uv)) over the REVERSE CSR
// (pull: each row gathers its in-arcs), as in the CUDA SpMV variants of the DIMACS
// comparison paper: CSR scalar (thread per row), CSR vector (warp per row with a
// shuffle min-reduction) and ELL (column-major padded rows).
//
// Iteration `it` of a batch of launches writes changed[it]; it does nothing when
// changed[it - 1] stayed 0 (the previous sweep converged), so the host can queue K
// sweeps back to back and read the flags once.
#include "common.cuh"

__device__ __forceinline__ bool converged_before(const int* changed, int it) {
    return it > 0 && *((volatile const int*)&changed[it - 1]) == 0;
}

template <typename W, typename D>
__global__ void spmv_scalar(int n, const long long* __restrict__ rptr, const int* __restrict__ rsrc,
                            const W* __restrict__ rw, D* d, int* changed, int it, int prev_ok,
                            unsigned long long* relax) {
    if (!prev_ok || converged_before(changed, it)) return;
    unsigned long long cnt = 0;
    bool any = false;
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        D old = d[v];
        D best = old;
        for (long long e = rptr[v]; e < rptr[v + 1]; ++e) {
            D du = d[rsrc[e]];
            if (du == Lim<D>::inf()) continue;
            ++cnt;
            D c = du + (D)rw[e];
            if (c < best) best = c;
        }
        if (best < old) { d[v] = best; any = true; }
    }
    if (any) changed[it] = 1;
    add_count(relax, cnt);
}

template <typename W, typename D>
__global__ void spmv_vector(int n, const long long* __restrict__ rptr, const int* __restrict__ rsrc,
                            const W* __restrict__ rw, D* d, int* changed, int it, int prev_ok,
                            unsigned long long* relax) {
    if (!prev_ok || converged_before(changed, it)) return;
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5;
    unsigned long long cnt = 0;
    bool any = false;
    for (int v = warp; v < n; v += nwarps) {  // warp-uniform loop
        D best = Lim<D>::inf();
        for (long long e = rptr[v] + lane; e < rptr[v + 1]; e += 32) {
            D du = d[rsrc[e]];
            if (du == Lim<D>::inf()) continue;
            ++cnt;
            D c = du + (D)rw[e];
            if (c < best) best = c;
        }
        for (int off = 16; off > 0; off >>= 1) {
            D o = __shfl_xor_sync(0xffffffffu, best, off);
            if (o < best) best = o;
        }
        if (lane == 0 && best < d[v]) { d[v] = best; any = true; }
    }
    if (any) changed[it] = 1;
    add_count(relax, cnt);
}

// ELL: K slots per row, column-major (slot k of row v at k * n + v), padding -1 last.
template <typename W, typename D>
__global__ void spmv_ell(int n, int K, const int* __restrict__ esrc, const W* __restrict__ ew, D* d,
                         int* changed, int it, int prev_ok, unsigned long long* relax) {
    if (!prev_ok || converged_before(changed, it)) return;
    unsigned long long cnt = 0;
    bool any = false;
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        D old = d[v];
        D best = old;
        for (int k = 0; k < K; ++k) {
            long long s = (long long)k * n + v;
            int u = esrc[s];
            if (u < 0) break;
            D du = d[u];
            if (du == Lim<D>::inf()) continue;
            ++cnt;
            D c = du + (D)ew[s];
            if (c < best) best = c;
        }
        if (best < old) { d[v] = best; any = true; }
    }
    if (any) changed[it] = 1;
    add_count(relax, cnt);
}

template <typename D>
__global__ void spmv_init(int n, D* d, int src) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x)
        d[v] = (v == src) ? (D)0 : Lim<D>::inf();
}

#ifdef SSSP_NVCC_CHECK
#define INST(W, D)                                                                                      \
    template __global__ void spmv_scalar<W, D>(int, const long long*, const int*, const W*, D*, int*, int, \
                                               int, unsigned long long*);                                 \
    template __global__ void spmv_vector<W, D>(int, const long long*, const int*, const W*, D*, int*, int, \
                                               int, unsigned long long*);                                 \
    template __global__ void spmv_ell<W, D>(int, int, const int*, const W*, D*, int*, int, int,           \
                                            unsigned long long*);                                         \
    SSSP_COMMON_INST(W, D)
INST(int, int)
INST(int, long long)
INST(long long, long long)
INST(float, float)
INST(double, double)
INST(long long, int)
#define INST2(D)                                                                                        \
    template __global__ void spmv_init<D>(int, D*, int);                                                \
    template __global__ void to_float64<D>(const D*, double*, int);
INST2(int)
INST2(long long)
INST2(float)
INST2(double)
#endif
