/* job.h — the running job as this rank sees it: the resolved plan's seven
 * EMUs (one per model-stage), the model each EMU holds on this rank, and the
 * operations across EMUs — assembling a model's logical parameters,
 * per-step weight sync, checksums, and the distributed PPO step.
 *
 * Data flow of a step (job_step): every rank keeps the whole step's rollout
 * (the prompts are a pure function of the sample index, so every rank makes
 * them). actor.gen's replicas generate their rows; the rows are assembled on
 * every rank by one all-reduce of disjoint contributions. Each inference EMU
 * scores its replicas' rows and the results are assembled the same way, so
 * advantages are computed identically everywhere. Each training EMU splits
 * every minibatch over its replicas and sums gradients over its dp group.
 * Then the trained weights go to actor.gen, actor.inf and critic.inf.
 * Gathering everything everywhere is the simple, correct baseline; the
 * weight sync itself goes, by default, through the transition engine
 * (job_sync_engine: minimal-byte transfers), job_sync being the baseline.
 */
#ifndef NEREUS_JOB_H
#define NEREUS_JOB_H

#include <mpi.h>

#include "nereus/config.h"
#include "nereus/emu.h"
#include "nereus/model.h"
#include "nereus/ppo.h"
#include "nereus/task.h"
#include "nereus/txprice.h"

/* a checkpoint path: [ckpt] dir + "/" + [run] name + "_stepNNNNNN.h5" */
#define JOB_PATH_MAX (2 * CFG_STR + 64)

typedef struct Stage {
    int id;          /* PlanStageId */
    Emu emu;         /* built on every rank; MPI_COMM_NULL groups where not a member */
    int member;      /* this rank holds the model-stage */
    int d, dp;       /* this rank's replica and the replica count */
    int leader;      /* the member that reports its replica's results (tp coordinate 0) */
    int root;        /* job rank of grid position 0 (replica 0's leader) */
    int B;           /* rows per replica in a step (gen, inf) */
    GPT model;       /* the stage's model on this rank (when member) */
} Stage;

typedef struct Job {
    MPI_Comm world;
    int rank, size;
    const Config *cfg;
    const Backend *be;
    TaskSet ts;
    int V, P, Tgen, Tsft;
    int have_rm;               /* reward.inf holds a reward network */
    Stage st[7];               /* indexed by PlanStageId */
    GPTConfig ac, cc;          /* the actor's and the critic's (value head) logical configs */
    size_t n_actor, n_critic;  /* their logical parameter counts */
    size_t window;             /* floats in a window of a logical vector (job_window) */
    float *win;                /* (min(n_critic, window)) that window (job_assemble_windows) */
    Rollout G;                 /* the step's whole rollout (every rank) */
    Rollout L;                 /* this rank's gen rows (actor.gen members) */
    float *scratch;            /* (Bg, Tgen) inference rows / assembly */
    double sync_bytes;         /* bytes received by ranks in the last weight sync */
    PlanConfig plan;           /* the plan the job runs now (cfg->plan until a transition) */
    MPI_Comm xcomm;            /* transfers of the transition engine (a dup of world: tags of its own) */
    struct JobSyncPlan *sync;  /* the weight sync compiled for the current plan (NULL: not yet) */
    TxPricer px;               /* the job's shapes and capacities, for transitions and their prices (txprice.h) */
    int cores_shared;          /* some node runs more ranks than it has cores (the same on every rank) */
    EmuCache comms;            /* the communicator sets of the stages' EMUs, shared and kept (emu.h) */
    int tx_sets_prebuilt;      /* communicator sets built before a move that it took, over the job's transitions */
    double prepared_at;        /* when job_prepare_comms last began (nr_now): a move's prediction counts what the
                                  set-up of the sets it prepared has left by then, as priced */
} Job;

/* What one transition did (job_transition), the same on every rank. */
typedef struct JobTxReport {
    int nchanges, nwaves;
    double bytes_moved, bytes_lower_bound, bytes_local;
    double bytes_relayed;             /* of bytes_moved, forwarded (transition.h) */
    int max_hop;                      /* the longest forwarding chain */
    double predicted_s, measured_s;   /* measured: max over ranks, communicators and checks included */
    double engine_s;                  /* max over ranks of the transfers alone (tx_execute) */
    double mem_peak, mem_budget;      /* max over ranks of the measured peak (bytes); the budget (0 = none) */
    double mem_planned;               /* max over ranks of the DAG's planned peak (bytes) */
    int verified;                     /* per-tensor checks ran (and passed) */
    int sets_built, sets_taken_back;  /* communicator sets the new EMUs built, and kept ones they took back (emu.h) */
    int sets_prebuilt;                /* sets built before the move (job_prepare_comms) that the new EMUs took */
    double setup_s;                   /* max over ranks of the move's communicator set-up: the new EMUs built, or
                                         prepared ones taken with what was left of their set-up waited for */
    char text[2048];                  /* one line per changed model-stage (tx_plan_format) */
} JobTxReport;

