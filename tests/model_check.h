/* model_check.h — what the sharded-model tests (test_model_tp, test_model_pp)
 * share: a list of checks reduced over the world and printed once by rank 0
 * (worst error of each check over every rank), norm-wise relative errors,
 * bitwise mismatch counts, and the gathering of a sharded model's logical
 * vector (each rank exports its part; tensors several ranks hold count from
 * their canonical owner only). Static functions: each test includes it once. */
#ifndef NEREUS_TESTS_MODEL_CHECK_H
#define NEREUS_TESTS_MODEL_CHECK_H
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nereus/comm.h"
#include "nereus/model.h"
#include "nereus/util.h"

#define NCHK 400
typedef struct Checks {
    int n;
    double err[NCHK], tol[NCHK];
    char msg[NCHK][128];
} Checks;

static void note(Checks *k, double err, double tol, const char *fmt, const char *a, const char *b) {
    if (k->n >= NCHK) nr_fatal("model_check: too many checks");
    k->err[k->n] = fabs(err); /* fabs clears a NaN's sign: it stays NaN and fails */
    k->tol[k->n] = tol;
    snprintf(k->msg[k->n], sizeof k->msg[0], fmt, a ? a : "", b ? b : "");
    k->n++;
}

/* collective over MPI_COMM_WORLD: worst error of each check over all ranks
 * (idle ranks contribute 0), printed by rank 0; an int64 max of the bit
 * patterns of non-negative doubles is their max (NaN above +inf: it fails).
 * Every member rank notes the same checks in the same order. */
static void flush(Checks *k, const char *label) {
    int64_t n = k->n;
    comm_allreduce_max_i64(MPI_COMM_WORLD, &n, 1);
    int64_t bits[NCHK];
    for (int i = 0; i < n; i++) {
        double e = i < k->n ? k->err[i] : 0.0;
        memcpy(&bits[i], &e, sizeof e);
    }
    comm_allreduce_max_i64(MPI_COMM_WORLD, bits, (size_t)n);
    /* messages and tolerances come from rank 0, which is in every layout's first group */
    if (nr_rank() == 0)
        for (int i = 0; i < n; i++) {
            double e;
            memcpy(&e, &bits[i], sizeof e);
            CHECK(e <= k->tol[i], "%s %s: worst %.2e (tol %.0e)", label, k->msg[i], e, k->tol[i]);
        }
    k->n = 0;
}

static double rel_err(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    if (num == 0) return 0;
    return sqrt(num) / fmax(sqrt(den), 1e-30);
}

static double mismatches(const float *a, const float *b, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return (double)bad;
}

/* collective over all (every rank of the model): the full logical vector of
 * buffer which, gathered: each rank exports into a zeroed buffer, tensors it
 * is not the canonical owner of are zeroed again, then a sum (x + 0 is
 * exact, so bit-exact) */
static void gather_logical(const GPT *m, MPI_Comm all, int which, float *full, size_t nl) {
    memset(full, 0, nl * sizeof(float));
    gpt_export_logical(m, which, full);
    for (int i = 0; i < m->ntensors; i++)
        if (!gpt_tensor_owner(m, i)) memset(full + m->tensors[i].loffset, 0, m->tensors[i].numel * sizeof(float));
    if (all != MPI_COMM_NULL && comm_size(all) > 1) comm_allreduce_sum_f32(all, full, nl);
}

/* collective over all: gpt_tensor_checks of buffer which, added up over all (the ranks of one replica), against
 * the whole logical tensors of full (gather_logical's vector): every hash to the bit, Σ|x| to relative 1e-12 */
