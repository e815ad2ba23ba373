/* hf.c — Hugging Face model directories in and out of checkpoints (one
 * process): import-hf reads config.json and the safetensors weights of a
 * GPT2LMHeadModel into a checkpoint's actor and ref; export-hf writes a
 * checkpoint's actor as a directory transformers loads.
 *
 * The tensors map one to one onto ours (tensor_map below): GPT-2's Conv1D
 * weights are stored (in, out), ours (out, in), so those are transposed;
 * per-layer tensors h.{l}.* stack into our (L, ...) tensors. The output
 * head is tied to wte (an lm_head.weight equal to it is accepted). The
 * attention mask buffers older files carry (attn.bias, attn.masked_bias)
 * are not weights and are skipped; any other tensor we do not map, a
 * missing one or a wrong shape is refused with its name. */
#include "nereus/ckpt.h"

/* messages and paths are cut to their buffers on purpose (a long path only shortens the message) */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nereus/backend.h"
#include "nereus/safetensors.h"
#include "nereus/util.h"

/* one of our tensors and its Hugging Face name (%d: the layer) */
typedef struct TensorMap {
    int id;
    const char *hf;
    int nd;        /* its axes in the Hugging Face file: 2 a matrix, 1 a vector */
    int transpose; /* stored (in, out) by Conv1D: ours is the transpose */
} TensorMap;

/* our shape of one layer's block of tensor ti (of all of it when not per layer) as the Hugging Face file
 * holds it before any transpose: a matrix (rows, last axis), (3, C, C) read as (3C, C), or a vector */
static int block_shape(const TensorInfo *ti, const TensorMap *e, int layered, int shape[2]) {
    size_t per = ti->numel / (size_t)(layered ? ti->shape[0] : 1);
    shape[1] = e->nd == 2 ? ti->shape[ti->ndim - 1] : 0;
    shape[0] = (int)(e->nd == 2 ? per / (size_t)shape[1] : per);
    return e->nd;
}

static const TensorMap tensor_map[] = {
    {GPT_WTE, "wte.weight", 2, 0},
    {GPT_WPE, "wpe.weight", 2, 0},
    {GPT_LN1W, "h.%d.ln_1.weight", 1, 0},
    {GPT_LN1B, "h.%d.ln_1.bias", 1, 0},
    {GPT_QKVW, "h.%d.attn.c_attn.weight", 2, 1},
    {GPT_QKVB, "h.%d.attn.c_attn.bias", 1, 0},
    {GPT_ATTPROJW, "h.%d.attn.c_proj.weight", 2, 1},
    {GPT_ATTPROJB, "h.%d.attn.c_proj.bias", 1, 0},
    {GPT_LN2W, "h.%d.ln_2.weight", 1, 0},
    {GPT_LN2B, "h.%d.ln_2.bias", 1, 0},
    {GPT_FCW, "h.%d.mlp.c_fc.weight", 2, 1},
    {GPT_FCB, "h.%d.mlp.c_fc.bias", 1, 0},
    {GPT_FCPROJW, "h.%d.mlp.c_proj.weight", 2, 1},
    {GPT_FCPROJB, "h.%d.mlp.c_proj.bias", 1, 0},
    {GPT_LNFW, "ln_f.weight", 1, 0},
    {GPT_LNFB, "ln_f.bias", 1, 0},
};
#define NMAP ((int)(sizeof tensor_map / sizeof tensor_map[0]))

/* ---- config.json ------------------------------------------------------------ */

static int json_int(const cJSON *root, const char *key, int *out) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsNumber(x) || x->valuedouble != (double)(int)x->valuedouble || x->valuedouble < 1) return -1;
    *out = (int)x->valuedouble;
    return 0;
}

/* the values a GPT2LMHeadModel may hold that we compute differently: refused, naming the key */
static int gpt2_unsupported(const cJSON *root, const char *path, char *why, size_t len) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation_function");
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_epsilon");
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(root, "n_inner");
    if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "gelu_new") != 0))
        snprintf(why, len, "%s: activation_function %s: only gelu_new (GELU, tanh approximation) is supported", path,
                 cJSON_IsString(act) ? act->valuestring : "(not a string)");
    else if (eps && (!cJSON_IsNumber(eps) || fabs(eps->valuedouble - 1e-5) > 1e-12))
        snprintf(why, len, "%s: layer_norm_epsilon %g: only 1e-5 is supported", path, eps->valuedouble);
    else if (tie && !cJSON_IsTrue(tie))
        snprintf(why, len, "%s: tie_word_embeddings false: GPT-2's output head is tied to wte here", path);
    else if (inner && !cJSON_IsNull(inner))
        snprintf(why, len, "%s: n_inner is set: the MLP here is 4 x n_embd wide", path);
    else
        return 0;
    return -1;
}

