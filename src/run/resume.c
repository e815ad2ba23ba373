/* resume.c — checkpoints of the whole job: which stage's model goes into
 * which checkpoint model (actor from actor.train with its AdamW state,
 * critic from critic.train with its state, ref from ref.inf, the reward
 * network from reward.inf), the file names DIR/NAME_stepNNNNNN.h5, keeping
 * the newest K, finding the newest complete one ("latest"), restart into
 * every stage under the current plan, and the stop signals. The file format
 * itself is src/io/ckpt.c (docs/CHECKPOINT.md). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nereus/ckpt.h"
#include "nereus/comm.h"
#include "nereus/dataset.h"
#include "nereus/inject.h"
#include "nereus/job.h"
#include "nereus/plan.h"
#include "nereus/util.h"

static volatile sig_atomic_t stop_signal = 0;

static void on_stop_signal(int sig) { stop_signal = sig; }

void job_install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

int job_stop_requested(Job *j) {
    int64_t s = stop_signal;
    comm_allreduce_max_i64(j->world, &s, 1);
    return (int)s;
}

/* The checkpoint's models: each stage that holds a model is one entry (a critic-free job's has no critic,
 * a job without a reward network no reward); the canonical writers are replica 0's members of the stage
 * named for the model */
static int job_ckpt_models(Job *j, CkptModel *cm) {
    static const struct { int stage; const char *name; int canonical; int adam; } map[] = {
        {PLAN_ACTOR_TRAIN, "actor", 1, 1}, {PLAN_ACTOR_GEN, "actor", 0, 0}, {PLAN_ACTOR_INF, "actor", 0, 0},
        {PLAN_CRITIC_TRAIN, "critic", 1, 1}, {PLAN_CRITIC_INF, "critic", 0, 0}, {PLAN_REF_INF, "ref", 1, 0},
        {PLAN_REWARD_INF, "reward", 1, 0},
    };
    memset(cm, 0, 8 * sizeof *cm);
    int n = 0;
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++) {
        Stage *s = &j->st[map[k].stage];
        if (!job_stage_holds_model(j, map[k].stage)) continue;
        cm[n].name = map[k].name;
        cm[n].cfg = plan_stage_is_critic(map[k].stage) ? &j->cc : &j->ac;
        cm[n].m = s->member ? &s->model : NULL;
        cm[n].canonical = map[k].canonical && s->member && s->d == 0;
        cm[n].adam = map[k].adam;
        n++;
    }
    return n;
}

/* the hash of the run's prompt file (a text run), else 0 */
static uint64_t job_data_hash(const Job *j) { return j->ts.text ? j->ts.text->ps->hash : 0; }

static void ckpt_name(const Job *j, int64_t step, char *buf, size_t len) {
    snprintf(buf, len, "%s/%s_step%06lld.h5", j->cfg->ckpt.dir, j->cfg->run.name, (long long)step);
}

/* steps of DIR/NAME_stepNNNNNN.h5 files (complete names only, not .tmp), ascending */
static int list_ckpts(const char *dir, const char *name, int64_t *steps, int max) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    size_t nl = strlen(name);
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        long long s;
        char tail[8];
        if (strncmp(e->d_name, name, nl) != 0 || e->d_name[nl] != '_') continue;
        if (sscanf(e->d_name + nl, "_step%lld%7s", &s, tail) == 2 && strcmp(tail, ".h5") == 0) steps[n++] = s;
    }
    closedir(d);
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && steps[b] < steps[b - 1]; b--) {
            int64_t t = steps[b]; steps[b] = steps[b - 1]; steps[b - 1] = t;
        }
    return n;
}

int job_ckpt_dir(Job *j, char *why, size_t why_len) {
    const char *dir = j->cfg->ckpt.dir;
    int64_t bad = 0;
    struct stat sb;
    if (j->rank == 0) {
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            snprintf(why, why_len, "cannot create the checkpoint directory %s: %s", dir, strerror(errno)), bad = 1;
        else if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            snprintf(why, why_len, "the checkpoint directory %s is not a directory", dir), bad = 1;
        else if (access(dir, W_OK | X_OK) != 0)
            snprintf(why, why_len, "cannot write in the checkpoint directory %s: %s", dir, strerror(errno)), bad = 1;
    }
    comm_allreduce_max_i64(j->world, &bad, 1);
    if (bad && j->rank != 0) snprintf(why, why_len, "the checkpoint directory %s is not usable (rank 0 says why)", dir);
    return bad ? -1 : 0;
}

