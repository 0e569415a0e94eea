// PHAST on the GPU: a batch of B sources swept through a contraction hierarchy.
//
// Vertices are numbered by "sweep position": positions are sorted by hierarchy level
// (level 0 = top), and inside a level the vertices that have upward in-arcs come first
// (positions [level_ptr[l], up_end[l])).  Labels are vertex-major: the B labels of one
// stored vertex are contiguous (row r holds lab[r * B .. r * B + B)).  Only vertices
// whose label is read again get a row (row[p] >= 0): those with upward in-arcs (their
// upward value) or with downward out-arcs (their final value); every other vertex is
// a "leaf" whose upward value is 0 for its own source and +inf otherwise, computed on
// the fly, and whose final value is only reduced, never stored.  When distances or
// predecessors are asked for, every position has a row (row[p] = p).
//
// One cooperative kernel per batch (phast_sweep):
//   upward phase, SEARCH = true: one warp per lane searches the upward DAG from the
//     lane's source (its search space only, see upward_search) into upd, +inf at rest
//     and put back to rest at the end of the kernel; SEARCH = false: a sweep of the
//     whole upward DAG, levels L-1 .. 0: for each position p with upward in-arcs and lane b,
//     up[p][b] = min(p == src_b ? 0 : inf, min over upward arcs x -> p of up[x][b] + w)
//     (x is lower in the hierarchy, so on a larger level: already final);
//   downward phase, levels 0 .. L-1: d[p][b] = min(up[p][b], min over downward arcs
//     u -> p of d[u][b] + w) (u on a smaller level: already final), stored when p has a
//     row, and reduced at once into the thread's per-lane reached count, eccentricity
//     and exact 64-bit sum;
//   grid.sync() between levels; per-lane totals added with one atomic per thread.
// A thread always serves the same V lanes (the grid's thread count is a multiple of
// B / V), so it keeps its lanes' sources and partial reductions in registers.
//
// Labels are unsigned (16, 32 or 64 bits, the narrowest that holds the distance bound);
// +inf is the all-ones value and additions saturate at it, so a label never wraps.
//
// Travel-time matrices (targets; Delling, Goldberg, Werneck, "Faster Batched Shortest
// Paths in Road Networks", ATMOS 2011: RPHAST):
//   phast_restricted: the upward searches as above, then the downward sweep over the
//     selected rows only (the targets' upward closure in the downward DAG, chosen once
//     per target set on the host); row r stands for position sel_pos[r], its upward
//     value is upd[sel_pos[r]] (0 for the lane's source, +inf outside its search space)
//     and its downward arcs come from selected rows of earlier levels only;
//   phast_matrix: the target rows of the labels, transposed through shared memory into
//     the (lanes x targets) float64 matrix, optionally reduced per lane over the
//     targets marked first (each distinct target once).
//
// Predecessors (phast_pred_strict / phast_pred_zero, plain kernels, graph order over
// the original in-arcs): a vertex first takes a tight in-arc from a strictly closer
// vertex (distances fall along such arcs: no cycle); a vertex that has none (reached
// only through zero-weight arcs) takes, in round r = 1, 2, ..., a tight zero-weight
// in-arc from a vertex resolved in an earlier round, so (distance, round) falls
// strictly along every chosen arc and the chosen arcs form a tree rooted at the source.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

namespace phast {

typedef unsigned long long u64;

template <typename T> __device__ __forceinline__ T inf_of() { return (T)~(T)0; }

// a + w saturated at +inf (a may be +inf; w < +inf)
template <typename T> __device__ __forceinline__ T sat_add(T a, T w) {
  const T lim = (T)(inf_of<T>() - w);
  return a > lim ? inf_of<T>() : (T)(a + w);
}

template <typename T, int V> struct alignas(sizeof(T) * V) Vec {
  T x[V];
};

template <typename T, int V>
__device__ __forceinline__ Vec<T, V> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, V>*>(p);
}
template <typename T, int V>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, V>& v) {
  *reinterpret_cast<Vec<T, V>*>(p) = v;
}

