/*
 * LLM gateway: which endpoints a provider prefix serves, and the policy on
 * request bodies (model allowlist, stream, output caps, usage in streams).
 *
 * The body is read in one strict pass (al_llm_body_scan(): the refusals
 * of al_json_check(), with the members read here located, no tree built).
 * A rewrite splices the few byte ranges it changes (a value replaced, a
 * member added at the end of an object) and keeps every other byte, so
 * what the upstream reads is what was checked, numbers and spacing as the
 * client wrote them.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "al_internal.h"
#include "al_llm_internal.h"


#define AL_LLM_K_OPENAI   (1u << AL_LLM_OPENAI)
#define AL_LLM_K_COMPAT   (1u << AL_LLM_OPENAI_COMPATIBLE)
#define AL_LLM_K_OAI      (AL_LLM_K_OPENAI | AL_LLM_K_COMPAT)
#define AL_LLM_K_ANT      (1u << AL_LLM_ANTHROPIC)

#define AL_LLM_LIT(s)     { s, sizeof(s) - 1 }
#define AL_LLM_SHOW_MAX   64
#define AL_LLM_EDITS      6             /* splices per body, at most */
#define AL_LLM_EDIT_MAX   64            /* bytes one splice inserts */
#define AL_LLM_USAGE_ON   "{\"include_usage\":true}"

/* the scan keeps as much of a "tool_choice" as is compared and shown */
_Static_assert(AL_LLM_SHOW_MAX <= AL_LLM_CHOICE_TYPE
               && AL_LLM_TOOL_TYPE <= AL_LLM_CHOICE_TYPE,
               "choice_type holds what is read of it");


typedef struct {
    unsigned             kinds;
    unsigned             method;
    al_str_t             seg[2];        /* NULL data: one segment, the
                                           model */
    size_t               nseg;
    al_llm_endpoint_t    endpoint;
    const char *const   *query;         /* allowed names, or NULL */
} al_llm_ep_def_t;

/* one splice: del bytes at at are replaced by text */
typedef struct {
    size_t                  at;
    size_t                  del;
    size_t                  tlen;
    char                    text[AL_LLM_EDIT_MAX];
} al_llm_edit_t;

typedef struct {
    const al_llm_t         *llm;
    const al_llm_client_t  *lc;
    al_llm_endpoint_t       ep;
    const al_str_t         *alias;          /* NULL: none */
    const unsigned char    *body;
    size_t                  len;
    al_llm_body_t          *b;
    al_llm_req_t           *req;
    al_llm_alloc_pt         alloc;          /* NULL: malloc() */
    void                   *alloc_data;
    size_t                  nedits;
    unsigned                audio_ref:1;    /* al_llm_req_refs_read() */
    al_llm_edit_t           edit[AL_LLM_EDITS];
} al_llm_rq_t;

/*
 * What al_llm_req_refs() looks for in the members that hold the prompt,
 * in one walk: the key of the first input by URL and of the first file
 * the account stores, each when wanted
 */
typedef struct {
    const char             *url;            /* NULL: none found */
    const char             *stored;         /* NULL: none found */
    const char             *network;        /* NULL: none found */
    unsigned                want_url:1;
    unsigned                want_stored:1;
    unsigned                want_network:1;
} al_llm_refs_t;

/* a thinking budget of another server (al_llm_req_think_members()) */
typedef struct {
    const char             *name;
    const char             *key;            /* the budget is this member of
                                               the object; NULL: the member
                                               itself */
    unsigned                apart;          /* billed beside the output
                                               limit, not within it */
} al_llm_think_t;


static const al_llm_ep_def_t *al_llm_ep_find(al_llm_kind_t kind,
    unsigned method, const al_path_t *path, al_reason_t *reason);
static int al_llm_route_uri(const al_llm_t *llm,
    const al_llm_ep_def_t *def, al_llm_route_t *rt);
static int al_llm_req_model(al_llm_rq_t *rq);
static int al_llm_req_lists(al_llm_rq_t *rq);
static int al_llm_req_stream(al_llm_rq_t *rq);
static int al_llm_req_tokens(al_llm_rq_t *rq);
static int al_llm_req_thinking(al_llm_rq_t *rq);
static int al_llm_req_budget(al_llm_rq_t *rq, unsigned id,
    const char *name, const char *key, unsigned eps);
static int al_llm_req_think_members(al_llm_rq_t *rq);
static int al_llm_req_think_in(al_llm_rq_t *rq, const al_llm_jfield_t *f,
    const char *name, const char *key, uint64_t max, uint64_t *n);
static int al_llm_req_think_value(al_llm_rq_t *rq, const char *name,
    const char *key, int valid, uint64_t n, uint64_t max);
static int al_llm_req_cap(al_llm_rq_t *rq, const al_llm_jfield_t *f,
    const char *name, uint64_t *val);
static int al_llm_req_n(al_llm_rq_t *rq);
static int al_llm_req_usage(al_llm_rq_t *rq);
static int al_llm_req_tools(al_llm_rq_t *rq);
static int al_llm_req_tool_choice(al_llm_rq_t *rq);
static int al_llm_choice_tools(al_llm_rq_t *rq, json_t *list);
static int al_llm_choice_case(al_llm_rq_t *rq, json_t *obj,
    const char *const *names);
static int al_llm_choice_case_fail(al_llm_rq_t *rq, const char *key,
    size_t len, const char *name);
static int al_llm_tool_allowed(const al_llm_t *llm, int family);
static int al_llm_req_tool_refuse(al_llm_rq_t *rq, int family,
    const char *type, size_t len, const char *where);
static int al_llm_req_tier(al_llm_rq_t *rq);
static int al_llm_req_dearer(al_llm_rq_t *rq, unsigned field,
    const char *name, const char *pass, const char *what);
static int al_llm_req_provider(al_llm_rq_t *rq);
static int al_llm_req_background(al_llm_rq_t *rq);
static int al_llm_req_prediction(al_llm_rq_t *rq);
static int al_llm_req_context(al_llm_rq_t *rq);
static int al_llm_context_edit(const char *type);
static int al_llm_req_prompt(al_llm_rq_t *rq, const al_llm_jfield_t *f,
    uint64_t *batch);
static int al_llm_req_listed_on(al_llm_rq_t *rq, const char *name,
    unsigned eps);
static int al_llm_req_refuse_member(al_llm_rq_t *rq, const char *show);
static uint64_t al_llm_prompt_batch(const unsigned char *p, size_t len);
static int al_llm_req_unlisted(al_llm_rq_t *rq);
static int al_llm_provider_safe(const char *key, json_t *v);
static int al_llm_provider_capped(al_llm_rq_t *rq, json_t *cap);
static int al_llm_req_refs(al_llm_rq_t *rq);
static AL_LLM_NOINLINE int al_llm_req_refs_read(al_llm_rq_t *rq);
static void al_llm_refs_find(json_t *v, unsigned depth, al_llm_refs_t *refs);
static int al_llm_req_urls(al_llm_rq_t *rq, const char *key);
static int al_llm_req_stored(al_llm_rq_t *rq, const char *key);
static const char *al_llm_stored_tools(json_t *root);
static const char *al_llm_url_tools(json_t *root);
static int al_llm_tool_theirs(json_t *tool);
static int al_llm_req_network(al_llm_rq_t *rq, const char *key);
static const char *al_llm_network_tools(json_t *root);
static const char *al_llm_network_here(json_t *obj);
static int al_llm_req_stored_prompt(al_llm_rq_t *rq);
static const char *al_llm_json_find(json_t *v, unsigned depth,
    const char *(*here)(json_t *obj));
static const char *al_llm_stored_here(json_t *obj);
static const char *al_llm_audio_messages(json_t *root);
static const char *al_llm_stored_tool(json_t *tool);
static const char *al_llm_stored_tool_here(json_t *obj);
static const char *al_llm_skill_here(json_t *obj);
static int al_llm_req_plugins(al_llm_rq_t *rq);
static int al_llm_req_audio(al_llm_rq_t *rq);
static const char *al_llm_url_here(json_t *obj);
static int al_llm_url_remote(json_t *v);
static int al_llm_url_ref(json_t *v);
static int al_llm_req_member(al_llm_rq_t *rq, unsigned id, unsigned family,
    const char *name);
static int al_llm_req_splice(al_llm_rq_t *rq);
static int al_llm_edit(al_llm_rq_t *rq, size_t at, size_t del,
    const char *text, size_t len);
static int al_llm_edit_member(al_llm_rq_t *rq, size_t last,
    size_t nmembers, const char *name, const char *value, size_t vlen);
static size_t al_llm_u64_text(char *buf, uint64_t v);
static int al_llm_fail(char *detail, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), cold));


static const char *const  al_llm_q_beta[] = { "beta", NULL };
static const char *const  al_llm_q_list[] = {
    "limit", "before_id", "after_id", NULL
};

static const al_llm_ep_def_t  al_llm_eps[] = {
    { AL_LLM_K_OAI, AL_METHOD_POST,
      { AL_LLM_LIT("chat"), AL_LLM_LIT("completions") }, 2,
      AL_LLM_EP_CHAT, NULL },
    { AL_LLM_K_OAI, AL_METHOD_POST, { AL_LLM_LIT("completions") }, 1,
      AL_LLM_EP_COMPLETIONS, NULL },
    { AL_LLM_K_OAI, AL_METHOD_POST, { AL_LLM_LIT("embeddings") }, 1,
      AL_LLM_EP_EMBEDDINGS, NULL },
    { AL_LLM_K_OAI, AL_METHOD_POST, { AL_LLM_LIT("responses") }, 1,
      AL_LLM_EP_RESPONSES, NULL },
    { AL_LLM_K_OAI, AL_METHOD_GET, { AL_LLM_LIT("models") }, 1,
      AL_LLM_EP_MODELS, NULL },
    { AL_LLM_K_OAI, AL_METHOD_GET, { AL_LLM_LIT("models") }, 2,
      AL_LLM_EP_MODEL, NULL },
    { AL_LLM_K_ANT, AL_METHOD_POST, { AL_LLM_LIT("messages") }, 1,
      AL_LLM_EP_MESSAGES, al_llm_q_beta },
    { AL_LLM_K_ANT, AL_METHOD_GET, { AL_LLM_LIT("models") }, 1,
      AL_LLM_EP_MODELS, al_llm_q_list },
    { AL_LLM_K_ANT, AL_METHOD_GET, { AL_LLM_LIT("models") }, 2,
      AL_LLM_EP_MODEL, NULL }
};

/* the output limits of the three APIs, each read on every endpoint */
static const unsigned  al_llm_out_ids[] = {
    AL_LLM_F_MAX_TOKENS, AL_LLM_F_MAX_COMPLETION_TOKENS,
    AL_LLM_F_MAX_OUTPUT_TOKENS
};

static const char *const  al_llm_out_names[] = {
    "max_tokens", "max_completion_tokens", "max_output_tokens"
};

/*
 * The thinking budgets of other servers (al_llm_req_think_members()), as
 * the body's members from AL_LLM_F_THINKING_BUDGET on, in that order
 */
static const al_llm_think_t  al_llm_think[] = {
    { "thinking_budget", NULL, 1 },
    { "thinking_token_budget", NULL, 0 },
    { "thinking_budget_tokens", NULL, 0 },
    { "chat_template_kwargs", "thinking_budget", 0 },
    { "nvext", "max_thinking_tokens", 0 }
};

#define AL_LLM_THINK  (sizeof(al_llm_think) / sizeof(al_llm_think[0]))

_Static_assert(AL_LLM_F_THINKING_BUDGET + AL_LLM_THINK
               == AL_LLM_F_ENABLE_THINKING,
               "al_llm_think[] is the body's members before the switch");

/*
 * The families of tools the provider defines, by AL_LLM_PT_*: a type is
 * of a family when it is its name, or its name, '_' and more.
 */
const char *const  al_llm_tool_names[] = {
    "web_search", "web_fetch", "mcp", "code_execution", "code_interpreter",
    "file_search", "image_generation", "tool_search", "computer", "bash",
    "text_editor", "memory", "shell", "local_shell", "apply_patch",
    "data_sources", "url_input", "stored_files", NULL
};

static const char *const  al_llm_ep_names[] = {
    "none", "chat/completions", "completions", "embeddings", "responses",
    "messages", "models", "models/{id}"
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


/*
 * The usual first bytes of a JSON answer or an event stream ("data: {",
 * "{\"id\":") are printable ASCII: two words of them are told at once,
 * by bits set where a byte is over 0x7e, under 0x20 or 0x7f (exact for
 * "some byte is").  Anything else is read a byte at a time.
 */

#define AL_LLM_ONES  0x0101010101010101ULL
#define AL_LLM_HIGH  0x8080808080808080ULL

_Static_assert(AL_LLM_TEXT_PEEK == 16, "the peek is two words");

#define al_llm_not_printable(w, d)                                           \
    ((w) | (((w) - 0x20 * AL_LLM_ONES) & ~(w)) | (((d) - AL_LLM_ONES) & ~(d)))

int
al_llm_body_text(const unsigned char *p, size_t len)
{
    size_t    i, k, n;
    uint64_t  w, v, dw, dv;
    unsigned  c;

    if (len >= AL_LLM_TEXT_PEEK) {
        memcpy(&w, p, 8);
        memcpy(&v, p + 8, 8);
        dw = w ^ (0x7f * AL_LLM_ONES);
        dv = v ^ (0x7f * AL_LLM_ONES);

        if (((al_llm_not_printable(w, dw) | al_llm_not_printable(v, dv))
             & AL_LLM_HIGH)
            == 0)
        {
            return 1;
        }
    }

    n = (len < AL_LLM_TEXT_PEEK) ? len : AL_LLM_TEXT_PEEK;

    for (i = 0; i < n; i += c) {
        c = p[i];

        if ((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\r' || c == '\t') {
            c = 1;
            continue;
        }

        /* the first byte of a UTF-8 sequence, and its continuation */

        if (c < 0xc2 || c > 0xf4) {
            return 0;
        }

        c = (c >= 0xf0) ? 4 : (c >= 0xe0) ? 3 : 2;

        for (k = 1; k < c && i + k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) {
                return 0;
            }
        }
    }

    return 1;
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
            if (def->seg[j].data != NULL
                && (path->seg[j].len != def->seg[j].len
                    || memcmp(path->seg[j].data, def->seg[j].data,
                              def->seg[j].len) != 0))
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
            && al_llm_route_uri(llm, NULL, rt) != 0)
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

        /* the id of an alias too: what GET /models lists, no more */

        if (!al_llm_model_listed(llm, lc, rt->model.data, rt->model.len)) {
            (void) al_llm_show(show, sizeof(show), rt->model.data,
                               rt->model.len, AL_LLM_SHOW_MAX);
            rt->reason = AL_REASON_MODEL;
            (void) al_llm_fail(rt->detail, sizeof(rt->detail),
                               "model \"%s\" does not exist or this "
                               "client may not use it", show);
            return rt->reason;
        }
    }

    if (al_llm_route_uri(llm, def, rt) != 0) {
        rt->reason = AL_REASON_PATH;
        (void) al_llm_fail(rt->detail, sizeof(rt->detail),
                           "upstream URI too long");
        return rt->reason;
    }

    return AL_REASON_NONE;
}


