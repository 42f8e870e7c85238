/*
 * Tests of the link-prediction task (trainer/tasks/link.c) below the
 * command line: its loss gradient, with respect to the embeddings and to
 * the MLP decoder's parameters, against central differences of its own
 * loss (the same epoch, so the same negatives), for the dot and the MLP
 * decoder (its hidden biases set away from the ReLU's kink, two units on
 * and two off); the negatives depend on the epoch; and the metrics against
 * their definitions computed by brute force, with and without ties.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/error.h"
#include "trainer/job.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

typedef struct {
    gnn_train_opts_t o;
    gnn_job_t j;
    int64_t sets[GNN_NUM_LINK_SETS][64];
    float *z;
    float *dz;
    int64_t n, D;
} fixture_t;

/* A random symmetric graph of n nodes, 4 held-out pairs per set (K = 2
 * negatives each), the task set up with the given decoder, and a model
 * whose only use is to hold the decoder's parameters. */
static void fixture(fixture_t *t, const char *decoder, int64_t n, int64_t D, uint64_t *s)
{
    memset(t, 0, sizeof *t);
    gnn_train_defaults(&t->o);
    t->o.task = "link";
    t->o.decoder = decoder;
    t->o.negatives = 2;
    t->o.out_dim = D;
    t->o.seed = 11;
    t->o.data = "test";
    gnn_job_t *j = &t->j;
    j->o = &t->o;
    j->mode = &gnn_mode_full;
    j->task_own = gnn_task_link;
    j->task = &j->task_own;
    assert_int_equal(j->task_own.configure(j, &j->task_own), 0);
    assert_int_equal(gnn_backend_open("cpu", &j->be), 0);
    gnn_graph_init(&j->g);
    gnn_vid_t src[96], dst[96];
    for (int i = 0; i < 48; i++) {
        src[i] = (gnn_vid_t)(tu_rng_next(s) % (uint64_t)n);
        dst[i] = (gnn_vid_t)(tu_rng_next(s) % (uint64_t)n);
    }
    assert_int_equal(gnn_csr_from_edges(n, 48, src, dst, NULL,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE |
                                            GNN_BUILD_NO_SELF_LOOPS,
                                        &j->g.csr),
                     0);
    j->g.directed = 0;
    for (int k = 0; k < GNN_NUM_LINK_SETS; k++) {
        int64_t m = k % 2 ? 8 : 4;
        for (int64_t i = 0; i < m; i++) {
            int64_t u = (int64_t)(tu_rng_next(s) % (uint64_t)n), v = (u + 1 + i) % n;
            t->sets[k][2 * i] = k % 2 ? t->sets[k - 1][2 * (i / 2)] : u;
            t->sets[k][2 * i + 1] = v;
        }
        j->g.link[k] = t->sets[k];
        j->g.link_size[k] = m;
    }
    j->g.link_neg_per_pos = 2;
    int64_t out_dim = 0;
    assert_int_equal(j->task->setup(j, &out_dim), 0);
    assert_int_equal(out_dim, D);
    j->out_dim = D;
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    gnn_model_config_t cfg = {GNN_MODEL_GCN, 1, 3, 4, D, 0.0f, NULL, 0, 0, 0.0f, 0.0f, NULL,
                              j->task->extra_params(j), j->task->extra_init, j, 0, 0, 0};
    assert_int_equal(gnn_model_create(j->be, reg, &cfg, 5, &j->model), 0);
    j->reg = reg;
    t->n = n;
    t->D = D;
    t->z = malloc((size_t)(n * D) * sizeof *t->z);
    t->dz = malloc((size_t)(n * D) * sizeof *t->dz);
    assert_true(t->z && t->dz);
    for (int64_t i = 0; i < n * D; i++) t->z[i] = (float)((tu_rng_next(s) >> 40) * 0x1p-23) - 1.0f;
}

static void fixture_free(fixture_t *t)
{
    t->j.task->free(&t->j);
    gnn_model_free(t->j.model);
    gnn_aggr_registry_free(t->j.reg);
    gnn_csr_free(&t->j.g.csr);
    gnn_backend_close(t->j.be);
    free(t->z);
    free(t->dz);
}

static double loss_of(fixture_t *t, float *dz)
{
    double loss;
    int64_t count;
    assert_int_equal(t->j.task->full_loss(&t->j, t->z, t->n, &loss, dz, &count), 0);
    assert_true(count > 0);
    return loss;
}

