/*
 * Test plug-in: registers a valid aggregator "bad_def_ok", then a bad one,
 * and ignores the result of that add (returns 0). The loader must still
 * refuse the file with the reason of the bad definition and drop
 * bad_def_ok.
 *
 * By default the bad one is "half", a cpu_forward without cpu_backward
 * ("aggregator half has cpu_forward but no cpu_backward"). The environment
 * variable GNN_TEST_BAD_DEF picks another defect, so that one file covers
 * every check of a definition: name (upper case), long_name (32
 * characters), no_name, abi (abi_version 0), no_entry (no forward at all),
 * backward_only (cpu_backward without cpu_forward), cuda_half (cuda_forward
 * without cuda_backward), null (a NULL definition), abi_future (a version
 * newer than the plug-in's), kind (an unknown kind), agg_score (an
 * aggregator with a score), attn_forward (an attention function with a
 * forward), attn_half (cpu_score without its backward), attn_none (an
 * attention function without a score); and two ways to fail
 * as a file: nothing (adds no aggregator), refuse (returns 1 without a
 * reason).
 */
#include "gnn_aggr_plugin.h"

#include <stdlib.h>
#include <string.h>

static int forward(const gnn_aggr_call_t *call, const float *x, float *y)
{
    (void)call;
    (void)x;
    (void)y;
    return 0;
}

static int backward(const gnn_aggr_call_t *call, const float *x, const float *y, const float *dy,
                    float *dx)
{
    (void)call;
    (void)x;
    (void)y;
    (void)dy;
    (void)dx;
    return 0;
}

static int score(const gnn_aggr_call_t *call, const float *x, float *s)
{
    (void)call;
    (void)x;
    (void)s;
    return 0;
}

static int score_backward(const gnn_aggr_call_t *call, const float *x, const float *ds, float *dx)
{
    (void)call;
    (void)x;
    (void)ds;
    (void)dx;
    return 0;
}

GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void) { return GNN_AGGR_ABI_VERSION; }

GNN_AGGR_PLUGIN_EXPORT int gnn_aggr_plugin_register(gnn_aggr_host_t *host)
{
    const gnn_aggr_def_t ok = {.abi_version = GNN_AGGR_ABI_VERSION,
                               .name = "bad_def_ok",
                               .description = "valid",
                               .cpu_forward = forward,
                               .cpu_backward = backward};
    gnn_aggr_def_t bad = {.abi_version = GNN_AGGR_ABI_VERSION,
                          .name = "half",
                          .description = "forward only",
                          .cpu_forward = forward};
    const char *which = getenv("GNN_TEST_BAD_DEF");
    if (!which) which = "";
    if (!strcmp(which, "name")) {
        bad.name = "Half";
        bad.cpu_backward = backward;
    } else if (!strcmp(which, "long_name")) {
        bad.name = "a234567890123456789012345678901x";
        bad.cpu_backward = backward;
    } else if (!strcmp(which, "no_name")) {
        bad.name = NULL;
        bad.cpu_backward = backward;
    } else if (!strcmp(which, "abi")) {
        bad.abi_version = 0;
        bad.cpu_backward = backward;
    } else if (!strcmp(which, "no_entry")) {
        bad.cpu_forward = NULL;
    } else if (!strcmp(which, "backward_only")) {
        bad.cpu_forward = NULL;
        bad.cpu_backward = backward;
        bad.cuda_forward = forward;
        bad.cuda_backward = backward;
    } else if (!strcmp(which, "cuda_half")) {
        bad.cpu_backward = backward;
        bad.cuda_forward = forward;
    } else if (!strcmp(which, "abi_future")) {
        bad.abi_version = GNN_AGGR_ABI_VERSION + 1;
        bad.cpu_backward = backward;
    } else if (!strcmp(which, "kind")) {
        bad.kind = 7;
        bad.cpu_backward = backward;
    } else if (!strcmp(which, "agg_score")) {
        bad.cpu_backward = backward;
        bad.cpu_score = score;
    } else if (!strcmp(which, "attn_forward")) {
        bad.kind = GNN_AGGR_KIND_ATTENTION;
        bad.cpu_score = score;
        bad.cpu_score_backward = score_backward;
    } else if (!strcmp(which, "attn_half")) {
        bad.kind = GNN_AGGR_KIND_ATTENTION;
        bad.cpu_forward = NULL;
        bad.cpu_score = score;
    } else if (!strcmp(which, "attn_none")) {
        bad.kind = GNN_AGGR_KIND_ATTENTION;
        bad.cpu_forward = NULL;
    }
    if (!strcmp(which, "nothing")) return 0;
    (void)host->add(host, &ok);
    if (!strcmp(which, "refuse")) return 1; /* without a reason */
    (void)host->add(host, !strcmp(which, "null") ? NULL : &bad);
    return 0;
}