/*
 * Base path, then the suffix and query re-encoded from the parsed form.
 * A segment that matched a literal of the endpoint table (def, NULL for
 * azure) is that literal, which has nothing to escape.
 */

static int
al_llm_route_uri(const al_llm_t *llm, const al_llm_ep_def_t *def,
    al_llm_route_t *rt)
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

        if (def != NULL && i < 2 && def->seg[i].data != NULL) {
            AL_PUT(def->seg[i].data, def->seg[i].len);

        } else {
            AL_ESC(seg->data, seg->len, 0);
        }
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
    return al_llm_request_with(llm, lc, ep, NULL, ctype, ctype_len, body,
                               len, NULL, NULL, req);
}


al_reason_t
al_llm_request_with(const al_llm_t *llm, const al_llm_client_t *lc,
    al_llm_endpoint_t ep, const al_str_t *alias, const char *ctype,
    size_t ctype_len, const unsigned char *body, size_t len,
    al_llm_alloc_pt alloc, void *data, al_llm_req_t *req)
{
    al_llm_rq_t    rq;
    al_llm_body_t  b;

    /*
     * Everything is zero but the two text buffers, which are written as C
     * strings before anything reads them: clearing their 512 bytes was a
     * good part of a small request's cost; and state[], read only as far
     * as nstate.
     */

    req->reason = AL_REASON_NONE;
    req->detail[0] = '\0';
    req->model[0] = '\0';
    memset(&req->model_len, 0,
           offsetof(al_llm_req_t, state) - offsetof(al_llm_req_t, model_len));

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

    /* the body is read as UTF-8 JSON: the provider must read it so too */

    if (ctype != NULL
        && al_media_type_check(ctype, ctype_len, "application/json",
                               sizeof("application/json") - 1, 1,
                               req->detail, sizeof(req->detail))
           != 0)
    {
        req->reason = AL_REASON_BODY;
        return req->reason;
    }

    if (al_llm_body_scan_ep(llm, ep, body, len, &b, req->detail,
                            sizeof(req->detail))
        != 0
        || (b.jansson
            && al_json_check(NULL, body, len, req->detail,
                             sizeof(req->detail))
               != 0))
    {
        req->reason = AL_REASON_BODY;
        return req->reason;
    }

    if (b.root.type != AL_LLM_JT_OBJECT) {
        req->reason = AL_REASON_BODY;
        (void) al_llm_fail(req->detail, sizeof(req->detail),
                           "the body must be a JSON object");
        return req->reason;
    }

    rq.llm = llm;
    rq.lc = lc;
    rq.ep = ep;
    rq.alias = alias;
    rq.body = body;
    rq.len = len;
    rq.b = &b;
    rq.req = req;
    rq.alloc = alloc;
    rq.alloc_data = data;
    rq.nedits = 0;
    rq.audio_ref = 0;

    if (al_llm_req_model(&rq) != 0
        || al_llm_req_lists(&rq) != 0
        || al_llm_req_stream(&rq) != 0
        || al_llm_req_tokens(&rq) != 0
        || al_llm_req_thinking(&rq) != 0
        || al_llm_req_n(&rq) != 0
        || al_llm_req_usage(&rq) != 0
        || al_llm_req_tools(&rq) != 0
        || al_llm_req_refs(&rq) != 0
        || al_llm_req_stored_prompt(&rq) != 0
        || al_llm_req_tier(&rq) != 0
        || al_llm_req_audio(&rq) != 0
        || al_llm_req_background(&rq) != 0
        || al_llm_req_prediction(&rq) != 0
        || al_llm_req_context(&rq) != 0
        || al_llm_req_unlisted(&rq) != 0)
    {
        return req->reason;
    }

    req->prompt_estimate = (b.text_bytes + 3) / 4 + b.extra;
    req->prompt_text = b.text_bytes;
    req->cache_control = b.cache_control;

    if (ep == AL_LLM_EP_RESPONSES) {
        al_llm_state_collect(&b, body, req);
    }

    if (rq.nedits > 0) {
        (void) al_llm_req_splice(&rq);
    }

    return req->reason;
}


void
al_llm_request_free(al_llm_req_t *req)
{
    if (!req->body_theirs) {
        free(req->body);
    }

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


uint64_t
al_llm_prompt_bound(uint64_t estimate, uint64_t text)
{
    uint64_t  quarter, apart;

    /* the estimate is the text's quarter, rounded up, and what is apart */

    quarter = text / 4 + (text % 4 != 0);
    apart = (estimate > quarter) ? estimate - quarter : 0;

    return (text > UINT64_MAX - apart) ? UINT64_MAX : text + apart;
}


int
al_llm_tool_family(const char *type, size_t len)
{
    int     i;
    size_t  n;

    if ((len == 8 && memcmp(type, "function", 8) == 0)
        || (len == 6 && memcmp(type, "custom", 6) == 0))
    {
        return -1;
    }

    for (i = 0; i < AL_LLM_PT_NAMED; i++) {
        n = strlen(al_llm_tool_names[i]);

        if (len >= n && memcmp(type, al_llm_tool_names[i], n) == 0
            && (len == n || type[n] == '_'))
        {
            return i;
        }
    }

    return AL_LLM_PT_UNKNOWN;
}


int
al_llm_tool_name(const char *name, size_t len)
{
    int  i;

    for (i = 0; i < AL_LLM_PT_NAMED; i++) {
        if (strlen(al_llm_tool_names[i]) == len
            && memcmp(al_llm_tool_names[i], name, len) == 0)
        {
            return i;
        }
    }

    return -1;
}


static int
al_llm_req_model(al_llm_rq_t *rq)
{
    size_t                 len;
    const char            *model;
    al_llm_req_t          *req;
    const al_llm_jfield_t *f;
    char                   show[AL_LLM_SHOW_MAX + 4];

    req = rq->req;
    f = &rq->b->f[AL_LLM_F_MODEL];

    if (f->type != AL_LLM_JT_STRING) {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"model\" must be a string");
    }

    len = (size_t) f->num;
    model = rq->b->model;

    if (len >= sizeof(rq->b->model)) {
        /*
         * Longer than any name kept: an allowlist entry this long is
         * compared with the name as written (when it has no escapes).
         */

        if (!f->esc
            && al_llm_model_allowed(rq->llm, rq->lc,
                                    (const char *) rq->body + f->at + 1,
                                    len))
        {
            req->reason = AL_REASON_BODY;
            return al_llm_fail(req->detail, sizeof(req->detail),
                               "model name too long");
        }

        (void) al_llm_show(show, sizeof(show), model,
                           sizeof(rq->b->model), AL_LLM_SHOW_MAX);
        req->reason = AL_REASON_MODEL;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "model \"%s\" is not allowed", show);
    }

    if (!al_llm_model_allowed(rq->llm, rq->lc, model, len)) {
        (void) al_llm_show(show, sizeof(show), model, len, AL_LLM_SHOW_MAX);
        req->reason = AL_REASON_MODEL;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "model \"%s\" is not allowed", show);
    }

    memcpy(req->model, model, len);
    req->model[len] = '\0';
    req->model_len = len;
    req->model_at = f->at;
    req->model_raw_len = f->len;
    req->body_model_at = f->at;

    return 0;
}


/*
 * The allowlist checks "model", the one model a body names.  Routers
 * behind an entry read other members as more models to serve the call
 * with: OpenRouter "models" (tried in order), LiteLLM's proxy and
 * OpenRouter's Messages endpoint "fallbacks", as Anthropic's refusal
 * fallback does, each with a max_tokens of its own; LiteLLM's proxy
 * "context_window_fallbacks" and "content_policy_fallbacks" (a prompt
 * too long, a refusal), Keywords AI "fallback_models"; and LiteLLM's
 * mock_testing_* flags, which make its router fail the call on purpose
 * and serve it with the fallbacks of its configuration.  A call could be
 * served, and billed, by a model the client may not use: refused, null
 * included, as "n_predict" is.  So is LiteLLM's "user_config": its proxy
 * serves the call with a router built from it, whose model list names
 * the models, their api_base (any URL) and keys ("os.environ/NAME" is
 * read from the proxy's environment).  And its "api_base" and "base_url":
 * the proxy sends the call to that URL when the body also has an
 * "api_key" (any), egress the policy never granted.  And its
 * "extra_body", merged over the members of the body the provider gets
 * (an output cap, tools, "service_tier", all past these checks), and
 * "extra_headers" and "headers", sent to the provider as headers (the
 * ones the gateway drops or checks: a priced anthropic-beta,
 * OpenAI-Project).
 */

static int
al_llm_req_lists(al_llm_rq_t *rq)
{
    size_t                  i;
    const al_llm_jfield_t  *f;

    static const struct {
        int          id;
        const char  *name;
    } lists[] = {
        { AL_LLM_F_MODELS, "models" },
        { AL_LLM_F_FALLBACKS, "fallbacks" },
        { AL_LLM_F_CONTEXT_WINDOW_FALLBACKS, "context_window_fallbacks" },
        { AL_LLM_F_CONTENT_POLICY_FALLBACKS, "content_policy_fallbacks" },
        { AL_LLM_F_FALLBACK_MODELS, "fallback_models" },
        { AL_LLM_F_MOCK_FALLBACKS, "mock_testing_fallbacks" },
        { AL_LLM_F_MOCK_CONTEXT_FALLBACKS,
          "mock_testing_context_fallbacks" },
        { AL_LLM_F_MOCK_CONTENT_POLICY_FALLBACKS,
          "mock_testing_content_policy_fallbacks" }
    };

    static const struct {
        int          id;
        const char  *name;
        const char  *what;
    } merged[] = {
        { AL_LLM_F_EXTRA_BODY, "extra_body", "members of the body" },
        { AL_LLM_F_EXTRA_HEADERS, "extra_headers", "headers" },
        { AL_LLM_F_HEADERS, "headers", "headers" }
    };

    f = rq->b->f;

    /* AL_LLM_JT_NONE is 0: one test for the common body, which has none */

    if ((f[AL_LLM_F_MODELS].type | f[AL_LLM_F_FALLBACKS].type
         | f[AL_LLM_F_CONTEXT_WINDOW_FALLBACKS].type
         | f[AL_LLM_F_CONTENT_POLICY_FALLBACKS].type
         | f[AL_LLM_F_FALLBACK_MODELS].type
         | f[AL_LLM_F_MOCK_FALLBACKS].type
         | f[AL_LLM_F_MOCK_CONTEXT_FALLBACKS].type
         | f[AL_LLM_F_MOCK_CONTENT_POLICY_FALLBACKS].type
         | f[AL_LLM_F_USER_CONFIG].type
         | f[AL_LLM_F_API_BASE].type | f[AL_LLM_F_BASE_URL].type
         | f[AL_LLM_F_EXTRA_BODY].type | f[AL_LLM_F_EXTRA_HEADERS].type
         | f[AL_LLM_F_HEADERS].type)
        == AL_LLM_JT_NONE)
    {
        return 0;
    }

    for (i = 0; i < sizeof(merged) / sizeof(merged[0]); i++) {
        if (f[merged[i].id].type != AL_LLM_JT_NONE) {
            rq->req->reason = AL_REASON_BODY;

            return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                               "\"%s\" is not accepted: routers send what "
                               "it holds to the provider as %s, past the "
                               "gateway's checks", merged[i].name,
                               merged[i].what);
        }
    }

    if ((f[AL_LLM_F_API_BASE].type | f[AL_LLM_F_BASE_URL].type)
        != AL_LLM_JT_NONE)
    {
        rq->req->reason = AL_REASON_BODY;

        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"%s\" is not accepted: routers send the call "
                           "to the URL it names, which the policy does not "
                           "allow",
                           f[AL_LLM_F_API_BASE].type != AL_LLM_JT_NONE
                           ? "api_base" : "base_url");
    }

    if (f[AL_LLM_F_USER_CONFIG].type != AL_LLM_JT_NONE) {
        rq->req->reason = AL_REASON_BODY;

        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"user_config\" is not accepted: routers "
                           "serve the call with the models, URLs and keys "
                           "it names, which the policy does not check");
    }

    for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        if (f[lists[i].id].type != AL_LLM_JT_NONE) {
            rq->req->reason = AL_REASON_BODY;

            return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                               "\"%s\" is not accepted: routers serve "
                               "the call with other models by it, which "
                               "the allowlist does not check; name one in "
                               "\"model\"", lists[i].name);
        }
    }

    return 0;
}


static int
al_llm_req_stream(al_llm_rq_t *rq)
{
    const al_llm_jfield_t  *f;

    if (rq->ep == AL_LLM_EP_EMBEDDINGS) {
        return 0;
    }

    f = &rq->b->f[AL_LLM_F_STREAM];

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL) {
        return 0;
    }

    if (f->type != AL_LLM_JT_TRUE && f->type != AL_LLM_JT_FALSE) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"stream\" must be a boolean");
    }

    rq->req->stream = (f->type == AL_LLM_JT_TRUE);

    return 0;
}


