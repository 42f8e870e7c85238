/*
 * Fuzz target for the OGB csv readers: the bytes are read as a (possibly
 * gzip) text file through the line reader, and every line goes through the
 * edge parser, the float-row parser and the integer parser. Nothing may
 * crash, overrun or leak, whatever the bytes.
 */
#include "datasets/ogb.h"
#include "datasets/textio.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gnn_text_t *t;
    if (gnn_text_open_mem(data, size, "fuzz.csv", &t) != 0) return 0;
    char *line;
    size_t len;
    float v[16];
    while (gnn_text_next_line(t, &line, &len) == 1) {
        int64_t s, d, n;
        gnn__ogb_parse_edge(line, len, &s, &d);
        gnn__ogb_parse_floats(line, len, v, 16, &n);
        const char *p = line;
        int64_t x;
        gnn_parse_i64(&p, line + len, &x);
    }
    gnn_text_close(t);
    return 0;
}
