/* cost_shared_cores.c — the cost model's CPU-sharing case: the ranks of a node share
 * fewer CPU cores than are busy (hw.cores > 0, as when 8 ranks run on a 2-core
 * machine). There a rank's time is not its own: the kernel's scheduler hands out time
 * slices. This file models that: (1) each phase scheduled as the step runs it, the
 * cores of a node shared out among the stages computing there at each moment (so a
 * stage's compute stretches, kr and ks of PlanPhases); (2) each message waiting for its
 * peer to get a core (the communication stretched by ρ = (busy ranks per core)^rho_exp);
 * (3) each pipeline boundary crossing on a stage's critical path waiting for the
 * receiver's next time slice (hw.pipe_hops message latencies); (4) a pipelined stage's
 * uneven use of the cores as its pipeline fills and drains. cost_int.h's on_core adds
 * (5): the bytes of the messages inside a node take a core (the CPU copies them).
 *
 * On a GPU cluster (one rank per device, hw.cores = 0) none of it applies: every
 * stretch is 1, ρ is 1, no crossing waits, and cost_plan is cost.c's formula alone
 * (a phase takes the largest per-rank sum of its stages' compute and communication).
 * Pure. */
#include "cost_int.h"

#include <math.h>

void cores_add_pipe_wait(const CostModel *cm, Parts *pt, double crossings, int k, int rpn) {
    /* a stage waiting for its neighbour sleeps, and each crossing waits for the receiver's next time slice:
       pipe_hops message latencies each */
    if (!(cm->hw.cores > 0 && rpn > cm->hw.cores)) return;
    pt->pw = crossings * lat_s(cm, 1, k);
    pt->t[EFF_LAT] += pipe_hops(&cm->hw) * pt->pw;
}

/* A pipelined stage's ramp on shared cores. Its n ranks on a node do not compute evenly: in slot t of the
 * schedule's mb + pp - 1, a(t) = min(t + 1, pp, mb, mb + pp - 1 - t) of its pp stages work, n·a(t)/pp ranks,
 * so with g cores a slot takes max(1, n·a(t)/(pp·g)) of its time alone, where asking the average (n·duty
 * cores, duty = mb / (mb + pp - 1)) predicts max(1, n·duty/g) for every slot. Returns their ratio (>= 1; 1
 * where g covers the busiest slot, or where every slot is short of cores). pp4 over 4 ranks on 2 cores:
 * 1 + 1 + 1.5 + 2 + 1.5 + 1 + 1 = 9 slots' time against 7 · 8/7 = 8, 1.125. */
static double pipe_ramp(int pp, int n, double g) {
    if (pp <= 1 || g <= 0) return 1;
    int mb = pp, slots = mb + pp - 1;
    double real = 0, duty = (double)mb / slots;
    for (int t = 0; t < slots; t++) {
        int a = t + 1;
        if (a > pp) a = pp;
        if (a > mb) a = mb;
        if (a > slots - t) a = slots - t;
        real += fmax(1.0, (double)n * a / ((double)pp * g));
    }
    return real / (slots * fmax(1.0, n * duty / g));
}

/* A phase on ranks that share cores, as the step runs it (step.c): every rank does its stages of the phase
 * in the step's order (ascending id); a stage starts once each of its ranks is done with its earlier ones (its
 * collectives wait for the last to arrive); it computes c[s] seconds (alone) on each of its ranks, sharing
 * its node's cores with the other stages computing there at that moment: each stage asks for its ranks on
 * the node × its duty, the cores are water-filled among the stages (each gets what it asks, or an equal
 * share x where it asks more, Σ = cores), and its ranks split its share (the stage at the pace of its
 * slowest node); then it communicates for rho·m[s] without a core. The cores are shared out by stage rather
 * than by rank: two trainings side by side, one on a rank and one on two, measure as if each had a core.
 * What starts together, and asks for cores together, is a unit (sched_units): a training stage as a whole
 * (its gradient all-reduces join its replicas), but a generating or scoring stage replica by replica, as
 * nothing joins its replicas before the phase ends (step.c: they meet only in the collective after the
 * phase): ref.inf on 8 single-rank replicas does not wait for the one rank still scoring with the actor.
 * rank_end[r]: when rank r's last stage of the phase ends (0: none); stage_k[s]: the stretch of stage s's
 * compute as its ranks time it, (the longest time one of its ranks spends in it − rho·m[s]) / c[s] (a rank
 * entering early waits inside it), at least 1. */

/* The units of phase ph in the step's order (stage by stage, replica by replica) into sw->unit and sw->rank: a
   stage's replica d is its ranks at grid positions i with (i / tp) % dp == d (grid.h: TP fastest, then DP, then
   PP). Returns how many. */
