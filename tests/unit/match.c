/*
 * Decisions on a loaded policy: which route a request is (literal before
 * {param}, with backtracking), method, client, params and query checks,
 * the upstream URI built from the validated form, the body half of the
 * decision, client identification, and the trie on its own.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sodium.h>

#include "airlock.h"
#include "tap.h"


#define TOOLS_TOKEN  "tools-token-0123456789"


static const char *const  policy_fmt =
    "version: 1\n"
    "clients:\n"
    "  agent: { unix_uid: 0 }\n"
    "  worker: { unix_uid: 1001 }\n"
    "  ops: { unix_gid: 4242 }\n"
    "  net: { cidr: [10.0.0.0/8, \"fd00::/8\"] }\n"
    "  tools: { token_sha256: \"%s\" }\n"
    "upstreams:\n"
    "  prom: { url: \"http://127.0.0.1:9090/base/\" }\n"
    "  gh: { url: \"https://api.github.com\" }\n"
    "routes:\n"
    "  - name: abc\n"
    "    clients: [agent]\n"
    "    match: { method: GET, path: /a/b/c }\n"
    "    upstream: prom\n"
    "    to: /abc\n"
    "  - name: axd\n"
    "    clients: [agent, worker]\n"
    "    match: { method: GET, path: \"/a/{x}/d\" }\n"
    "    params: { x: '[a-z ]+' }\n"
    "    upstream: prom\n"
    "    to: \"/x/{x}/d\"\n"
    "  - name: axd-delete\n"
    "    clients: [agent]\n"
    "    match: { method: DELETE, path: \"/a/{x}/d\" }\n"
    "    params: { x: '[a-z ]+' }\n"
    "    upstream: prom\n"
    "    to: \"/x/{x}/d\"\n"
    "  - name: ab-post\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: /a/b }\n"
    "    upstream: prom\n"
    "    to: /ab\n"
    "  - name: a-any\n"
    "    clients: [agent]\n"
    "    match: { method: [GET, HEAD], path: \"/a/{y}\" }\n"
    "    params: { y: '^[a-z]+$' }\n"
    "    upstream: prom\n"
    "    to: \"/any/{y}\"\n"
    "  - name: prom-query\n"
    "    clients: [agent, tools, net]\n"
    "    match: { method: GET, path: /prometheus/query }\n"
    "    upstream: prom\n"
    "    to: /api/v1/query\n"
    "    query:\n"
    "      allow: [query, time, step]\n"
    "      require: [query]\n"
    "      patterns: { time: '[0-9]+', step: '[^/\\\\]*' }\n"
    "  - name: logs\n"
    "    clients: [agent, ops]\n"
    "    match: { method: GET, path: \"/logs/{service}/{day}\" }\n"
    "    params: { service: '^[a-z0-9-]{1,63}$', day: '^[0-9]{8}$' }\n"
    "    upstream: gh\n"
    "    to: \"/svc/{day}/{service}/logs\"\n"
    "  - name: pr\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: /github/pull-request }\n"
    "    upstream: gh\n"
    "    to: /repos/acme/infra/pulls\n"
    "    body:\n"
    "      max_bytes: 128\n"
    "      json:\n"
    "        head: '^remediation/[a-z-]+$'\n"
    "        draft: { type: boolean, required: false }\n"
    "  - name: upload\n"
    "    clients: [agent]\n"
    "    match: { method: PUT, path: \"/files/{name}\" }\n"
    "    params: { name: '^[a-z.]+$' }\n"
    "    upstream: gh\n"
    "    to: \"/{name}\"\n"
    "    body: { max_bytes: 10, content_type: text/plain }\n"
    "  - name: sheet\n"
    "    clients: [agent, worker]\n"
    "    match: { method: GET, path: \"/sheets/{id}/values/{range}\" }\n"
    "    params:\n"
    "      id: '^[A-Za-z0-9:]+$'\n"
    "      range: { pattern: '^[A-Za-z0-9!:]+$', drive: true }\n"
    "    upstream: gh\n"
    "    to: \"/v4/{id}/values/{range}\"\n"
    "  - name: sheet-clear\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: \"/sheets/{id}/clear/{range}\" }\n"
    "    params: { id: '^[a-z]+$', range: '^[A-Za-z0-9!:]+$' }\n"
    "    upstream: gh\n"
    "    to: \"/v4/{id}/clear/{range}\"\n"
    "  - name: items\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: \"/items/{id}\" }\n"
    "    params: { id: '^[0-9]+$' }\n"
    "    upstream: gh\n"
    "    to: \"/items/{id}\"\n"
    "    query: { allow: [file], patterns: { file: '^[a-z]+[.]txt$' } }\n"
    "    body: { max_bytes: 256 }\n"
    "  - name: items-typed\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: \"/typed/{id}\" }\n"
    "    params: { id: '^[0-9]+$' }\n"
    "    upstream: gh\n"
    "    to: \"/typed/{id}\"\n"
    "    body: { max_bytes: 256, content_type: application/json }\n"
    "  - name: tags\n"
    "    clients: [agent]\n"
    "    match: { method: GET, path: \"/tags/{tag}\" }\n"
    "    params: { tag: '^[^ ]+$' }\n"
    "    upstream: gh\n"
    "    to: \"/t/{tag}\"\n"
    "    query: { allow: [q] }\n"
    "alerts:\n"
    "  deny: { threshold: 3, window: 60s }\n";


static al_policy_t        *p;
static const al_client_t  *agent, *worker, *ops, *net, *tools;
static al_decision_t       d;


/* "a/{x}/c" as a route with its own segment arrays (at most 8) */
typedef struct {
    al_route_t   r;
    al_str_t     segs[8];
    uint8_t      isp[8];
    char         buf[128];
} route_spec_t;


static al_reason_t decide(const char *method, const char *target,
    const al_client_t *client);
static void allow(const char *method, const char *target,
    const al_client_t *client, const char *route, const char *uri);
static void deny(const char *method, const char *target,
    const al_client_t *client, al_reason_t want, const char *detail);
static al_reason_t body(const al_route_t *route, const char *ctype,
    const char *s);
static void test_routes(void);
static void test_params_query(void);
static void test_normalize(void);
static void test_drives(void);
static const char *route_target(const al_route_t *r, const char *target);
static void test_body(void);
static void test_body_json_charset(void);
static void test_media_type(void);
static void test_identify(void);
static void test_trie(void);
static void test_trie_siblings(void);
static al_route_t *route_make(route_spec_t *rs, const char *name,
    const char *spec);
static void test_regex(void);


int
main(void)
{
    char           yaml[8192];
    char           hex[65];
    unsigned char  hash[32];
    al_error_t     err;

    if (sodium_init() < 0) {
        printf("Bail out! sodium_init\n");
        return 1;
    }

    crypto_hash_sha256(hash, (const unsigned char *) TOOLS_TOKEN,
                       strlen(TOOLS_TOKEN));
    sodium_bin2hex(hex, sizeof(hex), hash, sizeof(hash));
    snprintf(yaml, sizeof(yaml), policy_fmt, hex);

    p = al_policy_parse("match.yaml", yaml, strlen(yaml), NULL, &err);
    if (p == NULL) {
        printf("Bail out! %s:%u:%u: %s\n", err.file, err.line, err.column,
               err.msg);
        return 1;
    }

    agent = al_policy_client(p, "agent", 5);
    worker = al_policy_client(p, "worker", 6);
    ops = al_policy_client(p, "ops", 3);
    net = al_policy_client(p, "net", 3);
    tools = al_policy_client(p, "tools", 5);

    test_routes();
    test_params_query();
    test_normalize();
    test_drives();
    test_body();
    test_body_json_charset();
    test_media_type();
    test_identify();
    test_trie();
    test_trie_siblings();
    test_regex();

    al_policy_free(p);

    return tap_done();
}


static al_reason_t
decide(const char *method, const char *target, const al_client_t *client)
{
    al_request_t  req;

    req.method = method;
    req.method_len = strlen(method);
    req.target = target;
    req.target_len = strlen(target);
    req.client = client;

    return al_decide(p, &req, &d);
}