/* collective over world, before job_build: whether the resolved plan's
 * models fit this machine's memory. Each rank adds up the shards of the
 * model-stages it holds (gpt_shard_bytes: parameters, and for a training
 * stage gradients and AdamW m, v; activations at the stage's capacity) and
 * the job's window of a logical vector (job_window); each node's ranks together against the
 * node's memory (nr_node_memory: physical, or a cgroup's limit where
 * lower). Returns 0, or −1 with why (the fullest node: what its ranks
 * need, its largest rank's model-stages, what the node has) — a
 * deck that cannot fit is refused instead of dying in malloc or by the
 * kernel's out-of-memory killer. */
int job_memory_check(MPI_Comm world, const Config *cfg, const TaskSet *ts, char *why, size_t len);
/* collective over world: EMUs of the resolved plan, this rank's models
 * (initialised from the seed: every stage of a model starts equal), the
 * rollout buffers. */
void job_build(Job *j, MPI_Comm world, const Config *cfg, const Backend *be, const TaskSet *ts);
void job_free(Job *j);

/* Models move whole (start-up copy, broadcast weight sync, checksums) a
 * window at a time, so a rank needs that much beside its shards, not a
 * whole model: JOB_WINDOW floats (32 MiB), or NEREUS_JOB_WINDOW floats from
 * the environment (the tests cut tiny models into many windows with it). */
#define JOB_WINDOW ((size_t)8 << 20)
size_t job_window(void);
/* fn(j, w, lo, hi, ctx): w[0 .. hi − lo) are the logical floats [lo, hi), the same on every rank */
typedef void (*JobWindowFn)(Job *j, const float *w, size_t lo, size_t hi, void *ctx);
/* collective over world: the first n floats of buffer which (GPT_BUF_PARAMS, _ADAM_M, _ADAM_V) of stage src's
 * model (replica 0), window by window in logical order, each handed to fn on every rank. */
void job_assemble_windows(Job *j, int src, int which, size_t n, JobWindowFn fn, void *ctx);
/* collective over world: copy src's parameters into each stage of dst[] (a critic takes an actor's n_actor
 * floats as its trunk). */
void job_sync(Job *j, int src, const int *dst, int ndst);
/* collective over world: per tensor of buffer which (GPT_BUF_PARAMS, _ADAM_M, _ADAM_V) of stage id's model,
 * Σ|x| into abs and the order-free hash (nr_cksum_f32 of the whole logical tensor) into hash
 * (GPT_NUM_TENSORS each; 0 past the model's tensors). Each rank of the stage's replica 0 adds what it owns
 * (gpt_tensor_checks) and one all-reduce of a few hundred bytes adds the ranks up: no model is assembled. The
 * hash is the same whatever the layout; Σ|x| up to the order of its sums. */
void job_tensor_checks(Job *j, int id, int which, double *abs, uint64_t *hash);
/* collective over world: the fingerprint of stage id's parameters (nr_cksum_combine of job_tensor_checks'
 * hashes): the same for bit-identical weights under any layout, and what `nereus-ckpt info` computes from a
 * checkpoint's stored checksums. */
uint64_t job_params_hash(Job *j, int id);
/* collective over world: Σ|x| over the logical parameters of stage src. */
double job_checksum(Job *j, int src);

/* ---- the stages' set-up (job.c), used by job_build and transitions ---- */
/* s's fields that follow from s->emu: member, d, dp, leader, root, B */
void job_stage_fill(Job *j, Stage *s);
/* the stage holds a model in this job (reward.inf only with a reward network) */
int job_stage_holds_model(const Job *j, int id);
/* the weights' type stage id computes with: "bf16" where the deck asks for it (tx_stage_bf16) and the backend
   has bf16 GEMMs, else "fp32" (saying so where bf16 was asked) */
const char *job_stage_dtype(const Job *j, int id);
/* activation capacity (rows, tokens) of stage id's model with dp replicas */
void job_stage_capacity(const Job *j, int id, int dp, int *Bmax, int *Tmax);
/* builds s's model on this rank (when member): from the seed (filled 0), or as a transition's destination
 * whose first `filled` buffers (params; with 3 also AdamW m and v) the engine writes in full
 * (gpt_build_shard_dest) */
void job_stage_model(Job *j, Stage *s, int filled);

/* ---- transitions (src/run/switch.c) ---- */
/* collective over world: moves the job to plan np (resolved) through the
 * transition engine: every model-stage whose layout changes, with its
 * AdamW state and step counter. Refused before anything moves (returns 1,
 * why says what) when the plan is infeasible or no schedule fits [transition]
 * memory_mib. With verify (or [transition] verify) every moved tensor's
 * checksum is compared before and after: a mismatch returns −1 (the run
 * must stop). Returns 0 with *rep filled. */