// The upward search of one lane, by one warp (SEARCH mode): from the source position s
// push d + w along the upward arcs (push_ptr/push_head/push_w, CSR by tail) into upd
// (vertex-major, +inf at rest) level by level from the source's level up to the top;
// a vertex is appended to its level's bucket (bucket[level_ptr[l] ..], count bcount[l]:
// a level's capacity is its size, a vertex enters at most once) when its first push
// finds +inf.  All pushes into level l come from larger levels, finished before it.
// A search space is a few hundred vertices: a warp per source keeps many searches in
// flight, each level separated by a warp barrier only.
__device__ void upward_search(int lane, int B, int s, const int* __restrict__ level_ptr,
                              const int* __restrict__ level_of, const int* __restrict__ push_ptr,
                              const int* __restrict__ push_head, const unsigned* __restrict__ push_w,
                              unsigned* upd, int* bucket, int* bcount) {
  if (s < 0) return;
  const int t = threadIdx.x & 31;
  const int ls = level_of[s];
  if (t == 0) {
    upd[(size_t)s * B + lane] = 0u;
    bucket[level_ptr[ls]] = s;
    bcount[ls] = 1;
  }
  __syncwarp();
  for (int l = ls; l >= 1; --l) {
    const int c = *((volatile int*)(bcount + l));
    const int base = level_ptr[l];
    for (int j = t; j < c; j += 32) {
      const int x = *((volatile int*)(bucket + base + j));
      const unsigned dx = *((volatile unsigned*)(upd + (size_t)x * B + lane));
      const int e1 = push_ptr[x + 1];
      for (int e = push_ptr[x]; e < e1; ++e) {
        const int y = push_head[e];
        const unsigned w = push_w[e];
        const unsigned nd = (dx > 0xFFFFFFFFu - w) ? 0xFFFFFFFFu : dx + w;
        const unsigned old = atomicMin(upd + (size_t)y * B + lane, nd);
        if (old == 0xFFFFFFFFu) {
          const int ly = level_of[y];
          const int at = atomicAdd(bcount + ly, 1);
          bucket[level_ptr[ly] + at] = y;
        }
      }
    }
    __syncwarp();
  }
}

// Back to rest after the downward sweep (by the warp that searched): +inf in every entry
// the lane's search touched, bucket counts 0.
__device__ void search_reset(int lane, int B, int L, const int* __restrict__ level_ptr,
                             unsigned* upd, int* bucket, int* bcount) {
  const int t = threadIdx.x & 31;
  for (int l = 0; l < L; ++l) {
    const int c = *((volatile int*)(bcount + l));
    const int base = level_ptr[l];
    for (int j = t; j < c; j += 32) upd[(size_t)bucket[base + j] * B + lane] = 0xFFFFFFFFu;
  }
  __syncwarp();
  for (int l = t; l < L; l += 32) bcount[l] = 0;
  __syncwarp();
}

