// Queue-driven Bellman-Ford (paper 003): every block owns a queue of updated vertices
// (vertex x belongs to block x % nb).  In iteration `it` block b takes the vertices of
// its input queue, clears their queued mark, reads their distance and relaxes their
// out-arcs; an improved vertex whose mark was clear is appended to its owner's output
// queue.  Queue sizes stay on the device (three rotating count rows: input it % 3,
// output (it + 1) % 3, row (it + 2) % 3 reset for the next iteration), so the host
// launches iterations without reading them.  A vertex is at most once in a queue, so a
// block's queue needs ceil(n / nb) slots.
#include "common.cuh"

template <typename W, typename D>
__global__ void qbf_step(int n, int nb, int cap, const long long* __restrict__ ptr, const int* __restrict__ idx,
                         const W* __restrict__ wt, D* d, const int* __restrict__ qin, int* __restrict__ qout,
                         int* cnt, int* mark, int it, unsigned long long* relax) {
    const int b = blockIdx.x;
    const int nin = *((volatile int*)&cnt[(it % 3) * nb + b]);
    int* cout = cnt + ((it + 1) % 3) * nb;
    if (threadIdx.x == 0) cnt[((it + 2) % 3) * nb + b] = 0;
    unsigned long long work = 0;
    for (int i = threadIdx.x; i < nin; i += blockDim.x) {
        const int u = qin[(long long)b * cap + i];
        atomicExch(mark + u, 0);
        __threadfence();
        const D du = *((volatile D*)(d + u));
        const long long e1 = ptr[u + 1];
        for (long long e = ptr[u]; e < e1; ++e) {
            ++work;
            const int x = idx[e];
            const D c = du + (D)wt[e];
            if (c < *((volatile D*)(d + x))) {
                const D old = atomic_min(d + x, c);
                if (old > c) {
                    __threadfence();
                    if (atomicExch(mark + x, 1) == 0) {
                        const int ob = x % nb;
                        const int p = atomicAdd(cout + ob, 1);
                        qout[(long long)ob * cap + p] = x;
                    }
                }
            }
        }
    }
    if (relax != nullptr) add_count(relax, work);
}

template <typename D>
__global__ void qbf_init(int n, int nb, int cap, D* __restrict__ d, int* __restrict__ mark, int* __restrict__ q,
                         int* __restrict__ cnt, int src) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        d[v] = (v == src) ? (D)0 : Lim<D>::inf();
        mark[v] = (v == src);
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 3 * nb; i += gridDim.x * blockDim.x)
        cnt[i] = (i == src % nb) ? 1 : 0;
    if (blockIdx.x == 0 && threadIdx.x == 0) q[(long long)(src % nb) * cap] = src;
}

#ifdef SSSP_NVCC_CHECK
#define QBF_INST(W, D)                                                                                 \
    template __global__ void qbf_step<W, D>(int, int, int, const long long*, const int*, const W*, D*,   \
                                            const int*, int*, int*, int*, int, unsigned long long*);     \
    template __global__ void qbf_init<D>(int, int, int, D*, int*, int*, int*, int);                      \
    SSSP_COMMON_INST(W, D)
QBF_INST(int, int)
QBF_INST(long long, long long)
QBF_INST(float, float)
QBF_INST(double, double)
#endif
