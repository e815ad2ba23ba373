/* test_model_tp.c — Megatron tensor parallelism of the GPT model against the
 * unsharded model, under mpirun (jobs/local.sh -np 4 build/tests/test_model_tp).
 *
 * For tp in {1, 2, 4} the world is cut into groups of tp consecutive ranks
 * (leftover ranks idle); every group builds a sharded actor and critic and,
 * on every rank, the unsharded (gpt_build) model of the same seed, and
 * compares: init (bit-exact), checksum, logical import/export round trips
 * (bit-exact), then, with both models loaded from one perturbed logical
 * vector, logits, values, logp/entropy, the gathered logical gradients of a
 * random loss (norm-wise per tensor), the gradient norm and parameters after
 * one gpt_update, KV-cached decode logits, and that replicated tensors and
 * outputs are bitwise the same on every TP rank. Each check is reduced over
 * the world (worst error, every group) and printed once by rank 0; rank 0
 * exits non-zero when any check failed anywhere.
 *
 * With the argument `llama` it runs the same checks on the Llama family
 * instead, at tp in {1, 2}: Llama with grouped-query attention (4 query heads,
 * 2 key/value heads), Llama-3 RoPE scaling and an untied head (actor and
 * critic), Qwen2 with q/k/v biases and a tied head, Qwen3 with QK-norm (the
 * replicated norm weights' gradients summed over the TP group). */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "model_check.h"
#include "nereus/comm.h"
#include "nereus/model.h"
#include "nereus/util.h"

