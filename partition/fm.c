/*
 * k-way FM refinement of one rank's nodes (fm.h).
 *
 * The heap holds each movable boundary node once, keyed by the gain of its
 * best feasible move (ties broken by a hash of the node and the salt);
 * pos[i] is i's slot, -1 when out of the heap, -2 once moved this pass.
 * Gains are exact for the parts as they are: every move adjusts its
 * unlocked neighbours' keys where the change follows from their own part
 * and target alone, and recomputes them otherwise. Rooms change with every
 * move, so the node on top is checked again (recomputed) before it moves
 * and re-keyed when its best move changed: keys only order the moves, the
 * gain of a move is always counted afresh.
 */
#include "partition/fm.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <inttypes.h>

#define FM_DEG_MUL 8  /* hubs: nodes of more than this times the mean degree */
#define FM_DEG_MIN 4  /* ... taken as at least this */
#define FM_WORK_MUL 4 /* adjacency entries (plus nodes) scanned per pass, times the slice's */

struct gnn_fm {
    int64_t nmax;
    int kmax;
    const gnn_fm_graph_t *g;
    uint64_t salt;
    int64_t *hkey, *hnode, *pos, hn; /* the heap */
    uint32_t *htie;                  /* per slot: tie-break of equal keys */
    int64_t *target;                 /* a node in the heap: the part its key is for */
    int64_t *lnode, *lfrom, nlog;    /* the pass's moves, in order */
    int64_t *conn, *touched;         /* k: edge weight to each part, parts seen */
    int64_t work;                    /* adjacency entries scanned this pass */
};

int gnn_fm_create(int64_t n, int k, gnn_fm_t **out)
{
    *out = NULL;
    gnn_fm_t *w = gnn_calloc(1, sizeof *w);
    if (!w) return GNN_FAIL(GNN_ENOMEM, "FM work space");
    size_t m = (size_t)(n > 0 ? n : 0) + 1;
    w->nmax = n;
    w->kmax = k;
    w->hkey = gnn_malloc_array(m, sizeof *w->hkey);
    w->hnode = gnn_malloc_array(m, sizeof *w->hnode);
    w->htie = gnn_malloc_array(m, sizeof *w->htie);
    w->pos = gnn_malloc_array(m, sizeof *w->pos);
    w->target = gnn_malloc_array(m, sizeof *w->target);
    w->lnode = gnn_malloc_array(m, sizeof *w->lnode);
    w->lfrom = gnn_malloc_array(m, sizeof *w->lfrom);
    w->conn = gnn_calloc((size_t)k + 1, sizeof *w->conn);
    w->touched = gnn_malloc_array((size_t)k + 1, sizeof *w->touched);
    if (!w->hkey || !w->hnode || !w->htie || !w->pos || !w->target || !w->lnode || !w->lfrom || !w->conn || !w->touched) {
        gnn_fm_free(w);
        return GNN_FAIL(GNN_ENOMEM, "FM work space for %" PRId64 " nodes", n);
    }
    *out = w;
    return 0;
}

void gnn_fm_free(gnn_fm_t *w)
{
    if (!w) return;
    gnn_free(w->hkey);
    gnn_free(w->hnode);
    gnn_free(w->htie);
    gnn_free(w->pos);
    gnn_free(w->target);
    gnn_free(w->lnode);
    gnn_free(w->lfrom);
    gnn_free(w->conn);
    gnn_free(w->touched);
    gnn_free(w);
}

int64_t gnn_fm_moves(const gnn_fm_t *w) { return w->nlog; }

/* ---- The heap ---------------------------------------------------------------- */

static int above(const gnn_fm_t *w, int64_t a, int64_t b)
{
    if (w->hkey[a] != w->hkey[b]) return w->hkey[a] > w->hkey[b];
    return w->htie[a] > w->htie[b];
}