/* the GPTConfig of dir/config.json (a GPT2LMHeadModel); -1 with why naming the file and the key */
static int read_config(const char *dir, GPTConfig *c, char *why, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t n = 0;
    char *js = nr_read_text(path, 1 << 20, &n, why, len);
    if (!js) return -1;
    cJSON *root = cJSON_ParseWithLength(js, n);
    free(js);
    const cJSON *arch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "architectures"), 0);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    int rc = -1;
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(root))
        snprintf(why, len, "%s: not a JSON object", path);
    else if (!cJSON_IsString(arch) && !cJSON_IsString(mt))
        snprintf(why, len, "%s: neither \"architectures\" nor \"model_type\" names the model", path);
    else if (cJSON_IsString(arch) ? strcmp(arch->valuestring, "GPT2LMHeadModel") != 0
                                  : strcmp(mt->valuestring, "gpt2") != 0)
        snprintf(why, len, "%s: architecture %s is not supported (this build imports GPT2LMHeadModel)", path,
                 cJSON_IsString(arch) ? arch->valuestring : mt->valuestring);
    else if (json_int(root, "vocab_size", &c->V) || json_int(root, "n_positions", &c->maxT) ||
             json_int(root, "n_layer", &c->L) || json_int(root, "n_embd", &c->C) || json_int(root, "n_head", &c->NH))
        snprintf(why, len, "%s: vocab_size, n_positions, n_layer, n_embd and n_head must be positive integers", path);
    else if (c->C % c->NH != 0)
        snprintf(why, len, "%s: n_head %d does not divide n_embd %d", path, c->NH, c->C);
    else
        rc = gpt2_unsupported(root, path, why, len);
    cJSON_Delete(root);
    return rc;
}

/* ---- import ---------------------------------------------------------------------- */

/* "transformer." when the weights carry GPT2LMHeadModel's prefix, "" for a bare GPT2Model */
static const char *name_prefix(const StModel *st) { return st_find(st, "transformer.wte.weight") ? "transformer." : ""; }

static void hf_name(char *buf, size_t n, const char *prefix, const TensorMap *e, int layer) {
    char part[128];
    snprintf(part, sizeof part, e->hf, layer);
    snprintf(buf, n, "%s%s", prefix, part);
}

