/*
 * Request decisions: who is calling, which named route a request is, and
 * whether every constraint of that route holds.  The nginx module and
 * `airlockctl explain` both call these, so what explain says is what the
 * proxy does.
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sodium.h>

#include "airlock.h"


static int al_peer_in_cidr(const al_peer_t *peer, const al_cidr_t *c);
static al_reason_t al_deny(al_decision_t *d, al_reason_t reason,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int al_drive_taken(const al_route_t *r, const al_request_t *req,
    al_decision_t *d);
static const al_route_t *al_path_listed(const al_policy_t *p,
    const al_path_t *path, const al_client_t *client);
static int al_build_uri(const al_route_t *route, al_decision_t *d,
    const size_t *param_seg);
static int al_media_params(const char *ctype, size_t len, size_t n,
    const char *type, size_t type_len, int utf8, char *why, size_t whylen);
static int al_media_tchar(unsigned char c);
static size_t al_media_charsets(const char *ctype, size_t len);


const al_client_t *
al_client_identify(const al_policy_t *p, const al_peer_t *peer,
    const char *token, size_t token_len, const char **why)
{
    size_t              i, k;
    uint8_t             hash[32];
    unsigned            hit;
    const al_client_t  *c, *by_token, *by_peer;

    by_token = NULL;
    by_peer = NULL;

    if (token != NULL) {
        crypto_hash_sha256(hash, (const unsigned char *) token, token_len);

        /* every token is compared, so timing says nothing about which */
        for (i = 0; i < p->nclients; i++) {
            c = &p->clients[i];
            for (k = 0; k < c->ntokens; k++) {
                hit = (sodium_memcmp(hash, c->tokens[k], 32) == 0);
                if (hit && by_token == NULL) {
                    by_token = c;
                }
            }
        }

        sodium_memzero(hash, sizeof(hash));

        if (by_token == NULL) {
            *why = "token matches no client";
            return NULL;
        }
    }

    for (i = 0; peer != NULL && i < p->nclients; i++) {
        c = &p->clients[i];
        hit = 0;

        for (k = 0; peer->unix_peer && k < c->nuids; k++) {
            hit |= (c->uids[k] == peer->uid);
        }

        for (k = 0; peer->unix_peer && k < c->ngids; k++) {
            hit |= (c->gids[k] == peer->gid);
        }

        for (k = 0; peer->has_addr && k < c->ncidrs; k++) {
            hit |= al_peer_in_cidr(peer, &c->cidrs[k]);
        }

        if (!hit) {
            continue;
        }

        if (by_peer != NULL && by_peer != c) {
            *why = "peer matches more than one client";
            return NULL;
        }

        by_peer = c;
    }

    if (by_token != NULL && by_peer != NULL && by_token != by_peer) {
        *why = "token and peer name different clients";
        return NULL;
    }

    if (by_token != NULL) {
        return by_token;
    }

    if (by_peer == NULL) {
        *why = token ? "token matches no client" : "no client matches the "
               "peer";
        return NULL;
    }

    return by_peer;
}


static int
al_peer_in_cidr(const al_peer_t *peer, const al_cidr_t *c)
{
    unsigned  i, bytes, bits;

    bytes = c->prefix / 8;
    bits = c->prefix % 8;

    if (memcmp(peer->addr, c->addr, bytes) != 0) {
        return 0;
    }

    if (bits == 0) {
        return 1;
    }

    i = bytes;

    return ((peer->addr[i] ^ c->addr[i]) & (0xff00 >> bits)) == 0;
}


static al_reason_t
al_deny(al_decision_t *d, al_reason_t reason, const char *fmt, ...)
{
    va_list  ap;

    d->reason = reason;

    va_start(ap, fmt);
    vsnprintf(d->detail, sizeof(d->detail), fmt, ap);
    va_end(ap);

    return reason;
}


