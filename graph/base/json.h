/*
 * Minimal JSON output for machine-readable command results and logs
 * (`info --json`, `--log-json`): string escaping and number formatting that
 * stay valid JSON for every input (NaN and infinities become null).
 */
#ifndef GNN_BASE_JSON_H
#define GNN_BASE_JSON_H

#include <stdio.h>

/* Write s as a quoted JSON string with escapes (control characters, and
 * bytes that are not part of valid UTF-8 as \u00XX); NULL writes null. */
void gnn_json_string(FILE *out, const char *s);
/* Write a double with enough digits to round-trip; non-finite as null. */
void gnn_json_number(FILE *out, double v);

#endif