/* collective over sh->tp_comm: one model kind (actor or critic) at one tp */
static void test_one(Checks *k, const GPTShard *sh, GPTConfig c, const char *name, int value_head) {
    char kind[16];
    snprintf(kind, sizeof kind, "%s%s", name, value_head ? "critic" : "actor");
    c.value_head = value_head;
    int B = 3, T = 10, P = 4, BT = B * T;
    const Backend *be = backend_cpu();
    uint64_t seed = 21 + (uint64_t)value_head;
    GPT ref, tp;
    gpt_build(&ref, &c, be, B, T, 1, seed, 0.2f);
    gpt_build_shard(&tp, &c, sh, be, B, T, 1, seed, 0.2f);
    size_t nl = gpt_logical_numel(&c);
    float *fr = nr_xmalloc(nl * sizeof(float)), *ft = nr_xmalloc(nl * sizeof(float));

    /* table and init */
    size_t sum_l = 0, sum_local = 0;
    for (int i = 0; i < tp.ntensors; i++) sum_l += tp.tensors[i].numel, sum_local += tp.tensors[i].lnumel;
    TensorInfo tt[GPT_NUM_TENSORS];
    int ntt = 0;
    size_t np_pure = gpt_tensor_table(&c, sh->tp, sh->tp_rank, tt, &ntt);
    for (int i = 0; i < ntt && i < tp.ntensors; i++) {
        const TensorInfo *a = &tt[i], *b = &tp.tensors[i];
        if (strcmp(a->name, b->name) || a->cut_axis != b->cut_axis || a->cut_start != b->cut_start ||
            a->offset != b->offset || a->loffset != b->loffset || a->lnumel != b->lnumel ||
            memcmp(a->lshape, b->lshape, sizeof a->lshape))
            np_pure = 0; /* fails below */
    }
    size_t expect_local = sum_l; /* cut tensors are 1/tp of their logical size */
    for (int i = 0; i < tp.ntensors; i++)
        if (tp.tensors[i].cut_axis >= 0) expect_local -= tp.tensors[i].numel - tp.tensors[i].numel / sh->tp;
    note(k, (double)(sum_l != nl) + (double)(tp.nparams < sum_local) + (double)(sum_local != expect_local) +
            (double)(np_pure != tp.nparams || ntt != tp.ntensors),
         0, "%s tensor table: logical numel = gpt_logical_numel, local = 1/tp of cut tensors, pure table = model's%s",
         kind, NULL);
    gather_logical(&ref, MPI_COMM_NULL, GPT_BUF_PARAMS, fr, nl);
    gather_logical(&tp, tp.sh.tp_comm, GPT_BUF_PARAMS, ft, nl);
    note(k, mismatches(ft, fr, nl), 0, "%s init: gathered shards equal the unsharded model bit for bit (mismatches)%s",
         kind, NULL);
    double cr = gpt_checksum(&ref), ct = gpt_checksum(&tp);
    note(k, fabs(ct - cr) / cr, 1e-12, "%s checksum equals the unsharded one (rel)%s", kind, NULL);

    /* round trips: export then import into a zeroed buffer gives the same local floats */
    check_export_roundtrip(k, &tp, ft, nl, kind);
    gpt_zero_grad(&tp);
    memset(tp.m, 0, tp.nparams * sizeof(float));
    memset(tp.v, 0, tp.nparams * sizeof(float));

    load_perturbed(&ref, &tp, fr, nl);

    int tok[30], tg[30];
    float wl[30], we[30], wv[30], lr_[30], lt[30], er[30], et[30];
    random_batch(tok, tg, wl, we, wv, BT, T, c.V);
    gpt_zero_grad(&ref);
    gpt_zero_grad(&tp);
    if (!value_head) {
        gpt_forward(&ref, tok, B, T, 1, 0);
        gpt_forward(&tp, tok, B, T, 1, 0);
        note(k, rel_err(tp.a.logits, ref.a.logits, (size_t)BT * c.V), 1e-5,
             "%s logits after importing the unsharded logical params (rel)%s", kind, NULL);
        note(k, diff_from_rank0(sh->tp_comm, tp.a.logits, (size_t)BT * c.V), 0,
             "%s logits bitwise the same on every TP rank (mismatches)%s", kind, NULL);
        gpt_logprob(&ref, tg, lr_, er);
        gpt_logprob(&tp, tg, lt, et);
        note(k, rel_err(lt, lr_, BT), 1e-5, "%s logp (rel)%s", kind, NULL);
        note(k, rel_err(et, er, BT), 1e-5, "%s entropy (rel)%s", kind, NULL);
        gpt_backward(&ref, wl, we, NULL);
        gpt_backward(&tp, wl, we, NULL);
    } else {
        gpt_forward(&ref, tok, B, T, 0, 1);
        gpt_forward(&tp, tok, B, T, 0, 1);
        note(k, rel_err(tp.a.values, ref.a.values, BT), 1e-5,
             "%s values after importing the unsharded logical params (rel)%s", kind, NULL);
        note(k, diff_from_rank0(sh->tp_comm, tp.a.values, BT), 0,
             "%s values bitwise the same on every TP rank (mismatches)%s", kind, NULL);
        gpt_backward(&ref, NULL, NULL, wv);
        gpt_backward(&tp, NULL, NULL, wv);
    }
    gather_logical(&ref, MPI_COMM_NULL, GPT_BUF_GRADS, fr, nl);
    gather_logical(&tp, tp.sh.tp_comm, GPT_BUF_GRADS, ft, nl);
    note_tensors(k, &ref, ft, fr, 1e-5, "grad", kind);
    double rep_bad = 0;
    for (int i = 0; i < tp.ntensors; i++)
        if (tp.tensors[i].cut_axis < 0)
            rep_bad += diff_from_rank0(sh->tp_comm, tp.grads + tp.tensors[i].offset, tp.tensors[i].lnumel);
    note(k, rep_bad, 0, "%s replicated gradients bitwise the same on every TP rank (mismatches)%s", kind, NULL);

    /* one AdamW step with clipping active, from the SAME logical gradients
     * (the unsharded model's, imported): this checks gpt_update itself. From
     * each model's own gradients the parameters would differ where a gradient
     * is analytically zero and only rounding noise (the k bias: softmax is
     * shift-invariant), since Adam's g/sqrt(v) turns noise into ±lr steps. */
    gpt_import_logical(&tp, GPT_BUF_GRADS, fr);
    float nr = gpt_update(&ref, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f);
    float nt = gpt_update(&tp, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f);
    note(k, fabs((double)nt - nr) / nr, 1e-5, "%s gpt_update gradient norm is the logical one (rel)%s", kind, NULL);
    gather_logical(&ref, MPI_COMM_NULL, GPT_BUF_PARAMS, fr, nl);
    gather_logical(&tp, tp.sh.tp_comm, GPT_BUF_PARAMS, ft, nl);
    note_tensors(k, &ref, ft, fr, 1e-5, "params after gpt_update", kind);
    rep_bad = 0;
    for (int i = 0; i < tp.ntensors; i++)
        if (tp.tensors[i].cut_axis < 0)
            rep_bad += diff_from_rank0(sh->tp_comm, tp.params + tp.tensors[i].offset, tp.tensors[i].lnumel);
    note(k, rep_bad, 0, "%s replicated params after gpt_update bitwise the same on every TP rank (mismatches)%s", kind,
         NULL);
    gather_logical(&tp, tp.sh.tp_comm, GPT_BUF_ADAM_V, ft, nl);
    check_tensor_hashes(k, &tp, tp.sh.tp_comm, GPT_BUF_ADAM_V, ft, kind);
    gather_logical(&ref, MPI_COMM_NULL, GPT_BUF_ADAM_V, fr, nl);
    note(k, rel_err(ft, fr, nl), 1e-5, "%s AdamW v after gpt_update (rel)%s", kind, NULL);
    cr = gpt_checksum(&ref);
    ct = gpt_checksum(&tp);
    note(k, fabs(ct - cr) / cr, 1e-6, "%s checksum after gpt_update (rel)%s", kind, NULL);
    int qi = gpt_is_llama(&c) ? 2 : GPT_QKVW; /* qkvw, or the Llama family's qw */
    double ctr = gpt_checksum_tensor(&ref, GPT_BUF_PARAMS, qi), ctt = gpt_checksum_tensor(&tp, GPT_BUF_PARAMS, qi);
    note(k, fabs(ctt - ctr) / ctr, 1e-6, "%s gpt_checksum_tensor(%s) (rel)", kind, tp.tensors[qi].name);

    /* KV-cached decode against the unsharded model's decode and full forward */
    if (!value_head) {
        int ptok[12], step[3];
        float gr[3 * 15], gt[3 * 15];
        double worst = 0, worst_full = 0, rank_bad = 0;
        for (int b = 0; b < B; b++) memcpy(ptok + b * P, tok + b * T, P * sizeof(int));
        gpt_forward(&ref, tok, B, T, 1, 0);
        float *full = nr_xmalloc((size_t)BT * c.V * sizeof(float));
        memcpy(full, ref.a.logits, (size_t)BT * c.V * sizeof(float));
        gpt_prefill(&ref, ptok, B, P, gr);
        gpt_prefill(&tp, ptok, B, P, gt);
        for (int pos = P - 1; pos < T; pos++) {
            if (pos >= P) {
                for (int b = 0; b < B; b++) step[b] = tok[b * T + pos];
                gpt_decode(&ref, step, B, pos, gr);
                gpt_decode(&tp, step, B, pos, gt);
            }
            worst = fmax(worst, rel_err(gt, gr, (size_t)B * c.V));
            float rows[3 * 15];
            for (int b = 0; b < B; b++) memcpy(rows + b * c.V, full + ((size_t)b * T + pos) * c.V, c.V * sizeof(float));
            worst_full = fmax(worst_full, rel_err(gt, rows, (size_t)B * c.V));
            rank_bad += diff_from_rank0(sh->tp_comm, gt, (size_t)B * c.V);
        }
        free(full);
        note(k, worst, 1e-5, "%s KV-cached prefill/decode logits vs the unsharded decode (rel)%s", kind, NULL);
        note(k, worst_full, 1e-5, "%s KV-cached decode logits vs the unsharded full forward (rel)%s", kind, NULL);
        note(k, rank_bad, 0, "%s decode logits bitwise the same on every TP rank (mismatches)%s", kind, NULL);
        /* the cache holds this rank's heads only */
        size_t hs = (size_t)gpt_head_dim(&c);
        note(k, (double)(tp.NHl * sh->tp != c.NH || tp.NKVl * sh->tp != gpt_kv_heads(&c) || tp.Cl != (int)(tp.NHl * hs)),
             0, "%s KV cache sized for NKV/tp heads, NH/tp query heads%s", kind, NULL);
    }

    /* gpt_copy_params between two models of the same shard */
    check_copy_params(k, &c, sh, be, B, T, seed, &tp, kind);

    free(fr);
    free(ft);
    gpt_free(&ref);
    gpt_free(&tp);
}

