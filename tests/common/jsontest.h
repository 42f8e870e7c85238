/*
 * A small JSON reader for tests that check the JSON a command prints
 * (gnn-train --log-json, gnn-partition --info --json): skip whitespace,
 * skip one value (objects, arrays, strings, numbers, true/false/null),
 * telling malformed text by a NULL; find a member of a flat object line and
 * read it as a number. Include after <cmocka.h>.
 */
#ifndef GNN_TESTS_COMMON_JSONTEST_H
#define GNN_TESTS_COMMON_JSONTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline const char *tu_json_ws(const char *p)
{
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

/* Skip one JSON value at p; NULL when it is not valid JSON. */
static inline const char *tu_json_skip(const char *p)
{
    p = tu_json_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = tu_json_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            p = tu_json_ws(p);
            if (close == '}') {
                if (*p != '"') return NULL;
                p = tu_json_skip(p);
                if (!p) return NULL;
                p = tu_json_ws(p);
                if (*p++ != ':') return NULL;
            }
            p = tu_json_skip(p);
            if (!p) return NULL;
            p = tu_json_ws(p);
            if (*p == close) return p + 1;
            if (*p++ != ',') return NULL;
        }
    }
    if (*p == '"') {
        for (p++; *p != '"'; p++) {
            if (!*p || *p == '\n') return NULL;
            if (*p == '\\' && !*++p) return NULL;
        }
        return p + 1;
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++)
        if (!strncmp(p, words[i], strlen(words[i]))) return p + strlen(words[i]);
    /* A number: -?digits(.digits)?([eE][+-]?digits)? */
    const char *q = p;
    if (*q == '-') q++;
    if (*q < '0' || *q > '9') return NULL;
    while (*q >= '0' && *q <= '9') q++;
    if (*q == '.') {
        if (q[1] < '0' || q[1] > '9') return NULL;
        for (q++; *q >= '0' && *q <= '9'; q++) {}
    }
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-') q++;
        if (*q < '0' || *q > '9') return NULL;
        while (*q >= '0' && *q <= '9') q++;
    }
    return q;
}

/* Value of top-level member key of a flat object line (the text after its
 * colon, whitespace skipped), or NULL when there is none. */
static inline const char *tu_json_get(const char *line, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    for (const char *p = strstr(line, pat); p; p = strstr(p + 1, pat)) {
        const char *v = tu_json_ws(p + strlen(pat));
        if (*v == ':') return tu_json_ws(v + 1);
    }
    return NULL;
}

/* The number member key of line holds; fails the test when there is no
 * such member or it is not a number. */
static inline double tu_json_num(const char *line, const char *key)
{
    const char *v = tu_json_get(line, key);
    if (!v) fail_msg("no \"%s\" in %s", key, line);
    char *end;
    double d = strtod(v, &end);
    if (end == v) fail_msg("\"%s\" is not a number in %s", key, line);
    return d;
}

#endif
