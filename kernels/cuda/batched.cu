// Batched multi-source shortest paths: B = 32 * W sources solved together.
//
// Layout: vertex-major.  dist[v * B + s] holds source slot s's distance to v, so one
// vertex's B values are contiguous and a warp reads them coalesced (lane l owns slots
// l, l + 32, ..., l + 32 * (W - 1)).  Two bitmasks per vertex, W words each:
//   pend[v]: (v, s) pairs whose distance changed and that v's out-neighbours have not
//            pulled yet;  imp[v]: pairs improved in the current pull phase.
// A pair is *active* when it is pending and its distance is below the batch threshold
// `thr` (near-far / delta buckets shared by the batch); pending pairs at or above the
// threshold wait ("far") until no active pair is left, then thr = min far + delta.
//
// One cooperative persistent kernel runs the whole batch (grid.sync between phases,
// no host round trip per iteration):
//   A (pull)   warp per vertex v of the Q list (out-neighbours of vertices with active
//              pairs): min over in-arcs (u, w) of dist[u][s] + w for the active (u, s);
//              writes v's own row only (no atomics on distances), sets imp[v].
//   B (update) warp per vertex of the P list (vertices with pending or improved pairs):
//              pend = imp | far part of pend; builds next P list, next Q list (out-
//              neighbours of vertices that keep active pairs), the minimum far distance.
//   C (bucket) only when no pair is active: raise thr and rebuild Q from P.
// Negative weights run with thr = +inf (plain frontier Bellman-Ford), where more than
// n + 4 iterations means a reachable negative cycle (status 1).
// batched_push (integer distances, the default there) replaces A + B by one scatter
// phase per iteration: a warp per changed vertex relaxes its out-arcs with atomicMin.
#ifndef SSSP_CUPY
#include <cstdint>
#endif
// common.cuh: stage_append; pred_init / pred_round (the predecessor tree, built after a
// batch converged, with pred and rank n x B vertex-major like dist)
#include "common.cuh"
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace batched {

template <typename T> struct Lim;
template <> struct Lim<int> {
  __device__ static int inf() { return 2147483647; }
  __device__ static long long key(int v) { return (long long)v; }
  __device__ static int unkey(long long k) { return (int)k; }
  __device__ static int sat_add(int a, int b) {  // b >= 0
    return (a >= 2147483647 - b) ? 2147483647 : a + b;
  }
};
template <> struct Lim<long long> {
  __device__ static long long inf() { return 9223372036854775807LL; }
  __device__ static long long key(long long v) { return v; }
  __device__ static long long unkey(long long k) { return k; }
  __device__ static long long sat_add(long long a, long long b) {
    return (a >= 9223372036854775807LL - b) ? 9223372036854775807LL : a + b;
  }
};
template <> struct Lim<double> {
  __device__ static double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
  // Order-preserving map of doubles to int64 (for atomicMin on a 64-bit integer).
  __device__ static long long key(double v) {
    long long b = __double_as_longlong(v);
    return b >= 0 ? b : (b ^ 0x7fffffffffffffffLL);
  }
  __device__ static double unkey(long long k) {
    return __longlong_as_double(k >= 0 ? k : (k ^ 0x7fffffffffffffffLL));
  }
  __device__ static double sat_add(double a, double b) { return a + b; }
};

__device__ __forceinline__ void atomic_max_ll(long long* p, long long v) {
  atomicMax(p, v);
}
__device__ __forceinline__ void atomic_max_d(double* p, double v) {
  unsigned long long* a = (unsigned long long*)p;
  unsigned long long old = *a;
  while (__longlong_as_double((long long)old) < v) {
    unsigned long long prev = atomicCAS(a, old, (unsigned long long)__double_as_longlong(v));
    if (prev == old) break;
    old = prev;
  }
}

// Control block (int32): [0..1] A counts (vertices to settle), [2..3] Q counts (vertices
// to pull), [4..6] F counts (far list, one slot per bucket generation mod 3), [7]
// iterations run, [8] status (0 done, 1 iteration cap hit), [9] bucket advances,
// [10] largest Q, [11] largest A, [12..14] list counts of the push and pairs kernels
// (rotating: slot it % 3 is read, (it + 1) % 3 appended to, (it + 2) % 3 reset).
// ll (int64): [0..2] smallest far distance (ordered key) per generation slot,
// [3] sum of Q sizes, [4] sum of A sizes, [5] sum of F scans.
enum { C_A = 0, C_Q = 2, C_F = 4, C_ITERS = 7, C_STATUS = 8, C_BUCKETS = 9, C_MAXQ = 10,
       C_MAXA = 11, C_R = 12, C_SIZE = 16 };
enum { L_MF = 0, L_SUMQ = 3, L_SUMA = 4, L_SUMF = 5, L_SIZE = 8 };
#define LL_MAX 9223372036854775807LL
#define FULL 0xffffffffu
#define MAX_B 1024

// Append `v` to list[*count] once per stamp (warp-aggregated append); whole warp calls.
__device__ __forceinline__ void mark(int v, int stamp, int* qstamp, int* qlist, int* qcount,
                                     bool want) {
  bool fresh = false;
  if (want) fresh = (atomicExch(&qstamp[v], stamp) != stamp);
  const unsigned b = __ballot_sync(FULL, fresh);
  if (b == 0) return;
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(b) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(qcount, __popc(b));
  base = __shfl_sync(FULL, base, leader);
  if (fresh) qlist[base + __popc(b & ((1u << lane) - 1))] = v;
}

__device__ __forceinline__ void mark_out_neighbours(int u, int stamp, const int* __restrict__ optr,
                                                    const int* __restrict__ oidx, int* qstamp,
                                                    int* qlist, int* qcount) {
  const int lane = threadIdx.x & 31;
  const int e0 = optr[u], e1 = optr[u + 1];
  for (int base = e0; base < e1; base += 32) {
    const int e = base + lane;
    const bool ok = e < e1;
    mark(ok ? oidx[e] : 0, stamp, qstamp, qlist, qcount, ok);
  }
}

template <typename T>
__device__ __forceinline__ long long warp_min_key(T x) {
  long long k = Lim<T>::key(x);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const long long o = __shfl_xor_sync(FULL, k, off);
    k = o < k ? o : k;
  }
  return k;
}

