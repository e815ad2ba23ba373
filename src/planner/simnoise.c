/* simnoise.c — the simulator's MODELLED noise (sim.h, SimNoise): counter-based draws, each a hash of the
 * seed and what it is drawn for (a plan and its node set, a step, a move), so every policy sees the same
 * draw for the same plan at the same step whatever it did before (common random numbers). Pure. */
#include "nereus/sim.h"

#include <math.h>

/* splitmix64's finaliser: a bijection that mixes every input bit into every output bit */
static unsigned long long mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static unsigned long long combine(unsigned long long h, unsigned long long v) { return mix(h ^ mix(v)); }

/* uniform in (0, 1) from a key */
static double uniform(unsigned long long key) { return ((double)(mix(key) >> 11) + 0.5) / 9007199254740992.0; }

/* a standard normal from a key (Box–Muller on two draws of it) */
static double normal(unsigned long long key) {
    double u1 = uniform(combine(key, 1)), u2 = uniform(combine(key, 2));
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

unsigned long long sim_plan_key(const PlanConfig *p) {
    unsigned long long h = 0x6e6572657573ULL; /* "nereus" */
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        const PlanStage *g = &p->stage[s];
        h = combine(h, ((unsigned long long)g->tp << 40) ^ ((unsigned long long)g->pp << 20) ^ (unsigned)g->dp);
        h = combine(h, (unsigned long long)g->nranks << 1 | (unsigned)(g->all != 0));
        for (int i = 0; i < g->nranks; i++) h = combine(h, (unsigned long long)(unsigned short)g->ranks[i]);
    }
    return h;
}

/* the streams: what a draw is for */
enum { DRAW_ERROR = 1, DRAW_STEP, DRAW_MOVE };

double sim_plan_error(const SimNoise *n, unsigned long long plan) {
    if (!n->on || !(n->model_error > 0)) return 1;
    return exp(n->model_error * normal(combine(combine(n->seed, DRAW_ERROR), plan)));
}

double sim_step_noise(const SimNoise *n, unsigned long long plan, int step, int stage) {
    if (!n->on || !(n->step_noise > 0)) return 1;
    unsigned long long k = combine(combine(combine(n->seed, DRAW_STEP), plan), (unsigned long long)step);
    return exp(n->step_noise * normal(combine(k, (unsigned long long)(stage + 1))));
}

double sim_move_factor(const SimNoise *n, unsigned long long from, unsigned long long to, int step) {
    if (!n->on || !(n->tx_max > n->tx_min) || !(n->tx_min > 0)) return n->on && n->tx_min > 0 ? n->tx_min : 1;
    unsigned long long k = combine(combine(combine(combine(n->seed, DRAW_MOVE), from), to), (unsigned long long)step);
    return n->tx_min * pow(n->tx_max / n->tx_min, uniform(k));
}