/* two assertions: allowed as route, and the upstream URI */

static void
allow(const char *method, const char *target, const al_client_t *client,
    const char *route, const char *uri)
{
    char         label[512];
    al_reason_t  r;

    r = decide(method, target, client);

    snprintf(label, sizeof(label), "%s %s (%s): allowed by %s", method,
             target, client ? client->name.data : "-", route);
    if (!tap_ok(r == AL_REASON_NONE && d.route != NULL
                && strcmp(d.route->name.data, route) == 0, label))
    {
        printf("# reason %s, route %s, detail: %s\n", al_reason_name(r),
               d.route ? d.route->name.data : "(none)", d.detail);
    }

    snprintf(label, sizeof(label), "%s %s: upstream URI", method, target);
    tap_is_str(r == AL_REASON_NONE ? d.uri : NULL, uri, label);
    tap_is_int(r == AL_REASON_NONE ? (long) d.uri_len : -1,
               (long) strlen(uri), "uri_len");
}


/* two assertions: the reason, and a phrase of the detail */

static void
deny(const char *method, const char *target, const al_client_t *client,
    al_reason_t want, const char *detail)
{
    char         label[512];
    al_reason_t  r;

    r = decide(method, target, client);

    snprintf(label, sizeof(label), "%s %s (%s): %s", method, target,
             client ? client->name.data : "-", al_reason_name(want));
    tap_is_str(al_reason_name(r), al_reason_name(want), label);

    snprintf(label, sizeof(label), "%s %s: detail has \"%s\"", method, target,
             detail);
    if (!tap_ok(strstr(d.detail, detail) != NULL, label)) {
        tap_diag("detail: ", d.detail);
    }
}


static void
test_routes(void)
{
    /* literal first, then the {param}, backtracking out of dead ends */
    allow("GET", "/a/b/c", agent, "abc", "/base/abc");
    allow("GET", "/a/b/d", agent, "axd", "/base/x/b/d");
    allow("GET", "/a/zz/d", agent, "axd", "/base/x/zz/d");
    allow("GET", "/a/b", agent, "a-any", "/base/any/b");
    allow("POST", "/a/b", agent, "ab-post", "/base/ab");
    deny("GET", "/a/b/e", agent, AL_REASON_NO_ROUTE, "no route matches");
    deny("GET", "/a/b/c/d", agent, AL_REASON_NO_ROUTE, "no route");
    deny("GET", "/a", agent, AL_REASON_NO_ROUTE, "no route");
    deny("GET", "/", agent, AL_REASON_NO_ROUTE, "no route");

    /* methods */
    deny("POST", "/a/b/c", agent, AL_REASON_METHOD,
         "route \"abc\" does not allow POST");
    tap_ok(d.route != NULL && strcmp(d.route->name.data, "abc") == 0,
           "method mismatch names the route");
    deny("HEAD", "/a/b/c", agent, AL_REASON_METHOD, "does not allow HEAD");
    allow("HEAD", "/a/q", agent, "a-any", "/base/any/q");
    deny("DELETE", "/a/b", agent, AL_REASON_METHOD, "does not allow DELETE");
    deny("get", "/a/b/c", agent, AL_REASON_METHOD, "is never allowed");
    deny("CONNECT", "/a/b/c", agent, AL_REASON_METHOD, "is never allowed");
    deny("TRACE", "/a/b/c", agent, AL_REASON_METHOD, "is never allowed");

    /* clients */
    allow("GET", "/a/b/d", worker, "axd", "/base/x/b/d");
    deny("GET", "/a/b/c", worker, AL_REASON_NO_ROUTE,
         "route \"abc\" does not list client \"worker\"");
    tap_ok(d.route != NULL && strcmp(d.route->name.data, "abc") == 0,
           "client not listed: the route is still named");
    deny("GET", "/a/b/c", NULL, AL_REASON_CLIENT_UNKNOWN, "unknown client");

    /*
     * a path only other clients' routes take, under another method: no
     * route to this client, as under the route's own method, not a
     * "method" refusal that tells it the path is one
     */
    deny("POST", "/a/b/c", worker, AL_REASON_NO_ROUTE,
         "route \"abc\" does not list client \"worker\"");
    tap_ok(d.route != NULL && strcmp(d.route->name.data, "abc") == 0,
           "other method, client not listed: the route is named to the log");
    deny("DELETE", "/a/b", worker, AL_REASON_NO_ROUTE, "does not list client");
    deny("POST", "/a/zz", worker, AL_REASON_NO_ROUTE, "does not list client");
    deny("DELETE", "/a/b", tools, AL_REASON_NO_ROUTE, "does not list client");

    /* a client one of the path's routes lists hears "method" */
    deny("DELETE", "/a/b/d", worker, AL_REASON_METHOD,
         "route \"axd\" does not allow DELETE");
    deny("POST", "/logs/api/20240101", ops, AL_REASON_METHOD,
         "route \"logs\" does not allow POST");
    deny("PUT", "/a/b", agent, AL_REASON_METHOD, "does not allow PUT");

    /*
     * a client listed on a route of the path hears "method" also when
     * the method is another client's route there (axd-delete, agent's
     * only), as it does where no route takes the method, not no_route
     */
    deny("POST", "/a/b/d", worker, AL_REASON_METHOD,
         "route \"axd\" does not allow POST");
    allow("DELETE", "/a/b/d", agent, "axd-delete", "/base/x/b/d");

    /* an unknown client is still refused as before, by the module */
    deny("POST", "/a/b/c", NULL, AL_REASON_METHOD, "does not allow POST");
}


static void
test_params_query(void)
{
    /* params: anchored patterns, decoded values, re-encoded in the URI */
    allow("GET", "/a/b%20c/d", agent, "axd", "/base/x/b%20c/d");
    deny("GET", "/a/B/d", agent, AL_REASON_PARAM,
         "param \"x\" does not match [a-z ]+");
    deny("GET", "/a/b1/d", agent, AL_REASON_PARAM,
         "param \"x\" does not match");
    allow("GET", "/logs/api-gw/20250101", ops, "logs",
          "/svc/20250101/api-gw/logs");
    deny("GET", "/logs/api-gw/2025", ops, AL_REASON_PARAM,
         "param \"day\" does not match ^[0-9]{8}$");
    deny("GET", "/logs/API/20250101", ops, AL_REASON_PARAM,
         "param \"service\"");

    /*
     * '+' in a path is a plus, checked as one and sent as %2B: a form
     * decoder upstream reads a space for a raw '+', which the pattern
     * refuses (a%20b)
     */
    allow("GET", "/tags/a+b", agent, "tags", "/t/a%2Bb");
    allow("GET", "/tags/a%2Bb", agent, "tags", "/t/a%2Bb");
    allow("GET", "/tags/c++?q=c+%2B", agent, "tags", "/t/c%2B%2B?q=c%20%2B");
    allow("GET", "/tags/a&b=c", agent, "tags", "/t/a&b=c");
    deny("GET", "/tags/a%20b", agent, AL_REASON_PARAM,
         "param \"tag\" does not match");

    /* query: allow, require, anchored patterns, canonical form */
    allow("GET", "/prometheus/query?query=up", agent, "prom-query",
          "/base/api/v1/query?query=up");
    allow("GET", "/prometheus/query?time=17&query=up", tools, "prom-query",
          "/base/api/v1/query?time=17&query=up");
    allow("GET", "/prometheus/query?query=sum+by+(job)", agent,
          "prom-query", "/base/api/v1/query?query=sum%20by%20(job)");
    allow("GET", "/prometheus/query?query=a%2Bb%26c%3Dd", agent,
          "prom-query", "/base/api/v1/query?query=a%2Bb%26c%3Dd");
    allow("GET", "/prometheus/query?query=up&step", agent, "prom-query",
          "/base/api/v1/query?query=up&step=");
    allow("GET", "/prometheus/query?query=%7Bjob%3D%22x%22%7D", agent,
          "prom-query", "/base/api/v1/query?query=%7Bjob%3D%22x%22%7D");
    deny("GET", "/prometheus/query", agent, AL_REASON_QUERY,
         "query parameter \"query\" is required");
    deny("GET", "/prometheus/query?time=1", agent, AL_REASON_QUERY,
         "is required");
    deny("GET", "/prometheus/query?query=up&debug=1", agent, AL_REASON_QUERY,
         "query parameter \"debug\" is not allowed");
    deny("GET", "/prometheus/query?query=up&time=now", agent, AL_REASON_QUERY,
         "query parameter \"time\" does not match [0-9]+");
    deny("GET", "/prometheus/query?query=up&time=1x", agent, AL_REASON_QUERY,
         "does not match");
    deny("GET", "/prometheus/query?query=a&query=b", agent, AL_REASON_PATH,
         "duplicate query parameter");
    deny("GET", "/a/b/c?x=1", agent, AL_REASON_QUERY,
         "query parameter \"x\" is not allowed");

    /*
     * A value is matched also as an upstream that applies NFKC or
     * Windows' best fit reads it: step excludes '/' and '\', so U+2215
     * DIVISION SLASH, U+FF0F FULLWIDTH SOLIDUS, U+00A5 YEN SIGN ('\' in
     * cp932) and U+2100 ACCOUNT OF ("a/c") are refused too
     */
    allow("GET", "/prometheus/query?query=up&step=caf%C3%A9", agent,
          "prom-query", "/base/api/v1/query?query=up&step=caf%C3%A9");
    allow("GET", "/prometheus/query?query=%E2%88%95&step=5m", agent,
          "prom-query", "/base/api/v1/query?query=%E2%88%95&step=5m");
    deny("GET", "/prometheus/query?query=up&step=..%E2%88%95..%E2%88%95x",
         agent, AL_REASON_QUERY, "query parameter \"step\" does not match");
    deny("GET", "/prometheus/query?query=up&step=a%EF%BC%8Fb", agent,
         AL_REASON_QUERY, "query parameter \"step\" does not match");
    deny("GET", "/prometheus/query?query=up&step=..%C2%A5x", agent,
         AL_REASON_QUERY, "query parameter \"step\" does not match");
    deny("GET", "/prometheus/query?query=up&step=%E2%84%80", agent,
         AL_REASON_QUERY, "query parameter \"step\" does not match");
}