static void swap_slots(gnn_fm_t *w, int64_t a, int64_t b)
{
    int64_t k = w->hkey[a], v = w->hnode[a];
    uint32_t t = w->htie[a];
    w->hkey[a] = w->hkey[b];
    w->hnode[a] = w->hnode[b];
    w->htie[a] = w->htie[b];
    w->hkey[b] = k;
    w->hnode[b] = v;
    w->htie[b] = t;
    w->pos[w->hnode[a]] = a;
    w->pos[w->hnode[b]] = b;
}

/* Restores the heap order around slot s after its key changed. */
static void sift(gnn_fm_t *w, int64_t s)
{
    while (s > 0 && above(w, s, (s - 1) / 2)) {
        swap_slots(w, s, (s - 1) / 2);
        s = (s - 1) / 2;
    }
    for (;;) {
        int64_t l = 2 * s + 1, r = l + 1, m = s;
        if (l < w->hn && above(w, l, m)) m = l;
        if (r < w->hn && above(w, r, m)) m = r;
        if (m == s) return;
        swap_slots(w, s, m);
        s = m;
    }
}

static void heap_remove(gnn_fm_t *w, int64_t i)
{
    int64_t s = w->pos[i];
    if (s < 0) return;
    w->pos[i] = -1;
    if (s == --w->hn) return;
    w->hkey[s] = w->hkey[w->hn];
    w->hnode[s] = w->hnode[w->hn];
    w->htie[s] = w->htie[w->hn];
    w->pos[w->hnode[s]] = s;
    sift(w, s);
}

/* ---- Gains and moves ------------------------------------------------------------ */

/*
 * Node i's best move: the part other than its own with the most edge
 * weight to i whose room takes i's weights (a tie goes to the part with
 * more room in the first constraint); *to = -1 when i has no neighbour in
 * another part or no such part has room.
 */
static void best_move(gnn_fm_t *w, int64_t i, int64_t *to, int64_t *gain)
{
    const gnn_fm_graph_t *g = w->g;
    int ncon = g->ncon;
    int64_t own = g->part[i], nt = 0, n = g->n;
    for (int64_t e = g->xadj[i]; e < g->xadj[i + 1]; e++) {
        int64_t j = g->adj[e], q = j < n ? g->part[j] : g->fixed_part[j - n];
        if (w->conn[q] == 0) w->touched[nt++] = q;
        w->conn[q] += g->adjw ? g->adjw[e] : 1;
    }
    w->work += g->xadj[i + 1] - g->xadj[i] + 1;
    const int64_t *vw = g->vwgt + i * ncon;
    int64_t best = -1, bg = 0;
    for (int64_t x = 0; x < nt; x++) {
        int64_t q = w->touched[x], d = w->conn[q] - w->conn[own];
        if (q == own) continue;
        if (best >= 0 && (d < bg || (d == bg && g->room[q * ncon] <= g->room[best * ncon])))
            continue;
        int ok = 1;
        for (int c = 0; c < ncon && ok; c++) ok = vw[c] <= g->room[q * ncon + c];
        if (ok) {
            best = q;
            bg = d;
        }
    }
    for (int64_t x = 0; x < nt; x++) w->conn[w->touched[x]] = 0;
    *to = best;
    *gain = bg;
}

/* Puts node i in the heap keyed by its best gain, or takes it out when it
 * has no move; locked nodes and hubs are left alone. */
static void update(gnn_fm_t *w, int64_t i, int64_t cap)
{
    const gnn_fm_graph_t *g = w->g;
    if (w->pos[i] == -2 || g->xadj[i + 1] - g->xadj[i] > cap) return;
    int64_t to, d;
    best_move(w, i, &to, &d);
    if (to < 0) {
        heap_remove(w, i);
        return;
    }
    int64_t s = w->pos[i];
    if (s < 0) {
        s = w->hn++;
        w->hnode[s] = i;
        w->htie[s] = (uint32_t)gnn_rng_mix64(w->salt ^ (uint64_t)i);
        w->pos[i] = s;
    }
    w->hkey[s] = d;
    w->target[i] = to;
    sift(w, s);
}