template <typename T, int W>
__global__ void __launch_bounds__(256)
batched_solve(int n, int B, const int* __restrict__ optr, const int* __restrict__ oidx,
              const int* __restrict__ rptr, const int* __restrict__ ridx,
              const T* __restrict__ rw, T* dist, unsigned* pend, unsigned* imp,
              unsigned char* inF, int* qstamp, int* astamp, int* alist0, int* alist1,
              int* qlist0, int* qlist1, int* flist0, int* flist1, int* ctl, long long* ll,
              T thr0, T delta, int maxit, unsigned long long* relax_out,
              const long long* __restrict__ outrow) {
  cg::grid_group grid = cg::this_grid();
  __shared__ unsigned long long scnt[MAX_B];
  for (int s = threadIdx.x; s < B; s += blockDim.x) scnt[s] = 0ull;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int gwarp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int nwarps = (int)((gridDim.x * blockDim.x) >> 5);
  const bool leader = (blockIdx.x == 0 && threadIdx.x == 0);
  const T INF = Lim<T>::inf();

  T thr = thr0;
  int it = 0, g = 0;
  int maxq = 0, maxa = 0, status = 0;
  long long sumq = 0, suma = 0, sumf = 0;
  while (true) {
    const int cur = it & 1, nxt = cur ^ 1;
    int* const al_cur = cur ? alist1 : alist0;
    int* const al_nxt = cur ? alist0 : alist1;
    int* const ql_cur = cur ? qlist1 : qlist0;
    int* const ql_nxt = cur ? qlist0 : qlist1;
    if (leader) {
      ctl[C_A + nxt] = 0;
      ctl[C_Q + nxt] = 0;
    }
    // ---------------- A: pull into every vertex of Q[cur]; only active (u, s) pairs
    const int nq = ctl[C_Q + cur];
    if (nq > maxq) maxq = nq;
    sumq += nq;
    for (int i = gwarp; i < nq; i += nwarps) {
      const int v = ql_cur[i];
      const int e0 = rptr[v], e1 = rptr[v + 1];
      bool anyimp = false;
      for (int base = e0; base < e1; base += 32) {
        const int cnt = min(32, e1 - base);
        int myu = 0;
        T myw = T(0);
        if (lane < cnt) { myu = ridx[base + lane]; myw = rw[base + lane]; }
        const int npairs = cnt * W;  // (in-arc k, word j) pairs, j-major: t = j * cnt + k
        int curj = -1;
        T best = INF;
        unsigned c = 0;
        auto flush = [&](int j) {
          bool better = false;
          if (best < INF) {
            const size_t at = (size_t)v * B + j * 32 + lane;
            if (best < dist[at]) { dist[at] = best; better = true; }
          }
          const unsigned m = __ballot_sync(FULL, better);
          if (m != 0u && lane == 0) imp[(size_t)v * W + j] |= m;
          anyimp |= (m != 0u);
          if (c) atomicAdd(&scnt[j * 32 + lane], (unsigned long long)c);
        };
        for (int r = 0; r < npairs; r += 32) {
          const int t = r + lane;
          const bool ok = t < npairs;
          const int k = ok ? t % cnt : 0;
          const int j = ok ? t / cnt : 0;
          const int uk = __shfl_sync(FULL, myu, k);
          const unsigned pm = ok ? pend[(size_t)uk * W + j] : 0u;
          unsigned nz = __ballot_sync(FULL, pm != 0u);
          while (nz) {
            const int b = __ffs(nz) - 1;
            nz &= nz - 1;
            const int tt = r + b;
            const int kk = tt % cnt, jj = tt / cnt;
            const unsigned pmb = __shfl_sync(FULL, pm, b);
            const int u = __shfl_sync(FULL, myu, kk);
            const T w = __shfl_sync(FULL, myw, kk);
            if (jj != curj) {
              if (curj >= 0) flush(curj);
              curj = jj;
              best = INF;
              c = 0;
            }
            if ((pmb >> lane) & 1u) {
              const T du = dist[(size_t)u * B + jj * 32 + lane];
              if (du < thr) {
                ++c;
                const T cand = du + w;
                if (cand < best) best = cand;
              }
            }
          }
        }
        if (curj >= 0) flush(curj);
      }
      if (anyimp && lane == 0 && astamp[v] != it) {
        astamp[v] = it;
        al_cur[atomicAdd(&ctl[C_A + cur], 1)] = v;
      }
    }
    grid.sync();
    // ---------------- B: settle the pairs of A[cur]: consumed active bits cleared,
    // improved bits pending; vertices keeping active pairs -> A[nxt] and their
    // out-neighbours -> Q[nxt]; vertices with far pairs -> F.
    const int na = ctl[C_A + cur];
    if (na > maxa) maxa = na;
    suma += na;
    {
      int* const fl = (g & 1) ? flist1 : flist0;
      int* const fc = &ctl[C_F + g % 3];
      long long* const mf = &ll[L_MF + g % 3];
      for (int i = gwarp; i < na; i += nwarps) {
        const int u = al_cur[i];
        unsigned imv = 0u, pmv = 0u;
        if (lane < W) { imv = imp[(size_t)u * W + lane]; pmv = pend[(size_t)u * W + lane]; }
        unsigned nz = __ballot_sync(FULL, (imv | pmv) != 0u);
        bool anya = false, anyf = false;
        T fmin = INF;
        while (nz) {
          const int j = __ffs(nz) - 1;
          nz &= nz - 1;
          const unsigned im = __shfl_sync(FULL, imv, j);
          const unsigned pm = __shfl_sync(FULL, pmv, j);
          const bool mine = ((im | pm) >> lane) & 1u;
          T d = INF;
          if (mine) d = dist[(size_t)u * B + j * 32 + lane];
          const bool far = !(d < thr);
          const bool keep = ((im >> lane) & 1u) || (((pm >> lane) & 1u) && far);
          const unsigned newp = __ballot_sync(FULL, keep);
          const unsigned act = __ballot_sync(FULL, keep && !far);
          const unsigned fb = __ballot_sync(FULL, keep && far);
          if (keep && far && d < fmin) fmin = d;
          if (lane == 0) {
            if (newp != pm) pend[(size_t)u * W + j] = newp;
            if (im) imp[(size_t)u * W + j] = 0u;
          }
          anya |= (act != 0u);
          anyf |= (fb != 0u);
        }
        if (anya) {
          mark_out_neighbours(u, it + 1, optr, oidx, qstamp, ql_nxt, &ctl[C_Q + nxt]);
          if (lane == 0) {
            astamp[u] = it + 1;
            al_nxt[atomicAdd(&ctl[C_A + nxt], 1)] = u;
          }
        }
        if (anyf) {
          const long long k = warp_min_key<T>(fmin);
          if (lane == 0) {
            if (!inF[u]) { inF[u] = 1; fl[atomicAdd(fc, 1)] = u; }
            if (k < *((volatile long long*)mf)) atomicMin(mf, k);
          }
        }
      }
    }
    grid.sync();
    bool done = false;
    if (ctl[C_A + nxt] == 0) {
      // ---------------- C: nothing active: next bucket from the far list
      while (true) {
        // every thread has read the count that brought it here before any thread
        // appends to that list again
        grid.sync();
        const int nf = ctl[C_F + g % 3];
        if (nf == 0) { done = true; break; }
        const long long mk = ll[L_MF + g % 3];
        if (mk != LL_MAX) {
          const T nt = Lim<T>::sat_add(Lim<T>::unkey(mk), delta);
          if (thr < nt) thr = nt;
        }
        if (leader) {
          ctl[C_F + (g + 2) % 3] = 0;
          ll[L_MF + (g + 2) % 3] = LL_MAX;
        }
        sumf += nf;
        int* const fl = (g & 1) ? flist1 : flist0;
        int* const fl2 = (g & 1) ? flist0 : flist1;
        int* const fc2 = &ctl[C_F + (g + 1) % 3];
        long long* const mf2 = &ll[L_MF + (g + 1) % 3];
        for (int i = gwarp; i < nf; i += nwarps) {
          const int u = fl[i];
          unsigned pmv = 0u;
          if (lane < W) pmv = pend[(size_t)u * W + lane];
          unsigned nz = __ballot_sync(FULL, pmv != 0u);
          bool anya = false, anyf = false;
          T fmin = INF;
          while (nz) {
            const int j = __ffs(nz) - 1;
            nz &= nz - 1;
            const unsigned pm = __shfl_sync(FULL, pmv, j);
            const bool mine = (pm >> lane) & 1u;
            T d = INF;
            if (mine) d = dist[(size_t)u * B + j * 32 + lane];
            const bool a = mine && d < thr;
            const bool f = mine && !(d < thr);
            if (f && d < fmin) fmin = d;
            anya |= (__ballot_sync(FULL, a) != 0u);
            anyf |= (__ballot_sync(FULL, f) != 0u);
          }
          if (anya) {
            mark_out_neighbours(u, it + 1, optr, oidx, qstamp, ql_nxt, &ctl[C_Q + nxt]);
            if (lane == 0) {
              astamp[u] = it + 1;
              al_nxt[atomicAdd(&ctl[C_A + nxt], 1)] = u;
            }
          }
          if (anyf) {
            const long long k = warp_min_key<T>(fmin);
            if (lane == 0) {
              fl2[atomicAdd(fc2, 1)] = u;
              if (k < *((volatile long long*)mf2)) atomicMin(mf2, k);
            }
          } else if (lane == 0) {
            inF[u] = 0;
          }
        }
        grid.sync();
        ++g;
        if (ctl[C_A + nxt] > 0) break;
      }
    }
    if (done) break;
    if (it + 1 >= maxit) { status = 1; break; }
    ++it;
  }
  if (leader) {
    ctl[C_ITERS] = it + 1;
    ctl[C_STATUS] = status;
    ctl[C_BUCKETS] = g;
    ctl[C_MAXQ] = maxq;
    ctl[C_MAXA] = maxa;
    ll[L_SUMQ] = sumq;
    ll[L_SUMA] = suma;
    ll[L_SUMF] = sumf;
  }
  __syncthreads();
  for (int s = threadIdx.x; s < B; s += blockDim.x) {
    const unsigned long long c = scnt[s];
    if (c && outrow[s] >= 0) atomicAdd(&relax_out[outrow[s]], c);
  }
}