static int
al_llm_req_tokens(al_llm_rq_t *rq)
{
    size_t                  i, n, tlen;
    uint64_t                val, max, dflt;
    unsigned                found, addk;
    const char             *names[2], *add, *null_name;
    al_llm_req_t           *req;
    al_llm_body_t          *b;
    const al_llm_jfield_t  *f, *fields[2], *null_field;
    char                    cap_text[24];

    req = rq->req;
    b = rq->b;
    add = NULL;
    n = 1;

    /*
     * llama.cpp's server reads "n_predict" before "max_tokens": a body
     * naming it could be checked by one limit and served by another.
     */

    if (b->f[AL_LLM_F_N_PREDICT].type != AL_LLM_JT_NONE) {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"n_predict\" is not accepted: name the output "
                           "limit in the API's own member");
    }

    switch (rq->ep) {

    case AL_LLM_EP_CHAT:
        names[0] = "max_completion_tokens";
        fields[0] = &b->f[AL_LLM_F_MAX_COMPLETION_TOKENS];
        names[1] = "max_tokens";
        fields[1] = &b->f[AL_LLM_F_MAX_TOKENS];
        n = 2;

        if (rq->llm->kind == AL_LLM_OPENAI) {
            add = names[0];
            addk = AL_LLM_CAP_MAX_COMPLETION_TOKENS;

        } else {
            add = names[1];
            addk = AL_LLM_CAP_MAX_TOKENS;
        }

        break;

    case AL_LLM_EP_COMPLETIONS:
    case AL_LLM_EP_MESSAGES:
        names[0] = "max_tokens";
        fields[0] = &b->f[AL_LLM_F_MAX_TOKENS];
        add = names[0];
        addk = AL_LLM_CAP_MAX_TOKENS;
        break;

    case AL_LLM_EP_RESPONSES:
        names[0] = "max_output_tokens";
        fields[0] = &b->f[AL_LLM_F_MAX_OUTPUT_TOKENS];
        add = names[0];
        addk = AL_LLM_CAP_MAX_OUTPUT_TOKENS;
        break;

    default:
        return 0;
    }

    found = 0;
    max = 0;
    null_name = NULL;
    null_field = NULL;

    for (i = 0; i < n; i++) {
        f = fields[i];

        if (f->type == AL_LLM_JT_NONE) {
            continue;
        }

        if (f->type == AL_LLM_JT_NULL) {
            if (null_name == NULL) {
                null_name = names[i];
                null_field = f;
            }
            continue;
        }

        if (al_llm_req_cap(rq, f, names[i], &val) != 0) {
            return -1;
        }

        found = 1;

        if (val > max) {
            max = val;
        }
    }

    if (found && n == 2 && rq->llm->kind == AL_LLM_OPENAI_COMPATIBLE
        && fields[0]->type == AL_LLM_JT_INT
        && fields[1]->type != AL_LLM_JT_INT)
    {
        /*
         * Servers that speak OpenAI's API without being OpenAI (Ollama,
         * older vLLM) read "max_tokens" only: the bound reserved goes
         * there too, else they generate without one.
         */

        tlen = al_llm_u64_text(cap_text, max);

        if (fields[1]->type == AL_LLM_JT_NULL) {
            if (al_llm_edit(rq, fields[1]->at, fields[1]->len, cap_text,
                            tlen)
                != 0)
            {
                return -1;
            }

        } else if (al_llm_edit_member(rq, b->root_last, b->root_members,
                                      names[1], cap_text, tlen)
                   != 0)
        {
            return -1;
        }
    }

    if (!found) {

        if (rq->ep == AL_LLM_EP_MESSAGES) {
            /* Anthropic's own wording for the same mistake */
            req->reason = AL_REASON_BODY;
            return al_llm_fail(req->detail, sizeof(req->detail),
                               "max_tokens: Field required");
        }

        dflt = al_llm_default_max_tokens(rq->lc);

        if (rq->ep == AL_LLM_EP_COMPLETIONS
            && rq->llm->kind != AL_LLM_OPENAI_COMPATIBLE
            && (dflt == 0 || dflt >= AL_LLM_COMPLETIONS_DEFAULT))
        {
            max = AL_LLM_COMPLETIONS_DEFAULT;

        } else if (dflt != 0) {

            /*
             * A null member gets the cap in place, else one is added.
             * Behind openai-compatible the cap goes to "max_tokens" only,
             * the one such servers read: a null "max_completion_tokens"
             * stays null.
             */

            if (n == 2 && rq->llm->kind == AL_LLM_OPENAI_COMPATIBLE) {
                null_field = (fields[1]->type == AL_LLM_JT_NULL) ? fields[1]
                                                                  : NULL;
            }

            if (null_field != NULL) {
                tlen = al_llm_u64_text(cap_text, dflt);

                if (al_llm_edit(rq, null_field->at, null_field->len,
                                cap_text, tlen)
                    != 0)
                {
                    return -1;
                }

            } else if (rq->lc->cap_member_len[addk] != 0) {

                /* the member made at load, its comma if one precedes */

                i = (b->root_members == 0);

                if (al_llm_edit(rq, b->root_last, 0,
                                rq->lc->cap_member[addk] + i,
                                rq->lc->cap_member_len[addk] - i)
                    != 0)
                {
                    return -1;
                }

            } else {
                tlen = al_llm_u64_text(cap_text, dflt);

                if (al_llm_edit_member(rq, b->root_last, b->root_members,
                                       add, cap_text, tlen)
                    != 0)
                {
                    return -1;
                }
            }

            max = dflt;
            req->capped = 1;
        }
    }

    /*
     * The output limits of the other APIs: the provider does not read
     * them on this endpoint, but a router or server behind an entry may
     * (one that bridges the Responses API to chat, one that takes any of
     * the names), so each one sent is held to the same cap and reserved
     * for, as the endpoint's own.
     */

    for (i = 0; i < 3; i++) {
        f = &b->f[al_llm_out_ids[i]];

        if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL
            || f == fields[0] || (n == 2 && f == fields[1]))
        {
            continue;
        }

        if (al_llm_req_cap(rq, f, al_llm_out_names[i], &val) != 0) {
            return -1;
        }

        if (val > max) {
            max = val;
        }
    }

    req->max_output = max;

    return 0;
}


/*
 * The thinking budget a body names: Anthropic's "thinking.budget_tokens"
 * (messages) and the "reasoning.max_tokens" of OpenRouter and the routers
 * that copy it (the Responses API, and wherever allow_members lets
 * "reasoning" pass), and the members of other servers that allow_members
 * may let pass (al_llm_req_think_members()).  Thinking tokens are output
 * tokens, and the providers count them in the output limit: Anthropic
 * refuses a budget not below max_tokens.  But not always (Anthropic lets
 * interleaved thinking's budget go past max_tokens, and a router that
 * turns one API into another may raise the output limit to fit the
 * budget), so a budget is held to the output the request is reserved
 * for, per choice (max_output as al_llm_req_tokens() left it): an integer
 * from 0 to it, refused over it, clamp or not (lowering it would change
 * the answer the client asked for, not only its length).  A request with
 * nothing reserved (max_output 0: a client with no cap and no budget) has
 * nothing to hold it to.  Read by jansson, only when the member is there.
 */

static int
al_llm_req_thinking(al_llm_rq_t *rq)
{
    if (al_llm_req_budget(rq, AL_LLM_F_THINKING, "thinking", "budget_tokens",
                          AL_LLM_M_MESSAGES)
        != 0
        || al_llm_req_budget(rq, AL_LLM_F_REASONING, "reasoning",
                             "max_tokens", AL_LLM_M_RESPONSES)
           != 0
        || al_llm_req_think_members(rq) != 0)
    {
        return -1;
    }

    return 0;
}


static int
al_llm_req_budget(al_llm_rq_t *rq, unsigned id, const char *name,
    const char *key, unsigned eps)
{
    uint64_t                n;
    const al_llm_jfield_t  *f;

    f = &rq->b->f[id];

    if (f->type == AL_LLM_JT_NONE) {
        return 0;
    }

    if (al_llm_req_listed_on(rq, name, eps) != 0) {
        return -1;
    }

    if (f->type != AL_LLM_JT_OBJECT) {
        return 0;
    }

    return al_llm_req_think_in(rq, f, name, key, rq->req->max_output, &n);
}


/*
 * The thinking budgets of other servers, top-level members that pass
 * only as the entry's allow_members names them (none of them is a member
 * the providers document on their endpoints): Qwen's "thinking_budget"
 * (Alibaba's DashScope and SiliconFlow, in their OpenAI-compatible APIs),
 * vLLM's "thinking_token_budget", llama.cpp's server's
 * "thinking_budget_tokens", the "thinking_budget" of
 * "chat_template_kwargs" (Qwen3's chat template, under vLLM and SGLang)
 * and NVIDIA NIM's "nvext.max_thinking_tokens".  Each is held to the
 * output reserved as the ones above are.  DashScope and SiliconFlow do
 * not count the thinking in "max_tokens" (it limits the answer after
 * it), so a call there may produce its "thinking_budget" and its output
 * limit both: that budget is reserved on top of the output limit.  And
 * their "enable_thinking" (on, with no "thinking_budget") thinks up to
 * the server's own default (the model's longest chain of thought, tens of
 * thousands of tokens), which no check here can bound: refused, where
 * output is reserved.  (Gemini's "extra_body.google.thinking_config"
 * cannot pass: "extra_body" is refused.)  The scan records them
 * (AL_LLM_F_THINKING_BUDGET on); they are read only when the entry's
 * allow_members lists one of them (think_members, made at load), and
 * then all of them, a member the entry does not list too (refused as
 * unlisted after, if no check here refuses it first).
 */

static int
al_llm_req_think_members(al_llm_rq_t *rq)
{
    size_t                  i;
    uint64_t                max, n, extra;
    unsigned                apart;
    al_llm_req_t           *req;
    const al_llm_think_t   *t;
    const al_llm_jfield_t  *f;

    req = rq->req;
    max = req->max_output;

    if (max == 0 || rq->llm->think_members == 0) {
        return 0;
    }

    extra = 0;
    apart = 0;

    for (i = 0; i < AL_LLM_THINK; i++) {
        t = &al_llm_think[i];
        f = &rq->b->f[AL_LLM_F_THINKING_BUDGET + i];
        n = 0;

        if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL) {
            continue;
        }

        apart |= t->apart;

        if (t->key != NULL) {
            if (f->type == AL_LLM_JT_OBJECT
                && al_llm_req_think_in(rq, f, t->name, t->key, max, &n)
                   != 0)
            {
                return -1;
            }

        } else if (al_llm_req_think_value(rq, t->name, NULL,
                                          f->type == AL_LLM_JT_INT
                                          && f->num >= 0,
                                          (uint64_t) f->num, max)
                   != 0)
        {
            return -1;

        } else {
            n = (uint64_t) f->num;
        }

        if (t->apart && n > extra) {
            extra = n;
        }
    }

    /* the switch, on (any value but false or null) with no budget */

    f = &rq->b->f[AL_LLM_F_ENABLE_THINKING];

    if (f->type != AL_LLM_JT_NONE && f->type != AL_LLM_JT_NULL
        && f->type != AL_LLM_JT_FALSE && !apart)
    {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"enable_thinking\" needs a \"thinking_budget\" "
                           "(0 to the %llu output tokens this request may "
                           "produce): without one the server thinks as "
                           "long as it likes, billed beside the output "
                           "limit", (unsigned long long) max);
    }

    /* extra <= max, and a limit read is at most INT64_MAX: no overflow */

    req->max_output = max + extra;

    return 0;
}


/* f, an object: its member key, if there and not null, as a budget */

static int
al_llm_req_think_in(al_llm_rq_t *rq, const al_llm_jfield_t *f,
    const char *name, const char *key, uint64_t max, uint64_t *n)
{
    int            rc;
    json_t        *v, *e;
    json_int_t     i;
    json_error_t   err;
    al_llm_req_t  *req;

    req = rq->req;
    *n = 0;

    if (max == 0) {
        return 0;
    }

    v = json_loadb((const char *) rq->body + f->at, f->len, 0, &err);

    if (v == NULL) {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"%s\" cannot be read", name);
    }

    e = json_object_get(v, key);
    rc = 0;

    if (e != NULL && !json_is_null(e)) {
        i = json_is_integer(e) ? json_integer_value(e) : -1;
        rc = al_llm_req_think_value(rq, name, key, i >= 0, (uint64_t) i,
                                    max);
        *n = (i >= 0) ? (uint64_t) i : 0;
    }

    json_decref(v);

    return rc;
}


/* a budget read (valid: a non-negative integer, n) held to max */

static int
al_llm_req_think_value(al_llm_rq_t *rq, const char *name, const char *key,
    int valid, uint64_t n, uint64_t max)
{
    al_llm_req_t  *req;

    req = rq->req;

    if (valid && n <= max) {
        return 0;
    }

    req->reason = AL_REASON_BODY;

    if (!valid) {
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"%s%s%s\" must be a non-negative integer",
                           name, key != NULL ? "." : "",
                           key != NULL ? key : "");
    }

    return al_llm_fail(req->detail, sizeof(req->detail),
                       "\"%s%s%s\" %llu is over the %llu output tokens this "
                       "request may produce (its output limit)", name,
                       key != NULL ? "." : "", key != NULL ? key : "",
                       (unsigned long long) n, (unsigned long long) max);
}


static int
al_llm_req_cap(al_llm_rq_t *rq, const al_llm_jfield_t *f, const char *name,
    uint64_t *val)
{
    size_t         tlen;
    uint64_t       cap;
    al_llm_req_t  *req;
    char           cap_text[24];

    req = rq->req;
    cap = rq->lc != NULL ? rq->lc->max_tokens : 0;

    if (f->type != AL_LLM_JT_INT || f->num < 1) {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"%s\" must be a positive integer", name);
    }

    *val = (uint64_t) f->num;

    if (cap == 0 || *val <= cap) {
        return 0;
    }

    if (!rq->lc->clamp) {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"%s\" %llu is over this client's limit of "
                           "%llu", name, (unsigned long long) *val,
                           (unsigned long long) cap);
    }

    tlen = al_llm_u64_text(cap_text, cap);

    if (al_llm_edit(rq, f->at, f->len, cap_text, tlen) != 0) {
        return -1;
    }

    *val = cap;
    req->clamped = 1;

    return 0;
}


