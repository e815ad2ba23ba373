/* hf.c — Hugging Face model directories in and out of checkpoints (one
 * process): import-hf reads config.json and the safetensors weights of a
 * GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM or Qwen3ForCausalLM
 * into a checkpoint's actor and ref; export-hf writes a checkpoint's actor
 * as a directory transformers loads.
 *
 * Each Hugging Face tensor is one piece (HfPiece) of one layer's block of
 * one of our tensors: GPT-2's map one to one (tensor_map below; its Conv1D
 * weights are stored (in, out), ours (out, in), so those are transposed);
 * the Llama family's q projection is our qw, k and v are the two blocks of
 * kvw (their biases: qb, kvb), gate and up the two blocks of fcw (that map
 * is import_map.c's, shared with the GGUF import, gguf_import.c). Per-layer
 * tensors (%d: the layer) stack into our (L, ...) tensors. A tied output
 * head is wte (an lm_head.weight equal to it is accepted). Buffers that are
 * not weights (GPT-2's attn.bias and attn.masked_bias masks, older Llama
 * files' rotary_emb.inv_freq) are skipped; any other tensor we do not map, a
 * missing one or a wrong shape is refused with its name. config.json is read
 * in both the transformers 4 layout (rope_theta, rope_scaling) and the 5
 * layout (rope_parameters); values computed otherwise here are refused,
 * naming the key. */
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
#include "nereus/task.h"
#include "nereus/text.h"
#include "nereus/tokspec.h"
#include "nereus/util.h"
#include "import_int.h"

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

static int gpt2_pieces(const TensorInfo *t, HfPiece *p) {
    for (int k = 0; k < NMAP; k++) {
        const TensorMap *e = &tensor_map[k];
        p[k] = (HfPiece){e->id, e->hf, 0, {0, 0}, e->transpose, 0, NULL};
        p[k].nd = block_shape(&t[e->id], e, strchr(e->hf, '%') != NULL, p[k].shape);
    }
    return NMAP;
}

/* the pieces of cfg's architecture into p (MAX_PIECES), with the logical table t (nt) they index */
static int hf_pieces(const GPTConfig *c, TensorInfo *t, int *nt, HfPiece *p) {
    gpt_tensor_table(c, 1, 0, t, nt);
    return gpt_is_llama(c) ? import_llama_pieces(c, p) : gpt2_pieces(t, p);
}

/* the class transformers names an architecture by, and its model_type */
static const char *const arch_class[GPT_NUM_ARCHS] = {"GPT2LMHeadModel", "LlamaForCausalLM", "Qwen2ForCausalLM",
                                                      "Qwen3ForCausalLM"};

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

static int read_gpt2_config(const cJSON *root, const char *path, GPTConfig *c, char *why, size_t len) {
    if (json_int(root, "vocab_size", &c->V) || json_int(root, "n_positions", &c->maxT) ||
        json_int(root, "n_layer", &c->L) || json_int(root, "n_embd", &c->C) || json_int(root, "n_head", &c->NH)) {
        snprintf(why, len, "%s: vocab_size, n_positions, n_layer, n_embd and n_head must be positive integers", path);
        return -1;
    }
    if (c->C % c->NH != 0) {
        snprintf(why, len, "%s: n_head %d does not divide n_embd %d", path, c->NH, c->C);
        return -1;
    }
    return gpt2_unsupported(root, path, why, len);
}

/* an optional number of o: absent or null gives def; 1 when it is there and not a number */
static int json_num_opt(const cJSON *o, const char *key, double def, double *out) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = def;
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsNumber(x)) return 1;
    *out = x->valuedouble;
    return 0;
}

/* an optional boolean of o: absent or null gives 0; −1 when it is not a boolean */
static int json_flag(const cJSON *o, const char *key) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!x || cJSON_IsNull(x)) return 0;
    return cJSON_IsBool(x) ? cJSON_IsTrue(x) : -1;
}

/* RoPE: transformers 5's rope_parameters {rope_type, rope_theta, ...}, or 4's rope_theta beside rope_scaling
 * {rope_type (or type), factor, ...}; default and llama3 types */