// Push variant (integer distances): one phase per iteration.  A warp per vertex u of
// A[cur] takes its improved bits (atomicExch, so bits set meanwhile are kept for the
// next round), keeps the far ones pending, and for every active pair relaxes the
// out-arcs with atomicMin on the head's slot; heads that improved get their imp bit
// (atomicOr) and join A[nxt] once (stamp).  No Q list, no settle phase.
template <typename T>
__device__ __forceinline__ T atomic_min_t(T* p, T v);
template <>
__device__ __forceinline__ int atomic_min_t<int>(int* p, int v) { return atomicMin(p, v); }
template <>
__device__ __forceinline__ long long atomic_min_t<long long>(long long* p, long long v) {
  return atomicMin(p, v);
}

template <typename T, int W>
__global__ void __launch_bounds__(256, 4)
batched_push(int n, int B, const int* __restrict__ optr, const int* __restrict__ oidx,
             const T* __restrict__ ow, T* dist, unsigned* pend, unsigned* imp,
             unsigned char* inF, int* astamp, int* alist0, int* alist1, int* flist0,
             int* flist1, int* ctl, long long* ll, T thr0, T delta, int maxit,
             unsigned long long* relax_out, const long long* __restrict__ outrow) {
  cg::grid_group grid = cg::this_grid();
  __shared__ unsigned long long scnt[MAX_B];
  for (int s = threadIdx.x; s < B; s += blockDim.x) scnt[s] = 0ull;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int gwarp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int nwarps = (int)((gridDim.x * blockDim.x) >> 5);
  const bool leader = (blockIdx.x == 0 && threadIdx.x == 0);
  const T INF = Lim<T>::inf();

  T thr = thr0;
  int it = 0, g = 0;
  int maxa = 0, status = 0;
  long long suma = 0, sumf = 0;
  while (true) {
    const int cur = it & 1;
    int* const al_cur = cur ? alist1 : alist0;
    int* const al_nxt = cur ? alist0 : alist1;
    int* const cn = &ctl[C_R + (it + 1) % 3];
    if (leader) ctl[C_R + (it + 2) % 3] = 0;
    const int na = *((volatile int*)&ctl[C_R + it % 3]);
    if (na > maxa) maxa = na;
    suma += na;
    {
      int* const fl = (g & 1) ? flist1 : flist0;
      int* const fc = &ctl[C_F + g % 3];
      long long* const mf = &ll[L_MF + g % 3];
      for (int i = gwarp; i < na; i += nwarps) {
        const int u = al_cur[i];
        unsigned gv = 0u, pv = 0u;
        if (lane < W) {
          gv = atomicExch(&imp[(size_t)u * W + lane], 0u);
          pv = pend[(size_t)u * W + lane];
        }
        unsigned nz = __ballot_sync(FULL, (gv | pv) != 0u);
        bool anyf = false;
        T fmin = INF;
        const int e0 = optr[u], e1 = optr[u + 1];
        while (nz) {
          const int j = __ffs(nz) - 1;
          nz &= nz - 1;
          const unsigned bits = __shfl_sync(FULL, gv | pv, j);
          const unsigned pm = __shfl_sync(FULL, pv, j);
          const bool mine = (bits >> lane) & 1u;
          T d = INF;
          if (mine) d = dist[(size_t)u * B + j * 32 + lane];
          const bool act = mine && d < thr;
          const bool far = mine && !(d < thr);
          const unsigned fm = __ballot_sync(FULL, far);
          if (lane == 0 && fm != pm) pend[(size_t)u * W + j] = fm;
          if (far && d < fmin) fmin = d;
          anyf |= (fm != 0u);
          if (__ballot_sync(FULL, act) == 0u) continue;
          unsigned c = 0;
          for (int base = e0; base < e1; base += 32) {
            const int cnt = min(32, e1 - base);
            int myv = 0;
            T myw = T(0);
            if (lane < cnt) { myv = oidx[base + lane]; myw = ow[base + lane]; }
            for (int k0 = 0; k0 < cnt; k0 += 4) {
              int vq[4];
              bool iq[4];
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                const int k = k0 + q;
                const bool okk = k < cnt;  // uniform
                vq[q] = __shfl_sync(FULL, myv, okk ? k : 0);
                const T w = __shfl_sync(FULL, myw, okk ? k : 0);
                iq[q] = false;
                if (okk && act) {
                  ++c;
                  const T cand = d + w;
                  iq[q] = cand < atomic_min_t<T>(&dist[(size_t)vq[q] * B + j * 32 + lane], cand);
                }
              }
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                const unsigned m = __ballot_sync(FULL, iq[q]);
                if (m != 0u && lane == 0) {
                  const int v = vq[q];
                  atomicOr(&imp[(size_t)v * W + j], m);
                  if (atomicExch(&astamp[v], it + 1) != it + 1)
                    al_nxt[atomicAdd(cn, 1)] = v;
                }
              }
            }
          }
          if (c) atomicAdd(&scnt[j * 32 + lane], (unsigned long long)c);
        }
        if (anyf) {
          const long long k = warp_min_key<T>(fmin);
          if (lane == 0) {
            if (!inF[u]) { inF[u] = 1; fl[atomicAdd(fc, 1)] = u; }
            if (k < *((volatile long long*)mf)) atomicMin(mf, k);
          }
        }
      }
    }
    grid.sync();
    bool done = false;
    if (*((volatile int*)cn) == 0) {
      while (true) {
        // every thread has read the count that brought it here before any thread
        // appends to that list again
        grid.sync();
        const int nf = ctl[C_F + g % 3];
        if (nf == 0) { done = true; break; }
        const long long mk = ll[L_MF + g % 3];
        if (mk != LL_MAX) {
          const T nt = Lim<T>::sat_add(Lim<T>::unkey(mk), delta);
          if (thr < nt) thr = nt;
        }
        if (leader) {
          ctl[C_F + (g + 2) % 3] = 0;
          ll[L_MF + (g + 2) % 3] = LL_MAX;
        }
        sumf += nf;
        int* const fl = (g & 1) ? flist1 : flist0;
        int* const fl2 = (g & 1) ? flist0 : flist1;
        int* const fc2 = &ctl[C_F + (g + 1) % 3];
        long long* const mf2 = &ll[L_MF + (g + 1) % 3];
        for (int i = gwarp; i < nf; i += nwarps) {
          const int u = fl[i];
          unsigned pmv = 0u;
          if (lane < W) pmv = pend[(size_t)u * W + lane];
          unsigned nz = __ballot_sync(FULL, pmv != 0u);
          bool anya = false, anyf = false;
          T fmin = INF;
          while (nz) {
            const int j = __ffs(nz) - 1;
            nz &= nz - 1;
            const unsigned pm = __shfl_sync(FULL, pmv, j);
            const bool mine = (pm >> lane) & 1u;
            T d = INF;
            if (mine) d = dist[(size_t)u * B + j * 32 + lane];
            const bool a = mine && d < thr;
            const bool f = mine && !(d < thr);
            if (f && d < fmin) fmin = d;
            anya |= (__ballot_sync(FULL, a) != 0u);
            anyf |= (__ballot_sync(FULL, f) != 0u);
          }
          if (anya && lane == 0 && astamp[u] != it + 1) {
            astamp[u] = it + 1;
            al_nxt[atomicAdd(cn, 1)] = u;
          }
          if (anyf) {
            const long long k = warp_min_key<T>(fmin);
            if (lane == 0) {
              fl2[atomicAdd(fc2, 1)] = u;
              if (k < *((volatile long long*)mf2)) atomicMin(mf2, k);
            }
          } else if (lane == 0) {
            inF[u] = 0;
          }
        }
        grid.sync();
        ++g;
        if (*((volatile int*)cn) > 0) break;
      }
    }
    if (done) break;
    if (it + 1 >= maxit) { status = 1; break; }
    ++it;
  }
  if (leader) {
    ctl[C_ITERS] = it + 1;
    ctl[C_STATUS] = status;
    ctl[C_BUCKETS] = g;
    ctl[C_MAXQ] = 0;
    ctl[C_MAXA] = maxa;
    ll[L_SUMQ] = 0;
    ll[L_SUMA] = suma;
    ll[L_SUMF] = sumf;
  }
  __syncthreads();
  for (int s = threadIdx.x; s < B; s += blockDim.x) {
    const unsigned long long c = scnt[s];
    if (c && outrow[s] >= 0) atomicAdd(&relax_out[outrow[s]], c);
  }
}

