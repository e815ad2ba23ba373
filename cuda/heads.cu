/* heads.cu — the output heads of the CUDA backend: log-probability with the
 * entropy of the row, its backward, and token sampling; one thread block per
 * row throughout, the CPU's formulas (src/backend/cpu/heads.c). Rows are ld
 * floats apart; each head works on the first V columns (the real vocabulary)
 * and the backward gives the padding columns [V, ld) a zero gradient.
 *
 * logprob: S = Σ e and W = Σ e·(x − max) in double (block tree), lse = log S,
 * H = lse − W/S. probs may alias logits: x[tgt] is read and the block has
 * synchronised before any p is written, and each thread writes only the
 * elements it read.
 *
 * sample_tokens keeps the CPU's selection rule exactly: the top_k threshold
 * is the k-th largest value found by a 4-pass radix select over the float
 * bits (a 256-bin shared histogram; integer counts, so order-free), ties at
 * the threshold keep the lowest indices, and the token is the smallest index
 * whose cumulative weight in index order exceeds u·total. Each thread owns a
 * contiguous chunk of the row, so "index order" is chunk order: chunk sums
 * (double) are prefixed by one thread, then each chunk is rescanned from its
 * prefix. Weights are expf((x − max)/temperature) as on the CPU; the CUDA and
 * glibc expf may differ in the last bit, so a token can differ from the
 * CPU's only when u·total falls within rounding of a cumulative boundary.
 */
#include <limits.h>
#include <stdint.h>

#include "cuda_internal.h"

#define HEAD_THREADS 256

__global__ static void logprob_forward_kernel(float *probs, float *logp, float *ent, const float *logits,
                                              const int *targets, int V, int ld) {
    __shared__ float redf[32];
    __shared__ double redd[32];
    const size_t n = blockIdx.x;
    const int tgt = targets[n];
    if (tgt < 0) {
        if (threadIdx.x == 0) {
            logp[n] = 0.0f;
            if (ent) ent[n] = 0.0f;
        }
        return;
    }
    const float *x = logits + n * ld;
    float *p = probs + n * ld;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, x[i]);
    m = block_reduce(m, OpMax<float>(), -INFINITY, redf);
    const float xt = x[tgt] - m;
    __syncthreads(); /* every thread has read x[tgt] before any p is written */
    double S = 0.0, W = 0.0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        float d = x[i] - m;
        float e = expf(d);
        S += e;
        W += (double)e * d;
        p[i] = e;
    }
    S = block_reduce(S, OpSum<double>(), 0.0, redd);
    W = block_reduce(W, OpSum<double>(), 0.0, redd);
    const double lse = log(S);
    const float inv = (float)(1.0 / S);
    for (int i = threadIdx.x; i < V; i += blockDim.x) p[i] *= inv;
    if (threadIdx.x == 0) {
        logp[n] = (float)((double)xt - lse);
        if (ent) ent[n] = (float)(lse - W / S);
    }
}

__global__ static void logprob_backward_kernel(float *dlogits, const float *dlogp, const float *dent,
                                               const float *probs, const float *ent, const int *targets,
                                               int V, int ld) {
    __shared__ double redd[32];
    const size_t n = blockIdx.x;
    float *d = dlogits + n * ld;
    const float *p = probs + n * ld;
    const int tgt = targets[n];
    for (int i = V + threadIdx.x; i < ld; i += blockDim.x) d[i] = 0.0f; /* padding: no gradient */
    if (tgt < 0) {
        for (int i = threadIdx.x; i < V; i += blockDim.x) d[i] = 0.0f;
        return;
    }
    const float g = dlogp ? dlogp[n] : 0.0f;
    const float ge = dent ? dent[n] : 0.0f;
    if (ge == 0.0f) {
        for (int i = threadIdx.x; i < V; i += blockDim.x) d[i] = -g * p[i];
    } else {
        float H;
        if (ent) {
            H = ent[n];
        } else {
            double h = 0.0;
            for (int i = threadIdx.x; i < V; i += blockDim.x)
                if (p[i] > 0.0f) h -= (double)p[i] * logf(p[i]);
            H = (float)block_reduce(h, OpSum<double>(), 0.0, redd);
        }
        for (int i = threadIdx.x; i < V; i += blockDim.x) {
            float pi = p[i];
            float lp = pi > 0.0f ? logf(pi) : 0.0f;
            d[i] = -g * pi - ge * pi * (lp + H);
        }
    }
    __syncthreads(); /* d[tgt] was written by some thread above */
    if (threadIdx.x == 0) d[tgt] += g;
}