void
al_llm_client_caps(al_llm_client_t *lc)
{
    char        *p;
    size_t       i, nlen, tlen;
    uint64_t     dflt;
    const char  *name;
    char         text[24];

    static const char *const  names[] = {
        "max_tokens", "max_completion_tokens", "max_output_tokens"
    };

    dflt = al_llm_default_max_tokens(lc);
    tlen = (dflt != 0) ? al_llm_u64_text(text, dflt) : 0;

    for (i = 0; i < 3; i++) {
        name = names[i];
        nlen = strlen(name);
        lc->cap_member_len[i] = 0;

        if (dflt == 0 || nlen + tlen + 4 > sizeof(lc->cap_member[i])) {
            continue;
        }

        /* as al_llm_edit_member() writes it */
        p = lc->cap_member[i];
        *p++ = ',';
        *p++ = '"';
        memcpy(p, name, nlen);
        p += nlen;
        *p++ = '"';
        *p++ = ':';
        memcpy(p, text, tlen);
        p += tlen;

        lc->cap_member_len[i] = (unsigned char) (p - lc->cap_member[i]);
    }
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


/*
 * "n" or "best_of" in *out (0: absent); -1 and the refusal when it is no
 * integer from 1 to AL_LLM_N_MAX
 */

static int
al_llm_req_count(al_llm_rq_t *rq, unsigned id, const char *name,
    int64_t *out)
{
    int64_t                 n;
    const al_llm_jfield_t  *f;

    *out = 0;
    f = &rq->b->f[id];

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL) {
        return 0;
    }

    n = (f->type == AL_LLM_JT_INT) ? f->num : 0;

    if (n < 1 || n > AL_LLM_N_MAX) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"%s\" must be an integer from 1 to %d", name,
                           AL_LLM_N_MAX);
    }

    *out = n;

    return 0;
}


/*
 * The output cap times the answers made: "n", or "best_of" when larger
 * (completions: the provider makes best_of answers, returns n and
 * charges for all of them; vLLM takes it on chat too); on completions,
 * times the prompts of a batch as well (al_llm_req_prompt()).  Read on
 * the Responses API and messages too, where the providers have no "n":
 * a router behind an entry that serves them through chat passes it on.
 */

static int
al_llm_req_n(al_llm_rq_t *rq)
{
    int64_t                 n, best;
    uint64_t                times;
    const al_llm_jfield_t  *f;

    times = 1;
    f = &rq->b->f[AL_LLM_F_PROMPT];

    if (f->type != AL_LLM_JT_NONE && al_llm_req_prompt(rq, f, &times) != 0) {
        return -1;
    }

    if (rq->ep != AL_LLM_EP_CHAT && rq->ep != AL_LLM_EP_COMPLETIONS
        && rq->ep != AL_LLM_EP_RESPONSES && rq->ep != AL_LLM_EP_MESSAGES)
    {
        return 0;
    }

    if (al_llm_req_count(rq, AL_LLM_F_N, "n", &n) != 0
        || al_llm_req_count(rq, AL_LLM_F_BEST_OF, "best_of", &best) != 0)
    {
        return -1;
    }

    if (best > n) {
        n = best;
    }

    if (n > 1) {
        times = (times > UINT64_MAX / (uint64_t) n) ? UINT64_MAX
                                                    : times * (uint64_t) n;
    }

    if (times == 1) {
        return 0;
    }

    /* saturated: a product that wrapped would reserve next to nothing */

    if (rq->req->max_output > UINT64_MAX / times) {
        rq->req->max_output = UINT64_MAX;

    } else {
        rq->req->max_output *= times;
    }

    return 0;
}


/*
 * "prompt", a completions member (the Responses API's names a stored
 * prompt, which brings its own model and tools): elsewhere it passes
 * only as the entry's allow_members names it, as a member of
 * al_llm_scan_members[] would.  On completions, a list of strings, of
 * token lists or of objects is a batch, each prompt answered: *batch is
 * how many.
 */

static int
al_llm_req_prompt(al_llm_rq_t *rq, const al_llm_jfield_t *f,
    uint64_t *batch)
{
    if (rq->ep != AL_LLM_EP_COMPLETIONS) {
        return al_llm_req_listed_on(rq, "prompt", AL_LLM_M_COMPLETIONS);
    }

    if (f->type == AL_LLM_JT_ARRAY) {
        *batch = al_llm_prompt_batch(rq->body + f->at, f->len);
    }

    return 0;
}


/*
 * The prompts of a completions "prompt" list the scan accepted (its raw
 * span, brackets included): its elements when one is a string, a list
 * or an object (a batch: llama.cpp's server takes a list of objects,
 * {"prompt_string": ..., "multimodal_data": [...]}, as a prompt each),
 * else 1 (token ids, one prompt).  A walk with no tree: a batch of
 * token lists may be the whole body.
 */

static uint64_t
al_llm_prompt_batch(const unsigned char *p, size_t len)
{
    size_t    i;
    unsigned  depth, str, esc, next, batch;
    uint64_t  n;

    n = 0;
    depth = 0;
    str = 0;
    esc = 0;
    next = 0;
    batch = 0;

    for (i = 0; i < len; i++) {

        if (str) {
            if (esc) {
                esc = 0;

            } else if (p[i] == '\\') {
                esc = 1;

            } else if (p[i] == '"') {
                str = 0;
            }

            continue;
        }

        if (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
            continue;
        }

        if (depth == 1 && next && p[i] != ']') {
            /* an element starts */
            n++;
            next = 0;
            batch |= (p[i] == '"' || p[i] == '[' || p[i] == '{');
        }

        switch (p[i]) {

        case '"':
            str = 1;
            break;

        case '[':
        case '{':
            depth++;
            next = (depth == 1);
            break;

        case ']':
        case '}':
            depth--;
            break;

        case ',':
            next = (depth == 1);
            break;
        }
    }

    return (batch && n > 1) ? n : 1;
}


static int
al_llm_req_usage(al_llm_rq_t *rq)
{
    unsigned                asked;
    al_llm_req_t           *req;
    al_llm_body_t          *b;
    const al_llm_jfield_t  *so, *iu;

    req = rq->req;
    b = rq->b;

    if (rq->llm->kind == AL_LLM_ANTHROPIC
        || (rq->ep != AL_LLM_EP_CHAT && rq->ep != AL_LLM_EP_COMPLETIONS)
        || !req->stream)
    {
        return 0;
    }

    asked = 0;
    so = &b->f[AL_LLM_F_STREAM_OPTIONS];
    iu = &b->f[AL_LLM_F_INCLUDE_USAGE];

    if (so->type != AL_LLM_JT_NONE && so->type != AL_LLM_JT_NULL) {
        if (so->type != AL_LLM_JT_OBJECT) {
            req->reason = AL_REASON_BODY;
            return al_llm_fail(req->detail, sizeof(req->detail),
                               "\"stream_options\" must be an object");
        }

        if (iu->type != AL_LLM_JT_NONE && iu->type != AL_LLM_JT_NULL
            && iu->type != AL_LLM_JT_TRUE && iu->type != AL_LLM_JT_FALSE)
        {
            req->reason = AL_REASON_BODY;
            return al_llm_fail(req->detail, sizeof(req->detail),
                               "\"stream_options.include_usage\" must be a "
                               "boolean");
        }

        asked = (iu->type == AL_LLM_JT_TRUE);
    }

    req->client_usage = asked;

    if (asked || !rq->llm->include_usage) {
        return 0;
    }

    if (so->type == AL_LLM_JT_OBJECT) {
        if (iu->type != AL_LLM_JT_NONE) {
            /* false or null: true in place */
            if (al_llm_edit(rq, iu->at, iu->len, "true", 4) != 0) {
                return -1;
            }

        } else if (al_llm_edit_member(rq, b->so_last, b->so_members,
                                      "include_usage", "true", 4)
                   != 0)
        {
            return -1;
        }

    } else if (so->type == AL_LLM_JT_NULL) {
        if (al_llm_edit(rq, so->at, so->len, AL_LLM_USAGE_ON,
                        sizeof(AL_LLM_USAGE_ON) - 1)
            != 0)
        {
            return -1;
        }

    } else if (al_llm_edit_member(rq, b->root_last, b->root_members,
                                  "stream_options", AL_LLM_USAGE_ON,
                                  sizeof(AL_LLM_USAGE_ON) - 1)
               != 0)
    {
        return -1;
    }

    req->hide_usage = 1;

    return 0;
}


/*
 * Tools the provider would run (al_llm.h): the elements of "tools" the
 * scan classified, the first in the body of a family the entry does not
 * allow named in the detail; then "tool_choice", web_search_options and
 * mcp_servers.
 */

static int
al_llm_req_tools(al_llm_rq_t *rq)
{
    int                     first;
    unsigned                i;
    uint32_t                bad;
    size_t                  at;
    al_llm_req_t           *req;
    al_llm_body_t          *b;
    const al_llm_jfield_t  *f;

    req = rq->req;
    b = rq->b;
    f = &b->f[AL_LLM_F_TOOLS];

    if (f->type != AL_LLM_JT_NONE && f->type != AL_LLM_JT_NULL
        && f->type != AL_LLM_JT_ARRAY)
    {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"tools\" must be a list");
    }

    bad = b->tools & ~(rq->llm->provider_tools
                       & ((UINT32_C(1) << AL_LLM_PT_NAMED) - 1));

    if (rq->ep == AL_LLM_EP_MESSAGES) {
        bad &= ~(UINT32_C(1) << AL_LLM_PT_UNTYPED);
    }

    if (bad != 0) {
        first = AL_LLM_PT_MAX;
        at = 0;

        for (i = 0; i < AL_LLM_PT_MAX; i++) {
            if ((bad & (UINT32_C(1) << i))
                && (first == AL_LLM_PT_MAX || b->tool_at[i] < at))
            {
                first = (int) i;
                at = b->tool_at[i];
            }
        }

        if (first >= AL_LLM_PT_NOT_OBJECT || rq->body[at] != '"') {
            return al_llm_req_tool_refuse(rq, first, NULL, 0, "");
        }

        return al_llm_req_tool_refuse(rq, first,
                                      (const char *) rq->body + at + 1,
                                      b->tool_len[first] - 2, "");
    }

    if (al_llm_req_tool_choice(rq) != 0
        || al_llm_req_member(rq, AL_LLM_F_WEB_SEARCH_OPTIONS,
                             AL_LLM_PT_WEB_SEARCH, "web_search_options")
           != 0
        || al_llm_req_member(rq, AL_LLM_F_MCP_SERVERS, AL_LLM_PT_MCP,
                             "mcp_servers")
           != 0
        || al_llm_req_member(rq, AL_LLM_F_DATA_SOURCES,
                             AL_LLM_PT_DATA_SOURCES, "data_sources")
           != 0
        || al_llm_req_plugins(rq) != 0)
    {
        return -1;
    }

    return 0;
}


/*
 * The refusal of a tool (al_llm.h): of family (AL_LLM_PT_*), its "type"
 * the len bytes at type, or NULL for a type that is none or no string;
 * where says where it is ("" for the body's "tools").
 */

static int
al_llm_req_tool_refuse(al_llm_rq_t *rq, int family, const char *type,
    size_t len, const char *where)
{
    al_llm_req_t  *req;
    char           show[AL_LLM_SHOW_MAX + 4];

    req = rq->req;
    req->reason = AL_REASON_BODY;

    if (family == AL_LLM_PT_NOT_OBJECT) {
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "\"tools\"%s must be a list of objects", where);
    }

    if (family == AL_LLM_PT_ANONYMOUS && rq->ep == AL_LLM_EP_MESSAGES) {
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "a tool%s has no \"type\" and no \"name\": it "
                           "is refused, as a router may read its key as a "
                           "tool the provider runs ({\"googleSearch\": {}})",
                           where);
    }

    if (family == AL_LLM_PT_UNTYPED || family == AL_LLM_PT_ANONYMOUS) {
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "a tool%s has no \"type\": it is refused on %s, "
                           "where a router may read it as a tool the "
                           "provider runs ({\"googleSearch\": {}})", where,
                           al_llm_endpoint_name(rq->ep));
    }

    if (family == AL_LLM_PT_UNNAMED) {
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "a tool%s of a type the client runs has no "
                           "\"function\", \"custom\" or \"name\": it is "
                           "refused, as a router may read its other key as "
                           "a tool the provider runs ({\"type\": "
                           "\"function\", \"googleSearch\": {}})", where);
    }

    if (type == NULL) {
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "a tool's \"type\"%s must be a string", where);
    }

    (void) al_llm_show(show, sizeof(show), type, len, AL_LLM_SHOW_MAX);

    if (family == AL_LLM_PT_UNKNOWN) {
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "tool type \"%s\"%s is unknown to the gateway "
                           "and may be run by the provider; it is refused",
                           show, where);
    }

    return al_llm_fail(req->detail, sizeof(req->detail),
                       "tool type \"%s\"%s is run by the provider; the "
                       "policy does not allow it (provider_tools: %s)",
                       show, where, al_llm_tool_names[family]);
}


/* 1: the entry's provider_tools allows a tool of family (AL_LLM_PT_*) */

static int
al_llm_tool_allowed(const al_llm_t *llm, int family)
{
    return family >= 0 && family < AL_LLM_PT_NAMED
           && (llm->provider_tools & (UINT32_C(1) << family));
}


/*
 * "tool_choice" may name a tool the provider runs, which a server behind
 * an entry runs even when "tools" does not list it: the Responses API's
 * {"type": "web_search_preview"}, {"type": "mcp", "server_label": ...}
 * and the like, and {"type": "allowed_tools", "tools": [...]} (chat's:
 * {"type": "allowed_tools", "allowed_tools": {"tools": [...]}}), whose
 * elements are read as those of "tools" are.  A type is of a family as
 * a tool's is (al_llm_tool_family()); the types and strings that name
 * no tool or one the client runs pass: "function", "custom", Anthropic's
 * "tool" (by name: of "tools", read above), "auto", "any", "none",
 * "required".  Any other type is refused as an unknown tool is, and so
 * is a choice of no string "type", and "type" or "tools" in another
 * case, as a Go server binds it.  The providers document it on chat,
 * responses and messages; elsewhere it passes only as allow_members
 * names it.  The body scan has read the string, or the object's "type"
 * and its first key in another case (al_llm_body_t's choice); only an
 * "allowed_tools" choice is read again, by jansson, for its lists of
 * tools.
 */

