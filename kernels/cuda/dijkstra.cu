// GPU Dijkstra (paper 003): each step extracts the unsettled vertex of least tentative
// distance by a parallel reduction (per-block shared-memory tree over a grid-stride
// scan, then the last block to finish - found with a ticket counter - reduces the block
// minima), settles it and relaxes its out-arcs with the block's threads.  One launch
// per step, no host communication; a launch after the last step returns at once.
// `fin` receives step+1 of the first step that found no reachable unsettled vertex.
#include "common.cuh"

template <typename W, typename D, int TPB>
__global__ void __launch_bounds__(TPB) dij_step(int n, const long long* __restrict__ ptr,
        const int* __restrict__ idx, const W* __restrict__ wt, D* d, unsigned char* done,
        D* pd, int* pv, unsigned* ticket, int* fin, int step, unsigned long long* relax) {
    if (*((volatile int*)fin)) return;
    __shared__ D sd[TPB];
    __shared__ int sv[TPB];
    __shared__ bool last;
    D best = Lim<D>::inf();
    int bv = -1;
    for (int v = blockIdx.x * TPB + threadIdx.x; v < n; v += gridDim.x * TPB) {
        if (done[v]) continue;
        const D x = d[v];
        if (x < best) { best = x; bv = v; }
    }
    sd[threadIdx.x] = best;
    sv[threadIdx.x] = bv;
    __syncthreads();
    for (int s = TPB / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && sd[threadIdx.x + s] < sd[threadIdx.x]) {
            sd[threadIdx.x] = sd[threadIdx.x + s];
            sv[threadIdx.x] = sv[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        pd[blockIdx.x] = sd[0];
        pv[blockIdx.x] = sv[0];
        __threadfence();
        last = (atomicAdd(ticket, 1u) == gridDim.x - 1);
    }
    __syncthreads();
    if (!last) return;
    // the last block: reduce the block minima
    __threadfence();
    best = Lim<D>::inf();
    bv = -1;
    for (int b = threadIdx.x; b < gridDim.x; b += TPB) {
        const D x = ((volatile D*)pd)[b];
        if (x < best) { best = x; bv = ((volatile int*)pv)[b]; }
    }
    sd[threadIdx.x] = best;
    sv[threadIdx.x] = bv;
    __syncthreads();
    for (int s = TPB / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && sd[threadIdx.x + s] < sd[threadIdx.x]) {
            sd[threadIdx.x] = sd[threadIdx.x + s];
            sv[threadIdx.x] = sv[threadIdx.x + s];
        }
        __syncthreads();
    }
    const int u = sv[0];
    const D du = sd[0];
    if (threadIdx.x == 0) *ticket = 0u;
    if (u < 0 || du == Lim<D>::inf()) {
        if (threadIdx.x == 0) *fin = step + 1;
        return;
    }
    if (threadIdx.x == 0) done[u] = 1;
    unsigned long long cnt = 0;
    for (long long e = ptr[u] + threadIdx.x; e < ptr[u + 1]; e += TPB) {
        const int x = idx[e];
        ++cnt;
        if (done[x]) continue;
        const D c = du + (D)wt[e];
        if (c < d[x]) atomic_min(d + x, c);
    }
    if (relax != nullptr) add_count(relax, cnt);
}

template <typename D>
__global__ void dij_init(int n, D* __restrict__ d, unsigned char* __restrict__ done, unsigned* ticket,
                         int* fin, int src) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        d[v] = (v == src) ? (D)0 : Lim<D>::inf();
        done[v] = 0;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *ticket = 0u;
        *fin = 0;
    }
}

#ifdef SSSP_NVCC_CHECK
#define DIJ_INST(W, D, T)                                                                              \
    template __global__ void dij_step<W, D, T>(int, const long long*, const int*, const W*, D*,          \
                                               unsigned char*, D*, int*, unsigned*, int*, int,           \
                                               unsigned long long*);
#define DIJ_ALL(W, D) DIJ_INST(W, D, 128) DIJ_INST(W, D, 256) DIJ_INST(W, D, 512) DIJ_INST(W, D, 1024) \
    template __global__ void dij_init<D>(int, D*, unsigned char*, unsigned*, int*, int);                \
    SSSP_COMMON_INST(W, D)
DIJ_ALL(int, int)
DIJ_ALL(long long, long long)
DIJ_ALL(float, float)
DIJ_ALL(double, double)
#endif
