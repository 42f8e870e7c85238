/*
 * The aggregator registry (kernels/aggr.h): built-ins and plug-ins by name.
 *
 * Every definition enters through one function, host_add, whether it comes
 * from the built-in table (kernels/aggr_builtin.c) or from a plug-in's
 * gnn_aggr_plugin_register, so both pass the same checks: the definition's
 * abi_version, the name syntax, at least one forward, a backward for each
 * forward, and a name not yet taken. The registry keeps its own copy of each
 * definition and of its strings; each entry is a separate allocation, so
 * the definition pointers handed out stay put while the registry grows.
 *
 * Loading is all or nothing. The plug-in record is appended before the
 * plug-in's register function runs (entries point at it for their origin);
 * on any failure the entries added since, and the record, are dropped and
 * the shared object is closed. A failed add is remembered even if the
 * plug-in ignores its result and returns 0. Error lines start with
 * "plug-in PATH: " and name the cause as listed in kernels/aggr.h.
 *
 * Invariants: entries[0 .. n_entries) in registration order, built-ins
 * first; origin -1 for a built-in, else an index into plugins[]; every
 * plugins[i] holds an open handle until the registry is freed.
 */
#include "kernels/aggr.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "kernels/aggr_builtin.h"
#include "kernels/spmm.h"

#include <dlfcn.h>
#include <stddef.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    gnn_aggr_def_t def; /* name and description point at owned copies */
    int origin;         /* -1: built-in, else index into plugins[] */
} entry_t;

typedef struct {
    char *path;   /* as given to gnn_aggr_registry_load */
    void *handle; /* from dlopen */
} plugin_t;

struct gnn_aggr_registry {
    entry_t **entries;
    int n_entries, cap_entries;
    plugin_t *plugins;
    int n_plugins, cap_plugins;
};

/* What host_add and host_error need while one source registers. */
typedef struct {
    gnn_aggr_registry_t *r;
    int origin;        /* origin of the entries added now */
    uint32_t abi;      /* the ABI version the source reported */
    int code;          /* first failure of an add (0: none) */
    char reason[512];  /* its message, or the plug-in's own reason */
    int have_reason;   /* reason holds something */
} load_t;

static const char *origin_name(const gnn_aggr_registry_t *r, int origin)
{
    return origin < 0 ? "built-in" : r->plugins[origin].path;
}

static void free_entry(entry_t *e)
{
    if (!e) return;
    gnn_free((char *)e->def.name);
    gnn_free((char *)e->def.description);
    gnn_free(e);
}

/* ---- Definition checks --------------------------------------------------- */

/* [a-z][a-z0-9_]{0,GNN_AGGR_NAME_MAX-1} */
static int valid_name(const char *s)
{
    if (!s || !(s[0] >= 'a' && s[0] <= 'z')) return 0;
    size_t n = 1;
    for (; s[n]; n++) {
        char c = s[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (n >= GNN_AGGR_NAME_MAX || !ok) return 0;
    }
    return 1;
}

/* Record the first failure of this registration (later ones are effects). */
static int add_failed(load_t *ld, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int add_failed(load_t *ld, int code, const char *fmt, ...)
{
    if (!ld->code) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ld->reason, sizeof ld->reason, fmt, ap);
        va_end(ap);
        ld->code = code;
        ld->have_reason = 1;
    }
    return 1;
}

/* A printable, bounded rendering of a name that failed the syntax check. */
static void quote_name(const char *s, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; s[i] && o + 5 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 40) {
            out[o++] = '.';
            out[o++] = '.';
            out[o++] = '.';
            break;
        }
        out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[o] = '\0';
}

/* The entry points d declares fit its kind: each forward with its
 * backward, at least one device, nothing of the other kind. 0, or 1 with
 * the reason recorded. */
