/* txprice.h — a job's transitions priced without running them: the
 * TxChange of a model-stage between two layouts (the shapes and activation
 * capacities the job's models have) and the transition engine's predicted
 * seconds for plan a → b (tx_plan_build's estimate under the deck's
 * [transition] link, scaled by what the job's transitions measured against
 * it: the deck's link is a guess, the measured ratio is not). The job (src/run/switch.c) executes with the same
 * changes the live planner prices, and the trace's replay rebuilds the
 * pricer from the deck stored in the trace. Pure (no MPI). */
#ifndef NEREUS_TXPRICE_H
#define NEREUS_TXPRICE_H

#include "nereus/config.h"
#include "nereus/model.h"
#include "nereus/transition.h"

/* The job's models and sequence capacities as the deck makes them (run.c,
 * job.c and the trace's replay all take them from here): the vocabulary
 * (the deck's, or GPT-2's for SFT on a token file, or the task's), the
 * prompt length, the SFT sequence length, the generation capacity (prompt +
 * max_response, or the longest answer + EOS for an SFT-only run, at most
 * max_seq), whether reward.inf holds a network, the actor's and critic's
 * logical configs. */
#define GPT2_VOCAB 50257
typedef struct JobShape {
    int V, P, Tsft, Tgen;
    int use_tokens;          /* SFT from a token file */
    int have_rm;
    GPTConfig ac, cc;
} JobShape;
struct TaskSet;
void job_shape_of(const Config *cfg, const struct TaskSet *ts, JobShape *out);
/* The [model] section as a GPTConfig (vocabulary V; no value head): GPT-2's five fields, or for the
 * Llama family also its own, the deck's auto values left 0 (model.h resolves them). */
GPTConfig job_model_config(const Config *cfg, int V);
/* What plan validation needs from the deck for a job of world ranks: for the Llama family also its
 * key/value heads and MLP width, which tp must divide (model.h). */
PlanLimits job_plan_limits(const Config *cfg, int world);

/* The engine's estimate against what transitions measured: the ratios of the last TX_CALIB_N
 * (measured / predicted seconds, each a whole transition: communicators, transfers, checks), whose
 * median scales every later price. Nothing measured yet: 1. */
#define TX_CALIB_N 8
typedef struct TxCalib {
    double ratio[TX_CALIB_N];
    int n, next;             /* ratios held (≤ TX_CALIB_N); where the next goes */
} TxCalib;
/* adds one transition (ignored unless both times are finite and > 0) */
void tx_calib_add(TxCalib *c, double predicted_s, double measured_s);
/* the median ratio, 1 with none */
double tx_calib_scale(const TxCalib *c);

typedef struct TxPricer {
    const Config *cfg;
    GPTConfig ac, cc;        /* the actor's and the critic's logical configs */
    int have_rm;             /* reward.inf holds a network */
    int Tgen, Tsft;          /* the PPO sequence capacity (prompt + max_response) and the SFT sequence length */
    int nranks;              /* ranks of the job */
    TxCalib calib;           /* the job's transitions so far (zeroed: none); tx_price scales by it */
    double link_rate, copy_rate; /* bytes/s per rank, measured by tx_probe with every rank at once (job_probe_links)
                                    for [transition] bandwidth_gbs = 0; 0: not measured */
    int shared_cores;        /* more ranks than cores on a node (measured with them): TxOptions.half_duplex */
    /* the layouts whose communicators the job keeps for reuse ([transition] keep_comms; plan.h, PlanKept), kept
       up to date by whoever switches plans (tx_kept_switch); a change onto one builds none, so no set-up is
       priced for it. NULL: nothing kept. (A model-stage without a model, reward.inf with no reward network,
       keeps its first EMU, which job_transition never moves; the model takes its plan's layouts as moved, so
       for such a job it may count one set differently from emu.c: a set-up of comm_setup_us mispriced) */
    PlanKept *kept;
} TxPricer;

/* the link rate the predictions assume when [transition] bandwidth_gbs = 0 and nothing was measured (the
 * weight sync's plans, whose predicted time nothing reads) */
#define TX_NOMINAL_BW 10e9

