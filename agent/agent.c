/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's socket: root-only, one question per connection, a reader thread and workers. */
#include "agent.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "agentmetrics.h"
#include "agentproto.h"
#include "clock.h"
#include "failpoint.h"
#include "log.h"
#include "pb.h"
#include "strv.h"

enum { ID_STOP = 0, ID_LISTEN = 1, ID_CLIENT0 = 2 };

/* A question waiting for a worker, its connection with it. */
typedef struct Job {
    int fd;
    AgentRequest *req;
    uint64_t arrived_ms;
    struct Job *next;
} Job;

/* A connection that has not asked yet. */
typedef struct Client {
    int fd; /* -EBADF: a free slot */
    uint64_t deadline_ms;
} Client;

struct Agent {
    Holdings *h;
    char path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
    char tmp[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
    struct stat bound; /* the socket at path, once renamed there */
    int listen_fd, epoll_fd, stop_fd;
    unsigned request_ms, lookup_ms;
    Client clients[AGENT_MAX_CLIENTS];
    pthread_t reader;
    bool reader_started;
    pthread_t workers[AGENT_WORKERS];
    size_t n_workers;
    pthread_mutex_t lock; /* the queue and stopping */
    pthread_cond_t cond;
    Job *head, *tail;
    size_t queued;
    bool stopping;
};

const char *agent_socket(const Agent *a) {
    return a->path;
}

/* Answer on fd without waiting: the client reads one frame, and a client
 * that is gone costs nothing. */
static void reply(int fd, AgentStatus status, const char *message, const char *resource,
                  char *const *ids) {
    _cleanup_free_ uint8_t *buf = NULL;
    size_t len;

    if (agent_reply_pack(status, message, resource, ids, &buf, &len) < 0 &&
        agent_reply_pack(AGENT_STATUS__INTERNAL, "the answer does not fit a reply", NULL, NULL,
                         &buf, &len) < 0)
        return;
    (void)!send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void job_free(Job *j) {
    if (j->fd >= 0)
        close(j->fd);
    if (j->req)
        agent_request__free_unpacked(j->req, NULL);
    free(j);
}

/* ---- workers ---- */

static void answer(Agent *a, Job *j) {
    const AgentPodUnits *q = j->req->pod_units;
    PodRef pod = {.ns = q->namespace_, .name = q->name, .uid = q->uid};
    _cleanup_(strv_freep) char **ids = NULL;
    _cleanup_free_ char *resource = NULL;
    RgError err = {0};
    int ms = clock_left_ms(j->arrived_ms + a->lookup_ms), r;

    r = failpoint("agent-lookup"); /* a test holds the agent here */
    if (r < 0)
        rg_error(&err, r, AGENT_STATUS__INTERNAL, "failpoint %s", failpoint_name());
    else if (ms == 0)
        r = rg_error(&err, -ETIMEDOUT, AGENT_STATUS__UNAVAILABLE,
                     "the question waited %u s for a free worker (timeouts.podResourcesSeconds "
                     "of the node config): too many at once",
                     a->lookup_ms / 1000);
    else
        r = holdings_pod_units(a->h, &pod, ms, &ids, &resource, &err);
    if (r < 0) {
        if (!err.msg[0])
            rg_error(&err, r, AGENT_STATUS__INTERNAL, "%s", strerror(-r));
        if (streq(agent_status_name(err.code), "?") || err.code == AGENT_STATUS__OK)
            err.code = AGENT_STATUS__INTERNAL; /* never a status the CNI cannot read */
        log_warn(NULL, NULL, "node agent: pod %s/%s: %s", pod.ns, pod.name, err.msg);
        reply(j->fd, (AgentStatus)err.code, err.msg, NULL, NULL);
    } else {
        log_debug(NULL, NULL, "node agent: pod %s/%s holds %zu unit(s)%s%s", pod.ns, pod.name,
                  strv_length(ids), resource ? " of " : "", resource ? resource : "");
        reply(j->fd, AGENT_STATUS__OK, NULL, resource, ids);
    }
    /* from the question's arrival, the wait for a worker included */
    metrics_lookup_observe(agent_status_name(r < 0 ? err.code : AGENT_STATUS__OK),
                           (double)(clock_monotonic_ms() - j->arrived_ms) / 1e3);
}

static void *work(void *arg) {
    Agent *a = arg;

    for (;;) {
        pthread_mutex_lock(&a->lock);
        while (!a->head && !a->stopping)
            pthread_cond_wait(&a->cond, &a->lock);
        Job *j = a->stopping ? NULL : a->head;
        if (j) {
            a->head = j->next;
            a->tail = a->head ? a->tail : NULL;
            a->queued--;
        }
        pthread_mutex_unlock(&a->lock);
        if (!j)
            return NULL;
        answer(a, j);
        job_free(j);
    }
}

/* Hand a question (with its connection) to the workers; false when too many wait. */
static bool enqueue(Agent *a, int fd, AgentRequest *req) {
    Job *j = calloc(1, sizeof(*j));
    bool queued = false;

    if (!j)
        return false;
    *j = (Job){.fd = fd, .req = req, .arrived_ms = clock_monotonic_ms()};
    pthread_mutex_lock(&a->lock);
    if (a->queued < AGENT_MAX_QUEUED && !a->stopping) {
        if (a->tail)
            a->tail->next = j;
        else
            a->head = j;
        a->tail = j;
        a->queued++;
        queued = true;
        pthread_cond_signal(&a->cond);
    }
    pthread_mutex_unlock(&a->lock);
    if (!queued)
        free(j);
    return queued;
}

/* ---- the reader ---- */

static void client_drop(Agent *a, Client *c) {
    (void)epoll_ctl(a->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -EBADF;
}

/* The question is the workers' now, or answered here (a report, a refusal). */
static void take(Agent *a, int fd, AgentRequest *req) {
    if (req->body_case == AGENT_REQUEST__BODY_REPORT) {
        AgentCommand cmd = req->report->command;
        agent_report_received(req->report);
        reply(fd, AGENT_STATUS__OK, NULL, NULL, NULL);
        if (cmd == AGENT_COMMAND__ADD || cmd == AGENT_COMMAND__DEL || cmd == AGENT_COMMAND__GC)
            holdings_attachments_changed(a->h);
    } else if (enqueue(a, fd, req))
        return;
    else {
        log_warn(NULL, NULL, "node agent: %d questions wait already: answering BUSY",
                 AGENT_MAX_QUEUED);
        reply(fd, AGENT_STATUS__BUSY, "too many questions at once", NULL, NULL);
        metrics_lookup_observe(agent_status_name(AGENT_STATUS__BUSY), 0);
    }
    agent_request__free_unpacked(req, NULL);
    close(fd);
}

static void client_read(Agent *a, Client *c) {
    uint8_t buf[AGENT_MAX_REQUEST + 1];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    AgentRequest *req = NULL;
    RgError err = {0};
    ssize_t n = recvmsg(c->fd, &mh, 0);
    int fd = c->fd;

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) { /* gone without asking */
        client_drop(a, c);
        return;
    }
    if (mh.msg_flags & MSG_TRUNC)
        rg_error(&err, -EMSGSIZE, AGENT_STATUS__BAD_REQUEST, "request frame of more than %u bytes",
                 AGENT_MAX_REQUEST);
    else if (agent_request_parse(buf, (size_t)n, &req, &err) >= 0) {
        (void)epoll_ctl(a->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
        c->fd = -EBADF;
        take(a, fd, req);
        return;
    }
    log_warn(NULL, NULL, "node agent: refused a request: %s", err.msg);
    reply(fd, (AgentStatus)err.code, err.msg, NULL, NULL);
    client_drop(a, c);
}

static Client *client_slot(Agent *a) {
    for (size_t i = 0; i < AGENT_MAX_CLIENTS; i++)
        if (a->clients[i].fd < 0)
            return &a->clients[i];
    return NULL;
}

/* Root only: anyone else is told so, logged, and closed. */
static bool peer_is_root(int fd) {
    struct ucred cred = {.pid = 0};
    socklen_t len = sizeof(cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) >= 0 && cred.uid == 0)
        return true;
    log_warn(NULL, NULL, "node agent: refused a connection from uid %d (pid %d): only root may ask",
             len == sizeof(cred) ? (int)cred.uid : -1, (int)cred.pid);
    reply(fd, AGENT_STATUS__PERMISSION_DENIED, "only root may ask the node agent", NULL, NULL);
    return false;
}

static void accept_all(Agent *a) {
    for (;;) {
        int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0 && errno == EINTR)
            continue;
        if (fd < 0) {
            if (errno != EAGAIN && errno != ECONNABORTED)
                log_warn(NULL, NULL, "node agent: accept: %s", strerror(errno));
            return;
        }
        if (!peer_is_root(fd)) {
            close(fd);
            continue;
        }
        Client *c = client_slot(a);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};
        if (c) {
            ev.data.u32 = (uint32_t)(ID_CLIENT0 + (c - a->clients));
            if (epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0) {
                *c = (Client){.fd = fd, .deadline_ms = clock_monotonic_ms() + a->request_ms};
                continue;
            }
        }
        log_warn(NULL, NULL, "node agent: %d connections wait to be read: answering BUSY",
                 AGENT_MAX_CLIENTS);
        reply(fd, AGENT_STATUS__BUSY, "too many connections at once", NULL, NULL);
        close(fd);
    }
}