// One batch: both sweeps and the per-lane reductions.
//   L, level_ptr[L+1], up_end[L]        levels and their upward-phase ranges
//   up_ptr[n+1], up_src[], up_w[]        upward arcs INTO each position (pull form);
//                                         up_src >= 0: the tail's row (it stores an
//                                         upward value), < 0: -(tail position) - 1 (a
//                                         leaf: 0 for its own source only)
//   dn_ptr[n+1], dn_src[], dn_w[]        downward arcs into each position; dn_src = row
//   row[n]                               row of each position or -1
//   src_pos[B]                           each lane's source position (-1: idle lane)
//   G                                    lane groups, B / V (a power of two up to 256 or a
//                                         multiple of 256: the grid's thread count is a
//                                         multiple of G, so a thread's group is fixed)
//   reached, ecc, total [B]              per-lane results (added / max-ed atomically)
template <typename T, int V, bool SEARCH>
__global__ void __launch_bounds__(256) phast_sweep(
    int L, int B, int G, const int* __restrict__ level_ptr, const int* __restrict__ up_end,
    const int* __restrict__ up_ptr, const int* __restrict__ up_src, const T* __restrict__ up_w,
    const int* __restrict__ dn_ptr, const int* __restrict__ dn_src, const T* __restrict__ dn_w,
    const int* __restrict__ row, const int* __restrict__ src_pos, T* lab,
    u64* __restrict__ reached, u64* __restrict__ ecc, u64* __restrict__ total,
    const int* __restrict__ level_of, const int* __restrict__ push_ptr,
    const int* __restrict__ push_head, const unsigned* __restrict__ push_w, unsigned* upd,
    int* bucket, int* bcount) {
  cg::grid_group grid = cg::this_grid();
  const long long nthreads = (long long)gridDim.x * blockDim.x;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  // this thread's lane group g, fixed (nthreads % G == 0), and its first vertex offset
  // j0 and stride: the (vertex, group) items i = j * G + g of a level, i = tid + k *
  // nthreads, are the vertices j = j0 + k * jstep
  const int g = (int)(tid % G);
  const long long j0 = tid / G, jstep = nthreads / G;
  const int lane0 = g * V;
  const T INF = inf_of<T>();
  int sp[V];
#pragma unroll
  for (int k = 0; k < V; ++k) sp[k] = src_pos[lane0 + k];

  // ---------------------------------------------------------------- upward phase
  const int warps = (int)(nthreads >> 5);
  const int warp = (int)(tid >> 5);
  if (SEARCH) {
    const int n = level_ptr[L];
    for (int lane = warp; lane < B; lane += warps)
      upward_search(lane, B, src_pos[lane], level_ptr, level_of, push_ptr, push_head, push_w, upd,
                    bucket + (size_t)lane * n, bcount + (size_t)lane * L);
    grid.sync();
  }
  for (int l = SEARCH ? -1 : L - 1; l >= 0; --l) {
    const int a = level_ptr[l];
    const long long cnt_l = up_end[l] - a;
    for (long long j = j0; j < cnt_l; j += jstep) {
      const int p = a + (int)j;
      Vec<T, V> d;
#pragma unroll
      for (int k = 0; k < V; ++k) d.x[k] = (sp[k] == p) ? (T)0 : INF;
      const int e1 = up_ptr[p + 1];
      for (int e = up_ptr[p]; e < e1; ++e) {
        const int s = up_src[e];
        const T w = up_w[e];
        if (s >= 0) {
          const Vec<T, V> u = load_vec<T, V>(lab + (size_t)s * B + lane0);
#pragma unroll
          for (int k = 0; k < V; ++k) d.x[k] = min(d.x[k], sat_add<T>(u.x[k], w));
        } else {
          const int x = -s - 1;
#pragma unroll
          for (int k = 0; k < V; ++k)
            if (sp[k] == x) d.x[k] = min(d.x[k], w);
        }
      }
      store_vec<T, V>(lab + (size_t)row[p] * B + lane0, d);
    }
    grid.sync();
  }

  // ---------------------------------------------------------------- downward phase
  unsigned cnt[V];
  T mx[V];
  u64 sum[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    cnt[k] = 0;
    mx[k] = 0;
    sum[k] = 0;
  }
  for (int l = 0; l < L; ++l) {
    const int a = level_ptr[l];
    const int ue = up_end[l];
    const long long cnt_l = level_ptr[l + 1] - a;
    for (long long j = j0; j < cnt_l; j += jstep) {
      const int p = a + (int)j;
      const int r = row[p];
      Vec<T, V> d;
      if (p < ue) {
        if (SEARCH) {
          const Vec<unsigned, V> u = load_vec<unsigned, V>(upd + (size_t)p * B + lane0);
#pragma unroll
          for (int k = 0; k < V; ++k) d.x[k] = (T)min(u.x[k], (unsigned)INF);
        } else {
          d = load_vec<T, V>(lab + (size_t)r * B + lane0);
        }
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) d.x[k] = (sp[k] == p) ? (T)0 : INF;
      }
      const int e1 = dn_ptr[p + 1];
      for (int e = dn_ptr[p]; e < e1; ++e) {
        const Vec<T, V> u = load_vec<T, V>(lab + (size_t)dn_src[e] * B + lane0);
        const T w = dn_w[e];
#pragma unroll
        for (int k = 0; k < V; ++k) d.x[k] = min(d.x[k], sat_add<T>(u.x[k], w));
      }
      if (r >= 0) store_vec<T, V>(lab + (size_t)r * B + lane0, d);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        if (d.x[k] != INF) {
          cnt[k] += 1;
          mx[k] = max(mx[k], d.x[k]);
          sum[k] += (u64)d.x[k];
        }
      }
    }
    if (l + 1 < L) grid.sync();
  }
  if (SEARCH) {  // every read of upd is done: put the touched entries back to +inf
    grid.sync();
    const int n = level_ptr[L];
    for (int lane = warp; lane < B; lane += warps)
      search_reset(lane, B, L, level_ptr, upd, bucket + (size_t)lane * n, bcount + (size_t)lane * L);
  }
