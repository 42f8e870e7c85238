/*
 * Reading text input line by line, plain or gzip-compressed, fast.
 *
 * Inputs of the converters (OGB csv.gz files, edge lists, METIS files) are
 * read through one reader: gzip is detected by its magic bytes, data is
 * read in 4 MiB blocks, lines are found with memchr and handed out in place
 * (no copy for lines inside a block). A truncated gzip stream is an error,
 * never a silently shorter input. Line numbers are tracked so every parse
 * error names FILE:LINE.
 *
 * The number parsers are strict (the whole token must be a number) and
 * faster than strtoll/strtof for the plain decimals that dominate these
 * files; anything unusual in a float falls back to strtof.
 */
#ifndef GNN_DATASETS_TEXTIO_H
#define GNN_DATASETS_TEXTIO_H

#include <stddef.h>
#include <stdint.h>

typedef struct gnn_text gnn_text_t;

/* Open path (plain or gzip). GNN_ENOENT / GNN_EIO with the path. */
int gnn_text_open(const char *path, gnn_text_t **out);
/* Read from memory (not copied; must outlive the reader); name is used in
 * messages. gzip is detected here too. */
int gnn_text_open_mem(const void *data, size_t size, const char *name, gnn_text_t **out);
void gnn_text_close(gnn_text_t *t);

/*
 * Next line, without its "\n" or "\r\n", NUL-terminated, valid until the
 * next call. Returns 1 with a line, 0 at the end of input, or a negative
 * code: GNN_EFORMAT for a truncated or corrupt gzip stream, a NUL byte in
 * the text, or a line longer than 64 MiB; GNN_EIO for a read error.
 */
int gnn_text_next_line(gnn_text_t *t, char **line, size_t *len);

/* 1-based number of the line last returned (0 before the first). */
int64_t gnn_text_line(const gnn_text_t *t);
const char *gnn_text_name(const gnn_text_t *t);
/* Uncompressed bytes handed out so far (for MB/s figures). */
int64_t gnn_text_bytes(const gnn_text_t *t);
/* Size of the input file on disk (compressed size for gzip), -1 unknown. */
int64_t gnn_text_file_size(const gnn_text_t *t);
/* Bytes of the input file consumed so far (compressed for gzip). */
int64_t gnn_text_file_pos(const gnn_text_t *t);

/* Record GNN_EFORMAT as "NAME:LINE: message" for the current line. */
int gnn_text_fail(const gnn_text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Token parsers over [*p, end): skip leading spaces and tabs, parse one
 * number, and leave *p after it. The caller checks what follows (a
 * separator or the end). Return 0, or GNN_EFORMAT / GNN_ERANGE without
 * recording an error (the caller words it with the line).
 */
int gnn_parse_i64(const char **p, const char *end, int64_t *v);
int gnn_parse_f32(const char **p, const char *end, float *v);
int gnn_parse_f64(const char **p, const char *end, double *v);

#endif