/* Drop the connections that asked nothing in time; the wait until the next such deadline. */
static int expire(Agent *a) {
    uint64_t now = clock_monotonic_ms(), next = UINT64_MAX;

    for (size_t i = 0; i < AGENT_MAX_CLIENTS; i++) {
        Client *c = &a->clients[i];
        if (c->fd < 0)
            continue;
        if (c->deadline_ms <= now) {
            log_info(NULL, NULL, "node agent: a connection asked nothing in %u s: dropped",
                     a->request_ms / 1000);
            client_drop(a, c);
        } else if (c->deadline_ms < next)
            next = c->deadline_ms;
    }
    return next == UINT64_MAX ? -1 : (int)(next - now > INT_MAX ? INT_MAX : next - now);
}

static void *read_questions(void *arg) {
    Agent *a = arg;
    struct epoll_event evs[16];

    for (;;) {
        int n = epoll_wait(a->epoll_fd, evs, ELEMENTSOF(evs), expire(a));
        if (n < 0 && errno != EINTR) {
            log_error(NULL, NULL, -errno, "node agent: epoll_wait failed: no more questions");
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            uint32_t id = evs[i].data.u32;
            if (id == ID_STOP)
                return NULL;
            if (id == ID_LISTEN)
                accept_all(a);
            else if (a->clients[id - ID_CLIENT0].fd >= 0)
                client_read(a, &a->clients[id - ID_CLIENT0]);
        }
    }
}

