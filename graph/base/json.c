/*
 * JSON string escaping and number formatting (see json.h).
 *
 * Strings are bytes from files and command lines: valid UTF-8 passes
 * through, and any other byte from 0x80 up is written as the code point of
 * the same value (\u0080..\u00ff), so the output is always valid JSON.
 */
#include "graph/base/json.h"

#include <math.h>

/* Length of the valid UTF-8 sequence of two to four bytes at p, or 0. */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    int n;
    unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;      /* no overlong forms */
        if (c == 0xED) hi = 0x9F;      /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;      /* nothing past U+10FFFF */
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0; /* a NUL ends the check too */
    return n;
}

void gnn_json_string(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20) {
                fprintf(out, "\\u%04x", *p);
            } else if (*p >= 0x80) {
                int n = utf8_len(p);
                if (n == 0) {
                    fprintf(out, "\\u%04x", *p); /* not UTF-8: the byte as U+0080..U+00FF */
                } else {
                    fwrite(p, 1, (size_t)n, out);
                    p += n - 1;
                }
            } else {
                fputc(*p, out);
            }
        }
    }
    fputc('"', out);
}

void gnn_json_number(FILE *out, double v)
{
    if (!isfinite(v))
        fputs("null", out);
    else if (v == (double)(long long)v && fabs(v) < 1e15)
        fprintf(out, "%lld", (long long)v);
    else
        fprintf(out, "%.9g", v);
}
