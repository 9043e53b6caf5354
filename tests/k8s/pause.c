/* SPDX-License-Identifier: Apache-2.0 */
/* The pod sandbox's process for tests/k8s: holds the pod's namespaces, reaps
 * orphans, exits on SIGINT or SIGTERM. Built with gcc -static into the local
 * pause image (tests/k8s/image.sh), since no image can be pulled. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) {
    (void)sig;
    _exit(0);
}

static void on_child(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

int main(void) {
    struct sigaction term = {.sa_handler = on_term}, child = {.sa_handler = on_child};

    if (getpid() != 1)
        return 1; /* only meaningful as a container's init */
    if (sigaction(SIGINT, &term, NULL) < 0 || sigaction(SIGTERM, &term, NULL) < 0 ||
        sigaction(SIGCHLD, &child, NULL) < 0)
        return 1;
    for (;;)
        pause();
}
