/* test_model_pp.c — pipeline parallelism of the GPT model, alone and combined
 * with tensor parallelism, against the unsharded model, under mpirun
 * (jobs/local.sh -np 8 build/tests/test_model_pp).
 *
 * For each layout (pp, tp) the world is cut into EMUs of pp·tp consecutive
 * ranks (dp = 1, built with emu_build, so the pp, tp and embd groups are the
 * real ones; leftover ranks idle). Every EMU builds a pipelined actor and
 * critic of L = 4 layers and, on every rank, the unsharded model of the same
 * seed, and compares: the tensor table (the pure one, the PP cut, what each
 * stage holds, every logical element owned exactly once), init (bit-exact),
 * the checksum, export/import round trips (bit-exact, exactly the held
 * elements written), then, both models loaded from one perturbed logical
 * vector: logits on the last stage, the broadcast logp / entropy / values on
 * every stage (and bitwise the same on every rank of the model), the
 * gathered logical gradients after a backward and after a second,
 * accumulating one (wte's two copies bitwise equal), the gradient norm,
 * parameters and AdamW state after one gpt_update, the checksums after it,
 * and gpt_copy_params. The batch has B = 5 rows, which neither 2 nor 4
 * microbatches divide; one more actor run asks for more microbatches than
 * rows (capped: one row each). Errors are norm-wise per tensor (≤ 1e-5),
 * reduced over the world and printed once by rank 0, which exits non-zero
 * when any check failed on any rank.
 *
 * With the argument `llama` it runs the same checks on the Llama family at
 * the layouts with tp ≤ 2 (their 2 key/value heads): Llama with grouped-query
 * attention and an untied head (wte on the first stage only, lmhead on the
 * last; actor and critic), and Qwen3 with QK-norm and a tied head (its copy
 * of wte on the last stage, the two gradients summed). */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "model_check.h"
#include "nereus/comm.h"
#include "nereus/emu.h"
#include "nereus/model.h"
#include "nereus/util.h"

/* collective over e->all: mismatches of wte (buffer which) between the first
 * and last stage (over embd); 0 on middle stages */
static double wte_copies_differ(const GPT *m, const Emu *e, const float *buf) {
    if (e->embd == MPI_COMM_NULL || (gpt_is_llama(&m->cfg) && m->cfg.untied)) return 0; /* one copy */
    return diff_from_rank0(e->embd, buf + m->tensors[GPT_WTE].offset, m->tensors[GPT_WTE].lnumel);
}

/* collective over e->all: one model kind at one layout and microbatch count */
/* 1 when stage (first, last) holds table entry i of config c: layer-stacked tensors everywhere (their block),
 * the embeddings on the first stage, a tied wte also on the last, the final norm and the heads on the last */
static int expect_held(const GPTConfig *c, const TensorInfo *t, int i, int first, int last) {
    int stacked = t->ndim >= 2 && t->shape[0] == c->L && i != GPT_WTE && (gpt_is_llama(c) || i != GPT_WPE);
    if (stacked) return 1;
    if (i == GPT_WTE) return first || (last && !(gpt_is_llama(c) && c->untied));
    if (!gpt_is_llama(c) && i == GPT_WPE) return first;
    return last; /* lnf, lmhead, the value head */
}

