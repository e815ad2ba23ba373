/* grid.c — rank-grid math of one EMU (grid.h): positions, coordinates and
 * group membership, TP fastest, then DP, then PP. Pure: no MPI, so the
 * communicator test can compare what MPI built against it on every rank. */
#include "nereus/grid.h"

#include <stddef.h>

const char *grid_group_name(GridGroup g)
{
    static const char *const n[GRID_NGROUPS] = {"tp", "dp", "pp", "embd", "all"};
    return g >= 0 && g < GRID_NGROUPS ? n[g] : "?";
}

int grid_size(GridLayout l) { return l.tp * l.pp * l.dp; }

int grid_pos(GridLayout l, GridCoord c)
{
    if (c.t < 0 || c.t >= l.tp || c.d < 0 || c.d >= l.dp || c.p < 0 || c.p >= l.pp) return -1;
    return c.t + l.tp * (c.d + l.dp * c.p);
}

GridCoord grid_coord(GridLayout l, int pos)
{
    GridCoord c;
    c.t = pos % l.tp;
    c.d = (pos / l.tp) % l.dp;
    c.p = pos / (l.tp * l.dp);
    return c;
}

static int grid_in_embd(GridLayout l, GridCoord c) { return l.pp > 1 && (c.p == 0 || c.p == l.pp - 1); }

int grid_group_positions(GridLayout l, GridGroup g, int pos, int *out)
{
    if (pos < 0 || pos >= grid_size(l)) return 0;
    GridCoord c = grid_coord(l, pos), q = c;
    int n = 0;
    switch (g) {
    case GRID_TP:
        for (q.t = 0; q.t < l.tp; q.t++) out[n++] = grid_pos(l, q);
        break;
    case GRID_DP:
        for (q.d = 0; q.d < l.dp; q.d++) out[n++] = grid_pos(l, q);
        break;
    case GRID_PP:
        for (q.p = 0; q.p < l.pp; q.p++) out[n++] = grid_pos(l, q);
        break;
    case GRID_EMBD:
        if (!grid_in_embd(l, c)) return 0;
        q.p = 0;
        out[n++] = grid_pos(l, q);
        q.p = l.pp - 1;
        out[n++] = grid_pos(l, q);
        break;
    case GRID_ALL:
        for (int i = 0; i < grid_size(l); i++) out[n++] = i;
        break;
    default: return 0;
    }
    return n;
}

int grid_group_ranks(GridLayout l, const int *ranks, GridGroup g, int pos, int *out)
{
    int n = grid_group_positions(l, g, pos, out);
    for (int i = 0; i < n; i++) out[i] = ranks[out[i]];
    return n;
}

int grid_group_color(GridLayout l, GridGroup g, int pos)
{
    if (pos < 0 || pos >= grid_size(l)) return -1;
    GridCoord c = grid_coord(l, pos);
    switch (g) {
    case GRID_TP: return c.d + l.dp * c.p;   /* one group per (d, p) */
    case GRID_DP: return c.t + l.tp * c.p;   /* one per (t, p) */
    case GRID_PP: return c.t + l.tp * c.d;   /* one per (t, d) */
    case GRID_EMBD: return grid_in_embd(l, c) ? c.t + l.tp * c.d : -1;
    case GRID_ALL: return 0;
    default: return -1;
    }
}

int grid_group_index(GridLayout l, GridGroup g, int pos)
{
    if (pos < 0 || pos >= grid_size(l)) return -1;
    GridCoord c = grid_coord(l, pos);
    switch (g) {
    case GRID_TP: return c.t;
    case GRID_DP: return c.d;
    case GRID_PP: return c.p;
    case GRID_EMBD: return grid_in_embd(l, c) ? (c.p == 0 ? 0 : 1) : -1;
    case GRID_ALL: return pos;
    default: return -1;
    }
}

int grid_find(const int *ranks, int n, int rank)
{
    for (int i = 0; i < n; i++)
        if (ranks[i] == rank) return i;
    return -1;
}
