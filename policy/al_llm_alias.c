/*
 * LLM gateway: what a request names as its model, and where it goes.
 *
 *   Azure OpenAI ("azure" entries).  Clients call the paths the Azure
 *   REST API and the openai SDK's AzureOpenAI client use, under the
 *   prefix:
 *
 *       POST /openai/deployments/{deployment}/chat/completions
 *       POST /openai/deployments/{deployment}/completions
 *       POST /openai/deployments/{deployment}/embeddings
 *       POST /openai/responses              (the deployment in "model")
 *
 *   The deployment is the model: it is what the allowlist, aliases and
 *   the usage line see.  The api-version query parameter is the
 *   policy's: one the client sends is dropped and replaced (the SDK
 *   always sends its own), any other parameter is refused.
 *
 *   Aliases.  A client may ask for a name of the entry's "aliases"; the
 *   gateway rewrites it to the model it stands for before the body is
 *   checked, so the allowlist, the output caps and the budgets see the
 *   real model, and the bytes checked are the bytes sent.  The rewrite
 *   splices the JSON string value of the top-level "model" member; the
 *   rest of the body is not touched.
 *
 *   The model list.  GET /models and GET /models/{id} are answered
 *   from the policy: the models and aliases the client may use, nothing
 *   the provider's account lists besides (al_llm_model_list(),
 *   al_llm_model_get()).  The aliases a client may use are listed once,
 *   at load (al_llm_client_list()).
 *
 *   Fallback.  A call the entry's provider answers 429 or 5xx, or that
 *   cannot connect, may go once to the entry's "fallback" (the nginx
 *   module decides when: before any byte of an answer reached the
 *   client).  The fallback gets its own URI, key and model: the alias the
 *   client asked for, by the fallback's own aliases, or the same model
 *   when the fallback serves it.
 *
 * The body scanner below reads the top-level object only far enough to
 * find "model"; it needs no memory and does not judge the document:
 * al_llm_request() parses and checks the result strictly, so a body the
 * scanner misreads is refused there, never forwarded.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "al_llm_internal.h"


#define AL_LLM_DEPLOYMENT_MAX  64


/* a client's model list, as al_llm_list_of() reads it */
typedef struct {
    const al_str_t         *models;
    size_t                  nmodels;
    const al_llm_alias_t   *all;        /* no client: every alias */
    const al_llm_alias_t  **aliases;    /* else the client's */
    size_t                  naliases;
    size_t                  total;
} al_llm_list_t;


static int al_llm_azure_name(const char *s, size_t len);
static size_t al_llm_json_ws(const unsigned char *p, size_t len, size_t i);
static size_t al_llm_json_str(const unsigned char *p, size_t len, size_t i);
static size_t al_llm_json_skip(const unsigned char *p, size_t len, size_t i);
static int al_llm_seg_is(const al_str_t *seg, const char *s);
static const char *al_llm_fallback_path(al_llm_endpoint_t ep);
static int al_llm_plain(const unsigned char *p, size_t len);
static void al_llm_list_of(const al_llm_t *llm, const al_llm_client_t *lc,
    al_llm_list_t *l);
static const al_str_t *al_llm_list_id(const al_llm_list_t *l, size_t i);
static size_t al_llm_list_index(const al_llm_list_t *l, const char *id,
    size_t len);
static void al_llm_list_item(al_llm_out_t *o, al_llm_kind_t kind,
    const al_str_t *id);


/*
 * A read of an id of a model list (al_llm_list_id(), the one function
 * that reads them): nothing in the library.  tests/unit/llm_alias.c
 * builds this file into itself with a count here, and holds a page to
 * what it holds plus one pass over the list (a cursor's), whatever the
 * machine's speed.
 */
#ifndef AL_LLM_LIST_LOOK
#define AL_LLM_LIST_LOOK()
#endif


const al_llm_alias_t *
al_llm_alias_find(const al_llm_t *llm, const char *name, size_t len)
{
    size_t  i;

    for (i = 0; i < llm->naliases; i++) {
        if (llm->aliases[i].name.len == len
            && memcmp(llm->aliases[i].name.data, name, len) == 0)
        {
            return &llm->aliases[i];
        }
    }

    return NULL;
}