static int check_entries(load_t *ld, const gnn_aggr_def_t *d)
{
    const char *name = d->name;
    if (d->kind == GNN_AGGR_KIND_ATTENTION) {
        if (d->cpu_forward || d->cpu_backward || d->cuda_forward || d->cuda_backward)
            return add_failed(ld, GNN_EPLUGIN,
                              "attention function %s sets aggregator entry points (forward, "
                              "backward); it scores edges with cpu_score / cuda_score",
                              name);
        if (!d->cpu_score && !d->cuda_score)
            return add_failed(ld, GNN_EPLUGIN,
                              "attention function %s has no entry point (no score)", name);
        if (!d->cpu_score != !d->cpu_score_backward)
            return add_failed(ld, GNN_EPLUGIN,
                              "attention function %s has one of cpu_score and cpu_score_backward "
                              "without the other",
                              name);
        if (!d->cuda_score != !d->cuda_score_backward)
            return add_failed(ld, GNN_EPLUGIN,
                              "attention function %s has one of cuda_score and "
                              "cuda_score_backward without the other",
                              name);
        return 0;
    }
    if (d->kind != GNN_AGGR_KIND_AGGREGATE)
        return add_failed(ld, GNN_EPLUGIN, "aggregator %s has unknown kind %u", name,
                          (unsigned)d->kind);
    if (d->cpu_score || d->cpu_score_backward || d->cuda_score || d->cuda_score_backward)
        return add_failed(ld, GNN_EPLUGIN,
                          "aggregator %s sets attention entry points (score); declare kind "
                          "GNN_AGGR_KIND_ATTENTION",
                          name);
    if (!d->cpu_forward && !d->cuda_forward)
        return add_failed(ld, GNN_EPLUGIN, "aggregator %s has no entry point (no forward)", name);
    if (d->cpu_forward && !d->cpu_backward)
        return add_failed(ld, GNN_EPLUGIN, "aggregator %s has cpu_forward but no cpu_backward",
                          name);
    if (d->cuda_forward && !d->cuda_backward)
        return add_failed(ld, GNN_EPLUGIN, "aggregator %s has cuda_forward but no cuda_backward",
                          name);
    if (!d->cpu_forward && d->cpu_backward)
        return add_failed(ld, GNN_EPLUGIN, "aggregator %s has cpu_backward but no cpu_forward",
                          name);
    if (!d->cuda_forward && d->cuda_backward)
        return add_failed(ld, GNN_EPLUGIN, "aggregator %s has cuda_backward but no cuda_forward",
                          name);
    return 0;
}

/* host->add: check def and append a copy of it. 0, or 1 with the reason
 * recorded in the load. */
