/*
 * The partition benchmark's bridge to gpmetis: the METIS graph file of a
 * graph file, and the edge cut of a METIS partition file.
 *
 *   metis_files graph GRAPH.h5 OUT.graph
 *       writes the undirected view gnn-partition gives METIS (every stored
 *       u -> v as u - v, self loops and repeats dropped: gnn_part_undirected)
 *       as "n m", then one line of 1-based neighbours per node, and prints
 *       "nodes=N edges=M adjacency=2M".
 *   metis_files cut GRAPH.h5 PARTFILE K
 *       reads PARTFILE (one part in 0..K-1 per line, node order: what
 *       gpmetis writes as FILE.part.K) and prints "cut=C imbalance=I": the
 *       undirected edges of the same view between parts, each once, and
 *       the largest part over the mean part size.
 *
 * Both read the graph's CSR only (no features), so node i of GRAPH.h5 is
 * vertex i + 1 of the METIS file and line i + 1 of the partition file.
 */
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "partition/kway.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: metis_files graph GRAPH.h5 OUT.graph\n"
                    "       metis_files cut GRAPH.h5 PARTFILE K\n");
    return 2;
}

/* The undirected view of the graph file at path into *u. */
static int load_view(const char *path, gnn_csr_t *u)
{
    int rc = 0;
    gnn_graph_file_t *f = NULL;
    gnn_csr_t g = {0};
    GNN_TRY(gnn_graph_open(path, &f));
    GNN_TRY(gnn_graph_read_rows(f, 0, gnn_graph_file_info(f)->num_nodes, &g));
    GNN_TRY(gnn_part_undirected(&g, u));
fail:
    gnn_csr_free(&g);
    gnn_graph_close(f);
    return rc;
}

/* Decimal digits of x > 0 written backwards from end; returns the start. */
static char *put_u64(char *end, uint64_t x)
{
    do {
        *--end = (char)('0' + x % 10);
        x /= 10;
    } while (x);
    return end;
}

static int write_graph(const char *in, const char *out)
{
    int rc = 0;
    gnn_csr_t u = {0};
    FILE *f = NULL;
    char *buf = NULL;
    const size_t cap = (size_t)1 << 20;
    GNN_TRY(load_view(in, &u));
    buf = gnn_malloc_array(cap + 64, 1);
    GNN_CHECK(buf, GNN_ENOMEM, "output buffer");
    f = fopen(out, "wb");
    GNN_CHECK(f, GNN_EIO, "cannot write %s", out);
    size_t len = (size_t)snprintf(buf, cap, "%" PRId64 " %" PRId64 "\n", (int64_t)u.n_rows,
                                  (int64_t)(u.nnz / 2));
    for (gnn_vid_t v = 0; v < u.n_rows; v++) {
        for (gnn_eid_t e = u.indptr[v]; e < u.indptr[v + 1]; e++) {
            char num[24], *s = put_u64(num + sizeof num, (uint64_t)u.indices[e] + 1);
            size_t n = (size_t)(num + sizeof num - s);
            if (e > u.indptr[v]) buf[len++] = ' ';
            memcpy(buf + len, s, n);
            len += n;
            if (len >= cap) {
                GNN_CHECK(fwrite(buf, 1, len, f) == len, GNN_EIO, "writing %s", out);
                len = 0;
            }
        }
        buf[len++] = '\n';
    }
    GNN_CHECK(fwrite(buf, 1, len, f) == len, GNN_EIO, "writing %s", out);
    int closed = fclose(f);
    f = NULL;
    GNN_CHECK(closed == 0, GNN_EIO, "writing %s", out);
    printf("nodes=%" PRId64 " edges=%" PRId64 " adjacency=%" PRId64 "\n", (int64_t)u.n_rows,
           (int64_t)(u.nnz / 2), (int64_t)u.nnz);
fail:
    if (f) fclose(f);
    gnn_free(buf);
    gnn_csr_free(&u);
    return rc;
}

static int score_parts(const char *in, const char *partfile, int k)
{
    int rc = 0;
    gnn_csr_t u = {0};
    FILE *f = NULL;
    int32_t *part = NULL;
    int64_t *size = NULL;
    GNN_CHECK(k >= 1, GNN_EUSAGE, "K must be at least 1");
    GNN_TRY(load_view(in, &u));
    part = gnn_malloc_array((size_t)u.n_rows + 1, sizeof *part);
    size = gnn_malloc_array((size_t)k, sizeof *size);
    GNN_CHECK(part && size, GNN_ENOMEM, "partition of %" PRId64 " nodes", (int64_t)u.n_rows);
    memset(size, 0, (size_t)k * sizeof *size);
    f = fopen(partfile, "r");
    GNN_CHECK(f, GNN_ENOENT, "cannot read %s", partfile);
    for (gnn_vid_t v = 0; v < u.n_rows; v++) {
        long p;
        GNN_CHECK(fscanf(f, "%ld", &p) == 1 && p >= 0 && p < k, GNN_EFORMAT,
                  "%s:%" PRId64 ": expected a part in 0..%d", partfile, (int64_t)v + 1, k - 1);
        part[v] = (int32_t)p;
        size[p]++;
    }
    long extra;
    GNN_CHECK(fscanf(f, "%ld", &extra) != 1, GNN_EFORMAT, "%s: more than %" PRId64 " lines",
              partfile, (int64_t)u.n_rows);
    int64_t largest = 0;
    for (int p = 0; p < k; p++) largest = size[p] > largest ? size[p] : largest;
    printf("cut=%" PRId64 " imbalance=%.4f\n", gnn_part_edge_cut(&u, part),
           u.n_rows ? (double)largest * k / (double)u.n_rows : 0.0);
fail:
    if (f) fclose(f);
    gnn_free(part);
    gnn_free(size);
    gnn_csr_free(&u);
    return rc;
}

int main(int argc, char **argv)
{
    int rc;
    if (argc == 4 && !strcmp(argv[1], "graph"))
        rc = write_graph(argv[2], argv[3]);
    else if (argc == 5 && !strcmp(argv[1], "cut"))
        rc = score_parts(argv[2], argv[3], atoi(argv[4]));
    else
        return usage();
    return gnn_error_report("metis_files", NULL, rc);
}