static int llama_rope(const cJSON *root, const char *path, GPTConfig *c, char *why, size_t len) {
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    const cJSON *r = cJSON_IsObject(rp) ? rp : cJSON_IsObject(rs) ? rs : NULL;
    const char *key = r == rp ? "rope_parameters" : "rope_scaling";
    const cJSON *ty = r ? cJSON_GetObjectItemCaseSensitive(r, "rope_type") : NULL;
    if (r && !ty) ty = cJSON_GetObjectItemCaseSensitive(r, "type");
    const char *type = cJSON_IsString(ty) ? ty->valuestring : "default";
    double prf = 1.0, orig = 0;
    if (json_num_opt(r == rp && r ? r : root, "rope_theta", 10000.0, &c->rope_theta) || c->rope_theta <= 0) {
        snprintf(why, len, "%s: %srope_theta is not a positive number", path, r == rp && r ? "rope_parameters." : "");
        return -1;
    }
    if ((r && json_num_opt(r, "partial_rotary_factor", 1.0, &prf)) || prf != 1.0 ||
        json_num_opt(root, "partial_rotary_factor", 1.0, &prf) || prf != 1.0) {
        snprintf(why, len, "%s: partial_rotary_factor %g: only RoPE on the whole head is supported", path, prf);
        return -1;
    }
    if (ty && !cJSON_IsString(ty)) {
        snprintf(why, len, "%s: %s.rope_type is not a string", path, key);
        return -1;
    }
    if (!strcmp(type, "default")) return 0;
    if (strcmp(type, "llama3") != 0) {
        snprintf(why, len, "%s: %s.rope_type %s: only default and llama3 RoPE are supported", path, key, type);
        return -1;
    }
    c->rope_llama3 = 1;
    if (json_num_opt(r, "factor", 0, &c->rope_factor) || json_num_opt(r, "low_freq_factor", 0, &c->rope_low_freq) ||
        json_num_opt(r, "high_freq_factor", 0, &c->rope_high_freq) ||
        json_num_opt(r, "original_max_position_embeddings", 0, &orig) || c->rope_factor <= 0 ||
        c->rope_low_freq <= 0 || c->rope_high_freq <= c->rope_low_freq || orig < 1 || orig != (double)(int)orig) {
        snprintf(why, len, "%s: %s: llama3 RoPE needs factor, low_freq_factor < high_freq_factor and "
                 "original_max_position_embeddings, all positive", path, key);
        return -1;
    }
    c->rope_orig_ctx = (int)orig;
    return 0;
}

/* the values of a Llama-family config.json computed otherwise here: refused, naming the key */
static int llama_unsupported(const cJSON *root, const char *path, int arch, char *why, size_t len) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    double experts = 0, local = 0;
    const cJSON *x;
    if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
        snprintf(why, len, "%s: hidden_act %s: only silu (SwiGLU) is supported", path,
                 cJSON_IsString(act) ? act->valuestring : "(not a string)");
    else if (arch != GPT_ARCH_QWEN2 && json_flag(root, "attention_bias") != 0)
        snprintf(why, len, "%s: attention_bias true: biases on the attention projections are not supported", path);
    else if (json_flag(root, "mlp_bias") != 0)
        snprintf(why, len, "%s: mlp_bias true: biases in the MLP are not supported", path);
    else if (json_flag(root, "use_sliding_window") != 0)
        snprintf(why, len, "%s: use_sliding_window true: sliding-window attention is not supported", path);
    else if (json_num_opt(root, "num_experts", 0, &experts) || experts > 0 ||
             json_num_opt(root, "num_local_experts", 0, &local) || local > 0)
        snprintf(why, len, "%s: num_experts: mixture-of-experts models are not supported", path);
    else if (lt && !cJSON_IsNull(lt) && !cJSON_IsArray(lt))
        snprintf(why, len, "%s: layer_types is not a list", path);
    else {
        cJSON_ArrayForEach(x, lt) if (!cJSON_IsString(x) || strcmp(x->valuestring, "full_attention") != 0) {
            snprintf(why, len, "%s: layer_types holds %s: only full_attention layers are supported", path,
                     cJSON_IsString(x) ? x->valuestring : "a non-string");
            return -1;
        }
        return 0;
    }
    return -1;
}