al_reason_t
al_decide(const al_policy_t *p, const al_request_t *req, al_decision_t *d)
{
    size_t              i, k, np;
    size_t              param_seg[AL_SEGMENTS_MAX];
    unsigned            method;
    const char         *why;
    const al_str_t     *v;
    const al_route_t   *r, *other, *listed;
    const al_param_t   *qp;
    al_query_param_t   *q;

    d->reason = AL_REASON_NONE;
    d->route = NULL;
    d->detail[0] = '\0';
    d->uri_len = 0;
    d->uri[0] = '\0';

    if (al_target_parse_drives(req->target, req->target_len, &d->path,
                               &d->query, &why)
        != 0)
    {
        return al_deny(d, AL_REASON_PATH, "request target refused: %s", why);
    }

    method = al_method_bit(req->method, req->method_len);

    /* with method 0 (never allowed) only other is found */

    al_trie_lookup(p->trie, &d->path, method, &r, &other);

    /*
     * a segment with a drive passes only where the route takes one: the
     * route matched, or the one for the path under other methods, whose
     * method refusal follows; either only if it lists the client (else
     * one of the path's that does), as a route that does not is none to
     * it (below)
     */

    if (d->path.drive != 0) {
        listed = (r != NULL) ? r : other;

        if (listed != NULL && req->client != NULL
            && !listed->client_ok[req->client->index])
        {
            listed = al_path_listed(p, &d->path, req->client);
        }

        if (al_drive_taken(listed, req, d) != 0) {
            return d->reason;
        }
    }

    if (method == 0) {
        return al_deny(d, AL_REASON_METHOD, "method \"%.*s\" is never "
                       "allowed", (int) (req->method_len > 16
                                         ? 16 : req->method_len),
                       req->method);
    }

    /*
     * A route of the path that does not list the client is, to it, as
     * if there were none: "method" when one of the path's routes lists
     * it under another method, no_route otherwise, whether or not some
     * route takes this method.  Either answer would otherwise tell the
     * client of a route it cannot use.  The deny log's detail names the
     * route for the operator.
     */

    if (r == NULL && other == NULL) {
        return al_deny(d, AL_REASON_NO_ROUTE, "no route matches this path");
    }

    if (r == NULL
        || (req->client != NULL && !r->client_ok[req->client->index]))
    {
        listed = (req->client != NULL)
                 ? al_path_listed(p, &d->path, req->client) : other;

        if (listed == NULL) {
            d->route = (r != NULL) ? r : other;
            return al_deny(d, AL_REASON_NO_ROUTE, "route \"%s\" does not "
                           "list client \"%s\"", d->route->name.data,
                           req->client->name.data);
        }

        d->route = listed;
        return al_deny(d, AL_REASON_METHOD, "route \"%s\" does not allow %s",
                       listed->name.data, al_method_name(method));
    }

    d->route = r;

    if (req->client == NULL) {
        return al_deny(d, AL_REASON_CLIENT_UNKNOWN, "unknown client");
    }

    /* path params, in path order */
    np = 0;
    for (i = 0; i < r->nsegs; i++) {
        if (!r->seg_is_param[i]) {
            continue;
        }
        if (!al_regex_match_name(r->params[np].re, d->path.seg[i].data,
                                 d->path.seg[i].len))
        {
            return al_deny(d, AL_REASON_PARAM, "param \"%s\" does not match "
                           "%s", r->params[np].name.data,
                           r->params[np].pattern.data);
        }
        param_seg[np++] = i;
    }

    /* query: every name allowed and matching, every required one given */
    for (i = 0; i < d->query.nparam; i++) {
        q = &d->query.param[i];
        qp = NULL;

        for (k = 0; k < r->nquery_allow; k++) {
            v = &r->query_allow[k];
            if (v->len == q->name.len
                && memcmp(v->data, q->name.data, v->len) == 0)
            {
                qp = &r->query_patterns[k];
                break;
            }
        }

        if (qp == NULL) {
            return al_deny(d, AL_REASON_QUERY, "query parameter \"%.*s\" is "
                           "not allowed", (int) (q->name.len > 64
                                                 ? 64 : q->name.len),
                           q->name.data);
        }

        if (qp->re != NULL
            && !al_regex_match_name(qp->re, q->value.data, q->value.len))
        {
            return al_deny(d, AL_REASON_QUERY, "query parameter \"%s\" does "
                           "not match %s", qp->name.data, qp->pattern.data);
        }
    }

    for (k = 0; k < r->nquery_allow; k++) {
        if (!r->query_required[k]) {
            continue;
        }
        for (i = 0; i < d->query.nparam; i++) {
            q = &d->query.param[i];
            if (q->name.len == r->query_allow[k].len
                && memcmp(q->name.data, r->query_allow[k].data, q->name.len)
                   == 0)
            {
                break;
            }
        }
        if (i == d->query.nparam) {
            return al_deny(d, AL_REASON_QUERY, "query parameter \"%s\" is "
                           "required", r->query_allow[k].data);
        }
    }

    if (al_build_uri(r, d, param_seg) != 0) {
        return al_deny(d, AL_REASON_PATH, "upstream URI too long");
    }

    return AL_REASON_NONE;
}


