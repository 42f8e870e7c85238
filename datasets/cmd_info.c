/*
 * gnn-dataset info FILE [--json]: what a graph file holds, for people (an
 * aligned table) or scripts (one JSON object whose key names are fixed:
 * num_nodes, num_edges, feat_dim, num_classes, train, valid, test, link,
 * ...).
 *
 * Reads only attributes, shapes and indptr (streamed in blocks for the
 * degree figures), never the edges or features, so it is quick on any size.
 */
#include "datasets/commands.h"
#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/json.h"
#include "graph/graph_file.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    int json;
} info_opts_t;

static const gnn_opt_t info_table[] = {
    {"json", 0, GNN_OPT_FLAG, offsetof(info_opts_t, json), NULL,
     "print one JSON object instead of a table"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t info_cli = {
    .prog = "gnn-dataset info",
    .args = "FILE",
    .summary = "Describe a graph file: nodes, stored edges, features, classes, splits, link "
               "sets.",
    .opts = info_table,
    .min_positional = 1,
    .max_positional = 1,
};

typedef struct {
    gnn_eid_t min, max;
    double mean;
    gnn_vid_t n_zero;
} degree_t;

#define INDPTR_BLOCK ((gnn_vid_t)1 << 20)

/* In-degree figures from indptr, read in blocks. */
static int in_degrees(gnn_graph_file_t *f, degree_t *d)
{
    int rc = 0;
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    gnn_eid_t *buf = NULL;
    *d = (degree_t){0};
    if (in->num_nodes == 0) return 0;
    buf = gnn_malloc_array((size_t)INDPTR_BLOCK + 1, sizeof *buf);
    GNN_CHECK(buf, GNN_ENOMEM, "out of memory");
    d->min = INT64_MAX;
    for (gnn_vid_t r0 = 0; r0 < in->num_nodes; r0 += INDPTR_BLOCK) {
        gnn_vid_t n = in->num_nodes - r0 < INDPTR_BLOCK ? in->num_nodes - r0 : INDPTR_BLOCK;
        GNN_TRY(gnn_graph_read_indptr(f, r0, n, buf));
        for (gnn_vid_t i = 0; i < n; i++) {
            gnn_eid_t deg = buf[i + 1] - buf[i];
            if (deg < d->min) d->min = deg;
            if (deg > d->max) d->max = deg;
            if (deg == 0) d->n_zero++;
        }
    }
    d->mean = (double)in->num_edges / (double)in->num_nodes;
fail:
    gnn_free(buf);
    return rc;
}

static void print_split_json(FILE *out, const char *key, int64_t n)
{
    fprintf(out, ", \"%s\": ", key);
    if (n < 0)
        fputs("null", out);
    else
        fprintf(out, "%lld", (long long)n);
}

/* Stored edges of each relation of a typed file (streamed). */
static int relation_counts(gnn_graph_file_t *f, int64_t *count)
{
    int rc = 0;
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    const int64_t blk = (int64_t)1 << 20;
    int32_t *buf = gnn_malloc_array((size_t)blk, sizeof *buf);
    GNN_CHECK(buf, GNN_ENOMEM, "out of memory");
    memset(count, 0, (size_t)in->types->n_rels * sizeof *count);
    for (int64_t e = 0; e < in->num_edges; e += blk) {
        int64_t n = in->num_edges - e < blk ? in->num_edges - e : blk;
        GNN_TRY(gnn_graph_read_etypes(f, e, n, buf));
        for (int64_t i = 0; i < n; i++) count[buf[i]]++;
    }
fail:
    gnn_free(buf);
    return rc;
}

static void print_types_json(FILE *out, const gnn_graph_types_t *t, const int64_t *count)
{
    if (!t) {
        fputs(", \"node_types\": null, \"relations\": null", out);
        return;
    }
    fputs(", \"node_types\": [", out);
    for (int i = 0; i < t->n_ntypes; i++) {
        fprintf(out, "%s{\"name\": ", i ? ", " : "");
        gnn_json_string(out, t->ntype[i]);
        fprintf(out, ", \"nodes\": %lld, \"first\": %lld, \"feat_dim\": %lld, \"target\": %s}",
                (long long)(t->off[i + 1] - t->off[i]), (long long)t->off[i],
                (long long)t->feat_dim[i], i == t->target ? "true" : "false");
    }
    fputs("], \"relations\": [", out);
    for (int r = 0; r < t->n_rels; r++) {
        fprintf(out, "%s{\"name\": ", r ? ", " : "");
        gnn_json_string(out, t->rel[r]);
        fputs(", \"src\": ", out);
        gnn_json_string(out, t->ntype[t->rel_src[r]]);
        fputs(", \"dst\": ", out);
        gnn_json_string(out, t->ntype[t->rel_dst[r]]);
        fprintf(out, ", \"edges\": %lld}", (long long)count[r]);
    }
    fputs("]", out);
}

static void print_types_table(FILE *out, const gnn_graph_types_t *t, const int64_t *count)
{
    for (int i = 0; i < t->n_ntypes; i++) {
        fprintf(out, "%s %-20s %lld nodes [%lld, %lld), ", i ? "             " : "node types   ",
                t->ntype[i], (long long)(t->off[i + 1] - t->off[i]), (long long)t->off[i],
                (long long)t->off[i + 1]);
        if (t->feat_dim[i])
            fprintf(out, "%lld features", (long long)t->feat_dim[i]);
        else
            fputs("featureless", out);
        fprintf(out, "%s\n", i == t->target ? ", target (labels)" : "");
    }
    for (int r = 0; r < t->n_rels; r++)
        fprintf(out, "%s %s -%s-> %s: %lld edges\n", r ? "             " : "relations    ",
                t->ntype[t->rel_src[r]], t->rel[r], t->ntype[t->rel_dst[r]], (long long)count[r]);
}

static void print_json(FILE *out, const char *path, const gnn_graph_info_t *in, const degree_t *d,
                       const int64_t *count)
{
    fputs("{\"file\": ", out);
    gnn_json_string(out, path);
    fprintf(out, ", \"format\": \"%s\", \"version\": %lld", GNN_GRAPH_FORMAT,
            (long long)in->version);
    fprintf(out, ", \"num_nodes\": %lld, \"num_edges\": %lld", (long long)in->num_nodes,
            (long long)in->num_edges);
    fprintf(out, ", \"directed\": %s", in->directed ? "true" : "false");
    fprintf(out, ", \"feat_dim\": %lld, \"num_classes\": %lld", (long long)in->feat_dim,
            (long long)in->num_classes);
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        print_split_json(out, gnn_split_names[s], in->split_size[s]);
    fprintf(out, ", \"has_labels\": %s, \"has_weights\": %s, \"has_orig_ids\": %s",
            in->has_labels ? "true" : "false", in->has_weights ? "true" : "false",
            in->has_orig_ids ? "true" : "false");
    fprintf(out, ", \"sorted\": %s, \"deduplicated\": %s, \"no_self_loops\": %s, \"symmetric\": %s",
            (in->csr_flags & GNN_CSR_SORTED) ? "true" : "false",
            (in->csr_flags & GNN_CSR_DEDUPED) ? "true" : "false",
            (in->csr_flags & GNN_CSR_NO_SELF_LOOPS) ? "true" : "false",
            (in->csr_flags & GNN_CSR_SYMMETRIC) ? "true" : "false");
    fputs(", \"node_data\": [", out);
    for (int64_t i = 0; i < in->n_node_data; i++) {
        if (i) fputs(", ", out);
        gnn_json_string(out, in->node_data[i]);
    }
    fputs("]", out);
    if (in->link_neg_per_pos > 0) {
        fprintf(out, ", \"link\": {\"neg_per_pos\": %lld", (long long)in->link_neg_per_pos);
        for (int s = 0; s < GNN_NUM_LINK_SETS; s++)
            fprintf(out, ", \"%s\": %lld", gnn_link_set_names[s], (long long)in->link_size[s]);
        fputs("}", out);
    } else {
        fputs(", \"link\": null", out);
    }
    print_types_json(out, in->types, count);
    fprintf(out, ", \"in_degree\": {\"min\": %lld, \"max\": %lld, \"mean\": ", (long long)d->min,
            (long long)d->max);
    gnn_json_number(out, d->mean);
    fprintf(out, ", \"zero\": %lld}}\n", (long long)d->n_zero);
}

static void print_table(FILE *out, const char *path, const gnn_graph_info_t *in, const degree_t *d,
                        const int64_t *count)
{
    fprintf(out, "file          %s\n", path);
    fprintf(out, "format        %s version %lld\n", GNN_GRAPH_FORMAT, (long long)in->version);
    fprintf(out, "nodes         %lld\n", (long long)in->num_nodes);
    fprintf(out, "edges         %lld stored (%s)\n", (long long)in->num_edges,
            in->directed ? "directed" : "undirected: each edge stored both ways");
    if (in->types) print_types_table(out, in->types, count);
    if (in->types && in->feat_dim > 0)
        fprintf(out, "features      per node type, the widest %lld (float32)\n",
                (long long)in->feat_dim);
    else if (in->feat_dim > 0)
        fprintf(out, "features      %lld per node (float32)\n", (long long)in->feat_dim);
    else
        fprintf(out, "features      none\n");
    if (in->has_labels)
        fprintf(out, "classes       %lld\n", (long long)in->num_classes);
    else
        fprintf(out, "classes       none (no labels)\n");
    fprintf(out, "split        ");
    int any = 0;
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        if (in->split_size[s] >= 0) {
            fprintf(out, "%s %s %lld", any ? "," : "", gnn_split_names[s],
                    (long long)in->split_size[s]);
            any = 1;
        }
    fprintf(out, "%s\n", any ? "" : " none");
    if (in->link_neg_per_pos > 0) {
        fprintf(out, "link sets    ");
        for (int s = 0; s < GNN_NUM_LINK_SETS; s++)
            fprintf(out, "%s %s %lld", s ? "," : "", gnn_link_set_names[s],
                    (long long)in->link_size[s]);
        fprintf(out, " (%lld negative%s per positive)\n", (long long)in->link_neg_per_pos,
                in->link_neg_per_pos == 1 ? "" : "s");
    } else {
        fprintf(out, "link sets     none\n");
    }
    fprintf(out, "edge weights  %s\n", in->has_weights ? "yes" : "no");
    fprintf(out, "original ids  %s\n", in->has_orig_ids ? "yes" : "no");
    if (in->n_node_data > 0) {
        fputs("node data    ", out);
        for (int64_t i = 0; i < in->n_node_data; i++)
            fprintf(out, "%s %s", i ? "," : "", in->node_data[i]);
        fputc('\n', out);
    }
    fprintf(out, "csr           sorted %s, deduplicated %s, self loops %s, symmetric %s\n",
            (in->csr_flags & GNN_CSR_SORTED) ? "yes" : "no",
            (in->csr_flags & GNN_CSR_DEDUPED) ? "yes" : "no",
            (in->csr_flags & GNN_CSR_NO_SELF_LOOPS) ? "removed" : "possible",
            (in->csr_flags & GNN_CSR_SYMMETRIC) ? "yes" : "not promised");
    fprintf(out, "in-degree     min %lld, mean %.2f, max %lld, %lld nodes without in-edges\n",
            (long long)d->min, d->mean, (long long)d->max, (long long)d->n_zero);
}

static int run_info(void *opts, char **pos, int npos)
{
    int rc = 0;
    const info_opts_t *o = opts;
    gnn_graph_file_t *f = NULL;
    degree_t d;
    int64_t count[GNN_MAX_RELATIONS];
    (void)npos;
    GNN_TRY(gnn_graph_open(pos[0], &f));
    GNN_TRY(in_degrees(f, &d));
    if (gnn_graph_file_info(f)->types) GNN_TRY(relation_counts(f, count));
    if (o->json)
        print_json(stdout, pos[0], gnn_graph_file_info(f), &d, count);
    else
        print_table(stdout, pos[0], gnn_graph_file_info(f), &d, count);
    GNN_CHECK(fflush(stdout) == 0 && !ferror(stdout), GNN_EIO, "cannot write to standard output");
fail:
    gnn_graph_close(f);
    return rc;
}

int gnn_dataset_cmd_info(int argc, char **argv)
{
    info_opts_t o = {0};
    return gnn_cli_run(&info_cli, argc, argv, 1, &o, run_info);
}
