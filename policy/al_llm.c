/*
 * LLM gateway: which endpoints a provider prefix serves, and the policy on
 * request bodies (model allowlist, stream, output caps, usage in streams).
 *
 * The body is parsed once by al_json_check() for the refusals every route
 * shares (duplicate keys, depth, trailing data, NUL), then by jansson for
 * the fields read here.  A rewrite re-serializes the parsed document, so
 * what the upstream reads is exactly what was checked; reals are printed
 * with the fewest digits that give every one of them back unchanged, so
 * 0.7 stays 0.7.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>

#include "al_llm_internal.h"


#define AL_LLM_K_OPENAI   (1u << AL_LLM_OPENAI)
#define AL_LLM_K_COMPAT   (1u << AL_LLM_OPENAI_COMPATIBLE)
#define AL_LLM_K_OAI      (AL_LLM_K_OPENAI | AL_LLM_K_COMPAT)
#define AL_LLM_K_ANT      (1u << AL_LLM_ANTHROPIC)

#define AL_LLM_SHOW_MAX   64


typedef struct {
    unsigned             kinds;
    unsigned             method;
    const char          *seg[2];        /* NULL: one segment, the model */
    size_t               nseg;
    al_llm_endpoint_t    endpoint;
    const char *const   *query;         /* allowed names, or NULL */
} al_llm_ep_def_t;

typedef struct {
    const al_llm_t         *llm;
    const al_llm_client_t  *lc;
    al_llm_endpoint_t       ep;
    json_t                 *root;
    al_llm_req_t           *req;
    unsigned                rewrite:1;
} al_llm_rq_t;


static const al_llm_ep_def_t *al_llm_ep_find(al_llm_kind_t kind,
    unsigned method, const al_path_t *path, al_reason_t *reason);
static int al_llm_route_uri(const al_llm_t *llm, al_llm_route_t *rt);
static int al_llm_ctype_json(const char *ctype, size_t len);
static int al_llm_req_model(al_llm_rq_t *rq);
static int al_llm_req_stream(al_llm_rq_t *rq);
static int al_llm_req_tokens(al_llm_rq_t *rq);
static int al_llm_req_n(al_llm_rq_t *rq);
static int al_llm_req_usage(al_llm_rq_t *rq);
static int al_llm_req_dump(al_llm_rq_t *rq);
static void al_llm_estimate(const json_t *v, unsigned depth,
    uint64_t *bytes, uint64_t *extra);