// Pair-parallel variant (integer distances; the default for them): the work list holds
// (vertex, slot) pairs p = v * B + s and a thread owns one pair.  A vertex visited by a
// warp in the push and pull kernels has only a few of its B slots active (waves of
// different sources reach it in different buckets), so most lanes idle and every visit
// is a long chain of dependent loads and atomics; here the chain per pair is short
// (bit clear, distance, arcs, atomicMin, bit set, append) and all pairs of an
// iteration are in flight at once.
//   near lists L0/L1 (parity of the iteration) with bit arrays N0/N1: a pair improved
//     below the threshold joins the next near list once (atomicOr on its bit decides);
//     the thread that processes it clears its bit;
//   far list (generation g, parity g & 1) with bit array F: a pair improved at or above
//     the threshold joins it once; when no near pair is left the far list is scanned:
//     d < old threshold: already handled through a near list, dropped; d < new
//     threshold: moved to the next near list; else kept for the next generation.
// Appends are staged per block in shared memory and copied out with one global
// atomicAdd per block and phase (one list counter per warp step was the bottleneck).
// Out-arcs of a pair whose vertex has more than PAIRS_HEAVY of them are relaxed by the
// whole warp (one such pair at a time), the others by their own thread.
// Counters rotate over three slots (C_R + it % 3): the slot reset in iteration it is
// the one read in iteration it - 1 and first appended to in iteration it + 1.  Every
// pass of the far-list loop starts with a grid barrier, so that all threads have read
// the count that sent them there before any thread appends to that list.
#define PAIRS_HEAVY 32
#ifndef PAIRS_ILP
#define PAIRS_ILP 4
#endif
#define PAIRS_STAGE_A 2048
#define PAIRS_STAGE_B 1024