/*
 * A route for the path, under any method, that lists the client; NULL:
 * none does.  Only for a route found that does not list it, a refusal
 * or a drive's check: a lookup per method.
 */

static const al_route_t *
al_path_listed(const al_policy_t *p, const al_path_t *path,
    const al_client_t *client)
{
    unsigned           bit;
    const al_route_t  *r, *other;

    for (bit = AL_METHOD_GET; bit <= AL_METHOD_OPTIONS; bit <<= 1) {
        al_trie_lookup(p->trie, path, bit, &r, &other);

        if (r != NULL && r->client_ok[client->index]) {
            return r;
        }
    }

    return NULL;
}


/*
 * 0 when every segment of the path that starts with a drive ("A:B") is
 * one the route r takes there: a param with "drive: true".  Otherwise the
 * request is refused as al_target_parse() refuses it (path, "drive
 * letter"), before anything else of the route is looked at, so whatever
 * its method and client; the param and the route are named only to a
 * client the route lists, as no_route names nothing to the others.
 */

static int
al_drive_taken(const al_route_t *r, const al_request_t *req,
    al_decision_t *d)
{
    size_t             i, np;
    const al_path_t   *path;
    const al_param_t  *param;

    path = &d->path;

    if (r == NULL || r->nsegs != path->nseg) {
        al_deny(d, AL_REASON_PATH, "request target refused: drive letter");
        return -1;
    }

    np = 0;

    for (i = 0; i < path->nseg; i++) {
        param = r->seg_is_param[i] ? &r->params[np++] : NULL;

        if (!(path->drive & ((uint64_t) 1 << i))
            || (param != NULL && param->drive))
        {
            continue;
        }

        if (param == NULL || req->client == NULL
            || !r->client_ok[req->client->index])
        {
            al_deny(d, AL_REASON_PATH, "request target refused: drive "
                    "letter");
            return -1;
        }

        d->route = r;
        al_deny(d, AL_REASON_PATH, "request target refused: drive letter "
                "in param \"%s\" of route \"%s\", which does not take "
                "one", param->name.data, r->name.data);
        return -1;
    }

    return 0;
}


/*
 * The proxy's own refusals of a target built for r, for its clients to
 * check before they send it (airlock.h): a denial counts against the
 * client, and the worker's is every job's.
 */

int
al_route_target(const al_route_t *r, const char *target, size_t len,
    const char **why)
{
    size_t             i, np;
    al_path_t          path;
    al_query_t         query;
    const al_param_t  *param;

    *why = NULL;

    if (al_target_parse_drives(target, len, &path, &query, why) != 0) {
        if (*why == NULL) {
            *why = "request target refused";
        }
        return -1;
    }

    if (path.nseg != r->nsegs) {
        *why = "not the route's segments";
        return -1;
    }

    /* as al_drive_taken() reads the route's params: in segment order */

    np = 0;

    for (i = 0; i < path.nseg; i++) {
        param = r->seg_is_param[i] ? &r->params[np++] : NULL;

        if ((path.drive & ((uint64_t) 1 << i))
            && (param == NULL || !param->drive))
        {
            *why = "drive letter";
            return -1;
        }
    }

    return 0;
}


