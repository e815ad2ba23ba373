/* plan.c — execution plans as data (plan.h): the deck syntax of one
 * model-stage's EMU, the default plans for a rank count, validation against
 * the job and the model, formatting and the colocation query. Pure: no MPI,
 * no deck; the deck module calls plan_stage_parse for each [plan] key and
 * the caller of plan_resolve reports a failure at the key's deck line.
 */
#include "nereus/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const plan_names[PLAN_NSTAGES] = {
    "actor.gen", "actor.inf", "actor.train", "ref.inf", "critic.inf", "critic.train", "reward.inf",
};

const char *plan_stage_name(int id) { return id >= 0 && id < PLAN_NSTAGES ? plan_names[id] : NULL; }

int plan_stage_find(const char *name, size_t len)
{
    for (int i = 0; i < PLAN_NSTAGES; i++)
        if (strlen(plan_names[i]) == len && memcmp(plan_names[i], name, len) == 0) return i;
    return -1;
}

int plan_stage_is_train(int id) { return id == PLAN_ACTOR_TRAIN || id == PLAN_CRITIC_TRAIN; }
int plan_stage_is_critic(int id) { return id == PLAN_CRITIC_INF || id == PLAN_CRITIC_TRAIN || id == PLAN_REWARD_INF; }
int plan_stage_is_critic_model(int id) { return id == PLAN_CRITIC_INF || id == PLAN_CRITIC_TRAIN; }
int plan_stage_keeps_state(int id) { return plan_stage_is_train(id) || id == PLAN_REF_INF || id == PLAN_REWARD_INF; }
int plan_stage_in_set(int id, int no_critic) { return id >= 0 && id < PLAN_NSTAGES && !(no_critic && plan_stage_is_critic_model(id)); }
int plan_stage_count(int no_critic) { return no_critic ? PLAN_NSTAGES - 2 : PLAN_NSTAGES; }
int plan_no_critic(const PlanConfig *p) { return !plan_stage_present(p, PLAN_CRITIC_INF); }
int plan_stage_phase(int id) { return id == PLAN_ACTOR_GEN ? 0 : plan_stage_is_train(id) ? 2 : 1; }

int plan_stage_same(const PlanStage *a, const PlanStage *b) {
    if (a->tp != b->tp || a->pp != b->pp || a->dp != b->dp || a->nranks != b->nranks) return 0;
    for (int i = 0; i < a->nranks; i++)
        if (a->ranks[i] != b->ranks[i]) return 0;
    return 1;
}

int plan_stage_new_comms(const PlanConfig *from, const PlanConfig *to, int s) {
    for (int t = 0; t < PLAN_NSTAGES; t++)
        if (plan_stage_same(&from->stage[t], &to->stage[s]) || (t < s && plan_stage_same(&to->stage[t], &to->stage[s])))
            return 0;
    return 1;
}

/* 1 when some model-stage of p is the EMU s */
static int plan_stage_in(const PlanConfig *p, const PlanStage *s) {
    for (int t = 0; t < PLAN_NSTAGES; t++)
        if (plan_stage_same(&p->stage[t], s)) return 1;
    return 0;
}

int plan_kept_has(const PlanKept *k, const PlanStage *s) {
    for (int i = 0; k && i < k->n; i++)
        if (plan_stage_same(&k->s[i], s)) return 1;
    return 0;
}

static void plan_kept_drop(PlanKept *k, int i) {
    memmove(&k->s[i], &k->s[i + 1], (size_t)(k->n - i - 1) * sizeof k->s[0]);
    k->n--;
}