struct PairStage {
  unsigned a[PAIRS_STAGE_A];  // near list / moved pairs
  unsigned b[PAIRS_STAGE_B];  // far list / kept pairs
  int na, nb;
  int base[4];
  long long kmin;             // smallest far distance staged (ordered key)
};

// Copy both stages of the block to their global lists, fold the staged minimum into
// *mf.  The whole block calls it.
__device__ __forceinline__ void stage_flush(PairStage& st, unsigned* la, int* ca, unsigned* lb,
                                            int* cb, long long* mf) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const int xa = min(st.na, PAIRS_STAGE_A), xb = min(st.nb, PAIRS_STAGE_B);
    st.base[0] = xa > 0 ? atomicAdd(ca, xa) : 0;
    st.base[1] = xa;
    st.base[2] = xb > 0 ? atomicAdd(cb, xb) : 0;
    st.base[3] = xb;
    st.na = 0;
    st.nb = 0;
    if (st.kmin != LL_MAX && st.kmin < *((volatile long long*)mf)) atomicMin(mf, st.kmin);
    st.kmin = LL_MAX;
  }
  __syncthreads();
  for (int t = threadIdx.x; t < st.base[1]; t += blockDim.x) la[st.base[0] + t] = st.a[t];
  for (int t = threadIdx.x; t < st.base[3]; t += blockDim.x) lb[st.base[2] + t] = st.b[t];
}