static int
al_llm_req_tool_choice(al_llm_rq_t *rq)
{
    int                     rc, family;
    size_t                  i, n;
    json_t                 *v, *a;
    const char             *s;
    json_error_t            err;
    al_llm_body_t          *b;
    const al_llm_jfield_t  *f, *t;

    static const char *const  own[] = {
        "tool", "auto", "any", "none", "required", NULL
    };
    static const char *const  keys[] = {
        "type", "tools", "allowed_tools", NULL
    };

    b = rq->b;
    f = &b->f[AL_LLM_F_TOOL_CHOICE];

    if (f->type == AL_LLM_JT_NONE) {
        return 0;
    }

    if (al_llm_req_listed_on(rq, "tool_choice",
                             AL_LLM_M_CHAT | AL_LLM_M_RESPONSES
                             | AL_LLM_M_MESSAGES)
        != 0)
    {
        return -1;
    }

    if (f->type == AL_LLM_JT_NULL) {
        return 0;
    }

    if (f->type != AL_LLM_JT_STRING && f->type != AL_LLM_JT_OBJECT) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"tool_choice\" must be a string or an object");
    }

    /*
     * The string, or the object's "type", as the scan read it: its raw
     * bytes when it has no escape ("auto", {"type": "function", ...}, as
     * most clients send it), else its unescaped bytes, as much of them
     * as is compared or shown
     */

    t = f;

    if (f->type == AL_LLM_JT_OBJECT) {
        if (b->choice_case != NULL) {
            return al_llm_choice_case_fail(rq, b->choice_key,
                                           b->choice_key_len,
                                           b->choice_case);
        }

        t = &b->choice;

        if (t->type != AL_LLM_JT_STRING) {
            return al_llm_req_tool_refuse(rq, AL_LLM_PT_UNKNOWN, NULL, 0,
                                          " in \"tool_choice\"");
        }
    }

    s = t->esc ? b->choice_type : (const char *) rq->body + t->at + 1;
    n = (size_t) t->num;

    for (i = 0; own[i] != NULL; i++) {
        if (strlen(own[i]) == n && memcmp(own[i], s, n) == 0) {
            return 0;                   /* no tool, or one of "tools" */
        }
    }

    if (f->type == AL_LLM_JT_STRING || n != 13
        || memcmp(s, "allowed_tools", 13) != 0)
    {
        family = (n > AL_LLM_TOOL_TYPE) ? AL_LLM_PT_UNKNOWN
                                        : al_llm_tool_family(s, n);

        if (family >= 0 && !al_llm_tool_allowed(rq->llm, family)) {
            return al_llm_req_tool_refuse(rq, family, s, n,
                                          " in \"tool_choice\"");
        }

        return 0;
    }

    /* allowed_tools: its lists of tools, read by jansson */

    v = json_loadb((const char *) rq->body + f->at, f->len, 0, &err);

    if (!json_is_object(v)) {
        json_decref(v);                 /* out of memory: refused */
        return al_llm_req_tool_refuse(rq, AL_LLM_PT_UNKNOWN, NULL, 0,
                                      " in \"tool_choice\"");
    }

    a = json_object_get(v, "allowed_tools");

    rc = al_llm_choice_tools(rq, json_object_get(v, "tools"));

    if (rc == 0 && a != NULL && !json_is_null(a)) {
        if (!json_is_object(a)) {
            rq->req->reason = AL_REASON_BODY;
            rc = al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                             "\"allowed_tools\" in \"tool_choice\" "
                             "must be an object");

        } else {
            rc = al_llm_choice_case(rq, a, keys + 1);

            if (rc == 0) {
                rc = al_llm_choice_tools(rq, json_object_get(a, "tools"));
            }
        }
    }

    json_decref(v);

    return rc;
}


/*
 * The "tools" of a "tool_choice" of type "allowed_tools", read as the
 * body's "tools" are (al_llm_scan_tool()): none or null, or a list of
 * objects, each of no "type" (on messages: Anthropic's own tools), a
 * type the client runs, or one of a family the entry allows; the first
 * two must name their tool ("function", "custom" or "name").
 */

static int
al_llm_choice_tools(al_llm_rq_t *rq, json_t *list)
{
    int          family, named;
    size_t       i, n;
    json_t      *e, *t;
    const char  *s;

    static const char *const  keys[] = { "type", NULL };

    if (list == NULL || json_is_null(list)) {
        return 0;
    }

    if (!json_is_array(list)) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"tools\" in \"tool_choice\" must be a list");
    }

    json_array_foreach(list, i, e) {
        if (!json_is_object(e)) {
            return al_llm_req_tool_refuse(rq, AL_LLM_PT_NOT_OBJECT, NULL,
                                          0, " in \"tool_choice\"");
        }

        if (al_llm_choice_case(rq, e, keys) != 0) {
            return -1;
        }

        t = json_object_get(e, "type");
        named = json_object_get(e, "function") != NULL
                || json_object_get(e, "custom") != NULL
                || json_object_get(e, "name") != NULL;

        if (t == NULL) {
            if (rq->ep == AL_LLM_EP_MESSAGES && named) {
                continue;
            }

            return al_llm_req_tool_refuse(rq, named ? AL_LLM_PT_UNTYPED
                                                    : AL_LLM_PT_ANONYMOUS,
                                          NULL, 0, " in \"tool_choice\"");
        }

        if (!json_is_string(t)) {
            return al_llm_req_tool_refuse(rq, AL_LLM_PT_UNKNOWN, NULL, 0,
                                          " in \"tool_choice\"");
        }

        s = json_string_value(t);
        n = json_string_length(t);

        family = (n > AL_LLM_TOOL_TYPE) ? AL_LLM_PT_UNKNOWN
                                        : al_llm_tool_family(s, n);

        if (family < 0 && !named) {
            return al_llm_req_tool_refuse(rq, AL_LLM_PT_UNNAMED, NULL, 0,
                                          " in \"tool_choice\"");
        }

        if (family >= 0 && !al_llm_tool_allowed(rq->llm, family)) {
            return al_llm_req_tool_refuse(rq, family, s, n,
                                          " in \"tool_choice\"");
        }
    }

    return 0;
}


/*
 * A key of obj in "tool_choice" that is one of names in another case, as
 * a Go server behind an entry binds it (al_folds_to()): refused, as the
 * scan refuses the keys it reads in another case.  0, or -1.
 */

static int
al_llm_choice_case(al_llm_rq_t *rq, json_t *obj, const char *const *names)
{
    size_t       i, len;
    json_t      *e;
    const char  *key;

    json_object_foreach(obj, key, e) {
        len = strlen(key);

        if (al_fold_plain(key, len)) {
            continue;
        }

        for (i = 0; names[i] != NULL; i++) {
            if (al_folds_to(key, len, names[i], strlen(names[i]))) {
                return al_llm_choice_case_fail(rq, key, len, names[i]);
            }
        }
    }

    return 0;
}


/* the refusal of a key of len bytes in "tool_choice" that folds to name */

static int
al_llm_choice_case_fail(al_llm_rq_t *rq, const char *key, size_t len,
    const char *name)
{
    char  show[AL_LLM_SHOW_MAX + 4];

    (void) al_llm_show(show, sizeof(show), key, len, AL_LLM_SHOW_MAX);
    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "key \"%s\" in \"tool_choice\" differs from \"%s\" "
                       "only by case", show, name);
}


/*
 * "service_tier", for a client with a dollar budget: the policy's prices
 * are the standard tier's (or what the provider's project is set to), so
 * a tier that costs more ("priority", "scale", anything new) would spend
 * past the budget at the prices the gateway counts.  The tiers that cost
 * the same or less pass: "auto", "default", "flex", and Anthropic's
 * "standard_only".  So does "speed" (Anthropic's fast mode, which
 * routers behind openai-compatible entries read too): "fast" is billed at
 * several times the prices, "standard" passes; and Anthropic's
 * "inference_geo": "us" (US-only inference) is billed at 1.1 times them,
 * "global" passes.
 */

static int
al_llm_req_tier(al_llm_rq_t *rq)
{
    size_t                  i, n;
    const char             *v;
    const al_llm_jfield_t  *f;
    char                    show[AL_LLM_SHOW_MAX + 4];

    static const al_str_t   same[] = {
        { "auto", 4 }, { "default", 7 }, { "flex", 4 },
        { "standard_only", 13 }, { NULL, 0 }
    };

    if (al_llm_client_priced(rq->lc)
        && (al_llm_req_dearer(rq, AL_LLM_F_SPEED, "speed", "standard",
                              " (fast mode)")
            != 0
            || al_llm_req_dearer(rq, AL_LLM_F_INFERENCE_GEO, "inference_geo",
                                 "global", "")
               != 0
            || al_llm_req_provider(rq) != 0))
    {
        return -1;
    }

    f = &rq->b->f[AL_LLM_F_SERVICE_TIER];

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL
        || !al_llm_client_priced(rq->lc))
    {
        return 0;
    }

    if (f->type == AL_LLM_JT_STRING && !f->esc) {
        v = (const char *) rq->body + f->at + 1;
        n = f->len - 2;

        for (i = 0; same[i].data != NULL; i++) {
            if (n == same[i].len && memcmp(v, same[i].data, n) == 0) {
                return 0;
            }
        }
    }

    rq->req->reason = AL_REASON_BODY;

    if (f->type != AL_LLM_JT_STRING) {
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"service_tier\" must be a string");
    }

    (void) al_llm_show(show, sizeof(show),
                       (const char *) rq->body + f->at + 1, f->len - 2,
                       AL_LLM_SHOW_MAX);

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "service_tier \"%s\" may cost more than the "
                       "policy's prices, and this client has a dollar "
                       "budget (auto, default, flex and standard_only "
                       "pass)", show);
}


/*
 * A member that costs more than the policy's prices unless it is absent,
 * null or the string pass ("speed": "standard", "inference_geo":
 * "global"), for a client with a dollar budget: 0, or -1 with the
 * refusal's detail.
 */

static int
al_llm_req_dearer(al_llm_rq_t *rq, unsigned field, const char *name,
    const char *pass, const char *what)
{
    size_t                  n;
    const al_llm_jfield_t  *f;
    char                    show[AL_LLM_SHOW_MAX + 4];

    f = &rq->b->f[field];
    n = strlen(pass);

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL
        || (f->type == AL_LLM_JT_STRING && !f->esc && f->len == n + 2
            && memcmp(rq->body + f->at + 1, pass, n) == 0))
    {
        return 0;
    }

    rq->req->reason = AL_REASON_BODY;

    if (f->type != AL_LLM_JT_STRING) {
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"%s\" must be a string", name);
    }

    (void) al_llm_show(show, sizeof(show),
                       (const char *) rq->body + f->at + 1, f->len - 2,
                       AL_LLM_SHOW_MAX);

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "%s \"%s\"%s costs more than the policy's prices, "
                       "and this client has a dollar budget (%s passes)",
                       name, show, what, pass);
}


/*
 * The Responses API's "background": true answers at once with the
 * response queued and no usage; the provider runs it later and bills all
 * of it, the context a "previous_response_id" or "conversation" brings
 * in included, and a later call reads its output by that id.  Such a
 * call could only be charged its reservation, which counts the body's
 * prompt alone: refused for a client with a token or dollar budget.
 * false and null pass.
 */

static int
al_llm_req_background(al_llm_rq_t *rq)
{
    const al_llm_jfield_t  *f;
    const al_llm_client_t  *lc;

    f = &rq->b->f[AL_LLM_F_BACKGROUND];
    lc = rq->lc;

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL
        || f->type == AL_LLM_JT_FALSE || rq->ep != AL_LLM_EP_RESPONSES
        || lc == NULL
        || (lc->tokens_per_minute == 0 && lc->tokens_per_day == 0
            && !al_llm_client_priced(lc)))
    {
        return 0;
    }

    rq->req->reason = AL_REASON_BODY;

    if (f->type != AL_LLM_JT_TRUE) {
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"background\" must be a boolean");
    }

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "\"background\": true is not accepted for a client "
                       "with a budget: its answer carries no usage, so the "
                       "call could not be counted");
}


/*
 * OpenAI's "prediction" (Predicted Outputs), a chat member: elsewhere it
 * passes only as the entry's allow_members names it, as a member of
 * al_llm_scan_members[] would.  The prediction's tokens the answer does
 * not use are billed as completion tokens on top of what it writes, past
 * max_tokens (the API takes no max_completion_tokens beside it), and the
 * prediction is no prompt text the estimate counts: the reservation does
 * not cover them, and calls admitted together could take a budget past
 * its limit by the length of their predictions.  Refused for a client
 * with a token or dollar budget; null passes.
 */

static int
al_llm_req_prediction(al_llm_rq_t *rq)
{
    const al_llm_jfield_t  *f;
    const al_llm_client_t  *lc;

    f = &rq->b->f[AL_LLM_F_PREDICTION];

    if (f->type == AL_LLM_JT_NONE) {
        return 0;
    }

    if (al_llm_req_listed_on(rq, "prediction", AL_LLM_M_CHAT) != 0) {
        return -1;
    }

    lc = rq->lc;

    if (f->type == AL_LLM_JT_NULL
        || lc == NULL
        || (lc->tokens_per_minute == 0 && lc->tokens_per_day == 0
            && !al_llm_client_priced(lc)))
    {
        return 0;
    }

    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "\"prediction\" is not accepted for a client with a "
                       "budget: the predicted tokens the answer does not "
                       "use are billed as output past the call's cap");
}


