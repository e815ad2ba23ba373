/* ref_ops.c — double-precision reference forwards of the backend ops (see
 * ref_ops.h). Written for obviousness, not speed: each is the textbook
 * formula as a loop nest.
 */
#include "ref_ops.h"

#include <math.h>
#include <stdlib.h>

void ref_matmul_forward(double *out, const double *inp, const double *weight,
                        const double *bias, int N, int IC, int OC) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = bias ? bias[o] : 0.0;
            for (int i = 0; i < IC; i++) s += inp[n * IC + i] * weight[o * IC + i];
            out[n * OC + o] = s;
        }
}

void ref_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                           const double *weight, const double *bias, int N, int C) {
    for (int n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double m = 0.0;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        double v = 0.0;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= C;
        double s = 1.0 / sqrt(v + 1e-5);
        for (int c = 0; c < C; c++) out[n * C + c] = (x[c] - m) * s * weight[c] + bias[c];
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = s;
    }
}

void ref_gelu_forward(double *out, const double *inp, size_t N) {
    const double k = sqrt(2.0 / 3.14159265358979323846);
    for (size_t i = 0; i < N; i++) {
        double x = inp[i];
        out[i] = 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
}

void ref_residual_forward(double *out, const double *a, const double *b, size_t N) {
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

void ref_attention_forward(double *out, double *att, const double *inp,
                           int B, int T, int C, int NH, int NKV) {
    int hs = C / NH, C3 = C + 2 * NKV * hs, G = NH / NKV;
    double scale = 1.0 / sqrt((double)hs);
    double *p = malloc(sizeof(double) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const double *q = inp + (b * T + t) * C3 + h * hs;
                double mx = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const double *k = inp + (b * T + t2) * C3 + C + (h / G) * hs;
                    double s = 0.0;
                    for (int i = 0; i < hs; i++) s += q[i] * k[i];
                    p[t2] = s * scale;
                    if (p[t2] > mx) mx = p[t2];
                }
                double sum = 0.0;
                for (int t2 = 0; t2 <= t; t2++) sum += (p[t2] = exp(p[t2] - mx));
                for (int t2 = 0; t2 <= t; t2++) p[t2] /= sum;
                if (att)
                    for (int t2 = 0; t2 < T; t2++)
                        att[((b * NH + h) * T + t) * T + t2] = t2 <= t ? p[t2] : 0.0;
                for (int i = 0; i < hs; i++) {
                    double o = 0.0;
                    for (int t2 = 0; t2 <= t; t2++)
                        o += p[t2] * inp[(b * T + t2) * C3 + C + (NKV + h / G) * hs + i];
                    out[(b * T + t) * C + h * hs + i] = o;
                }
            }
    free(p);
}

void ref_rmsnorm_forward(double *out, double *rstd, const double *inp, const double *weight,
                         int N, int H, int C, int ld, double eps) {
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++) {
            const double *x = inp + n * ld + h * C;
            double ms = 0.0;
            for (int c = 0; c < C; c++) ms += x[c] * x[c];
            double s = 1.0 / sqrt(ms / C + eps);
            for (int c = 0; c < C; c++) out[n * ld + h * C + c] = x[c] * s * weight[c];
            if (rstd) rstd[n * H + h] = s;
        }
}

void ref_rope_forward(double *out, const double *x, const float *inv_freq, int B, int T, int NH,
                      int hs, int ld, int pos0) {
    int half = hs / 2;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < half; i++) {
                    float a = (float)(pos0 + t) * inv_freq[i];
                    size_t j = ((size_t)b * T + t) * ld + (size_t)h * hs + i;
                    double x1 = x[j], x2 = x[j + half];
                    out[j] = x1 * cos((double)a) - x2 * sin((double)a);
                    out[j + half] = x2 * cos((double)a) + x1 * sin((double)a);
                }
}

void ref_swiglu_forward(double *out, const double *inp, int N, int F) {
    for (int n = 0; n < N; n++)
        for (int i = 0; i < F; i++) {
            double g = inp[n * 2 * F + i], u = inp[n * 2 * F + F + i];
            out[n * F + i] = g / (1.0 + exp(-g)) * u;
        }
}

void ref_encoder_forward(double *out, const int *inp, const double *wte, const double *wpe,
                         int B, int T, int C, int pos0) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                out[(b * T + t) * C + c] = wte[inp[b * T + t] * C + c] + wpe[(t + pos0) * C + c];
}