static int read_llama_config(const cJSON *root, const char *path, int arch, GPTConfig *c, char *why, size_t len) {
    double eps;
    int tie = json_flag(root, "tie_word_embeddings");
    c->arch = arch;
    c->qkv_bias = arch == GPT_ARCH_QWEN2;
    c->qk_norm = arch == GPT_ARCH_QWEN3;
    if (json_int(root, "vocab_size", &c->V) || json_int(root, "max_position_embeddings", &c->maxT) ||
        json_int(root, "num_hidden_layers", &c->L) || json_int(root, "hidden_size", &c->C) ||
        json_int(root, "num_attention_heads", &c->NH) || json_int(root, "intermediate_size", &c->ffn)) {
        snprintf(why, len, "%s: vocab_size, max_position_embeddings, num_hidden_layers, hidden_size, "
                 "num_attention_heads and intermediate_size must be positive integers", path);
        return -1;
    }
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(root, "num_key_value_heads");
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(root, "head_dim");
    if ((kv && !cJSON_IsNull(kv) && json_int(root, "num_key_value_heads", &c->NKV)) || c->NH % gpt_kv_heads(c) != 0) {
        snprintf(why, len, "%s: num_key_value_heads must be a positive integer dividing num_attention_heads %d", path,
                 c->NH);
        return -1;
    }
    if (hd && !cJSON_IsNull(hd) && json_int(root, "head_dim", &c->head_dim)) {
        snprintf(why, len, "%s: head_dim must be a positive integer", path);
        return -1;
    }
    if (!c->head_dim && c->C % c->NH != 0) {
        snprintf(why, len, "%s: num_attention_heads %d does not divide hidden_size %d (and no head_dim)", path, c->NH,
                 c->C);
        return -1;
    }
    if (gpt_head_dim(c) % 2 != 0) {
        snprintf(why, len, "%s: head_dim %d is odd: RoPE rotates pairs", path, gpt_head_dim(c));
        return -1;
    }
    if (json_num_opt(root, "rms_norm_eps", 1e-6, &eps) || eps <= 0) {
        snprintf(why, len, "%s: rms_norm_eps is not a positive number", path);
        return -1;
    }
    if (tie < 0) {
        snprintf(why, len, "%s: tie_word_embeddings is not a boolean", path);
        return -1;
    }
    c->norm_eps = eps;
    c->untied = !tie;
    if (gpt_head_dim(c) == c->C / c->NH && c->C % c->NH == 0) c->head_dim = 0; /* the default, stored as such */
    if (c->NKV == c->NH) c->NKV = 0;
    return llama_rope(root, path, c, why, len) || llama_unsupported(root, path, arch, why, len) ? -1 : 0;
}

/* the architecture a config.json names: architectures[0], else model_type; −1 when unknown */
static int config_arch(const cJSON *root, const char **name) {
    const cJSON *arch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "architectures"), 0);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    *name = cJSON_IsString(arch) ? arch->valuestring : cJSON_IsString(mt) ? mt->valuestring : NULL;
    if (!*name) return -1;
    for (int a = 0; a < GPT_NUM_ARCHS; a++)
        if (cJSON_IsString(arch) ? !strcmp(*name, arch_class[a]) : !strcmp(*name, gpt_arch_name(a))) return a;
    return -1;
}

/* the GPTConfig of dir/config.json; -1 with why naming the file and the key */
static int read_config(const char *dir, GPTConfig *c, char *why, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t n = 0;
    char *js = nr_read_text(path, 1 << 20, &n, why, len);
    if (!js) return -1;
    cJSON *root = cJSON_ParseWithLength(js, n);
    free(js);
    const char *name = NULL;
    int rc = -1, arch = cJSON_IsObject(root) ? config_arch(root, &name) : -1;
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(root))
        snprintf(why, len, "%s: not a JSON object", path);
    else if (!name)
        snprintf(why, len, "%s: neither \"architectures\" nor \"model_type\" names the model", path);
    else if (arch < 0)
        snprintf(why, len, "%s: architecture %s is not supported (this build imports GPT2LMHeadModel, "
                 "LlamaForCausalLM, Qwen2ForCausalLM and Qwen3ForCausalLM)", path, name);
    else
        rc = arch == GPT_ARCH_GPT2 ? read_gpt2_config(root, path, c, why, len)
                                   : read_llama_config(root, path, arch, c, why, len);
    cJSON_Delete(root);
    return rc;
}

