/* transition.h — moving a model's parameters from one EMU layout to another
 * (issue #5). This part is the PURE slab planner (no MPI, no execution):
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
 *   - moved   otherwise the source is, among every old rank that holds the
 *             cell (all DP replicas, every TP rank of a TP-replicated tensor,
 *             both wte copies under PP), the one with the least send load so
 *             far (ties: the lowest job rank).
 * Slabs are produced destination by destination in new grid order, tensor
 * by tensor, old cell by old cell.
 *
 * Bytes are parameter bytes: elements · sizeof(float). A caller moving more
 * than one buffer per element (grads, AdamW m and v) scales them.
 */
#ifndef NEREUS_TRANSITION_H
#define NEREUS_TRANSITION_H

#include <stddef.h>

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

#endif
