/* SPDX-License-Identifier: Apache-2.0 */
/* Child processes for tests: started with a PID, stopped by that PID, never by name. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* fork+exec argv with stdout/stderr appended to log_path (NULL: inherit). */
pid_t proc_spawn(char *const argv[], const char *log_path);
/* The same, in the network namespace at netns_path (/run/netns/<name>). */
pid_t proc_spawn_in_netns(char *const argv[], const char *log_path, const char *netns_path);
/* The same, with exactly envp as its environment. */
pid_t proc_spawn_env(char *const argv[], char *const envp[], const char *log_path);
/* SIGTERM, wait up to timeout_ms, then SIGKILL. Returns the exit status
 * (WEXITSTATUS) or 128+signal. */
/* Spawn argv as proc_spawn does and wait for it: its exit status (128 +
 * signal if killed), or -errno if it could not be started. */
int proc_run(char *const argv[], const char *log_path);
int proc_stop(pid_t pid, int timeout_ms);
/* Kill every process started by proc_spawn and still running (for atexit). */
void proc_stop_all(void);
/* Path of a built binary: RAILGATE_BIN_DIR/<rel>. */
const char *proc_bin(const char *rel);
/* The first line of path, without its newline, into buf; -ENOENT if it cannot be read. */
int file_read_line(const char *path, char *buf, size_t n);
/* Does the file at path contain needle (in one line)? */
bool file_contains(const char *path, const char *needle);
/* The same from byte offset on (what was written since file_length()
 * said offset); file_length() is 0 for a file not there. */
bool file_contains_from(const char *path, long offset, const char *needle);
long file_length(const char *path);

/* A fresh directory /tmp/<prefix>-XXXXXX into buf (n bytes); 0 or -errno. */
int tmpdir_make(char *buf, size_t n, const char *prefix);
/* Remove a directory tree (never following a symlink out of it); NULL-safe. */
void tmpdir_remove(const char *path);

/* Entries of a directory, "." and dot files not counted; 0 if it cannot be read. */
size_t dir_entries(const char *path);
/* 1 when pid maps a file whose name starts with soname ("libcurl.so."), 0 when
 * not, -errno when its /proc/<pid>/maps cannot be read. */
int proc_maps_library(pid_t pid, const char *soname);
/* Open file descriptors of pid, from /proc/<pid>/fd. */
unsigned proc_fd_count(pid_t pid);
/* The fd count once it holds still for `settle` samples 20 ms apart (a
 * ListAndWatch update or a netlink lookup may hold a socket for a moment);
 * after 10 s, the last count. */
unsigned proc_stable_fd_count(pid_t pid, unsigned settle);
/* VmRSS of pid in kB, or -1. */
long proc_rss_kb(pid_t pid);

/* Timing for benchmarks: CLOCK_MONOTONIC in microseconds, and the p-th
 * percentile (0-100) of v, which it sorts. */
double now_us(void);
double percentile(double *v, size_t n, double p);