static int al_llm_attachment_key(const char *key);
static int al_llm_real_digits(const json_t *v, unsigned depth);
static int al_llm_fail(char *detail, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


static const char *const  al_llm_q_beta[] = { "beta", NULL };
static const char *const  al_llm_q_list[] = {
    "limit", "before_id", "after_id", NULL
};

static const al_llm_ep_def_t  al_llm_eps[] = {
    { AL_LLM_K_OAI, AL_METHOD_POST, { "chat", "completions" }, 2,
      AL_LLM_EP_CHAT, NULL },
    { AL_LLM_K_OAI, AL_METHOD_POST, { "completions", NULL }, 1,
      AL_LLM_EP_COMPLETIONS, NULL },
    { AL_LLM_K_OAI, AL_METHOD_POST, { "embeddings", NULL }, 1,
      AL_LLM_EP_EMBEDDINGS, NULL },
    { AL_LLM_K_OAI, AL_METHOD_POST, { "responses", NULL }, 1,
      AL_LLM_EP_RESPONSES, NULL },
    { AL_LLM_K_OAI, AL_METHOD_GET, { "models", NULL }, 1,
      AL_LLM_EP_MODELS, NULL },
    { AL_LLM_K_OAI, AL_METHOD_GET, { "models", NULL }, 2,
      AL_LLM_EP_MODEL, NULL },
    { AL_LLM_K_ANT, AL_METHOD_POST, { "messages", NULL }, 1,
      AL_LLM_EP_MESSAGES, al_llm_q_beta },
    { AL_LLM_K_ANT, AL_METHOD_GET, { "models", NULL }, 1,
      AL_LLM_EP_MODELS, al_llm_q_list },
    { AL_LLM_K_ANT, AL_METHOD_GET, { "models", NULL }, 2,
      AL_LLM_EP_MODEL, NULL }
};

static const char *const  al_llm_ep_names[] = {
    "none", "chat/completions", "completions", "embeddings", "responses",
    "messages", "models", "models/{id}"
};

/* where prompt text lives, per API; the estimate reads only these */
static const char *const  al_llm_prompt_keys[] = {
    "messages", "prompt", "input", "instructions", "system", "tools",
    "functions", NULL
};

/* values that are images, audio or files: a flat estimate each */
static const char *const  al_llm_attachment_keys[] = {
    "image_url", "image", "source", "file", "file_data", "input_audio",
    NULL
};


const char *
al_llm_endpoint_name(al_llm_endpoint_t ep)
{
    if ((unsigned) ep >= sizeof(al_llm_ep_names) / sizeof(al_llm_ep_names[0]))
    {
        return "unknown";
    }

    return al_llm_ep_names[ep];
}


int
al_llm_endpoint_has_body(al_llm_endpoint_t ep)
{
    switch (ep) {

    case AL_LLM_EP_CHAT:
    case AL_LLM_EP_COMPLETIONS:
    case AL_LLM_EP_EMBEDDINGS:
    case AL_LLM_EP_RESPONSES:
    case AL_LLM_EP_MESSAGES:
        return 1;

    default:
        return 0;
    }
}


al_llm_endpoint_t
al_llm_endpoint(al_llm_kind_t kind, unsigned method,
    const al_path_t *suffix, al_reason_t *reason)
{
    al_reason_t             r;
    const al_llm_ep_def_t  *def;

    def = al_llm_ep_find(kind, method, suffix, &r);

    if (reason != NULL) {
        *reason = r;
    }

    return def != NULL ? def->endpoint : AL_LLM_EP_NONE;
}


static const al_llm_ep_def_t *
al_llm_ep_find(al_llm_kind_t kind, unsigned method, const al_path_t *path,
    al_reason_t *reason)
{
    size_t                  i, j;
    const al_llm_ep_def_t  *def;

    *reason = AL_REASON_NO_ROUTE;

    if ((unsigned) kind > AL_LLM_ANTHROPIC) {
        return NULL;
    }

    for (i = 0; i < sizeof(al_llm_eps) / sizeof(al_llm_eps[0]); i++) {
        def = &al_llm_eps[i];

        if (!(def->kinds & (1u << kind)) || def->nseg != path->nseg) {
            continue;
        }

        for (j = 0; j < def->nseg; j++) {
            if (def->seg[j] != NULL
                && (path->seg[j].len != strlen(def->seg[j])
                    || memcmp(path->seg[j].data, def->seg[j],
                              path->seg[j].len) != 0))
            {
                break;
            }
        }

        if (j < def->nseg) {
            continue;
        }

        if (def->method == method) {
            *reason = AL_REASON_NONE;
            return def;
        }

        *reason = AL_REASON_METHOD;
    }

    return NULL;
}


al_reason_t
al_llm_route(const al_llm_t *llm, const al_llm_client_t *lc,
    unsigned method, const char *target, size_t len, al_llm_route_t *rt)
{
    size_t                  i, j, n;
    const char             *why;
    al_reason_t             reason;
    const al_query_param_t *q;
    const al_llm_ep_def_t  *def;
    char                    show[AL_LLM_SHOW_MAX + 4];

    rt->reason = AL_REASON_NONE;
    rt->endpoint = AL_LLM_EP_NONE;
    rt->detail[0] = '\0';
    rt->model.data = "";
    rt->model.len = 0;
    rt->alias.data = "";
    rt->alias.len = 0;
    rt->uri[0] = '\0';
    rt->uri_len = 0;

    if (al_target_parse(target, len, &rt->path, &rt->query, &why) != 0) {
        rt->reason = AL_REASON_PATH;
        (void) al_llm_fail(rt->detail, sizeof(rt->detail), "%s", why);
        return rt->reason;
    }

    /*
     * The official SDKs put the API version in the path themselves: the
     * Anthropic SDK appends /v1/messages to its base URL, and an OpenAI
     * base URL is often written with /v1 at the end.  A leading "v1"
     * under the prefix is the same endpoint as without it.
     */

    if (rt->path.nseg > 1 && rt->path.seg[0].len == 2
        && memcmp(rt->path.seg[0].data, "v1", 2) == 0)
    {
        memmove(&rt->path.seg[0], &rt->path.seg[1],
                (rt->path.nseg - 1) * sizeof(al_str_t));
        rt->path.nseg--;
    }

    if (llm->kind == AL_LLM_AZURE) {
        if (al_llm_azure_route(llm, lc, method, rt) == AL_REASON_NONE
            && al_llm_route_uri(llm, rt) != 0)
        {
            rt->reason = AL_REASON_PATH;
            (void) al_llm_fail(rt->detail, sizeof(rt->detail),
                               "upstream URI too long");
        }

        return rt->reason;
    }

    def = al_llm_ep_find(llm->kind, method, &rt->path, &reason);

    if (def == NULL) {
        for (n = 0; n < len && target[n] != '?'; n++) {
            /* void */
        }

        (void) al_llm_show(show, sizeof(show), target, n, AL_LLM_SHOW_MAX);

        rt->reason = reason;

        if (reason == AL_REASON_METHOD) {
            (void) al_llm_fail(rt->detail, sizeof(rt->detail),
                               "method %s is not allowed on %s",
                               al_method_name(method), show);
        } else {
            (void) al_llm_fail(rt->detail, sizeof(rt->detail),
                               "%s is not an endpoint this gateway serves",
                               show);
        }

        return rt->reason;
    }

    rt->endpoint = def->endpoint;

    for (i = 0; i < rt->query.nparam; i++) {
        q = &rt->query.param[i];

        for (j = 0; def->query != NULL && def->query[j] != NULL; j++) {
            if (q->name.len == strlen(def->query[j])
                && memcmp(q->name.data, def->query[j], q->name.len) == 0)
            {
                break;
            }
        }

        if (def->query == NULL || def->query[j] == NULL) {
            (void) al_llm_show(show, sizeof(show), q->name.data,
                               q->name.len, AL_LLM_SHOW_MAX);
            rt->reason = AL_REASON_QUERY;
            (void) al_llm_fail(rt->detail, sizeof(rt->detail),
                               "query parameter \"%s\" is not allowed on %s",
                               show, al_llm_endpoint_name(def->endpoint));
            return rt->reason;
        }
    }

    if (def->endpoint == AL_LLM_EP_MODEL) {
        rt->model = rt->path.seg[1];

        if (!al_llm_model_allowed(llm, lc, rt->model.data, rt->model.len)) {
            (void) al_llm_show(show, sizeof(show), rt->model.data,
                               rt->model.len, AL_LLM_SHOW_MAX);
            rt->reason = AL_REASON_MODEL;
            (void) al_llm_fail(rt->detail, sizeof(rt->detail),
                               "model \"%s\" is not allowed", show);
            return rt->reason;
        }
    }

    if (al_llm_route_uri(llm, rt) != 0) {
        rt->reason = AL_REASON_PATH;
        (void) al_llm_fail(rt->detail, sizeof(rt->detail),
                           "upstream URI too long");
        return rt->reason;
    }

    return AL_REASON_NONE;
}


/* base path, then the suffix and query re-encoded from the parsed form */

static int
al_llm_route_uri(const al_llm_t *llm, al_llm_route_t *rt)
{
    size_t                   i, n, need, cap;
    char                    *out;
    const al_str_t          *seg;
    const al_query_param_t  *q;

    out = rt->uri;
    cap = sizeof(rt->uri) - 1;
    n = 0;

#define AL_PUT(s, l)                                                         \
    do {                                                                     \
        if ((l) > cap - n) {                                                 \
            return -1;                                                       \
        }                                                                    \
        memcpy(out + n, (s), (l));                                           \
        n += (l);                                                            \
    } while (0)

#define AL_ESC(s, l, query)                                                  \
    do {                                                                     \
        need = al_uri_escape(out + n, cap - n, (s), (l), (query));           \
        if (need > cap - n) {                                                \
            return -1;                                                       \
        }                                                                    \
        n += need;                                                           \
    } while (0)

    AL_PUT(llm->upstream.base_path.data, llm->upstream.base_path.len);

    for (i = 0; i < rt->path.nseg; i++) {
        seg = &rt->path.seg[i];
        AL_PUT("/", 1);
        AL_ESC(seg->data, seg->len, 0);
    }

    for (i = 0; i < rt->query.nparam; i++) {
        q = &rt->query.param[i];
        AL_PUT(i == 0 ? "?" : "&", 1);
        AL_ESC(q->name.data, q->name.len, 1);
        AL_PUT("=", 1);
        AL_ESC(q->value.data, q->value.len, 1);
    }

#undef AL_PUT
#undef AL_ESC

    out[n] = '\0';
    rt->uri_len = n;

    return 0;
}


const al_llm_client_t *
al_llm_find_client(const al_llm_t *llm, const al_client_t *client)
{
    size_t  i;

    if (client == NULL) {
        return NULL;
    }

    for (i = 0; i < llm->nclients; i++) {
        if (llm->clients[i].client == client) {
            return &llm->clients[i];
        }
    }

    return NULL;
}


int
al_llm_model_allowed(const al_llm_t *llm, const al_llm_client_t *lc,
    const char *model, size_t len)
{
    size_t           i, n;
    const al_str_t  *list;

    if (lc != NULL && lc->nmodels > 0) {
        list = lc->models;
        n = lc->nmodels;

    } else {
        list = llm->models;
        n = llm->nmodels;
    }

    for (i = 0; i < n; i++) {
        if (list[i].len == len && memcmp(list[i].data, model, len) == 0) {
            return 1;
        }
    }

    return 0;
}


al_reason_t
al_llm_request(const al_llm_t *llm, const al_llm_client_t *lc,
    al_llm_endpoint_t ep, const char *ctype, size_t ctype_len,
    const unsigned char *body, size_t len, al_llm_req_t *req)
{
    uint64_t      bytes, extra;
    size_t        i;
    json_t       *v;
    al_llm_rq_t   rq;
    json_error_t  err;

    memset(req, 0, sizeof(*req));

    if (!al_llm_endpoint_has_body(ep)) {
        if (ep == AL_LLM_EP_NONE) {
            req->reason = AL_REASON_NO_ROUTE;
            (void) al_llm_fail(req->detail, sizeof(req->detail),
                               "no endpoint");

        } else if (len > 0) {
            req->reason = AL_REASON_BODY_TOO_LARGE;
            (void) al_llm_fail(req->detail, sizeof(req->detail),
                               "%s takes no request body",
                               al_llm_endpoint_name(ep));
        }

        return req->reason;
    }

    if (len > llm->body_max) {
        req->reason = AL_REASON_BODY_TOO_LARGE;
        (void) al_llm_fail(req->detail, sizeof(req->detail),
                           "body of %zu bytes is over the provider's "
                           "max_body_bytes %zu", len, llm->body_max);
        return req->reason;
    }

    if (ctype != NULL && !al_llm_ctype_json(ctype, ctype_len)) {
        req->reason = AL_REASON_BODY;
        (void) al_llm_fail(req->detail, sizeof(req->detail),
                           "content type must be application/json");
        return req->reason;
    }

    if (al_json_check(NULL, body, len, req->detail, sizeof(req->detail))
        != 0)
    {
        req->reason = AL_REASON_BODY;
        return req->reason;
    }

    rq.llm = llm;
    rq.lc = lc;
    rq.ep = ep;
    rq.req = req;
    rq.rewrite = 0;

    rq.root = json_loadb((const char *) body, len, JSON_REJECT_DUPLICATES,
                         &err);
    if (rq.root == NULL) {
        req->reason = AL_REASON_BODY;
        (void) al_llm_fail(req->detail, sizeof(req->detail),
                           "the body must be a JSON object");
        return req->reason;
    }

    if (!json_is_object(rq.root)) {
        req->reason = AL_REASON_BODY;
        (void) al_llm_fail(req->detail, sizeof(req->detail),
                           "the body must be a JSON object");
        goto done;
    }

    if (al_llm_req_model(&rq) != 0
        || al_llm_req_stream(&rq) != 0
        || al_llm_req_tokens(&rq) != 0
        || al_llm_req_n(&rq) != 0
        || al_llm_req_usage(&rq) != 0)
    {
        goto done;
    }

    bytes = 0;
    extra = 0;

    for (i = 0; al_llm_prompt_keys[i] != NULL; i++) {
        v = json_object_get(rq.root, al_llm_prompt_keys[i]);
        if (v != NULL) {
            al_llm_estimate(v, 0, &bytes, &extra);
        }
    }

    req->prompt_estimate = (bytes + 3) / 4 + extra;

    if (rq.rewrite) {
        (void) al_llm_req_dump(&rq);
    }

done:

    json_decref(rq.root);

    return req->reason;
}


void
al_llm_request_free(al_llm_req_t *req)
{
    free(req->body);
    req->body = NULL;
    req->body_len = 0;
}


uint64_t
al_llm_request_need(const al_llm_req_t *req)
{
    uint64_t  need;

    need = req->prompt_estimate + req->max_output;

    return need < req->prompt_estimate ? UINT64_MAX : need;
}


/* "application/json", any case, parameters allowed */

static int
al_llm_ctype_json(const char *ctype, size_t len)
{
    size_t  n;

    n = sizeof("application/json") - 1;

    if (len < n || strncasecmp(ctype, "application/json", n) != 0) {
        return 0;
    }

    return len == n || ctype[n] == ';' || ctype[n] == ' '
           || ctype[n] == '\t';
}


static int
al_llm_req_model(al_llm_rq_t *rq)
{
    size_t         len;
    json_t        *v;
    const char    *model;
    al_llm_req_t  *req;
    char           show[AL_LLM_SHOW_MAX + 4];

    req = rq->req;

    v = json_object_get(rq->root, "model");

    if (v == NULL || !json_is_string(v)) {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"model\" must be a string");
    }

    model = json_string_value(v);
    len = json_string_length(v);

    if (!al_llm_model_allowed(rq->llm, rq->lc, model, len)) {
        (void) al_llm_show(show, sizeof(show), model, len, AL_LLM_SHOW_MAX);
        req->reason = AL_REASON_MODEL;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "model \"%s\" is not allowed", show);
    }

    if (len >= sizeof(req->model)) {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "model name too long");
    }

    memcpy(req->model, model, len);
    req->model[len] = '\0';
    req->model_len = len;

    return 0;
}


