/*
 * libFuzzer target: path normalizer + route matcher + query checks + URI
 * builder, through al_decide on a fixed policy.  The input is
 * "METHOD TARGET".  Invariants: no crash; an allowed request's upstream
 * URI is itself a target the normalizer accepts, with the same number of
 * segments the route's `to` template produces; a segment that starts
 * with a drive passed only in the param that takes one (y).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static const char  policy[] =
    "version: 1\n"
    "clients:\n"
    "  agent: { unix_uid: 0 }\n"
    "  tools: { cidr: 10.0.0.0/8 }\n"
    "upstreams:\n"
    "  prom: { url: \"http://127.0.0.1:9090/base\" }\n"
    "routes:\n"
    "  - name: q\n"
    "    clients: [agent, tools]\n"
    "    match: { method: [GET, HEAD], path: /prometheus/query }\n"
    "    upstream: prom\n"
    "    to: /api/v1/query\n"
    "    query: { allow: [query, time], require: [query],\n"
    "             patterns: { time: '^[0-9]+$' } }\n"
    "  - name: logs\n"
    "    clients: [agent]\n"
    "    match: { method: GET, path: '/logs/{service}' }\n"
    "    params: { service: '^[a-z0-9-]{1,63}$' }\n"
    "    upstream: prom\n"
    "    to: '/svc/{service}/logs'\n"
    "    query: { allow: [since] }\n"
    "  - name: any\n"
    "    clients: [agent]\n"
    "    match: { method: GET, path: '/a/{x}/{y}' }\n"
    "    params: { x: '(?s).*', y: { pattern: '(?s).*', drive: true } }\n"
    "    upstream: prom\n"
    "    to: '/a/{y}/{x}'\n"
    "  - name: lit\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: '/a/b/c' }\n"
    "    upstream: prom\n"
    "    to: /c\n"
    "alerts:\n"
    "  deny: { threshold: 3, window: 60s }\n";


static al_policy_t  *p;


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char           *sp;
    al_error_t            err;
    al_request_t          req;
    const char           *why;
    static al_path_t      path;
    static al_query_t     query;
    static al_decision_t  d;

    if (p == NULL) {
        p = al_policy_parse("fuzz", policy, sizeof(policy) - 1, NULL, &err);
        if (p == NULL) {
            abort();
        }
    }

    sp = memchr(data, ' ', size);
    if (sp == NULL) {
        return 0;
    }

    req.method = (const char *) data;
    req.method_len = (size_t) (sp - (const char *) data);
    req.target = sp + 1;
    req.target_len = size - req.method_len - 1;
    req.client = &p->clients[size % 2];

    if (al_decide(p, &req, &d) != AL_REASON_NONE) {
        if (d.detail[0] == '\0') {
            abort();
        }
        return 0;
    }

    /* what we forward parses back, minus the upstream's base path */
    if (d.uri_len < 5 || memcmp(d.uri, "/base", 5) != 0) {
        abort();
    }

    if (d.path.drive
        & ~(uint64_t) (strcmp(d.route->name.data, "any") == 0 ? 0x4 : 0))
    {
        abort();
    }

    if (al_target_parse_drives(d.uri + 5, d.uri_len - 5, &path, &query,
                               &why)
        != 0)
    {
        /* re-encoding may outgrow our own input bounds, nothing else */
        if (strcmp(why, "query too long") == 0
            || strcmp(why, "path too long") == 0)
        {
            return 0;
        }
        abort();
    }

    if (query.nparam != d.query.nparam
        || path.drive != (d.path.drive ? 0x2u : 0u))
    {
        abort();
    }

    if (strcmp(d.route->name.data, "any") == 0
        && (path.nseg != 3 || path.seg[1].len != d.path.seg[2].len
            || memcmp(path.seg[1].data, d.path.seg[2].data,
                      path.seg[1].len) != 0))
    {
        abort();
    }

    return 0;
}