#pragma unroll
  for (int k = 0; k < V; ++k) {
    if (cnt[k]) {
      atomicAdd(reached + lane0 + k, (u64)cnt[k]);
      atomicMax(ecc + lane0 + k, (u64)mx[k]);
      atomicAdd(total + lane0 + k, sum[k]);
    }
  }
}

// Labels (full rows: row = position) -> float64 distances (nb, n) in graph order.
template <typename T>
__global__ void phast_distances(int n, int B, int nb, const int* __restrict__ position,
                                const T* __restrict__ lab, double* __restrict__ out) {
  const long long total = (long long)n * nb;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const int b = (int)(t / n);
    const int v = (int)(t - (long long)b * n);
    const T x = lab[(size_t)position[v] * B + b];
    out[t] = (x == inf_of<T>()) ? __longlong_as_double(0x7ff0000000000000LL) : (double)x;
  }
}

// Round 0 of the predecessors: a tight in-arc from a strictly closer vertex.
//   rptr/rsrc/rw: the original graph's in-arcs (reverse CSR, weights in T, clamped at inf)
//   pred[v * B + b] (graph order, vertex-major), stamp: 0 resolved, INT_MAX pending
template <typename T>
__global__ void phast_pred_strict(int n, int B, int nb, const long long* __restrict__ rptr,
                                  const int* __restrict__ rsrc, const T* __restrict__ rw,
                                  const int* __restrict__ position, const T* __restrict__ lab,
                                  const long long* __restrict__ src, int* __restrict__ pred,
                                  int* __restrict__ stamp, int* __restrict__ pending) {
  const long long total = (long long)n * B;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const int v = (int)(t / B);
    const int b = (int)(t - (long long)v * B);
    int p = -1, st = 0;
    if (b < nb) {
      const T dv = lab[(size_t)position[v] * B + b];
      if (dv != inf_of<T>() && (long long)v != src[b]) {
        for (long long e = rptr[v]; e < rptr[v + 1]; ++e) {
          const int u = rsrc[e];
          const T du = lab[(size_t)position[u] * B + b];
          if (du < dv && sat_add<T>(du, rw[e]) == dv) {
            p = u;
            break;
          }
        }
        if (p < 0) {
          st = 0x7fffffff;
          *pending = 1;
        }
      }
    }
    pred[t] = p;
    stamp[t] = st;
  }
}

// Round r >= 1: pending vertices take a tight zero-weight in-arc from a vertex resolved
// in an earlier round (stamp < r).  progress[0] counts the vertices resolved this round,
// progress[1] the ones still pending.
template <typename T>
__global__ void phast_pred_zero(int n, int B, int nb, int r, const long long* __restrict__ rptr,
                                const int* __restrict__ rsrc, const T* __restrict__ rw,
                                const int* __restrict__ position, const T* __restrict__ lab,
                                int* __restrict__ pred, int* __restrict__ stamp,
                                unsigned long long* __restrict__ progress) {
  const long long total = (long long)n * B;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    if (stamp[t] != 0x7fffffff) continue;
    const int v = (int)(t / B);
    const int b = (int)(t - (long long)v * B);
    const T dv = lab[(size_t)position[v] * B + b];
    bool done = false;
    for (long long e = rptr[v]; e < rptr[v + 1]; ++e) {
      if (rw[e] != (T)0) continue;
      const int u = rsrc[e];
      const size_t tu = (size_t)u * B + b;
      const int su = stamp[tu];  // written this round only as r: read r or pending, both refused
      if (su < r && lab[(size_t)position[u] * B + b] == dv) {
        pred[t] = u;
        stamp[t] = r;
        done = true;
        break;
      }
    }
    atomicAdd(progress + (done ? 0 : 1), 1ull);
  }
}

