/*
 * The safetensors writer (trainer/safetensors.h). The header is formed in
 * memory first (its length leads the file), then the tensors are written
 * one after another through a small buffer, a transposed one column by
 * column of its stored matrix.
 */
#include "trainer/safetensors.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/json.h"
#include "graph/base/tmpclean.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c writes the host's floats as they are: little-endian hosts only"
#endif

static int64_t elements(const gnn_st_tensor_t *t)
{
    int64_t e = 1;
    for (int d = 0; d < t->ndim; d++) e *= t->shape[d];
    return e;
}

static int check_tensor(const gnn_st_tensor_t *t, const gnn_st_tensor_t *all, int64_t i)
{
    const char *nm = t->name;
    if (!nm || !*nm || !strcmp(nm, "__metadata__"))
        return GNN_FAIL(GNN_EINVAL, "safetensors: tensor %" PRId64 " has no usable name", i);
    for (const char *p = nm; *p; p++)
        if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
            return GNN_FAIL(GNN_EINVAL, "safetensors: tensor name \"%s\" is not plain ASCII", nm);
    if (t->ndim < 1 || t->ndim > 3 || (t->transpose && t->ndim != 2) || !t->data)
        return GNN_FAIL(GNN_EINVAL, "safetensors: tensor %s: bad shape or no data", nm);
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 1 || t->shape[d] > (INT64_C(1) << 40))
            return GNN_FAIL(GNN_EINVAL, "safetensors: tensor %s: dimension %d is %" PRId64, nm,
                            d, t->shape[d]);
    for (int64_t k = 0; k < i; k++)
        if (!strcmp(all[k].name, nm))
            return GNN_FAIL(GNN_EINVAL, "safetensors: two tensors named %s", nm);
    return 0;
}

/* The header (unpadded) into *buf, *len bytes. */
static int header(const gnn_st_tensor_t *t, int64_t n, const char *const *meta, int64_t n_meta,
                  char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    if (!f) return GNN_FAIL(GNN_ENOMEM, "safetensors: header");
    fputc('{', f);
    if (n_meta > 0) {
        fputs("\"__metadata__\":{", f);
        for (int64_t k = 0; k < n_meta; k++) {
            if (k) fputc(',', f);
            gnn_json_string(f, meta[2 * k]);
            fputc(':', f);
            gnn_json_string(f, meta[2 * k + 1]);
        }
        fputc('}', f);
    }
    uint64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)elements(&t[i]) * sizeof(float);
        fprintf(f, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[", n_meta > 0 || i ? "," : "",
                t[i].name);
        for (int d = 0; d < t[i].ndim; d++) fprintf(f, "%s%" PRId64, d ? "," : "", t[i].shape[d]);
        fprintf(f, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", at, at + bytes);
        at += bytes;
    }
    fputc('}', f);
    if (ferror(f) || fclose(f) != 0) {
        free(*buf);
        *buf = NULL;
        return GNN_FAIL(GNN_ENOMEM, "safetensors: header");
    }
    return 0;
}

/* Tensor t's elements in its written order. */
static int write_tensor(FILE *f, const gnn_st_tensor_t *t)
{
    if (!t->transpose) {
        size_t e = (size_t)elements(t);
        return fwrite(t->data, sizeof(float), e, f) == e ? 0 : -1;
    }
    /* shape r x c, stored c x r: row i written is column i of the stored */
    int64_t r = t->shape[0], c = t->shape[1];
    float buf[1024];
    for (int64_t i = 0; i < r; i++)
        for (int64_t j0 = 0; j0 < c; j0 += 1024) {
            int64_t m = c - j0 < 1024 ? c - j0 : 1024;
            for (int64_t j = 0; j < m; j++) buf[j] = t->data[(j0 + j) * r + i];
            if (fwrite(buf, sizeof(float), (size_t)m, f) != (size_t)m) return -1;
        }
    return 0;
}

int gnn_safetensors_write(const char *path, const gnn_st_tensor_t *t, int64_t n,
                          const char *const *meta, int64_t n_meta)
{
    int rc = 0, clean = 0, created = 0;
    char *hdr = NULL, *tmp = NULL;
    size_t hlen = 0;
    FILE *f = NULL;
    for (int64_t i = 0; i < n; i++) GNN_TRY(check_tensor(&t[i], t, i));
    GNN_TRY(header(t, n, meta, n_meta, &hdr, &hlen));
    size_t tlen = strlen(path) + 32;
    tmp = gnn_malloc(tlen);
    GNN_CHECK(tmp, GNN_ENOMEM, "%s", path);
    snprintf(tmp, tlen, "%s.tmp-%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f) {
        rc = GNN_FAIL(GNN_EIO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        goto fail;
    }
    created = 1;
    clean = gnn_tmp_register(tmp, 0);
    uint64_t padded = (hlen + 7) / 8 * 8;
    unsigned char le[8];
    for (int b = 0; b < 8; b++) le[b] = (unsigned char)(padded >> (8 * b));
    int bad = fwrite(le, 1, 8, f) != 8 || fwrite(hdr, 1, hlen, f) != hlen;
    for (uint64_t k = hlen; k < padded && !bad; k++) bad = fputc(' ', f) == EOF;
    for (int64_t i = 0; i < n && !bad; i++) bad = write_tensor(f, &t[i]) != 0;
    int e = errno;
    if (!bad) {
        bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
        e = errno;
    }
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    f = NULL;
    if (bad) {
        rc = GNN_FAIL(GNN_EIO, "%s: writing %s failed: %s", path, tmp, strerror(e));
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        rc = GNN_FAIL(GNN_EIO, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        goto fail;
    }
    created = 0;
fail:
    if (f) fclose(f);
    if (created) unlink(tmp); /* registered or not (all slots taken) */
    gnn_tmp_unregister(clean);
    gnn_free(tmp);
    free(hdr);
    return rc;
}