void plan_kept_switch(PlanKept *k, int keep, const PlanConfig *from, const PlanConfig *to) {
    keep = keep < 0 ? 0 : keep > PLAN_KEEP_MAX ? PLAN_KEEP_MAX : keep;
    for (int i = 0; i < k->n;) /* the new plan's layouts are in use again */
        if (plan_stage_in(to, &k->s[i])) plan_kept_drop(k, i);
        else i++;
    /* the old plan's layouts nothing uses now, in the order emu.c releases them: the changed model-stages'
       old EMUs go in stage order, and a set goes with the last of its EMUs */
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        const PlanStage *x = &from->stage[s];
        int later = 0;
        for (int t = s + 1; t < PLAN_NSTAGES && !later; t++) later = plan_stage_same(&from->stage[t], x);
        if (later || plan_stage_in(to, x) || plan_kept_has(k, x) || x->nranks == 0) continue;
        if (k->n == PLAN_KEEP_MAX) plan_kept_drop(k, 0);
        k->s[k->n++] = *x;
    }
    while (k->n > keep) plan_kept_drop(k, 0); /* the one left longest ago first */
}

void plan_kept_follow(PlanKept *k, int keep, PlanConfig *seen, const PlanConfig *now) {
    if (plan_same(seen, now)) return;
    plan_kept_switch(k, keep, seen, now);
    *seen = *now;
}

int plan_stage_pos(const PlanStage *s, int rank) {
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i] == rank) return i;
    return -1;
}

int plan_same(const PlanConfig *a, const PlanConfig *b) {
    for (int s = 0; s < PLAN_NSTAGES; s++)
        if (!plan_stage_same(&a->stage[s], &b->stage[s])) return 0;
    return 1;
}

/* ---- parsing ------------------------------------------------------------- */

typedef struct PlanLex {
    const char *p, *e;
} PlanLex;

static int plan_is_space(char c) { return c == ' ' || c == '\t'; }
static void plan_skip(PlanLex *x) { while (x->p < x->e && plan_is_space(*x->p)) x->p++; }
static int plan_is_digit(char c) { return c >= '0' && c <= '9'; }

