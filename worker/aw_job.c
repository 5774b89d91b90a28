/*
 * Job envelopes in, results out (docs/jobs.md).  An envelope is refused,
 * never interpreted: invalid JSON, duplicate keys, unknown or missing
 * fields, an oversized script, a route the policy does not name, path
 * params that do not fit the route, or limits above the operator's maxima
 * each end in a "rejected" result whose error names the problem.  One
 * over max_envelope_bytes is not parsed at all; its ids are read by a
 * scan of the top level that builds nothing (aw_scan.c), so that it is
 * answered too.
 */

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "aw.h"


/* a bounded buffer text is appended to (aw_result_unstored()) */
typedef struct {
    char            *p;
    char            *end;
    int              over;
} aw_text_t;


static int aw_id_valid(const char *s);
static int aw_reject(char *code, size_t codelen, char *err, size_t errlen,
    const char *c, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int aw_only_keys(json_t *obj, const char *const *keys,
    const char **bad);
static int aw_input_parse(const aw_conf_t *conf, const al_policy_t *policy,
    json_t *in, size_t idx, aw_input_t *out, char *code, size_t codelen,
    char *err, size_t errlen);
static int aw_limits_parse(const aw_conf_t *conf, json_t *lim,
    aw_limits_t *out, char *code, size_t codelen, char *err, size_t errlen);
static void aw_text(aw_text_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void aw_text_str(aw_text_t *b, const char *s);


static const char *const  aw_env_keys[] = {
    "job_id", "session_id", "script", "blueprint", "limits", NULL
};

static const char *const  aw_input_keys[] = {
    "name", "route", "params", "query", "body", NULL
};

static const char *const  aw_limit_keys[] = {
    "wall_ms", "cpu_ms", "memory_mb", "pids", "stdout_bytes",
    "stderr_bytes", NULL
};


static int
aw_id_valid(const char *s)
{
    size_t  n;

    for (n = 0; s[n] != '\0'; n++) {
        if (!isalnum((unsigned char) s[n]) && s[n] != '_' && s[n] != '-') {
            return 0;
        }
    }

    return n >= 1 && n <= AW_ID_MAX;
}


static int
aw_reject(char *code, size_t codelen, char *err, size_t errlen,
    const char *c, const char *fmt, ...)
{
    va_list  ap;

    snprintf(code, codelen, "%s", c);
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);

    return -1;
}


static int
aw_only_keys(json_t *obj, const char *const *keys, const char **bad)
{
    const char         *k;
    json_t             *v;
    const char *const  *p;

    json_object_foreach(obj, k, v) {
        for (p = keys; *p != NULL; p++) {
            if (strcmp(*p, k) == 0) {
                break;
            }
        }

        if (*p == NULL) {
            *bad = k;
            return -1;
        }
    }

    return 0;
}


static int
aw_input_parse(const aw_conf_t *conf, const al_policy_t *policy, json_t *in,
    size_t idx, aw_input_t *out, char *code, size_t codelen, char *err,
    size_t errlen)
{
    char              *buf, *val_s;
    size_t             cap, n, i, k;
    unsigned           bit;
    const char        *bad, *name, *route_name, *qk, *why;
    json_t            *jname, *jroute, *params, *query, *body, *v;
    const al_route_t  *route;

    (void) conf;

    if (!json_is_object(in)) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "blueprint.inputs[%zu] must be an object", idx);
    }

    if (aw_only_keys(in, aw_input_keys, &bad) != 0) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "blueprint.inputs[%zu]: unknown field \"%s\"",
                         idx, bad);
    }

    jname = json_object_get(in, "name");
    jroute = json_object_get(in, "route");

    if (!json_is_string(jname) || !aw_id_valid(json_string_value(jname))) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "blueprint.inputs[%zu].name must be 1 to 64 of "
                         "[A-Za-z0-9_-]", idx);
    }

    name = json_string_value(jname);
    snprintf(out->name, sizeof(out->name), "%s", name);

    if (!json_is_string(jroute)) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "input \"%s\": route must be a string", name);
    }

    route_name = json_string_value(jroute);
    route = al_policy_route(policy, route_name, strlen(route_name));

    if (route == NULL) {
        return aw_reject(code, codelen, err, errlen, "unknown_route",
                         "input \"%s\": the policy has no route \"%.64s\"",
                         name, route_name);
    }

    params = json_object_get(in, "params");
    query = json_object_get(in, "query");
    body = json_object_get(in, "body");

    if (params != NULL && !json_is_object(params)) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "input \"%s\": params must be an object", name);
    }

    if (query != NULL && !json_is_object(query)) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "input \"%s\": query must be an object", name);
    }

    /* every path param of the route, and nothing else */

    n = params != NULL ? json_object_size(params) : 0;
    if (n != route->nparams) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "input \"%s\": route \"%s\" takes %zu path "
                         "param(s), %zu given", name, route_name,
                         route->nparams, n);
    }

    cap = AL_URI_MAX;
    buf = malloc(cap + 1);
    if (buf == NULL) {
        return aw_reject(code, codelen, err, errlen, "internal",
                         "out of memory");
    }

    n = 0;

    for (i = 0; i < route->nsegs; i++) {
        if (n < cap) {
            buf[n] = '/';
        }
        n++;

        if (!route->seg_is_param[i]) {
            if (n + route->segs[i].len <= cap) {
                memcpy(buf + n, route->segs[i].data, route->segs[i].len);
            }
            n += route->segs[i].len;
            continue;
        }

        v = NULL;
        for (k = 0; k < route->nparams && v == NULL; k++) {
            if (route->params[k].name.len == route->segs[i].len
                && memcmp(route->params[k].name.data, route->segs[i].data,
                          route->segs[i].len) == 0)
            {
                char  pname[128];

                snprintf(pname, sizeof(pname), "%.*s",
                         (int) route->segs[i].len, route->segs[i].data);
                v = json_object_get(params, pname);
                if (v == NULL) {
                    free(buf);
                    return aw_reject(code, codelen, err, errlen,
                                     "bad_envelope", "input \"%s\": path "
                                     "param \"%s\" is missing", name, pname);
                }
            }
        }

        if (!json_is_string(v) || json_string_length(v) == 0) {
            free(buf);
            return aw_reject(code, codelen, err, errlen, "bad_envelope",
                             "input \"%s\": path params must be non-empty "
                             "strings", name);
        }

        /* a dot segment would name another path (another route) */

        if (strcmp(json_string_value(v), ".") == 0
            || strcmp(json_string_value(v), "..") == 0)
        {
            free(buf);
            return aw_reject(code, codelen, err, errlen, "bad_envelope",
                             "input \"%s\": path param \"%.*s\" may not "
                             "be \".\" or \"..\"", name,
                             (int) route->segs[i].len, route->segs[i].data);
        }

        n += al_uri_escape(n < cap ? buf + n : buf, n < cap ? cap - n : 0,
                           json_string_value(v), json_string_length(v), 0);
    }

    if (route->nsegs == 0) {
        if (n < cap) {
            buf[n] = '/';
        }
        n++;
    }

    if (query != NULL) {
        i = 0;
        json_object_foreach(query, qk, v) {
            if (!json_is_string(v)) {
                free(buf);
                return aw_reject(code, codelen, err, errlen, "bad_envelope",
                                 "input \"%s\": query \"%.64s\" must be a "
                                 "string", name, qk);
            }

            if (n < cap) {
                buf[n] = i++ == 0 ? '?' : '&';
            }
            n++;
            n += al_uri_escape(n < cap ? buf + n : buf,
                               n < cap ? cap - n : 0, qk, strlen(qk), 1);
            if (n < cap) {
                buf[n] = '=';
            }
            n++;
            n += al_uri_escape(n < cap ? buf + n : buf,
                               n < cap ? cap - n : 0, json_string_value(v),
                               json_string_length(v), 1);
        }
    }

    if (n > cap) {
        free(buf);
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "input \"%s\": the request target would be longer "
                         "than %zu bytes", name, cap);
    }

    buf[n] = '\0';

    /*
     * What the proxy would refuse as a target is not fetched: a path
     * param the escaping keeps that is a dot segment all the same (".. "
     * is "..%20"), a drive ("C:..", or "C:x" where the route's param
     * takes none), an empty query name.  The proxy's own code says
     * (al_route_target()), so the two cannot differ; the denial would
     * count against the worker's client, which every job shares.  The
     * route's own patterns are the proxy's to check.
     */

    if (al_route_target(route, buf, n, &why) != 0) {
        free(buf);
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "input \"%s\": its params make a request target "
                         "the proxy refuses (%s)", name, why);
    }

    out->path = buf;

    /* the method: the route's, POST-like when a body is given */

    out->method = NULL;

    for (bit = 1; bit <= AL_METHOD_OPTIONS; bit <<= 1) {
        if (!(route->methods & bit)) {
            continue;
        }

        if ((body != NULL)
            == ((bit & (AL_METHOD_POST | AL_METHOD_PUT | AL_METHOD_PATCH))
                != 0))
        {
            out->method = al_method_name(bit);
            break;
        }
    }

    if (out->method == NULL) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "input \"%s\": route \"%s\" %s", name, route_name,
                         body != NULL ? "takes no body"
                                      : "needs a body");
    }

    /*
     * A string is the body's text, sent as it is, as a tool call of the
     * route sends it (agent/ag_run.c, ag_tool_route()): the route's tool
     * takes a body without JSON rules as a string, and run_python's
     * inputs take the body "as for that route's tool".  Any other value
     * is its JSON text.  A string was sent JSON-encoded, "\"...\"": the
     * upstream read a JSON string where the tool call had sent it the
     * text, and a route with JSON rules refused it.  The envelope's
     * parse refuses a "\u0000", so the text has no NUL.
     */

    out->ctype = (body != NULL) ? al_tool_content_type(route) : NULL;

    if (json_is_string(body)) {
        if (strlen(json_string_value(body)) != json_string_length(body)) {
            return aw_reject(code, codelen, err, errlen, "bad_envelope",
                             "input \"%s\": the body has a NUL byte",
                             name);
        }

        out->body = strdup(json_string_value(body));
        if (out->body == NULL) {
            return aw_reject(code, codelen, err, errlen, "internal",
                             "out of memory");
        }

    } else if (body != NULL) {
        val_s = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
        if (val_s == NULL) {
            return aw_reject(code, codelen, err, errlen, "internal",
                             "out of memory");
        }
        out->body = val_s;
    }

    return 0;
}