int job_transition(Job *j, const PlanConfig *np, int verify, JobTxReport *rep, char *why, size_t len);
/* collective over world: the communicator sets a move to np (resolved) will need, built now (emu_cache_prepare)
 * at a point every rank reaches, so that job_transition to np takes them and builds none: the set-up runs
 * before the move (and its INJECTED part while the next step runs). Returns the sets built. Nothing when
 * NEREUS_TX_PREBUILD=0 is in the environment (job_prebuild_on): sets are then built in the move, as the
 * A/B baseline. Sets no move takes are freed at the end of the next transition (emu_cache_drop_prepared). */
int job_prepare_comms(Job *j, const PlanConfig *np);
/* 1 unless NEREUS_TX_PREBUILD=0 is in the environment (the same on every rank: mpirun passes it to all) */
int job_prebuild_on(void);
/* collective over world: with [transition] bandwidth_gbs = 0 (the default), measures once per job what a
 * transition can expect of the links and local copies (tx_probe, every rank at once; a fraction of a
 * second) into j->px, which the engine's predictions and the planner's prices then use; rank 0 logs it.
 * Nothing to do when measured already or when the deck sets bandwidth_gbs. */
void job_probe_links(Job *j);
/* collective over world: the per-step weight sync through the engine
 * (actor.train → actor.gen, actor.inf; critic.train → critic.inf), compiled
 * once per plan; sets j->sync_bytes. */
void job_sync_engine(Job *j);
void job_sync_plan_free(Job *j);
/* rank 0: the transition's log line (and its trace row) before PPO step `step`, started at t0 (nr_now) */
struct Trace;
void job_tx_log(const JobTxReport *rep, int step, double t0, int from_plan, int to_plan, struct Trace *tr);

/* collective over world: one SFT step on actor.train; returns the batch's mean loss. */
float job_sft_step(Job *j, SftData *sd, int step);
/* collective over world: one PPO step; stage times (max over ranks) in
 * times[4] = gen, inf, train, sync. Returns 0, or 1 when a loss or gradient
 * norm was not finite (on every rank alike). */
int job_step(Job *j, int step, StepStats *st, double times[4]);
/* collective over world: greedy responses of actor.gen to the held-out prompts, their sums on every rank */
EvalStats job_eval_greedy(Job *j, const TaskSet *held_out);

/* ---- checkpoints of the whole job (src/run/resume.c) ---- */
/* collective over world: [ckpt] dir exists (rank 0 creates it: its last
 * component), is a directory and can be written in. Returns 0, or −1 with
 * why (rank 0's words there). Checked at start-up when checkpoints are
 * scheduled, so a bad directory stops the run before it computes anything. */
int job_ckpt_dir(Job *j, char *why, size_t why_len);
/* the newest step of the complete checkpoints DIR/NAME_step*.h5 ([ckpt] dir, [run] name), −1: none.
 * job_checkpoint's rotation counts only steps up to the one it wrote. */
int64_t job_ckpt_newest(const Job *j);
/* rank 0 (reads [ckpt] dir): the oldest step of DIR/NAME_stepNNNNNN.h5 there, or −1 when none */
int64_t job_ckpt_oldest(const Job *j);
/* collective over world: write DIR/NAME_stepNNNNNN.h5 for the job after ppo
 * steps and sft_done SFT steps, then delete all but the newest [ckpt] keep.
 * Returns 0, or −1 with why. */
int job_checkpoint(Job *j, int64_t step, int64_t sft_done, const char *deck_text, const char *plan_text,
                   char *path_out, size_t path_len, char *why, size_t why_len);
/* collective over world: load every stage's model (and the trained models'
 * AdamW state) from a checkpoint under this job's plan and rank count.
 * path "latest" means the newest complete checkpoint in [ckpt] dir.
 * Returns 0 with *step and *sft_done, or −1 with why. *partial says the file
 * lacked a model or AdamW state of this job (those keep their fresh start). */
int job_restart(Job *j, const char *path, int64_t *step, int64_t *sft_done, int *partial, char *used,
                size_t used_len, char *why, size_t why_len);
/* no MPI (every rank may call it): the restart file of cfg ([run] restart: a path, or "latest" in [ckpt] dir)
 * is there and reads as a checkpoint holding an actor, checked before the job is built. Returns 0, or −1 with
 * why (naming the file). */
int job_restart_precheck(const Config *cfg, char *why, size_t why_len);
/* collective over world: [model] init_from: the file's "actor" into every
 * actor stage and the ref under this job's plan and rank count; no AdamW
 * state is read (the trained actor keeps its fresh moments, adam_t 0) and the
 * file's step counters are not taken. Returns 0, or −1 with why (the file
 * and what differs: its config against the deck's, no such file, no
 * "actor" in it). */
int job_init_from(Job *j, const char *path, char *why, size_t why_len);
/* SIGTERM / SIGUSR1 (what Slurm sends before the time limit) set a flag;
 * job_stop_requested (collective over world) says whether any rank got one. */
void job_install_signals(void);
int job_stop_requested(Job *j);

#endif