void ref_logprob_forward(double *probs, double *logp, double *ent, const double *logits,
                         const int *targets, int N, int V) {
    for (int n = 0; n < N; n++) {
        const double *x = logits + (size_t)n * V;
        if (targets[n] < 0) {
            logp[n] = 0.0;
            if (ent) ent[n] = 0.0;
            continue;
        }
        double mx = -INFINITY;
        for (int i = 0; i < V; i++) if (x[i] > mx) mx = x[i];
        double s = 0.0;
        for (int i = 0; i < V; i++) s += exp(x[i] - mx);
        double lse = log(s);
        double h = 0.0;
        for (int i = 0; i < V; i++) {
            double lp = x[i] - mx - lse;
            double p = exp(lp);
            h -= p * lp;
            if (probs) probs[(size_t)n * V + i] = p;
        }
        logp[n] = x[targets[n]] - mx - lse;
        if (ent) ent[n] = h;
    }
}

typedef struct { float x; int i; } Pair;

static int pair_desc(const void *a, const void *b) {
    const Pair *p = a, *q = b;
    if (p->x != q->x) return p->x > q->x ? -1 : 1;
    return p->i - q->i;
}

int ref_sample_row(const float *logits, double u, int V, double temperature, int top_k) {
    if (temperature == 0.0) {
        int best = 0;
        for (int i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
        return best;
    }
    int k = (top_k <= 0 || top_k >= V) ? V : top_k;
    Pair *pr = malloc(sizeof(Pair) * (size_t)V);
    char *keep = calloc((size_t)V, 1);
    for (int i = 0; i < V; i++) pr[i] = (Pair){logits[i], i};
    qsort(pr, (size_t)V, sizeof(Pair), pair_desc);
    for (int j = 0; j < k; j++) keep[pr[j].i] = 1;
    double mx = pr[0].x, total = 0.0;
    for (int i = 0; i < V; i++) if (keep[i]) total += exp((logits[i] - mx) / temperature);
    double cum = 0.0;
    int pick = -1, last = 0;
    for (int i = 0; i < V && pick < 0; i++) {
        if (!keep[i]) continue;
        cum += exp((logits[i] - mx) / temperature);
        last = i;
        if (cum > u * total) pick = i;
    }
    free(pr);
    free(keep);
    return pick < 0 ? last : pick;
}

void ref_ppo_policy_loss(double *loss, double *clipfrac, double *approx_kl,
                         const double *logp, const double *logp_old, const double *adv,
                         const double *w, int N, double eps_lo, double eps_hi) {
    double L = 0.0, W = 0.0, cf = 0.0, kl = 0.0;
    for (int n = 0; n < N; n++) {
        double r = exp(logp[n] - logp_old[n]);
        double rc = fmin(fmax(r, 1.0 - eps_lo), 1.0 + eps_hi);
        double un = -adv[n] * r, cl = -adv[n] * rc;
        L += w[n] * fmax(un, cl);
        W += w[n];
        if (cl > un) cf += w[n];
        kl += w[n] * (r - 1.0 - (logp[n] - logp_old[n]));
    }
    *loss = L;
    if (clipfrac) *clipfrac = W != 0.0 ? cf / W : 0.0;
    if (approx_kl) *approx_kl = W != 0.0 ? kl / W : 0.0;
}

void ref_ppo_value_loss(double *loss, const double *v, const double *v_old,
                        const double *ret, const double *w, int N, double eps) {
    double L = 0.0;
    for (int n = 0; n < N; n++) {
        double vc = v_old[n] + fmin(fmax(v[n] - v_old[n], -eps), eps);
        double a = (v[n] - ret[n]) * (v[n] - ret[n]);
        double b = (vc - ret[n]) * (vc - ret[n]);
        L += w[n] * 0.5 * fmax(a, b);
    }
    *loss = L;
}

void ref_adamw_update(double *params, const double *grads, double *m, double *v, size_t n,
                      double lr, double beta1, double beta2, double eps, double wd, int t) {
    for (size_t i = 0; i < n; i++) {
        m[i] = beta1 * m[i] + (1.0 - beta1) * grads[i];
        v[i] = beta2 * v[i] + (1.0 - beta2) * grads[i] * grads[i];
        double mhat = m[i] / (1.0 - pow(beta1, t));
        double vhat = v[i] / (1.0 - pow(beta2, t));
        params[i] -= lr * (mhat / (sqrt(vhat) + eps) + wd * params[i]);
    }
}