static int
al_llm_req_stream(al_llm_rq_t *rq)
{
    json_t  *v;

    if (rq->ep == AL_LLM_EP_EMBEDDINGS) {
        return 0;
    }

    v = json_object_get(rq->root, "stream");

    if (v == NULL || json_is_null(v)) {
        return 0;
    }

    if (!json_is_boolean(v)) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"stream\" must be a boolean");
    }

    rq->req->stream = json_is_true(v);

    return 0;
}


static int
al_llm_req_tokens(al_llm_rq_t *rq)
{
    size_t             i, n;
    json_t            *v;
    uint64_t           cap, val, max, dflt;
    unsigned           found;
    const char        *names[2], *add, *null_name;
    al_llm_req_t      *req;

    req = rq->req;
    cap = rq->lc != NULL ? rq->lc->max_tokens : 0;
    add = NULL;
    n = 1;

    switch (rq->ep) {

    case AL_LLM_EP_CHAT:
        names[0] = "max_completion_tokens";
        names[1] = "max_tokens";
        n = 2;
        add = (rq->llm->kind == AL_LLM_OPENAI) ? names[0] : names[1];
        break;

    case AL_LLM_EP_COMPLETIONS:
    case AL_LLM_EP_MESSAGES:
        names[0] = "max_tokens";
        add = names[0];
        break;

    case AL_LLM_EP_RESPONSES:
        names[0] = "max_output_tokens";
        add = names[0];
        break;

    default:
        return 0;
    }

    found = 0;
    max = 0;
    null_name = NULL;

    for (i = 0; i < n; i++) {
        v = json_object_get(rq->root, names[i]);

        if (v == NULL) {
            continue;
        }

        if (json_is_null(v)) {
            if (null_name == NULL) {
                null_name = names[i];
            }
            continue;
        }

        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            req->reason = AL_REASON_BODY;
            return al_llm_fail(req->detail, sizeof(req->detail),
                               "\"%s\" must be a non-negative integer",
                               names[i]);
        }

        val = (uint64_t) json_integer_value(v);

        if (cap != 0 && val > cap) {
            if (!rq->lc->clamp) {
                req->reason = AL_REASON_BODY;
                return al_llm_fail(req->detail, sizeof(req->detail),
                                   "\"%s\" %llu is over this client's "
                                   "limit of %llu", names[i],
                                   (unsigned long long) val,
                                   (unsigned long long) cap);
            }

            if (json_object_set_new(rq->root, names[i],
                                    json_integer((json_int_t) cap))
                != 0)
            {
                req->reason = AL_REASON_BODY;
                return al_llm_fail(req->detail, sizeof(req->detail),
                                   "out of memory");
            }

            val = cap;
            req->clamped = 1;
            rq->rewrite = 1;
        }

        found = 1;

        if (val > max) {
            max = val;
        }
    }

    if (!found) {

        if (rq->ep == AL_LLM_EP_MESSAGES) {
            /* Anthropic's own wording for the same mistake */
            req->reason = AL_REASON_BODY;
            return al_llm_fail(req->detail, sizeof(req->detail),
                               "max_tokens: Field required");
        }

        if (null_name != NULL) {
            add = null_name;
        }

        dflt = al_llm_default_max_tokens(rq->lc);

        if (rq->ep == AL_LLM_EP_COMPLETIONS
            && (dflt == 0 || dflt >= AL_LLM_COMPLETIONS_DEFAULT))
        {
            max = AL_LLM_COMPLETIONS_DEFAULT;

        } else if (dflt != 0) {
            if (json_object_set_new(rq->root, add,
                                    json_integer((json_int_t) dflt))
                != 0)
            {
                req->reason = AL_REASON_BODY;
                return al_llm_fail(req->detail, sizeof(req->detail),
                                   "out of memory");
            }

            max = dflt;
            req->capped = 1;
            rq->rewrite = 1;
        }
    }

    req->max_output = max;

    return 0;
}