static int
al_llm_seg_is(const al_str_t *seg, const char *s)
{
    return seg->len == strlen(s) && memcmp(seg->data, s, seg->len) == 0;
}


/* Azure's deployment names: letters, digits, '-', '_', '.' */

static int
al_llm_azure_name(const char *s, size_t len)
{
    size_t  i;

    if (len == 0 || len > AL_LLM_DEPLOYMENT_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
              || (s[i] >= '0' && s[i] <= '9')
              || s[i] == '-' || s[i] == '_' || s[i] == '.'))
        {
            return 0;
        }
    }

    return 1;
}


al_reason_t
al_llm_azure_route(const al_llm_t *llm, const al_llm_client_t *lc,
    unsigned method, al_llm_route_t *rt)
{
    size_t                 i, n;
    al_str_t              *seg, dep;
    al_llm_endpoint_t      ep;
    al_query_param_t      *q;
    const al_llm_alias_t  *alias;
    char                   show[72];

    seg = rt->path.seg;
    n = rt->path.nseg;
    ep = AL_LLM_EP_NONE;

    if (n == 2 && al_llm_seg_is(&seg[0], "openai")
        && al_llm_seg_is(&seg[1], "responses"))
    {
        ep = AL_LLM_EP_RESPONSES;

    } else if (n >= 4 && al_llm_seg_is(&seg[0], "openai")
               && al_llm_seg_is(&seg[1], "deployments"))
    {
        if (n == 5 && al_llm_seg_is(&seg[3], "chat")
            && al_llm_seg_is(&seg[4], "completions"))
        {
            ep = AL_LLM_EP_CHAT;

        } else if (n == 4 && al_llm_seg_is(&seg[3], "completions")) {
            ep = AL_LLM_EP_COMPLETIONS;

        } else if (n == 4 && al_llm_seg_is(&seg[3], "embeddings")) {
            ep = AL_LLM_EP_EMBEDDINGS;
        }
    }

    if (ep == AL_LLM_EP_NONE) {
        rt->reason = AL_REASON_NO_ROUTE;
        (void) snprintf(rt->detail, sizeof(rt->detail),
                        "not an Azure OpenAI endpoint this gateway serves "
                        "(openai/deployments/{deployment}/chat/completions, "
                        "completions, embeddings; openai/responses)");
        return rt->reason;
    }

    if (method != AL_METHOD_POST) {
        rt->reason = AL_REASON_METHOD;
        (void) snprintf(rt->detail, sizeof(rt->detail),
                        "method %s is not allowed on %s",
                        al_method_name(method), al_llm_endpoint_name(ep));
        return rt->reason;
    }

    rt->endpoint = ep;

    /* the client's api-version goes, the policy's is sent */

    for (i = 0; i < rt->query.nparam; i++) {
        q = &rt->query.param[i];

        if (q->name.len == sizeof("api-version") - 1
            && memcmp(q->name.data, "api-version", q->name.len) == 0)
        {
            continue;
        }

        (void) al_llm_show(show, sizeof(show), q->name.data, q->name.len,
                           64);
        rt->reason = AL_REASON_QUERY;
        (void) snprintf(rt->detail, sizeof(rt->detail),
                        "query parameter \"%s\" is not allowed on %s", show,
                        al_llm_endpoint_name(ep));
        return rt->reason;
    }

    q = &rt->query.param[0];
    q->name.data = "api-version";
    q->name.len = sizeof("api-version") - 1;
    q->value = llm->api_version;
    rt->query.nparam = 1;

    if (ep == AL_LLM_EP_RESPONSES) {
        return AL_REASON_NONE;
    }

    dep = seg[2];

    if (!al_llm_azure_name(dep.data, dep.len)) {
        (void) al_llm_show(show, sizeof(show), dep.data, dep.len, 64);
        rt->reason = AL_REASON_MODEL;
        (void) snprintf(rt->detail, sizeof(rt->detail),
                        "deployment \"%s\" is not a deployment name "
                        "(letters, digits, '-', '_', '.')", show);
        return rt->reason;
    }

    alias = al_llm_alias_find(llm, dep.data, dep.len);

    if (alias != NULL) {
        rt->alias = dep;
        dep = alias->model;
        seg[2] = dep;
    }

    if (!al_llm_model_allowed(llm, lc, dep.data, dep.len)) {
        (void) al_llm_show(show, sizeof(show), dep.data, dep.len, 64);
        rt->reason = AL_REASON_MODEL;
        (void) snprintf(rt->detail, sizeof(rt->detail),
                        "model \"%s\" is not allowed", show);
        return rt->reason;
    }

    rt->model = dep;

    return AL_REASON_NONE;
}