static void test_one(Checks *k, const Emu *e, GPTConfig c, const char *name, int value_head, int microbatches) {
    char kind[32];
    snprintf(kind, sizeof kind, "%s%s mb=%d", name, value_head ? "critic" : "actor", microbatches);
    /* a row of activations is T·C floats = 12 KB: large enough for the
     * rendezvous path of the point-to-point transfers, not only eager */
    c.value_head = value_head;
    int B = 5, T = 12, BT = B * T;
    const Backend *be = backend_cpu();
    uint64_t seed = 31 + (uint64_t)value_head;
    GPTShard sh = {e->layout.tp, e->coord.t, e->layout.tp > 1 ? e->tp : MPI_COMM_NULL,
                   e->layout.pp, e->coord.p, e->pp, e->embd, microbatches};
    GPT ref, pm;
    gpt_build(&ref, &c, be, B, T, 1, seed, 0.2f);
    gpt_build_shard(&pm, &c, &sh, be, B, T, 1, seed, 0.2f);
    size_t nl = gpt_logical_numel(&c);
    float *fr = nr_xmalloc(nl * sizeof(float)), *ft = nr_xmalloc(nl * sizeof(float));
    int pp = sh.pp, p = sh.pp_rank, first = p == 0, last = p == pp - 1;

    /* table: the pure one is the model's; the PP cut and what each stage holds */
    TensorInfo tt[GPT_NUM_TENSORS];
    int ntt = 0;
    size_t np_pure = gpt_tensor_table_pp(&c, sh.tp, sh.tp_rank, pp, p, tt, &ntt);
    double bad = (double)(np_pure != pm.nparams || ntt != pm.ntensors);
    for (int i = 0; i < ntt && i < pm.ntensors; i++) {
        const TensorInfo *a = &tt[i], *b = &pm.tensors[i];
        bad += strcmp(a->name, b->name) || a->cut_axis != b->cut_axis || a->cut_start != b->cut_start ||
               a->pp_axis != b->pp_axis || a->pp_start != b->pp_start || a->held != b->held ||
               a->owner != b->owner || a->offset != b->offset || a->loffset != b->loffset || a->lnumel != b->lnumel ||
               memcmp(a->lshape, b->lshape, sizeof a->lshape);
        int stacked = b->ndim >= 2 && b->shape[0] == c.L && i != GPT_WTE && (gpt_is_llama(&c) || i != GPT_WPE);
        int held = expect_held(&c, b, i, first, last);
        bad += b->held != held || (b->held && b->pp_axis != (stacked ? 0 : -1)) ||
               (stacked && (b->lshape[0] != c.L / pp || b->pp_start != p * (c.L / pp))) ||
               (!b->held && (b->lnumel != 0 || pm.p[b->role] != NULL));
    }
    /* every logical element owned exactly once over the model's ranks */
    int64_t owned = 0;
    for (int i = 0; i < pm.ntensors; i++) owned += pm.tensors[i].owner ? (int64_t)pm.tensors[i].lnumel : 0;
    comm_allreduce_sum_i64(e->all, &owned, 1);
    bad += owned != (int64_t)nl;
    note(k, bad, 0, "%s tensor table: pure = model's, PP cut and holdings per stage, owners cover the vector once%s",
         kind, NULL);
    note(k, (double)(pm.Ll != c.L / pp || pm.l0 != p * (c.L / pp) || pm.first != first || pm.last != last ||
                     (pm.a.logits != NULL) != last || pm.kcache != NULL),
         0, "%s stage layers, logits on the last stage only, no KV cache%s", kind, NULL);
    gather_logical(&ref, MPI_COMM_NULL, GPT_BUF_PARAMS, fr, nl);
    gather_logical(&pm, e->all, GPT_BUF_PARAMS, ft, nl);
    note(k, mismatches(ft, fr, nl), 0, "%s init: gathered stages equal the unsharded model bit for bit (mismatches)%s",
         kind, NULL);
    note(k, wte_copies_differ(&pm, e, pm.params), 0, "%s init: wte the same on the first and last stage%s", kind,
         NULL);
    double cr = gpt_checksum(&ref), ct = gpt_checksum(&pm);
    note(k, fabs(ct - cr) / cr, 1e-12, "%s checksum equals the unsharded one (rel)%s", kind, NULL);
    float ctf = (float)ct;
    note(k, diff_from_rank0(e->all, &ctf, 1), 0, "%s checksum the same on every rank%s", kind, NULL);

    /* round trips: export then import into a zeroed buffer gives the same local floats */
    check_export_roundtrip(k, &pm, ft, nl, kind);
    gpt_zero_grad(&pm);
    memset(pm.m, 0, pm.nparams * sizeof(float));
    memset(pm.v, 0, pm.nparams * sizeof(float));

    load_perturbed(&ref, &pm, fr, nl);

    int tok[60], tg[60];
    float wl[60], we[60], wv[60], lr_[60], lt[60], er[60], et[60];
    random_batch(tok, tg, wl, we, wv, BT, T, c.V);
    gpt_zero_grad(&ref);
    gpt_zero_grad(&pm);
    for (int pass = 0; pass < 2; pass++) { /* the second pass accumulates onto the first's gradients */
        const char *what = pass ? "grad (2 backwards)" : "grad";
        if (!value_head) {
            gpt_forward(&ref, tok, B, T, 1, 0);
            gpt_forward(&pm, tok, B, T, 1, 0);
            if (pass == 0) {
                note(k, last ? rel_err(pm.a.logits, ref.a.logits, (size_t)BT * c.V) : 0, 1e-5,
                     "%s logits on the last stage (rel)%s", kind, NULL);
                note(k, (double)(pm.nmb != (microbatches > 0 ? NR_MIN(microbatches, B) : NR_MIN(pp, B))), 0,
                     "%s microbatch count (default pp, capped by B)%s", kind, NULL);
            }
            gpt_logprob(&ref, tg, lr_, er);
            gpt_logprob(&pm, tg, lt, et);
            if (pass == 0) {
                note(k, rel_err(lt, lr_, BT), 1e-5, "%s logp on every stage (rel)%s", kind, NULL);
                note(k, rel_err(et, er, BT), 1e-5, "%s entropy on every stage (rel)%s", kind, NULL);
                note(k, diff_from_rank0(e->all, lt, BT) + diff_from_rank0(e->all, et, BT) +
                            diff_from_rank0(e->all, pm.logp, BT) + mismatches(pm.logp, lt, BT),
                     0, "%s logp / entropy (host and m->logp) bitwise the same on every rank (mismatches)%s", kind,
                     NULL);
            }
            gpt_backward(&ref, wl, we, NULL);
            gpt_backward(&pm, wl, we, NULL);
        } else {
            gpt_forward(&ref, tok, B, T, 0, 1);
            gpt_forward(&pm, tok, B, T, 0, 1);
            if (pass == 0) {
                note(k, rel_err(pm.a.values, ref.a.values, BT), 1e-5, "%s values on every stage (rel)%s", kind,
                     NULL);
                note(k, diff_from_rank0(e->all, pm.a.values, BT), 0,
                     "%s values bitwise the same on every rank (mismatches)%s", kind, NULL);
            }
            gpt_backward(&ref, NULL, NULL, wv);
            gpt_backward(&pm, NULL, NULL, wv);
        }
        gather_logical(&ref, MPI_COMM_NULL, GPT_BUF_GRADS, fr, nl);
        gather_logical(&pm, e->all, GPT_BUF_GRADS, ft, nl);
        note_tensors(k, &ref, ft, fr, 1e-5, what, kind);
        note(k, wte_copies_differ(&pm, e, pm.grads), 0, "%s wte gradient the same on the first and last stage%s",
             kind, NULL);
    }
    double rep_bad = 0;
    for (int i = 0; i < pm.ntensors; i++)
        if (pm.tensors[i].cut_axis < 0)
            rep_bad += diff_from_rank0(sh.tp_comm, pm.grads + pm.tensors[i].offset, pm.tensors[i].lnumel);
    note(k, rep_bad, 0, "%s replicated gradients bitwise the same on every TP rank (mismatches)%s", kind, NULL);

    /* one AdamW step with clipping active, from the SAME logical gradients
     * (the unsharded model's, imported on every rank: both wte copies) */
    gpt_import_logical(&pm, GPT_BUF_GRADS, fr);
    float nr = gpt_update(&ref, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f);
    float nt = gpt_update(&pm, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f);
    note(k, fabs((double)nt - nr) / nr, 1e-5, "%s gpt_update gradient norm is the logical one (rel)%s", kind, NULL);
    note(k, diff_from_rank0(e->all, &nt, 1), 0, "%s gpt_update gradient norm the same on every rank%s", kind, NULL);
    gather_logical(&ref, MPI_COMM_NULL, GPT_BUF_PARAMS, fr, nl);
    gather_logical(&pm, e->all, GPT_BUF_PARAMS, ft, nl);
    note_tensors(k, &ref, ft, fr, 1e-5, "params after gpt_update", kind);
    note(k, wte_copies_differ(&pm, e, pm.params), 0, "%s wte after gpt_update the same on the first and last stage%s",
         kind, NULL);
    rep_bad = 0;
    for (int i = 0; i < pm.ntensors; i++)
        if (pm.tensors[i].cut_axis < 0)
            rep_bad += diff_from_rank0(sh.tp_comm, pm.params + pm.tensors[i].offset, pm.tensors[i].lnumel);
    note(k, rep_bad, 0, "%s replicated params after gpt_update bitwise the same on every TP rank (mismatches)%s", kind,
         NULL);
    gather_logical(&pm, e->all, GPT_BUF_ADAM_V, ft, nl);
    check_tensor_hashes(k, &pm, e->all, GPT_BUF_ADAM_V, ft, kind);
    gather_logical(&ref, MPI_COMM_NULL, GPT_BUF_ADAM_V, fr, nl);
    note(k, rel_err(ft, fr, nl), 1e-5, "%s AdamW v after gpt_update (rel)%s", kind, NULL);
    cr = gpt_checksum(&ref);
    ct = gpt_checksum(&pm);
    note(k, fabs(ct - cr) / cr, 1e-6, "%s checksum after gpt_update (rel)%s", kind, NULL);
    for (int i = 0; i < 2; i++) {
        int ti = i ? GPT_WTE : gpt_is_llama(&c) ? 2 : GPT_QKVW; /* wte; qkvw or the Llama family's qw */
        double a = gpt_checksum_tensor(&ref, GPT_BUF_PARAMS, ti), b = gpt_checksum_tensor(&pm, GPT_BUF_PARAMS, ti);
        note(k, fabs(b - a) / a, 1e-6, "%s gpt_checksum_tensor(%s) (rel)", kind, i ? "wte (counted once)" : pm.tensors[ti].name);
    }

    /* gpt_copy_params between two models of the same shard */
    check_copy_params(k, &c, &sh, be, B, T, seed, &pm, kind);

    free(fr);
    free(ft);
    gpt_free(&ref);
    gpt_free(&pm);
}