uint64_t
al_llm_default_max_tokens(const al_llm_client_t *lc)
{
    if (lc == NULL) {
        return 0;
    }

    if (lc->default_max_tokens) {
        return lc->default_max_tokens;
    }

    if (lc->max_tokens) {
        return lc->max_tokens;
    }

    if (lc->tokens_per_minute || lc->tokens_per_day || lc->cost_per_day
        || lc->cost_per_month)
    {
        return AL_LLM_DEFAULT_MAX_TOKENS;
    }

    return 0;
}


static int
al_llm_req_n(al_llm_rq_t *rq)
{
    json_t    *v;
    json_int_t n;

    if (rq->ep != AL_LLM_EP_CHAT && rq->ep != AL_LLM_EP_COMPLETIONS) {
        return 0;
    }

    v = json_object_get(rq->root, "n");

    if (v == NULL || json_is_null(v)) {
        return 0;
    }

    n = json_is_integer(v) ? json_integer_value(v) : 0;

    if (n < 1 || n > AL_LLM_N_MAX) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"n\" must be an integer from 1 to %d",
                           AL_LLM_N_MAX);
    }

    rq->req->max_output *= (uint64_t) n;

    return 0;
}


static int
al_llm_req_usage(al_llm_rq_t *rq)
{
    json_t        *so, *iu, *obj;
    unsigned       asked;
    al_llm_req_t  *req;

    req = rq->req;

    if (rq->llm->kind == AL_LLM_ANTHROPIC
        || (rq->ep != AL_LLM_EP_CHAT && rq->ep != AL_LLM_EP_COMPLETIONS)
        || !req->stream)
    {
        return 0;
    }

    asked = 0;
    so = json_object_get(rq->root, "stream_options");

    if (so != NULL && !json_is_null(so)) {
        if (!json_is_object(so)) {
            req->reason = AL_REASON_BODY;
            return al_llm_fail(req->detail, sizeof(req->detail),
                               "\"stream_options\" must be an object");
        }

        iu = json_object_get(so, "include_usage");

        if (iu != NULL && !json_is_null(iu) && !json_is_boolean(iu)) {
            req->reason = AL_REASON_BODY;
            return al_llm_fail(req->detail, sizeof(req->detail),
                               "\"stream_options.include_usage\" must be a "
                               "boolean");
        }

        asked = (iu != NULL && json_is_true(iu));
    }

    req->client_usage = asked;

    if (asked || !rq->llm->include_usage) {
        return 0;
    }

    if (so != NULL && json_is_object(so)) {
        if (json_object_set_new(so, "include_usage", json_true()) != 0) {
            goto nomem;
        }

    } else {
        obj = json_object();
        if (obj == NULL) {
            goto nomem;
        }

        if (json_object_set_new(obj, "include_usage", json_true()) != 0) {
            json_decref(obj);
            goto nomem;
        }

        /* replaces a null in place, or appends */
        if (json_object_set_new(rq->root, "stream_options", obj) != 0) {
            goto nomem;
        }
    }

    req->hide_usage = 1;
    rq->rewrite = 1;

    return 0;

nomem:

    req->reason = AL_REASON_BODY;
    return al_llm_fail(req->detail, sizeof(req->detail), "out of memory");
}