static int
aw_limits_parse(const aw_conf_t *conf, json_t *lim, aw_limits_t *out,
    char *code, size_t codelen, char *err, size_t errlen)
{
    int          i;
    long        *o;
    const long  *m;
    json_t      *v;
    json_int_t   x;
    const char  *bad;

    *out = conf->defaults;

    if (lim == NULL) {
        return 0;
    }

    if (!json_is_object(lim)) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "limits must be an object");
    }

    if (aw_only_keys(lim, aw_limit_keys, &bad) != 0) {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "limits: unknown field \"%s\"", bad);
    }

    o = &out->wall_ms;
    m = &conf->maxima.wall_ms;

    for (i = 0; aw_limit_keys[i] != NULL; i++) {
        v = json_object_get(lim, aw_limit_keys[i]);
        if (v == NULL) {
            continue;
        }

        if (!json_is_integer(v) || json_integer_value(v) < 1) {
            return aw_reject(code, codelen, err, errlen, "bad_envelope",
                             "limits.%s must be a positive integer",
                             aw_limit_keys[i]);
        }

        x = json_integer_value(v);
        if (x > m[i]) {
            return aw_reject(code, codelen, err, errlen, "limit_exceeded",
                             "limits.%s %lld is above the maximum %ld",
                             aw_limit_keys[i], (long long) x, m[i]);
        }

        o[i] = (long) x;
    }

    if (out->memory_mb < 16 || out->pids < 8 || out->cpu_ms < 1000
        || out->wall_ms < 100)
    {
        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "limits below the floor (memory_mb 16, pids 8, "
                         "cpu_ms 1000, wall_ms 100)");
    }

    return 0;
}