static void cuda_logprob_forward(float *probs, float *logp, float *ent, const float *logits,
                                 const int *targets, int N, int V, int ld) {
    if (N <= 0) return;
    logprob_forward_kernel<<<N, HEAD_THREADS>>>(probs, logp, ent, logits, targets, V, ld);
    cudaCheckLaunch("logprob_forward_kernel");
}

static void cuda_logprob_backward(float *dlogits, const float *dlogp, const float *dent,
                                  const float *probs, const float *ent, const int *targets,
                                  int N, int V, int ld) {
    if (N <= 0) return;
    logprob_backward_kernel<<<N, HEAD_THREADS>>>(dlogits, dlogp, dent, probs, ent, targets, V, ld);
    cudaCheckLaunch("logprob_backward_kernel");
}

/* --- sampling ------------------------------------------------------------------ */

/* order-preserving map of a float's bits to an unsigned key (as the CPU) */
__device__ static inline uint32_t float_key(float f) {
    uint32_t u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ static inline float key_float(uint32_t k) {
    uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    return __uint_as_float(u);
}

struct ArgMax {
    float v;
    int i;
};

/* the better of two (value, index): larger value, then lower index */
__device__ static inline ArgMax argmax_pick(ArgMax a, ArgMax b) {
    if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;
    return a;
}

__global__ static void sample_kernel(int *out, const float *logits, const float *u, int V, int ld,
                                     float temperature, int top_k) {
    __shared__ float redf[32];
    __shared__ int redi[32];
    __shared__ unsigned hist[256];
    __shared__ uint32_t sh_prefix;
    __shared__ int sh_rem;
    __shared__ double chunk_sum[HEAD_THREADS];
    __shared__ int chunk_eq[HEAD_THREADS];
    __shared__ double sh_target;
    __shared__ ArgMax am[32];

    const int b = blockIdx.x, tid = threadIdx.x;
    const float *x = logits + (size_t)b * ld;
    float m = -INFINITY;
    for (int i = tid; i < V; i += blockDim.x) m = x[i] > m ? x[i] : m;
    m = block_reduce(m, OpMax<float>(), -INFINITY, redf);

    if (temperature <= 0.0f || !(m > -INFINITY) || top_k == 1) {
        ArgMax best = {-INFINITY, INT_MAX};
        for (int i = tid; i < V; i += blockDim.x) {
            ArgMax c = {x[i], i};
            if (best.i == INT_MAX) best = c;
            else best = argmax_pick(best, c);
        }
        for (int o = 16; o > 0; o >>= 1) {
            ArgMax c;
            c.v = __shfl_xor_sync(0xffffffffu, best.v, o);
            c.i = __shfl_xor_sync(0xffffffffu, best.i, o);
            if (c.i != INT_MAX && (best.i == INT_MAX || (c.v > best.v || (c.v == best.v && c.i < best.i))))
                best = c;
        }
        if ((tid & 31) == 0) am[tid >> 5] = best;
        __syncthreads();
        if (tid == 0) {
            ArgMax r = am[0];
            for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
                ArgMax c = am[w];
                if (c.i != INT_MAX && (r.i == INT_MAX || c.v > r.v || (c.v == r.v && c.i < r.i))) r = c;
            }
            out[b] = r.i == INT_MAX ? 0 : r.i;
        }
        return;
    }

    /* top_k threshold: the k-th largest value, by radix select from the top byte */
    int all = 1, need_eq = 0;
    float thr = -INFINITY;
    if (top_k > 0 && top_k < V) {
        all = 0;
        uint32_t prefix = 0, mask = 0;
        if (tid == 0) sh_rem = top_k;
        for (int shift = 24; shift >= 0; shift -= 8) {
            for (int i = tid; i < 256; i += blockDim.x) hist[i] = 0;
            __syncthreads();
            for (int i = tid; i < V; i += blockDim.x) {
                uint32_t key = float_key(x[i]);
                if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
            }
            __syncthreads();
            if (tid == 0) {
                int rem = sh_rem, bin = 255;
                for (; bin > 0; bin--) {
                    if ((int)hist[bin] >= rem) break;
                    rem -= (int)hist[bin];
                }
                sh_rem = rem;
                sh_prefix = prefix | ((uint32_t)bin << shift);
            }
            __syncthreads();
            prefix = sh_prefix;
            mask |= 255u << shift;
        }
        thr = key_float(prefix);
        int gt = 0;
        for (int i = tid; i < V; i += blockDim.x) gt += x[i] > thr;
        gt = block_reduce(gt, OpSum<int>(), 0, redi);
        need_eq = top_k - gt;
    }

    /* contiguous chunks in index order */
    const int chunk = (V + (int)blockDim.x - 1) / (int)blockDim.x;
    const int lo = tid * chunk, hi = min(V, lo + chunk);
    int eq_here = 0;
    if (!all)
        for (int i = lo; i < hi; i++) eq_here += x[i] == thr;
    chunk_eq[tid] = eq_here;
    __syncthreads();
    if (tid == 0) { /* exclusive prefix of the tie counts */
        int run = 0;
        for (int j = 0; j < (int)blockDim.x; j++) {
            int c = chunk_eq[j];
            chunk_eq[j] = run;
            run += c;
        }
    }
    __syncthreads();
    const int eq0 = chunk_eq[tid];
    double s = 0.0;
    int last = -1;
    {
        int eq = eq0;
        for (int i = lo; i < hi; i++) {
            if (!all && !(x[i] > thr || (x[i] == thr && eq++ < need_eq))) continue;
            s += expf((x[i] - m) / temperature);
            last = i;
        }
    }
    chunk_sum[tid] = s;
    __syncthreads();
    if (tid == 0) { /* exclusive prefix of the chunk weights; total */
        double run = 0.0;
        for (int j = 0; j < (int)blockDim.x; j++) {
            double c = chunk_sum[j];
            chunk_sum[j] = run;
            run += c;
        }
        sh_target = (double)u[b] * run;
    }
    __syncthreads();
    const double target = sh_target;
    int pick = INT_MAX;
    {
        double cum = chunk_sum[tid];
        int eq = eq0;
        for (int i = lo; i < hi; i++) {
            if (!all && !(x[i] > thr || (x[i] == thr && eq++ < need_eq))) continue;
            cum += expf((x[i] - m) / temperature);
            if (cum > target) {
                pick = i;
                break;
            }
        }
    }
    /* smallest crossing index; else the last kept index (u·total rounded up to total) */
    int first = -block_reduce(-pick, OpMax<int>(), -INT_MAX, redi);
    int lastk = block_reduce(last, OpMax<int>(), -1, redi);
    if (tid == 0) out[b] = first != INT_MAX ? first : (lastk >= 0 ? lastk : 0);
}

static void cuda_sample_tokens(int *out, const float *logits, const float *u,
                               int B, int V, int ld, float temperature, int top_k) {
    if (B <= 0) return;
    sample_kernel<<<B, HEAD_THREADS>>>(out, logits, u, V, ld, temperature, top_k);
    cudaCheckLaunch("sample_kernel");
}

void cuda_register_heads(Backend *be) {
    be->logprob_forward = cuda_logprob_forward;
    be->logprob_backward = cuda_logprob_backward;
    be->sample_tokens = cuda_sample_tokens;
}
