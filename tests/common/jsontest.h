/*
 * A small JSON reader for tests that check the JSON a command prints
 * (gnn-train --log-json, gnn-partition --info --json): skip whitespace,
 * skip one value (objects, arrays, strings, numbers, true/false/null),
 * telling malformed text by a NULL.
 */
#ifndef GNN_TESTS_COMMON_JSONTEST_H
#define GNN_TESTS_COMMON_JSONTEST_H

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

#endif