/* ---- start and stop ---- */

/* The state dir is root's and closed to others: make it so or refuse. */
static int state_dir_private(const char *dir) {
    struct stat st;

    if (stat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    if (st.st_uid != geteuid())
        return -EPERM;
    if ((st.st_mode & 077) == 0)
        return 0;
    if (chmod(dir, 0700) < 0)
        return -errno;
    log_info(NULL, NULL, "node agent: state dir %s was mode %04o: made 0700", dir,
             (unsigned)(st.st_mode & 07777));
    return 0;
}

static int bind_socket(Agent *a) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int r;

    if ((size_t)snprintf(a->tmp, sizeof(a->tmp), "%s.%d", a->path, (int)getpid()) >= sizeof(a->tmp))
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, a->tmp, strlen(a->tmp) + 1);
    (void)unlink(a->tmp);
    a->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (a->listen_fd < 0)
        return -errno;
    if (bind(a->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -errno;
    if (chmod(a->tmp, 0600) < 0 || listen(a->listen_fd, AGENT_BACKLOG) < 0 ||
        rename(a->tmp, a->path) < 0 || stat(a->path, &a->bound) < 0) {
        r = -errno;
        (void)unlink(a->tmp);
        return r;
    }
    return 0;
}

static int watch(Agent *a, int fd, uint32_t id) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = id};

    return epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static int threads_start(Agent *a) {
    int r = pthread_create(&a->reader, NULL, read_questions, a);

    if (r != 0)
        return -r;
    (void)pthread_setname_np(a->reader, "rg-agent");
    a->reader_started = true;
    for (; a->n_workers < AGENT_WORKERS; a->n_workers++) {
        r = pthread_create(&a->workers[a->n_workers], NULL, work, a);
        if (r != 0)
            return -r;
        (void)pthread_setname_np(a->workers[a->n_workers], "rg-agent-work");
    }
    return 0;
}