static int
al_llm_req_dump(al_llm_rq_t *rq)
{
    int            digits;
    char          *buf;
    size_t         flags, size;
    al_llm_req_t  *req;

    req = rq->req;

    flags = JSON_PRESERVE_ORDER | JSON_COMPACT;

    digits = al_llm_real_digits(rq->root, 0);
    if (digits > 0) {
        flags |= JSON_REAL_PRECISION(digits);
    }

    size = json_dumpb(rq->root, NULL, 0, flags);
    if (size == 0) {
        goto failed;
    }

    buf = malloc(size);
    if (buf == NULL) {
        goto failed;
    }

    if (json_dumpb(rq->root, buf, size, flags) != size) {
        free(buf);
        goto failed;
    }

    req->body = buf;
    req->body_len = size;

    return 0;

failed:

    req->reason = AL_REASON_BODY;
    return al_llm_fail(req->detail, sizeof(req->detail),
                       "cannot serialize the rewritten body");
}


/*
 * Rough input tokens: bytes of text / 4, one per integer (token arrays),
 * a flat AL_LLM_ATTACHMENT_TOKENS per image, audio or file.  It only has
 * to be of the right size for a budget pre-check; the charge is the
 * provider's count.
 */

static void
al_llm_estimate(const json_t *v, unsigned depth, uint64_t *bytes,
    uint64_t *extra)
{
    size_t       i;
    json_t      *m;
    const char  *key;

    if (depth > AL_JSON_DEPTH_MAX) {
        return;
    }

    switch (json_typeof(v)) {

    case JSON_STRING:
        *bytes += json_string_length(v);
        break;

    case JSON_INTEGER:
        *extra += 1;
        break;

    case JSON_ARRAY:
        json_array_foreach(v, i, m) {
            al_llm_estimate(m, depth + 1, bytes, extra);
        }
        break;

    case JSON_OBJECT:
        json_object_foreach((json_t *) v, key, m) {
            if (al_llm_attachment_key(key)) {
                *extra += AL_LLM_ATTACHMENT_TOKENS;
                continue;
            }
            al_llm_estimate(m, depth + 1, bytes, extra);
        }
        break;

    default:
        break;
    }
}