int job_checkpoint(Job *j, int64_t step, int64_t sft_done, const char *deck_text, const char *plan_text,
                   char *path_out, size_t path_len, char *why, size_t why_len) {
    const Config *cfg = j->cfg;
    inject_phase(INJECT_CKPT);
    if (job_ckpt_dir(j, why, why_len) != 0) return -1;
    ckpt_name(j, step, path_out, path_len);
    CkptModel cm[8];
    int n = job_ckpt_models(j, cm);
    int32_t *queue = NULL; /* the batches generated ahead and not trained yet (rank 0 has them) */
    size_t qn = rollq_pack(j, step, &queue);
    CkptMeta meta = {step, sft_done, cfg->run.seed, deck_text, plan_text, job_data_hash(j), queue, (int64_t)qn,
                     j->ts.text ? j->ts.text->tok : NULL}; /* a text run's tokenizer: export-hf writes it */
    int rc = ckpt_write(path_out, j->world, &meta, cm, n, why, why_len);
    free(queue);
    if (rc != 0) return -1;
    /* keep the newest [ckpt] keep up to this one. A later step's file (another run's of the same name, left
       in the directory) is no part of this series: counted as the newest, it would make keep = 1 delete the
       checkpoint just written */
    if (j->rank == 0) {
        int64_t steps[4096];
        int k = list_ckpts(cfg->ckpt.dir, cfg->run.name, steps, 4096);
        while (k > 0 && steps[k - 1] > step) k--;
        for (int i = 0; i < k - cfg->ckpt.keep; i++) {
            char old[JOB_PATH_MAX];
            ckpt_name(j, steps[i], old, sizeof old);
            if (unlink(old) != 0) nr_warn("could not delete old checkpoint %s: %s", old, strerror(errno));
        }
    }
    return 0;
}

int64_t job_ckpt_oldest(const Job *j) {
    int64_t steps[4096];
    int k = list_ckpts(j->cfg->ckpt.dir, j->cfg->run.name, steps, 4096);
    return k > 0 ? steps[0] : -1;
}

int64_t job_ckpt_newest(const Job *j) {
    int64_t steps[4096];
    int k = list_ckpts(j->cfg->ckpt.dir, j->cfg->run.name, steps, 4096);
    return k > 0 ? steps[k - 1] : -1;
}

/* A critic-free job (GRPO) restarted from a file with a critic (a PPO run's): the critic is not read, and the
 * run says so. (The reverse, a PPO job from a GRPO file, is the file lacking a model: the critic starts from
 * the actor as in a fresh job, which job_restart's note says.) */
static void restart_note_critic(Job *j, const char *path) {
    if (job_stage_holds_model(j, PLAN_CRITIC_TRAIN)) return;
    GPTConfig fc;
    int has_adam = 0;
    char w[256];
    if (ckpt_model_config(path, "critic", &fc, &has_adam, w, sizeof w) == 0)
        nr_log("note: %s holds a critic (a ppo run's); algorithm = grpo has none, so it is not read\n", path);
}

int job_restart_precheck(const Config *cfg, char *why, size_t why_len) {
    char path[JOB_PATH_MAX];
    if (strcmp(cfg->run.restart, "latest") == 0) {
        int64_t steps[4096];
        int k = list_ckpts(cfg->ckpt.dir, cfg->run.name, steps, 4096);
        if (k == 0) {
            snprintf(why, why_len, "restart = latest: no checkpoint %s/%s_step*.h5", cfg->ckpt.dir, cfg->run.name);
            return -1;
        }
        snprintf(path, sizeof path, "%s/%s_step%06lld.h5", cfg->ckpt.dir, cfg->run.name, (long long)steps[k - 1]);
    } else {
        snprintf(path, sizeof path, "%s", cfg->run.restart);
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || access(path, R_OK) != 0) {
        snprintf(why, why_len, "%s: %s", path,
                 stat(path, &sb) != 0 ? strerror(errno) : !S_ISREG(sb.st_mode) ? "not a regular file" : strerror(errno));
        return -1;
    }
    GPTConfig fc;
    char w[512];
    if (ckpt_model_config(path, "actor", &fc, NULL, w, sizeof w) != 0) {
        snprintf(why, why_len, "%s", w);
        return -1;
    }
    return 0;
}