/*
 * Anthropic's "context_management", a messages member: elsewhere it
 * passes only as the entry's allow_members names it.  Its edits that
 * clear tool results or thinking blocks only take input away; but server
 * side compaction ("compact_20260112") summarizes the conversation in a
 * sampling step of its own, billed apart, whose tokens (the whole
 * conversation read, the summary written) the answer's usage leaves out
 * (they are in its "iterations" alone).  Such a call would be charged a
 * fraction of what it costs: for a client with a token or dollar budget
 * each edit must be of a type that clears (clear_tool_uses_*,
 * clear_thinking_*), any other is refused, unknown ones included, and so
 * is a key beside "edits"; null passes.
 */

static int
al_llm_req_context(al_llm_rq_t *rq)
{
    size_t                  i;
    json_t                 *cm, *edits, *e, *v, *type;
    const char             *key, *bad;
    const al_llm_jfield_t  *f;
    const al_llm_client_t  *lc;
    char                    show[AL_LLM_SHOW_MAX + 4];

    f = &rq->b->f[AL_LLM_F_CONTEXT_MANAGEMENT];

    if (f->type == AL_LLM_JT_NONE) {
        return 0;
    }

    if (al_llm_req_listed_on(rq, "context_management", AL_LLM_M_MESSAGES)
        != 0)
    {
        return -1;
    }

    lc = rq->lc;

    if (f->type == AL_LLM_JT_NULL
        || lc == NULL
        || (lc->tokens_per_minute == 0 && lc->tokens_per_day == 0
            && !al_llm_client_priced(lc)))
    {
        return 0;
    }

    rq->req->reason = AL_REASON_BODY;

    if (f->type != AL_LLM_JT_OBJECT) {
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"context_management\" must be an object");
    }

    /* rare, and checked strict already: a tree of the member alone */

    cm = json_loadb((const char *) rq->body + f->at, f->len, 0, NULL);
    if (cm == NULL) {
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"context_management\" could not be read");
    }

    bad = NULL;
    edits = NULL;

    json_object_foreach(cm, key, e) {
        if (strcmp(key, "edits") == 0) {
            edits = e;

        } else {
            /* the API has no other: one would be read unchecked */
            bad = "a key other than \"edits\"";
            break;
        }
    }

    if (bad == NULL && edits != NULL && !json_is_null(edits)) {
        if (!json_is_array(edits)) {
            bad = "\"edits\" that is not a list";
        }

        for (i = 0; bad == NULL && i < json_array_size(edits); i++) {
            e = json_array_get(edits, i);
            type = NULL;

            if (!json_is_object(e)) {
                bad = "an edit that is not an object";
                break;
            }

            json_object_foreach(e, key, v) {
                if (strcmp(key, "type") == 0) {
                    type = v;

                } else if (strcasecmp(key, "type") == 0) {
                    bad = "a key \"type\" in another case";
                    break;
                }
            }

            if (bad == NULL && !json_is_string(type)) {
                bad = "an edit with no string \"type\"";
            }

            if (bad != NULL) {
                break;
            }

            if (!al_llm_context_edit(json_string_value(type))) {
                (void) al_llm_show(show, sizeof(show),
                                   json_string_value(type),
                                   json_string_length(type),
                                   AL_LLM_SHOW_MAX);
                json_decref(cm);

                return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                                   "context edit \"%s\" is not accepted "
                                   "for a client with a budget: only edits "
                                   "that clear (clear_tool_uses, "
                                   "clear_thinking) pass; compaction is "
                                   "billed in a sampling step the usage "
                                   "leaves out", show);
            }
        }
    }

    json_decref(cm);

    if (bad != NULL) {
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "\"context_management\" has %s", bad);
    }

    rq->req->reason = AL_REASON_NONE;

    return 0;
}


/* an edit type of a family that clears: the family, or it, '_' and more */

static int
al_llm_context_edit(const char *type)
{
    size_t  i, n;

    static const char *const  clears[] = {
        "clear_tool_uses", "clear_thinking", NULL
    };

    for (i = 0; clears[i] != NULL; i++) {
        n = strlen(clears[i]);

        if (strncmp(type, clears[i], n) == 0
            && (type[n] == '\0' || type[n] == '_'))
        {
            return 1;
        }
    }

    return 0;
}


/*
 * A member the gateway reads that the providers document on the
 * endpoints eps (AL_LLM_M_*) alone, sent to another: it passes only as
 * the entry's allow_members names it.  0, or -1 with the refusal.
 */

static int
al_llm_req_listed_on(al_llm_rq_t *rq, const char *name, unsigned eps)
{
    if ((AL_LLM_M(rq->ep) & eps)
        || al_llm_allows_member(rq->llm, name, strlen(name)))
    {
        return 0;
    }

    return al_llm_req_refuse_member(rq, name);
}


/* the refusal of a top-level member the endpoint does not take */

static int
al_llm_req_refuse_member(al_llm_rq_t *rq, const char *show)
{
    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "\"%s\" is not accepted on %s: only the request "
                       "members the providers document there pass; "
                       "allow_members of llm \"%s\" adds one", show,
                       al_llm_endpoint_name(rq->ep), rq->llm->name.data);
}


/*
 * A top-level member the endpoint's list (al_llm_scan_members[]) and the
 * entry's allow_members do not have (al_llm_body_scan_ep()): refused.
 * Deny by default: routers behind an entry read members of their own as
 * another model, URL, key or a dearer option, and no list of those is
 * ever complete.  Last, so that a member with a check of its own is
 * refused with its reason.
 */

static int
al_llm_req_unlisted(al_llm_rq_t *rq)
{
    const al_llm_jfield_t  *f;
    char                    show[AL_LLM_SHOW_MAX + 4];

    f = &rq->b->unlisted;

    if (f->type == AL_LLM_JT_NONE) {
        return 0;
    }

    (void) al_llm_show(show, sizeof(show), (const char *) rq->body + f->at,
                       f->len, AL_LLM_SHOW_MAX);

    return al_llm_req_refuse_member(rq, show);
}


/*
 * OpenRouter's "provider" (provider routing), for a client with a dollar
 * budget.  A model is served there by several providers at several
 * prices, and the policy's prices are one of them: a member that picks
 * or filters the providers ("order", "only", "ignore", "quantizations",
 * "sort" by throughput or latency, "allow_fallbacks": false,
 * "data_collection": "deny", "zdr": true, ...) can leave the call to a
 * dearer one.  The members that cannot raise the price pass: "sort":
 * "price", "max_price", and every member at its default or null.  Any
 * other passes only beside a "max_price" whose "prompt" and "completion"
 * are at most the model's input and output prices (and its fallback's),
 * and whose "request" and "image" (a price per call, per input image) are
 * 0: the policy's prices have neither, and a cap left out caps nothing.
 * The router then serves the call at those prices or not at all, so the
 * privacy filters stay open to such a client.  Read by jansson, only
 * when the member is there.
 */

static int
al_llm_req_provider(al_llm_rq_t *rq)
{
    json_t                 *v, *e, *cap;
    const char             *key, *why, *which;
    json_error_t            err;
    const al_llm_jfield_t  *f;

    f = &rq->b->f[AL_LLM_F_PROVIDER];

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL) {
        return 0;
    }

    v = json_loadb((const char *) rq->body + f->at, f->len, 0, &err);
    why = NULL;
    which = NULL;
    cap = NULL;

    if (!json_is_object(v)) {
        why = "\"provider\" must be an object";

    } else {
        json_object_foreach(v, key, e) {
            if (strcmp(key, "max_price") == 0) {
                if (!json_is_object(e) && !json_is_null(e)) {
                    why = "\"provider.max_price\" must be an object";
                    break;
                }

                cap = json_is_object(e) ? e : NULL;

            } else if (which == NULL && !al_llm_provider_safe(key, e)) {
                which = key;
            }
        }
    }

    if (why == NULL && which != NULL && al_llm_provider_capped(rq, cap) != 0)
    {
        rq->req->reason = AL_REASON_BODY;
        (void) al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "provider \"%.32s\" may route the call to a "
                           "provider dearer than the policy's prices, and "
                           "this client has a dollar budget; it passes "
                           "beside a \"max_price\" with prompt and "
                           "completion at most them, request and image 0",
                           which);
        json_decref(v);
        return -1;
    }

    json_decref(v);

    if (why != NULL) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail), "%s",
                           why);
    }

    return 0;
}


/* 1 when a member of "provider" cannot raise the price: a default */

static int
al_llm_provider_safe(const char *key, json_t *v)
{
    if (json_is_null(v)) {
        return 1;
    }

    if (strcmp(key, "sort") == 0) {
        if (json_is_object(v)) {
            v = json_object_get(v, "by");
        }

        return json_is_string(v) && strcmp(json_string_value(v), "price") == 0;
    }

    if (strcmp(key, "allow_fallbacks") == 0) {
        return json_is_true(v);
    }

    if (strcmp(key, "data_collection") == 0) {
        return json_is_string(v) && strcmp(json_string_value(v), "allow") == 0;
    }

    if (strcmp(key, "zdr") == 0 || strcmp(key, "require_parameters") == 0
        || strcmp(key, "enforce_distillable_text") == 0)
    {
        return json_is_false(v);
    }

    return 0;
}


/*
 * 0 when cap, a "max_price" (NULL: none), bounds the token prices by the
 * policy's for the call's model at this entry and at its fallback (the
 * model the fallback is asked for: its alias of the client's alias), and
 * holds the per-call and per-image prices, which the policy's have not,
 * at 0
 */

static int
al_llm_provider_capped(al_llm_rq_t *rq, json_t *cap)
{
    double                  in, out;
    size_t                  alen;
    al_str_t                model;
    json_t                 *p, *c, *q, *i;
    const char             *alias;
    const al_llm_t         *fb;
    const al_llm_price_t   *price;
    const al_llm_client_t  *flc;

    p = json_object_get(cap, "prompt");
    c = json_object_get(cap, "completion");
    q = json_object_get(cap, "request");
    i = json_object_get(cap, "image");

    if (!json_is_number(p) || !json_is_number(c)
        || !json_is_number(q) || !(json_number_value(q) <= 0)
        || !json_is_number(i) || !(json_number_value(i) <= 0))
    {
        return -1;
    }

    /* USD per million tokens; the prices, microdollars per million */

    in = json_number_value(p) * 1e6;
    out = json_number_value(c) * 1e6;

    price = al_llm_price(rq->llm, rq->req->model, rq->req->model_len);

    if (price == NULL || !(in <= (double) price->input + 0.5)
        || !(out <= (double) price->output + 0.5))
    {
        return -1;
    }

    fb = rq->llm->fallback;
    flc = (fb != NULL && rq->lc != NULL)
          ? al_llm_find_client(fb, rq->lc->client) : NULL;

    alias = (rq->alias != NULL) ? rq->alias->data : NULL;
    alen = (rq->alias != NULL) ? rq->alias->len : 0;

    if (flc == NULL
        || al_llm_fallback_model(fb, flc, rq->req->model,
                                 rq->req->model_len, alias, alen, &model)
           != 0)
    {
        return 0;                       /* it does not fall back */
    }

    price = al_llm_price(fb, model.data, model.len);

    if (price == NULL || !(in <= (double) price->input + 0.5)
        || !(out <= (double) price->output + 0.5))
    {
        return -1;
    }

    return 0;
}


/*
 * OpenRouter's "plugins", each {"id": ...}: "web" has the provider search
 * the web for the prompt (Exa, or the model's own search), family
 * web_search as web_search_options is; "file-parser" (files in the
 * prompt), "response-healing" (JSON repair) and "context-compression"
 * reach nothing.  An id the gateway does not know may, and is refused.
 * Read by jansson, only when the member is there, escapes as the
 * router reads them.
 */

static int
al_llm_req_plugins(al_llm_rq_t *rq)
{
    size_t                  i, j;
    json_t                 *v, *e, *id;
    const char             *s, *why;
    json_error_t            err;
    const al_llm_jfield_t  *f;
    char                    show[AL_LLM_SHOW_MAX + 4];

    static const char *const  inert[] = {
        "file-parser", "response-healing", "context-compression", NULL
    };

    f = &rq->b->f[AL_LLM_F_PLUGINS];

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL) {
        return 0;
    }

    v = json_loadb((const char *) rq->body + f->at, f->len, 0, &err);
    why = NULL;
    show[0] = '\0';

    if (!json_is_array(v)) {
        why = "\"plugins\" must be a list";
    }

    json_array_foreach(v, i, e) {
        id = json_object_get(e, "id");

        if (!json_is_string(id)) {
            why = "a plugin's \"id\" must be a string";
            break;
        }

        s = json_string_value(id);

        if (strcmp(s, "web") == 0) {
            if (rq->llm->provider_tools
                & (UINT32_C(1) << AL_LLM_PT_WEB_SEARCH))
            {
                continue;
            }

            why = "the \"plugins\" web search is run by the provider; the "
                  "policy does not allow it (provider_tools: web_search)";
            break;
        }

        for (j = 0; inert[j] != NULL; j++) {
            if (strcmp(s, inert[j]) == 0) {
                break;
            }
        }

        if (inert[j] == NULL) {
            (void) al_llm_show(show, sizeof(show), s, json_string_length(id),
                               AL_LLM_SHOW_MAX);
            why = "";
            break;
        }
    }

    json_decref(v);

    if (why == NULL) {
        return 0;
    }

    rq->req->reason = AL_REASON_BODY;

    if (why[0] == '\0') {
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "plugin \"%s\" of \"plugins\" is unknown to "
                           "the gateway and may be run by the provider; it "
                           "is refused", show);
    }

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail), "%s", why);
}


/*
 * Audio, for a client with a dollar budget: the provider bills audio
 * tokens at audio prices, many times the text prices the policy has
 * (gpt-4o-audio-preview: 16 times the input, 8 times the output), and
 * counts them in the same prompt_tokens and completion_tokens the gateway
 * prices as text.  Audio output is asked for by "modalities" (anything
 * but ["text"]: image output is billed apart too) or "audio" (its voice
 * and format); audio input is an "input_audio" content part, noted by
 * the scan at any depth (b->audio).  null passes: it asks for nothing.
 */

