/*
 * A training step captured once and replayed (trainer/job.h,
 * gnn__replay_step): on a GPU the full-graph step of one process is the
 * same work every epoch, on the same buffers, with two kinds of scalars
 * that change, the dropout counters (the model's stream advances by the
 * step's span; attention dropout's keys are functions of positions in it)
 * and Adam's step. The backend reads those from a buffer of
 * step scalars (gnn_be_set_step_scalars) rather than from the arguments
 * the work was queued with, so the step is captured once (a CUDA graph:
 * the host queues nothing more) and each later epoch writes its scalars,
 * launches the capture and advances the host's copies of the counters by
 * what the step advances them: the same parameters, losses and
 * checkpoints as queuing every step anew.
 *
 * A capture is taken at a run's second step at the earliest, and after
 * the one that checked the loss's targets (every buffer the step uses
 * exists by then), and is valid while no backend buffer has been freed or
 * moved (gnn_be_free_generation): after one it is dropped, the next step
 * is queued and the one after it captured again.
 * A step whose capture fails (a wait for the device or an allocation
 * inside it) runs queued as before and the run goes on without captures
 * (INFO line with the cause); a failure that is not the capture's shows
 * in that step's own error.
 *
 * On cpu-as-gpu (a CPU backend that takes a GPU's paths, where nothing
 * can be captured) the replay is emulated so that its logic is tested
 * without a device: the step to capture runs under a capture's rules
 * (gnn_be_capture_rules_begin: no allocation, copy, wait or device-side
 * check of ids it does not vouch for, each of which fails a GPU's
 * capture), and each later step is queued again with the captured step's
 * arguments (the model's stream and Adam's step as they were at the
 * capture) and the step scalars of the epoch, which must give the results
 * of the step queued with its own.
 */
#include "trainer/job.h"

#include "graph/base/error.h"
#include "graph/base/log.h"

#include <inttypes.h>
#include <string.h>

/* The mode, task and model a step capture serves: one process, the
 * loss queued on the device (node classification, after its first
 * step), and no scalar beside the two above (attention dropout's key is
 * one of the stream's position, which the backend derives from the
 * scalars too): no learnable input rows, whose row-sparse optimiser
 * counts its own steps. */
static const char *not_replayable(const gnn_job_t *j)
{
    const gnn_train_opts_t *o = j->o;
    if (strcmp(o->cuda_graphs, "on")) return "--cuda-graphs off";
    if (gnn_be_host_memory(j->be)) return "not on a GPU";
    if (j->dist) return "over a partition directory";
    if (!j->task->full_loss_async) return "the task's loss is not queued on the device";
    if (j->emb) return "learnable input rows (--embed-dim)";
    return NULL;
}

int gnn__replay_usable(const gnn_job_t *j)
{
    return not_replayable(j) == NULL && j->replay.state >= 0;
}

void gnn__replay_drop(gnn_job_t *j)
{
    gnn_replay_t *r = &j->replay;
    gnn_be_capture_free(r->cap);
    r->cap = NULL;
    r->state = 0;
    r->queued = 0;
}

void gnn__replay_free(gnn_job_t *j)
{
    gnn__replay_drop(j);
    if (j->replay.scalars) gnn_be_free(j->be, j->replay.scalars);
    j->replay.scalars = NULL;
}

int gnn__step_rules_end(gnn_backend_t *be, int step_rc, char *why, size_t n)
{
    char msg[512] = "";
    const int code = gnn_error_code();
    if (step_rc < 0) snprintf(msg, sizeof msg, "%s", gnn_error_message());
    const int broke = gnn_be_capture_rules_end(be) < 0;
    if (broke && !why[0]) snprintf(why, n, "%s", gnn_error_message());
    if (step_rc < 0)
        (void)GNN_FAIL(code, "%s", msg);
    else
        gnn_error_clear();
    return broke;
}

/* Write the epoch's scalars (delta from the captured step's stream
 * position, Adam's next step) and have the backend read them. */
static int set_scalars(gnn_job_t *j, uint64_t delta, int64_t step)
{
    gnn_replay_t *r = &j->replay;
    gnn_step_scalars_t s = {.drop_delta = delta};
    const gnn_adam_opts_t ao = gnn__adam_opts(j);
    gnn_step_scalars_adam(&s, &ao, step);
    if (!r->scalars) {
        int rc = gnn_be_alloc(j->be, sizeof s, (void **)&r->scalars);
        if (rc < 0) return rc;
    }
    int rc = gnn_be_upload(j->be, r->scalars, &s, sizeof s);
    return rc < 0 ? rc : gnn_be_set_step_scalars(j->be, r->scalars);
}

/* Capture the step (or, emulated, queue it) with the stream at off0 and
 * Adam's next step step0 + 1; on success the step has been queued or
 * launched once. A capture that fails puts the counters back and returns
 * 1: the caller queues the step itself. Emulated, the step runs under a
 * GPU capture's rules (gnn_be_capture_rules_begin): where it breaks one,
 * the run goes on without captures as it would on a GPU, and 2 says that
 * the step has run. */