static int sched_units(SharedCoresWork *sw, int ph, const PlanConfig *plan, int nranks, const double *c,
                       const double *m) {
    int split = 1;
    for (int pass = 0; pass < 2; pass++) {
        int nu = 0, nr = 0;
        for (int s = 0; s < PLAN_NSTAGES; s++) {
            const PlanStage *ps = &plan->stage[s];
            if (plan_stage_phase(s) != ph || !(c[s] + m[s] > 0) || ps->nranks <= 0) continue;
            int parts = split && !plan_stage_is_train(s) && ps->dp > 1 && ps->tp > 0 ? ps->dp : 1;
            for (int d = 0; d < parts; d++) {
                if (nu == SCHED_UNITS) break;
                SchedUnit *u = &sw->unit[nu];
                u->s = s, u->r0 = nr, u->n = 0;
                for (int i = 0; i < ps->nranks; i++) {
                    int r = ps->ranks[i];
                    if (r < 0 || r >= nranks || (parts > 1 && (i / ps->tp) % ps->dp != d)) continue;
                    sw->rank[nr++] = r;
                    u->n++;
                }
                if (u->n > 0) nu++;
                else nr = u->r0;
            }
        }
        if (nu <= SCHED_MAX_UNITS || !split) return nu;
        split = 0; /* too many: every stage as a whole */
    }
    return 0;
}

/* Starts, at time t, the units of the nu whose ranks are all done with their earlier units. */
static void start_ready_units(SharedCoresWork *sw, int nu, double t, const double *c, const double *m, double rho,
                              const double *rank_end) {
    for (int k = 0; k < nu; k++) {
        if (sw->state[k] != 0) continue;
        const SchedUnit *u = &sw->unit[k];
        int ready = 1;
        for (int i = u->r0; i < u->r0 + u->n && ready; i++) ready = sw->pos_unit[sw->first[sw->rank[i]]] == k;
        if (!ready) continue;
        sw->enter[k] = INFINITY;
        for (int i = u->r0; i < u->r0 + u->n; i++)
            if (rank_end[sw->rank[i]] < sw->enter[k]) sw->enter[k] = rank_end[sw->rank[i]];
        if (!isfinite(sw->enter[k])) sw->enter[k] = t;
        sw->left[k] = c[u->s];
        sw->state[k] = sw->left[k] > 0 ? 1 : 2;
        sw->comm_end[k] = t + rho * m[u->s];
    }
}

/* Each unit's pace (sw->rate, at most 1) while the units computing now share their nodes' cores. Per node, the
   cores are shared out among the units computing there (each asks its ranks there × its stage's duty),
   water-filled; a unit's ranks split its share; the unit at its slowest node's pace. */
static void share_cores(SharedCoresWork *sw, int nu, const PlanConfig *plan, int rpn, int cores,
                        const double *duty) {
    int *head = sw->head, *pair_unit = sw->pair_unit, *pair_cnt = sw->pair_cnt, *pair_next = sw->pair_next;
    double *ask = sw->ask, *sorted = sw->sorted;
    int *ask_n = sw->ask_n, *on = sw->on;
    /* the (unit, node) pairs of the units computing, each node's listed from head[q] through pair_next */
    int np = 0, nq = 0;
    for (int k = 0; k < nu; k++) {
        sw->rate[k] = 1;
        if (sw->state[k] != 1) continue;
        const SchedUnit *u = &sw->unit[k];
        for (int i = u->r0; i < u->r0 + u->n; i++) {
            int q = sw->rank[i] / rpn;
            if (head[q] < 0) sw->node_list[nq++] = q;
            if (head[q] < 0 || pair_unit[head[q]] != k) { /* a unit's pair on q is its node's newest */
                pair_unit[np] = k, pair_cnt[np] = 0, pair_next[np] = head[q];
                head[q] = np++;
            }
            pair_cnt[head[q]]++;
        }
    }
    for (int qi = 0; qi < nq; qi++) {
        int q = sw->node_list[qi], mq = 0;
        double need = 0;
        for (int e = head[q]; e >= 0; e = pair_next[e]) {
            ask[mq] = pair_cnt[e] * duty[sw->unit[pair_unit[e]].s];
            need += ask[mq];
            ask_n[mq] = pair_cnt[e];
            on[mq++] = pair_unit[e];
        }
        head[q] = -1;
        double x = INFINITY; /* the water level: a unit gets min(its ask, x) cores */
        if (need > cores) {
            double used = 0;
            for (int a = 0; a < mq; a++) sorted[a] = ask[a];
            for (int a = 1; a < mq; a++)
                for (int b = a; b > 0 && sorted[b] < sorted[b - 1]; b--) { double w = sorted[b]; sorted[b] = sorted[b - 1]; sorted[b - 1] = w; }
            for (int a = 0; a < mq; a++) { /* the a smallest asks met in full, the rest at x */
                x = (cores - used) / (mq - a);
                if (sorted[a] >= x) break;
                used += sorted[a];
            }
        }
        for (int a = 0; a < mq; a++) {
            /* its cores g; where all asks are met, a pipelined unit may use the spare ones in its busy slots */
            int st = sw->unit[on[a]].s;
            double g = need <= cores ? ask[a] + cores - need : fmin(ask[a], x), r = fmin(1, g / ask[a]);
            if (duty[st] < 1) r /= pipe_ramp(plan->stage[st].pp, ask_n[a], g);
            sw->rate[on[a]] = fmin(sw->rate[on[a]], r);
        }
    }
}