/*
 * The ids of an envelope that is refused unparsed (too large, or
 * delivered too often) or as invalid JSON, by aw_envelope_ids()'s
 * scan, so that the refusal can still be answered: a job_id named once
 * at the top level, and the session_id beside it.  job is cleared
 * first.
 */

void
aw_job_scan_ids(const char *raw, size_t len, aw_job_t *job)
{
    char  jtext[AW_ID_MAX + 1], stext[AW_ID_MAX + 1];

    memset(job, 0, sizeof(*job));
    aw_envelope_ids(raw, len, jtext, stext);

    if (!aw_id_valid(jtext)) {
        return;
    }

    snprintf(job->job_id, sizeof(job->job_id), "%s", jtext);

    if (aw_id_valid(stext)) {
        snprintf(job->session_id, sizeof(job->session_id), "%s", stext);
    }
}


/*
 * The ids of a job from the record "<job_id> <session_id>" the worker
 * keeps while it runs the job (airlock_worker.c): both valid, or none.
 */

void
aw_job_ids_read(const char *rec, size_t len, aw_job_t *job)
{
    char         jtext[AW_ID_MAX + 1], stext[AW_ID_MAX + 1];
    const char  *sp;

    memset(job, 0, sizeof(*job));

    sp = memchr(rec, ' ', len);
    if (sp == NULL || (size_t) (sp - rec) > AW_ID_MAX
        || len - (size_t) (sp - rec) - 1 > AW_ID_MAX)
    {
        return;
    }

    memcpy(jtext, rec, (size_t) (sp - rec));
    jtext[sp - rec] = '\0';
    memcpy(stext, sp + 1, len - (size_t) (sp - rec) - 1);
    stext[len - (size_t) (sp - rec) - 1] = '\0';

    if (aw_id_valid(jtext) && aw_id_valid(stext)) {
        snprintf(job->job_id, sizeof(job->job_id), "%s", jtext);
        snprintf(job->session_id, sizeof(job->session_id), "%s", stext);
    }
}