/* ---- import ---------------------------------------------------------------------- */

/* GPT-2: "transformer." when the weights carry GPT2LMHeadModel's prefix, "" for a bare GPT2Model; the
 * Llama family's names are whole */
static const char *name_prefix(const StModel *st, const GPTConfig *c) {
    return !gpt_is_llama(c) && st_find(st, "transformer.wte.weight") ? "transformer." : "";
}

static void hf_name(char *buf, size_t n, const char *prefix, const HfPiece *e, int layer) {
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
    HfPiece pc[MAX_PIECES];
    int nt, np = hf_pieces(c, t, &nt, pc);
    const char *prefix = name_prefix(st, c);
    for (int k = 0; k < np; k++) {
        const HfPiece *e = &pc[k];
        const TensorInfo *ti = import_tensor_of_role(t, nt, e->role);
        int nl = strchr(e->hf, '%') ? c->L : 1;
        size_t per = ti->numel / (size_t)nl;
        for (int l = 0; l < nl; l++) {
            char name[256];
            hf_name(name, sizeof name, prefix, e, l);
            float *dst = full + ti->loffset + (size_t)l * per + e->off;
            if (read_one(st, name, e->shape, e->nd, e->transpose, dst, why, len)) return -1;
            used[st_find(st, name) - st->t] = 1;
        }
    }
    return 0;
}

/* a buffer that is not a weight: GPT-2's attention masks, older Llama files' RoPE frequencies */
static int not_a_weight(const char *name, int llama) {
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    if (llama) return !strcmp(dot, ".inv_freq") && strstr(name, ".rotary_emb.") != NULL;
    return !strcmp(dot, ".masked_bias") || (!strcmp(dot, ".bias") && strstr(name, ".attn.bias"));
}

/* tensors the map did not consume: a tied lm_head equal to wte and the buffers pass, the rest is refused */
static int check_leftovers(const StModel *st, const GPTConfig *c, const float *full, const char *used, char *why,
                           size_t len) {
    for (int i = 0; i < st->nt; i++) {
        const StTensor *t = &st->t[i];
        if (used[i] || not_a_weight(t->name, gpt_is_llama(c))) continue;
        if (!strcmp(t->name, "lm_head.weight") && t->ndim == 2 && t->shape[0] == c->V && t->shape[1] == c->C) {
            size_t n = st_numel(t);
            float *h = nr_xmalloc(n * sizeof(float));
            int same = st_read_f32(st, t, h, why, len) == 0 && memcmp(h, full, n * sizeof(float)) == 0;
            free(h);
            if (same) continue;
            snprintf(why, len, "%s: lm_head.weight differs from the embedding: %s",
                     st->paths[t->file], gpt_is_llama(c) ? "config.json says tie_word_embeddings true"
                                                         : "an untied output head is not supported for GPT-2");
            return -1;
        }
        snprintf(why, len, "%s: tensor %s is not part of a %s (refused rather than dropped)", st->paths[t->file],
                 t->name, arch_class[c->arch]);
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
        char source[4096 + 32];
        snprintf(source, sizeof source, "Hugging Face directory %s", dir);
        rc = import_write_ckpt(out_path, &c, full, source, NULL, why, len);
    }
    free(used);
    free(full);
    st_close(&st);
    return rc;
}

/* ---- export ------------------------------------------------------------------------ */

