/*
 * JSON string escaping and number formatting (see json.h).
 */
#include "graph/base/json.h"

#include <math.h>

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
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
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