int
aw_job_parse(const aw_conf_t *conf, const void *policy, const char *raw,
    size_t len, aw_job_t *job, char *code, size_t codelen, char *err,
    size_t errlen)
{
    size_t        i, j;
    json_t       *root, *jid, *sid, *script, *bp, *inputs, *in;
    const char   *bad;
    json_error_t  je;
    int           rc;

    memset(job, 0, sizeof(*job));
    code[0] = '\0';
    err[0] = '\0';

    if ((long) len > conf->max_envelope_bytes) {
        /* not parsed; the ids by a scan, for the refusal to be answered */
        aw_job_scan_ids(raw, len, job);

        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "envelope is %zu bytes, the maximum is %ld", len,
                         conf->max_envelope_bytes);
    }

    root = json_loadb(raw, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL) {
        /*
         * Refused all the same; a job_id that can still be read lets the
         * answer reach the client instead of only the dead-letter
         * stream, whatever the fault elsewhere (a duplicate key, a byte
         * that is not UTF-8, a bad escape or an integer too big in the
         * script or the limits).  Read by the rule of an oversized
         * envelope's (aw_envelope_ids()): named once at the top level,
         * unescaped, the object's brackets matched and nothing after
         * it, or there is no id.  Only a duplicate key was answered: a
         * second, lenient parse had to take the text for an object, and
         * a client whose envelope failed for anything else waited for
         * an answer that never came.
         */
        aw_job_scan_ids(raw, len, job);

        return aw_reject(code, codelen, err, errlen, "bad_envelope",
                         "invalid JSON at line %d, column %d: %s",
                         je.line, je.column, je.text);
    }

    rc = -1;

    if (!json_is_object(root)) {
        aw_reject(code, codelen, err, errlen, "bad_envelope",
                  "the envelope must be a JSON object");
        goto done;
    }

    /* the ids first, so that every later problem can be answered */

    jid = json_object_get(root, "job_id");
    sid = json_object_get(root, "session_id");

    if (!json_is_string(jid) || !aw_id_valid(json_string_value(jid))) {
        aw_reject(code, codelen, err, errlen, "bad_envelope",
                  "job_id must be 1 to 64 of [A-Za-z0-9_-]");
        goto done;
    }

    snprintf(job->job_id, sizeof(job->job_id), "%s",
             json_string_value(jid));

    if (!json_is_string(sid) || !aw_id_valid(json_string_value(sid))) {
        aw_reject(code, codelen, err, errlen, "bad_envelope",
                  "session_id must be 1 to 64 of [A-Za-z0-9_-]");
        goto done;
    }

    snprintf(job->session_id, sizeof(job->session_id), "%s",
             json_string_value(sid));

    if (aw_only_keys(root, aw_env_keys, &bad) != 0) {
        aw_reject(code, codelen, err, errlen, "bad_envelope",
                  "unknown field \"%.64s\"", bad);
        goto done;
    }

    script = json_object_get(root, "script");
    if (!json_is_string(script)) {
        aw_reject(code, codelen, err, errlen, "bad_envelope",
                  "script must be a string");
        goto done;
    }

    if ((long) json_string_length(script) > conf->max_script_bytes) {
        aw_reject(code, codelen, err, errlen, "script_too_large",
                  "script is %zu bytes, the maximum is %ld",
                  json_string_length(script), conf->max_script_bytes);
        goto done;
    }

    bp = json_object_get(root, "blueprint");
    if (!json_is_object(bp)) {
        aw_reject(code, codelen, err, errlen, "bad_envelope",
                  "blueprint must be an object");
        goto done;
    }

    if (json_object_size(bp) != 1
        || !json_is_array(json_object_get(bp, "inputs")))
    {
        aw_reject(code, codelen, err, errlen, "bad_envelope",
                  "blueprint must be { \"inputs\": [ ... ] }");
        goto done;
    }

    if (aw_limits_parse(conf, json_object_get(root, "limits"), &job->limits,
                        code, codelen, err, errlen) != 0)
    {
        goto done;
    }

    inputs = json_object_get(bp, "inputs");
    if ((long) json_array_size(inputs) > conf->max_inputs) {
        aw_reject(code, codelen, err, errlen, "bad_envelope",
                  "blueprint has %zu inputs, the maximum is %ld",
                  json_array_size(inputs), conf->max_inputs);
        goto done;
    }

    job->inputs = calloc(json_array_size(inputs) + 1, sizeof(aw_input_t));
    if (job->inputs == NULL) {
        aw_reject(code, codelen, err, errlen, "internal", "out of memory");
        goto done;
    }

    json_array_foreach(inputs, i, in) {
        if (aw_input_parse(conf, policy, in, i, &job->inputs[i], code,
                           codelen, err, errlen) != 0)
        {
            job->ninputs = i + 1;
            goto done;
        }

        job->ninputs = i + 1;

        for (j = 0; j < i; j++) {
            if (strcmp(job->inputs[j].name, job->inputs[i].name) == 0) {
                aw_reject(code, codelen, err, errlen, "bad_envelope",
                          "two inputs are named \"%s\"",
                          job->inputs[i].name);
                goto done;
            }
        }
    }

    job->script_len = json_string_length(script);
    job->script = malloc(job->script_len + 1);
    if (job->script == NULL) {
        aw_reject(code, codelen, err, errlen, "internal", "out of memory");
        goto done;
    }

    memcpy(job->script, json_string_value(script), job->script_len);
    job->script[job->script_len] = '\0';

    rc = 0;