template <typename T>
__device__ __forceinline__ void stage_min(T x, PairStage& st) {
  const long long k = warp_min_key<T>(x);
  if ((threadIdx.x & 31) == 0 && k != Lim<T>::key(Lim<T>::inf()) && k < st.kmin)
    atomicMin(&st.kmin, k);
}

// Relax arc (u -> v, w) for slot s at distance d; the whole warp calls it.
template <typename T>
__device__ __forceinline__ void pair_relax(bool act, int v, T w, unsigned s, T d, int B, T thr,
                                           T* dist, unsigned* nbits, unsigned* fbits,
                                           PairStage& st, unsigned* nlist, int* ncount,
                                           unsigned* flist, int* fcount, T& fmin) {
  bool nearq = false, farq = false;
  unsigned q = 0u;
  if (act) {
    const T cand = d + w;
    q = (unsigned)v * (unsigned)B + s;
    if (cand < atomic_min_t<T>(&dist[q], cand)) {
      const unsigned bit = 1u << (q & 31u);
      if (cand < thr) {
        nearq = !(atomicOr(&nbits[q >> 5], bit) & bit);
      } else {
        farq = !(atomicOr(&fbits[q >> 5], bit) & bit);
        if (cand < fmin) fmin = cand;
      }
    }
  }
  stage_append(nearq, q, st.a, &st.na, PAIRS_STAGE_A, nlist, ncount);
  stage_append(farq, q, st.b, &st.nb, PAIRS_STAGE_B, flist, fcount);
}

