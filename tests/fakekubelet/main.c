/* SPDX-License-Identifier: Apache-2.0 */
/* railgate-fakekubelet: run a device plugin under the fake kubelet and show what it serves. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "fakekubelet.h"
#include "strv.h"

typedef struct Args {
    const char *dir;
    unsigned wait;
    char **allocs; /* "resource=count" */
    char **pods;   /* "ns/name=resource:id[,id...]", as PodResources shows them */
    bool serve;    /* after the allocations, serve until SIGTERM or SIGINT */
    int timeout_ms;
    char **cmd;
} Args;

static int parse(int argc, char **argv, Args *a) {
    static const struct option opts[] = {
        {"kubelet-dir", required_argument, NULL, 'd'},
        {"wait", required_argument, NULL, 'w'},
        {"allocate", required_argument, NULL, 'a'},
        {"timeout-ms", required_argument, NULL, 't'},
        {"pod", required_argument, NULL, 'p'},
        {"serve", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    int c;

    while ((c = getopt_long(argc, argv, "+d:w:a:t:p:sh", opts, NULL)) >= 0)
        switch (c) {
        case 'd':
            a->dir = optarg;
            break;
        case 'w':
            a->wait = (unsigned)atoi(optarg);
            break;
        case 'a':
            if (strv_push(&a->allocs, optarg) < 0)
                return -ENOMEM;
            break;
        case 't':
            a->timeout_ms = atoi(optarg);
            break;
        case 'p':
            if (strv_push(&a->pods, optarg) < 0)
                return -ENOMEM;
            break;
        case 's':
            a->serve = true;
            break;
        default:
            fprintf(stderr, "usage: railgate-fakekubelet --kubelet-dir DIR [--wait N] "
                            "[--allocate RESOURCE=COUNT]... [--timeout-ms MS] "
                            "[--pod NS/NAME=RESOURCE:ID[,ID]...]... [--serve] -- PLUGIN ARGS...\n");
            return -EINVAL;
        }
    if (!a->dir || optind >= argc) {
        fprintf(stderr, "railgate-fakekubelet: --kubelet-dir and a plugin command are needed\n");
        return -EINVAL;
    }
    a->cmd = &argv[optind];
    return 0;
}

static pid_t spawn(char **cmd) {
    pid_t pid = fork();

    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(cmd[0], cmd);
        fprintf(stderr, "exec %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

static int wait_resources(FakeKubelet *k, unsigned n, int timeout_ms, char ***ret) {
    for (int waited = 0;; waited += 20) {
        char **l = NULL;
        if (fk_resources(k, &l) < 0)
            return -ENOMEM;
        if (strv_length(l) >= n) {
            *ret = l;
            return 0;
        }
        strv_free(l);
        if (waited >= timeout_ms)
            return -ETIMEDOUT;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
}

static void print_resource(FakeKubelet *k, const char *res) {
    FkDevice *d = NULL;
    size_t n = 0;
    bool pref = false, prestart = false;

    if (fk_devices(k, res, &d, &n, NULL) < 0)
        return;
    fk_options(k, res, &pref, &prestart);
    printf("resource %s (endpoint %s, preferred allocation %s): %zu units\n", res,
           fk_endpoint(k, res), pref ? "yes" : "no", n);
    for (size_t i = 0; i < n; i++)
        printf("  %-14s %-9s numa=%d\n", d[i].id, d[i].healthy ? "Healthy" : "Unhealthy",
               d[i].numa);
    free(d);
}

static int allocate(FakeKubelet *k, const char *spec) {
    _cleanup_free_ char *res = strdup(spec);
    char *eq = res ? strrchr(res, '=') : NULL;
    FkDevice *d = NULL;
    size_t n = 0;
    char **avail = NULL, **chosen = NULL;
    V1beta1__AllocateResponse *ar = NULL;
    RgError err = {0};
    int r;

    if (!eq)
        return -EINVAL;
    *eq = 0;
    r = fk_devices(k, res, &d, &n, NULL);
    for (size_t i = 0; r >= 0 && i < n; i++)
        if (d[i].healthy)
            r = strv_push(&avail, d[i].id);
    free(d);
    if (r >= 0)
        r = fk_preferred(k, res, avail, strv_length(avail), NULL, 0, atoi(eq + 1), &chosen, &err);
    if (r >= 0) {
        _cleanup_free_ char *j = strv_join(chosen, ",");
        printf("GetPreferredAllocation %s size %s -> %s\n", res, eq + 1, j ? j : "?");
        r = fk_allocate(k, res, chosen, strv_length(chosen), &ar, &err);
    }
    if (r < 0)
        printf("Allocate %s failed: %s\n", res, err.msg);
    else {
        V1beta1__ContainerAllocateResponse *c = ar->container_responses[0];
        printf("Allocate %s:\n", res);
        for (size_t i = 0; i < c->n_envs; i++)
            printf("  env    %s=%s\n", c->envs[i]->key, c->envs[i]->value);
        for (size_t i = 0; i < c->n_devices; i++)
            printf("  device %s (host %s, %s)\n", c->devices[i]->container_path,
                   c->devices[i]->host_path, c->devices[i]->permissions);
        for (size_t i = 0; i < c->n_cdi_devices; i++)
            printf("  cdi    %s\n", c->cdi_devices[i]->name);
        protobuf_c_message_free_unpacked(&ar->base, NULL);
    }
    strv_free(avail);
    strv_free(chosen);
    return r;
}

/* "ns/name=resource:id[,id...]": the pod, as PodResources shows it. */
static int pod_set(FakeKubelet *k, const char *spec) {
    _cleanup_free_ char *s = strdup(spec);
    char *slash = s ? strchr(s, '/') : NULL, *eq = s ? strchr(s, '=') : NULL, *colon;
    char **ids = NULL;
    int r = 0;

    if (!slash || !eq || eq < slash || !(colon = strrchr(eq, ':')))
        return -EINVAL;
    *slash = *eq = *colon = 0;
    for (char *id = strtok(colon + 1, ","); r >= 0 && id; id = strtok(NULL, ","))
        r = strv_push(&ids, id);
    if (r >= 0)
        r = fk_pod_set(k, s, slash + 1, eq + 1, ids, strv_length(ids));
    if (r >= 0)
        printf("pod %s/%s holds %zu unit(s) of %s\n", s, slash + 1, strv_length(ids), eq + 1);
    strv_free(ids);
    return r;
}

/* Until SIGTERM or SIGINT. */
static void serve(void) {
    sigset_t set;
    int sig;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    printf("serving until SIGTERM\n");
    fflush(stdout);
    sigwait(&set, &sig);
}

int main(int argc, char **argv) {
    Args a = {.wait = 1, .timeout_ms = 20000};
    FakeKubelet *k = NULL;
    char **res = NULL;
    int status = 0, r, rc = 0;

    signal(SIGPIPE, SIG_IGN);
    if (parse(argc, argv, &a) < 0)
        return 2;
    r = fk_start(a.dir, &k);
    if (r < 0) {
        fprintf(stderr, "fake kubelet: %s\n", strerror(-r));
        return 1;
    }
    printf("fake kubelet serving %s/device-plugins/kubelet.sock\n", a.dir);
    fflush(stdout);
    pid_t pid = spawn(a.cmd);
    r = wait_resources(k, a.wait, a.timeout_ms, &res);
    if (r < 0) {
        fprintf(stderr, "fake kubelet: %u resources did not register in %d ms\n", a.wait,
                a.timeout_ms);
        rc = 1;
    }
    for (size_t i = 0; res && res[i]; i++)
        print_resource(k, res[i]);
    for (size_t i = 0; rc == 0 && a.allocs && a.allocs[i]; i++)
        if (allocate(k, a.allocs[i]) < 0)
            rc = 1;
    for (size_t i = 0; rc == 0 && a.pods && a.pods[i]; i++)
        if (pod_set(k, a.pods[i]) < 0) {
            fprintf(stderr, "fake kubelet: bad --pod %s\n", a.pods[i]);
            rc = 1;
        }
    if (rc == 0 && a.serve)
        serve();
    fflush(stdout);
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    printf("plugin exited with status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    strv_free(res);
    strv_free(a.allocs);
    strv_free(a.pods);
    fk_stop(k);
    return rc;
}