/* the Llama family's config.json in the transformers 5 layout (rope_parameters) */
static cJSON *llama_config_json(const GPTConfig *c, int V) {
    cJSON *r = cJSON_CreateObject(), *rope = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "architectures", cJSON_CreateStringArray(&arch_class[c->arch], 1));
    cJSON_AddStringToObject(r, "model_type", gpt_arch_name(c->arch));
    cJSON_AddNumberToObject(r, "vocab_size", V);
    cJSON_AddNumberToObject(r, "max_position_embeddings", c->maxT);
    cJSON_AddNumberToObject(r, "hidden_size", c->C);
    cJSON_AddNumberToObject(r, "intermediate_size", gpt_ffn(c));
    cJSON_AddNumberToObject(r, "num_hidden_layers", c->L);
    cJSON_AddNumberToObject(r, "num_attention_heads", c->NH);
    cJSON_AddNumberToObject(r, "num_key_value_heads", gpt_kv_heads(c));
    cJSON_AddNumberToObject(r, "head_dim", gpt_head_dim(c));
    cJSON_AddStringToObject(r, "hidden_act", "silu");
    cJSON_AddNumberToObject(r, "rms_norm_eps", c->norm_eps > 0 ? c->norm_eps : 1e-5);
    if (c->arch != GPT_ARCH_QWEN2) cJSON_AddFalseToObject(r, "attention_bias");
    cJSON_AddBoolToObject(r, "tie_word_embeddings", !c->untied);
    cJSON_AddStringToObject(rope, "rope_type", c->rope_llama3 ? "llama3" : "default");
    cJSON_AddNumberToObject(rope, "rope_theta", c->rope_theta > 0 ? c->rope_theta : 10000.0);
    if (c->rope_llama3) {
        cJSON_AddNumberToObject(rope, "factor", c->rope_factor);
        cJSON_AddNumberToObject(rope, "low_freq_factor", c->rope_low_freq);
        cJSON_AddNumberToObject(rope, "high_freq_factor", c->rope_high_freq);
        cJSON_AddNumberToObject(rope, "original_max_position_embeddings", c->rope_orig_ctx);
    }
    cJSON_AddItemToObject(r, "rope_parameters", rope);
    cJSON_AddStringToObject(r, "dtype", "float32");
    return r;
}

static cJSON *gpt2_config_json(const GPTConfig *c, int V) {
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
    return r;
}

/* The special-token ids config.json carries (transformers otherwise takes its class defaults: GPT-2's 50256
 * for a 15-token vocabulary). From the checkpoint's /tokenizer where it has one (imported from GGUF); else, for
 * a model of the task vocabulary (vocab V = TASK_VOCAB: task.h), its end token and no bos. *known = 0 where
 * neither says (a Hugging Face import: its own config.json had them). */
typedef struct SpecialIds { int bos, eos, pad, known; } SpecialIds;

static SpecialIds special_ids(const char *path, int V) {
    SpecialIds s = {-1, -1, -1, 0};
    TokSpec spec;
    char why[256];
    if (ckpt_read_tokspec(path, &spec, why, sizeof why) == 0) {
        s = (SpecialIds){spec.bos_id, spec.eos_id, spec.pad_id, 1};
        tokspec_free(&spec);
    } else if (V == TASK_VOCAB) {
        s = (SpecialIds){-1, TOK_EOS, -1, 1};
    }
    return s;
}

/* id, or JSON null for none (-1): an explicit null keeps transformers from its class default */
static void add_id(cJSON *r, const char *key, int id) {
    if (id >= 0) cJSON_AddNumberToObject(r, key, id);
    else cJSON_AddNullToObject(r, key);
}

/* the checkpoint's /tokenizer (a GGUF import's) as dir/tokenizer.json and tokenizer_config.json; none there,
 * nothing written. A tokenizer with no Hugging Face form Nereus writes (a pre-tokenizer it does not know) is
 * left out with a note on stderr: the weights and config.json do not need it. 0, or -1 with why */
