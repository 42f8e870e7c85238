/*
 * The subcommands of gnn-dataset. Each takes the argv that starts at its
 * own name and returns 0 or a negative GNN_E* code with the error recorded;
 * gnn_dataset.c turns that into the exit status and the one error line.
 */
#ifndef GNN_DATASETS_COMMANDS_H
#define GNN_DATASETS_COMMANDS_H

int gnn_dataset_cmd_info(int argc, char **argv);
int gnn_dataset_cmd_ogb(int argc, char **argv);
int gnn_dataset_cmd_edgelist(int argc, char **argv);
int gnn_dataset_cmd_metis(int argc, char **argv);
int gnn_dataset_cmd_generate(int argc, char **argv);
int gnn_dataset_cmd_split_edges(int argc, char **argv);

#endif