static const GPTConfig gpt2_cfg = {.V = 15, .maxT = 16, .L = 4, .C = 64, .NH = 4};
static const GPTConfig llama_cfg = {.V = 15, .maxT = 16, .L = 4, .C = 64, .NH = 4, .arch = GPT_ARCH_LLAMA,
                                    .NKV = 2, .ffn = 96, .untied = 1, .rope_theta = 500.0};
static const GPTConfig qwen3_cfg = {.V = 15, .maxT = 16, .L = 4, .C = 64, .NH = 4, .arch = GPT_ARCH_QWEN3,
                                    .NKV = 2, .ffn = 80, .head_dim = 8, .qk_norm = 1, .rope_theta = 100.0,
                                    .norm_eps = 1e-6};

/* collective over e->all: every model of the run on this EMU */
static void test_emu(Checks *k, const Emu *e, int llama) {
    if (!llama) {
        test_one(k, e, gpt2_cfg, "", 0, 0);
        test_one(k, e, gpt2_cfg, "", 1, 0);
        test_one(k, e, gpt2_cfg, "", 0, 7); /* more microbatches than rows: one row each */
        return;
    }
    test_one(k, e, llama_cfg, "llama ", 0, 0);
    test_one(k, e, llama_cfg, "llama ", 1, 0);
    test_one(k, e, qwen3_cfg, "qwen3 ", 0, 3);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = comm_rank(MPI_COMM_WORLD), W = comm_size(MPI_COMM_WORLD);
    int llama = argc > 1 && strcmp(argv[1], "llama") == 0;
    if (argc > 1 && !llama) nr_fatal("usage: test_model_pp [llama]");
    Checks *k = nr_xcalloc(1, sizeof *k);
    backend_cpu()->set_threads(1); /* 8 ranks on 2 cores: no OpenMP workers spinning against each other */
    int layouts[][2] = {{2, 1}, {4, 1}, {2, 2}, {4, 2}, {2, 4}}; /* (pp, tp) */
    int nlay = (int)(sizeof layouts / sizeof layouts[0]);
    for (int li = 0; li < nlay; li++) {
        int pp = layouts[li][0], tp = layouts[li][1], n = pp * tp;
        if (llama && tp > 2) continue; /* the Llama configs have 2 key/value heads */
        if (W < n) {
            if (rank == 0) printf("SKIP pp=%d tp=%d: needs %d ranks, have %d\n", pp, tp, n, W);
            continue;
        }
        int groups = W / n;
        Emu *emus = nr_xcalloc((size_t)groups, sizeof *emus);
        int *ranks = nr_xmalloc((size_t)n * sizeof(int));
        for (int g = 0; g < groups; g++) {
            for (int i = 0; i < n; i++) ranks[i] = g * n + i;
            char name[32];
            snprintf(name, sizeof name, "pp%d.tp%d.%d", pp, tp, g);
            emu_build(&emus[g], MPI_COMM_WORLD, name, (GridLayout){tp, pp, 1}, ranks);
        }
        for (int g = 0; g < groups; g++) {
            if (emus[g].pos < 0) continue;
            test_emu(k, &emus[g], llama);
        }
        char label[32];
        snprintf(label, sizeof label, "pp=%d tp=%d", pp, tp);
        flush(k, label);
        for (int g = 0; g < groups; g++) emu_free(&emus[g]);
        free(emus);
        free(ranks);
    }
    free(k);
    int64_t fails = check_failures;
    comm_allreduce_max_i64(MPI_COMM_WORLD, &fails, 1);
    int rc = 0;
    if (rank == 0) rc = CHECK_DONE();
    MPI_Finalize();
    return rank == 0 ? rc : 0;
}