static int
al_llm_req_audio(al_llm_rq_t *rq)
{
    size_t                  i;
    json_t                 *v, *e;
    json_error_t            err;
    const al_llm_jfield_t  *f;
    const char             *why;

    if (!al_llm_client_priced(rq->lc)) {
        return 0;
    }

    why = NULL;
    f = &rq->b->f[AL_LLM_F_MODALITIES];

    if (f->type != AL_LLM_JT_NONE && f->type != AL_LLM_JT_NULL) {
        v = json_loadb((const char *) rq->body + f->at, f->len, 0, &err);

        if (!json_is_array(v)) {
            why = "\"modalities\" must be an array";

        } else {
            json_array_foreach(v, i, e) {
                if (!json_is_string(e)
                    || json_string_length(e) != 4
                    || memcmp(json_string_value(e), "text", 4) != 0)
                {
                    why = "\"modalities\" other than [\"text\"] asks for "
                          "audio (or image) output, billed at prices of "
                          "its own above the policy's";
                    break;
                }
            }
        }

        json_decref(v);
    }

    f = &rq->b->f[AL_LLM_F_AUDIO];

    if (why == NULL && f->type != AL_LLM_JT_NONE
        && f->type != AL_LLM_JT_NULL)
    {
        why = "\"audio\" asks for audio output, billed at audio prices "
              "above the policy's";
    }

    if (why == NULL && rq->b->audio) {
        why = "an \"input_audio\" part is audio input, billed at audio "
              "prices above the policy's";
    }

    if (why == NULL && rq->audio_ref) {
        why = "an \"audio\" of a message names an earlier audio answer, "
              "read back as audio input, billed at audio prices above the "
              "policy's";
    }

    if (why == NULL) {
        return 0;
    }

    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "%s, and this client has a dollar budget", why);
}


/* the tools that run code, of which al_llm_req_refs_read() reads more */
#define AL_LLM_REFS_CODE                                                     \
    ((UINT32_C(1) << AL_LLM_PT_CODE_INTERPRETER)                             \
     | (UINT32_C(1) << AL_LLM_PT_CODE_EXECUTION)                             \
     | (UINT32_C(1) << AL_LLM_PT_SHELL))


/*
 * Inputs by URL (al_llm_req_urls()), files, containers and skills the
 * account stores (al_llm_req_stored()) and the network of the
 * provider's code containers (al_llm_req_network()), read together: the
 * body is loaded by jansson once, and the members that hold the prompt
 * are walked once, for what the entry's provider_tools does not allow.
 * An input by URL is refused first, wherever it is (those members, then
 * the tools the provider runs); then a stored file of those members,
 * then one of the tools or of a top-level "container", then a
 * container's network.  Read only when the scan saw a key that may hold
 * a URL or a file's id, or a top-level "container" (b->urls), or a tool
 * that runs code (for the others only).
 */

static int
al_llm_req_refs(al_llm_rq_t *rq)
{
    /* what every call without either pays: not the read's frame */

    if (!rq->b->urls && (rq->b->tools & AL_LLM_REFS_CODE) == 0) {
        return 0;
    }

    return al_llm_req_refs_read(rq);
}


static int
al_llm_req_refs_read(al_llm_rq_t *rq)
{
    int            audio;
    size_t         i;
    json_t        *root, *v;
    uint32_t       code, net, pt;
    json_error_t   err;
    al_llm_refs_t  refs;

    static const char *const  members[] = {
        "messages", "input", "prompt", "system", "instructions", NULL
    };

    code = AL_LLM_REFS_CODE;
    net = (UINT32_C(1) << AL_LLM_PT_CODE_INTERPRETER)
          | (UINT32_C(1) << AL_LLM_PT_SHELL);
    pt = rq->llm->provider_tools;

    refs.url = NULL;
    refs.stored = NULL;
    refs.network = NULL;
    refs.want_url = (rq->b->urls & AL_LLM_URLS_KEY)
                    && (pt & (UINT32_C(1) << AL_LLM_PT_URL_INPUT)) == 0;
    refs.want_stored = (pt & (UINT32_C(1) << AL_LLM_PT_STORED_FILES)) == 0
                       && (rq->b->urls || (rq->b->tools & code) != 0);
    refs.want_network = (pt & (UINT32_C(1) << AL_LLM_PT_WEB_FETCH)) == 0
                        && (rq->b->tools & net) != 0;

    /* a message's "audio", for al_llm_req_audio(): in the same load */
    audio = (rq->b->urls & AL_LLM_URLS_AUDIO) && al_llm_client_priced(rq->lc);

    if (!refs.want_url && !refs.want_stored && !refs.want_network && !audio) {
        return 0;
    }

    root = json_loadb((const char *) rq->body, rq->len, 0, &err);

    if (root == NULL) {
        refs.url = refs.want_url ? "the body" : NULL;
        refs.stored = "the body";
        refs.network = "the body";
        rq->audio_ref = audio;

    } else {
        rq->audio_ref = audio && al_llm_audio_messages(root) != NULL;

        for (i = 0; members[i] != NULL && refs.url == NULL; i++) {
            v = json_object_get(root, members[i]);

            if (v != NULL) {
                al_llm_refs_find(v, 0, &refs);
            }
        }

        if (refs.want_url && refs.url == NULL) {
            refs.url = al_llm_url_tools(root);
        }

        if (refs.url == NULL && refs.want_stored && refs.stored == NULL
            && (rq->b->urls & AL_LLM_URLS_AUDIO))
        {
            refs.stored = al_llm_audio_messages(root);
        }

        if (refs.url == NULL && refs.want_stored && refs.stored == NULL) {
            refs.stored = al_llm_stored_tools(root);
        }

        if (refs.url == NULL && (!refs.want_stored || refs.stored == NULL)
            && refs.want_network)
        {
            refs.network = al_llm_network_tools(root);
        }

        json_decref(root);
    }

    if (refs.url != NULL) {
        return al_llm_req_urls(rq, refs.url);
    }

    if (refs.want_stored && refs.stored != NULL) {
        return al_llm_req_stored(rq, refs.stored);
    }

    if (refs.want_network && refs.network != NULL) {
        return al_llm_req_network(rq, refs.network);
    }

    return 0;
}


/*
 * al_llm_json_find() of al_llm_url_here() and of al_llm_stored_here() in
 * one walk of v, as wanted: each finds the first key in the same order.
 * Done at the first input by URL (it is refused first), or at the first
 * stored file when no URL is wanted.
 */

static void
al_llm_refs_find(json_t *v, unsigned depth, al_llm_refs_t *refs)
{
    size_t       i;
    json_t      *m;
    const char  *key;

    if (depth > AL_JSON_DEPTH_MAX) {    /* the scan allows less */
        if (refs->want_url) {
            refs->url = "the body";

        } else if (refs->stored == NULL) {
            refs->stored = "the body";
        }

        return;
    }

    if (json_is_array(v)) {
        for (i = 0; i < json_array_size(v); i++) {
            al_llm_refs_find(json_array_get(v, i), depth + 1, refs);

            if (refs->url != NULL
                || (!refs->want_url && refs->stored != NULL))
            {
                return;
            }
        }

        return;
    }

    if (!json_is_object(v)) {
        return;
    }

    if (refs->want_url) {
        refs->url = al_llm_url_here(v);

        if (refs->url != NULL) {
            return;
        }
    }

    if (refs->want_stored && refs->stored == NULL) {
        refs->stored = al_llm_stored_here(v);

        if (refs->stored != NULL && !refs->want_url) {
            return;
        }
    }

    json_object_foreach(v, key, m) {
        al_llm_refs_find(m, depth + 1, refs);

        if (refs->url != NULL || (!refs->want_url && refs->stored != NULL)) {
            return;
        }
    }
}


/*
 * An input of the prompt given by a URL is downloaded by the provider:
 * OpenAI's {"type":"image_url","image_url":{"url":U}}, the Responses
 * API's "image_url": U and "file_url": U, Anthropic's "source":
 * {"type":"url","url":U} (images, documents), vLLM's "video_url" and
 * "audio_url" as image_url; a file part's "file_data" (OpenRouter takes a
 * URL there) and "file_id" (LiteLLM's proxy downloads one that is a URL)
 * when they hold a URL, not base64 or an id.  The provider then reaches a
 * URL the client chose, which the URL can tell anything: a grant of
 * egress, family url_input, as its web fetch is.  A data: URL is no
 * download.  Read (al_llm_req_refs()) only when the scan saw one of
 * those keys (b->urls), in the members that hold the prompt and in the
 * tools the provider runs (al_llm_url_tools()), from the tree jansson
 * builds of the body the scan accepted, so escapes are read as the
 * provider reads them.  The refusal of the input at key.
 */

static int
al_llm_req_urls(al_llm_rq_t *rq, const char *key)
{
    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "an input given by URL (\"%s\") is downloaded by "
                       "the provider; the policy does not allow it "
                       "(provider_tools: url_input)", key);
}


/*
 * A file, container or skill the provider keeps for the account, named
 * by its id: a file part's or input's "file_id" that holds an id (no
 * ':', so neither a URL, which al_llm_req_urls() reads, nor a data:
 * URL), a code_interpreter's "container" given as an id, or one of
 * "file_ids" (its files copied into the container), a hosted shell's
 * "environment" of a "container_id" (type "container_reference") or of
 * "file_ids", a skill a tool's container or environment mounts by its
 * "skill_id" (OpenAI's "skill_reference"; an "inline" skill is the
 * client's own bytes), Anthropic's top-level "container" given as an
 * id, or with one (a code execution container reused; one of "skills"
 * alone is a new container), or with a skill of type "custom" (one the
 * account uploaded; those of type "anthropic" are the provider's own,
 * the same for every account), or chat's earlier audio answer named in
 * a message's "audio" (al_llm_audio_messages()).  The provider then reads
 * that file or answer, runs in that container or loads that skill's
 * files and instructions, whoever made it: no route of the gateway
 * makes one (files, containers and skills are made by the provider's
 * other APIs, or by another client's call), so the gateway cannot tell
 * whose it is, as with "conversation".  Refused unless the entry's
 * provider_tools allows stored_files.  Read (al_llm_req_refs()) only
 * when the scan saw a "file_id", an "audio" below the top level or a
 * top-level "container" (b->urls) or a tool that runs
 * code (code_interpreter, code_execution, shell: skills and containers
 * are theirs), from the tree jansson builds, in the members that hold
 * the prompt, in the tools the provider runs (al_llm_stored_tools(): a
 * function's schema may name a property "file_id") and in the top-level
 * "container" (whole, as a tool is), with or without a code tool
 * beside it: Anthropic runs the code of its web_search and web_fetch
 * tools of 20260209 (dynamic filtering) in a code execution container,
 * which the request's "container" names, so one reused, with its
 * files, is reached without any code tool in the request.
 * file_search's "vector_store_ids" is
 * not read here: the tool searches the account's stores and is of no
 * use without them, so provider_tools file_search is the grant.  The
 * refusal of the one at key.
 */

static int
al_llm_req_stored(al_llm_rq_t *rq, const char *key)
{
    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "\"%s\" names a %s the account stores, which no "
                       "call through the gateway made, so it cannot tell "
                       "whose it is; the policy does not allow it "
                       "(provider_tools: stored_files)", key,
                       strcmp(key, "skill_id") == 0 ? "skill"
                       : strcmp(key, "audio") == 0 ? "model's audio answer"
                       : "file or container");
}


/*
 * Of the tools the provider runs and Anthropic's top-level "container",
 * the key of a file, container or skill the account stores
 * (al_llm_req_stored()), or NULL.  The "container" is read on every
 * endpoint, as "prompt" is (al_llm_req_stored_prompt()): elsewhere it
 * passes only as allow_members names it, and a router behind the entry
 * (LiteLLM's) hands it on to Anthropic.
 */

static const char *
al_llm_stored_tools(json_t *root)
{
    size_t       i;
    json_t      *v;
    const char  *key;

    key = NULL;
    v = json_object_get(root, "tools");

    for (i = 0; key == NULL && i < json_array_size(v); i++) {
        key = al_llm_stored_tool(json_array_get(v, i));
    }

    /* Anthropic's: an id, or {"id": ..., "skills": [...]} */

    v = json_object_get(root, "container");

    if (key == NULL
        && (json_is_string(v)
            || (json_is_object(v)
                && json_object_get(v, "id") != NULL
                && !json_is_null(json_object_get(v, "id")))))
    {
        key = "container";
    }

    /*
     * its skills, and whatever else in it names a stored file,
     * container or skill, as in a tool: read whole, not by the members
     * the API has today
     */

    if (key == NULL && json_is_object(v)) {
        key = al_llm_json_find(v, 0, al_llm_stored_tool_here);
    }

    return key;
}


/*
 * Of the tools the provider runs, the key of an input by URL in them
 * (al_llm_url_here()), or NULL: an image_generation tool's
 * "input_image_mask" takes an "image_url", which OpenAI reads as a
 * data: URL and Azure as a URL it downloads; the provider would fetch
 * what the client names, as for a prompt's input, and the tool's grant
 * (image_generation) is no grant of url_input.  A function's schema is
 * the client's and is not read.
 */

static const char *
al_llm_url_tools(json_t *root)
{
    size_t       i;
    json_t      *v, *tool;
    const char  *key;

    key = NULL;
    v = json_object_get(root, "tools");

    for (i = 0; key == NULL && i < json_array_size(v); i++) {
        tool = json_array_get(v, i);

        if (al_llm_tool_theirs(tool)) {
            key = al_llm_json_find(tool, 0, al_llm_url_here);
        }
    }

    return key;
}


/*
 * A tool the provider runs: of a type of a family, not "function" or
 * "custom", nor one of no type (their schemas are the client's)
 */

static int
al_llm_tool_theirs(json_t *tool)
{
    json_t  *t;

    t = json_object_get(tool, "type");

    return json_is_string(t)
           && al_llm_tool_family(json_string_value(t), json_string_length(t))
              >= 0;
}