/*
 * The upstream URI is written from the decoded, validated segments and
 * query pairs, re-encoded one way, never from the client's bytes.
 */

static int
al_build_uri(const al_route_t *r, al_decision_t *d, const size_t *param_seg)
{
    size_t                   i, n, cap;
    char                    *out;
    const al_str_t          *seg;
    const al_query_param_t  *q;

    out = d->uri;
    cap = sizeof(d->uri) - 1;
    n = 0;

#define AL_PUT(s, l)                                                         \
    do {                                                                     \
        if (n + (l) > cap) {                                                 \
            return -1;                                                       \
        }                                                                    \
        memcpy(out + n, (s), (l));                                           \
        n += (l);                                                            \
    } while (0)

#define AL_ESC(s, l, query)                                                  \
    do {                                                                     \
        size_t  need;                                                        \
        need = al_uri_escape(out + n, cap - n, (s), (l), (query));           \
        if (need > cap - n) {                                                \
            return -1;                                                       \
        }                                                                    \
        n += need;                                                           \
    } while (0)

    AL_PUT(r->upstream->base_path.data, r->upstream->base_path.len);

    for (i = 0; i < r->nto_parts; i++) {
        if (r->to_param[i] < 0) {
            AL_PUT(r->to_parts[i].data, r->to_parts[i].len);
            continue;
        }
        seg = &d->path.seg[param_seg[r->to_param[i]]];
        AL_ESC(seg->data, seg->len, 0);
    }

    if (n == 0) {
        AL_PUT("/", 1);
    }

    for (i = 0; i < d->query.nparam; i++) {
        q = &d->query.param[i];
        AL_PUT(i == 0 ? "?" : "&", 1);
        AL_ESC(q->name.data, q->name.len, 1);
        AL_PUT("=", 1);
        AL_ESC(q->value.data, q->value.len, 1);
    }

#undef AL_PUT
#undef AL_ESC

    out[n] = '\0';
    d->uri_len = n;

    return 0;
}


al_reason_t
al_decide_body(const al_route_t *route, const char *ctype, size_t ctype_len,
    const unsigned char *body, size_t len, al_decision_t *d)
{
    int                 rc, utf8;
    const al_inject_t  *inj;

    /*
     * The upstream reads the body under the Content-Type it is sent: a
     * route that injects one sends that, never the client's, so it is
     * the one checked.  Without the secrets open (airlockctl), a
     * template stands for its value: a media type holds no secret.
     */

    inj = route->inject_ctype;

    if (inj != NULL) {
        if (inj->value != NULL) {
            ctype = (const char *) inj->value;
            ctype_len = inj->len;

        } else {
            ctype = inj->tmpl.data;
            ctype_len = inj->tmpl.len;
        }
    }

    if (!route->has_body) {
        if (len > 0) {
            return al_deny(d, AL_REASON_BODY_TOO_LARGE, "route \"%s\" takes "
                           "no request body", route->name.data);
        }
        return AL_REASON_NONE;
    }

    if (len > route->body_max) {
        return al_deny(d, AL_REASON_BODY_TOO_LARGE, "body of %zu bytes is "
                       "over the route's max_bytes %zu", len,
                       route->body_max);
    }

    /*
     * A body read as JSON, by the route's json rules or for its names
     * below, is read as UTF-8: so must the upstream be, or
     * {"+AF8-method":1} under "charset=utf-7" is {"_method":1} to it.
     * Then the parameters must parse and a charset must be utf-8,
     * whatever the media type when the route names none.
     */

    utf8 = (route->json != NULL
            || (len > 0 && al_json_media(ctype, ctype_len)));

    if (route->content_type.len) {
        rc = al_media_type_check(ctype, ctype_len, route->content_type.data,
                                 route->content_type.len, utf8, d->detail,
                                 sizeof(d->detail));

    } else if (utf8) {
        rc = al_media_charset_check(ctype, ctype_len, d->detail,
                                    sizeof(d->detail));

    } else {
        rc = 0;
    }

    if (rc != 0) {
        d->reason = AL_REASON_BODY;
        return AL_REASON_BODY;
    }

    /*
     * a form's _method field would be read upstream as the method, and a
     * field named like a checked param as that param
     */

    if (al_form_check(ctype, ctype_len, body, len, route->params,
                      route->nparams, route->query_patterns,
                      route->nquery_allow, route->query_checked, d->detail,
                      sizeof(d->detail))
        != 0)
    {
        d->reason = AL_REASON_BODY;
        return AL_REASON_BODY;
    }

    if (route->json != NULL
        && al_json_check(route->json, body, len, d->detail,
                         sizeof(d->detail)) != 0)
    {
        d->reason = AL_REASON_BODY;
        return AL_REASON_BODY;
    }

    /*
     * Without json rules a JSON body is read for its top-level names
     * alone, as the form above is; one that does not parse strictly is
     * refused, since a lenient reader upstream (comments, single quotes,
     * a key given twice) could still find such a name in it.
     */

    if (route->json == NULL && al_json_media(ctype, ctype_len)
        && al_json_names_check(route->params, route->nparams,
                               route->query_patterns, route->nquery_allow,
                               body, len, d->detail, sizeof(d->detail))
           != 0)
    {
        d->reason = AL_REASON_BODY;
        return AL_REASON_BODY;
    }

    return AL_REASON_NONE;
}