/*
 * The body, scanned.  Each function returns the index after what it
 * read, or len + 1 when the bytes end first or are not what it reads.
 */

static size_t
al_llm_json_ws(const unsigned char *p, size_t len, size_t i)
{
    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n'
                       || p[i] == '\r'))
    {
        i++;
    }

    return i;
}


static size_t
al_llm_json_str(const unsigned char *p, size_t len, size_t i)
{
    if (i >= len || p[i] != '"') {
        return len + 1;
    }

    for (i++; i < len; i++) {
        if (p[i] == '\\') {
            i++;
            continue;
        }

        if (p[i] == '"') {
            return i + 1;
        }
    }

    return len + 1;
}


static size_t
al_llm_json_skip(const unsigned char *p, size_t len, size_t i)
{
    size_t  depth;

    depth = 0;

    while (i < len) {
        switch (p[i]) {

        case '"':
            i = al_llm_json_str(p, len, i);
            if (i > len) {
                return i;
            }
            if (depth == 0) {
                return i;
            }
            continue;

        case '{':
        case '[':
            depth++;
            break;

        case '}':
        case ']':
            if (depth == 0) {
                return i;
            }
            if (--depth == 0) {
                return i + 1;
            }
            break;

        case ',':
            if (depth == 0) {
                return i;
            }
            break;

        default:
            break;
        }

        i++;
    }

    return depth == 0 ? i : len + 1;
}


int
al_llm_model_locate(const unsigned char *body, size_t len, size_t *at,
    size_t *raw_len)
{
    int     key;
    size_t  i, k;

    i = al_llm_json_ws(body, len, 0);

    if (i >= len || body[i] != '{') {
        return -1;
    }

    i++;
    *at = i;
    *raw_len = 0;

    for ( ;; ) {
        i = al_llm_json_ws(body, len, i);

        if (i >= len) {
            return -1;
        }

        if (body[i] == '}') {
            return 0;
        }

        k = i;
        i = al_llm_json_str(body, len, i);
        if (i > len) {
            return -1;
        }

        key = (i - k == sizeof("\"model\"") - 1
               && memcmp(body + k, "\"model\"", i - k) == 0);

        i = al_llm_json_ws(body, len, i);
        if (i >= len || body[i] != ':') {
            return -1;
        }

        i = al_llm_json_ws(body, len, i + 1);

        if (key) {
            if (i >= len || body[i] != '"') {
                return 2;
            }

            k = al_llm_json_str(body, len, i);
            if (k > len) {
                return -1;
            }

            *at = i;
            *raw_len = k - i;
            return 1;
        }

        i = al_llm_json_skip(body, len, i);
        if (i >= len) {
            return -1;
        }

        if (body[i] == ',') {
            i++;
        }
    }
}