static int host_add(gnn_aggr_host_t *host, const gnn_aggr_def_t *def)
{
    load_t *ld = host ? host->host_data : NULL;
    if (!ld) return 1;
    gnn_aggr_registry_t *r = ld->r;
    if (!def) return add_failed(ld, GNN_EPLUGIN, "NULL aggregator definition");
    /* Another ABI may lay the rest out differently: read nothing else. */
    uint32_t version = def->abi_version;
    if (version < 1 || version > GNN_AGGR_ABI_VERSION || version > ld->abi)
        return add_failed(ld, GNN_EPLUGIN,
                          "aggregator definition has abi_version %u, this build reads 1 to %u%s",
                          (unsigned)version, (unsigned)GNN_AGGR_ABI_VERSION,
                          version > ld->abi ? " and no more than the plug-in's own" : "");
    /* A version 1 definition ends where version 2's fields start. */
    gnn_aggr_def_t d;
    memset(&d, 0, sizeof d);
    memcpy(&d, def, version >= 2 ? sizeof d : offsetof(gnn_aggr_def_t, kind));
    if (!d.name) return add_failed(ld, GNN_EPLUGIN, "aggregator definition without a name");
    if (!valid_name(d.name)) {
        char q[64];
        quote_name(d.name, q, sizeof q);
        return add_failed(ld, GNN_EPLUGIN,
                          "invalid aggregator name \"%s\" (want [a-z][a-z0-9_]*, at most %d "
                          "characters)",
                          q, GNN_AGGR_NAME_MAX);
    }
    const char *name = d.name;
    if (check_entries(ld, &d)) return 1;
    for (int i = 0; i < r->n_entries; i++)
        if (!strcmp(r->entries[i]->def.name, name))
            return add_failed(ld, GNN_EPLUGIN, "aggregator %s already registered (by %s)", name,
                              origin_name(r, r->entries[i]->origin));

    if (r->n_entries == r->cap_entries) {
        int cap = r->cap_entries ? 2 * r->cap_entries : 8;
        entry_t **grown = gnn_realloc_array(r->entries, (size_t)cap, sizeof *grown);
        if (!grown) return add_failed(ld, GNN_ENOMEM, "out of memory");
        r->entries = grown;
        r->cap_entries = cap;
    }
    entry_t *e = gnn_calloc(1, sizeof *e);
    if (!e) return add_failed(ld, GNN_ENOMEM, "out of memory");
    e->def = d;
    e->origin = ld->origin;
    e->def.name = gnn_strdup(name);
    /* One line: a line break in a description would split --help rows. */
    char *desc = gnn_strdup(d.description ? d.description : "");
    e->def.description = desc;
    if (!e->def.name || !desc) {
        free_entry(e);
        return add_failed(ld, GNN_ENOMEM, "out of memory");
    }
    for (char *p = desc; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    r->entries[r->n_entries++] = e;
    return 0;
}

/* host->error: keep the first reason a plug-in gives, on one line. */
static void host_error(gnn_aggr_host_t *host, const char *msg)
{
    load_t *ld = host ? host->host_data : NULL;
    if (!ld || ld->have_reason) return;
    snprintf(ld->reason, sizeof ld->reason, "%s", msg && msg[0] ? msg : "(no reason given)");
    for (char *p = ld->reason; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    ld->have_reason = 1;
}

/* Drop the entries from index n on. */
static void truncate_entries(gnn_aggr_registry_t *r, int n)
{
    while (r->n_entries > n) free_entry(r->entries[--r->n_entries]);
}

/* ---- Registry ------------------------------------------------------------ */

void gnn_aggr_registry_free(gnn_aggr_registry_t *r)
{
    if (!r) return;
    truncate_entries(r, 0);
    gnn_free(r->entries);
    /* Reverse order of loading, as a plug-in's destructors may expect. */
    for (int i = r->n_plugins - 1; i >= 0; i--) {
        dlclose(r->plugins[i].handle);
        gnn_free(r->plugins[i].path);
    }
    gnn_free(r->plugins);
    gnn_free(r);
}

int gnn_aggr_registry_create(gnn_aggr_registry_t **out)
{
    int rc = 0;
    gnn_aggr_registry_t *r = NULL;
    GNN_CHECK(out, GNN_EINVAL, "aggregator registry: NULL output");
    *out = NULL;
    r = gnn_calloc(1, sizeof *r);
    GNN_CHECK(r, GNN_ENOMEM, "aggregator registry");
    load_t ld = {.r = r, .origin = -1, .abi = GNN_AGGR_ABI_VERSION};
    gnn_aggr_host_t host = {GNN_AGGR_ABI_VERSION, host_add, host_error, &ld};
    if (gnn__aggr_builtin_register(&host) != 0 || ld.code) {
        rc = GNN_FAIL(ld.code ? ld.code : GNN_EINTERNAL, "built-in aggregators: %s",
                      ld.have_reason ? ld.reason : "registration failed");
        goto fail;
    }
    *out = r;
    return 0;
fail:
    gnn_aggr_registry_free(r);
    return rc;
}

/* Append the record of an opened plug-in. 0 or GNN_ENOMEM. */
static int push_plugin(gnn_aggr_registry_t *r, const char *path, void *handle)
{
    if (r->n_plugins == r->cap_plugins) {
        int cap = r->cap_plugins ? 2 * r->cap_plugins : 4;
        plugin_t *grown = gnn_realloc_array(r->plugins, (size_t)cap, sizeof *grown);
        if (!grown) return GNN_FAIL(GNN_ENOMEM, "plug-in %s: out of memory", path);
        r->plugins = grown;
        r->cap_plugins = cap;
    }
    char *copy = gnn_strdup(path);
    if (!copy) return GNN_FAIL(GNN_ENOMEM, "plug-in %s: out of memory", path);
    r->plugins[r->n_plugins].path = copy;
    r->plugins[r->n_plugins].handle = handle;
    r->n_plugins++;
    return 0;
}

typedef uint32_t (*abi_fn)(void);
typedef int (*register_fn)(gnn_aggr_host_t *);

int gnn_aggr_registry_load(gnn_aggr_registry_t *r, const char *path)
{
    int rc = 0;
    char *open_path = NULL;
    void *handle = NULL;
    int n_before = r ? r->n_entries : 0, pushed = 0;
    GNN_CHECK(r && path && path[0], GNN_EINVAL, "aggregator plug-in: NULL registry or empty path");

    /* A bare file name is taken from the current directory, as it reads;
     * dlopen would search the library path for it instead. */
    size_t len = strlen(path);
    open_path = gnn_malloc(len + 3);
    GNN_CHECK(open_path, GNN_ENOMEM, "plug-in %s: out of memory", path);
    snprintf(open_path, len + 3, "%s%s", strchr(path, '/') ? "" : "./", path);

    struct stat st;
    if (stat(open_path, &st) != 0) {
        int err = errno;
        GNN_CHECK(0, err == ENOENT || err == ENOTDIR ? GNN_ENOENT : GNN_EPLUGIN,
                  "plug-in %s: cannot open: %s", path, strerror(err));
    }
    dlerror(); /* clear */
    handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        size_t n = strlen(open_path);
        if (!why) why = "dlopen failed";
        /* dlerror often starts with the file name, which the line has already. */
        if (!strncmp(why, open_path, n) && !strncmp(why + n, ": ", 2)) why += n + 2;
        GNN_CHECK(0, GNN_EPLUGIN, "plug-in %s: cannot open: %s", path, why);
    }

    abi_fn abi = (abi_fn)dlsym(handle, "gnn_aggr_plugin_abi");
    GNN_CHECK(abi, GNN_EPLUGIN, "plug-in %s: missing symbol gnn_aggr_plugin_abi", path);
    register_fn reg = (register_fn)dlsym(handle, "gnn_aggr_plugin_register");
    GNN_CHECK(reg, GNN_EPLUGIN, "plug-in %s: missing symbol gnn_aggr_plugin_register", path);
    uint32_t version = abi();
    GNN_CHECK(version >= 1 && version <= GNN_AGGR_ABI_VERSION, GNN_EPLUGIN,
              "plug-in %s: ABI version %u, this build reads 1 to %u", path, (unsigned)version,
              (unsigned)GNN_AGGR_ABI_VERSION);

    GNN_TRY(push_plugin(r, path, handle));
    pushed = 1;
    load_t ld = {.r = r, .origin = r->n_plugins - 1, .abi = version};
    gnn_aggr_host_t host = {GNN_AGGR_ABI_VERSION, host_add, host_error, &ld};
    int refused = reg(&host);
    /* A failed add is the root cause even when the plug-in then gives its
     * own reason for refusing, or ignores the failure. */
    GNN_CHECK(!ld.code, ld.code, "plug-in %s: %s", path, ld.reason);
    GNN_CHECK(!refused, GNN_EPLUGIN, "plug-in %s: registration failed: %s", path,
              ld.have_reason ? ld.reason : "(no reason given)");
    GNN_CHECK(r->n_entries > n_before, GNN_EPLUGIN, "plug-in %s: registered no aggregator", path);
    gnn_free(open_path);
    return 0;
fail:
    if (r) {
        truncate_entries(r, n_before);
        if (pushed) {
            r->n_plugins--;
            gnn_free(r->plugins[r->n_plugins].path);
        }
    }
    if (handle) dlclose(handle);
    gnn_free(open_path);
    return rc;
}

int gnn_aggr_linear(const gnn_aggr_def_t *def)
{
    int k = gnn__aggr_builtin_kind(def);
    return k == GNN_AGGR_SUM || k == GNN_AGGR_MEAN || k == GNN_AGGR_GCN;
}

static const char *kind_noun(uint32_t kind)
{
    return kind == GNN_AGGR_KIND_ATTENTION ? "attention function" : "aggregator";
}

int gnn_aggr_is_attention(const gnn_aggr_def_t *def)
{
    return def && def->kind == GNN_AGGR_KIND_ATTENTION;
}

int gnn_aggr_registry_find_kind(const gnn_aggr_registry_t *r, const char *name, int kind,
                                const gnn_aggr_def_t **out)
{
    if (!r || !out) return GNN_FAIL(GNN_EINVAL, "aggregator registry: NULL argument");
    *out = NULL;
    char q[64];
    quote_name(name ? name : "(null)", q, sizeof q);
    for (int i = 0; name && i < r->n_entries; i++)
        if (!strcmp(r->entries[i]->def.name, name)) {
            const gnn_aggr_def_t *d = &r->entries[i]->def;
            if (kind >= 0 && d->kind != (uint32_t)kind)
                return GNN_FAIL(GNN_EINVAL, "\"%s\" is an %s, not an %s", q, kind_noun(d->kind),
                                kind_noun((uint32_t)kind));
            *out = d;
            return 0;
        }
    /* The list, cut short with "..." if it would not fit one message. */
    char list[640];
    size_t o = 0;
    int listed = 0;
    list[0] = '\0';
    for (int i = 0; i < r->n_entries; i++) {
        if (kind >= 0 && r->entries[i]->def.kind != (uint32_t)kind) continue;
        const char *n = r->entries[i]->def.name;
        size_t need = strlen(n) + (listed ? 2 : 0);
        if (o + need + 5 >= sizeof list) {
            snprintf(list + o, sizeof list - o, "%s...", listed ? ", " : "");
            break;
        }
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", listed ? ", " : "", n);
        listed++;
    }
    return GNN_FAIL(GNN_EINVAL, "unknown %s \"%s\" (registered: %s)",
                    kind_noun(kind < 0 ? GNN_AGGR_KIND_AGGREGATE : (uint32_t)kind), q, list);
}

int gnn_aggr_registry_find(const gnn_aggr_registry_t *r, const char *name,
                           const gnn_aggr_def_t **out)
{
    return gnn_aggr_registry_find_kind(r, name, -1, out);
}

int gnn_aggr_params(const gnn_aggr_def_t *def, const gnn_aggr_dims_t *d, gnn_aggr_param_t *out,
                    int *n, int64_t *count)
{
    if (!def || !d || !out || !n || !count)
        return GNN_FAIL(GNN_EINVAL, "aggregator parameters: NULL argument");
    *n = 0;
    *count = 0;
    if (!def->params) return 0;
    const char *what = kind_noun(def->kind);
    memset(out, 0, GNN_AGGR_MAX_PARAMS * sizeof *out);
    int k = def->params(d, out, GNN_AGGR_MAX_PARAMS, def->user);
    if (k < 0)
        return GNN_FAIL(GNN_EINVAL, "%s %s: cannot serve %" PRId64 " heads of %" PRId64
                                    " features (its params function returned %d)",
                        what, def->name, d->heads, d->f, k);
    if (k > GNN_AGGR_MAX_PARAMS)
        return GNN_FAIL(GNN_EPLUGIN, "%s %s: declares %d parameter tensors, at most %d", what,
                        def->name, k, GNN_AGGR_MAX_PARAMS);
    int64_t total = 0;
    for (int i = 0; i < k; i++) {
        const gnn_aggr_param_t *p = &out[i];
        const char *pn = p->name && valid_name(p->name) ? p->name : NULL;
        if (!pn)
            return GNN_FAIL(GNN_EPLUGIN, "%s %s: parameter %d has no valid name", what,
                            def->name, i);
        if (p->rows < 1 || p->cols < 1 || p->rows > ((int64_t)1 << 31) ||
            p->cols > ((int64_t)1 << 31) || p->rows * p->cols > ((int64_t)1 << 31))
            return GNN_FAIL(GNN_EPLUGIN, "%s %s: parameter %s is %" PRId64 " x %" PRId64
                                         " (each side at least 1, at most 2^31 values)",
                            what, def->name, pn, p->rows, p->cols);
        if (p->init != GNN_AGGR_INIT_ZEROS && p->init != GNN_AGGR_INIT_CONST &&
            p->init != GNN_AGGR_INIT_GLOROT)
            return GNN_FAIL(GNN_EPLUGIN, "%s %s: parameter %s has unknown initialisation %u",
                            what, def->name, pn, (unsigned)p->init);
        if (p->init == GNN_AGGR_INIT_CONST && !isfinite(p->value))
            return GNN_FAIL(GNN_EPLUGIN, "%s %s: parameter %s starts at a non-finite value",
                            what, def->name, pn);
        total += p->rows * p->cols;
    }
    *n = k;
    *count = total;
    return 0;
}

int gnn_aggr_registry_count(const gnn_aggr_registry_t *r) { return r ? r->n_entries : 0; }

const gnn_aggr_def_t *gnn_aggr_registry_at(const gnn_aggr_registry_t *r, int i)
{
    return r && i >= 0 && i < r->n_entries ? &r->entries[i]->def : NULL;
}

const char *gnn_aggr_registry_origin(const gnn_aggr_registry_t *r, const gnn_aggr_def_t *def)
{
    for (int i = 0; r && def && i < r->n_entries; i++)
        if (&r->entries[i]->def == def) return origin_name(r, r->entries[i]->origin);
    return "?";
}