template <typename T, int W>
__global__ void __launch_bounds__(256)
batched_pairs(int n, int B, int logB, const int* __restrict__ optr, const int* __restrict__ oidx,
              const T* __restrict__ ow, T* dist, unsigned* nbit0, unsigned* nbit1,
              unsigned* fbits, unsigned* list0, unsigned* list1, unsigned* flist0,
              unsigned* flist1, int* ctl, long long* ll, T thr0, T delta, int maxit,
              unsigned long long* relax_out, const long long* __restrict__ outrow) {
  cg::grid_group grid = cg::this_grid();
  __shared__ unsigned long long scnt[MAX_B];
  __shared__ PairStage st;
  for (int s = threadIdx.x; s < B; s += blockDim.x) scnt[s] = 0ull;
  if (threadIdx.x == 0) {
    st.na = 0;
    st.nb = 0;
    st.kmin = LL_MAX;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * blockDim.x;
  const bool leader = (blockIdx.x == 0 && threadIdx.x == 0);
  const T INF = Lim<T>::inf();
  const unsigned smask = (unsigned)B - 1u;

  T thr = thr0;
  int it = 0, g = 0;
  int maxa = 0, status = 0;
  long long suma = 0, sumf = 0;
  while (true) {
    const int cur = it & 1;
    const unsigned* const lc = cur ? list1 : list0;
    unsigned* const ln = cur ? list0 : list1;
    unsigned* const bc = cur ? nbit1 : nbit0;
    unsigned* const bn = cur ? nbit0 : nbit1;
    int* const cn = &ctl[C_R + (it + 1) % 3];
    if (leader) ctl[C_R + (it + 2) % 3] = 0;
    const int nc = *((volatile int*)&ctl[C_R + it % 3]);
    if (nc > maxa) maxa = nc;
    suma += nc;
    unsigned* const fl = (g & 1) ? flist1 : flist0;
    int* const fc = &ctl[C_F + g % 3];
    long long* const mf = &ll[L_MF + g % 3];
    T fmin = INF;
    const long long ncr = ((long long)nc + 31) & ~31LL;
    for (long long i = gtid; i < ncr; i += nthreads) {
      const bool ok = i < nc;
      unsigned p = 0u;
      T d = T(0);
      int e0 = 0, e1 = 0;
      if (ok) {
        p = lc[i];
        atomicAnd(&bc[p >> 5], ~(1u << (p & 31u)));
        const int u = (int)(p >> logB);
        d = dist[p];
        e0 = optr[u];
        e1 = optr[u + 1];
        if (e1 > e0) atomicAdd(&scnt[p & smask], (unsigned long long)(e1 - e0));
      }
      const unsigned s = p & smask;
      const bool heavy = (e1 - e0) > PAIRS_HEAVY;
      const int deg = heavy ? 0 : e1 - e0;
      // PAIRS_ILP arcs at a time: their loads, then their atomicMins, then their bit
      // updates are issued back to back, so a thread waits for one round trip per step
      // and group instead of one per arc
      for (int k0 = 0; __any_sync(FULL, k0 < deg); k0 += PAIRS_ILP) {
        unsigned qq[PAIRS_ILP];
        T cq[PAIRS_ILP];
        bool aq[PAIRS_ILP];
#pragma unroll
        for (int j = 0; j < PAIRS_ILP; ++j) {
          aq[j] = k0 + j < deg;
          qq[j] = 0u;
          cq[j] = T(0);
          if (aq[j]) {
            qq[j] = (unsigned)oidx[e0 + k0 + j] * (unsigned)B + s;
            cq[j] = d + ow[e0 + k0 + j];
          }
        }
#pragma unroll
        for (int j = 0; j < PAIRS_ILP; ++j)
          if (aq[j]) aq[j] = cq[j] < atomic_min_t<T>(&dist[qq[j]], cq[j]);
        bool nq[PAIRS_ILP], fq[PAIRS_ILP];
#pragma unroll
        for (int j = 0; j < PAIRS_ILP; ++j) {
          nq[j] = false;
          fq[j] = false;
          if (aq[j]) {
            const unsigned bit = 1u << (qq[j] & 31u);
            if (cq[j] < thr) {
              nq[j] = !(atomicOr(&bn[qq[j] >> 5], bit) & bit);
            } else {
              fq[j] = !(atomicOr(&fbits[qq[j] >> 5], bit) & bit);
              if (cq[j] < fmin) fmin = cq[j];
            }
          }
        }
#pragma unroll
        for (int j = 0; j < PAIRS_ILP; ++j) {
          stage_append(nq[j], qq[j], st.a, &st.na, PAIRS_STAGE_A, ln, cn);
          stage_append(fq[j], qq[j], st.b, &st.nb, PAIRS_STAGE_B, fl, fc);
        }
      }
      unsigned hv = __ballot_sync(FULL, heavy);
      while (hv) {
        const int b = __ffs(hv) - 1;
        hv &= hv - 1u;
        const unsigned pb = __shfl_sync(FULL, p, b);
        const T db = __shfl_sync(FULL, d, b);
        const int h0 = __shfl_sync(FULL, e0, b), h1 = __shfl_sync(FULL, e1, b);
        for (int base = h0; base < h1; base += 32) {
          const int e = base + lane;
          const bool act = e < h1;
          int v = 0;
          T w = T(0);
          if (act) { v = oidx[e]; w = ow[e]; }
          pair_relax<T>(act, v, w, pb & smask, db, B, thr, dist, bn, fbits, st, ln, cn, fl, fc,
                        fmin);
        }
      }
    }
    stage_min<T>(fmin, st);
    stage_flush(st, ln, cn, fl, fc, mf);
    grid.sync();
    bool done = false;
    if (*((volatile int*)cn) == 0) {
      // ---------------- no near pair left: next bucket from the far list
      while (true) {
        grid.sync();  // all threads have read *cn before anyone appends to it again
        const int nf = *((volatile int*)&ctl[C_F + g % 3]);
        if (nf == 0) { done = true; break; }
        const T told = thr;
        const long long mk = *((volatile long long*)&ll[L_MF + g % 3]);
        if (mk != LL_MAX) {
          const T nt = Lim<T>::sat_add(Lim<T>::unkey(mk), delta);
          if (thr < nt) thr = nt;
        }
        if (leader) {
          ctl[C_F + (g + 2) % 3] = 0;
          ll[L_MF + (g + 2) % 3] = LL_MAX;
        }
        sumf += nf;
        const unsigned* const f1 = (g & 1) ? flist1 : flist0;
        unsigned* const f2 = (g & 1) ? flist0 : flist1;
        int* const fc2 = &ctl[C_F + (g + 1) % 3];
        long long* const mf2 = &ll[L_MF + (g + 1) % 3];
        T kmin = INF;
        const long long nfr = ((long long)nf + 31) & ~31LL;
        for (long long i = gtid; i < nfr; i += nthreads) {
          const bool ok = i < nf;
          unsigned p = 0u;
          T d = INF;
          if (ok) { p = f1[i]; d = dist[p]; }
          const bool keep = ok && !(d < thr);
          const bool move = ok && d < thr && !(d < told);
          if (ok && !keep) atomicAnd(&fbits[p >> 5], ~(1u << (p & 31u)));
          if (keep && d < kmin) kmin = d;
          stage_append(move, p, st.a, &st.na, PAIRS_STAGE_A, ln, cn);
          stage_append(keep, p, st.b, &st.nb, PAIRS_STAGE_B, f2, fc2);
        }
        stage_min<T>(kmin, st);
        stage_flush(st, ln, cn, f2, fc2, mf2);
        grid.sync();
        ++g;
        if (*((volatile int*)cn) > 0) break;
      }
    }
    if (done) break;
    if (it + 1 >= maxit) { status = 1; break; }
    ++it;
  }
  if (leader) {
    ctl[C_ITERS] = it + 1;
    ctl[C_STATUS] = status;
    ctl[C_BUCKETS] = g;
    ctl[C_MAXQ] = 0;
    ctl[C_MAXA] = maxa;
    ll[L_SUMQ] = 0;
    ll[L_SUMA] = suma;
    ll[L_SUMF] = sumf;
  }
  __syncthreads();
  for (int s = threadIdx.x; s < B; s += blockDim.x) {
    const unsigned long long c = scnt[s];
    if (c && outrow[s] >= 0) atomicAdd(&relax_out[outrow[s]], c);
  }
}

// Per-source reductions over the n x B distance block: reached, eccentricity and sum
// (int64 for integer types, so exact).  Grid: (vertex chunks, ceil(B / blockDim)).
template <typename T, typename S>
__global__ void batched_reduce(int n, int B, int nb, const T* __restrict__ dist,
                               const long long* __restrict__ outrow,
                               unsigned long long* reached, S* ecc, S* total) {
  const int s = blockIdx.y * blockDim.x + threadIdx.x;
  if (s >= nb) return;
  const long long row = outrow[s];
  if (row < 0) return;
  const T INF = Lim<T>::inf();
  const int per = (n + gridDim.x - 1) / gridDim.x;
  const int v0 = blockIdx.x * per;
  const int v1 = min(n, v0 + per);
  unsigned long long c = 0;
  S sum = 0;
  T mx = T(0);
  bool seen = false;
  for (int v = v0; v < v1; ++v) {
    const T d = dist[(size_t)v * B + s];
    if (d != INF) {
      ++c;
      sum += (S)d;
      if (!seen || d > mx) { mx = d; seen = true; }
    }
  }
  if (c) {
    atomicAdd(&reached[row], c);
    if constexpr (sizeof(S) == 8 && S(0.5) == S(0)) {
      atomicAdd((unsigned long long*)&total[row], (unsigned long long)sum);
    } else {
      atomicAdd((double*)&total[row], (double)sum);
    }
    if constexpr (sizeof(S) == 8 && S(0.5) == S(0)) {
      atomic_max_ll((long long*)&ecc[row], (long long)mx);
    } else {
      atomic_max_d((double*)&ecc[row], (double)mx);
    }
  }
}

// Histogram of every source's finite distances against its own bin edges
// (edges[row * (nbins + 1) + k], increasing); counts[row * nbins + bin].
template <typename T>
__global__ void batched_histogram(int n, int B, int nb, int nbins, const T* __restrict__ dist,
                                  const long long* __restrict__ outrow,
                                  const double* __restrict__ edges,
                                  unsigned long long* counts) {
  const int s = blockIdx.y * blockDim.x + threadIdx.x;
  if (s >= nb) return;
  const long long row = outrow[s];
  if (row < 0) return;
  const T INF = Lim<T>::inf();
  const double* e = edges + row * (nbins + 1);
  const double lo = e[0], hi = e[nbins];
  const int per = (n + gridDim.x - 1) / gridDim.x;
  const int v0 = blockIdx.x * per;
  const int v1 = min(n, v0 + per);
  for (int v = v0; v < v1; ++v) {
    const T d = dist[(size_t)v * B + s];
    if (d == INF) continue;
    const double x = (double)d;
    if (x < lo || x > hi) continue;
    // numpy.histogram: bins half-open except the last, which includes hi
    int a = 0, b = nbins;  // find largest a with e[a] <= x
    while (b - a > 1) {
      const int m = (a + b) >> 1;
      if (e[m] <= x) a = m; else b = m;
    }
    atomicAdd(&counts[row * nbins + a], 1ull);
  }
}

}  // namespace batched