int
al_llm_model_splice(const unsigned char *body, size_t len, size_t at,
    size_t raw_len, const char *model, size_t mlen, unsigned char **out,
    size_t *out_len)
{
    char          *buf;
    size_t         size, end;
    al_llm_out_t   o;
    int            insert, comma;

    *out = NULL;
    *out_len = 0;

    if (at > len || raw_len > len - at) {
        return -1;
    }

    /* raw_len 0: a new member right after the object's '{' */

    insert = (raw_len == 0);
    comma = 0;

    if (insert) {
        end = al_llm_json_ws(body, len, at);
        comma = (end < len && body[end] != '}');
    }

    size = len + 6 * mlen + sizeof("\"model\":\"\",");

    buf = malloc(size + 1);
    if (buf == NULL) {
        return -1;
    }

    al_llm_out_init(&o, buf, size + 1);
    al_llm_out_raw(&o, (const char *) body, at);

    if (insert) {
        al_llm_out_cstr(&o, "\"model\":");
    }

    al_llm_out_json(&o, model, mlen);

    if (comma) {
        al_llm_out_cstr(&o, ",");
    }

    al_llm_out_raw(&o, (const char *) body + at + raw_len,
                   len - at - raw_len);

    if (o.len > size) {
        free(buf);
        return -1;
    }

    *out = (unsigned char *) buf;
    *out_len = o.len;

    return 0;
}


/* a JSON string token of printable ASCII without escapes */

static int
al_llm_plain(const unsigned char *p, size_t len)
{
    size_t  i;

    if (len < 2 || p[0] != '"' || p[len - 1] != '"') {
        return 0;
    }

    for (i = 1; i < len - 1; i++) {
        if (p[i] < 0x20 || p[i] > 0x7e || p[i] == '\\' || p[i] == '"') {
            return 0;
        }
    }

    return 1;
}


int
al_llm_model_map(const al_llm_t *llm, const al_str_t *force,
    const unsigned char *body, size_t len, al_llm_map_t *m)
{
    int                    rc;
    size_t                 at, raw;
    const al_llm_alias_t  *alias;

    memset(m, 0, sizeof(*m));

    rc = al_llm_model_locate(body, len, &at, &raw);

    if (rc < 0 || rc == 2) {
        /*
         * Not an object, or a model that is not a string: left as it is
         * for the body check to refuse.
         */
        return 0;
    }

    if (rc == 1 && !al_llm_plain(body + at, raw)) {
        /*
         * A string with escapes or bytes outside printable ASCII is not
         * replaced, so a splice never turns a body that would be refused
         * into one that passes.  Without force the body check judges it
         * (an escaped alias is no alias).  With force it must not stay:
         * the check would read its model while the path's deployment (or
         * the fallback's model) is what is served.
         */
        return (force != NULL) ? 1 : 0;
    }

    if (force != NULL) {
        if (rc == 1 && raw == force->len + 2
            && memcmp(body + at + 1, force->data, force->len) == 0)
        {
            return 0;
        }

        return al_llm_model_splice(body, len, at, rc == 1 ? raw : 0,
                                   force->data, force->len, &m->body,
                                   &m->body_len);
    }

    if (rc == 0 || raw < 2) {
        return 0;
    }

    alias = al_llm_alias_find(llm, (const char *) body + at + 1, raw - 2);

    if (alias == NULL) {
        return 0;
    }

    memcpy(m->alias, alias->name.data, alias->name.len);
    m->alias[alias->name.len] = '\0';
    m->alias_len = alias->name.len;

    return al_llm_model_splice(body, len, at, raw, alias->model.data,
                               alias->model.len, &m->body, &m->body_len);
}


/*
 * Fallback.  The model the fallback entry b is asked for: the alias the
 * client named, mapped by b's aliases; else the model the first entry
 * was asked for, when b serves it.  Either way lc (the client's entry in
 * b) must allow it.
 */

int
al_llm_fallback_model(const al_llm_t *b, const al_llm_client_t *lc,
    const char *model, size_t mlen, const char *alias, size_t alen,
    al_str_t *out)
{
    const al_llm_alias_t  *a;

    a = (alen > 0) ? al_llm_alias_find(b, alias, alen) : NULL;

    if (a != NULL) {
        *out = a->model;

    } else {
        a = al_llm_alias_find(b, model, mlen);

        if (a != NULL) {
            *out = a->model;

        } else {
            out->data = model;
            out->len = mlen;
        }
    }

    return al_llm_model_allowed(b, lc, out->data, out->len) ? 0 : -1;
}


/* the endpoint as a path under an OpenAI-style base */