static int capture(gnn_job_t *j, int (*issue)(gnn_job_t *j))
{
    int rc = 0;
    gnn_replay_t *r = &j->replay;
    r->off0 = gnn_model_rng_offset(j->model);
    r->step0 = j->ck.step;
    GNN_TRY(set_scalars(j, 0, r->step0 + 1));
    const uint64_t gen = gnn_be_free_generation();
    const int emulate = gnn_backend_kind(j->be) == GNN_BACKEND_CPU;
    char why[256] = "";
    if (emulate) {
        GNN_TRY(gnn_be_capture_rules_begin(j->be));
        rc = issue(j);
        (void)gnn__step_rules_end(j->be, rc, why, sizeof why);
        if (rc < 0) goto fail;
        if (!why[0] && gnn_be_free_generation() != gen)
            snprintf(why, sizeof why, "a buffer was freed while the step was captured");
    } else if (gnn_be_capture_begin(j->be) < 0) {
        /* Whatever fails here, the step has not run: it runs queued. */
        snprintf(why, sizeof why, "%s", gnn_error_message());
    } else {
        int qrc = issue(j);
        if (qrc < 0) snprintf(why, sizeof why, "%s", gnn_error_message());
        int crc = gnn_be_capture_end(j->be, &r->cap);
        if (crc < 0 && !why[0]) snprintf(why, sizeof why, "%s", gnn_error_message());
        if (!why[0] && gnn_be_free_generation() != gen)
            snprintf(why, sizeof why, "a buffer was freed while the step was captured");
        if (!why[0] && gnn_be_capture_launch(j->be, r->cap) < 0)
            snprintf(why, sizeof why, "%s", gnn_error_message());
    }
    if (why[0]) {
        gnn__replay_drop(j);
        gnn_error_clear();
        if (!emulate) { /* the counters as before the step, which runs queued */
            gnn_model_set_rng_offset(j->model, r->off0);
            j->ck.step = r->step0;
        }
        (void)gnn_be_set_step_scalars(j->be, NULL);
        r->state = -1;
        GNN_INFO("run %" PRId64 ": the training step runs without a CUDA graph (%s)",
                 j->ck.run + 1, why);
        return emulate ? 2 : 1;
    }
    r->span = gnn_model_rng_offset(j->model) - r->off0;
    r->gen = gen;
    r->state = 1;
    GNN_DEBUG("run %" PRId64 ": training step %s at Adam step %" PRId64 " (stream span %" PRIu64
              ")",
              j->ck.run + 1, emulate ? "replayed by queuing it again" : "captured",
              j->ck.step, r->span);
fail:
    (void)gnn_be_set_step_scalars(j->be, NULL);
    return rc;
}

/* A later step from the capture: its scalars, the launch (emulated: the
 * step queued again with the captured step's arguments), and the host's
 * counters advanced as the step advances them. */
static int replay(gnn_job_t *j, int (*issue)(gnn_job_t *j))
{
    int rc = 0;
    gnn_replay_t *r = &j->replay;
    const uint64_t now = gnn_model_rng_offset(j->model), delta = now - r->off0;
    const int64_t step = j->ck.step + 1;
    GNN_TRY(set_scalars(j, delta, step));
    if (r->cap) {
        GNN_TRY(gnn_be_capture_launch(j->be, r->cap));
    } else {
        gnn_model_set_rng_offset(j->model, r->off0);
        j->ck.step = r->step0;
        GNN_TRY(issue(j));
        GNN_CHECK(gnn_model_rng_offset(j->model) - r->off0 == r->span && j->ck.step == r->step0 + 1,
                  GNN_EINVAL,
                  "replayed step: it advanced the stream by %" PRIu64 " and Adam to step %" PRId64
                  ", the captured one by %" PRIu64 " to %" PRId64,
                  gnn_model_rng_offset(j->model) - r->off0, j->ck.step, r->span, r->step0 + 1);
    }
    gnn_model_set_rng_offset(j->model, now + r->span);
    j->ck.step = step;
fail:
    if (rc < 0) { /* the counters as before the step */
        gnn_model_set_rng_offset(j->model, now);
        j->ck.step = step - 1;
    }
    (void)gnn_be_set_step_scalars(j->be, NULL);
    return rc;
}

int gnn__replay_step(gnn_job_t *j, int (*issue)(gnn_job_t *j))
{
    gnn_replay_t *r = &j->replay;
    if (r->state == 1 && r->gen != gnn_be_free_generation()) {
        GNN_DEBUG("run %" PRId64 ": a buffer was freed since the step was captured: captured again",
                  j->ck.run + 1);
        gnn__replay_drop(j);
    }
    if (r->state == 1) {
        r->last = "replayed";
        return replay(j, issue);
    }
    if (r->queued == 0) { /* a new model's first step makes its buffers */
        r->queued++;
        r->last = "queued";
        return issue(j);
    }
    r->last = "captured";
    int rc = capture(j, issue);
    if (rc <= 0) return rc;
    r->last = "queued";
    return rc == 2 ? 0 : issue(j);
}

const char *gnn__replay_why_not(const gnn_job_t *j)
{
    return not_replayable(j);
}
