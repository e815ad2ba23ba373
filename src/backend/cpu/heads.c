/* heads.c — the output heads of the CPU backend: log-probability of a target
 * token with the entropy of the row (the PPO policy head), its backward, and
 * token sampling for rollouts.
 *
 * logprob: one pass of exp over each row, e = exp(x − max), accumulating in
 * double S = Σ e and W = Σ e·(x − max); then lse = log S, log p_t = (x_t − max)
 * − lse, and H = −Σ p log p = lse − W/S, which is −Σ p·(x − max − lse) without
 * ever taking log of a (possibly underflowed) probability. probs may alias
 * logits: each x is read before its p is written.
 *
 * sample_tokens is a pure function of (logits, u): the top_k set is found by
 * selection (a k-element min-heap for small k, a 4-pass radix select on the
 * float bits for large k), never a sort; ties at the threshold keep the lower
 * indices. Each kept logit's weight is computed once into a row of scratch
 * and summed in index order in double, for the total and for the cumulative
 * sum that picks the token.
 *
 * Rows are ld floats apart and every head works on the first V columns, the
 * real vocabulary: a model whose embedding carries padding rows (llm.c's Vp)
 * gives them no probability, no gradient and no chance of being sampled.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "nereus/util.h"

/* row maximum, 16 partial maxima */
static float row_max(const float *restrict x, int n) {
    float acc[16];
    for (int j = 0; j < 16; j++) acc[j] = -INFINITY;
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    float m = -INFINITY;
    for (int j = 0; j < 16; j++) m = acc[j] > m ? acc[j] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* logits (N, ld) → probs (N, ld) (may alias; softmax over [0, V)), logp (N), ent (N) (may be NULL) */
static void cpu_logprob_forward(float *probs, float *logp, float *ent, const float *logits,
                                const int *targets, int N, int V, int ld) {
#pragma omp parallel for schedule(static) if ((size_t)N * V >= CPU_OMP_MIN)
    for (int n = 0; n < N; n++) {
        int tgt = targets[n];
        if (tgt < 0) {
            logp[n] = 0.0f;
            if (ent) ent[n] = 0.0f;
            continue;
        }
        const float *x = logits + (size_t)n * ld;
        float *p = probs + (size_t)n * ld; /* may equal x: no restrict */
        float m = row_max(x, V);
        float xt = x[tgt] - m;
        double S = 0.0, W = 0.0;
        for (int i = 0; i < V; i++) {
            float d = x[i] - m;
            float e = expf(d);
            S += e;
            W += (double)e * d;
            p[i] = e;
        }
        double lse = log(S);
        float inv = (float)(1.0 / S);
        for (int i = 0; i < V; i++) p[i] *= inv;
        logp[n] = (float)((double)xt - lse);
        if (ent) ent[n] = (float)(lse - W / S);
    }
}

/* dlogits (N, ld) OVERWRITES (may alias probs):
 *   dlogp·(onehot(target) − p) + dent·(−p·(log p + H)) on [0, V); the padding [V, ld) gets 0 */
static void cpu_logprob_backward(float *dlogits, const float *dlogp, const float *dent,
                                 const float *probs, const float *ent, const int *targets,
                                 int N, int V, int ld) {
#pragma omp parallel for schedule(static) if ((size_t)N * V >= CPU_OMP_MIN)
    for (int n = 0; n < N; n++) {
        float *d = dlogits + (size_t)n * ld;
        const float *p = probs + (size_t)n * ld; /* may equal d: no restrict */
        int tgt = targets[n];
        if (ld > V) memset(d + V, 0, (size_t)(ld - V) * sizeof(float));
        if (tgt < 0) {
            memset(d, 0, (size_t)V * sizeof(float));
            continue;
        }
        float g = dlogp ? dlogp[n] : 0.0f;
        float ge = dent ? dent[n] : 0.0f;
        if (ge == 0.0f) {
            for (int i = 0; i < V; i++) d[i] = -g * p[i];
        } else {
            float H;
            if (ent) {
                H = ent[n];
            } else { /* recompute from probs; p log p → 0 as p → 0 */
                double h = 0.0;
                for (int i = 0; i < V; i++)
                    if (p[i] > 0.0f) h -= (double)p[i] * logf(p[i]);
                H = (float)h;
            }
            for (int i = 0; i < V; i++) {
                float pi = p[i];
                float lp = pi > 0.0f ? logf(pi) : 0.0f;
                d[i] = -g * pi - ge * pi * (lp + H);
            }
        }
        d[tgt] += g;
    }
}

/* --- top-k threshold ------------------------------------------------------ */

#define HEAP_MAX 256

/* the k-th largest value of x (n), 1 ≤ k ≤ HEAP_MAX, by a k-element min-heap */
static float kth_largest_heap(const float *x, int n, int k) {
    float h[HEAP_MAX];
    for (int i = 0; i < k; i++) { /* sift up */
        int c = i;
        h[c] = x[i];
        while (c > 0 && h[(c - 1) / 2] > h[c]) {
            float t = h[c];
            h[c] = h[(c - 1) / 2];
            h[(c - 1) / 2] = t;
            c = (c - 1) / 2;
        }
    }
    for (int i = k; i < n; i++) {
        if (!(x[i] > h[0])) continue;
        float v = x[i]; /* replace the root, sift down */
        int c = 0;
        for (;;) {
            int l = 2 * c + 1, r = l + 1, s = c;
            float sv = v;
            if (l < k && h[l] < sv) { s = l; sv = h[l]; }
            if (r < k && h[r] < sv) { s = r; }
            if (s == c) break;
            h[c] = h[s];
            c = s;
        }
        h[c] = v;
    }
    return h[0];
}

/* order-preserving map of a float's bits to an unsigned key */
static inline uint32_t float_key(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static inline float key_float(uint32_t k) {
    uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* the k-th largest value of x (n), any 1 ≤ k ≤ n: radix select, byte by byte
 * from the most significant, without scratch beyond a 256-bin histogram */
static float kth_largest_radix(const float *x, int n, int k) {
    uint32_t prefix = 0, mask = 0;
    int rem = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        int hist[256] = {0};
        for (int i = 0; i < n; i++) {
            uint32_t key = float_key(x[i]);
            if ((key & mask) == prefix) hist[(key >> shift) & 255u]++;
        }
        int bin = 255;
        for (; bin > 0; bin--) {
            if (hist[bin] >= rem) break;
            rem -= hist[bin];
        }
        prefix |= (uint32_t)bin << shift;
        mask |= 255u << shift;
    }
    return key_float(prefix);
}

/* the kept set of one row: x > thr, plus the first need_eq indices with x == thr */
typedef struct {
    int all;
    float thr;
    int need_eq;
} Kept;

/* e (V) scratch: the row's weights exp((x − max)/temperature) over its kept set, −1 elsewhere (a weight is
   never negative), each computed once and summed in index order in both passes */
static void sample_row(int *out, const float *x, float *e, float u, int V, float temperature, int top_k) {
    float m = row_max(x, V);
    if (temperature <= 0.0f || !(m > -INFINITY) || top_k == 1) {
        int best = 0; /* argmax, lowest index on ties */
        for (int i = 1; i < V; i++)
            if (x[i] > x[best]) best = i;
        *out = best;
        return;
    }
    Kept kp = {1, -INFINITY, 0};
    if (top_k > 0 && top_k < V) {
        kp.all = 0;
        kp.thr = top_k <= HEAP_MAX ? kth_largest_heap(x, V, top_k)
                                   : kth_largest_radix(x, V, top_k);
        int gt = 0;
        for (int i = 0; i < V; i++) gt += x[i] > kp.thr;
        kp.need_eq = top_k - gt;
    }
    /* pass 1: the weights and their total; pass 2: first index whose cumulative sum exceeds u·total */
    double total = 0.0;
    if (kp.all) {
        for (int i = 0; i < V; i++) {
            e[i] = expf((x[i] - m) / temperature);
            total += e[i];
        }
    } else {
        int eq = 0;
        for (int i = 0; i < V; i++) {
            e[i] = -1.0f;
            if (x[i] > kp.thr || (x[i] == kp.thr && eq++ < kp.need_eq)) {
                e[i] = expf((x[i] - m) / temperature);
                total += e[i];
            }
        }
    }
    double target = (double)u * total, cum = 0.0;
    int last = 0;
    for (int i = 0; i < V; i++) {
        if (e[i] < 0.0f) continue;
        cum += e[i];
        last = i;
        if (cum > target) {
            *out = i;
            return;
        }
    }
    *out = last; /* only when u·total rounds up to total */
}

/* logits (B, ld), u (B) → out (B), ids in [0, V); rows in parallel, each with its own weight scratch */
static void cpu_sample_tokens(int *out, const float *logits, const float *u,
                              int B, int V, int ld, float temperature, int top_k) {
    int nth = B > 1 && (size_t)B * V >= CPU_OMP_MIN ? omp_get_max_threads() : 1;
    nth = NR_MIN(nth, B);
    float *e = nr_xmalloc((size_t)nth * V * sizeof(float));
#pragma omp parallel for schedule(static) num_threads(nth) if (nth > 1)
    for (int b = 0; b < B; b++)
        sample_row(out + b, logits + (size_t)b * ld, e + (size_t)omp_get_thread_num() * V, u[b], V, temperature,
                   top_k);
    free(e);
}

void cpu_register_heads(Backend *be) {
    be->logprob_forward = cpu_logprob_forward;
    be->logprob_backward = cpu_logprob_backward;
    be->sample_tokens = cpu_sample_tokens;
}
