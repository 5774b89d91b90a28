/*
 * libFuzzer target for airlock-agent's reading of an HTTP request on its
 * own socket (agent/ag_main.c: ag_read_request, and the path's session
 * id as ag_serve takes it): POST /v1/sessions/{id}/ask and
 * GET /v1/sessions/{id}, from whatever reaches the socket.
 *
 * Input: the bytes the client sends, then the connection closed (at
 * most 60000 bytes: a pipe holds them all).  Besides the sanitizers it
 * checks, for a request read whole:
 *
 *   - the method and path are NUL-terminated within their fields, the
 *     path without its query;
 *   - the body is inside the bytes read and NUL-terminated, its length
 *     the Content-Length, and no more than AG_REQUEST_MAX bytes were
 *     read in all;
 *   - a session id taken from the path is 1 to AG_ID_MAX of the
 *     characters ag_id_ok() allows, within the path;
 *   - X-Airlock-User, as kept, is "" or one name ag_api_user_ok()
 *     takes, NUL-terminated within its field.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define main  ag_main_main

#include "ag_main.c"

#undef main


#define FUZZ_SEND_MAX  60000


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int            rc, fds[2];
    char          *p;
    size_t         n, i;
    const char    *why;
    ag_request_t   req;

    if (size > FUZZ_SEND_MAX) {
        return 0;
    }

    if (pipe(fds) != 0) {
        abort();
    }

    if (size && write(fds[1], data, size) != (ssize_t) size) {
        abort();
    }
    close(fds[1]);

    why = NULL;
    rc = ag_read_request(fds[0], &req, &why);
    close(fds[0]);

    if (rc != 0) {
        if (why == NULL || rc != -1) {
            abort();
        }
        free(req.buf);
        return 0;
    }

    if (memchr(req.method, '\0', sizeof(req.method)) == NULL
        || memchr(req.path, '\0', sizeof(req.path)) == NULL
        || strchr(req.path, '?') != NULL)
    {
        abort();
    }

    if (req.len > AG_REQUEST_MAX || req.len > size
        || req.body < req.buf
        || req.body + req.body_len > req.buf + req.len
        || req.body[req.body_len] != '\0')
    {
        abort();
    }

    if (memchr(req.user, '\0', sizeof(req.user)) == NULL
        || (req.user[0] != '\0'
            && !ag_api_user_ok(req.user, strlen(req.user))))
    {
        abort();
    }

    /* as ag_serve() takes the session from the path */
    if (strncmp(req.path, "/v1/sessions/", 13) == 0) {
        p = req.path + 13;
        n = strcspn(p, "/");

        if (ag_id_ok(p, n)) {
            if (n == 0 || n > AG_ID_MAX) {
                abort();
            }

            for (i = 0; i < n; i++) {
                if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
                           "vwxyz0123456789_-", p[i]) == NULL
                    || p[i] == '\0')
                {
                    abort();
                }
            }
        }
    }

    free(req.buf);

    return 0;
}