static void
test_normalize(void)
{
    deny("GET", "/a/b%2Fc/d", agent, AL_REASON_PATH, "encoded slash");
    deny("GET", "/a/b%5Cc/d", agent, AL_REASON_PATH, "encoded backslash");
    deny("GET", "/a/%252F/d", agent, AL_REASON_PATH, "double encoding");
    deny("GET", "/a/./b/c", agent, AL_REASON_PATH, "dot segment");
    deny("GET", "/a/x/../b/c", agent, AL_REASON_PATH, "dot segment");
    deny("GET", "/a/%2e%2e/b/c", agent, AL_REASON_PATH, "dot segment");
    deny("GET", "/a//b/c", agent, AL_REASON_PATH, "empty segment");
    deny("GET", "/a/b/c/", agent, AL_REASON_PATH, "empty segment");
    deny("GET", "/a/b;x=1/c", agent, AL_REASON_PATH, "semicolon");
    deny("GET", "/a/..%3Bx/d", agent, AL_REASON_PATH, "encoded semicolon");
    allow("GET", "/prometheus/query?query=a%3Bb", agent, "prom-query",
          "/base/api/v1/query?query=a%3Bb");
    deny("GET", "/a/b%00/d", agent, AL_REASON_PATH, "control character");
    deny("GET", "/a/\xc3\xa9/d", agent, AL_REASON_PATH, "non-ascii byte");
    deny("GET", "/a/%C0%AF/d", agent, AL_REASON_PATH, "invalid utf-8");
    deny("GET", "/a/b/c#frag", agent, AL_REASON_PATH, "fragment");
    deny("GET", "a/b/c", agent, AL_REASON_PATH, "not origin-form");

    /* what matched is what is forwarded: %61 is "a" */
    allow("GET", "/%61/b/c", agent, "abc", "/base/abc");
}


/*
 * A segment that starts with a drive passes only in a param with "drive:
 * true" (the spreadsheet range "A:B"), forwarded as decoded; the rest of
 * that route and every other route still refuse one (path, "drive
 * letter"), and a drive with a dot segment is refused even there.
 */

static void
test_drives(void)
{
    const char        *why;
    const al_route_t  *sheet, *clear, *axd;

    allow("GET", "/sheets/abc/values/A:B", agent, "sheet",
          "/v4/abc/values/A:B");
    allow("GET", "/sheets/abc/values/A1:B2", agent, "sheet",
          "/v4/abc/values/A1:B2");
    allow("GET", "/sheets/abc/values/Sheet1!A:B", worker, "sheet",
          "/v4/abc/values/Sheet1!A:B");
    allow("GET", "/sheets/abc/values/C%3Ax", agent, "sheet",
          "/v4/abc/values/C:x");
    allow("GET", "/sheets/abc/values/Z:", agent, "sheet",
          "/v4/abc/values/Z:");

    /* the same route's other param, and another route's, refuse it */
    deny("GET", "/sheets/A:x/values/A:B", agent, AL_REASON_PATH,
         "drive letter in param \"id\" of route \"sheet\", which does "
         "not take one");
    tap_ok(d.route != NULL && strcmp(d.route->name.data, "sheet") == 0,
           "a drive the route does not take names the route");
    deny("POST", "/sheets/abc/clear/A:B", agent, AL_REASON_PATH,
         "drive letter in param \"range\" of route \"sheet-clear\"");
    deny("GET", "/a/C:x/d", agent, AL_REASON_PATH,
         "drive letter in param \"x\" of route \"axd\"");
    deny("GET", "/nowhere/C:x", agent, AL_REASON_PATH,
         "request target refused: drive letter");

    /* named only to a client the route lists */
    deny("GET", "/a/C:x/d", ops, AL_REASON_PATH,
         "request target refused: drive letter");
    tap_ok(d.route == NULL && strstr(d.detail, "axd") == NULL,
           "a client the route does not list is told nothing of it");
    /*
     * nor does a route that takes the drive pass it for a client it does
     * not list: no_route there and "path" where no route takes one told
     * such a client where a route is
     */
    deny("GET", "/sheets/abc/values/A:B", ops, AL_REASON_PATH,
         "request target refused: drive letter");
    tap_ok(d.route == NULL, "a route that takes the drive is not named");
    deny("PUT", "/sheets/abc/values/A:B", ops, AL_REASON_PATH,
         "request target refused: drive letter");
    deny("GET", "/sheets/abc/values/A1", ops, AL_REASON_NO_ROUTE,
         "does not list client \"ops\"");

    /* the method: a route that takes the drive refuses the method */
    deny("PUT", "/sheets/abc/values/A:B", agent, AL_REASON_METHOD,
         "route \"sheet\" does not allow PUT");
    deny("TRACE", "/sheets/abc/values/A:B", agent, AL_REASON_METHOD,
         "is never allowed");
    deny("TRACE", "/a/C:x/d", agent, AL_REASON_PATH, "drive letter");

    /* a drive and a dot segment, whatever they look like */
    deny("GET", "/sheets/abc/values/C:..", agent, AL_REASON_PATH,
         "request target refused: drive letter");
    deny("GET", "/sheets/abc/values/c:%2e%2e", agent, AL_REASON_PATH,
         "request target refused: drive letter");
    deny("GET", "/sheets/abc/values/C%EF%BC%9A..", agent, AL_REASON_PATH,
         "request target refused: drive letter");
    deny("GET", "/sheets/abc/values/C%E2%88%B6%E2%80%A5", agent,
         AL_REASON_PATH, "request target refused: drive letter");
    deny("GET", "/sheets/abc/values/%EF%BC%A3:.", agent, AL_REASON_PATH,
         "request target refused: drive letter");

    /* and every other path rule */
    deny("GET", "/sheets/abc/values/..", agent, AL_REASON_PATH,
         "dot segment");
    deny("GET", "/sheets/abc/values/A:B%2F..", agent, AL_REASON_PATH,
         "encoded slash");
    deny("GET", "/sheets/abc/values/A:B%EF%BC%8F..", agent, AL_REASON_PATH,
         "slash-like character");

    /* the pattern still decides */
    deny("GET", "/sheets/abc/values/A:B-C", agent, AL_REASON_PARAM,
         "param \"range\" does not match");

    /*
     * al_route_target(), what the agent and the worker check before they
     * send: the drives al_decide() refuses above, it refuses; a drive in
     * the param that takes one it takes; the pattern is not its to judge
     */
    sheet = al_policy_route(p, "sheet", 5);
    clear = al_policy_route(p, "sheet-clear", 11);
    axd = al_policy_route(p, "axd", 3);

    tap_ok(route_target(sheet, "/sheets/abc/values/A:B") == NULL,
           "al_route_target: a drive where the param takes one");
    tap_ok(route_target(sheet, "/sheets/abc/values/A:B-C") == NULL,
           "al_route_target: the pattern is al_decide()'s");
    why = route_target(sheet, "/sheets/A:x/values/A:B");
    tap_ok(why != NULL && strcmp(why, "drive letter") == 0,
           "al_route_target: a drive in the param that takes none");
    why = route_target(clear, "/sheets/abc/clear/A:B");
    tap_ok(why != NULL && strcmp(why, "drive letter") == 0,
           "al_route_target: a drive in another route's param");
    why = route_target(axd, "/a/C:x/d");
    tap_ok(why != NULL && strcmp(why, "drive letter") == 0,
           "al_route_target: \"C:x\", whatever the pattern");
    why = route_target(sheet, "/sheets/abc/values/C:..");
    tap_ok(why != NULL && strcmp(why, "drive letter") == 0,
           "al_route_target: a drive and a dot segment");
    why = route_target(axd, "/a/../d");
    tap_ok(why != NULL && strcmp(why, "dot segment") == 0,
           "al_route_target: a dot segment");
    why = route_target(axd, "/a/x%2Fy/d");
    tap_ok(why != NULL && strcmp(why, "encoded slash") == 0,
           "al_route_target: an encoded slash");
    why = route_target(axd, "/a/x");
    tap_ok(why != NULL && strcmp(why, "not the route's segments") == 0,
           "al_route_target: not the route's segments");
    tap_ok(route_target(axd, "/a/ab:c/d") == NULL,
           "al_route_target: a colon past the first character");
}