// RPHAST's restricted sweep for one batch (see the header).  Lsel levels hold selected
// rows: rows [sel_level_ptr[i], sel_level_ptr[i+1]) form the i-th (top first); sdn_src
// are rows of earlier levels.  The SEARCH buffers (upd, bucket, bcount) are those of
// phast_sweep and are put back to rest at the end.
template <typename T, int V>
__global__ void __launch_bounds__(256) phast_restricted(
    int L, int Lsel, int B, int G, const int* __restrict__ level_ptr,
    const int* __restrict__ sel_level_ptr, const int* __restrict__ sel_pos,
    const int* __restrict__ sdn_ptr, const int* __restrict__ sdn_src, const T* __restrict__ sdn_w,
    const int* __restrict__ src_pos, T* lab, const int* __restrict__ level_of,
    const int* __restrict__ push_ptr, const int* __restrict__ push_head,
    const unsigned* __restrict__ push_w, unsigned* upd, int* bucket, int* bcount) {
  cg::grid_group grid = cg::this_grid();
  const long long nthreads = (long long)gridDim.x * blockDim.x;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int lane0 = (int)(tid % G) * V;  // as in phast_sweep
  const long long j0 = tid / G, jstep = nthreads / G;
  const T INF = inf_of<T>();
  const int warps = (int)(nthreads >> 5);
  const int warp = (int)(tid >> 5);
  const int n = level_ptr[L];
  for (int lane = warp; lane < B; lane += warps)
    upward_search(lane, B, src_pos[lane], level_ptr, level_of, push_ptr, push_head, push_w, upd,
                  bucket + (size_t)lane * n, bcount + (size_t)lane * L);
  grid.sync();
  for (int l = 0; l < Lsel; ++l) {
    const int a = sel_level_ptr[l];
    const long long cnt_l = sel_level_ptr[l + 1] - a;
    for (long long j = j0; j < cnt_l; j += jstep) {
      const int r = a + (int)j;
      const Vec<unsigned, V> u = load_vec<unsigned, V>(upd + (size_t)sel_pos[r] * B + lane0);
      Vec<T, V> d;
#pragma unroll
      for (int k = 0; k < V; ++k) d.x[k] = (T)min(u.x[k], (unsigned)INF);
      const int e1 = sdn_ptr[r + 1];
      for (int e = sdn_ptr[r]; e < e1; ++e) {
        const Vec<T, V> x = load_vec<T, V>(lab + (size_t)sdn_src[e] * B + lane0);
        const T w = sdn_w[e];
#pragma unroll
        for (int k = 0; k < V; ++k) d.x[k] = min(d.x[k], sat_add<T>(x.x[k], w));
      }
      store_vec<T, V>(lab + (size_t)r * B + lane0, d);
    }
    grid.sync();
  }
  for (int lane = warp; lane < B; lane += warps)
    search_reset(lane, B, L, level_ptr, upd, bucket + (size_t)lane * n, bcount + (size_t)lane * L);
}

