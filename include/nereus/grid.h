/* grid.h — the rank grid of one EMU, as pure math (no MPI).
 *
 * An EMU of layout (tp, pp, dp) holds tp*pp*dp ranks, given as an ordered
 * list; list position pos is the grid point (t, d, p) with
 *
 *     pos = t + tp * (d + dp * p)        0 <= t < tp, 0 <= d < dp, 0 <= p < pp
 *
 * TP varies fastest, then DP, then PP, as in Megatron-LM's parallel_state
 * (with the identity rank list this is Megatron's rank = tp + TP*(dp + DP*pp)).
 * Groups of a grid point, each listed in its own rank order:
 *   GRID_TP    the tp points with the same (d, p), by t
 *   GRID_DP    the dp points with the same (t, p), by d
 *   GRID_PP    the pp points with the same (t, d), by p
 *   GRID_EMBD  the first and the last pipeline stage at the same (t, d):
 *              {(t, d, 0), (t, d, pp-1)}; only when pp > 1, and only for
 *              points on those two stages (tied embeddings live there)
 *   GRID_ALL   every point of the EMU, by pos
 * emu.c turns each kind into one MPI_Comm_split with color grid_group_color
 * and key grid_group_index.
 */
#ifndef NEREUS_GRID_H
#define NEREUS_GRID_H

typedef struct GridLayout {
    int tp, pp, dp;
} GridLayout;

typedef struct GridCoord {
    int t, d, p; /* tp index, dp index, pp index */
} GridCoord;

typedef enum GridGroup { GRID_TP, GRID_DP, GRID_PP, GRID_EMBD, GRID_ALL, GRID_NGROUPS } GridGroup;

/* "tp", "dp", "pp", "embd", "all" */
const char *grid_group_name(GridGroup g);

/* tp*pp*dp */
int grid_size(GridLayout l);
/* pos of a coordinate; -1 if out of the grid */
int grid_pos(GridLayout l, GridCoord c);
/* coordinate of a position (0 <= pos < grid_size) */
GridCoord grid_coord(GridLayout l, int pos);

/* Positions of the g-group that pos belongs to, in group-rank order, into
 * out (room for grid_size(l) ints is always enough; tp, dp, pp or 2 for the
 * kind). Returns the count; 0 when pos is not in such a group (GRID_EMBD
 * with pp == 1 or a middle stage). */
int grid_group_positions(GridLayout l, GridGroup g, int pos, int *out);
/* The same group as ranks: out[i] = ranks[position i of the group]. */
int grid_group_ranks(GridLayout l, const int *ranks, GridGroup g, int pos, int *out);

/* A number that names pos's g-group among the groups of kind g of this
 * layout (0 <= color < grid_size), or -1 when pos is in none (as above). */
int grid_group_color(GridLayout l, GridGroup g, int pos);
/* pos's rank inside its g-group (the index of pos in grid_group_positions);
 * -1 when it is in none. */
int grid_group_index(GridLayout l, GridGroup g, int pos);

/* Position of rank in the EMU's ordered list of n ranks; -1 if absent. */
int grid_find(const int *ranks, int n, int rank);

#endif