/* the configs of one run: GPT-2 (value head set per kind), or the Llama family's three (llama) */
static const GPTConfig gpt2_cfg = {.V = 15, .maxT = 16, .L = 2, .C = 32, .NH = 4};
static const GPTConfig llama_cfgs[3] = {
    {.V = 15, .maxT = 16, .L = 2, .C = 32, .NH = 4, .arch = GPT_ARCH_LLAMA, .NKV = 2, .ffn = 48, .untied = 1,
     .rope_llama3 = 1, .rope_orig_ctx = 8, .rope_theta = 500.0, .rope_factor = 8.0, .rope_low_freq = 1.0,
     .rope_high_freq = 4.0},
    {.V = 15, .maxT = 16, .L = 2, .C = 32, .NH = 4, .arch = GPT_ARCH_QWEN2, .NKV = 2, .ffn = 40, .qkv_bias = 1,
     .rope_theta = 100.0, .norm_eps = 1e-6},
    {.V = 15, .maxT = 16, .L = 2, .C = 32, .NH = 4, .arch = GPT_ARCH_QWEN3, .NKV = 2, .ffn = 40, .head_dim = 6,
     .untied = 1, .qk_norm = 1, .rope_theta = 100.0, .norm_eps = 1e-6}};
static const char *const llama_names[3] = {"llama gqa ", "qwen2 ", "qwen3 "};