static int write_tokenizer(const char *path, const char *dir, char *why, size_t len) {
    TokSpec spec;
    char w[256];
    int q = ckpt_read_tokspec(path, &spec, w, sizeof w);
    if (q > 0) return 0; /* no /tokenizer: a task-vocabulary model, or an import-hf one */
    if (q < 0) {
        snprintf(why, len, "%s", w);
        return -1;
    }
    int rc = 0;
    if (tok_write_hf(dir, &spec, w, sizeof w) != 0) {
        if (strstr(w, "no Hugging Face form")) fprintf(stderr, "nereus-ckpt: note: tokenizer not written: %s\n", w);
        else snprintf(why, len, "%s", w), rc = -1;
    }
    tokspec_free(&spec);
    return rc;
}

static int write_config(const char *dir, const GPTConfig *c, int V, const SpecialIds *ids, char *why, size_t len) {
    cJSON *r = gpt_is_llama(c) ? llama_config_json(c, V) : gpt2_config_json(c, V);
    if (ids->known) {
        add_id(r, "bos_token_id", ids->bos);
        add_id(r, "eos_token_id", ids->eos);
        if (ids->pad >= 0) cJSON_AddNumberToObject(r, "pad_token_id", ids->pad);
    }
    char *js = cJSON_Print(r), path[4096];
    cJSON_Delete(r);
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = nr_write_text(path, js, why, len);
    cJSON_free(js);
    return rc;
}

/* the HF tensors of the logical vector full: per-layer pieces (GPT-2: named transformer.h.{l}.*), Conv1D
 * weights transposed into bufs (freed by the caller); the embedding and lm_head cut to the real vocabulary V */
static int export_tensors(const GPTConfig *c, int V, const float *full, StOut *out, float **bufs, char (*names)[96]) {
    TensorInfo t[GPT_NUM_TENSORS];
    HfPiece pc[MAX_PIECES];
    int nt, n = 0, np = hf_pieces(c, t, &nt, pc);
    const char *prefix = gpt_is_llama(c) ? "" : "transformer.";
    for (int k = 0; k < np; k++) {
        const HfPiece *e = &pc[k];
        const TensorInfo *ti = import_tensor_of_role(t, nt, e->role);
        int nl = strchr(e->hf, '%') ? c->L : 1, nd = e->nd;
        const int *shape = e->shape;
        size_t per = ti->numel / (size_t)nl, numel = (size_t)shape[0] * (size_t)(nd == 2 ? shape[1] : 1);
        for (int l = 0; l < nl; l++, n++) {
            hf_name(names[n], sizeof names[n], prefix, e, l);
            StOut *o = &out[n];
            *o = (StOut){.name = names[n], .data = full + ti->loffset + (size_t)l * per + e->off, .ndim = nd};
            for (int d = 0; d < nd; d++) o->shape[d] = shape[e->transpose ? nd - 1 - d : d];
            if (e->role == GPT_WTE || (gpt_is_llama(c) && e->role == LLAMA_LMHEAD)) o->shape[0] = V;
            if (!e->transpose) continue;
            bufs[n] = nr_xmalloc(numel * sizeof(float));
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
        snprintf(why, len, "%s: the actor has a value head; a %s has none", path, arch_class[c.arch]);
        return -1;
    }
    size_t nl = gpt_logical_numel(&c);
    float *full = nr_xmalloc(nl * sizeof(float));
    gpt_export_logical(&m, GPT_BUF_PARAMS, full);
    gpt_free(&m);
    int nmax = MAX_PIECES * c.L + MAX_PIECES;
    StOut *out = nr_xcalloc((size_t)nmax, sizeof *out);
    float **bufs = nr_xcalloc((size_t)nmax, sizeof *bufs);
    char(*names)[96] = nr_xcalloc((size_t)nmax, sizeof *names);
    int n = export_tensors(&c, gpt_real_vocab(&c), full, out, bufs, names), rc = -1;
    SpecialIds ids = special_ids(path, gpt_real_vocab(&c));
    char st_path[4096];
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        snprintf(why, len, "%s: cannot create the directory: %s", dir, strerror(errno));
    else if (write_config(dir, &c, gpt_real_vocab(&c), &ids, why, len) == 0 && write_tokenizer(path, dir, why, len) == 0)
        rc = st_write_f32(st_path, out, n, why, len);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(names);
    free(out);
    free(full);
    return rc;
}