/* one HF tensor (its expected logical shape `shape`, 1 or 2 dims) into dst, transposed when asked */
static int read_one(const StModel *st, const char *name, const int *shape, int nd, int transpose, float *dst,
                    char *why, size_t len) {
    const StTensor *t = st_find(st, name);
    if (!t) {
        snprintf(why, len, "%s: tensor %s is missing", st->paths[0], name);
        return -1;
    }
    int want[2] = {transpose ? shape[1] : shape[0], transpose ? shape[0] : shape[1]};
    if (t->ndim != nd || t->shape[0] != want[0] || (nd == 2 && t->shape[1] != want[1])) {
        char got[128] = "(", exp[64];
        for (int d = 0; d < t->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        snprintf(exp, sizeof exp, nd == 2 ? "(%d, %d)" : "(%d)", want[0], want[1]);
        snprintf(why, len, "%s: tensor %s has shape %s), the config gives %s", st->paths[t->file], name, got, exp);
        return -1;
    }
    size_t n = st_numel(t);
    float *tmp = transpose ? nr_xmalloc(n * sizeof(float)) : dst;
    int rc = st_read_f32(st, t, tmp, why, len);
    if (!rc && transpose)
        for (int i = 0; i < want[0]; i++)
            for (int j = 0; j < want[1]; j++) dst[(size_t)j * want[0] + i] = tmp[(size_t)i * want[1] + j];
    if (transpose) free(tmp);
    for (size_t i = 0; !rc && i < n; i++)
        if (!isfinite(dst[i])) {
            snprintf(why, len, "%s: tensor %s holds %s at element %zu: not a weight", st->paths[t->file], name,
                     isnan(dst[i]) ? "NaN" : "an infinity", i);
            rc = -1;
        }
    return rc;
}

/* every mapped tensor into full (our logical vector); each HF name consumed is marked in used[] */
static int read_tensors(const StModel *st, const GPTConfig *c, float *full, char *used, char *why, size_t len) {
    TensorInfo t[GPT_NUM_TENSORS];
    int nt;
    gpt_tensor_table(c, 1, 0, t, &nt);
    const char *prefix = name_prefix(st);
    for (int k = 0; k < NMAP; k++) {
        const TensorMap *e = &tensor_map[k];
        const TensorInfo *ti = &t[e->id];
        int layered = strchr(e->hf, '%') != NULL, nl = layered ? c->L : 1, shape[2];
        int nd = block_shape(ti, e, layered, shape);
        size_t per = ti->numel / (size_t)nl;
        for (int l = 0; l < nl; l++) {
            char name[256];
            hf_name(name, sizeof name, prefix, e, l);
            if (read_one(st, name, shape, nd, e->transpose, full + ti->loffset + (size_t)l * per, why, len)) return -1;
            used[st_find(st, name) - st->t] = 1;
        }
    }
    return 0;
}

/* tensors the map did not consume: a tied lm_head equal to wte and the mask buffers pass, the rest is refused */
static int check_leftovers(const StModel *st, const GPTConfig *c, const float *full, const char *used, char *why,
                           size_t len) {
    for (int i = 0; i < st->nt; i++) {
        const StTensor *t = &st->t[i];
        const char *dot = strrchr(t->name, '.');
        if (used[i] || (dot && (!strcmp(dot, ".masked_bias") || (!strcmp(dot, ".bias") && strstr(t->name, ".attn.bias")))))
            continue;
        if (!strcmp(t->name, "lm_head.weight") && t->ndim == 2 && t->shape[0] == c->V && t->shape[1] == c->C) {
            size_t n = st_numel(t);
            float *h = nr_xmalloc(n * sizeof(float));
            int same = st_read_f32(st, t, h, why, len) == 0 && memcmp(h, full, n * sizeof(float)) == 0;
            free(h);
            if (same) continue;
            snprintf(why, len, "%s: lm_head.weight differs from wte: an untied output head is not supported for GPT-2",
                     st->paths[t->file]);
            return -1;
        }
        snprintf(why, len, "%s: tensor %s is not part of a GPT2LMHeadModel (refused rather than dropped)",
                 st->paths[t->file], t->name);
        return -1;
    }
    return 0;
}

/* what the import converted, for its message: "" or " (BF16 converted to fp32)" */
static void dtype_note(const StModel *st, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < st->nt; i++)
        if (strcmp(st->t[i].dtype, "F32") != 0 && !strstr(buf, st->t[i].dtype))
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? ", " : " (", st->t[i].dtype);
    if (buf[0]) snprintf(buf + strlen(buf), n - strlen(buf), " converted to fp32)");
}

int ckpt_import_hf(const char *dir, const char *out_path, char *note, size_t note_len, char *why, size_t len) {
    GPTConfig c;
    StModel st;
    if (read_config(dir, &c, why, len) || st_open_dir(&st, dir, why, len)) return -2;
    size_t nl = gpt_logical_numel(&c);
    float *full = nr_xmalloc(nl * sizeof(float));
    char *used = nr_xcalloc((size_t)st.nt + 1, 1);
    int rc = read_tensors(&st, &c, full, used, why, len) || check_leftovers(&st, &c, full, used, why, len) ? -2 : 0;
    if (!rc) {
        dtype_note(&st, note, note_len);
        GPT m;
        gpt_build(&m, &c, backend_cpu(), 1, 1, 0, 0, 0.02f);
        gpt_import_logical(&m, GPT_BUF_PARAMS, full);
        char plan[4096 + 64];
        snprintf(plan, sizeof plan, "imported from Hugging Face directory %s (1 process)\n", dir);
        CkptMeta meta = {0, 0, 0, "", plan};
        CkptModel ms[2] = {{"actor", &c, &m, 1, 0}, {"ref", &c, &m, 1, 0}};
        rc = ckpt_write(out_path, MPI_COMM_SELF, &meta, ms, 2, why, len);
        gpt_free(&m);
    }
    free(used);
    free(full);
    st_close(&st);
    return rc;
}