/*
 * Node j after its neighbour moved from part a to part b over an edge of
 * weight x. Where the change of j's gains follows from its own part o and
 * its target t alone, the key is adjusted: o = b, t != a (every gain falls
 * by x, a's by 2x); o != a, b and t = b (b's gain rises by x, a's falls);
 * o = a, t = b (every gain rises by x, b's by 2x). Otherwise j is
 * recomputed.
 */
static void neighbour_moved(gnn_fm_t *w, int64_t j, int64_t a, int64_t b, int64_t x, int64_t cap)
{
    int64_t s = w->pos[j];
    if (s >= 0) {
        int64_t o = w->g->part[j], t = w->target[j], d;
        if (o == b && t != a)
            d = -x;
        else if (o != a && o != b && t == b)
            d = x;
        else if (o == a && t == b)
            d = 2 * x;
        else
            d = 0;
        if (d != 0) {
            w->hkey[s] += d;
            sift(w, s);
            return;
        }
    }
    update(w, j, cap);
}

static void move(const gnn_fm_graph_t *g, int64_t i, int64_t to)
{
    const int64_t *vw = g->vwgt + i * g->ncon;
    int64_t from = g->part[i];
    for (int c = 0; c < g->ncon; c++) {
        g->room[to * g->ncon + c] -= vw[c];
        g->room[from * g->ncon + c] += vw[c];
        if (g->pw) {
            g->pw[to * g->ncon + c] += vw[c];
            g->pw[from * g->ncon + c] -= vw[c];
        }
    }
    g->part[i] = to;
}

/* ---- A pass ---------------------------------------------------------------------- */

int64_t gnn_fm_pass(gnn_fm_t *w, const gnn_fm_graph_t *g, uint64_t salt)
{
    int64_t n = g->n, entries = g->xadj[n] - g->xadj[0];
    int64_t mean = n > 0 ? entries / n : 0;
    int64_t cap = FM_DEG_MUL * (mean > FM_DEG_MIN ? mean : FM_DEG_MIN);
    int64_t budget = FM_WORK_MUL * (entries + n);
    int64_t limit = n / 100 < 50 ? 50 : n / 100 > 2000 ? 2000 : n / 100;
    w->g = g;
    w->salt = salt;
    w->hn = 0;
    w->nlog = 0;
    w->work = 0;
    for (int64_t i = 0; i < n; i++) w->pos[i] = -1;
    for (int64_t i = 0; i < n; i++) update(w, i, cap);
    int64_t sum = 0, best = 0, keep = 0, since = 0;
    while (w->hn > 0 && since < limit && w->work < budget) {
        int64_t i = w->hnode[0], key = w->hkey[0], to, d;
        best_move(w, i, &to, &d); /* rooms may have changed since i was keyed */
        if (to < 0) {
            heap_remove(w, i);
            continue;
        }
        if (d != key) {
            w->hkey[0] = d;
            sift(w, 0);
            continue;
        }
        heap_remove(w, i);
        w->pos[i] = -2;
        w->lnode[w->nlog] = i;
        w->lfrom[w->nlog++] = g->part[i];
        int64_t from = g->part[i];
        move(g, i, to);
        sum += d;
        if (sum > best) {
            best = sum;
            keep = w->nlog;
            since = 0;
        } else {
            since++;
        }
        for (int64_t e = g->xadj[i]; e < g->xadj[i + 1]; e++)
            if (g->adj[e] < n)
                neighbour_moved(w, g->adj[e], from, to, g->adjw ? g->adjw[e] : 1, cap);
    }
    while (w->nlog > keep) {
        w->nlog--;
        move(g, w->lnode[w->nlog], w->lfrom[w->nlog]);
    }
    return best;
}

void gnn_fm_undo(gnn_fm_t *w, const gnn_fm_graph_t *g)
{
    while (w->nlog > 0) {
        w->nlog--;
        move(g, w->lnode[w->nlog], w->lfrom[w->nlog]);
    }
}
