/*
 * Fuzz target for the typed OGB layout's small files (ogb_hetero.c):
 * raw/num-node-dict.csv(.gz) and raw/triplet-type-list.csv(.gz). The input
 * is a num-node-dict file, optionally followed by a line "--" and a
 * triplet-type-list file; each part is read from memory (plain or gzip).
 * The first part goes through the num-node-dict parser; the second (the
 * whole input when there is no "--" line) through the triplet parser line
 * by line, with and without --add-reverse, against the types the first
 * part named, or ogbn-mag's four types when it named none.
 *
 * Errors are expected and ignored, but each must be recorded; crashes,
 * leaks and sanitizer reports are bugs, and so is an accepted file that
 * breaks what the parsers promise (ogb_internal.h): valid distinct names,
 * non-decreasing offsets below the limit, relations between known types,
 * room for the "rev_" prefix and for the reverses with --add-reverse.
 */
#include "datasets/ogb_internal.h"
#include "datasets/textio.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char SEP[] = "\n--\n";
static const char *const MAG[] = {"author", "field_of_study", "institution", "paper"};

/* A failure must come with its record. */
static void check_failure(int rc)
{
    if (rc >= 0 || gnn_error_code() != rc) abort();
    gnn_error_clear();
}

/* 1 to max characters of [A-Za-z0-9_-], NUL-terminated within the array. */
static void check_name(const char *s, size_t max)
{
    size_t n = strnlen(s, GNN_TYPE_NAME_MAX);
    if (n < 1 || n > max) abort();
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", s[i]))
            abort();
}

static void check_types(const gnn_graph_types_t *t)
{
    if (t->n_ntypes < 1 || t->n_ntypes > GNN_MAX_NODE_TYPES || t->off[0] != 0) abort();
    for (int i = 0; i < t->n_ntypes; i++) {
        check_name(t->ntype[i], GNN_TYPE_NAME_MAX - 1);
        for (int k = 0; k < i; k++)
            if (!strcmp(t->ntype[k], t->ntype[i])) abort();
        if (t->off[i + 1] < t->off[i]) abort();
    }
    if (t->off[t->n_ntypes] >= GNN_GRAPH_MAX_COUNT) abort();
}

static void check_relations(const gnn_graph_types_t *t, int add_reverse)
{
    const int max_rels = add_reverse ? GNN_MAX_RELATIONS / 2 : GNN_MAX_RELATIONS;
    const size_t max_name = GNN_TYPE_NAME_MAX - 1 - (add_reverse ? strlen("rev_") : 0);
    if (t->n_rels < 0 || t->n_rels > max_rels) abort();
    for (int r = 0; r < t->n_rels; r++) {
        if (t->rel_src[r] < 0 || t->rel_src[r] >= t->n_ntypes || t->rel_dst[r] < 0 ||
            t->rel_dst[r] >= t->n_ntypes)
            abort();
        check_name(t->rel[r], max_name);
        for (int k = 0; k < r; k++)
            if (!strcmp(t->rel[k], t->rel[r]) && t->rel_src[k] == t->rel_src[r] &&
                t->rel_dst[k] == t->rel_dst[r])
                abort();
    }
}

/* 1 when data is a valid num-node-dict, read into t. */
static int node_dict(const uint8_t *data, size_t size, gnn_graph_types_t *t)
{
    gnn_text_t *tx;
    if (gnn_text_open_mem(data, size, "num-node-dict.csv", &tx) != 0) {
        gnn_error_clear();
        return 0;
    }
    int rc = gnn__ogb_parse_node_dict(tx, t);
    gnn_text_close(tx);
    if (rc != 0) {
        check_failure(rc);
        return 0;
    }
    check_types(t);
    return 1;
}

static void triplets(const uint8_t *data, size_t size, const gnn_graph_types_t *types,
                     int add_reverse)
{
    static gnn_graph_types_t t;
    gnn_text_t *tx;
    t = *types;
    t.n_rels = 0;
    if (gnn_text_open_mem(data, size, "triplet-type-list.csv", &tx) != 0) {
        gnn_error_clear();
        return;
    }
    char *line;
    size_t len;
    int rc;
    while ((rc = gnn_text_next_line(tx, &line, &len)) == 1) {
        if (len == 0) continue;
        int n = t.n_rels;
        rc = gnn__ogb_parse_triplet(tx, line, len, add_reverse, &t);
        if (rc != 0) {
            check_failure(rc);
            if (t.n_rels != n) abort();
            break;
        }
        if (t.n_rels != n + 1) abort();
        check_relations(&t, add_reverse);
    }
    if (rc < 0) gnn_error_clear();
    gnn_text_close(tx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gnn_graph_types_t t;
    gnn_log_set_level(GNN_LOG_ERROR);
    const uint8_t *sep = NULL;
    if (size >= sizeof SEP - 1)
        for (size_t i = 0; i + sizeof SEP - 1 <= size && !sep; i++)
            if (!memcmp(data + i, SEP, sizeof SEP - 1)) sep = data + i;
    const size_t head = sep ? (size_t)(sep - data) : size;

    memset(&t, 0, sizeof t);
    if (!node_dict(data, head, &t)) {
        memset(&t, 0, sizeof t);
        t.n_ntypes = 4;
        for (int i = 0; i < 4; i++) {
            strcpy(t.ntype[i], MAG[i]);
            t.off[i + 1] = t.off[i] + 10;
        }
    }
    const uint8_t *list = sep ? sep + sizeof SEP - 1 : data;
    const size_t n = sep ? size - (head + sizeof SEP - 1) : size;
    triplets(list, n, &t, 0);
    triplets(list, n, &t, 1);
    gnn_error_clear();
    return 0;
}