#ifdef SSSP_NVCC_CHECK
#define INST_SOLVE(T, W)                                                                      \
  template __global__ void batched::batched_solve<T, W>(                                      \
      int, int, const int*, const int*, const int*, const int*, const T*, T*, unsigned*,      \
      unsigned*, unsigned char*, int*, int*, int*, int*, int*, int*, int*, int*, int*,        \
      long long*, T, T, int, unsigned long long*, const long long*);
INST_SOLVE(int, 1)
INST_SOLVE(int, 8)
INST_SOLVE(int, 32)
INST_SOLVE(long long, 4)
INST_SOLVE(double, 2)
INST_SOLVE(double, 32)
#define INST_PUSH(T, W)                                                                       \
  template __global__ void batched::batched_push<T, W>(                                       \
      int, int, const int*, const int*, const T*, T*, unsigned*, unsigned*, unsigned char*,   \
      int*, int*, int*, int*, int*, int*, long long*, T, T, int, unsigned long long*,         \
      const long long*);
INST_PUSH(int, 1)
INST_PUSH(int, 16)
INST_PUSH(long long, 32)
#define INST_PAIRS(T, W)                                                                      \
  template __global__ void batched::batched_pairs<T, W>(                                      \
      int, int, int, const int*, const int*, const T*, T*, unsigned*, unsigned*, unsigned*,   \
      unsigned*, unsigned*, unsigned*, unsigned*, int*, long long*, T, T, int,                \
      unsigned long long*, const long long*);
INST_PAIRS(int, 1)
INST_PAIRS(int, 16)
INST_PAIRS(long long, 32)
template __global__ void batched::batched_reduce<int, long long>(int, int, int, const int*,
    const long long*, unsigned long long*, long long*, long long*);
template __global__ void batched::batched_reduce<double, double>(int, int, int, const double*,
    const long long*, unsigned long long*, double*, double*);
template __global__ void batched::batched_histogram<int>(int, int, int, int, const int*,
    const long long*, const double*, unsigned long long*);
#define INST_PRED(T)                                                                          \
  template __global__ void pred_init<T, T, int, int>(int, int, int, const int*, const int*,   \
      const T*, const T*, const long long*, int*, int*, int);                                 \
  template __global__ void pred_round<T, T, int, int>(int, int, int, const int*, const int*,  \
      const T*, const T*, int*, int*, int, int*);
INST_PRED(int)
INST_PRED(long long)
INST_PRED(double)
#endif