/* activation capacity (rows, tokens) of stage id's model with dp replicas */
void tx_stage_capacity(const TxPricer *p, int id, int dp, int *Bmax, int *Tmax);
/* the stage holds a model (reward.inf only with a reward network) */
int tx_stage_holds_model(const TxPricer *p, int id);
/* 1 when the deck keeps stage id's weights in bf16 beside its fp32 ones: actor.gen under [model] gen_dtype = bf16,
   the scoring EMUs under score_dtype = bf16; the training EMUs never */
int tx_stage_bf16(const Config *cfg, int id);
/* backend bytes of model-stage id's shard at grid position pos of layout s (gpt_shard_bytes at the stage's
 * capacity: parameters, and for a training stage gradients and AdamW m, v; activations); 0 where the stage
 * holds no model */
double tx_stage_shard_bytes(const TxPricer *p, int id, const PlanStage *s, int pos);
/* the change of stage id from → to (kind TX_MOVE, or TX_COPY for the weight sync) */
void tx_change_for(const TxPricer *p, int id, int kind, const PlanStage *from, const PlanStage *to, TxChange *x);
/* the job moved from plan a to plan b: the layouts it keeps for reuse now (p->kept, up to [transition]
 * keep_comms; as emu.c keeps them) */
void tx_kept_switch(TxPricer *p, const PlanConfig *a, const PlanConfig *b);
/* the changes of every model-stage whose layout differs, into ch[PLAN_NSTAGES]; returns their count */
int tx_changes(const TxPricer *p, const PlanConfig *a, const PlanConfig *b, TxChange *ch);
/* [transition]'s chunk, window, budget and link as TxOptions (no resident memory): bandwidth_gbs > 0 is
 * the link, local copies free; bandwidth_gbs = 0 (the default) takes the pricer's measured link and copy
 * rates (TX_NOMINAL_BW and free copies while unmeasured) */
TxOptions tx_options_of(const TxPricer *p);
/* MODELLED: the seconds to build one set of communicators over `ranks` GPUs (NCCL; the simulator's moves, and
 * its checkpoint-and-restart). A fixed part, what one node's init takes besides its bootstrap (topology,
 * graphs, connections, kernels: 0.82 s of 2.46 on 8 H100s with NCCL 2.22, NVIDIA/nccl#534), here 0.3 s as for a
 * set split from a live parent (ncclCommSplit: no process start-up, no kernel load); and a part linear in the
 * ranks: NCCL's bootstrap all-gathers a ring of N − 1 sequential steps over TCP (NVIDIA/nccl#1791, which halves
 * them; #251: several such all-gathers per init), assumed 3 ms a rank, so that 64 GPUs cost the 0.5 s the
 * simulator charged before, 1,024 about 3.4 s and 4,096 about 12.6 s (an init of "2.5 minutes" above some
 * thousands of GPUs, NVIDIA/nccl#1156, is a whole job's start-up with many sets: an upper bound). An assumption
 * within the published range, not a measurement of ours. */
#define TX_COMM_SETUP_BASE_S 0.3
#define TX_COMM_SETUP_RANK_S 0.003
double tx_comm_setup_s(int ranks);
/* the engine's predicted seconds of n changes (0 for none; INFINITY when no schedule fits o's budget) */
double tx_predicted_s(const TxChange *ch, int n, int nranks, const TxOptions *o);
/* predicted seconds of a → b: the engine's estimate × tx_calib_scale(the pricer's calib) (0 when
 * nothing changes; INFINITY when no schedule fits the budget); the signature of AdaptTxCost
 * (adapt.h), ctx a TxPricer */
double tx_price(void *pricer, const PlanConfig *a, const PlanConfig *b);
/* the communicator set-up part of tx_price(a → b): [transition] comm_setup_us for each change that needs new
 * communicators (TxChange.comm_shared 0), × the same scale; the signature of AdaptTxCost, for
 * AdaptConfig.tx_setup (a move that waits a step builds them meanwhile: adapt.h) */
double tx_price_setup(void *pricer, const PlanConfig *a, const PlanConfig *b);

#endif
