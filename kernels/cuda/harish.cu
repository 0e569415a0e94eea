// Harish & Narayanan (HiPC 2007) Bellman-Ford on CSR, kept faithful as the baseline:
// a thread per vertex, a mask array, the cost array C and the updating-cost array U,
// two kernels per iteration and a flag the host reads after every iteration.
#include "common.cuh"

// Kernel 1: every masked vertex relaxes its out-arcs into U.
template <typename W, typename D>
__global__ void harish_k1(int n, const long long* __restrict__ ptr, const int* __restrict__ idx,
                          const W* __restrict__ wt, unsigned char* __restrict__ mask,
                          const D* __restrict__ C, D* __restrict__ U, unsigned long long* relax) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n || !mask[v]) return;
    mask[v] = 0;
    D cv = C[v];
    unsigned long long cnt = 0;
    for (long long e = ptr[v]; e < ptr[v + 1]; ++e) {
        atomic_min(&U[idx[e]], (D)(cv + (D)wt[e]));
        ++cnt;
    }
    add_count(relax, cnt);
}

// Kernel 2: take the improvements, re-mask improved vertices, raise the flag.
template <typename D>
__global__ void harish_k2(int n, unsigned char* __restrict__ mask, D* __restrict__ C, D* __restrict__ U,
                          int* __restrict__ flag) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    if (C[v] > U[v]) {
        C[v] = U[v];
        mask[v] = 1;
        *flag = 1;
    }
    U[v] = C[v];
}

template <typename D>
__global__ void harish_init(int n, unsigned char* __restrict__ mask, D* __restrict__ C, D* __restrict__ U,
                            int src) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        D x = (v == src) ? (D)0 : Lim<D>::inf();
        C[v] = x;
        U[v] = x;
        mask[v] = (v == src);
    }
}

#ifdef SSSP_NVCC_CHECK
#define INST(W, D)                                                                                   \
    template __global__ void harish_k1<W, D>(int, const long long*, const int*, const W*, unsigned char*, \
                                             const D*, D*, unsigned long long*);                     \
    SSSP_COMMON_INST(W, D)
INST(int, int)
INST(int, long long)
INST(long long, long long)
INST(float, float)
INST(double, double)
INST(long long, int)
#define INST2(D)                                                                                     \
    template __global__ void harish_k2<D>(int, unsigned char*, D*, D*, int*);                        \
    template __global__ void harish_init<D>(int, unsigned char*, D*, D*, int);                       \
    template __global__ void to_float64<D>(const D*, double*, int);
INST2(int)
INST2(long long)
INST2(float)
INST2(double)
#endif
