/* transition.h — the pure planner of a transition, moving models' state
 * from one EMU layout to another: the slab planner, the transition DAG and
 * each rank's part of it. No MPI and no execution here; the executor, which
 * runs a part over MPI, is tx_exec.h.
 *
 * The slab planner.
 *
 * For an (old, new) pair of PlanStages of the same model, every logical
 * element that a rank holds in the new layout must come from one rank that
 * holds it in the old layout. The planner intersects, per tensor, each new
 * shard's hyperslab (gpt_tensor_table_pp: TP block on cut_axis, PP layer
 * block on axis 0, held or not) with the old layout's canonical cells (the
 * old shards' owner blocks: one per (tp index, pp index) holding the owner
 * copy, which together partition every tensor exactly once). Each non-empty
 * intersection is one Slab:
 *   - local   the destination rank already holds the cell in the old layout
 *             (src_rank = dst_rank, 0 bytes moved);
 *   - moved   otherwise the source is one of the old ranks that hold the
 *             cell (all DP replicas, every TP rank of a TP-replicated tensor,
 *             both wte copies under PP), chosen per block (below).
 * Slabs are produced destination by destination in new grid order, block by
 * block, the local blocks first, then the moved ones grouped by source in
 * the order the sources first appear.
 *
 * Blocks. The (tensor, owner cell) pairs whose holders are the same old
 * cells form one holder set; the slabs of one new (tp, pp) cell that come
 * from one holder set form one block. A block is local or moved as a whole
 * (the destination's old cell is a holder or not) and has ONE source per
 * destination: the least loaded so far (bytes sent; ties: the lowest job
 * rank) of up to TX_SRC_WINDOW = 16 candidates (holder cell × old replica),
 * taken round-robin per holder set from just after that set's last pick.
 * Per block rather than per slab: a destination talks to few sources (about
 * one per old cell its new cell meets: fewer, longer streams, fewer DAG
 * nodes), and the plan is cheap: the geometry (which cells a new shard
 * meets, the boxes, the blocks) is computed once per new (tp, pp) cell and
 * reused for every replica, and per destination one decision is made per
 * block. The balance stays within about a block of a full least-loaded
 * search (test_slabs reports the largest bytes out and in of the 1,024-rank
 * re-cuts).
 *
 * Forwarding (tx_slabs_build_seeded with relay_chunk > 0; the transition
 * DAG turns it on unless TxOptions.no_relay). Where a block has many more
 * destinations than old holders (dp grows: pp32 dp8 -> tp8 dp32 sends the
 * tied wte to 32 ranks per holder), the holders' send load, not the bytes,
 * bounds the time. A later replica of a new cell may then take a whole
 * stream that an earlier replica of the same cell receives (all the blocks
 * it gets from one source) from that replica instead: the earlier replica
 * forwards each chunk once it has arrived (same slab list, so the same
 * chunks), a pipelined chain. Taken when the forwarder, one chunk a hop
 * behind, would finish the stream sooner than the least-loaded holder of
 * its blocks, counting that nothing ends before the transition's largest
 * receive (so never where the receives bound the time); each stream is
 * forwarded at most once, and a
 * destination never gets a forwarded stream and an old-shard stream from
 * one rank (one stream per pair). The bytes each destination receives, and
 * so bytes_moved and the lower bound, are unchanged; only who sends moves.
 * TxSlabs below keeps the plan in this form;
 * slab_plan_build expands it. Within a transition (tx_plan_build) the
 * changes are balanced together: each change's sources are chosen against
 * the bytes the earlier changes already send (tx_slabs_build_seeded).
 *
 * Bytes are parameter bytes: elements · sizeof(float). A caller moving more
 * than one buffer per element (grads, AdamW m and v) scales them.
 */
#ifndef NEREUS_TRANSITION_H
#define NEREUS_TRANSITION_H

#include <stddef.h>
#include <stdint.h>

#include "nereus/model.h"
#include "nereus/plan.h"

/* One N-d hyperslab of one logical tensor: indices [start[a], start[a] +
 * count[a]) on each axis a < ndim of the tensor's LOGICAL shape (axes ≥ ndim:
 * start 0, count 1), from job rank src_rank to job rank dst_rank. */
typedef struct Slab {
    int tensor;          /* GPT_* index */
    int ndim;
    int start[4], count[4];
    int src_rank, dst_rank;
    size_t bytes;        /* Π count · sizeof(float) */
    int local;           /* 1: dst already holds it in the old layout (src = dst, nothing moves) */
} Slab;