static int
al_llm_attachment_key(const char *key)
{
    size_t  i;

    for (i = 0; al_llm_attachment_keys[i] != NULL; i++) {
        if (strcmp(key, al_llm_attachment_keys[i]) == 0) {
            return 1;
        }
    }

    return 0;
}


/*
 * The fewest significant digits (1..17) that print every real in v so that
 * it reads back as the same double; 0 when there are none.
 */

static int
al_llm_real_digits(const json_t *v, unsigned depth)
{
    int          d, max;
    size_t       i;
    double       x;
    json_t      *m;
    const char  *key;
    char         buf[64];

    if (depth > AL_JSON_DEPTH_MAX) {
        return 17;
    }

    max = 0;

    switch (json_typeof(v)) {

    case JSON_REAL:
        x = json_real_value(v);

        for (d = 1; d < 17; d++) {
            (void) snprintf(buf, sizeof(buf), "%.*g", d, x);
            if (strtod(buf, NULL) == x) {
                break;
            }
        }

        return d;

    case JSON_ARRAY:
        json_array_foreach(v, i, m) {
            d = al_llm_real_digits(m, depth + 1);
            if (d > max) {
                max = d;
            }
        }
        return max;

    case JSON_OBJECT:
        json_object_foreach((json_t *) v, key, m) {
            d = al_llm_real_digits(m, depth + 1);
            if (d > max) {
                max = d;
            }
        }
        return max;

    default:
        return 0;
    }
}


static int
al_llm_fail(char *detail, size_t size, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    (void) vsnprintf(detail, size, fmt, ap);
    va_end(ap);

    return -1;
}