/* d loss / d w for every w of vec (n values) against central differences
 * (two steps; either must agree: the MLP's ReLU may switch within one). */
static int check_vector(fixture_t *t, float *vec, int64_t n, const float *grad, const char *what)
{
    double gmax = 1e-6;
    for (int64_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(grad[i]));
    int bad = 0;
    float *scratch = malloc((size_t)(t->n * t->D) * sizeof *scratch);
    assert_non_null(scratch);
    for (int64_t i = 0; i < n; i++) {
        float keep = vec[i];
        int ok = 0;
        double fd = 0.0;
        for (int k = 0; k < 2 && !ok; k++) {
            float h = k ? 2e-4f : 1e-3f;
            vec[i] = keep + h;
            double lp = loss_of(t, scratch);
            vec[i] = keep - h;
            double lm = loss_of(t, scratch);
            fd = (lp - lm) / (2.0 * (double)h);
            ok = fabs(fd - grad[i]) <= 2e-3 * gmax + 2e-2 * fabs(fd);
        }
        vec[i] = keep;
        if (!ok && bad++ < 5)
            print_message("%s %" PRId64 ": backward %.6g, differences %.6g\n", what, i,
                          (double)grad[i], fd);
    }
    free(scratch);
    return bad;
}

static void check_decoder(const char *decoder)
{
    uint64_t s = g_seed ^ (uint64_t)strlen(decoder);
    fixture_t t;
    fixture(&t, decoder, 12, 4, &s);
    t.j.ck.epoch = 3;
    if (!strcmp(decoder, "mlp")) {
        /* Hidden biases far from the ReLU's kink (|h . W1| < 3.5 here):
         * units 0 and 1 always on, 2 and 3 always off, so that central
         * differences never straddle it and both branches are tested. */
        float *dec = gnn_model_params(t.j.model) + gnn_model_extra_offset(t.j.model);
        for (int k = 0; k < 4; k++) dec[4 * 4 + k] = k < 2 ? 5.0f : -5.0f;
    }
    double l0 = loss_of(&t, t.dz);
    assert_true(isfinite(l0) && l0 > 0.0);
    int bad = check_vector(&t, t.z, t.n * t.D, t.dz, "dz");
    int64_t off = gnn_model_extra_offset(t.j.model), nd = gnn_model_n_params(t.j.model) - off;
    if (!strcmp(decoder, "mlp")) {
        assert_int_equal(nd, 4 * 4 + 2 * 4 + 1);
        float *g = malloc((size_t)nd * sizeof *g);
        assert_non_null(g);
        loss_of(&t, t.dz);
        memcpy(g, gnn_model_grads(t.j.model) + off, (size_t)nd * sizeof *g);
        bad += check_vector(&t, gnn_model_params(t.j.model) + off, nd, g, "decoder");
        free(g);
    } else {
        assert_int_equal(nd, 0);
    }
    if (bad) fail_msg("%s: %d gradients off (seed %" PRIu64 ")", decoder, bad, g_seed);
    /* Another epoch draws other negatives: another loss. */
    t.j.ck.epoch = 4;
    assert_true(loss_of(&t, t.dz) != l0);
    t.j.ck.epoch = 3;
    assert_true(loss_of(&t, t.dz) == l0);
    fixture_free(&t);
}

static void test_dot_gradients(void **state)
{
    (void)state;
    check_decoder("dot");
}

static void test_mlp_gradients(void **state)
{
    (void)state;
    check_decoder("mlp");
}

/* Scores of a held-out set under the dot decoder, in double from the
 * float products the task computes. */
static void set_scores(const fixture_t *t, int k, double *out)
{
    for (int64_t i = 0; i < t->j.g.link_size[k]; i++) {
        const float *zu = t->z + t->sets[k][2 * i] * t->D;
        const float *zv = t->z + t->sets[k][2 * i + 1] * t->D;
        float s = 0.0f;
        for (int64_t c = 0; c < t->D; c++) s += zu[c] * zv[c];
        out[i] = s;
    }
}

/* The metrics by their definitions, brute force: AUC over all (pos, neg)
 * pairs, ties one half; AP as the sum over distinct thresholds of the
 * recall gained times the precision there; MRR with ties half way; Hits@K
 * against the K-th highest negative (1 with fewer negatives). */