typedef struct SlabPlan {
    Slab *slabs;
    size_t n, cap;
    size_t bytes_moved;        /* Σ bytes of the non-local slabs */
    size_t bytes_local;        /* Σ bytes of the local slabs */
    size_t bytes_lower_bound;  /* Σ over new ranks of the bytes they need and do not hold in the old
                                  layout: the least any schedule moves (computed independently of
                                  the slabs; equals bytes_moved) */
    size_t *rank_in, *rank_out; /* (nranks) bytes each job rank receives / sends (local slabs: 0) */
    int nranks;                /* job ranks */
} SlabPlan;

/* The compact form of a slab plan: the slab shapes once per new cell
 * (geo, cut into blocks), and per destination its blocks with their source.
 * Expanding ref k gives the slabs geo[blk.g0 .. blk.g1) of its block with
 * src_rank = ref.src, dst_rank = ref.dst, local = (src = dst). Expanding
 * every ref in order gives exactly the SlabPlan that slab_plan_build returns. */
typedef struct TxBlock {
    int g0, g1;          /* its slab shapes: geo[g0 .. g1) (src, dst, local unset there) */
    int hs;              /* holder set */
    size_t bytes;        /* Σ bytes of its slabs (one buffer) */
} TxBlock;

typedef struct TxRef {
    int block;           /* into blk */
    int src, dst;        /* job ranks (src = dst: local) */
    int feed;            /* -1: src sends from its old shard; else src forwards, from its new shard, what it
                            receives from rank `feed` (the whole stream feed -> src of this change) */
    int hop;             /* 0: from an old holder; k: the k-th forward of a chain */
} TxRef;

typedef struct TxSlabs {
    Slab *geo;           /* (ngeo) */
    TxBlock *blk;        /* (nblk) by new cell */
    TxRef *ref;          /* (nref) by new grid position: local ones first, then grouped by source */
    size_t *ref_off;     /* (nnew + 1) position pos has refs [ref_off[pos], ref_off[pos + 1]) */
    int ngeo, nblk, nnew;
    size_t nref, nslabs; /* refs; slabs when expanded */
    size_t bytes_moved, bytes_local, bytes_lower_bound; /* as in SlabPlan */
    size_t bytes_relayed;       /* of bytes_moved, sent by forwarders (refs with feed >= 0) */
    size_t *rank_in, *rank_out; /* (nranks) as in SlabPlan */
    int nranks;
} TxSlabs;

/* The compact plan (same arguments and checks as slab_plan_build). Pure. */
int tx_slabs_build(TxSlabs *ts, const GPTConfig *cfg, const PlanStage *old_stage, const PlanStage *new_stage,
                   int nranks, char *why, size_t len);
/* The same, with the sources balanced against load[r] (bytes each rank already sends: other changes
 * of the transition), which it raises by scale × the bytes of each block it gives rank r to send
 * (scale: the change's buffers per element), and with forwarding (above) when relay_chunk > 0: the
 * bytes of one message in load's units, what one hop of a chain delays its end. in_load[r] (may be
 * NULL): the bytes rank r already receives in the transition, in load's units; a forward is taken
 * only where it ends sooner than the holder's send, and neither can end before the largest receive.
 * load = in_load = NULL, relay_chunk = 0: tx_slabs_build. */
int tx_slabs_build_seeded(TxSlabs *ts, const GPTConfig *cfg, const PlanStage *old_stage, const PlanStage *new_stage,
                          int nranks, size_t *load, const size_t *in_load, size_t scale, size_t relay_chunk,
                          char *why, size_t len);
void tx_slabs_free(TxSlabs *ts);
/* The slabs of refs [r0, r1) into out, in order; returns how many. */
size_t tx_slabs_expand(const TxSlabs *ts, size_t r0, size_t r1, Slab *out);
/* How many slabs refs [r0, r1) expand to. */
size_t tx_slabs_count(const TxSlabs *ts, size_t r0, size_t r1);

/* Builds the slab plan of moving cfg's model from old_stage to new_stage
 * (both over job ranks 0..nranks-1). The stages need tp, pp, dp ≥ 1,
 * nranks = tp·pp·dp (or nranks = 0: ranks 0..tp·pp·dp-1), distinct ranks in
 * 0..nranks-1, tp | NH (and so C), pp | L. *sp is overwritten (it need not
 * be initialised). Returns 0, or -1 with a one-line reason in why (sp is then
 * empty and slab_plan_free is still safe). Pure: no MPI. */
int slab_plan_build(SlabPlan *sp, const GPTConfig *cfg, const PlanStage *old_stage, const PlanStage *new_stage,
                    int nranks, char *why, size_t len);
void slab_plan_free(SlabPlan *sp);