/*
 * "application/json; charset=utf-8" is application/json; the parameters
 * after the type are read by al_media_params().
 */

int
al_media_type_check(const char *ctype, size_t len, const char *want,
    size_t want_len, int utf8, char *why, size_t whylen)
{
    int     rc;
    size_t  n;

    if (ctype == NULL) {
        goto type;
    }

    /* what nearly every client sends, in one compare */

    if (len == want_len && memcmp(ctype, want, len) == 0) {
        return 0;
    }

    for (n = 0; n < len && ctype[n] != ';' && ctype[n] != ' '
                && ctype[n] != '\t'; n++)
    {
        /* void */
    }

    if (n != want_len || strncasecmp(ctype, want, n) != 0) {
        goto type;
    }

    rc = al_media_params(ctype, len, n, want, want_len, utf8, why, whylen);

    if (rc != 1) {
        return rc;
    }

type:

    (void) snprintf(why, whylen, "content type must be %.*s",
                    (int) want_len, want);
    return -1;
}


/*
 * Any type is taken, but only as a media type is written (tchar and '/'),
 * so that no reader can find a parameter in it:
 * "application/json,charset=utf-7" has one for Rack.
 */

int
al_media_charset_check(const char *ctype, size_t len, char *why,
    size_t whylen)
{
    int     rc;
    size_t  n, start;

    if (ctype == NULL) {
        return 0;
    }

    for (start = 0; start < len && (ctype[start] == ' '
                                    || ctype[start] == '\t'); start++)
    {
        /* void */
    }

    for (n = start; n < len && (al_media_tchar((unsigned char) ctype[n])
                                || ctype[n] == '/'); n++)
    {
        /* void */
    }

    rc = al_media_params(ctype, len, n, ctype + start, n - start, 1, why,
                         whylen);

    if (rc != 1) {
        return rc;
    }

    (void) snprintf(why, whylen, "content type %.*s: parameters must be "
                    "name=value", (int) (n - start), ctype + start);
    return -1;
}


/*
 * The parameters after the media type, from ctype[n] on: blanks, then
 * nothing or ";" and a parameter, and so on.  With utf8 each must parse
 * as RFC 9110 has it (name=token or name="quoted string") and a charset
 * must be utf-8 (or utf8, its other name).  A parameter's value is kept
 * only as far as "utf-8" is long: that is all it is compared with, and
 * its length tells a longer one apart.  Returns 0; -1 with the reason in
 * why (type is the media type it names); or 1, why untouched, when
 * something other than ';' follows the type.
 *
 * With utf8, "charset" may also be nowhere else in the parameters, in
 * any case: Tomcat's getCharacterEncoding() takes what follows the first
 * "charset=" wherever it is (in "xcharset=shift_jis", in a quoted
 * value), and Spring MVC reads a JSON body in it.  The media type before
 * ctype[n] is not looked at: it holds no '=' (the callers end it at any
 * byte but a token's and '/', or compare it with the route's), so no
 * reader finds a charset in "application/vnd.charset+json".
 */

