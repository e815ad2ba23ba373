/* recover.c — the job after ranks died (recover.h): dropped without MPI,
 * the survivors' plan, a half-written checkpoint discarded. */
#include "nereus/recover.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nereus/ft.h"
#include "nereus/txprice.h"
#include "nereus/util.h"

void job_revoke(Job *j) {
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        Emu *e = &j->st[i].emu;
        MPI_Comm c[5] = {e->all, e->tp, e->dp, e->pp, e->embd};
        for (int k = 0; k < 5; k++)
            if (c[k] != MPI_COMM_NULL && c[k] != 0) ft_revoke(c[k]);
    }
    if (j->xcomm != MPI_COMM_NULL && j->xcomm) ft_revoke(j->xcomm);
    rollq_revoke(j);
    if (j->world != MPI_COMM_NULL && j->world) ft_revoke(j->world);
}

void job_abandon(Job *j) {
    for (int i = PLAN_NSTAGES - 1; i >= 0; i--) gpt_free(&j->st[i].model);
    free(j->px.kept);
    job_sync_plan_free(j);
    rollout_free(&j->G);
    rollout_free(&j->L);
    for (int i = 0; i < ROLLQ_SLOTS; i++) free(j->rq.slot[i].rows); /* its communicators are revoked: dropped */
    for (int i = 0; i < j->rq.nsend; i++) free(j->rq.sendbuf[i]);
    free(j->rq.req);
    free(j->rq.gen_leader);
    free(j->rq.needers);
    free(j->win);
    free(j->scratch);
    memset(j, 0, sizeof *j);
}

int job_survivor_plan(const Config *cfg, int world, PlanConfig *out, char *why, size_t len) {
    memset(out, 0, sizeof *out);
    const char *kind = strcmp(cfg->plan.fill, "disaggregated") == 0 && world >= PLAN_NSTAGES ? "disaggregated"
                                                                                                : "colocated";
    snprintf(out->fill, sizeof out->fill, "%s", kind);
    PlanLimits lim = job_plan_limits(cfg, world);
    PlanError err;
    if (plan_resolve(out, &lim, &err) != 0) return nr_fail(why, len, "no %s plan on %d rank(s): %s", kind, world, err.msg);
    return 0;
}

int job_ckpt_discard_partial(const Job *j, char *first, size_t len) {
    if (first && len) first[0] = 0;
    if (j->rank != 0) return 0;
    const char *dir = j->cfg->ckpt.dir, *name = j->cfg->run.name;
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t nl = strlen(name);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t el = strlen(e->d_name);
        if (strncmp(e->d_name, name, nl) != 0 || strncmp(e->d_name + nl, "_step", 5) != 0) continue;
        if (el < 8 || strcmp(e->d_name + el - 7, ".h5.tmp") != 0) continue;
        char path[JOB_PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0) {
            nr_warn("could not delete the partial checkpoint %s: %s", path, strerror(errno));
            continue;
        }
        if (n++ == 0 && first) snprintf(first, len, "%s", path);
    }
    closedir(d);
    return n;
}