/* The schedule of phase ph (the comment above sched_units). */
static void schedule_phase(SharedCoresWork *sw, int ph, const PlanConfig *plan, int nranks, int rpn, int cores,
                           const double *c, const double *m, const double *duty, double rho, double *rank_end,
                           double *stage_k) {
    int *state = sw->state, *first = sw->first, *nxt = sw->nxt;
    double *left = sw->left, *enter = sw->enter, *comm_end = sw->comm_end, *rate = sw->rate;
    int nu = sched_units(sw, ph, plan, nranks, c, m);
    for (int r = 0; r < nranks; r++) rank_end[r] = 0, first[r] = -1;
    /* per rank, its units in order: first[r] the slot of its earliest unfinished one, nxt[slot] the next */
    for (int k = nu - 1; k >= 0; k--)
        for (int i = sw->unit[k].r0; i < sw->unit[k].r0 + sw->unit[k].n; i++) {
            int r = sw->rank[i];
            sw->pos_unit[i] = k;
            nxt[i] = first[r];
            first[r] = i;
        }
    for (int k = 0; k < nu; k++) state[k] = 0;
    for (int q = 0; q * rpn < nranks; q++) sw->head[q] = -1;
    double t = 0;
    for (int guard = 0; guard < 4 * nu + 8; guard++) {
        int pending = 0;
        start_ready_units(sw, nu, t, c, m, rho, rank_end);
        share_cores(sw, nu, plan, rpn, cores, duty);
        double dt = INFINITY;
        for (int k = 0; k < nu; k++) {
            if (state[k] == 0 || state[k] == 3) continue;
            pending++;
            if (state[k] == 2) {
                dt = fmin(dt, comm_end[k] - t);
                continue;
            }
            dt = fmin(dt, left[k] / rate[k]);
        }
        if (!pending) break;
        if (dt < 0) dt = 0;
        t += dt;
        for (int k = 0; k < nu; k++) {
            const SchedUnit *u = &sw->unit[k];
            if (state[k] == 1) {
                left[k] -= rate[k] * dt;
                if (left[k] <= 1e-12 * c[u->s]) {
                    state[k] = 2;
                    comm_end[k] = t + rho * m[u->s];
                }
            }
            if (state[k] == 2 && comm_end[k] <= t * (1 + 1e-12)) {
                state[k] = 3;
                for (int i = u->r0; i < u->r0 + u->n; i++) {
                    int r = sw->rank[i];
                    rank_end[r] = comm_end[k];
                    first[r] = nxt[first[r]];
                }
                double st = c[u->s] > 0 ? (comm_end[k] - enter[k] - rho * m[u->s]) / c[u->s] : 1;
                st = st > 1 ? st : 1;
                if (st > stage_k[u->s]) stage_k[u->s] = st; /* the stage as its slowest replica times it */
            }
        }
    }
}

int cores_share_phase(CostWork *cw, int ph, const CostModel *cm, const PlanConfig *plan, int nranks,
                      const double *stage_compute, const double *stage_comm, double *stage_k) {
    PlanPhases *pp = &cw->phases;
    const double *rc = cw->rank_compute[ph], *rx = cw->rank_comm[ph];
    const double *end = cw->rank_end;
    int rpn = cm->hw.ranks_per_node > 0 ? cm->hw.ranks_per_node : 1, most = 0;
    for (int r0 = 0; r0 < nranks; r0 += rpn) { /* each node: its ranks share its cores */
        int n = r0 + rpn <= nranks ? rpn : nranks - r0, active = 0;
        for (int r = r0; r < r0 + n; r++) active += rc[r] + rx[r] > 0;
        if (active > most) most = active;
    }
    /* a message waits for its peer to get a core: latency grows with the ranks per core */
    double rho = 1;
    if ((double)most / cm->hw.cores > 1) rho = pow((double)most / cm->hw.cores, rho_exp(&cm->hw));
    pp->rho[ph] = rho;
    pp->busy_per_core[ph] = (double)most / cm->hw.cores;
    int finite = 1;
    for (int r = 0; r < nranks; r++) finite &= isfinite(rc[r]) && isfinite(rx[r]);
    if (!finite) return 0;
    double duty[PLAN_NSTAGES];
    for (int s = 0; s < PLAN_NSTAGES; s++) duty[s] = pp->parts[s].duty;
    /* the stages as they run, sharing the cores */
    schedule_phase(&cw->sched, ph, plan, nranks, rpn, cm->hw.cores, stage_compute, stage_comm, duty, rho,
                   cw->rank_end, stage_k);
    for (int r = 0; r < nranks; r++)
        pp->kr[ph][r] = rc[r] > 0 && end[r] - rho * rx[r] > rc[r] ? (end[r] - rho * rx[r]) / rc[r] : 1;
    return 1;
}