static const char *
route_target(const al_route_t *r, const char *target)
{
    const char  *why;

    if (r == NULL) {
        return "no such route";
    }

    return al_route_target(r, target, strlen(target), &why) == 0 ? NULL
                                                                  : why;
}


static al_reason_t
body(const al_route_t *route, const char *ctype, const char *s)
{
    size_t  len;

    len = (ctype != NULL) ? strlen(ctype) : 0;

    return al_decide_body(route, ctype, len, (const unsigned char *) s,
                          strlen(s), &d);
}


static void
test_body(void)
{
    const al_route_t  *pr, *up, *abc;

    pr = al_policy_route(p, "pr", 2);
    up = al_policy_route(p, "upload", 6);
    abc = al_policy_route(p, "abc", 3);

    memset(&d, 0, sizeof(d));
    tap_is_int(body(pr, "application/json",
                    "{\"head\":\"remediation/fix-x\"}"),
               AL_REASON_NONE, "json body allowed");
    tap_is_int(body(pr, "application/json; charset=utf-8",
                    "{\"head\":\"remediation/a\",\"draft\":true}"),
               AL_REASON_NONE, "media type parameters and optional field");
    tap_is_int(body(pr, "Application/JSON",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_NONE, "media type is case-insensitive");
    tap_is_int(body(pr, "application/json;charset=\"UTF-8\"",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_NONE, "charset utf-8, quoted, any case");

    /* the JSON is read as UTF-8: an upstream must not read it otherwise */
    tap_is_int(body(pr, "application/json; charset=utf-7",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "charset utf-7 refused");
    tap_ok(strstr(d.detail, "charset must be utf-8") != NULL,
           "charset detail");
    tap_is_int(body(pr, "application/json; charset=utf-8; charset=utf-7",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "a second charset refused");
    tap_is_int(body(pr, "application/json; charset*=utf-7''",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "an extended charset* refused");
    tap_is_int(body(pr, "application/json; charset = utf-7",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "parameters that do not parse refused");

    /* Tomcat reads the charset after the first "charset=", wherever */
    tap_is_int(body(pr, "application/json; xcharset=shift_jis",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "charset in another name refused");
    tap_ok(strstr(d.detail, "outside a charset parameter") != NULL,
           "charset elsewhere: detail");
    tap_is_int(body(pr, "application/json; x=\"a;charset=shift_jis;\"",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "charset in a quoted value refused");
    tap_is_int(body(pr, "application/json; charset=utf-8; x=\"Charset\"",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "charset beside a charset parameter refused");
    tap_is_int(body(pr, "application/json; Charset=UTF-8; charsets=1",
                    "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "charsets refused");
    tap_is_int(body(up, "text/plain; charset=utf-7", "x"), AL_REASON_NONE,
               "no JSON rules: the charset is not read");
    tap_is_int(body(pr, "text/plain", "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "wrong content type");
    tap_ok(strstr(d.detail, "content type must be application/json") != NULL,
           "content type detail");
    tap_is_int(body(pr, NULL, "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "missing content type");
    tap_is_int(body(pr, "application/jsonx", "{\"head\":\"remediation/a\"}"),
               AL_REASON_BODY, "content type prefix is not enough");
    tap_is_int(body(pr, "application/json", "{\"head\":\"main\"}"),
               AL_REASON_BODY, "json pattern mismatch");
    tap_ok(strstr(d.detail, "field \"head\"") != NULL, "detail names field");
    tap_is_int(body(pr, "application/json", "{\"draft\":false}"),
               AL_REASON_BODY, "missing required field");
    tap_is_int(body(pr, "application/json",
                    "{\"head\":\"remediation/a\",\"base\":\"x\"}"),
               AL_REASON_BODY, "unlisted field refused");
    tap_ok(strstr(d.detail, "unexpected field \"base\"") != NULL,
           "detail names the unlisted field");
    tap_is_int(body(pr, "application/json",
                    "{\"head\":\"remediation/a\",\"draft\":\"yes\"}"),
               AL_REASON_BODY, "wrong field type");
    tap_is_int(body(pr, "application/json",
                    "{\"head\":\"remediation/a\",\"head\":\"remediation/b\"}"),
               AL_REASON_BODY, "duplicate JSON key");
    tap_is_int(body(pr, "application/json",
                    "{\"head\":\"remediation/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}"),
               AL_REASON_BODY_TOO_LARGE, "body over max_bytes");

    tap_is_int(body(up, "text/plain", "0123456789"), AL_REASON_NONE,
               "body of exactly max_bytes");
    tap_is_int(body(up, "text/plain", "0123456789a"),
               AL_REASON_BODY_TOO_LARGE, "one byte over max_bytes");
    tap_is_int(body(up, "text/plain;charset=utf-8", "x"), AL_REASON_NONE,
               "text/plain with a parameter");
    tap_is_int(body(up, "application/octet-stream", "x"), AL_REASON_BODY,
               "text/plain route refuses other types");
    tap_is_int(body(abc, NULL, ""), AL_REASON_NONE,
               "no-body route: empty body ok");
    tap_is_int(body(abc, "text/plain", "x"), AL_REASON_BODY_TOO_LARGE,
               "no-body route: any body refused");
}


/*
 * A route with a body and no json rules reads a JSON body's top-level
 * names (_method, the checked params'): it is read as UTF-8, so its
 * charset must be utf-8 as on a route with json rules.  In UTF-7
 * (Express's body-parser decodes it) {"+AF8-method":1} is {"_method":1}.
 * A byte order mark is refused by the strict parse, in every form.
 */

static void
test_body_json_charset(void)
{
    size_t             i;
    char               name[160];
    const al_route_t  *items, *typed;

    static const struct {
        const char  *ctype;
        const char  *body;
        size_t       len;
        al_reason_t  want;
        const char  *name;
    } cases[] = {
#define C(ct, b, w, n)  { ct, b, sizeof(b) - 1, w, n }
        C("application/json; charset=utf-7", "{\"+AF8-method\":\"DELETE\"}",
          AL_REASON_BODY, "_method in UTF-7"),
        C("application/json; charset=utf-7", "{\"fil+AGU-\":\"../x\"}",
          AL_REASON_BODY, "a checked query param's name in UTF-7"),
        C("application/json; charset=utf-7", "{\"+AGk-d\":\"../x\"}",
          AL_REASON_BODY, "a path param's name in UTF-7"),
        C("application/json; charset=utf-7-imap", "{\"&AF8-method\":1}",
          AL_REASON_BODY, "_method in UTF-7-IMAP"),
        C("application/json; charset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "UTF-7, whatever the names"),
        C("application/json;charset=UTF-16", "{\"a\":1}",
          AL_REASON_BODY, "UTF-16"),
        C("application/json; charset=\"utf-7\"", "{\"a\":1}",
          AL_REASON_BODY, "quoted"),
        C("application/json; charset=\"utf\\-8\"", "{\"a\":1}",
          AL_REASON_BODY, "quoted with a backslash"),
        C("application/json; charset*=utf-7''", "{\"a\":1}",
          AL_REASON_BODY, "charset*"),
        C("application/json; charset=utf-8; charset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "a second charset"),
        C("application/json; charset = utf-7", "{\"a\":1}",
          AL_REASON_BODY, "parameters that do not parse"),
        C("application/json,charset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "a charset after ',' (Rack's split)"),
        C("application/vnd.api+json; charset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "+json in UTF-7"),
        C("text/x-json; charset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "text/x-json in UTF-7"),
        C("application/json; xcharset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "charset in another name (Tomcat)"),
        C("application/json; x=\"charset=utf-7;\"", "{\"a\":1}",
          AL_REASON_BODY, "charset in a quoted value (Tomcat)"),
        C("application/vnd.charset+json; xcharset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "charset in the type, then in another name"),
        C("application/vnd.charset+json; x=charset", "{\"a\":1}",
          AL_REASON_BODY, "charset in the type, then in a value"),
        C("application/vnd.charset+json; charset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "charset in the type, then UTF-7"),
        C("application/vnd.charset=utf-7+json", "{\"a\":1}",
          AL_REASON_BODY, "charset= in the type (Tomcat)"),
        C("application/vnd.charset+json,charset=utf-7", "{\"a\":1}",
          AL_REASON_BODY, "charset in the type, then after ','"),
        C("application/json", "\xef\xbb\xbf{\"_method\":1}",
          AL_REASON_BODY, "a UTF-8 byte order mark"),
        C("application/json", "\xff\xfe{\0\"\0_\0m\0\"\0:\0" "1\0}\0",
          AL_REASON_BODY, "UTF-16LE with its byte order mark"),
        C("application/json", "\xfe\xff\0{\0\"\0_\0m\0\"\0:\0" "1\0}",
          AL_REASON_BODY, "UTF-16BE with its byte order mark"),
        C("application/json", "\xff\xfe\0\0{\0\0\0}\0\0\0",
          AL_REASON_BODY, "UTF-32LE with its byte order mark"),
        C("application/json", "\0\0\xfe\xff\0\0\0{\0\0\0}",
          AL_REASON_BODY, "UTF-32BE with its byte order mark"),

        C("application/json", "{\"a\":1}", AL_REASON_NONE, "no charset"),
        C("application/json; charset=utf-8", "{\"a\":1}", AL_REASON_NONE,
          "utf-8"),
        C("Application/JSON; Charset=\"UTF8\"", "{\"a\":1}", AL_REASON_NONE,
          "utf8, quoted, any case"),
        C("application/vnd.api+json; v=2", "{\"a\":1}", AL_REASON_NONE,
          "+json with another parameter"),
        C("application/vnd.charset+json", "{\"a\":1}", AL_REASON_NONE,
          "charset in the media type only (no '=' there)"),
        C("Application/Vnd.Charset+JSON; charset=utf-8; v=1", "{\"a\":1}",
          AL_REASON_NONE, "charset in the media type, then a utf-8 one"),
        C("application/json; charset=utf-7", "", AL_REASON_NONE,
          "an empty body is not read"),
        C("text/plain", "{\"_method\":1}", AL_REASON_NONE,
          "text/plain is not read as JSON"),
        C("text/plain; charset=utf-7", "x", AL_REASON_BODY,
          "a query pattern: text/plain in UTF-7 (System.Web)"),
#undef C
    };

    items = al_policy_route(p, "items", 5);
    typed = al_policy_route(p, "items-typed", 11);

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(name, sizeof(name), "JSON without rules: %s",
                 cases[i].name);
        memset(&d, 0, sizeof(d));
        if (!tap_is_int(al_decide_body(items, cases[i].ctype,
                                       strlen(cases[i].ctype),
                                       (const unsigned char *) cases[i].body,
                                       cases[i].len, &d),
                        cases[i].want, name))
        {
            tap_diag("detail: ", d.detail);
        }
    }

    memset(&d, 0, sizeof(d));
    (void) body(items, "application/json; charset=utf-7",
                "{\"+AF8-method\":\"DELETE\"}");
    tap_is_str(d.detail, "content type application/json: the charset must "
               "be utf-8", "JSON without rules: the detail");

    (void) body(items, "text/x-json; charset=latin1", "{}");
    tap_is_str(d.detail, "content type text/x-json: the charset must be "
               "utf-8", "JSON without rules: the detail names the type");

    /* a route's own type with "charset" in it: only its parameters count */

#define VND  "application/vnd.charset+json"
    tap_is_int(al_media_type_check(VND "; charset=utf-8",
                                   sizeof(VND "; charset=utf-8") - 1, VND,
                                   sizeof(VND) - 1, 1, d.detail,
                                   sizeof(d.detail)),
               0, "content_type " VND ": a utf-8 charset passes");
    tap_is_int(al_media_type_check(VND "; xcharset=utf-7",
                                   sizeof(VND "; xcharset=utf-7") - 1, VND,
                                   sizeof(VND) - 1, 1, d.detail,
                                   sizeof(d.detail)),
               -1, "content_type " VND ": xcharset=utf-7 refused");
    tap_ok(strstr(d.detail, "outside a charset parameter") != NULL,
           "content_type " VND ": the detail");
#undef VND

    /* a route whose content_type is JSON reads the body as JSON too */

    tap_is_int(body(typed, "application/json; charset=utf-7",
                    "{\"+AF8-method\":\"DELETE\"}"),
               AL_REASON_BODY, "content_type application/json: UTF-7 refused");
    tap_is_int(body(typed, "application/json; charset=utf-8", "{\"a\":1}"),
               AL_REASON_NONE, "content_type application/json: utf-8 passes");
    tap_is_int(body(typed, "application/json; charset=utf-7", ""),
               AL_REASON_NONE, "content_type application/json: an empty "
               "body passes");

    /* as the form's charset is, in the same decision */

    tap_is_int(body(items, "application/x-www-form-urlencoded; charset=utf-7",
                    "+AF8-method=DELETE"),
               AL_REASON_BODY, "a form in UTF-7 refused");
    tap_is_int(al_decide_body(items, "application/x-www-form-urlencoded", 33,
                              (const unsigned char *) "\xff\xfe_\0m\0", 6,
                              &d),
               AL_REASON_BODY, "a form with a UTF-16 byte order mark");
    tap_is_int(body(items, "application/x-www-form-urlencoded",
                    "\xef\xbb\xbf_method=DELETE"),
               AL_REASON_BODY, "a form's first field after a UTF-8 byte "
               "order mark");
}


/*
 * al_media_type_check() on its own: the type, and with utf8 the
 * parameters as RFC 9110 writes them and the charset; and
 * al_media_charset_check(), any type and the same parameters.
 */

static void
test_media_type(void)
{
    int     rc;
    char    why[128], name[192];
    size_t  i;

    static const struct {
        const char  *ctype;
        int          utf8;
        int          want;
    } cases[] = {
        { "application/json", 1, 0 },
        { "APPLICATION/Json", 1, 0 },
        { "application/json;", 1, 0 },
        { "application/json ;charset=utf-8", 1, 0 },
        { "application/json; charset=UTF-8", 1, 0 },
        { "application/json; charset=\"utf-8\"", 1, 0 },
        { "application/json; charset=\"u\\tf-8\"", 0, 0 },
        { "application/json;;charset=utf-8", 1, 0 },
        { "application/json; v=1; charset=utf-8", 1, 0 },
        { "application/json; v=\"a;b=\\\"c\"; charset=utf-8", 1, 0 },
        { "application/json; charset=utf-8; charset=utf-8", 1, 0 },
        { "application/json; charset=utf-7", 0, 0 },
        { "application/json; charset = utf-7", 0, 0 },

        { "application/jsonx", 1, -1 },
        { "application/json x", 1, -1 },
        { "text/plain", 1, -1 },
        { "", 1, -1 },
        { "application/json; charset=utf-7", 1, -1 },
        { "application/json; charset=\"utf-7\"", 1, -1 },
        { "application/json; charset=\"u\\tf-8\"", 1, -1 },
        { "application/json; charset=\"utf\\-8\"", 1, -1 },
        { "application/json; charset=utf8", 1, 0 },
        { "application/json; charset=UTF8", 1, 0 },
        { "application/json; charset=utf88", 1, -1 },
        { "application/json; charset=utf", 1, -1 },
        { "application/json; charset=utf-8x", 1, -1 },
        { "application/json; charset=\"utf-8 \"", 1, -1 },
        { "application/json; charset=", 1, -1 },
        { "application/json; charset=\"\"", 1, -1 },
        { "application/json; charset=\"utf-8", 1, -1 },
        { "application/json; charset=utf-8; charset=utf-7", 1, -1 },
        { "application/json; CHARSET=utf-16", 1, -1 },
        { "application/json; charset*=utf-7''", 1, -1 },
        { "application/json; charset*0=utf-7", 1, -1 },
        { "application/json; charset = utf-7", 1, -1 },
        { "application/json; charset =utf-8", 1, -1 },
        { "application/json; charset", 1, -1 },
        { "application/json; =utf-8", 1, -1 },
        { "application/json; charset=utf-8 utf-7", 1, -1 },
        { "application/json; charset=utf-8,utf-7", 1, -1 },
        { "application/json; a=\"\x01\"", 1, -1 },
    };

    static const struct {
        const char  *ctype;
        int          want;
    } any[] = {
        { "application/json", 0 },
        { "application/vnd.api+json; charset=utf-8", 0 },
        { "text/x-json;charset=\"UTF8\"", 0 },
        { "application/json ; v=1", 0 },
        { "  application/json", 0 },
        { "application/json; charset=utf-7", -1 },
        { "application/json; charset=utf-7-imap", -1 },
        { "text/x-json; CHARSET=utf-16", -1 },
        { "application/json; charset*=utf-8''utf-8", -1 },
        { "application/json; charset=\"utf\\-8\"", -1 },
        { "application/json,charset=utf-7", -1 },
        { "application/json\vcharset=utf-7", -1 },
        { "application/json charset=utf-7", -1 },
        { "text/plain; x=a/json", -1 },
        { "application/json; x", -1 },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        why[0] = '\0';
        rc = al_media_type_check(cases[i].ctype, strlen(cases[i].ctype),
                                 "application/json", 16, cases[i].utf8,
                                 why, sizeof(why));
        snprintf(name, sizeof(name), "media type%s: %s",
                 cases[i].utf8 ? " (utf-8)" : "", cases[i].ctype);
        if (!tap_is_int(rc, cases[i].want, name)) {
            tap_diag("why: ", why);
        }
    }

    tap_is_int(al_media_type_check(NULL, 0, "application/json", 16, 1, why,
                                   sizeof(why)),
               -1, "media type: none");
    tap_is_str(why, "content type must be application/json",
               "media type: why, wrong type");

    (void) al_media_type_check("application/json;charset=latin1", 31,
                               "application/json", 16, 1, why, sizeof(why));
    tap_is_str(why, "content type application/json: the charset must be "
               "utf-8", "media type: why, charset");

    (void) al_media_type_check("application/json;x", 18,
                               "application/json", 16, 1, why, sizeof(why));
    tap_is_str(why, "content type application/json: parameters must be "
               "name=value", "media type: why, parameters");

    /* only the length given is read */
    tap_is_int(al_media_type_check("application/json; charset=utf-7", 16,
                                   "application/json", 16, 1, why,
                                   sizeof(why)),
               0, "media type: read within len");

    /* any type written as one, its parameters checked */

    for (i = 0; i < sizeof(any) / sizeof(any[0]); i++) {
        why[0] = '\0';
        rc = al_media_charset_check(any[i].ctype, strlen(any[i].ctype), why,
                                    sizeof(why));
        snprintf(name, sizeof(name), "media type, any: %s", any[i].ctype);
        if (!tap_is_int(rc, any[i].want, name)) {
            tap_diag("why: ", why);
        }
    }

    tap_is_int(al_media_charset_check(NULL, 0, why, sizeof(why)),
               0, "media type, any: none");

    (void) al_media_charset_check("application/json,charset=utf-7", 30, why,
                                  sizeof(why));
    tap_is_str(why, "content type application/json: parameters must be "
               "name=value", "media type, any: why, after the type");

    (void) al_media_charset_check(" text/x-json;charset=utf-16", 27, why,
                                  sizeof(why));
    tap_is_str(why, "content type text/x-json: the charset must be utf-8",
               "media type, any: why, charset");
}


static void
test_identify(void)
{
    const char         *why;
    al_peer_t           peer;
    al_policy_t        *amb;
    al_error_t          err;
    const al_client_t  *c;

    static const char  ambiguous[] =
        "version: 1\n"
        "clients:\n"
        "  a: { unix_uid: 0 }\n"
        "  b: { unix_gid: 0 }\n"
        "  c: { cidr: 192.168.0.0/16 }\n"
        "alerts:\n"
        "  deny: { threshold: 3, window: 60s }\n";

    memset(&peer, 0, sizeof(peer));
    peer.unix_peer = 1;
    peer.uid = 0;
    peer.gid = 100;
    why = NULL;
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == agent,
           "uid 0 is agent");

    peer.uid = 1001;
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == worker,
           "uid 1001 is worker");

    peer.uid = 5000;
    peer.gid = 4242;
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == ops,
           "gid 4242 is ops");

    peer.gid = 5000;
    why = NULL;
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == NULL
           && why != NULL && strstr(why, "no client matches") != NULL,
           "unknown uid and gid: no client");

    memset(&peer, 0, sizeof(peer));
    peer.has_addr = 1;
    peer.addr[10] = 0xff;
    peer.addr[11] = 0xff;
    inet_pton(AF_INET, "10.20.30.40", &peer.addr[12]);
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == net,
           "IPv4 10.20.30.40 is net");

    inet_pton(AF_INET, "11.0.0.1", &peer.addr[12]);
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == NULL,
           "IPv4 outside the cidr: no client");

    inet_pton(AF_INET6, "fd12:3456::1", peer.addr);
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == net,
           "IPv6 fd12:3456::1 is net");

    inet_pton(AF_INET6, "fe80::1", peer.addr);
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == NULL,
           "IPv6 outside fd00::/8: no client");

    /* a unix peer's uid is not an address, and the other way round */
    memset(&peer, 0, sizeof(peer));
    peer.uid = 0;
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == NULL,
           "uid ignored unless the peer is a unix peer");

    /* tokens */
    tap_ok(al_client_identify(p, NULL, TOOLS_TOKEN, strlen(TOOLS_TOKEN), &why)
           == tools, "token identifies tools");
    tap_ok(al_client_identify(p, NULL, TOOLS_TOKEN, strlen(TOOLS_TOKEN) - 1,
                              &why) == NULL, "a prefix of the token is not it");

    memset(&peer, 0, sizeof(peer));
    peer.has_addr = 1;
    peer.addr[10] = 0xff;
    peer.addr[11] = 0xff;
    inet_pton(AF_INET, "10.0.0.7", &peer.addr[12]);
    why = NULL;
    tap_ok(al_client_identify(p, &peer, "wrong", 5, &why) == NULL
           && why != NULL && strcmp(why, "token matches no client") == 0,
           "unknown token does not fall back to the cidr");
    tap_ok(al_client_identify(p, &peer, NULL, 0, &why) == net,
           "the same peer without a token is net");
    why = NULL;
    tap_ok(al_client_identify(p, &peer, TOOLS_TOKEN, strlen(TOOLS_TOKEN),
                              &why) == NULL && why != NULL
           && strstr(why, "different clients") != NULL,
           "token and peer naming different clients: refused");

    /* two identities of one peer naming two clients */
    amb = al_policy_parse("amb.yaml", ambiguous, sizeof(ambiguous) - 1, NULL,
                          &err);
    if (!tap_ok(amb != NULL, "uid and gid on different clients load")) {
        return;
    }

    memset(&peer, 0, sizeof(peer));
    peer.unix_peer = 1;
    peer.uid = 0;
    peer.gid = 0;
    why = NULL;
    tap_ok(al_client_identify(amb, &peer, NULL, 0, &why) == NULL
           && why != NULL && strstr(why, "more than one client") != NULL,
           "ambiguous peer (uid names a, gid names b): refused");

    peer.gid = 1;
    c = al_client_identify(amb, &peer, NULL, 0, &why);
    tap_ok(c != NULL && strcmp(c->name.data, "a") == 0,
           "uid 0 with another gid is a");

    peer.has_addr = 1;
    peer.addr[10] = 0xff;
    peer.addr[11] = 0xff;
    inet_pton(AF_INET, "192.168.1.1", &peer.addr[12]);
    why = NULL;
    tap_ok(al_client_identify(amb, &peer, NULL, 0, &why) == NULL
           && why != NULL && strstr(why, "more than one client") != NULL,
           "ambiguous peer (uid names a, address names c): refused");

    al_policy_free(amb);
}


/* the trie on its own, with routes built by hand */

static void
test_trie(void)
{
    const char         *why;
    al_path_t           path;
    al_query_t          query;
    al_trie_t          *t;
    const al_route_t   *r, *other, *conflict;

    static al_str_t     s_abc[] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
    static al_str_t     s_axd[] = { { "a", 1 }, { "x", 1 }, { "d", 1 } };
    static al_str_t     s_axc[] = { { "a", 1 }, { "x", 1 }, { "c", 1 } };
    static uint8_t      p_lit[] = { 0, 0, 0 };
    static uint8_t      p_mid[] = { 0, 1, 0 };
    static al_route_t   abc = { .name = { "abc", 3 }, .methods = 0x01,
                                .segs = s_abc, .seg_is_param = p_lit,
                                .nsegs = 3 };
    static al_route_t   axd = { .name = { "axd", 3 }, .methods = 0x01,
                                .segs = s_axd, .seg_is_param = p_mid,
                                .nsegs = 3 };
    static al_route_t   axc_get = { .name = { "axc-get", 7 },
                                    .methods = 0x01 | 0x04, .segs = s_axc,
                                    .seg_is_param = p_mid, .nsegs = 3 };
    static al_route_t   axc_put = { .name = { "axc-put", 7 },
                                    .methods = 0x08, .segs = s_axc,
                                    .seg_is_param = p_mid, .nsegs = 3 };
    static al_route_t   root = { .name = { "root", 4 }, .methods = 0x01,
                                 .nsegs = 0 };

    t = al_trie_create();
    if (!tap_ok(t != NULL, "trie created")) {
        return;
    }

    tap_ok(al_trie_insert(t, &abc, &conflict) == 0
           && al_trie_insert(t, &axd, &conflict) == 0,
           "/a/b/c and /a/{x}/d do not overlap");
    tap_ok(al_trie_insert(t, &axc_get, &conflict) == -1 && conflict == &abc,
           "GET /a/{x}/c overlaps GET /a/b/c");
    tap_ok(al_trie_insert(t, &axc_put, &conflict) == 0,
           "PUT /a/{x}/c does not");
    tap_ok(al_trie_insert(t, &root, &conflict) == 0, "GET / inserted");

    al_path_parse(&path, "/a/b/d", 6, &why);
    al_trie_lookup(t, &path, AL_METHOD_GET, &r, &other);
    tap_ok(r == &axd, "lookup backtracks from b to {x}");

    al_path_parse(&path, "/a/b/c", 6, &why);
    al_trie_lookup(t, &path, AL_METHOD_PUT, &r, &other);
    tap_ok(r == &axc_put, "PUT /a/b/c is the param route");
    al_trie_lookup(t, &path, AL_METHOD_POST, &r, &other);
    tap_ok(r == NULL && other != NULL, "POST /a/b/c: other methods only");

    al_target_parse("/", 1, &path, &query, &why);
    al_trie_lookup(t, &path, AL_METHOD_GET, &r, &other);
    tap_ok(r == &root, "GET / matches the root route");

    al_trie_free(t);
}


/*
 * Regular expressions: anchored at both ends; ASCII subjects go straight to
 * the JIT code, others through pcre2_match(), which checks UTF-8 first; a
 * pattern that backtracks without end is stopped by the match limit.
 */

static void
test_regex(void)
{
    char         err[256], subject[64], *big;
    al_regex_t  *re, *bad;

    re = al_regex_compile("[a-z]+-[0-9]{2}", 15, err, sizeof(err));
    if (!tap_ok(re != NULL, "regex compiled")) {
        return;
    }

    tap_ok(al_regex_match(re, "api-42", 6), "ASCII subject matches");
    tap_ok(!al_regex_match(re, "api-42x", 7), "anchored at the end");
    tap_ok(!al_regex_match(re, "xapi-4", 6), "and at the start");
    tap_ok(!al_regex_match(re, "api-4", 5), "too short");
    tap_ok(al_regex_match(re, "ab-12\0zz", 5),
           "the length is the subject, not the NUL");
    tap_ok(!al_regex_match(re, "ab-12\0zz", 8), "an embedded NUL is seen");
    tap_ok(!al_regex_match(re, "\xc3\xa9-12", 5), "UTF-8 letter not [a-z]");
    tap_ok(!al_regex_match(re, "a\xff-12", 5), "invalid UTF-8 never matches");
    al_regex_free(re);

    re = al_regex_compile("\\w+", 3, err, sizeof(err));
    if (tap_ok(re != NULL, "\\w+ compiled")) {
        tap_ok(al_regex_match(re, "abc_1", 5), "\\w+ on ASCII");
        tap_ok(!al_regex_match(re, "ab\xc3", 3), "\\w+ on truncated UTF-8");
        al_regex_free(re);
    }

    /* also as an upstream that normalizes reads it (al_fold_like()) */
    re = al_regex_compile("(?!\\.)[^/]+", 11, err, sizeof(err));
    if (tap_ok(re != NULL, "(?!\\.)[^/]+ compiled")) {
        tap_ok(al_regex_match(re, "caf\xc3\xa9", 5), "other UTF-8 matches");
        tap_ok(!al_regex_match(re, "a\xe2\x88\x95" "b", 5),
               "U+2215 DIVISION SLASH is '/'");
        tap_ok(!al_regex_match(re, "\xe2\x80\xa5x", 4),
               "U+2025 TWO DOT LEADER is \"..\"");
        tap_ok(al_regex_match(re, "x\xd9\xaa" "2f", 5),
               "U+066A ARABIC PERCENT SIGN is '%', which [^/] takes");
        memset(subject, 'a', sizeof(subject));
        memcpy(subject + 20, "\xef\xbc\x8f", 3);
        tap_ok(!al_regex_match(re, subject, sizeof(subject)),
               "U+FF0F FULLWIDTH SOLIDUS inside a longer value");
        big = malloc(2048);
        if (tap_ok(big != NULL, "2048 bytes for a long value")) {
            memset(big, 'a', 2048);
            memcpy(big + 1500, "\xc2\xa5", 2);
            tap_ok(al_regex_match(re, big, 2048),
                   "a long value with U+00A5 YEN SIGN: no '/'");
            memcpy(big + 1000, "\xe2\x81\x84", 3);
            tap_ok(!al_regex_match(re, big, 2048),
                   "a long value with U+2044 FRACTION SLASH");
            free(big);
        }
        al_regex_free(re);
    }

    /* what NFKC reads, all of it: U+2026 is "...", five characters */
    re = al_regex_compile("[^/]{1,3}", 9, err, sizeof(err));
    if (tap_ok(re != NULL, "[^/]{1,3} compiled")) {
        tap_ok(!al_regex_match(re, "a\xe2\x80\xa6" "b", 5),
               "a\\u2026b is a...b, five characters, to the upstream");
        tap_ok(!al_regex_match(re, "\xe2\x84\x80", 3),
               "U+2100 ACCOUNT OF (a/c) has a '/'");
        al_regex_free(re);
    }

    re = al_regex_compile("[^/]{1,5}", 9, err, sizeof(err));
    if (tap_ok(re != NULL, "[^/]{1,5} compiled")) {
        tap_ok(al_regex_match(re, "a\xe2\x80\xa6" "b", 5),
               "a\\u2026b: a...b is five characters");
        al_regex_free(re);
    }

    /* a pattern that refuses "..": the leaders are two and three dots */
    re = al_regex_compile("(?!.*\\.\\.)[^\\\\]+", 16, err, sizeof(err));
    if (tap_ok(re != NULL, "(?!.*\\.\\.)[^\\\\]+ compiled")) {
        tap_ok(al_regex_match(re, "a.b/c", 5), "one dot passes");
        tap_ok(!al_regex_match(re, "\xe2\x80\xa5/etc/passwd", 14),
               "U+2025 TWO DOT LEADER then /etc/passwd: ../etc/passwd");
        tap_ok(!al_regex_match(re, "\xef\xb8\xb0/etc", 7),
               "U+FE30 (..) then /etc");
        tap_ok(!al_regex_match(re, "x\xe2\x80\xa6", 4),
               "U+2026 HORIZONTAL ELLIPSIS: ...");
        al_regex_free(re);
    }

    /* a pattern that refuses ':' (a drive) refuses its look-alikes */
    re = al_regex_compile("[^/\\\\:]+", 8, err, sizeof(err));
    if (tap_ok(re != NULL, "[^/\\\\:]+ compiled")) {
        tap_ok(al_regex_match(re, "report.txt", 10), "a name passes");
        tap_ok(!al_regex_match(re, "C\xef\xbc\x9a" "x", 5),
               "U+FF1A FULLWIDTH COLON is ':'");
        tap_ok(!al_regex_match(re, "C\xe2\x88\xb6" "x", 5),
               "U+2236 RATIO is ':' to best fit");
        tap_ok(!al_regex_match(re, "C\xe2\xa9\xb4" "x", 5),
               "U+2A74 DOUBLE COLON EQUAL is \"::=\"");
        al_regex_free(re);
    }

    /* a pattern that names a look-alike accepts what it becomes too */
    re = al_regex_compile("[0-9]+\xc2\xa5", 8, err, sizeof(err));
    if (tap_ok(re != NULL, "[0-9]+\\u00a5 compiled")) {
        tap_ok(!al_regex_match(re, "100\xc2\xa5", 5),
               "100\\u00a5 is 100\\ in cp932, which it refuses");
        al_regex_free(re);
    }

    re = al_regex_compile("[0-9]+[\xc2\xa5\\\\]", 12, err, sizeof(err));
    if (tap_ok(re != NULL, "[0-9]+[\\u00a5\\\\] compiled")) {
        tap_ok(al_regex_match(re, "100\xc2\xa5", 5),
               "100\\u00a5 both ways");
        al_regex_free(re);
    }

    bad = al_regex_compile("(a+)+b", 6, err, sizeof(err));
    if (tap_ok(bad != NULL, "backtracking pattern compiled")) {
        memset(subject, 'a', sizeof(subject));
        tap_ok(!al_regex_match(bad, subject, sizeof(subject)),
               "runaway backtracking stops at the match limit");
        al_regex_free(bad);
    }
}


static al_route_t *
route_make(route_spec_t *rs, const char *name, const char *spec)
{
    char    *save, *seg;
    size_t   n;

    memset(rs, 0, sizeof(route_spec_t));
    snprintf(rs->buf, sizeof(rs->buf), "%s", spec);

    n = 0;
    for (seg = strtok_r(rs->buf, "/", &save); seg != NULL && n < 8;
         seg = strtok_r(NULL, "/", &save))
    {
        rs->isp[n] = (seg[0] == '{');
        rs->segs[n].data = seg;
        rs->segs[n].len = strlen(seg);
        n++;
    }

    rs->r.name.data = name;
    rs->r.name.len = strlen(name);
    rs->r.methods = AL_METHOD_GET;
    rs->r.segs = rs->segs;
    rs->r.seg_is_param = rs->isp;
    rs->r.nsegs = n;

    return &rs->r;
}


/*
 * A {param} next to many literal siblings: they are skipped only when none
 * of them can continue the route, and every overlap is still found.
 */

static void
test_trie_siblings(void)
{
    char                name[16], spec[32];
    size_t              i;
    al_trie_t          *t;
    route_spec_t        lit[50], rs[8];
    const al_route_t   *conflict;

    t = al_trie_create();
    if (!tap_ok(t != NULL, "trie created")) {
        return;
    }

    for (i = 0; i < 50; i++) {
        snprintf(name, sizeof(name), "t%zu", i);
        snprintf(spec, sizeof(spec), "t%zu/x", i);
        if (al_trie_insert(t, route_make(&lit[i], "lit", spec), &conflict)
            != 0)
        {
            break;
        }
    }
    tap_ok(i == 50, "50 literal routes /tN/x");

    tap_ok(al_trie_insert(t, route_make(&rs[0], "py", "{p}/y"), &conflict)
           == 0, "/{p}/y does not overlap them");
    tap_ok(al_trie_insert(t, route_make(&rs[1], "px", "{p}/x"), &conflict)
           == -1 && conflict != NULL && conflict->nsegs == 2,
           "/{p}/x overlaps /tN/x");

    tap_ok(al_trie_insert(t, route_make(&rs[2], "uqk", "u/{q}/k"),
                          &conflict) == 0, "/u/{q}/k inserted");
    tap_ok(al_trie_insert(t, route_make(&rs[3], "pzk", "{p}/z/k"),
                          &conflict) == -1 && conflict == &rs[2].r,
           "/{p}/z/k overlaps /u/{q}/k: a literal sibling's {param} child");

    tap_ok(al_trie_insert(t, route_make(&rs[4], "mn1", "m/n1"), &conflict)
           == 0 && al_trie_insert(t, route_make(&rs[5], "mn2", "m/n2"),
                                  &conflict) == 0,
           "/m/n1 and /m/n2 inserted");
    tap_ok(al_trie_insert(t, route_make(&rs[6], "pn2", "{p}/n2"), &conflict)
           == -1 && conflict == &rs[5].r,
           "/{p}/n2 overlaps /m/n2, the second child of an existing node");

    tap_ok(al_trie_insert(t, route_make(&rs[7], "pyw", "{p}/y/w"),
                          &conflict) == 0,
           "/{p}/y/w does not overlap /{p}/y (another length)");

    al_trie_free(t);
}
