/* attention.cu — causal multi-head self-attention of the CUDA backend, the
 * same computation as src/backend/cpu/attention.c (scale 1/sqrt(hs), causal
 * mask, softmax with the row maximum subtracted), written for correctness
 * first: one thread block per (b, h, t) query row; each thread scores keys
 * t2 = tid, tid + blockDim, … with a serial hs-long dot product, block
 * reductions give the row max and sum, and thread i of the block forms
 * output channel i as Σ_t2 att·v in t2 order.
 *
 * The backward has no atomics: kernel 1 (per query row) forms datt, dpreatt
 * and dq; kernel 2 (per key row t2) sums dk and dv over the query rows t ≥ t2
 * in ascending order, the CPU's order. Decode uses the forward's row kernel
 * shape (same block size, same reductions) over the cache, so it reproduces
 * attention_forward's row pos. Grouped-query attention: query head h reads
 * key/value head h / G, G = NH / NKV (NKV == NH: multi-head, G = 1); the key
 * kernel runs per key/value head and sums over its G query heads, then t.
 * Layouts as backend.h: inp (B, T, C3), C3 = C + 2·NKV·hs, per token
 * [q (NH,hs) | k (NKV,hs) | v (NKV,hs)]; preatt, att (B, NH, T, T); kcache,
 * vcache (B, NKV, Tmax, hs).
 */
#include "cuda_internal.h"

#define ATT_THREADS 128

/* one block per (b, h, t) */
__global__ static void attention_forward_kernel(float *out, float *preatt, float *att, const float *inp,
                                                int T, int C, int NH, int NKV) {
    __shared__ float red[32];
    const int hs = C / NH, C3 = C + 2 * NKV * hs;
    const int t = blockIdx.x % T, h = (blockIdx.x / T) % NH, b = blockIdx.x / (T * NH);
    const int koff = C + h / (NH / NKV) * hs, voff = koff + NKV * hs; /* this head's k, v in a row */
    const float scale = 1.0f / sqrtf((float)hs);
    const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
    float *pre = preatt + (size_t)blockIdx.x * T;
    float *a = att + (size_t)blockIdx.x * T;

    float maxv = -INFINITY;
    for (int t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) {
        const float *k = inp + ((size_t)b * T + t2) * C3 + koff;
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += q[i] * k[i];
        s *= scale;
        pre[t2] = s;
        maxv = fmaxf(maxv, s);
    }
    maxv = block_reduce(maxv, OpMax<float>(), -INFINITY, red);
    float sum = 0.0f;
    for (int t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) {
        float e = expf(pre[t2] - maxv);
        a[t2] = e;
        sum += e;
    }
    sum = block_reduce(sum, OpSum<float>(), 0.0f, red);
    const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
    for (int t2 = threadIdx.x; t2 < T; t2 += blockDim.x) {
        if (t2 <= t) a[t2] *= inv;
        else a[t2] = pre[t2] = 0.0f;
    }
    __syncthreads(); /* att of this row is read by every thread below */
    float *o = out + ((size_t)b * T + t) * C + h * hs;
    for (int i = threadIdx.x; i < hs; i += blockDim.x) {
        float acc = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) acc += a[t2] * inp[((size_t)b * T + t2) * C3 + voff + i];
        o[i] = acc;
    }
}

/* one block per (b, h, t): datt, dpreatt (overwritten) and dq (+=) */
__global__ static void attention_backward_query_kernel(float *dinp, float *dpreatt, float *datt,
                                                       const float *dout, const float *inp,
                                                       const float *att, int T, int C, int NH, int NKV) {
    __shared__ float red[32];
    const int hs = C / NH, C3 = C + 2 * NKV * hs;
    const int t = blockIdx.x % T, h = (blockIdx.x / T) % NH, b = blockIdx.x / (T * NH);
    const int koff = C + h / (NH / NKV) * hs, voff = koff + NKV * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const float *a = att + (size_t)blockIdx.x * T;
    float *da = datt + (size_t)blockIdx.x * T;
    float *dp = dpreatt + (size_t)blockIdx.x * T;
    const float *dy = dout + ((size_t)b * T + t) * C + h * hs;

    float dot = 0.0f;
    for (int t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) {
        const float *v = inp + ((size_t)b * T + t2) * C3 + voff;
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += v[i] * dy[i];
        da[t2] = s;
        dot += a[t2] * s;
    }
    dot = block_reduce(dot, OpSum<float>(), 0.0f, red);
    for (int t2 = threadIdx.x; t2 < T; t2 += blockDim.x) {
        if (t2 <= t) dp[t2] = a[t2] * (da[t2] - dot);
        else da[t2] = dp[t2] = 0.0f;
    }
    __syncthreads();
    float *dq = dinp + ((size_t)b * T + t) * C3 + h * hs;
    for (int i = threadIdx.x; i < hs; i += blockDim.x) {
        float acc = dq[i];
        for (int t2 = 0; t2 <= t; t2++) acc += (dp[t2] * scale) * inp[((size_t)b * T + t2) * C3 + koff + i];
        dq[i] = acc;
    }
}

