/*
 * GraphSAGE (Hamilton et al.): Z = D[:n_dst] W_self + aggr(D) W_neigh + b,
 * with any registered aggregator (mean by default; sum, max, gcn, or a
 * plug-in's). The destinations are the first n_dst sources (their own rows
 * feed the self term). Parameters of a layer: W_neigh (fin x fout), W_self
 * (fin x fout), then b (fout).
 */
#include "trainer/layers/conv.h"

static int sage_setup(gnn_layer_t *L)
{
    int64_t w = L->fin * L->fout;
    /* SAGEConv: lin_l on the neighbours (with the bias), lin_r on the node */
    gnn_conv_layout_t lay = {.w_off = 0, .ws_off = w, .b_off = 2 * w, .w_name = "lin_l.weight",
                             .ws_name = "lin_r.weight", .b_name = "lin_l.bias"};
    L->count = lay.b_off + L->fout;
    return gnn_conv_setup(L, &lay);
}

const gnn_layer_kind_t gnn_layer_sage = {
    .name = "sage",
    .default_aggr = "mean",
    .any_aggr = 1,
    .square_sources = 1,
    .reads_halo = 1,
    .setup = sage_setup,
    GNN_CONV_ENTRIES,
};