static void reference(const double *ps, int64_t np, const double *ns, int64_t nn, int64_t K,
                      const int64_t *hits, int nh, double *m)
{
    double wins = 0;
    for (int64_t i = 0; i < np; i++)
        for (int64_t q = 0; q < nn; q++) wins += ps[i] > ns[q] ? 1.0 : ps[i] == ns[q] ? 0.5 : 0.0;
    m[0] = wins / ((double)np * (double)nn);
    /* AP: thresholds are the distinct scores, high to low. */
    double ap = 0, prev = 0;
    double all[128];
    int64_t na = 0;
    for (int64_t i = 0; i < np; i++) all[na++] = ps[i];
    for (int64_t q = 0; q < nn; q++) all[na++] = ns[q];
    double thr[128];
    int64_t nt = 0;
    for (int64_t x = 0; x < na; x++) {
        int seen = 0;
        for (int64_t y = 0; y < nt; y++) seen |= thr[y] == all[x];
        if (!seen) thr[nt++] = all[x];
    }
    for (int64_t x = 0; x < nt; x++) /* sort descending */
        for (int64_t y = x + 1; y < nt; y++)
            if (thr[y] > thr[x]) {
                double tmp = thr[x];
                thr[x] = thr[y];
                thr[y] = tmp;
            }
    for (int64_t x = 0; x < nt; x++) {
        double tp = 0, fp = 0;
        for (int64_t i = 0; i < np; i++) tp += ps[i] >= thr[x];
        for (int64_t q = 0; q < nn; q++) fp += ns[q] >= thr[x];
        double recall = tp / (double)np;
        ap += (recall - prev) * tp / (tp + fp);
        prev = recall;
    }
    m[1] = ap;
    double mrr = 0;
    for (int64_t i = 0; i < np; i++) {
        double ge = 0, gt = 0;
        for (int64_t q = i * K; q < (i + 1) * K; q++) {
            ge += ns[q] >= ps[i];
            gt += ns[q] > ps[i];
        }
        mrr += 1.0 / (0.5 * (ge + gt) + 1.0);
    }
    m[2] = mrr / (double)np;
    for (int h = 0; h < nh; h++) {
        if (nn < hits[h]) {
            m[3 + h] = 1.0;
            continue;
        }
        double above = 0;
        for (int64_t i = 0; i < np; i++) {
            int64_t higher = 0; /* negatives above ps[i] ... */
            for (int64_t q = 0; q < nn; q++) higher += ns[q] >= ps[i];
            above += higher < hits[h]; /* ... fewer than K: above the K-th */
        }
        m[3 + h] = above / (double)np;
    }
}

/* The task's metrics against the definitions, on random embeddings and on
 * embeddings rounded to few values (many ties), with --hits 1,3,100. */
static void test_metrics(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x6d65ull;
    for (int round = 0; round < 2; round++) {
        fixture_t t;
        fixture(&t, "dot", 12, 4, &s);
        t.o.hits = "1,3,100";
        gnn_task_kind_t k = gnn_task_link;
        assert_int_equal(k.configure(&t.j, &k), 0);
        t.j.task->free(&t.j);
        t.j.task_own = k;
        int64_t out_dim;
        assert_int_equal(k.setup(&t.j, &out_dim), 0);
        if (round)
            for (int64_t i = 0; i < t.n * t.D; i++) t.z[i] = roundf(t.z[i] * 2.0f) / 2.0f;
        gnn_metrics_t m;
        assert_int_equal(k.evaluate(&t.j, t.z, t.n, &m), 0);
        static const int64_t hits[] = {1, 3, 100};
        for (int set = 0; set < 2; set++) {
            double ps[64], ns[64], want[6];
            int p = set ? GNN_LINK_TEST_POS : GNN_LINK_VALID_POS;
            set_scores(&t, p, ps);
            set_scores(&t, p + 1, ns);
            reference(ps, t.j.g.link_size[p], ns, t.j.g.link_size[p + 1], 2, hits, 3, want);
            for (int q = 0; q < 6; q++)
                if (fabs(m.v[set * 6 + q] - want[q]) > 1e-12)
                    fail_msg("round %d: %s = %.17g, the definition gives %.17g", round,
                             k.metric_keys[set * 6 + q], m.v[set * 6 + q], want[q]);
        }
        assert_string_equal(k.metric_keys[12], "valid_loss");
        assert_true(isfinite(m.v[12]) && m.v[12] > 0.0);
        fixture_free(&t);
    }
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dot_gradients),
        cmocka_unit_test(test_mlp_gradients),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
