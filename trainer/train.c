/*
 * gnn-train's entry (trainer/train.h): what --data names decides the mode
 * family (a graph file: one process; a partition directory: one rank per
 * part), then set-up, the state to start from, the runs, predictions and
 * the final line, in that order. The parts live in their own files
 * (trainer/job.h lists them; docs/ARCHITECTURE.md shows how an epoch flows
 * through them).
 *
 * Checkpoints hold the whole state of the loop (trainer/checkpoint.h), so a
 * resumed run performs exactly the operations the uninterrupted one would
 * have: on the CPU the final parameters are bitwise equal for the same
 * thread count.
 */
#include "trainer/job.h"

#include "graph/base/error.h"
#include "graph/base/mpiutil.h"

#include <errno.h>
#include <mpi.h>
#include <string.h>
#include <sys/stat.h>

/* Ranks on backends of different kinds (--device auto where only some
 * machines show a CUDA device) would exchange and sum in different ways:
 * refused on every rank alike. */
static int same_backend(const gnn_job_t *j)
{
    int same = 0, rc = gnn_mpi_same(MPI_COMM_WORLD,
                                    2u * (unsigned)gnn_backend_kind(j->be) +
                                        (unsigned)gnn_be_host_memory(j->be),
                                    &same);
    if (rc < 0 || same) return rc;
    return GNN_FAIL(GNN_EUSAGE,
                    "--device %s: the ranks opened backends of different kinds (with auto: "
                    "some machines show a CUDA device, others none); give every rank a GPU, or "
                    "--device cpu",
                    j->o->device);
}

/* Over a partition directory every rank reads --checkpoint itself (a
 * file system all their machines see): they must have read the same
 * state, or ranks would train from different places. */
static int same_state(const gnn_job_t *j, int restore)
{
    const gnn_checkpoint_t *c = &j->ck;
    const int64_t at[5] = {restore, c->run, c->epoch, c->runs_done, c->bad_evals};
    uint64_t h = gnn_fnv1a(GNN_FNV_BASIS, at, sizeof at); /* the loop's place, the parameters */
    if (c->params && (restore || c->runs_done > 0))
        h = gnn_fnv1a(h, c->params, (size_t)c->n_params * sizeof(float));
    int same = 0, rc = gnn_mpi_same(MPI_COMM_WORLD, h, &same);
    if (rc < 0 || same) return rc;
    return GNN_FAIL(GNN_EINVAL,
                    "--checkpoint %s: the ranks read different checkpoints (or some none); give "
                    "a path on a file system that every rank's machine sees",
                    j->o->checkpoint);
}

int gnn_train_run(const gnn_train_opts_t *o, gnn_train_result_t *res)
{
    int rc = 0;
    gnn_job_t job = {0}, *j = &job;
    j->o = o;
    const gnn_task_kind_t *task =
        o->task && !strcmp(o->task, "link") ? &gnn_task_link : &gnn_task_nodeclass;
    j->task_own = *task;
    j->task = &j->task_own;
    gnn_graph_init(&j->g);
    gnn_dist_part_t dist;
    struct stat sb;
    int size = 1;
    /* What --data is: a directory, and the errno of its stat (0: it exists). */
    int kind[2] = {0, 0}, init = 0;
    if (o->data) {
        int st = stat(o->data, &sb);
        kind[0] = st == 0 && S_ISDIR(sb.st_mode);
        kind[1] = st == 0 ? 0 : errno;
    }
    MPI_Initialized(&init);
    if (init) MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) /* rank 0 decides, so every rank takes the same path */
        MPI_Bcast(kind, 2, MPI_INT, 0, MPI_COMM_WORLD);
    int is_dir = kind[0];
    /* The task's keys from the options, alike on every rank. */
    if (task->configure) {
        rc = task->configure(j, &j->task_own);
        if (size > 1) rc = gnn_dist_agree(MPI_COMM_WORLD, rc);
        GNN_TRY(rc);
    }
    if (!is_dir && size > 1) {
        /* Every rank is here and fails the same way; rank 0 reports. */
        int local = gnn__opts_check(o);
        if (local == 0 && kind[1])
            local = GNN_FAIL(kind[1] == ENOENT ? GNN_ENOENT : GNN_EIO, "%s: %s", o->data,
                             strerror(kind[1]));
        if (local == 0)
            local = GNN_FAIL(GNN_EUSAGE,
                             "%s is a graph file, which one process trains on; for %d ranks, "
                             "partition it with gnn-partition -k %d and train on the directory",
                             o->data, size, size);
        rc = gnn_dist_agree(MPI_COMM_WORLD, local);
        goto fail;
    }
    if (is_dir) {
        /* A partition directory: one rank per part. Settings are agreed
         * before the collective load. */
        memset(&dist, 0, sizeof dist);
        dist.fetch_comm = MPI_COMM_NULL;
        j->dist = &dist;
        MPI_Comm_rank(MPI_COMM_WORLD, &j->rank);
        /* The machine's ranks (which GPU is whose, how many share its
         * cores), before any rank can fail on its own in the set-up. */
        GNN_TRY(gnn_dist_local_rank(MPI_COMM_WORLD, &j->node_rank, &j->node_ranks));
        rc = gnn__setup(j);
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, rc));
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, same_backend(j)));
        GNN_TRY(gnn__dist_setup(j));
    } else {
        GNN_TRY(gnn__setup(j));
    }

    /* The state: from the checkpoint when resuming one, else fresh
     * (every rank reads it, and fails or goes on with the others). */
    int restore = 0;
    rc = gnn__state_load(j, &restore);
    GNN_TRY(j->dist ? gnn_dist_agree(MPI_COMM_WORLD, rc) : rc);
    if (j->dist && j->o->checkpoint)
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, same_state(j, restore)));

    gnn_train_result_t r;
    GNN_TRY(gnn__runs(j, restore, &r));
    if (o->save_predictions) {
        if (!j->model) GNN_TRY(gnn__start_run(j, 1));
        GNN_TRY(gnn__write_predictions(j));
    }
    if (o->save_embeddings) {
        if (!j->model) GNN_TRY(gnn__start_run(j, 1));
        GNN_TRY(gnn__write_embeddings(j));
    }
    if (o->save_model) {
        if (!j->model) GNN_TRY(gnn__start_run(j, 1));
        GNN_TRY(gnn__write_model(j));
    }
    gnn__write_final(j, &r); /* the log's last line says every output is written */
    if (res) *res = r;
fail:
    if (rc < 0 && rc != GNN_EUSAGE && j->dist && size > 1 && gnn_dist_reporting_rank() < 0) {
        /* This rank failed alone: its peers wait for it in a collective
         * call, MPI's or NCCL's on the device (whose communicator cannot
         * be finalised without them, nor a step queued behind it waited
         * for), so the job ends here, before anything of the job waits. */
        if (j->log) fflush(j->log);
        return gnn_mpi_fail_alone("gnn-train", rc);
    }
    gnn__job_free(j);
    return rc;
}