static int plan_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int plan_err(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && n) vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* A word for a message: up to the next space, ',' or '-' after the first char, clipped. */
static void plan_word(const char *s, const char *e, char *out, size_t n)
{
    const char *q = s;
    while (q < e && !plan_is_space(*q) && (q == s || (*q != ',' && *q != '@'))) q++;
    size_t len = (size_t)(q - s);
    if (len > 24) len = 24;
    if (len + 1 > n) len = n - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

/* Decimal digits at x->p (no sign); at most 9 digits, so no overflow. */
static int plan_number(PlanLex *x, long *out)
{
    const char *s = x->p;
    long v = 0;
    while (x->p < x->e && plan_is_digit(*x->p)) {
        if (x->p - s >= 9) return -2;
        v = v * 10 + (*x->p - '0');
        x->p++;
    }
    if (x->p == s) return -1;
    *out = v;
    return 0;
}

#define PLAN_EXPECT "expected e.g. 'tp2 pp1 dp4 @ 0-7'"

static int plan_parse_ranks(PlanLex *x, PlanStage *s, char *err, size_t errsz)
{
    plan_skip(x);
    if (x->p == x->e) return plan_err(err, errsz, "no ranks after '@' (write '@ all', '@ 0-7' or '@ 0,2,4')");
    if (x->e - x->p >= 3 && memcmp(x->p, "all", 3) == 0) {
        x->p += 3;
        plan_skip(x);
        if (x->p != x->e) {
            char w[32];
            plan_word(x->p, x->e, w, sizeof w);
            return plan_err(err, errsz, "unexpected '%s' after '@ all'", w);
        }
        s->all = 1;
        return 0;
    }
    for (;;) {
        plan_skip(x);
        long a = 0, b = 0;
        const char *item = x->p;
        int rc = plan_number(x, &a);
        if (rc == -1 && *item == ',') return plan_err(err, errsz, "empty item in the rank list (',,')");
        if (rc == -1) {
            char w[32];
            plan_word(item, x->e, w, sizeof w);
            return plan_err(err, errsz, "'%s' in the rank list is not a rank (write ranks as 'R' or 'A-B', separated by ',')",
                            *w ? w : ",");
        }
        b = a;
        plan_skip(x);
        if (rc == 0 && x->p < x->e && *x->p == '-') {
            x->p++;
            plan_skip(x);
            rc = plan_number(x, &b);
            if (rc == -1) return plan_err(err, errsz, "range '%ld-' has no end (write 'A-B')", a);
            if (rc == 0 && b < a)
                return plan_err(err, errsz, "range '%ld-%ld' runs backwards (write 'A-B' with A <= B, or list the ranks)", a, b);
        }
        if (rc == -2 || a >= PLAN_MAX_RANKS || b >= PLAN_MAX_RANKS)
            return plan_err(err, errsz, "rank %ld is beyond what a plan can place (ranks are 0..%d)",
                            rc == -2 ? 999999999L : (a >= PLAN_MAX_RANKS ? a : b), PLAN_MAX_RANKS - 1);
        if (s->nranks + (b - a + 1) > PLAN_MAX_RANKS)
            return plan_err(err, errsz, "more than %d ranks listed", PLAN_MAX_RANKS);
        for (long r = a; r <= b; r++) s->ranks[s->nranks++] = (int16_t)r;
        plan_skip(x);
        if (x->p == x->e) return 0;
        if (*x->p != ',') {
            char w[32];
            plan_word(x->p, x->e, w, sizeof w);
            return plan_err(err, errsz, "unexpected '%s' in the rank list (separate ranks with ',')", w);
        }
        x->p++;
        plan_skip(x);
        if (x->p == x->e) return plan_err(err, errsz, "the rank list ends with ','");
    }
}

int plan_stage_parse(const char *text, size_t len, PlanStage *out, char *err, size_t errsz)
{
    PlanStage s;
    memset(&s, 0, sizeof s);
    PlanLex x = {text, text + len};
    plan_skip(&x);
    while (x.e > x.p && plan_is_space(x.e[-1])) x.e--;
    if (x.p == x.e) return plan_err(err, errsz, "empty layout (" PLAN_EXPECT ", or 'default')");
    if (x.e - x.p == 7 && memcmp(x.p, "default", 7) == 0) {
        memcpy(out, &s, sizeof s); /* src = PLAN_SRC_NONE */
        return 0;
    }
    s.src = PLAN_SRC_DECK;
    int ndeg = 0;
    while (x.p < x.e && *x.p != '@') {
        const char *w0 = x.p;
        char w[32];
        plan_word(w0, x.e, w, sizeof w);
        int *deg = NULL;
        const char *dn = NULL;
        if (x.e - x.p >= 2 && memcmp(x.p, "tp", 2) == 0) deg = &s.tp, dn = "tp";
        else if (x.e - x.p >= 2 && memcmp(x.p, "pp", 2) == 0) deg = &s.pp, dn = "pp";
        else if (x.e - x.p >= 2 && memcmp(x.p, "dp", 2) == 0) deg = &s.dp, dn = "dp";
        if (!deg)
            return plan_err(err, errsz, "unexpected '%s' (a layout is degrees tpN ppN dpN, then '@' and ranks; " PLAN_EXPECT ")", w);
        x.p += 2;
        long v = 0;
        int rc = plan_number(&x, &v);
        if (rc == -1 || (x.p < x.e && !plan_is_space(*x.p) && *x.p != '@'))
            return plan_err(err, errsz, "'%s' is not a degree (write %s and a number, e.g. '%s2')", w, dn, dn);
        if (rc == -2 || v < 1 || v > PLAN_MAX_RANKS)
            return plan_err(err, errsz, "'%s': a degree is 1..%d", w, PLAN_MAX_RANKS);
        if (*deg) return plan_err(err, errsz, "%s is given twice", dn);
        *deg = (int)v;
        ndeg++;
        plan_skip(&x);
    }
    long prod = (long)(s.tp ? s.tp : 1) * (s.pp ? s.pp : 1) * (s.dp ? s.dp : 1);
    if (prod > PLAN_MAX_RANKS)
        return plan_err(err, errsz, "tp*pp*dp = %ld ranks; a plan places at most %d", prod, PLAN_MAX_RANKS);
    if (x.p < x.e) {
        x.p++; /* '@' */
        if (plan_parse_ranks(&x, &s, err, errsz)) return -1;
    } else if (ndeg == 0) {
        return plan_err(err, errsz, "empty layout (" PLAN_EXPECT ")");
    }
    memcpy(out, &s, sizeof s);
    return 0;
}

/* ---- formatting ------------------------------------------------------------ */

typedef struct PlanOut {
    char *buf;
    size_t n, o;
} PlanOut;

static void plan_put(PlanOut *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void plan_put(PlanOut *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(w->o < w->n ? w->buf + w->o : NULL, w->o < w->n ? w->n - w->o : 0, fmt, ap);
    va_end(ap);
    if (k > 0) w->o += (size_t)k;
}

static void plan_put_ranks(PlanOut *w, const int16_t *r, int n)
{
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
        if (j > i) plan_put(w, "%s%d-%d", i ? "," : "", r[i], r[j]);
        else plan_put(w, "%s%d", i ? "," : "", r[i]);
        i = j + 1;
    }
}

static int plan_done(PlanOut *w)
{
    if (w->n) w->buf[w->o < w->n ? w->o : w->n - 1] = '\0';
    return (int)w->o;
}

int plan_ranks_format(const int16_t *ranks, int n, char *buf, size_t bufsz)
{
    PlanOut w = {buf, bufsz, 0};
    plan_put_ranks(&w, ranks, n);
    return plan_done(&w);
}

int plan_stage_format(const PlanStage *s, char *buf, size_t n)
{
    PlanOut w = {buf, n, 0};
    if (n) buf[0] = '\0';
    if (s->src == PLAN_SRC_NONE || s->src == PLAN_SRC_ABSENT) { /* absent: what a deck of its algorithm reads back */
        plan_put(&w, "default");
        return plan_done(&w);
    }
    /* only the degrees that were written, so that the text parses back to
     * the same PlanStage (a resolved stage has all three) */
    const char *sep = "";
    if (s->tp) plan_put(&w, "tp%d", s->tp), sep = " ";
    if (s->pp) plan_put(&w, "%spp%d", sep, s->pp), sep = " ";
    if (s->dp) plan_put(&w, "%sdp%d", sep, s->dp), sep = " ";
    if (s->all) plan_put(&w, "%s@ all", sep);
    else if (s->nranks) {
        plan_put(&w, "%s@ ", sep);
        plan_put_ranks(&w, s->ranks, s->nranks);
    }
    return plan_done(&w);
}

/* ---- defaults -------------------------------------------------------------- */

static int plan_layout_ok(int tp, int pp, int dp, int train, const PlanLimits *l)
{
    return l->n_head % tp == 0 && (!l->n_kv_head || l->n_kv_head % tp == 0) && (!l->ffn || l->ffn % tp == 0) &&
           l->n_layer % pp == 0 && l->batch % dp == 0 && (!train || l->minibatch % dp == 0);
}

/* The colocated rule for m ranks: largest dp, then largest tp. 0 if none. */
static int plan_best_layout(int m, int train, const PlanLimits *l, int *tp, int *pp, int *dp)
{
    for (int d = m; d >= 1; d--) {
        if (m % d) continue;
        int r = m / d;
        for (int t = r; t >= 1; t--) {
            if (r % t) continue;
            if (plan_layout_ok(t, r / t, d, train, l)) {
                *tp = t, *pp = r / t, *dp = d;
                return 1;
            }
        }
    }
    return 0;
}

/* Lays out stage id on the block [first, first+count) by the colocated rule. */
static void plan_fill_block(PlanStage *s, int id, int first, int count, const PlanLimits *l)
{
    int tp = 1, pp = 1, dp = 1, m = count;
    for (; m > 1; m--)
        if (plan_best_layout(m, plan_stage_is_train(id), l, &tp, &pp, &dp)) break;
    if (m <= 1) tp = pp = dp = m = 1;
    memset(s, 0, sizeof *s);
    s->src = PLAN_SRC_DEFAULT;
    s->tp = tp, s->pp = pp, s->dp = dp;
    s->nranks = m;
    for (int i = 0; i < m; i++) s->ranks[i] = (int16_t)(first + i);
}

static int plan_fail(PlanError *err, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int plan_fail(PlanError *err, const char *key, const char *fmt, ...)
{
    if (!err) return -1;
    snprintf(err->key, sizeof err->key, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int plan_default(PlanConfig *plan, const char *kind, const PlanLimits *lim, int only_missing, PlanError *err)
{
    int world = lim->world;
    if (world < 1 || world > PLAN_MAX_RANKS)
        return plan_fail(err, "plan.default", "the job has %d ranks; a plan places 1..%d", world, PLAN_MAX_RANKS);
    int disagg = kind && strcmp(kind, "disaggregated") == 0, ns = plan_stage_count(lim->no_critic);
    if (disagg && world < ns)
        return plan_fail(err, "plan.default",
                         "default = disaggregated needs at least %d ranks (one block per model-stage); the job has %d "
                         "(use default = colocated)",
                         ns, world);
    int first = 0;
    for (int i = 0, k = 0; i < PLAN_NSTAGES; i++) {
        if (!plan_stage_in_set(i, lim->no_critic)) { /* not in the algorithm's stage set */
            memset(&plan->stage[i], 0, sizeof plan->stage[i]);
            plan->stage[i].src = PLAN_SRC_ABSENT;
            continue;
        }
        int count = disagg ? world / ns + (k < world % ns) : world;
        k++;
        if (!only_missing || plan->stage[i].src == PLAN_SRC_NONE)
            plan_fill_block(&plan->stage[i], i, disagg ? first : 0, count, lim);
        if (disagg) first += count;
    }
    return 0;
}

/* ---- validation ------------------------------------------------------------ */

int plan_validate_stage(const PlanStage *s, int id, const PlanLimits *l, PlanError *err)
{
    char key[32];
    const char *name = plan_stage_name(id);
    snprintf(key, sizeof key, "plan.%s", name ? name : "?");
    if (!plan_stage_in_set(id, l->no_critic)) {
        if (s->src == PLAN_SRC_ABSENT) return 0;
        return plan_fail(err, key, "[plan] %s: the algorithm has no critic ([ppo] algorithm = grpo: no critic.inf, "
                         "critic.train); remove this model-stage from the plan", name);
    }
    if (s->src == PLAN_SRC_ABSENT)
        return plan_fail(err, key, "[plan] %s is not in the plan, but [ppo] algorithm = ppo needs it (a critic-free "
                         "plan, from a grpo run, does not fit a ppo deck)", name);
    if (s->src == PLAN_SRC_NONE)
        return plan_fail(err, key, "[plan] %s has no ranks (every model-stage needs an EMU)", name);
    if (s->tp < 1 || s->pp < 1 || s->dp < 1)
        return plan_fail(err, key, "[plan] %s: degrees must be at least 1 (tp%d pp%d dp%d)", name, s->tp, s->pp, s->dp);
    /* decoding goes token by token through every layer: pipeline stages would idle in turn */
    if (id == PLAN_ACTOR_GEN && s->pp > 1)
        return plan_fail(err, key,
                         "[plan] actor.gen = tp%d pp%d dp%d: generation runs TP x DP; pipelined generation is not "
                         "supported (give actor.gen pp = 1)", s->tp, s->pp, s->dp);
    long size = (long)s->tp * s->pp * s->dp;
    if (s->nranks > l->world && l->world == 1)
        return plan_fail(err, key, "[plan] %s lists %d ranks, more than the job has (1 rank, rank 0)", name, s->nranks);
    if (s->nranks > l->world)
        return plan_fail(err, key, "[plan] %s lists %d ranks, more than the job has (%d ranks, 0-%d)", name,
                         s->nranks, l->world, l->world - 1);
    if (size > l->world)
        return plan_fail(err, key, "[plan] %s needs tp*pp*dp = %d*%d*%d = %ld ranks, more than the job has (%d)",
                         name, s->tp, s->pp, s->dp, size, l->world);
    if (s->nranks == 0)
        return plan_fail(err, key, "[plan] %s has no ranks (every model-stage needs an EMU)", name);
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i] < 0 || s->ranks[i] >= l->world)
            return plan_fail(err, key, "[plan] %s: rank %d is out of range (the job has %d ranks, 0-%d)", name,
                             s->ranks[i], l->world, l->world - 1);
    /* duplicates: a bitmap of the job's ranks */
    unsigned char seen[PLAN_MAX_RANKS];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < s->nranks; i++) {
        if (seen[s->ranks[i]])
            return plan_fail(err, key,
                             "[plan] %s: rank %d is listed twice (the ranks of one EMU must not overlap)", name,
                             s->ranks[i]);
        seen[s->ranks[i]] = 1;
    }
    if (size != s->nranks)
        return plan_fail(err, key, "[plan] %s: tp*pp*dp = %d*%d*%d = %ld, but %d ranks are listed", name, s->tp,
                         s->pp, s->dp, size, s->nranks);
    if (l->n_head % s->tp)
        return plan_fail(err, key, "[plan] %s: tp = %d does not divide the heads ([model] n_head = %d)", name, s->tp,
                         l->n_head);
    if (l->n_kv_head && l->n_kv_head % s->tp)
        return plan_fail(err, key,
                         "[plan] %s: tp = %d does not divide the key/value heads ([model] n_kv_head = %d): tensor "
                         "parallelism cuts whole key/value heads, it does not replicate them",
                         name, s->tp, l->n_kv_head);
    if (l->ffn && l->ffn % s->tp)
        return plan_fail(err, key, "[plan] %s: tp = %d does not divide the MLP width ([model] ffn_dim = %d)", name,
                         s->tp, l->ffn);
    if (l->n_layer % s->pp)
        return plan_fail(err, key, "[plan] %s: pp = %d does not divide the layers ([model] n_layer = %d)", name,
                         s->pp, l->n_layer);
    if (l->batch % s->dp)
        return plan_fail(err, key, "[plan] %s: dp = %d does not divide the global batch ([ppo] batch = %d)", name,
                         s->dp, l->batch);
    if (plan_stage_is_train(id) && l->minibatch % s->dp)
        return plan_fail(err, key,
                         "[plan] %s: dp = %d does not divide the minibatch ([ppo] minibatch = %d; a training stage "
                         "splits every minibatch over its replicas)",
                         name, s->dp, l->minibatch);
    return 0;
}

int plan_resolve(PlanConfig *plan, const PlanLimits *lim, PlanError *err)
{
    const char *fill = plan->fill[0] ? plan->fill : "auto";
    int listed = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        PlanStage *s = &plan->stage[i];
        if (plan_stage_in_set(i, lim->no_critic)) {
            listed += s->src != PLAN_SRC_NONE && s->src != PLAN_SRC_ABSENT;
            continue;
        }
        if (s->src == PLAN_SRC_DECK) /* a critic-free algorithm's plan names a critic stage */
            return plan_validate_stage(s, i, lim, err);
        memset(s, 0, sizeof *s);
        s->src = PLAN_SRC_ABSENT;
    }
    if (strcmp(fill, "auto") != 0 || listed == 0) {
        if (plan_default(plan, strcmp(fill, "disaggregated") == 0 ? "disaggregated" : "colocated", lim, 1, err))
            return -1;
    }
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        PlanStage *s = &plan->stage[i];
        char key[32];
        snprintf(key, sizeof key, "plan.%s", plan_names[i]);
        if (s->src == PLAN_SRC_ABSENT && !plan_stage_in_set(i, lim->no_critic)) continue;
        if (s->src == PLAN_SRC_NONE)
            return plan_fail(err, key,
                             "[plan] %s has no ranks: the deck lists other model-stages but not this one (list it, or "
                             "set [plan] default = colocated or disaggregated to fill it)",
                             plan_names[i]);
        if (s->src != PLAN_SRC_DECK) continue;
        if (!s->tp) s->tp = 1;
        if (!s->pp) s->pp = 1;
        if (s->all) {
            if (lim->world < 1 || lim->world > PLAN_MAX_RANKS)
                return plan_fail(err, key, "the job has %d ranks; a plan places 1..%d", lim->world, PLAN_MAX_RANKS);
            s->nranks = lim->world;
            for (int r = 0; r < lim->world; r++) s->ranks[r] = (int16_t)r;
            s->all = 0;
        }
        if (!s->dp) {
            int tpp = s->tp * s->pp;
            if (s->nranks == 0) s->dp = 1;
            else if (s->nranks % tpp)
                return plan_fail(err, key, "[plan] %s: %d ranks are listed, not a multiple of tp*pp = %d*%d (so dp "
                                 "cannot be inferred)",
                                 plan_names[i], s->nranks, s->tp, s->pp);
            else s->dp = s->nranks / tpp;
        }
        if (s->nranks == 0) {
            long size = (long)s->tp * s->pp * s->dp;
            if (size > lim->world)
                return plan_fail(err, key,
                                 "[plan] %s needs tp*pp*dp = %d*%d*%d = %ld ranks, more than the job has (%d)",
                                 plan_names[i], s->tp, s->pp, s->dp, size, lim->world);
            s->nranks = (int)size;
            for (int r = 0; r < s->nranks; r++) s->ranks[r] = (int16_t)r;
        }
    }
    for (int i = 0; i < PLAN_NSTAGES; i++)
        if (plan_validate_stage(&plan->stage[i], i, lim, err)) return -1;
    return 0;
}

