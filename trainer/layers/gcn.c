/*
 * GCN (Kipf and Welling): Z = A_gcn D W + b, with A_gcn = D^-1/2 (A+I)
 * D^-1/2 the built-in gcn aggregator and no self weight (the self loop is
 * in A_gcn). Parameters of a layer: W (fin x fout), then b (fout).
 */
#include "trainer/layers/conv.h"

static int gcn_setup(gnn_layer_t *L)
{
    /* GCNConv: lin.weight, bias */
    gnn_conv_layout_t lay = {.w_off = 0, .ws_off = -1, .b_off = L->fin * L->fout,
                             .w_name = "lin.weight", .b_name = "bias"};
    L->count = lay.b_off + L->fout;
    return gnn_conv_setup(L, &lay);
}

const gnn_layer_kind_t gnn_layer_gcn = {
    .name = "gcn",
    .default_aggr = "gcn",
    .any_aggr = 0,
    .square_sources = 0,
    .reads_halo = 1,
    .setup = gcn_setup,
    GNN_CONV_ENTRIES,
};
