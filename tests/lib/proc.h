/* Child processes for tests: started with a PID, stopped by that PID, never by name. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* fork+exec argv with stdout/stderr appended to log_path (NULL: inherit). */
pid_t proc_spawn(char *const argv[], const char *log_path);
/* The same, in the network namespace at netns_path (/run/netns/<name>). */
pid_t proc_spawn_in_netns(char *const argv[], const char *log_path, const char *netns_path);
/* SIGTERM, wait up to timeout_ms, then SIGKILL. Returns the exit status
 * (WEXITSTATUS) or 128+signal. */
int proc_stop(pid_t pid, int timeout_ms);
/* Kill every process started by proc_spawn and still running (for atexit). */
void proc_stop_all(void);
/* Path of a built binary: RAILGATE_BIN_DIR/<rel>. */
const char *proc_bin(const char *rel);
/* Does the file at path contain needle? */
bool file_contains(const char *path, const char *needle);