static const char *
al_llm_fallback_path(al_llm_endpoint_t ep)
{
    switch (ep) {

    case AL_LLM_EP_CHAT:
        return "chat/completions";

    case AL_LLM_EP_COMPLETIONS:
        return "completions";

    case AL_LLM_EP_EMBEDDINGS:
        return "embeddings";

    case AL_LLM_EP_RESPONSES:
        return "responses";

    case AL_LLM_EP_MESSAGES:
        return "messages";

    default:
        return NULL;
    }
}


int
al_llm_fallback_uri(const al_llm_t *b, al_llm_endpoint_t ep,
    const al_str_t *model, char *out, size_t size, size_t *len)
{
    int          n;
    const char  *path;

    path = al_llm_fallback_path(ep);

    if (path == NULL
        || (ep == AL_LLM_EP_MESSAGES) != (b->kind == AL_LLM_ANTHROPIC))
    {
        return -1;
    }

    if (b->kind != AL_LLM_AZURE) {
        n = snprintf(out, size, "%.*s/%s", (int) b->upstream.base_path.len,
                     b->upstream.base_path.data, path);

    } else if (ep == AL_LLM_EP_RESPONSES) {
        n = snprintf(out, size, "%.*s/openai/responses?api-version=%.*s",
                     (int) b->upstream.base_path.len,
                     b->upstream.base_path.data,
                     (int) b->api_version.len, b->api_version.data);

    } else {
        if (!al_llm_azure_name(model->data, model->len)) {
            return -1;
        }

        n = snprintf(out, size, "%.*s/openai/deployments/%.*s/%s"
                     "?api-version=%.*s", (int) b->upstream.base_path.len,
                     b->upstream.base_path.data, (int) model->len,
                     model->data, path, (int) b->api_version.len,
                     b->api_version.data);
    }

    if (n < 0 || (size_t) n >= size) {
        return -1;
    }

    *len = (size_t) n;

    return 0;
}


/*
 * The model list of lc: its models (lc->models, else the entry's), then
 * its aliases (lc->aliases, made at load; with lc NULL, every alias of
 * the entry, whose models are all the entry's).  The id at an index is
 * read in constant time (al_llm_list_id()), so a page costs what it
 * holds; the index of an id is found by one pass over the list
 * (al_llm_list_index()), linear in its length, so a cursor costs that
 * pass, and so does al_llm_model_listed().
 */

static void
al_llm_list_of(const al_llm_t *llm, const al_llm_client_t *lc,
    al_llm_list_t *l)
{
    if (lc != NULL && lc->nmodels > 0) {
        l->models = lc->models;
        l->nmodels = lc->nmodels;

    } else {
        l->models = llm->models;
        l->nmodels = llm->nmodels;
    }

    if (lc != NULL) {
        l->all = NULL;
        l->aliases = lc->aliases;
        l->naliases = lc->naliases;

    } else {
        l->all = llm->aliases;
        l->aliases = NULL;
        l->naliases = llm->naliases;
    }

    l->total = l->nmodels + l->naliases;
}


/* the i-th id, i below l->total */

static const al_str_t *
al_llm_list_id(const al_llm_list_t *l, size_t i)
{
    AL_LLM_LIST_LOOK();

    if (i < l->nmodels) {
        return &l->models[i];
    }

    i -= l->nmodels;

    return (l->all != NULL) ? &l->all[i].name : &l->aliases[i]->name;
}


/* the index of id in the list, or l->total when it is not listed */

static size_t
al_llm_list_index(const al_llm_list_t *l, const char *id, size_t len)
{
    size_t           i;
    const al_str_t  *s;

    for (i = 0; i < l->total; i++) {
        s = al_llm_list_id(l, i);

        if (s->len == len && memcmp(s->data, id, len) == 0) {
            return i;
        }
    }

    return l->total;
}


size_t
al_llm_client_list(const al_llm_t *llm, al_llm_client_t *lc,
    const al_llm_alias_t **out)
{
    size_t  i, n;

    n = 0;

    for (i = 0; i < llm->naliases; i++) {
        if (al_llm_model_allowed(llm, lc, llm->aliases[i].model.data,
                                 llm->aliases[i].model.len))
        {
            out[n++] = &llm->aliases[i];
        }
    }

    lc->aliases = out;
    lc->naliases = n;

    return n;
}