static void check_tensor_hashes(Checks *k, const GPT *m, MPI_Comm all, int which, const float *full, const char *kind) {
    double abs[GPT_NUM_TENSORS];
    uint64_t hash[GPT_NUM_TENSORS];
    gpt_tensor_checks(m, which, abs, hash);
    if (all != MPI_COMM_NULL && comm_size(all) > 1) {
        comm_allreduce_sum_f64(all, abs, (size_t)m->ntensors);
        MPI_Allreduce(MPI_IN_PLACE, hash, m->ntensors, MPI_UINT64_T, MPI_SUM, all);
    }
    double bad = 0, worst = 0;
    for (int i = 0; i < m->ntensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        double a = 0;
        for (size_t e = 0; e < t->numel; e++) a += fabs((double)full[t->loffset + e]);
        bad += hash[i] != nr_cksum_f32(full + t->loffset, t->numel, 0);
        if (a > 0) worst = fmax(worst, fabs(abs[i] - a) / a);
    }
    note(k, bad, 0, "%s per-tensor hashes from the owned shards equal the logical tensors' (mismatches)%s", kind, NULL);
    note(k, worst, 1e-12, "%s per-tensor sum|x| from the owned shards (rel)%s", kind, NULL);
}

static void note_tensors(Checks *k, const GPT *ref, const float *a, const float *b, double tol, const char *what,
                         const char *model) {
    for (int i = 0; i < ref->ntensors; i++) {
        const TensorInfo *t = &ref->tensors[i];
        char fmt[96];
        snprintf(fmt, sizeof fmt, "%%s %s %s: rel err (norm-wise)", what, t->name);
        note(k, rel_err(a + t->loffset, b + t->loffset, t->numel), tol, fmt, model, NULL);
    }
}

/* collective over c: mismatches between this rank's buf and c's rank 0's */
static double diff_from_rank0(MPI_Comm c, const float *buf, size_t n) {
    if (c == MPI_COMM_NULL) return 0;
    float *r0 = nr_xmalloc((n ? n : 1) * sizeof(float));
    memcpy(r0, buf, n * sizeof(float));
    comm_bcast_f32(c, r0, n, 0);
    double bad = mismatches(buf, r0, n);
    free(r0);
    return bad;
}

/* gpt_copy_params into a second model built for the same shard (c, sh:
 * inference-only, another seed) gives it m's checksum exactly. */
static void check_copy_params(Checks *k, const GPTConfig *c, const GPTShard *sh, const Backend *be, int B, int T,
                              uint64_t seed, const GPT *m, const char *kind) {
    GPT cp;
    gpt_build_shard(&cp, c, sh, be, B, T, 0, seed + 7, 0.2f);
    gpt_copy_params(&cp, m);
    note(k, fabs(gpt_checksum(&cp) - gpt_checksum(m)), 0, "%s gpt_copy_params between same-shard models%s", kind,
         NULL);
    gpt_free(&cp);
}

/* The windowed export and import (gpt_*_logical_window) over random cuts of
 * the logical vector, against the whole-vector ft (nl; NaN where this rank
 * holds nothing) of buffer w, whose local floats are keep: window by window
 * the export gives ft bit for bit (with owners_only, NaN over the tensors
 * this rank is not the canonical owner of), the import gives keep back. */
static void check_windows(Checks *k, GPT *m, int w, const float *ft, size_t nl, const float *keep, const char *kind,
                          const char *bufname) {
    float *fw = nr_xmalloc(nl * sizeof(float)), *fo = nr_xmalloc(nl * sizeof(float));
    float *bufs[4] = {m->params, m->grads, m->m, m->v};
    for (size_t i = 0; i < nl; i++) fw[i] = fo[i] = NAN;
    uint64_t r = 0x9e3779b97f4a7c15ull + (uint64_t)w;
    size_t cuts[64], nc = 0, lo = 0;
    while (lo < nl && nc < 63) { /* windows of 1 float up to a fifth of the vector, cut anywhere */
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        size_t hi = NR_MIN(nl, lo + 1 + (size_t)((r >> 33) % (nl / 5 + 1)));
        if (nc == 62) hi = nl;
        cuts[nc++] = lo;
        lo = hi;
    }
    cuts[nc] = nl;
    for (size_t c = 0; c < nc; c++) {
        gpt_export_logical_window(m, w, cuts[c], cuts[c + 1], 0, fw + cuts[c]);
        gpt_export_logical_window(m, w, cuts[c], cuts[c + 1], 1, fo + cuts[c]);
    }
    note(k, mismatches(fw, ft, nl), 0, "%s export(%s) window by window equals the whole export (mismatches)",
         kind, bufname);
    for (int i = 0; i < m->ntensors; i++)
        if (!gpt_tensor_owner(m, i))
            for (size_t e = 0; e < m->tensors[i].numel; e++) fw[m->tensors[i].loffset + e] = NAN;
    note(k, mismatches(fo, fw, nl), 0, "%s export(%s) of owned tensors window by window (mismatches)", kind, bufname);
    memset(bufs[w], 0, m->nparams * sizeof(float));
    for (size_t c = nc; c-- > 0;) gpt_import_logical_window(m, w, cuts[c], cuts[c + 1], ft + cuts[c]);
    note(k, mismatches(bufs[w], keep, m->nparams), 0, "%s import(%s) window by window, last first (mismatches)", kind,
         bufname);
    free(fw);
    free(fo);
}