int agent_start(const NodeConfig *c, Holdings *h, Agent **ret) {
    _cleanup_(agent_stopp) Agent *a = calloc(1, sizeof(*a));
    int r;

    if (!a)
        return -ENOMEM;
    a->h = h;
    a->listen_fd = a->epoll_fd = a->stop_fd = -EBADF;
    a->request_ms = c->timeouts.agent_s * 1000;
    a->lookup_ms = c->timeouts.pod_resources_s * 1000;
    for (size_t i = 0; i < AGENT_MAX_CLIENTS; i++)
        a->clients[i].fd = -EBADF;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->cond, NULL);
    r = agent_socket_path(c->state_dir, a->path, sizeof(a->path));
    if (r >= 0)
        r = state_dir_private(c->state_dir);
    if (r >= 0)
        r = bind_socket(a);
    if (r < 0)
        return r;
    a->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (a->epoll_fd < 0 || a->stop_fd < 0)
        return -errno;
    r = watch(a, a->stop_fd, ID_STOP);
    if (r >= 0)
        r = watch(a, a->listen_fd, ID_LISTEN);
    if (r >= 0)
        r = threads_start(a);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(a);
    return 0;
}

static bool still_ours(const Agent *a) {
    struct stat st;

    return a->bound.st_ino && stat(a->path, &st) == 0 && st.st_dev == a->bound.st_dev &&
           st.st_ino == a->bound.st_ino;
}

void agent_stop(Agent *a) {
    if (!a)
        return;
    if (a->reader_started) {
        (void)!write(a->stop_fd, &(uint64_t){1}, sizeof(uint64_t));
        pthread_join(a->reader, NULL);
    }
    pthread_mutex_lock(&a->lock);
    a->stopping = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
    if (a->n_workers)
        holdings_stop(a->h); /* a worker waiting for kubelet returns now */
    for (size_t i = 0; i < a->n_workers; i++)
        pthread_join(a->workers[i], NULL);
    for (Job *j = a->head, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    for (size_t i = 0; i < AGENT_MAX_CLIENTS; i++)
        if (a->clients[i].fd >= 0)
            close(a->clients[i].fd);
    if (still_ours(a))
        (void)unlink(a->path);
    if (a->listen_fd >= 0)
        close(a->listen_fd);
    if (a->epoll_fd >= 0)
        close(a->epoll_fd);
    if (a->stop_fd >= 0)
        close(a->stop_fd);
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int agent_serve(const NodeConfig *c, Holdings *h, Agent **ret) {
    int r = agent_start(c, h, ret);

    if (r == -EPERM)
        return log_error(NULL, NULL, r,
                         "node agent: state dir %s is not this user's: refusing to serve the "
                         "CNI from it",
                         c->state_dir);
    if (r < 0)
        return log_error(NULL, NULL, r, "node agent: cannot serve %s/" AGENT_SOCKET_NAME,
                         c->state_dir);
    log_info(NULL, NULL, "node agent answering the CNI at %s", agent_socket(*ret));
    return 0;
}
