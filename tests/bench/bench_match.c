/*
 * Route lookup micro-benchmark: ns per decision for policies of 10, 1,000
 * and 10,000 routes, measured in one run and reported as a ratio to the
 * 10-route policy (the machine is shared; absolute numbers drift, ratios
 * measured side by side do not).
 *
 * "lookup" is target parsing plus the trie walk; "decide" is the whole
 * al_decide: parse, walk, client, param regex, query checks and the
 * upstream URI.  Routes use 16 distinct param patterns (policies repeat
 * patterns; the compiler shares identical ones).  Rounds are interleaved
 * and the best round is kept.
 *
 *   bench_match [ROUNDS]    (default 7)
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "airlock.h"


#define NREQ  4096


typedef struct {
    size_t          nroutes;
    al_policy_t    *p;
    char          (*targets)[128];
    double          lookup_ns;
    double          decide_ns;
} bench_t;


static al_policy_t *bench_policy(size_t n);
static double bench_now(void);
static double bench_lookup(bench_t *b);
static double bench_decide(bench_t *b);


static al_decision_t  dec;
static al_path_t      path;
static al_query_t     query;
static volatile size_t  sink;


int
main(int argc, char **argv)
{
    int       round, rounds;
    size_t    i, k;
    double    t;
    bench_t   b[3];
    size_t    sizes[3] = { 10, 1000, 10000 };

    rounds = argc > 1 ? atoi(argv[1]) : 7;
    if (rounds < 1) {
        rounds = 1;
    }

    for (i = 0; i < 3; i++) {
        b[i].nroutes = sizes[i];
        b[i].p = bench_policy(sizes[i]);
        if (b[i].p == NULL) {
            return 1;
        }
        b[i].targets = malloc(NREQ * sizeof(*b[i].targets));
        if (b[i].targets == NULL) {
            return 1;
        }
        srand(42);
        for (k = 0; k < NREQ; k++) {
            snprintf(b[i].targets[k], sizeof(b[i].targets[k]),
                     "/svc%zu/items/%d?limit=%d",
                     (size_t) rand() % sizes[i], rand() % 100000,
                     rand() % 1000);
        }
        b[i].lookup_ns = 1e18;
        b[i].decide_ns = 1e18;
    }

    for (round = 0; round < rounds; round++) {
        for (i = 0; i < 3; i++) {
            t = bench_lookup(&b[i]);
            if (t < b[i].lookup_ns) {
                b[i].lookup_ns = t;
            }
            t = bench_decide(&b[i]);
            if (t < b[i].decide_ns) {
                b[i].decide_ns = t;
            }
        }
    }

    printf("%-8s %12s %8s %12s %8s\n", "routes", "lookup ns", "ratio",
           "decide ns", "ratio");

    for (i = 0; i < 3; i++) {
        printf("%-8zu %12.1f %8.2f %12.1f %8.2f\n", b[i].nroutes,
               b[i].lookup_ns, b[i].lookup_ns / b[0].lookup_ns,
               b[i].decide_ns, b[i].decide_ns / b[0].decide_ns);
    }

    printf("target: 10000-route decide under 2x the 10-route decide "
           "(%.2fx) and under 1000 ns (%.0f ns): %s\n",
           b[2].decide_ns / b[0].decide_ns, b[2].decide_ns,
           b[2].decide_ns / b[0].decide_ns < 2.0 && b[2].decide_ns < 1000
           ? "met" : "NOT met");

    for (i = 0; i < 3; i++) {
        al_policy_free(b[i].p);
        free(b[i].targets);
    }

    return 0;
}


static al_policy_t *
bench_policy(size_t n)
{
    char         *buf;
    size_t        i, len, cap;
    al_error_t    err;
    al_policy_t  *p;

    cap = 512 + n * 256;
    buf = malloc(cap);
    if (buf == NULL) {
        return NULL;
    }

    len = (size_t) snprintf(buf, cap,
                            "version: 1\n"
                            "clients:\n"
                            "  agent: { cidr: 10.0.0.0/8 }\n"
                            "upstreams:\n"
                            "  up: { url: \"http://127.0.0.1:9000\" }\n"
                            "routes:\n");

    for (i = 0; i < n; i++) {
        len += (size_t) snprintf(buf + len, cap - len,
                                 "  - name: r%zu\n"
                                 "    clients: [agent]\n"
                                 "    match: { method: GET, path: "
                                 "\"/svc%zu/items/{id}\" }\n"
                                 "    params: { id: '^[0-9]{1,%zu}$' }\n"
                                 "    upstream: up\n"
                                 "    to: \"/api/svc%zu/{id}\"\n"
                                 "    query: { allow: [limit] }\n",
                                 i, i, (size_t) 5 + i % 16, i);
    }

    len += (size_t) snprintf(buf + len, cap - len,
                             "alerts:\n"
                             "  deny: { threshold: 3, window: 60s }\n");

    p = al_policy_parse("bench", buf, len, NULL, &err);
    free(buf);

    if (p == NULL) {
        fprintf(stderr, "bench: %s\n", err.msg);
    }

    return p;
}


static double
bench_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec * 1e9 + ts.tv_nsec;
}


static double
bench_lookup(bench_t *b)
{
    int                i;
    size_t             k;
    double             t0;
    const char        *why;
    const al_route_t  *r, *other;

    t0 = bench_now();

    for (i = 0; i < 50; i++) {
        for (k = 0; k < NREQ; k++) {
            if (al_target_parse(b->targets[k], strlen(b->targets[k]), &path,
                                &query, &why) != 0)
            {
                abort();
            }
            al_trie_lookup(b->p->trie, &path, AL_METHOD_GET, &r, &other);
            if (r == NULL) {
                abort();
            }
            sink += r->index;
        }
    }

    return (bench_now() - t0) / (50.0 * NREQ);
}


static double
bench_decide(bench_t *b)
{
    int           i;
    size_t        k;
    double        t0;
    al_request_t  req;

    req.method = "GET";
    req.method_len = 3;
    req.client = &b->p->clients[0];

    t0 = bench_now();

    for (i = 0; i < 50; i++) {
        for (k = 0; k < NREQ; k++) {
            req.target = b->targets[k];
            req.target_len = strlen(b->targets[k]);
            if (al_decide(b->p, &req, &dec) != AL_REASON_NONE) {
                fprintf(stderr, "bench: %s: %s\n", b->targets[k],
                        dec.detail);
                abort();
            }
            sink += dec.uri_len;
        }
    }

    return (bench_now() - t0) / (50.0 * NREQ);
}