done:

    json_decref(root);
    return rc;
}


void
aw_job_free(aw_job_t *job)
{
    size_t  i;

    for (i = 0; i < job->ninputs; i++) {
        free(job->inputs[i].path);
        free(job->inputs[i].body);
    }

    free(job->inputs);
    free(job->script);
    memset(job, 0, sizeof(*job));
}


const char *
aw_status_name(aw_status_e st)
{
    static const char *const  names[] = {
        "ok", "error", "timeout", "oom", "killed", "rejected"
    };

    return names[st];
}


/*
 * Bytes as a JSON string: invalid UTF-8 becomes U+FFFD.  With
 * AW_JSON_NO_NUL a NUL does too: a result's "\u0000" would cost the
 * agent the whole result (it parses without JSON_ALLOW_NUL, as readers
 * of C strings must) and the LLM gateway refuses it in a request.
 */

json_t *
aw_json_bytes(const char *s, size_t len, unsigned flags)
{
    char                 *out;
    size_t                i, n, k, need;
    json_t               *j;
    const unsigned char  *p;

    out = malloc(len * 3 + 1);
    if (out == NULL) {
        return NULL;
    }

    p = (const unsigned char *) s;
    n = 0;
    i = 0;

    while (i < len) {
        if (p[i] < 0x80 && (p[i] != '\0' || !(flags & AW_JSON_NO_NUL))) {
            out[n++] = (char) p[i++];
            continue;
        }

        need = (p[i] & 0xe0) == 0xc0 ? 1 : (p[i] & 0xf0) == 0xe0 ? 2
               : (p[i] & 0xf8) == 0xf0 ? 3 : 0;

        for (k = 1; need != 0 && k <= need; k++) {
            if (i + k >= len || (p[i + k] & 0xc0) != 0x80) {
                need = 0;
            }
        }

        if (need != 0 && p[i] >= 0xc2 && p[i] <= 0xf4) {
            json_t  *t;

            /* jansson has the last word on overlongs and surrogates */
            t = json_stringn((const char *) p + i, need + 1);
            if (t != NULL) {
                json_decref(t);
                memcpy(out + n, p + i, need + 1);
                n += need + 1;
                i += need + 1;
                continue;
            }
        }

        memcpy(out + n, "\xef\xbf\xbd", 3);
        n += 3;
        i++;
    }

    j = json_stringn(out, n);
    free(out);

    return j;
}