/* one block per (b, kh, t2): dk, dv (+=) summed over the query heads h of
 * key/value head kh, then over query rows t = t2..T-1 */
__global__ static void attention_backward_key_kernel(float *dinp, const float *dpreatt, const float *dout,
                                                     const float *inp, const float *att, int T, int C,
                                                     int NH, int NKV) {
    const int hs = C / NH, C3 = C + 2 * NKV * hs, G = NH / NKV;
    const int t2 = blockIdx.x % T, kh = (blockIdx.x / T) % NKV, b = blockIdx.x / (T * NKV);
    const float scale = 1.0f / sqrtf((float)hs);
    float *dk = dinp + ((size_t)b * T + t2) * C3 + C + kh * hs;
    float *dv = dk + NKV * hs;
    for (int i = threadIdx.x; i < hs; i += blockDim.x) {
        float ak = dk[i], av = dv[i];
        for (int h = kh * G; h < (kh + 1) * G; h++) {
            const size_t rows = ((size_t)b * NH + h) * T; /* first (b, h, ·) row */
            for (int t = t2; t < T; t++) {
                const size_t r = (rows + t) * T + t2;
                av += att[r] * dout[((size_t)b * T + t) * C + h * hs + i];
                ak += (dpreatt[r] * scale) * inp[((size_t)b * T + t) * C3 + h * hs + i];
            }
        }
        dk[i] = ak;
        dv[i] = av;
    }
}

static void cuda_attention_forward(float *out, float *preatt, float *att, const float *inp,
                                   int B, int T, int C, int NH, int NKV) {
    if (B <= 0 || T <= 0) return;
    attention_forward_kernel<<<B * NH * T, ATT_THREADS>>>(out, preatt, att, inp, T, C, NH, NKV);
    cudaCheckLaunch("attention_forward_kernel");
}

static void cuda_attention_backward(float *dinp, float *dpreatt, float *datt,
                                    const float *dout, const float *inp, const float *att,
                                    int B, int T, int C, int NH, int NKV) {
    if (B <= 0 || T <= 0) return;
    attention_backward_query_kernel<<<B * NH * T, ATT_THREADS>>>(dinp, dpreatt, datt, dout, inp, att, T, C, NH,
                                                                 NKV);
    cudaCheckLaunch("attention_backward_query_kernel");
    attention_backward_key_kernel<<<B * NKV * T, 64>>>(dinp, dpreatt, dout, inp, att, T, C, NH, NKV);
    cudaCheckLaunch("attention_backward_key_kernel");
}

/* kcache, vcache (B, NKV, Tmax, hs) positions 0..T-1 ← qkv (B, T, C3) */
__global__ static void kv_fill_kernel(float *kcache, float *vcache, const float *qkv,
                                      int B, int T, int Tmax, int C, int NH, int NKV) {
    const int hs = C / NH, C3 = C + 2 * NKV * hs;
    const size_t total = (size_t)B * NKV * T * hs;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(idx % hs);
        int t = (int)((idx / hs) % T);
        int h = (int)((idx / ((size_t)hs * T)) % NKV);
        int b = (int)(idx / ((size_t)hs * T * NKV));
        const float *src = qkv + ((size_t)b * T + t) * C3 + C + h * hs + i;
        size_t dst = (((size_t)b * NKV + h) * Tmax + t) * hs + i;
        kcache[dst] = src[0];
        vcache[dst] = src[NKV * hs];
    }
}

static void cuda_kv_fill(float *kcache, float *vcache, const float *qkv,
                         int B, int T, int Tmax, int C, int NH, int NKV) {
    const size_t total = (size_t)B * T * NKV * (C / NH);
    if (!total) return;
    kv_fill_kernel<<<cuda_blocks(total, 256), 256>>>(kcache, vcache, qkv, B, T, Tmax, C, NH, NKV);
    cudaCheckLaunch("kv_fill_kernel");
}

