/*
 * --metrics-port: a minimal HTTP/1.0 responder on 127.0.0.1 that answers GET /metrics with
 * the wheel's Prometheus text (tw_metrics_text), one connection at a time, on a thread of
 * its own. Anything else gets 404. Enough for a Prometheus scrape or curl; not a web server.
 */
#define _GNU_SOURCE /* SOCK_CLOEXEC, accept4 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "billing.h"

#define POLL_MS 100 /* how soon the thread sees metrics_http_stop */

typedef struct server_args {
    metrics_http *m;
    tw_wheel *w;
} server_args;

static server_args args;

/* The wheel's text in a buffer of the caller's to free; NULL when it could not be had. */
static char *metrics_text(tw_wheel *w, size_t *len) {
    size_t size = 16384, needed = 0;
    for (;;) {
        char *buf = malloc(size);
        if (buf == NULL) return NULL;
        tw_status s = tw_metrics_text(w, buf, size, &needed);
        if (s == TW_OK) {
            *len = needed - 1;
            return buf;
        }
        free(buf);
        if (s != TW_ERR_TOO_SMALL) return NULL;
        size = needed + 1024; /* the text grows as the wheel runs */
    }
}

static void send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0) return;
        data += n;
        len -= (size_t)n;
    }
}

static void respond(int fd, tw_wheel *w) {
    char request[2048];
    ssize_t n = recv(fd, request, sizeof request - 1, 0);
    if (n <= 0) return;
    request[n] = '\0';
    size_t len = 0;
    char *body = NULL;
    if (strncmp(request, "GET /metrics ", 13) == 0) body = metrics_text(w, &len);
    char head[256];
    int head_len = body != NULL
        ? snprintf(head, sizeof head,
                   "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; "
                   "charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", len)
        : snprintf(head, sizeof head,
                   "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    send_all(fd, head, (size_t)head_len);
    if (body != NULL) send_all(fd, body, len);
    free(body);
}

static void *serve(void *arg) {
    server_args *a = arg;
    while (!atomic_load(&a->m->stop)) {
        struct pollfd p = {a->m->fd, POLLIN, 0};
        if (poll(&p, 1, POLL_MS) <= 0) continue;
        int fd = accept4(a->m->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        struct timeval timeout = {1, 0}; /* a client that sends nothing does not hold it up */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        respond(fd, a->w);
        close(fd);
    }
    return NULL;
}

/* A socket listening on 127.0.0.1:port; -1 on failure. */
static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int bound_port(int fd) {
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    return ntohs(addr.sin_port);
}

int metrics_http_start(metrics_http *m, tw_wheel *w, int port) {
    m->fd = listen_on(port);
    if (m->fd < 0) {
        fprintf(stderr, "billing: --metrics-port %d: ", port);
        perror("cannot listen on 127.0.0.1");
        return -1;
    }
    atomic_store(&m->stop, 0);
    args = (server_args){m, w};
    if (pthread_create(&m->thread, NULL, serve, &args) != 0) {
        close(m->fd);
        m->fd = -1;
        return -1;
    }
    printf("metrics: http://127.0.0.1:%d/metrics\n", bound_port(m->fd));
    fflush(stdout);
    return 0;
}

void metrics_http_stop(metrics_http *m) {
    if (m->fd < 0) return;
    atomic_store(&m->stop, 1);
    pthread_join(m->thread, NULL);
    close(m->fd);
    m->fd = -1;
}