/* ---- export ------------------------------------------------------------------------ */

static int write_config(const char *dir, const GPTConfig *c, int V, char *why, size_t len) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "architectures", cJSON_CreateStringArray((const char *[]){"GPT2LMHeadModel"}, 1));
    cJSON_AddStringToObject(r, "model_type", "gpt2");
    cJSON_AddNumberToObject(r, "vocab_size", V);
    cJSON_AddNumberToObject(r, "n_positions", c->maxT);
    cJSON_AddNumberToObject(r, "n_embd", c->C);
    cJSON_AddNumberToObject(r, "n_layer", c->L);
    cJSON_AddNumberToObject(r, "n_head", c->NH);
    cJSON_AddNumberToObject(r, "layer_norm_epsilon", 1e-5);
    cJSON_AddStringToObject(r, "activation_function", "gelu_new");
    cJSON_AddTrueToObject(r, "tie_word_embeddings");
    cJSON_AddStringToObject(r, "dtype", "float32");
    char *js = cJSON_Print(r), path[4096];
    cJSON_Delete(r);
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = nr_write_text(path, js, why, len);
    cJSON_free(js);
    return rc;
}

/* the HF tensors of the logical vector full: per-layer slices named h.{l}.*, Conv1D weights transposed
 * into bufs (freed by the caller); wte cut to the real vocabulary V */
static int export_tensors(const GPTConfig *c, int V, const float *full, StOut *out, float **bufs, char (*names)[96]) {
    TensorInfo t[GPT_NUM_TENSORS];
    int nt, n = 0;
    gpt_tensor_table(c, 1, 0, t, &nt);
    for (int k = 0; k < NMAP; k++) {
        const TensorMap *e = &tensor_map[k];
        const TensorInfo *ti = &t[e->id];
        int layered = strchr(e->hf, '%') != NULL, nl = layered ? c->L : 1, shape[2];
        int nd = block_shape(ti, e, layered, shape);
        size_t per = ti->numel / (size_t)nl;
        for (int l = 0; l < nl; l++, n++) {
            hf_name(names[n], sizeof names[n], "transformer.", e, l);
            StOut *o = &out[n];
            *o = (StOut){.name = names[n], .data = full + ti->loffset + (size_t)l * per, .ndim = nd};
            for (int d = 0; d < nd; d++) o->shape[d] = shape[e->transpose ? nd - 1 - d : d];
            if (e->id == GPT_WTE) o->shape[0] = V;
            if (!e->transpose) continue;
            bufs[n] = nr_xmalloc(per * sizeof(float));
            for (int i = 0; i < shape[0]; i++)
                for (int j = 0; j < shape[1]; j++) bufs[n][(size_t)j * shape[0] + i] = o->data[(size_t)i * shape[1] + j];
            o->data = bufs[n];
        }
    }
    return n;
}

int ckpt_export_hf(const char *path, const char *dir, char *why, size_t len) {
    GPTConfig c;
    GPT m;
    if (ckpt_load_model(path, "actor", &m, &c, 1, 1, why, len)) return -1;
    if (c.value_head) {
        gpt_free(&m);
        snprintf(why, len, "%s: the actor has a value head; a GPT2LMHeadModel has none", path);
        return -1;
    }
    size_t nl = gpt_logical_numel(&c);
    float *full = nr_xmalloc(nl * sizeof(float));
    gpt_export_logical(&m, GPT_BUF_PARAMS, full);
    gpt_free(&m);
    int nmax = NMAP * c.L;
    StOut *out = nr_xcalloc((size_t)nmax, sizeof *out);
    float **bufs = nr_xcalloc((size_t)nmax, sizeof *bufs);
    char(*names)[96] = nr_xcalloc((size_t)nmax, sizeof *names);
    int n = export_tensors(&c, gpt_real_vocab(&c), full, out, bufs, names), rc = -1;
    char st_path[4096];
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        snprintf(why, len, "%s: cannot create the directory: %s", dir, strerror(errno));
    else if (write_config(dir, &c, gpt_real_vocab(&c), why, len) == 0)
        rc = st_write_f32(st_path, out, n, why, len);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(names);
    free(out);
    free(full);
    return rc;
}