/*
 * One pass over lc's list, linear in its length (not constant time: only
 * reading the id at an index is), the cost of a page's cursor.
 */

int
al_llm_model_listed(const al_llm_t *llm, const al_llm_client_t *lc,
    const char *id, size_t len)
{
    al_llm_list_t  l;

    al_llm_list_of(llm, lc, &l);

    return al_llm_list_index(&l, id, len) < l.total;
}


static void
al_llm_list_item(al_llm_out_t *o, al_llm_kind_t kind, const al_str_t *id)
{
    if (kind == AL_LLM_ANTHROPIC) {
        al_llm_out_lit(o, "{\"type\":\"model\",\"id\":");
        al_llm_out_json(o, id->data, id->len);
        al_llm_out_lit(o, ",\"display_name\":");
        al_llm_out_json(o, id->data, id->len);
        al_llm_out_lit(o, ",\"created_at\":\"1970-01-01T00:00:00Z\"}");
        return;
    }

    al_llm_out_lit(o, "{\"id\":");
    al_llm_out_json(o, id->data, id->len);
    al_llm_out_lit(o, ",\"object\":\"model\",\"created\":0,"
                   "\"owned_by\":\"airlock\"}");
}


size_t
al_llm_model_get(const al_llm_t *llm, const al_str_t *id, char *out,
    size_t size)
{
    al_llm_out_t  o;

    al_llm_out_init(&o, out, size);
    al_llm_list_item(&o, llm->kind, id);

    return o.len;
}


size_t
al_llm_model_list(const al_llm_t *llm, const al_llm_client_t *lc,
    const al_llm_page_t *page, char *out, size_t size)
{
    size_t           i, total, start, end;
    uint64_t         limit;
    al_llm_out_t     o;
    al_llm_list_t    l;
    const al_str_t  *id;

    al_llm_out_init(&o, out, size);

    al_llm_list_of(llm, lc, &l);
    total = l.total;

    start = 0;
    end = total;

    if (llm->kind == AL_LLM_ANTHROPIC) {
        limit = (page != NULL && page->limit > 0) ? page->limit
                                                  : AL_LLM_PAGE_DEFAULT;

        if (page != NULL && page->before_id.len > 0) {
            end = al_llm_list_index(&l, page->before_id.data,
                                    page->before_id.len);

            if (end == total) {
                end = 0;
            }

            start = (end > limit) ? end - (size_t) limit : 0;

        } else {
            if (page != NULL && page->after_id.len > 0) {
                start = al_llm_list_index(&l, page->after_id.data,
                                          page->after_id.len);
                start = (start < total) ? start + 1 : total;
            }

            end = (total - start > limit) ? start + (size_t) limit : total;
        }

        al_llm_out_lit(&o, "{\"data\":[");

    } else {
        al_llm_out_lit(&o, "{\"object\":\"list\",\"data\":[");
    }

    for (i = start; i < end; i++) {
        if (i > start) {
            al_llm_out_lit(&o, ",");
        }

        al_llm_list_item(&o, llm->kind, al_llm_list_id(&l, i));
    }

    al_llm_out_lit(&o, "]");

    if (llm->kind == AL_LLM_ANTHROPIC) {
        if (page != NULL && page->before_id.len > 0) {
            al_llm_out_cstr(&o, start > 0 ? ",\"has_more\":true"
                                          : ",\"has_more\":false");
        } else {
            al_llm_out_cstr(&o, end < total ? ",\"has_more\":true"
                                            : ",\"has_more\":false");
        }

        al_llm_out_lit(&o, ",\"first_id\":");

        if (start < end) {
            id = al_llm_list_id(&l, start);
            al_llm_out_json(&o, id->data, id->len);
            al_llm_out_lit(&o, ",\"last_id\":");
            id = al_llm_list_id(&l, end - 1);
            al_llm_out_json(&o, id->data, id->len);

        } else {
            al_llm_out_lit(&o, "null,\"last_id\":null");
        }
    }

    al_llm_out_lit(&o, "}");

    return o.len;
}