/* one block per (b, h); scores of positions 0..pos in dynamic shared memory.
 * Row b is the sequence in cache slot slots[b] (NULL: slot b), at position
 * rowpos[b] (NULL: maxpos; the shared memory is sized for maxpos).
 * The G query heads of a key/value head share its cache: the first of them
 * stores the new k, v at pos, and every block reads position pos from the
 * qkv row itself, so no block reads what another writes. */
__global__ static void attention_decode_kernel(float *out, float *kcache, float *vcache, const float *qkv,
                                               const int *slots, const int *rowpos, int maxpos, int Tmax, int C, int NH,
                                               int NKV) {
    extern __shared__ float s[];
    __shared__ float red[32];
    const int hs = C / NH, C3 = C + 2 * NKV * hs, G = NH / NKV;
    const int h = blockIdx.x % NH, b = blockIdx.x / NH;
    const int pos = rowpos ? rowpos[b] : maxpos;
    const float scale = 1.0f / sqrtf((float)hs);
    const float *q = qkv + (size_t)b * C3 + h * hs;
    const float *knew = qkv + (size_t)b * C3 + C + h / G * hs, *vnew = knew + NKV * hs;
    const size_t slot = slots ? (size_t)slots[b] : (size_t)b;
    float *kc = kcache + (slot * NKV + h / G) * Tmax * hs;
    float *vc = vcache + (slot * NKV + h / G) * Tmax * hs;
    if (h % G == 0)
        for (int i = threadIdx.x; i < hs; i += blockDim.x) {
            kc[(size_t)pos * hs + i] = knew[i];
            vc[(size_t)pos * hs + i] = vnew[i];
        }
    float maxv = -INFINITY;
    for (int t2 = threadIdx.x; t2 <= pos; t2 += blockDim.x) {
        const float *k = t2 == pos ? knew : kc + (size_t)t2 * hs;
        float d = 0.0f;
        for (int i = 0; i < hs; i++) d += q[i] * k[i];
        d *= scale;
        s[t2] = d;
        maxv = fmaxf(maxv, d);
    }
    maxv = block_reduce(maxv, OpMax<float>(), -INFINITY, red);
    float sum = 0.0f;
    for (int t2 = threadIdx.x; t2 <= pos; t2 += blockDim.x) {
        float e = expf(s[t2] - maxv);
        s[t2] = e;
        sum += e;
    }
    sum = block_reduce(sum, OpSum<float>(), 0.0f, red);
    const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
    for (int t2 = threadIdx.x; t2 <= pos; t2 += blockDim.x) s[t2] *= inv;
    __syncthreads();
    float *o = out + (size_t)b * C + h * hs;
    for (int i = threadIdx.x; i < hs; i += blockDim.x) {
        float acc = 0.0f;
        for (int t2 = 0; t2 < pos; t2++) acc += s[t2] * vc[(size_t)t2 * hs + i];
        o[i] = acc + s[pos] * vnew[i];
    }
}

#define DECODE_MAX_SMEM (200 * 1024) /* opt-in limit; H100/H200 allow 227 KiB per block */

static void cuda_attention_decode(float *out, float *kcache, float *vcache, const float *qkv, const int *slots,
                                  const int *rowpos, int B, int pos, int Tmax, int C, int NH, int NKV) {
    if (B <= 0) return;
    static int smem_set;
    size_t smem = (size_t)(pos + 1) * sizeof(float);
    if (smem > DECODE_MAX_SMEM)
        nr_fatal("cuda attention_decode: pos %d needs %zu bytes of shared memory (limit %d); "
                 "caches longer than %d positions are not supported yet",
                 pos, smem, DECODE_MAX_SMEM, DECODE_MAX_SMEM / 4);
    if (smem > 48 * 1024 && !smem_set) {
        cudaCheck(cudaFuncSetAttribute(attention_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       DECODE_MAX_SMEM));
        smem_set = 1;
    }
    attention_decode_kernel<<<B * NH, ATT_THREADS, smem>>>(out, kcache, vcache, qkv, slots, rowpos, pos, Tmax, C, NH,
                                                           NKV);
    cudaCheckLaunch("attention_decode_kernel");
}

void cuda_register_attention(Backend *be) {
    be->attention_forward = cuda_attention_forward;
    be->attention_backward = cuda_attention_backward;
    be->attention_decode = cuda_attention_decode;
    be->kv_fill = cuda_kv_fill;
}