char *
aw_result_json(const aw_conf_t *conf, const char *job_id,
    const char *session_id, const aw_result_t *res)
{
    int      rc;
    char    *s;
    size_t   n;
    json_t  *r, *t, *e;

    r = json_object();
    t = json_object();

    if (r == NULL || t == NULL) {
        json_decref(r);
        json_decref(t);
        return NULL;
    }

    /*
     * All or nothing: json_object_set_new() leaves out a value that
     * could not be allocated (NULL), and a result without its stdout,
     * say, was stored as if whole; the caller has aw_result_unstored()
     * for a result that cannot be built
     */
    rc = json_object_set_new(r, "job_id", json_string(job_id));
    rc |= json_object_set_new(r, "session_id", json_string(session_id));
    rc |= json_object_set_new(r, "status",
                              json_string(aw_status_name(res->status)));
    rc |= json_object_set_new(r, "exit_code", res->ran
                              ? json_integer(res->exit_code) : json_null());
    rc |= json_object_set_new(r, "stdout",
                              aw_json_bytes(res->out ? res->out : "",
                                            res->out_len, AW_JSON_NO_NUL));
    rc |= json_object_set_new(r, "stderr",
                              aw_json_bytes(res->err ? res->err : "",
                                            res->err_len, AW_JSON_NO_NUL));
    rc |= json_object_set_new(r, "stdout_truncated",
                              json_boolean(res->out_trunc));
    rc |= json_object_set_new(r, "stderr_truncated",
                              json_boolean(res->err_trunc));

    if (res->status != AW_ST_OK) {
        e = json_object();
        rc |= json_object_set_new(r, "error", e);

        if (e != NULL) {
            rc |= json_object_set_new(e, "code",
                                      json_string(res->code[0] ? res->code
                                                               : "error"));
            rc |= json_object_set_new(e, "message",
                                      aw_json_bytes(res->message,
                                                    strlen(res->message),
                                                    AW_JSON_NO_NUL));
        }
    }

    rc |= json_object_set_new(r, "backend",
                              json_string(aw_backend_name(conf->backend)));

    rc |= json_object_set_new(t, "fetch", json_integer(res->timing.fetch));
    rc |= json_object_set_new(t, "prepare",
                              json_integer(res->timing.prepare));
    rc |= json_object_set_new(t, "start", json_integer(res->timing.start));
    rc |= json_object_set_new(t, "run", json_integer(res->timing.run));
    rc |= json_object_set_new(t, "teardown",
                              json_integer(res->timing.teardown));
    rc |= json_object_set_new(t, "total", json_integer(res->timing.total));
    rc |= json_object_set_new(r, "timing_ms", t);

    if (rc != 0) {
        json_decref(r);
        return NULL;
    }

    /*
     * Dumped to its exact size: json_dumps() grows a buffer by doubling
     * and returns a copy of it, up to three times the text (6 times
     * stdout and stderr, escaped) beside the tree
     */
    n = json_dumpb(r, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER);
    s = n != 0 ? malloc(n + 1) : NULL;

    if (s != NULL
        && json_dumpb(r, s, n, JSON_COMPACT | JSON_PRESERVE_ORDER) == n)
    {
        s[n] = '\0';

    } else {
        free(s);
        s = NULL;
    }

    json_decref(r);

    return s;
}