/* The hyperslab that shard table entry t holds (its LOGICAL box: start, count
 * per axis; axes ≥ ndim: 0, 1). Returns 0 (empty box) when t is not held. */
int slab_tensor_box(const TensorInfo *t, int start[4], int count[4]);

/* ======================================================================
 * The transition DAG (pure: dag.c; its execution: tx_exec.h, exec.c)
 *
 * A transition is a set of model-stage changes done together. Each change
 * moves one model's state from one layout (`from`) to another (`to`) over
 * the job ranks:
 *   TX_MOVE  the state leaves `from`: each rank of `to` allocates its new
 *            shard, receives what it does not hold, and each rank of
 *            `from` frees its old shard once everything sent out of it is
 *            out (a rank in both keeps what stays: a local copy).
 *   TX_COPY  both exist and stay (the per-step weight sync: actor.train →
 *            actor.gen): parameters only, nothing allocated or freed.
 * Per change the slab planner gives the slabs; `nbufs` buffers move per
 * element (1: parameters; 3: parameters, AdamW m and v).
 *
 * DAG. Nodes, per change c: COMM (its new communicators, created before
 * anything of c moves and before the old ones are freed), per rank of
 * `to`: ALLOC, COPY (its local slabs), COMMIT; per rank of `from`: FREE;
 * per (src, dst) rank pair with slabs: XFER (the pair's slabs as one
 * stream, cut into chunks at execution). Edges: COMM → ALLOC → {COPY, XFER
 * into it} → COMMIT; {XFER out of it, COPY} → FREE (a free waits for every
 * send out of its buffer, and the last copy of a slab is freed only after
 * it was delivered); and RESOURCE edges FREE(c', r) → ALLOC(c, r) where
 * rank r's memory budget needs c' gone before c arrives. A forwarded XFER
 * (feed >= 0: it sends out of the new shard) has no edge to the FREE of
 * its source and one from the XFER it forwards (feed → source).
 *
 * Memory waves. The budget (bytes per rank, 0 = none) covers the model
 * state a rank holds (of a move's shards only params, m and v while it
 * runs — gpt_shard_state_bytes: the executor sheds the old shards' other
 * buffers first and completes the new ones at the end, which mem_end
 * counts; and on a rank that gives and takes a shard, the new state comes
 * buffer by buffer as the old goes, so the move adds max(n, N - O + o) to
 * what the rank holds, not N (n, o: one new / old buffer; N, O: all three;
 * exec.c's staging) —, plus the `resident` bytes of models outside the transition,
 * and both whole shards of every copy, held throughout) and the transfer
 * buffers (the window, plus one chunk for local copies, on every rank that
 * moves or copies anything). Changes
 * are taken in tie-break order (gen → inf → train, then stage id) and put
 * into the first wave where every rank of `to` still fits with the new
 * shards of the wave added, and the old shards of the earlier waves gone.
 * Resource edges run only from earlier waves to later ones, and every rank
 * posts its messages in one global order (wave, buffer, chunk round,
 * change, dest, source), so the earliest unfinished message always has its send and its
 * receive posted: no deadlock under any window (exec.c). A forward comes
 * from an earlier replica of the same new cell, an earlier destination of
 * the same change, so the chunk it waits for is earlier in that order too.
 * When the first
 * wave that could take a change is empty of progress (nothing fits), the
 * transition is refused with the rank, the change and the bytes.
 *
 * The four primitives of a transition (docs/ARCHITECTURE.md: Split → Destroy → Extend → Merge) are
 * how each change is REPORTED (tx_primitives): Destroy = ranks of `from`
 * not in `to`; Extend = bytes to ranks new to the model-stage; Split /
 * Merge = bytes to ranks in both, Split when the unit's model-parallel
 * size tp·pp shrinks (each rank holds more), Merge when it grows, both
 * when it stays but the cut changes. The DAG does not serialise them: it
 * keeps only the true dependencies above, which is what lets a rank's
 * Extend sends overlap another rank's Merge.
 *
 * Predicted time: nchanges_with_new_comms · comm_setup + Σ over waves of
 * max over ranks (max(bytes in, bytes out) / bandwidth + messages ·
 * latency); with ranks_per_node, a rank's bytes to and from its own node go
 * over bandwidth_intra, the rest over bandwidth, and it takes the slower of
 * the two (separate links), plus, where a rank's data comes down a
 * forwarding chain, one chunk (chunk / bandwidth + latency) per hop. The
 * planner prices transitions with it without executing.
 * ==================================================================== */

enum { TX_MOVE = 0, TX_COPY = 1 };