int job_restart(Job *j, const char *path, int64_t *step, int64_t *sft_done, int *partial, char *used,
                size_t used_len, char *why, size_t why_len) {
    const Config *cfg = j->cfg;
    if (strcmp(path, "latest") == 0) {
        int64_t steps[4096];
        int k = list_ckpts(cfg->ckpt.dir, cfg->run.name, steps, 4096);
        if (k == 0) {
            snprintf(why, why_len, "restart = latest: no checkpoint %s/%s_step*.h5", cfg->ckpt.dir, cfg->run.name);
            return -1;
        }
        /* every rank lists the same directory; the newest is taken (a half-written one is a .tmp, not listed) */
        ckpt_name(j, steps[k - 1], used, used_len);
    } else {
        snprintf(used, used_len, "%s", path);
    }
    CkptModel cm[8];
    int n = job_ckpt_models(j, cm);
    restart_note_critic(j, used);
    /* A file may hold fewer models than the job (an llm.c import: actor and
     * ref, no critic, no AdamW state): those start as a fresh job would, from
     * the actor, and the caller is told so. The actor itself must be there
     * (ckpt_read reports why not). */
    *partial = 0;
    int kept = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        GPTConfig fc;
        int has_adam = 0;
        char w2[256];
        int q = ckpt_model_config(used, cm[i].name, &fc, &has_adam, w2, sizeof w2), present = q == 0;
        if (q < 0) { /* unreadable (corrupt, not a checkpoint): not taken for a model the file lacks */
            if (!bad) snprintf(why, why_len, "%s", w2);
            bad = 1;
            continue;
        }
        if (!present && strcmp(cm[i].name, "actor") != 0) {
            if (cm[i].canonical || j->rank == 0) *partial = 1;
            continue;
        }
        if (present && cm[i].adam && !has_adam) {
            cm[i].adam = 0;
            *partial = 1;
        }
        cm[kept++] = cm[i];
    }
    int64_t p[2] = {*partial, bad};
    comm_allreduce_max_i64(j->world, p, 2); /* every rank takes the same verdict */
    *partial = (int)p[0];
    if (p[1]) {
        if (!bad) snprintf(why, why_len, "%s: unreadable on another rank", used);
        return -1;
    }
    if (*partial)
        nr_log("note: %s holds fewer models or no AdamW state; what is missing starts from the actor, as in a fresh job\n",
               used);
    CkptMeta meta;
    memset(&meta, 0, sizeof meta);
    job_weights_changed(j, -1);
    if (ckpt_read(used, j->world, &meta, cm, kept, why, why_len) != 0) return -1;
    if (meta.seed != cfg->run.seed) nr_log("note: the checkpoint was written with seed %lld, the deck has %lld\n",
                                          (long long)meta.seed, (long long)cfg->run.seed);
    if (meta.data_hash != job_data_hash(j)) { /* sample g's prompt is the file's: another file, other prompts */
        snprintf(why, why_len, "%s: its run drew its prompts from %s (prompt file hash %016llx); this deck's [data] "
                 "train %s (%016llx): a restart would not continue the same sequence of prompts", used,
                 meta.data_hash ? "another [data] train file" : "the built-in tasks", (unsigned long long)meta.data_hash,
                 cfg->data.train[0] ? cfg->data.train : "is not set", (unsigned long long)job_data_hash(j));
        ckpt_meta_free(&meta);
        return -1;
    }
    if (meta.queue) { /* a run with batches generated ahead ([ppo] max_staleness): they are trained next */
        char w[256];
        if (rollq_unpack(j, meta.step, meta.queue, (size_t)meta.queue_words, w, sizeof w) != 0) {
            snprintf(why, why_len, "%s: %s", used, w);
            ckpt_meta_free(&meta);
            return -1;
        }
        if (j->rank == 0)
            nr_log("restart: %lld rollout batch(es) generated before the checkpoint (steps %lld to %lld) are "
                   "trained next, as in the run that wrote it\n", (long long)(j->rq.gen_next - meta.step),
                   (long long)meta.step, (long long)j->rq.gen_next - 1);
    }
    *step = meta.step;
    *sft_done = meta.sft_done;
    ckpt_meta_free(&meta);
    return 0;
}

int job_init_from(Job *j, const char *path, char *why, size_t why_len) {
    CkptModel cm[8];
    int n = job_ckpt_models(j, cm), kept = 0;
    /* the actor stages and the ref read the file's actor; the ref's entries
     * are named "actor" so that ckpt_read takes them from it, and read
     * (canonical 0) without checking: actor.train's canonical ranks check */
    for (int i = 0; i < n; i++) {
        int ref = strcmp(cm[i].name, "ref") == 0;
        if (strcmp(cm[i].name, "actor") != 0 && !ref) continue;
        cm[kept] = cm[i];
        cm[kept].name = "actor";
        cm[kept].adam = 0;
        if (ref) cm[kept].canonical = 0;
        kept++;
    }
    job_weights_changed(j, -1);
    return ckpt_read(path, j->world, NULL, cm, kept, why, why_len) != 0 ? -1 : 0;
}