/* collective over sh->tp_comm: every model of the run at this shard */
static void test_shard(Checks *k, const GPTShard *sh, int llama) {
    if (!llama) {
        test_one(k, sh, gpt2_cfg, "", 0);
        test_one(k, sh, gpt2_cfg, "", 1);
        return;
    }
    for (int v = 0; v < 3; v++) test_one(k, sh, llama_cfgs[v], llama_names[v], 0);
    test_one(k, sh, llama_cfgs[0], llama_names[0], 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = comm_rank(MPI_COMM_WORLD), W = comm_size(MPI_COMM_WORLD);
    int llama = argc > 1 && strcmp(argv[1], "llama") == 0;
    if (argc > 1 && !llama) nr_fatal("usage: test_model_tp [llama]");
    Checks *k = nr_xcalloc(1, sizeof *k);
    int tps[3] = {1, 2, 4};
    for (int i = 0; i < (llama ? 2 : 3); i++) { /* the Llama configs have 2 key/value heads: tp ≤ 2 */
        int t = tps[i];
        if (W < t) {
            if (rank == 0) printf("SKIP tp=%d: needs %d ranks, have %d\n", t, t, W);
            continue;
        }
        int groups = W / t, color = rank < groups * t ? rank / t : MPI_UNDEFINED;
        MPI_Comm g = MPI_COMM_NULL;
        mpiCheck(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &g));
        if (g != MPI_COMM_NULL) {
            GPTShard sh = {.tp = t, .tp_rank = comm_rank(g), .tp_comm = t > 1 ? g : MPI_COMM_NULL}; /* pp = 0: no pipeline */
            test_shard(k, &sh, llama);
            mpiCheck(MPI_Comm_free(&g));
        }
        char label[16];
        snprintf(label, sizeof label, "tp=%d", t);
        flush(k, label);
    }
    free(k);
    int64_t fails = check_failures;
    comm_allreduce_max_i64(MPI_COMM_WORLD, &fails, 1);
    int rc = 0;
    if (rank == 0) rc = CHECK_DONE();
    MPI_Finalize();
    return rank == 0 ? rc : 0;
}