typedef struct TxChange {
    int id;               /* the caller's label (PlanStageId); also the tie-break class */
    int kind;             /* TX_MOVE | TX_COPY */
    int tie;              /* tie-break class: 0 gen, 1 inf, 2 train (lower first) */
    GPTConfig cfg;        /* the model's logical config */
    PlanStage from, to;   /* resolved layouts over job ranks (nranks = tp·pp·dp) */
    int nbufs;            /* 1: parameters; 3: parameters, AdamW m, v (trainable) */
    int trainable;        /* memory: the models hold gradients, AdamW state, backward scratch */
    int bmax_from, bmax_to, tmax; /* memory: activation capacity of the old / new shards */
    int comm_shared;      /* 1: the new layout's communicators exist (another EMU has it; plan_stage_new_comms):
                             no set-up in the prediction */
} TxChange;

typedef struct TxOptions {
    double budget;          /* bytes per rank; 0 = no limit */
    size_t chunk;           /* bytes per message at most (≥ 4) */
    size_t window;          /* bytes in flight per rank: half for sends, half for receives (≥ chunk; one chunk
                               each way is always let through) */
    double bandwidth;       /* bytes/s per rank link, for the prediction */
    double latency;         /* s per message */
    double comm_setup;      /* s per change with new communicators */
    const double *resident; /* (nranks) bytes each rank holds outside the changes; NULL = 0 */
    int stage_all;          /* 1: every chunk through host staging, as on a device backend (tests) */
    int ranks_per_node;     /* consecutive job ranks that share a node (0: one kind of link, `bandwidth`) */
    double bandwidth_intra; /* bytes/s per rank inside a node (with ranks_per_node) */
    int no_relay;           /* 1: every block from an old holder (no forwarding; the baseline) */
    double copy_rate;       /* bytes/s per rank of a local copy (a slab kept on its rank), for the prediction
                               (0: local copies cost nothing) */
    int half_duplex;        /* 1: a rank's sends and receives share one capacity, 2 x bandwidth for in + out (ranks
                               on shared cores, whose messages are copies by those cores; bandwidth then is the
                               rate measured sending and receiving at once, as tx_probe measures); 0: full-duplex
                               links, max(in, out) / bandwidth */
    int stream_order;       /* 1: each rank posts its streams one after another (the bench's baseline);
                               0: chunk by chunk, round by round (exec.c) */
    int no_staging;         /* 1: a moving rank holds its old and new state whole (params, m, v of both) from the
                               new shard's allocation to the old one's release (the bench's baseline); 0: buffer
                               by buffer, at most four of the six (exec.c) */
} TxOptions;

enum { TXN_COMM, TXN_ALLOC, TXN_COPY, TXN_XFER, TXN_FREE, TXN_COMMIT };

typedef struct TxNode {
    int kind;              /* TXN_* */
    int change;            /* index into the plan's changes */
    int rank, peer;        /* ALLOC/COPY/FREE/COMMIT: the rank; XFER: source rank, peer = destination; COMM: -1 */
    int wave;
    int feed;              /* XFER: -1, or the source forwards what it receives from rank `feed` (TxRef.feed) */
    size_t slab0, nslab;   /* COPY, XFER: refs [slab0, slab0+nslab) of the change's TxSlabs (blocks; expanded
                              into slabs by tx_slabs_expand) */
    size_t bytes;          /* COPY, XFER: bytes over all buffers */
} TxNode;

/* What a change does, for reports. */
typedef struct TxPrimitives {
    int split, merge;        /* the unit's tp·pp shrinks (split), grows (merge), or both (re-cut) */
    int destroy_ranks;       /* ranks of `from` not in `to` (TX_MOVE) */
    int extend_ranks;        /* ranks of `to` not in `from` */
    size_t bytes_extend;     /* to ranks new to the model-stage */
    size_t bytes_reshard;    /* to ranks in both (the Split / Merge bytes) */
    size_t bytes_local;      /* kept in place (copied locally) */
} TxPrimitives;