/* Round trips of a sharded model's four buffers through the logical vector
 * ft (nl): import(export(x)) is bit-exact, and export writes exactly the
 * elements this rank holds (the rest of ft stays NaN). Leaves the buffers
 * filled with random values (padding zero). */
static void check_export_roundtrip(Checks *k, GPT *m, float *ft, size_t nl, const char *kind) {
    float *keep = nr_xmalloc(m->nparams * sizeof(float));
    const char *bufname[4] = {"params", "grads", "adam m", "adam v"};
    float *bufs[4] = {m->params, m->grads, m->m, m->v};
    for (int w = 0; w < 4; w++) {
        for (size_t i = 0; i < m->nparams; i++) bufs[w][i] = rng_normal(5, RNG_TEST, (uint64_t)w, i);
        for (int i = 0; i < m->ntensors; i++) /* padding left as zero: import never writes it */
            memset(bufs[w] + m->tensors[i].offset + m->tensors[i].lnumel, 0,
                   (((m->tensors[i].lnumel + 15) & ~(size_t)15) - m->tensors[i].lnumel) * sizeof(float));
        memcpy(keep, bufs[w], m->nparams * sizeof(float));
        for (size_t i = 0; i < nl; i++) ft[i] = NAN;
        gpt_export_logical(m, w, ft);
        memset(bufs[w], 0, m->nparams * sizeof(float));
        gpt_import_logical(m, w, ft);
        note(k, mismatches(bufs[w], keep, m->nparams), 0, "%s import(export(%s)) bit-exact (mismatches)", kind,
             bufname[w]);
        size_t untouched = 0, expect = nl;
        for (size_t i = 0; i < nl; i++) untouched += isnan(ft[i]);
        for (int i = 0; i < m->ntensors; i++) expect -= m->tensors[i].lnumel;
        note(k, (double)(untouched != expect), 0, "%s export(%s) writes exactly this rank's held elements", kind,
             bufname[w]);
        check_windows(k, m, w, ft, nl, keep, kind, bufname[w]);
    }
    free(keep);
}

/* one perturbed logical vector (biases, gains, value head non-trivial) into
 * the reference and the sharded model; fr (nl) keeps it */
static void load_perturbed(GPT *ref, GPT *sharded, float *fr, size_t nl) {
    gpt_export_logical(ref, GPT_BUF_PARAMS, fr);
    for (size_t i = 0; i < nl; i++) fr[i] += 0.05f * rng_normal(3, RNG_TEST, 1, i);
    gpt_import_logical(ref, GPT_BUF_PARAMS, fr);
    gpt_import_logical(sharded, GPT_BUF_PARAMS, fr);
}

/* a random batch of BT = B·T tokens and targets (each row's first position
 * skipped) and the weights of a random loss over logp, entropy and values */
static void random_batch(int *tok, int *tg, float *wl, float *we, float *wv, int BT, int T, int V) {
    for (int i = 0; i < BT; i++) {
        tok[i] = rng_below(1, RNG_TEST, 2, i, V);
        tg[i] = (i % T == 0) ? -1 : rng_below(1, RNG_TEST, 3, i, V);
        wl[i] = rng_normal(1, RNG_TEST, 4, i);
        we[i] = 0.3f * rng_normal(1, RNG_TEST, 6, i);
        wv[i] = rng_normal(1, RNG_TEST, 5, i);
    }
}

#endif
