/* ref_ops.h — double-precision reference forwards of every backend op.
 *
 * Straightforward loops, no tricks, same argument order and shapes as the
 * Backend in include/nereus/backend.h but in double. They are the oracle of
 * tests/test_backend_grad.c: float forwards are compared to them, and the
 * float backwards to central finite differences of them.
 */
#ifndef NEREUS_REF_OPS_H
#define NEREUS_REF_OPS_H

#include <stddef.h>

void ref_matmul_forward(double *out, const double *inp, const double *weight,
                        const double *bias, int N, int IC, int OC);
void ref_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                           const double *weight, const double *bias, int N, int C);
void ref_gelu_forward(double *out, const double *inp, size_t N);
void ref_residual_forward(double *out, const double *a, const double *b, size_t N);
/* out (B,T,C), att (B,NH,T,T) (may be NULL) from inp (B,T,C3), C3 = C + 2·NKV·hs:
 * grouped-query attention, query head h on key/value head h / (NH/NKV) */
void ref_attention_forward(double *out, double *att, const double *inp,
                           int B, int T, int C, int NH, int NKV);
/* rows as backend.h's rmsnorm_forward: row (n, h) at n·ld + h·C */
void ref_rmsnorm_forward(double *out, double *rstd, const double *inp, const double *weight,
                         int N, int H, int C, int ld, double eps);
/* out = x rotated as backend.h's rope_forward (out may be x); the angle is the
 * float32 product p·inv_freq[i], as the op defines it, its cos and sin double */
void ref_rope_forward(double *out, const double *x, const float *inv_freq, int B, int T, int NH,
                      int hs, int ld, int pos0);
/* out (N, F) = silu(gate)·up of inp (N, 2F) */
void ref_swiglu_forward(double *out, const double *inp, int N, int F);
void ref_encoder_forward(double *out, const int *inp, const double *wte, const double *wpe,
                         int B, int T, int C, int pos0);
/* probs (N,V) (may be NULL), logp (N), ent (N); rows with target < 0 give 0 */
void ref_logprob_forward(double *probs, double *logp, double *ent, const double *logits,
                         const int *targets, int N, int V);
/* The sampling rule of backend.h on one row, by full sort, in double. */
int ref_sample_row(const float *logits, double u, int V, double temperature, int top_k);
void ref_ppo_policy_loss(double *loss, double *clipfrac, double *approx_kl,
                         const double *logp, const double *logp_old, const double *adv,
                         const double *w, int N, double eps_lo, double eps_hi);
void ref_ppo_value_loss(double *loss, const double *v, const double *v_old,
                        const double *ret, const double *w, int N, double eps);
void ref_adamw_update(double *params, const double *grads, double *m, double *v, size_t n,
                      double lr, double beta1, double beta2, double eps, double wd, int t);

#endif