/*
 * What is stored in place of a result that could not be (len bytes,
 * why in why; len 0 when it was never built): the same job, its exit
 * code and timings, status error and code result_not_stored with how
 * the job ended in the message, and no stdout or stderr (flagged
 * truncated when there was any), so that it is small enough to fit
 * where the whole did not.  Written into buf, of AW_RESULT_SMALL bytes
 * or more, with no allocation, by the fields aw_result_json() writes, in
 * its order: it is there when the worker is out of memory, the result
 * it could not build then included (aw_result_text()).  Its length.
 */

size_t
aw_result_unstored(const aw_conf_t *conf, const char *job_id,
    const char *session_id, const aw_result_t *res, size_t len,
    const char *why, char *buf, size_t size)
{
    char         size_s[48], ended[AW_ERRLEN], msg[AW_ERRLEN];
    aw_text_t    b;

    if (len > 0) {
        snprintf(size_s, sizeof(size_s), " (%zu bytes)", len);

    } else {
        size_s[0] = '\0';
    }

    if (res->status == AW_ST_OK) {
        snprintf(ended, sizeof(ended), "ok");

    } else {
        snprintf(ended, sizeof(ended), "%s (%s): %.200s",
                 aw_status_name(res->status), res->code, res->message);
    }

    snprintf(msg, sizeof(msg), "the result%s could not be stored: %.200s; "
             "the job ended %s", size_s, why, ended);

    b.p = buf;
    b.end = buf + size;
    b.over = size < AW_RESULT_SMALL;

    aw_text(&b, "{\"job_id\":");
    aw_text_str(&b, job_id);
    aw_text(&b, ",\"session_id\":");
    aw_text_str(&b, session_id);
    aw_text(&b, ",\"status\":\"error\",\"exit_code\":");

    if (res->ran) {
        aw_text(&b, "%d", res->exit_code);

    } else {
        aw_text(&b, "null");
    }

    aw_text(&b, ",\"stdout\":\"\",\"stderr\":\"\",\"stdout_truncated\":%s,"
            "\"stderr_truncated\":%s,\"error\":{\"code\":"
            "\"result_not_stored\",\"message\":",
            res->out_trunc || res->out_len > 0 ? "true" : "false",
            res->err_trunc || res->err_len > 0 ? "true" : "false");
    aw_text_str(&b, msg);
    aw_text(&b, "},\"backend\":");
    aw_text_str(&b, aw_backend_name(conf->backend));
    aw_text(&b, ",\"timing_ms\":{\"fetch\":%ld,\"prepare\":%ld,\"start\":%ld,"
            "\"run\":%ld,\"teardown\":%ld,\"total\":%ld}}",
            res->timing.fetch, res->timing.prepare, res->timing.start,
            res->timing.run, res->timing.teardown, res->timing.total);

    /* not reached with AW_RESULT_SMALL bytes: every field is bounded */
    if (b.over) {
        if (size > 0) {
            buf[0] = '\0';
        }
        return 0;
    }

    return (size_t) (b.p - buf);
}


