/* SPDX-License-Identifier: Apache-2.0 */
/* Test child processes, tracked by PID so a failing test still stops them. */
#include "proc.h"
#include "waitscale.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 64

static pid_t children[MAX_CHILDREN];
static bool atexit_done;

static void track(pid_t pid, bool add) {
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (add ? children[i] == 0 : children[i] == pid) {
            children[i] = add ? pid : 0;
            return;
        }
}

void proc_stop_all(void) {
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
            children[i] = 0;
        }
}

pid_t proc_spawn(char *const argv[], const char *log_path) {
    return proc_spawn_in_netns(argv, log_path, NULL);
}

static pid_t spawn(char *const argv[], char *const envp[], const char *log_path,
                   const char *netns_path) {
    pid_t pid;

    if (!atexit_done) {
        atexit(proc_stop_all);
        atexit_done = true;
    }
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (netns_path) {
            int ns = open(netns_path, O_RDONLY | O_CLOEXEC);
            if (ns < 0 || setns(ns, CLONE_NEWNET) < 0)
                _exit(126);
        }
        if (log_path) {
            int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
            }
        }
        if (envp)
            execve(argv[0], argv, envp);
        else
            execv(argv[0], argv);
        _exit(127);
    }
    if (pid > 0)
        track(pid, true);
    return pid;
}

pid_t proc_spawn_in_netns(char *const argv[], const char *log_path, const char *netns_path) {
    return spawn(argv, NULL, log_path, netns_path);
}

pid_t proc_spawn_env(char *const argv[], char *const envp[], const char *log_path) {
    return spawn(argv, envp, log_path, NULL);
}

int proc_run(char *const argv[], const char *log_path) {
    pid_t pid = proc_spawn(argv, log_path);
    int status;

    if (pid < 0)
        return -errno;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    track(pid, false);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int proc_stop(pid_t pid, int timeout_ms) {
    int status = 0;

    kill(pid, SIGTERM);
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0)
            return -errno;
        if (waited >= wait_scaled_ms(timeout_ms)) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    track(pid, false);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

const char *proc_bin(const char *rel) {
    static char buf[4096];

    snprintf(buf, sizeof(buf), "%s/%s", RAILGATE_BIN_DIR, rel);
    return buf;
}

long file_length(const char *path) {
    struct stat st;

    return stat(path, &st) < 0 ? 0 : (long)st.st_size;
}

bool file_contains(const char *path, const char *needle) {
    return file_contains_from(path, 0, needle);
}

bool file_contains_from(const char *path, long offset, const char *needle) {
    FILE *f = fopen(path, "re");
    char *line = NULL;
    size_t n = 0;
    bool found = false;

    if (!f)
        return false;
    if (fseek(f, offset, SEEK_SET) < 0) {
        fclose(f);
        return false;
    }
    while (!found && getline(&line, &n, f) >= 0)
        found = strstr(line, needle) != NULL;
    free(line);
    fclose(f);
    return found;
}

size_t dir_entries(const char *path) {
    size_t n = 0;
    struct dirent *de;
    DIR *d = opendir(path);

    while (d && (de = readdir(d)))
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

int proc_maps_library(pid_t pid, const char *soname) {
    char path[64], line[4352];
    size_t n = strlen(soname);
    int found = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -errno;
    while (!found && fgets(line, sizeof(line), f)) {
        char *file = strchr(line, '/'), *base = file ? strrchr(file, '/') + 1 : NULL;
        found = base && strncmp(base, soname, n) == 0;
    }
    fclose(f);
    return found;
}

unsigned proc_fd_count(pid_t pid) {
    char path[64];

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    return (unsigned)dir_entries(path);
}

unsigned proc_stable_fd_count(pid_t pid, unsigned settle) {
    unsigned last = proc_fd_count(pid), same = 0;

    for (int i = 0; i < 500 && same < settle; i++) {
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        unsigned now = proc_fd_count(pid);
        same = now == last ? same + 1 : 0;
        last = now;
    }
    return last;
}

long proc_rss_kb(pid_t pid) {
    char path[64], line[256];
    long kb = -1;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

double now_us(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int double_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

double percentile(double *v, size_t n, double p) {
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), double_cmp);
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

int tmpdir_make(char *buf, size_t n, const char *prefix) {
    if ((size_t)snprintf(buf, n, "/tmp/%s-XXXXXX", prefix) >= n)
        return -ENAMETOOLONG;
    return mkdtemp(buf) ? 0 : -errno;
}

static int remove_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    return remove(p);
}

void tmpdir_remove(const char *path) {
    if (path && path[0])
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int file_read_line(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "re");
    bool ok = f && fgets(buf, (int)n, f);

    if (f)
        fclose(f);
    if (!ok)
        return -ENOENT;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}
