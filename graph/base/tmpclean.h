/*
 * Temporary outputs removed when a signal ends the process.
 *
 * Every command writes its output under a temporary name and renames it
 * when whole; a run stopped by SIGINT, SIGTERM or SIGHUP (Ctrl-C, a batch
 * system's time limit, mpirun ending a job) would otherwise leave that
 * temporary file or directory behind, possibly hundreds of MB. Register it
 * while it exists; on one of those signals the handler removes every
 * registered path (a directory with the files in it, one level deep), then
 * lets the signal take its previous course.
 */
#ifndef GNN_BASE_TMPCLEAN_H
#define GNN_BASE_TMPCLEAN_H

#include <stddef.h>

/* Register path (a file, or with is_dir a directory of files); returns a
 * handle > 0, or 0 when the path is too long or every slot (8) is taken
 * (the output then is not cleaned up on a signal, nothing else changes). */
int gnn_tmp_register(const char *path, int is_dir);

/* Forget a handle (the path was renamed or removed); 0 is ignored. */
void gnn_tmp_unregister(int handle);

/* Whether an output may be renamed over path: 0 when nothing is there or
 * what is there is of the output's kind (a regular file, or with is_dir a
 * directory; or a symbolic link, which the rename replaces, not its
 * target). Anything else (a device such as /dev/null, a pipe, a socket, a
 * directory where a file goes) would be replaced by the output: GNN_EIO
 * with a message naming opt (the option, or NULL) and path. */
int gnn_output_replaceable(const char *opt, const char *path, int is_dir);

/* Whether new files can be made in directory dir: it exists, is a
 * directory, and may be written and searched. Otherwise GNN_ENOENT (it
 * does not exist, or is not a directory) or GNN_EIO (no permission), with
 * a message that starts with what (the option and its path, say). */
int gnn_output_dir_check(const char *what, const char *dir);

/* The directory path goes in, into buf of size bytes: "." for a bare
 * name, "/" for a name at the root, trailing slashes ignored ("a/b/" is
 * in "a"); path is not changed. GNN_EINVAL when it does not fit. */
int gnn_path_dir(const char *path, char *buf, size_t size);

/* Whether paths a and b name the same file: the same device and inode
 * where both exist; neither existing, the same path once their
 * directories are resolved (two outputs that would collide). */
int gnn_same_file(const char *a, const char *b);

#endif