/*
 * A job's result as it is stored: aw_result_json() (*json, for the
 * caller to free), or, when that fails for memory, the
 * result_not_stored stand-in written into small (AW_RESULT_SMALL bytes),
 * *json NULL, for the caller to say so.  Before, the worker stored
 * {"status":"error"} then: no job_id, nothing a client could tie to its
 * job.
 */

const char *
aw_result_text(const aw_conf_t *conf, const char *job_id,
    const char *session_id, const aw_result_t *res, char **json,
    char *small)
{
    char  why[160];

    *json = aw_result_json(conf, job_id, session_id, res);
    if (*json != NULL) {
        return *json;
    }

    snprintf(why, sizeof(why), "out of memory while the worker built it "
             "(stdout %zu bytes, stderr %zu bytes)", res->out_len,
             res->err_len);

    (void) aw_result_unstored(conf, job_id, session_id, res, 0, why, small,
                              AW_RESULT_SMALL);

    return small;
}


/*
 * Text appended to b, cut nowhere: one that does not fit sets b->over
 * and leaves b as it was.
 */

static void
aw_text(aw_text_t *b, const char *fmt, ...)
{
    int      n;
    va_list  ap;

    if (b->over) {
        return;
    }

    va_start(ap, fmt);
    n = vsnprintf(b->p, (size_t) (b->end - b->p), fmt, ap);
    va_end(ap);

    if (n < 0 || n >= b->end - b->p) {
        b->over = 1;
        return;
    }

    b->p += n;
}


/*
 * A C string as a JSON string, in ASCII: '"', '\\' and control
 * characters escaped, any other byte over 0x7f U+FFFD (the stand-in's
 * text is the worker's own, the job's message at most)
 */

static void
aw_text_str(aw_text_t *b, const char *s)
{
    const unsigned char  *p;

    aw_text(b, "\"");

    for (p = (const unsigned char *) s; *p != '\0' && !b->over; p++) {
        if (*p == '"' || *p == '\\') {
            aw_text(b, "\\%c", *p);

        } else if (*p < 0x20 || *p == 0x7f) {
            aw_text(b, "\\u%04x", *p);

        } else if (*p > 0x7f) {
            aw_text(b, "\\ufffd");

        } else {
            aw_text(b, "%c", *p);
        }
    }

    aw_text(b, "\"");
}


void
aw_result_fail(aw_result_t *res, aw_status_e st, const char *code,
    const char *fmt, ...)
{
    va_list  ap;

    res->status = st;
    snprintf(res->code, sizeof(res->code), "%s", code);
    va_start(ap, fmt);
    vsnprintf(res->message, sizeof(res->message), fmt, ap);
    va_end(ap);
}


void
aw_result_free(aw_result_t *res)
{
    free(res->out);
    free(res->err);
    memset(res, 0, sizeof(*res));
}