static int
al_media_params(const char *ctype, size_t len, size_t n, const char *type,
    size_t type_len, int utf8, char *why, size_t whylen)
{
    size_t         name, name_len, vlen, escaped, nset, start;
    char           value[sizeof("utf-8") - 1];
    unsigned char  c;

    nset = 0;                               /* charset parameters read */
    start = n;                              /* the parameters begin here */

    for ( ;; ) {
        while (n < len && (ctype[n] == ' ' || ctype[n] == '\t')) {
            n++;
        }

        if (n == len) {
            break;
        }

        /* only parameters may follow */
        if (ctype[n++] != ';') {
            return 1;
        }

        if (!utf8) {
            return 0;
        }

        while (n < len && (ctype[n] == ' ' || ctype[n] == '\t')) {
            n++;
        }

        if (n == len || ctype[n] == ';') {
            continue;                       /* an empty one: allowed */
        }

        name = n;

        while (n < len && al_media_tchar((unsigned char) ctype[n])) {
            n++;
        }

        name_len = n - name;

        if (name_len == 0 || n == len || ctype[n++] != '=') {
            goto params;
        }

        /* the value, unquoted */

        vlen = 0;
        escaped = 0;

        if (n < len && ctype[n] == '"') {
            n++;

            for ( ;; ) {
                if (n == len) {
                    goto params;
                }

                c = (unsigned char) ctype[n++];

                if (c == '"') {
                    break;
                }

                if (c == '\\') {
                    if (n == len) {
                        goto params;
                    }

                    escaped = 1;
                    c = (unsigned char) ctype[n++];
                }

                if ((c < 0x20 && c != '\t') || c == 0x7f) {
                    goto params;
                }

                if (vlen < sizeof(value)) {
                    value[vlen] = (char) c;
                }

                vlen++;
            }

        } else {
            while (n < len && al_media_tchar((unsigned char) ctype[n])) {
                if (vlen < sizeof(value)) {
                    value[vlen] = ctype[n];
                }

                vlen++;
                n++;
            }

            if (vlen == 0) {
                goto params;
            }
        }

        /* "charset*" (RFC 2231) is a charset to some readers too */

        if (name_len >= sizeof("charset") - 1
            && strncasecmp(ctype + name, "charset", sizeof("charset") - 1)
               == 0
            && (name_len != sizeof("charset") - 1
                || escaped          /* "utf\-8": few readers unquote it */
                || !((vlen == sizeof(value)
                      && strncasecmp(value, "utf-8", sizeof(value)) == 0)
                     || (vlen == sizeof("utf8") - 1
                         && strncasecmp(value, "utf8", vlen) == 0))))
        {
            (void) snprintf(why, whylen, "content type %.*s: the charset "
                            "must be utf-8", (int) type_len, type);
            return -1;
        }

        if (name_len == sizeof("charset") - 1
            && strncasecmp(ctype + name, "charset", name_len) == 0)
        {
            nset++;
        }
    }

    if (utf8 && al_media_charsets(ctype + start, len - start) != nset) {
        (void) snprintf(why, whylen, "content type %.*s: \"charset\" "
                        "outside a charset parameter", (int) type_len,
                        type);
        return -1;
    }

    return 0;

params:

    (void) snprintf(why, whylen, "content type %.*s: parameters must be "
                    "name=value", (int) type_len, type);
    return -1;
}


/* how many times "charset" is in ctype, in any case */

static size_t
al_media_charsets(const char *ctype, size_t len)
{
    size_t  i, n;

    n = 0;

    for (i = 0; i + sizeof("charset") - 1 <= len; i++) {
        if ((ctype[i] | 0x20) == 'c'
            && strncasecmp(ctype + i, "charset", sizeof("charset") - 1) == 0)
        {
            n++;
        }
    }

    return n;
}


/* RFC 9110 tchar: the bytes of a token */

static int
al_media_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z'))
    {
        return 1;
    }

    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}
