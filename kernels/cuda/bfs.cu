// Level-synchronous BFS (paper 002): one launch per level, a thread per frontier vertex,
// a vertex claimed once with atomicCAS on its level.  Three queue disciplines for the
// next frontier:
//   VARIANT 0 (naive)        one global atomicAdd per discovered vertex;
//   VARIANT 1 (blocked)      a shared-memory block queue (shared atomics), flushed to the
//                            global queue with one atomicAdd per block and coalesced stores;
//   VARIANT 2 (hierarchical) per-warp shared sub-queues filled with warp-aggregated
//                            atomics, combined per block, one global atomicAdd per block.
// A full shared queue overflows to the global queue directly.  The frontier size lives on
// the device (three rotating counters: input cnt[L%3], output cnt[(L+1)%3], and
// cnt[(L+2)%3] reset for the next level), so the host launches levels without reading it.
#include "common.cuh"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define BFS_BLOCK 256
#define BFS_BQ 2048
#define BFS_WQ 128

template <int VARIANT>
__global__ void __launch_bounds__(BFS_BLOCK) bfs_level(const long long* __restrict__ ptr,
        const int* __restrict__ idx, int* __restrict__ level, const int* __restrict__ qin,
        int* __restrict__ qout, int* cnt, int L, unsigned long long* relax) {
    const int nin = *((volatile int*)&cnt[L % 3]);
    int* cout = &cnt[(L + 1) % 3];
    if (blockIdx.x == 0 && threadIdx.x == 0) cnt[(L + 2) % 3] = 0;
    if (nin == 0) return;  // uniform over the grid
    __shared__ int sq[VARIANT == 2 ? (BFS_BLOCK / 32) * BFS_WQ : BFS_BQ];
    __shared__ int scount[BFS_BLOCK / 32];
    __shared__ int sbase[BFS_BLOCK / 32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (VARIANT == 1 && threadIdx.x == 0) scount[0] = 0;
    if (VARIANT == 2 && lane == 0) scount[warp] = 0;
    __syncthreads();
    unsigned long long work = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nin; i += gridDim.x * blockDim.x) {
        const int u = qin[i];
        const long long e1 = ptr[u + 1];
        for (long long e = ptr[u]; e < e1; ++e) {
            ++work;
            const int x = idx[e];
            if (level[x] != -1 || atomicCAS(&level[x], -1, L + 1) != -1) continue;
            if (VARIANT == 0) {
                qout[atomicAdd(cout, 1)] = x;
            } else if (VARIANT == 1) {
                const int p = atomicAdd(&scount[0], 1);
                if (p < BFS_BQ) sq[p] = x;
                else qout[atomicAdd(cout, 1)] = x;
            } else {
                cg::coalesced_group g = cg::coalesced_threads();
                int base = 0;
                if (g.thread_rank() == 0) base = atomicAdd(&scount[warp], (int)g.size());
                base = g.shfl(base, 0) + (int)g.thread_rank();
                if (base < BFS_WQ) sq[warp * BFS_WQ + base] = x;
                else qout[atomicAdd(cout, 1)] = x;
            }
        }
    }
    if (relax != nullptr) add_count(relax, work);
    if (VARIANT == 0) return;
    __syncthreads();
    if (VARIANT == 1) {
        const int c = min(scount[0], BFS_BQ);
        if (threadIdx.x == 0) sbase[0] = c ? atomicAdd(cout, c) : 0;
        __syncthreads();
        const int b = sbase[0];
        for (int j = threadIdx.x; j < c; j += blockDim.x) qout[b + j] = sq[j];
    } else {
        if (threadIdx.x == 0) {
            int tot = 0;
            for (int w = 0; w < BFS_BLOCK / 32; ++w) {
                const int c = min(scount[w], BFS_WQ);
                sbase[w] = tot;
                tot += c;
            }
            const int g = tot ? atomicAdd(cout, tot) : 0;
            for (int w = 0; w < BFS_BLOCK / 32; ++w) sbase[w] += g;
        }
        __syncthreads();
        // each warp copies its own sub-queue (coalesced)
        const int c = min(scount[warp], BFS_WQ);
        for (int j = lane; j < c; j += 32) qout[sbase[warp] + j] = sq[warp * BFS_WQ + j];
    }
}

extern "C" __global__ void bfs_init(int n, int* __restrict__ level, int* __restrict__ q, int* __restrict__ cnt, int src) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x)
        level[v] = (v == src) ? 0 : -1;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        q[0] = src;
        cnt[0] = 1;
        cnt[1] = 0;
        cnt[2] = 0;
    }
}

// hop levels -> distances (every arc has weight w)
template <typename D>
__global__ void bfs_dist(int n, const int* __restrict__ level, D w, D* __restrict__ d) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        const int l = level[v];
        d[v] = (l < 0) ? Lim<D>::inf() : (D)l * w;
    }
}

#ifdef SSSP_NVCC_CHECK
template __global__ void bfs_level<0>(const long long*, const int*, int*, const int*, int*, int*, int, unsigned long long*);
template __global__ void bfs_level<1>(const long long*, const int*, int*, const int*, int*, int*, int, unsigned long long*);
template __global__ void bfs_level<2>(const long long*, const int*, int*, const int*, int*, int*, int, unsigned long long*);
template __global__ void bfs_dist<int>(int, const int*, int, int*);
template __global__ void bfs_dist<long long>(int, const int*, long long, long long*);
template __global__ void bfs_dist<float>(int, const int*, float, float*);
template __global__ void bfs_dist<double>(int, const int*, double, double*);
SSSP_COMMON_INST(int, int)
SSSP_COMMON_INST(long long, long long)
SSSP_COMMON_INST(float, float)
SSSP_COMMON_INST(double, double)
#endif