/*
 * The container OpenAI runs a code_interpreter or a hosted shell in
 * takes a "network_policy": {"type": "allowlist", "allowed_domains":
 * [...]} (with "domain_secrets" for them) lets the code the model writes
 * reach the domains the request lists, past the gateway, as a web fetch
 * does.  So any policy but {"type": "disabled"} (or null: none, the
 * default, disabled) needs provider_tools web_fetch; read in the tools
 * of those two families only (a function's schema is the client's).
 * The refusal of the one at key.
 */

static int
al_llm_req_network(al_llm_rq_t *rq, const char *key)
{
    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "\"%s\" lets the provider's container reach the "
                       "network past the gateway; the policy does not "
                       "allow it (provider_tools: web_fetch)", key);
}


/* of root's "tools", the key of a container's network, or NULL */

static const char *
al_llm_network_tools(json_t *root)
{
    int          family;
    size_t       i;
    json_t      *v, *tool, *t;
    const char  *key;

    key = NULL;
    v = json_object_get(root, "tools");

    for (i = 0; key == NULL && i < json_array_size(v); i++) {
        tool = json_array_get(v, i);
        t = json_object_get(tool, "type");

        if (!json_is_string(t)) {
            continue;
        }

        family = al_llm_tool_family(json_string_value(t),
                                    json_string_length(t));

        if (family == AL_LLM_PT_CODE_INTERPRETER
            || family == AL_LLM_PT_SHELL)
        {
            key = al_llm_json_find(tool, 0, al_llm_network_here);
        }
    }

    return key;
}


/* of an object, "network_policy" when it is not null nor disabled */

static const char *
al_llm_network_here(json_t *obj)
{
    json_t  *m, *t;

    m = json_object_get(obj, "network_policy");

    if (m == NULL || json_is_null(m)) {
        return NULL;
    }

    t = json_object_get(m, "type");

    if (json_is_object(m) && json_is_string(t)
        && strcmp(json_string_value(t), "disabled") == 0)
    {
        return NULL;
    }

    return "network_policy";
}


/*
 * A "prompt" that is an object names a prompt the provider stores for
 * the account: the Responses API's {"id": "pmpt_...", "version": ...,
 * "variables": {...}}, which brings instructions, a model and tools of
 * its own.  It is made in the provider's dashboard or by its other APIs,
 * never by a route of the gateway, so the gateway cannot tell whose it
 * is, as with a stored file: refused unless the entry's provider_tools
 * allows stored_files (the member itself passes on responses only as
 * allow_members names it, al_llm_req_prompt()).  A completions "prompt"
 * (a string, a list) is the prompt's text, and null is none.  Read after
 * al_llm_req_refs(), which reads the variables.
 */

static int
al_llm_req_stored_prompt(al_llm_rq_t *rq)
{
    if (rq->b->f[AL_LLM_F_PROMPT].type != AL_LLM_JT_OBJECT
        || (rq->llm->provider_tools
            & (UINT32_C(1) << AL_LLM_PT_STORED_FILES)))
    {
        return 0;
    }

    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "\"prompt\" names a prompt the account stores, with "
                       "tools of its own, which no call through the gateway "
                       "made, so it cannot tell whose it is; the policy does "
                       "not allow it (provider_tools: stored_files)");
}


/*
 * The first value at any depth of v, arrays and objects, of which here()
 * names a key: that key, or NULL.  here() looks at one object's members
 * only; the walk goes into them after it.
 */

static const char *
al_llm_json_find(json_t *v, unsigned depth, const char *(*here)(json_t *obj))
{
    size_t       i;
    json_t      *m;
    const char  *key, *found;

    if (depth > AL_JSON_DEPTH_MAX) {
        return "the body";              /* the scan allows less */
    }

    if (json_is_array(v)) {
        for (i = 0; i < json_array_size(v); i++) {
            found = al_llm_json_find(json_array_get(v, i), depth + 1, here);

            if (found != NULL) {
                return found;
            }
        }

        return NULL;
    }

    if (!json_is_object(v)) {
        return NULL;
    }

    found = here(v);

    if (found != NULL) {
        return found;
    }

    json_object_foreach(v, key, m) {
        found = al_llm_json_find(m, depth + 1, here);

        if (found != NULL) {
            return found;
        }
    }

    return NULL;
}


/* of an object's members, the key of an id of a stored file, or NULL */

static const char *
al_llm_stored_here(json_t *obj)
{
    json_t      *m;
    const char  *key;

    json_object_foreach(obj, key, m) {
        if (strcmp(key, "file_id") == 0 && json_is_string(m)
            && memchr(json_string_value(m), ':', json_string_length(m))
               == NULL)
        {
            return "file_id";
        }

        if (strcmp(key, "file_ids") == 0 && json_is_array(m)
            && json_array_size(m) > 0)
        {
            return "file_ids";
        }
    }

    return NULL;
}


/*
 * Of root's "messages", "audio" when a message has an "audio" that is
 * not null: chat's reference to an earlier audio answer of the model,
 * an assistant message's {"audio": {"id": "audio_..."}}, which the
 * provider keeps for the account for some hours and reads back, as
 * audio, into the call.  A message has no other member of that name
 * (an audio input is an "input_audio" part), so any value is taken for
 * one; deeper (an Anthropic tool_use's "input", the client's tool
 * arguments) it is not read.  Else NULL.
 */

static const char *
al_llm_audio_messages(json_t *root)
{
    size_t   i;
    json_t  *v, *m;

    v = json_object_get(root, "messages");

    for (i = 0; i < json_array_size(v); i++) {
        m = json_object_get(json_array_get(v, i), "audio");

        if (m != NULL && !json_is_null(m)) {
            return "audio";
        }
    }

    return NULL;
}


/*
 * A tool the provider runs (al_llm_tool_theirs()): its "container"
 * given as an id, or its stored files, containers and skills anywhere
 * in it
 */

static const char *
al_llm_stored_tool(json_t *tool)
{
    json_t  *c;

    if (!al_llm_tool_theirs(tool)) {
        return NULL;
    }

    c = json_object_get(tool, "container");

    if (json_is_string(c)) {
        return "container";
    }

    return al_llm_json_find(tool, 0, al_llm_stored_tool_here);
}


/*
 * of an object in a tool the provider runs, the key of a stored file
 * (al_llm_stored_here()), of a stored container (a shell environment's
 * "container_id", of type "container_reference") or of a stored skill,
 * or NULL
 */

static const char *
al_llm_stored_tool_here(json_t *obj)
{
    json_t      *c;
    const char  *key;

    key = al_llm_stored_here(obj);

    if (key != NULL) {
        return key;
    }

    c = json_object_get(obj, "container_id");

    if (c != NULL && !json_is_null(c)) {
        return "container_id";
    }

    return al_llm_skill_here(obj);
}


/*
 * of an object, "skill_id" when it names a skill the account stores: a
 * "skill_id" that is not null, of any "type" but "anthropic" (Anthropic's
 * own skills, pptx, xlsx and the like, the same for every account):
 * OpenAI's "skill_reference", Anthropic's "custom", and types the
 * gateway does not know.  Else NULL.
 */

static const char *
al_llm_skill_here(json_t *obj)
{
    json_t  *id, *t;

    id = json_object_get(obj, "skill_id");

    if (id == NULL || json_is_null(id)) {
        return NULL;
    }

    t = json_object_get(obj, "type");

    if (json_is_string(t) && strcmp(json_string_value(t), "anthropic") == 0)
    {
        return NULL;
    }

    return "skill_id";
}


/* of an object, the key of an input by URL in it, or NULL */

static const char *
al_llm_url_here(json_t *v)
{
    json_t      *m, *u, *t, *s;
    const char  *key, *ukey, *name;

    /* "image_url": U or {"url": U}, and the like, in any case */

    json_object_foreach(v, key, m) {
        name = al_llm_url_key(key, strlen(key));

        if (name == NULL || strcmp(name, "url") == 0) {
            continue;
        }

        if (strcmp(name, "file_data") == 0 || strcmp(name, "file_id") == 0) {
            /* base64 or an upload's id, or a URL */

            if (al_llm_url_ref(m)) {
                return name;
            }

            continue;
        }

        if (al_llm_url_remote(m)) {
            return name;
        }

        if (!json_is_object(m)) {
            continue;
        }

        json_object_foreach(m, ukey, u) {
            name = al_llm_url_key(ukey, strlen(ukey));

            if (name != NULL && strcmp(name, "url") == 0
                && al_llm_url_remote(u))
            {
                return al_llm_url_key(key, strlen(key));
            }
        }
    }

    /*
     * Anthropic's "source": {"type": "url", "url": U}; other objects of
     * type "url" (the sources a Responses web search call lists) are
     * records, not inputs.
     */

    s = json_object_get(v, "source");
    t = json_object_get(s, "type");
    m = json_object_get(s, "url");

    if (json_is_string(t) && strcmp(json_string_value(t), "url") == 0
        && m != NULL && al_llm_url_remote(m))
    {
        return "url";
    }

    return NULL;
}


const char *
al_llm_url_key(const char *key, size_t len)
{
    size_t  i, n;

    static const char *const  names[] = {
        "url", "image_url", "file_url", "video_url", "audio_url",
        "file_data", "file_id", NULL
    };

    for (i = 0; names[i] != NULL; i++) {
        n = strlen(names[i]);

        if ((len == n && memcmp(key, names[i], n) == 0)
            || (len >= n && len - n <= 2 * n
                && al_folds_to(key, len, names[i], n)))
        {
            return names[i];
        }
    }

    return NULL;
}


/* a URL value that is not a data: URL */

static int
al_llm_url_remote(json_t *v)
{
    if (!json_is_string(v)) {
        return 0;
    }

    return json_string_length(v) < 5
           || strncasecmp(json_string_value(v), "data:", 5) != 0;
}


/*
 * A value that is a URL, in a member that may also hold base64 or an
 * uploaded file's id ("file-..."), neither of which has a ':', not a
 * data: URL.
 */

static int
al_llm_url_ref(json_t *v)
{
    return json_is_string(v)
           && memchr(json_string_value(v), ':', json_string_length(v))
              != NULL
           && al_llm_url_remote(v);
}


/* a top-level member that has the provider run a tool of family */

static int
al_llm_req_member(al_llm_rq_t *rq, unsigned id, unsigned family,
    const char *name)
{
    const al_llm_jfield_t  *f;

    f = &rq->b->f[id];

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL
        || (rq->llm->provider_tools & (UINT32_C(1) << family)))
    {
        return 0;
    }

    rq->req->reason = AL_REASON_BODY;

    return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                       "\"%s\" is run by the provider; the policy does "
                       "not allow it (provider_tools: %s)", name,
                       al_llm_tool_names[family]);
}


/*
 * A member added at the end of an object: after its last value, or just
 * inside '{' when it has none.  Names are ours, plain ASCII.
 */

static int
al_llm_edit_member(al_llm_rq_t *rq, size_t last, size_t nmembers,
    const char *name, const char *value, size_t vlen)
{
    char    text[AL_LLM_EDIT_MAX], *p;
    size_t  nlen;

    nlen = strlen(name);

    if (nlen + vlen + 4 > sizeof(text)) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "cannot rewrite the body");
    }

    p = text;

    if (nmembers) {
        *p++ = ',';
    }

    *p++ = '"';
    memcpy(p, name, nlen);
    p += nlen;
    *p++ = '"';
    *p++ = ':';
    memcpy(p, value, vlen);
    p += vlen;

    return al_llm_edit(rq, last, 0, text, (size_t) (p - text));
}


/* a splice: del bytes at at replaced by len bytes of text */

static int
al_llm_edit(al_llm_rq_t *rq, size_t at, size_t del, const char *text,
    size_t len)
{
    al_llm_edit_t  *e;

    if (rq->nedits == AL_LLM_EDITS || len >= sizeof(e->text)) {
        rq->req->reason = AL_REASON_BODY;
        return al_llm_fail(rq->req->detail, sizeof(rq->req->detail),
                           "cannot rewrite the body");
    }

    e = &rq->edit[rq->nedits++];
    memcpy(e->text, text, len);
    e->at = at;
    e->del = del;
    e->tlen = len;

    return 0;
}


/* the decimal text of v, not terminated; buf has room for 20 bytes */

static size_t
al_llm_u64_text(char *buf, uint64_t v)
{
    char    tmp[20], *p;
    size_t  n;

    p = tmp + sizeof(tmp);

    do {
        *--p = (char) ('0' + v % 10);
        v /= 10;
    } while (v != 0);

    n = (size_t) (tmp + sizeof(tmp) - p);
    memcpy(buf, p, n);

    return n;
}


/*
 * The body with the splices applied, in offset order (splices at the same
 * offset in the order they were made; none overlaps another).
 */

static int
al_llm_req_splice(al_llm_rq_t *rq)
{
    char           *buf, *p;
    size_t          i, j, size, from;
    al_llm_edit_t   t;
    al_llm_req_t   *req;

    req = rq->req;

    for (i = 1; i < rq->nedits; i++) {
        t = rq->edit[i];

        for (j = i; j > 0 && rq->edit[j - 1].at > t.at; j--) {
            rq->edit[j] = rq->edit[j - 1];
        }

        rq->edit[j] = t;
    }

    size = rq->len;

    for (i = 0; i < rq->nedits; i++) {
        size = size - rq->edit[i].del + rq->edit[i].tlen;
    }

    buf = (rq->alloc != NULL) ? rq->alloc(rq->alloc_data, size)
                              : malloc(size);
    if (buf == NULL) {
        req->reason = AL_REASON_BODY;
        return al_llm_fail(req->detail, sizeof(req->detail),
                           "out of memory");
    }

    p = buf;
    from = 0;

    for (i = 0; i < rq->nedits; i++) {
        memcpy(p, rq->body + from, rq->edit[i].at - from);
        p += rq->edit[i].at - from;

        if (rq->edit[i].at < req->model_at) {
            req->body_model_at += rq->edit[i].tlen;
            req->body_model_at -= rq->edit[i].del;
        }

        memcpy(p, rq->edit[i].text, rq->edit[i].tlen);
        p += rq->edit[i].tlen;

        from = rq->edit[i].at + rq->edit[i].del;
    }

    memcpy(p, rq->body + from, rq->len - from);

    req->body = buf;
    req->body_len = size;
    req->body_theirs = (rq->alloc != NULL);

    return 0;
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