typedef struct TxPlan {
    int nranks, nchanges, nwaves;
    TxChange *ch;            /* (nchanges) */
    TxSlabs *sl;             /* (nchanges) slabs (compact): per change, by destination, local ones first, then
                                grouped by source */
    int *wave;               /* (nchanges) */
    TxPrimitives *prim;      /* (nchanges) */
    TxNode *nodes;           /* DAG nodes; XFER nodes (streams) in (wave, change, dst, src) order; the
                                executor's message order takes their chunks round by round (exec.c) */
    size_t nnodes;
    size_t *succ_off;        /* (nnodes + 1) CSR edges: successors of node k are succ[succ_off[k] .. succ_off[k+1]) */
    int *succ;
    size_t *mem_old, *mem_new; /* (nchanges · nranks) bytes of each change's old / new shard on each rank while it runs: a move's
                                  state only (gpt_shed, gpt_build_shard_dest); mem_peak also counts the completed new shards */
    double *mem_start, *mem_peak; /* (nranks) predicted bytes at the start and at the peak (window included) */
    double *mem_end;              /* (nranks) predicted bytes at the end: the new shards complete, the old ones gone
                                     (no schedule needs less; a budget under it is refused) */
    size_t *rank_in, *rank_out;   /* (nranks) bytes over all buffers */
    size_t bytes_moved, bytes_lower_bound, bytes_local;
    size_t bytes_relayed;    /* of bytes_moved, sent by forwarders */
    int max_hop;             /* the longest forwarding chain (0: none) */
    size_t messages;         /* chunks that cross between ranks */
    double predicted_s;
    TxOptions opt;
} TxPlan;

/* Builds the DAG of changes ch[0..n) over nranks job ranks. Returns 0, or
 * −1 with the reason in why (an invalid layout, or a budget no schedule
 * fits: "rank R needs X MiB for actor.train on top of Y MiB held, budget Z
 * MiB"); plan is then empty and tx_plan_free is safe. Pure: no MPI. */
int tx_plan_build(TxPlan *plan, const TxChange *ch, int n, int nranks, const TxOptions *opt, char *why, size_t len);
void tx_plan_free(TxPlan *plan);
/* One line per change: "actor.train  tp2 dp2 @ 0-3 -> dp4 @ 4-7  Destroy 4, Extend 4 ranks 1.2 MiB ...". */
int tx_plan_format(const TxPlan *plan, const char *const *names, char *buf, size_t len);

/* ---- one rank's part of a plan (what rank 0 sends each rank) ---------- */
enum { TXO_ALLOC, TXO_COPY, TXO_SEND, TXO_RECV, TXO_FREE };

typedef struct TxOp {
    int kind;              /* TXO_* */
    int change, wave, peer;/* peer: SEND destination / RECV source rank (else -1) */
    int feed;              /* SEND: -1 (from the old shard), or it forwards, chunk by chunk as they arrive, this
                              rank's RECV of the change from rank `feed` (from the new shard); else -1 */
    int zero;              /* 0 (no padding: parts are sent and compared as bytes) */
    int64_t bytes;         /* COPY, SEND, RECV: bytes over all buffers */
    int64_t slab0, nslab;  /* into TxPart.slabs */
} TxOp;

typedef struct TxPartChange { int kind, nbufs, wave, in_from, in_to; } TxPartChange;

typedef struct TxPart {
    int rank, nchanges, nwaves;
    int64_t nops, nslabs;
    double mem_start, mem_peak; /* predicted, this rank */
    size_t chunk, window;
    int stage_all;         /* TxOptions.stage_all */
    int stream_order;      /* TxOptions.stream_order */
    int no_staging;        /* TxOptions.no_staging */
    TxPartChange *ch;      /* (nchanges) */
    TxOp *ops;             /* ALLOC, COPY, FREE per change; SENDs and RECVs each in the streams' order (wave,
                              change, dst, src), whose chunks exec.c posts round by round */
    Slab *slabs;
} TxPart;

/* Pure: rank r's part; every rank's (parts[0 .. nranks)), in one pass over
 * the nodes. Return 0 or −1 (out of memory). */
int tx_part_extract(const TxPlan *plan, int r, TxPart *part);
int tx_parts_extract(const TxPlan *plan, TxPart *parts);
void tx_part_free(TxPart *part);

/* Pure: the parts in compact form, what tx_part_scatter sends. tx_parts_pack: every rank's part as
 * [TxPart fields][ch][ops][its block refs (TxRef)], the ops' slab0 / nslab indexing the refs, into one
 * buffer *all (malloc) at displs[r], counts[r] bytes (ranks 0..nranks-1). tx_geometry_pack: every
 * change's slab shapes and blocks (TxSlabs geo, blk), the same for all ranks, *len bytes (malloc).
 * tx_part_unpack: rank r's TxPart from its packed part and the geometry, expanded into slabs: equal to
 * tx_part_extract(plan, r). Return 0 / NULL / −1 on out of memory. */
int tx_parts_pack(const TxPlan *plan, int nranks, char **all, int *counts, int *displs);
char *tx_geometry_pack(const TxPlan *plan, size_t *len);
int tx_part_unpack(const char *packed, const char *geometry, TxPart *part);

#endif