/* ---- placement queries -------------------------------------------------------- */

int plan_overlap(const PlanConfig *plan, int a, int b)
{
    if (a == b) return 1;
    unsigned char in[PLAN_MAX_RANKS];
    memset(in, 0, sizeof in);
    const PlanStage *sa = &plan->stage[a], *sb = &plan->stage[b];
    for (int i = 0; i < sa->nranks; i++)
        if (sa->ranks[i] >= 0 && sa->ranks[i] < PLAN_MAX_RANKS) in[sa->ranks[i]] = 1;
    for (int i = 0; i < sb->nranks; i++)
        if (sb->ranks[i] >= 0 && sb->ranks[i] < PLAN_MAX_RANKS && in[sb->ranks[i]]) return 1;
    return 0;
}

int plan_colocation(const PlanConfig *plan, int group[PLAN_NSTAGES])
{
    for (int i = 0; i < PLAN_NSTAGES; i++) group[i] = i;
    /* union-find by smallest id; seven stages, so plain relaxation */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < PLAN_NSTAGES; i++)
            for (int j = i + 1; j < PLAN_NSTAGES; j++)
                if (group[i] != group[j] && plan_overlap(plan, i, j)) {
                    int lo = group[i] < group[j] ? group[i] : group[j];
                    int hi = group[i] < group[j] ? group[j] : group[i];
                    for (int k = 0; k < PLAN_NSTAGES; k++)
                        if (group[k] == hi) group[k] = lo;
                    changed = 1;
                }
    }
    int n = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++) n += group[i] == i && plan_stage_present(plan, i);
    return n;
}

int plan_format(const PlanConfig *plan, char *buf, size_t n)
{
    PlanOut w = {buf, n, 0};
    if (n) buf[0] = '\0';
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        const PlanStage *s = &plan->stage[i];
        if (s->src == PLAN_SRC_ABSENT) {
            plan_put(&w, "%-13s none  (not in the stage set: the algorithm has no critic)\n", plan_names[i]);
            continue;
        }
        plan_put(&w, "%-13s tp%d pp%d dp%d  ranks ", plan_names[i], s->tp, s->pp, s->dp);
        if (s->all) plan_put(&w, "all");
        else plan_put_ranks(&w, s->ranks, s->nranks);
        plan_put(&w, "  (%s", s->src == PLAN_SRC_DECK ? "deck" : s->src == PLAN_SRC_DEFAULT ? "default" : "unset");
        int first = 1;
        for (int j = 0; j < PLAN_NSTAGES; j++) {
            if (j == i || !plan_overlap(plan, i, j)) continue;
            plan_put(&w, "%s%s", first ? "; shares ranks with " : ", ", plan_names[j]);
            first = 0;
        }
        if (first) plan_put(&w, "; own ranks");
        plan_put(&w, ")\n");
    }
    return plan_done(&w);
}