// The matrix of a batch: out[b * ntg + j] = label of target j (row tg_row[j]) for lane b
// < nb, as float64 (+inf unreachable).  A block transposes a 32 x 32 tile through
// shared memory (reads along the lanes, writes along the targets: both coalesced);
// blockDim = (32, 8).  reduce != 0: each lane's reached count, largest and exact sum
// over the targets with first[j] != 0, one atomic per warp and tile row.
template <typename T>
__global__ void __launch_bounds__(256) phast_matrix(
    int B, int nb, int ntg, const int* __restrict__ tg_row, const unsigned char* __restrict__ first,
    const T* __restrict__ lab, double* __restrict__ out, int reduce, u64* __restrict__ reached,
    u64* __restrict__ ecc, u64* __restrict__ total) {
  __shared__ T tile[32][33];
  const T INF = inf_of<T>();
  const int j0 = blockIdx.x * 32;
  const int b0 = blockIdx.y * 32;
  const int tx = threadIdx.x;
  for (int jj = threadIdx.y; jj < 32; jj += blockDim.y) {
    const int j = j0 + jj;
    const int b = b0 + tx;
    tile[jj][tx] = (j < ntg && b < nb) ? lab[(size_t)tg_row[j] * B + b] : INF;
  }
  __syncthreads();
  const double inf = __longlong_as_double(0x7ff0000000000000LL);
  for (int bb = threadIdx.y; bb < 32; bb += blockDim.y) {
    const int b = b0 + bb;
    const int j = j0 + tx;
    const bool in = b < nb && j < ntg;
    const T x = tile[tx][bb];
    if (in) out[(size_t)b * ntg + j] = (x == INF) ? inf : (double)x;
    if (reduce) {  // b is the same across the warp (blockDim.x == 32)
      const bool ok = in && first[j] && x != INF;
      const unsigned c = __popc(__ballot_sync(0xffffffffu, ok));
      u64 sm = ok ? (u64)x : 0ull;
      u64 mx = sm;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) {
        sm += __shfl_xor_sync(0xffffffffu, sm, off);
        mx = max(mx, (u64)__shfl_xor_sync(0xffffffffu, mx, off));
      }
      if (tx == 0 && c) {
        atomicAdd(reached + b, (u64)c);
        atomicMax(ecc + b, mx);
        atomicAdd(total + b, sm);
      }
    }
  }
}

}  // namespace phast

#ifdef SSSP_NVCC_CHECK
#define INST_SWEEP(T, V, S)                                                                   \
  template __global__ void phast::phast_sweep<T, V, S>(                                       \
      int, int, int, const int*, const int*, const int*, const int*, const T*, const int*,    \
      const int*, const T*, const int*, const int*, T*, unsigned long long*,                  \
      unsigned long long*, unsigned long long*, const int*, const int*, const int*,           \
      const unsigned*, unsigned*, int*, int*);
INST_SWEEP(unsigned short, 1, false)
INST_SWEEP(unsigned short, 4, true)
INST_SWEEP(unsigned int, 1, true)
INST_SWEEP(unsigned int, 4, false)
INST_SWEEP(unsigned int, 4, true)
#define INST_AUX(T)                                                                           \
  template __global__ void phast::phast_distances<T>(int, int, int, const int*, const T*,     \
                                                     double*);                                \
  template __global__ void phast::phast_pred_strict<T>(int, int, int, const long long*,       \
      const int*, const T*, const int*, const T*, const long long*, int*, int*, int*);        \
  template __global__ void phast::phast_pred_zero<T>(int, int, int, int, const long long*,    \
      const int*, const T*, const int*, const T*, int*, int*, unsigned long long*);
INST_AUX(unsigned short)
INST_AUX(unsigned int)
INST_AUX(unsigned long long)
#define INST_RPHAST(T, V)                                                                     \
  template __global__ void phast::phast_restricted<T, V>(                                     \
      int, int, int, int, const int*, const int*, const int*, const int*, const int*,         \
      const T*, const int*, T*, const int*, const int*, const int*, const unsigned*,          \
      unsigned*, int*, int*);
INST_RPHAST(unsigned short, 1)
INST_RPHAST(unsigned short, 4)
INST_RPHAST(unsigned int, 1)
INST_RPHAST(unsigned int, 4)
#define INST_MATRIX(T)                                                                        \
  template __global__ void phast::phast_matrix<T>(int, int, int, const int*,                 \
      const unsigned char*, const T*, double*, int, unsigned long long*,                      \
      unsigned long long*, unsigned long long*);
INST_MATRIX(unsigned short)
INST_MATRIX(unsigned int)
#endif
