/*
 * libFuzzer target for the LLM gateway's request side and its small
 * formatters: al_llm_request(), al_llm_route(), the non-streaming usage
 * scanner, al_llm_error_body() and al_llm_record_format().
 *
 * Input: byte 0 picks the provider, the client and the endpoint, byte 1 a
 * split point and a method; the rest is the body (and, as text, a target,
 * a response, a message).  Checked besides the sanitizers:
 *
 *   - reasons are among those documented, details are terminated
 *     printable ASCII and empty exactly when the request is allowed;
 *   - the body scanner accepts exactly what al_json_check() (jansson,
 *     duplicates refused) accepts but for a key that is a member read
 *     in another case (refused: Go folds case), and finds the members
 *     jansson finds,
 *     with the same types, integers and model name, and counts the same
 *     prompt text;
 *   - a rewritten body is strict JSON, and deciding it again is allowed
 *     and needs no rewrite (the rewrite is a fixed point);
 *   - al_llm_request_with() decides the same and writes the same bytes
 *     into its caller's memory;
 *   - the ids of stored state a Responses body's scan keeps are those
 *     al_llm_state_request() and al_llm_state_item() read, in the same
 *     order, and the rewritten body has the same bytes where they are;
 *   - max_output never exceeds the client's cap times n when clamping
 *     (but on completions, where a batch of prompts multiplies it too);
 *   - an allowed route has a URI under the upstream's base path;
 *   - the body scanner's loop (al_llm_json_scan()) fills what its
 *     recursive scan (al_llm_json_scan_strict()) fills and refuses what
 *     it refuses, with the same detail, for the request's members and
 *     for a usage object's;
 *   - the response scanner gives the same usage however it is split;
 *   - error bodies and usage lines are valid JSON for any message.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "airlock.h"
#include "al_internal.h"
#include "al_llm.h"
#include "al_llm_internal.h"


#define S(s)  { s, sizeof(s) - 1 }


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void fuzz_flat(const al_llm_scan_spec_t *spec, const uint8_t *body,
    size_t len);
static int fuzz_same_field(const al_llm_jfield_t *a,
    const al_llm_jfield_t *b);
static int fuzz_same_tools(const al_llm_body_t *a, const al_llm_body_t *b);

/* the request's spec (al_llm_scan.c) and one like a usage object's */
static const char *const  fz_fields[] = {
    "model", "stream", "max_tokens", "max_completion_tokens",
    "max_output_tokens", "stream_options", "n", "tools",
    "web_search_options", "mcp_servers", "best_of", "service_tier",
    "n_predict", "models", "fallbacks", "speed",
    "data_sources", "inference_geo", "context_window_fallbacks",
    "content_policy_fallbacks", "fallback_models", "modalities", "audio",
    "plugins", "mock_testing_fallbacks", "mock_testing_context_fallbacks",
    "mock_testing_content_policy_fallbacks", "provider", "background",
    "user_config", "api_base", "base_url", "extra_body", "extra_headers",
    "headers", "prediction", "context_management", "prompt",
    "tool_choice", "thinking",
    "reasoning", "thinking_budget", "thinking_token_budget",
    "thinking_budget_tokens", "chat_template_kwargs", "nvext",
    "enable_thinking", NULL
};
static const char *const  fz_so[] = { "include_usage", NULL };
static const al_llm_scan_spec_t  fz_request_spec = {
    fz_fields, 0, 5, fz_so, AL_LLM_F_INCLUDE_USAGE, 1, NULL, NULL
};
static const char *const  fz_usage_names[] = {
    "prompt_tokens", "completion_tokens", "total_tokens",
    "prompt_tokens_details", NULL
};
static const char *const  fz_details[] = { "cached_tokens", NULL };
static const al_llm_scan_spec_t  fz_usage_spec = {
    fz_usage_names, -1, 3, fz_details, 4, 0, NULL, NULL
};
static void fuzz_request(const al_llm_t *llm, const al_llm_client_t *lc,
    al_llm_endpoint_t ep, const uint8_t *body, size_t len);
static void fuzz_state(const al_llm_req_t *req, const uint8_t *body,
    size_t len);
static void fuzz_request_with(const al_llm_t *llm,
    const al_llm_client_t *lc, al_llm_endpoint_t ep, const uint8_t *body,
    size_t len, const al_llm_req_t *req);
static void *fuzz_alloc(void *data, size_t size);
static void fuzz_scan(const uint8_t *body, size_t len);
static void fuzz_field(const al_llm_body_t *b, const uint8_t *body,
    const al_llm_jfield_t *f, json_t *v);
static void fuzz_prompt(const al_llm_body_t *b, json_t *root);
static void fuzz_choice(const al_llm_body_t *b, const uint8_t *body,
    json_t *v);
static void fuzz_count(json_t *v, uint64_t *text, uint64_t *extra);
static int fuzz_in(const char *const *list, const char *key);
static int fuzz_case(json_t *root);
static int fuzz_case_in(json_t *obj, const char *const *names);
static void fuzz_route(const al_llm_t *llm, const al_llm_client_t *lc,
    unsigned method, const uint8_t *s, size_t len);
static void fuzz_response(al_llm_kind_t kind, al_llm_endpoint_t ep,
    const uint8_t *s, size_t len, size_t cut);
static void fuzz_format(al_llm_kind_t kind, const uint8_t *s, size_t len);
static void fuzz_detail(const char *detail, size_t size, int allowed);
static void fuzz_valid_json(const char *buf, size_t n, size_t size);


static al_client_t  c_agent = { .name = S("agent") };
static al_client_t  c_worker = { .name = S("worker") };

static al_str_t  models[] = {
    S("gpt-4o-mini"), S("gpt-4o"), S("claude-sonnet-4-5"), S("m")
};

static al_str_t  worker_models[] = { S("m") };

static al_llm_client_t  clients[] = {
    { .client = &c_agent, .max_tokens = 1000, .clamp = 1,
      .tokens_per_minute = 20000 },
    { .client = &c_worker, .models = worker_models, .nmodels = 1,
      .max_tokens = 8 },
    { .client = &c_agent, .max_tokens = 5, .clamp = 1 }
};

static al_llm_t  llms[] = {
    { .name = S("openai"), .kind = AL_LLM_OPENAI,
      .upstream = { .base_path = S("/v1") }, .models = models,
      .nmodels = 4, .clients = clients, .nclients = 2,
      .include_usage = 1, .body_max = 1 << 20 },
    { .name = S("vllm"), .kind = AL_LLM_OPENAI_COMPATIBLE,
      .upstream = { .base_path = S("/v1") }, .models = models,
      .nmodels = 4, .clients = clients, .nclients = 2,
      .include_usage = 1, .body_max = 1 << 20 },
    { .name = S("anthropic"), .kind = AL_LLM_ANTHROPIC,
      .upstream = { .base_path = S("/v1") }, .models = models,
      .nmodels = 4, .clients = clients, .nclients = 2,
      .body_max = 1 << 20 }
};

static const al_llm_endpoint_t  eps[] = {
    AL_LLM_EP_CHAT, AL_LLM_EP_COMPLETIONS, AL_LLM_EP_EMBEDDINGS,
    AL_LLM_EP_RESPONSES, AL_LLM_EP_MESSAGES, AL_LLM_EP_MODELS,
    AL_LLM_EP_MODEL, AL_LLM_EP_CHAT
};

static const unsigned  methods[] = {
    AL_METHOD_GET, AL_METHOD_POST, AL_METHOD_PUT, AL_METHOD_DELETE
};


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t                  len;
    const uint8_t          *s;
    const al_llm_t         *llm;
    const al_llm_client_t  *lc;
    al_llm_endpoint_t       ep;

    if (size < 2) {
        return 0;
    }

    llm = &llms[(data[0] & 0x03) % 3];
    ep = eps[(data[0] >> 2) & 0x07];
    lc = ((data[0] >> 5) & 0x03) == 3 ? NULL
                                      : &clients[(data[0] >> 5) & 0x03];
    s = data + 2;
    len = size - 2;

    fuzz_scan(s, len);
    fuzz_flat(&fz_request_spec, s, len);
    fuzz_flat(&fz_usage_spec, s, len);
    fuzz_request(llm, lc, ep, s, len);
    fuzz_route(llm, lc, methods[data[1] & 0x03], s, len);
    fuzz_response(llm->kind, ep, s, len, len ? data[1] % (len + 1) : 0);
    fuzz_format(llm->kind, s, len);

    return 0;
}


static void
fuzz_request(const al_llm_t *llm, const al_llm_client_t *lc,
    al_llm_endpoint_t ep, const uint8_t *body, size_t len)
{
    json_t        *j;
    al_reason_t    r;
    al_llm_req_t   req, again;
    json_error_t   err;

    r = al_llm_request(llm, lc, ep, NULL, 0, body, len, &req);

    if (r != req.reason
        || (r != AL_REASON_NONE && r != AL_REASON_BODY
            && r != AL_REASON_BODY_TOO_LARGE && r != AL_REASON_MODEL))
    {
        abort();
    }

    fuzz_detail(req.detail, sizeof(req.detail), r == AL_REASON_NONE);
    fuzz_request_with(llm, lc, ep, body, len, &req);

    if (r == AL_REASON_NONE && ep == AL_LLM_EP_RESPONSES) {
        fuzz_state(&req, body, len);

    } else if (req.state_read) {
        abort();
    }

    if (r != AL_REASON_NONE) {
        if (req.body != NULL) {
            abort();
        }
        al_llm_request_free(&req);
        return;
    }

    if (req.model_len != strlen(req.model)
        || (req.hide_usage && req.client_usage)
        || (req.hide_usage && req.body == NULL)
        || ((req.clamped || req.capped) && req.body == NULL))
    {
        abort();
    }

    if (lc != NULL && lc->max_tokens != 0 && lc->clamp
        && ep != AL_LLM_EP_COMPLETIONS
        && req.max_output > lc->max_tokens * AL_LLM_N_MAX)
    {
        abort();
    }

    if (req.body == NULL) {
        al_llm_request_free(&req);
        return;
    }

    j = json_loadb(req.body, req.body_len, JSON_REJECT_DUPLICATES, &err);
    if (j == NULL || !json_is_object(j)) {
        abort();
    }
    json_decref(j);

    /* the rewrite is a fixed point */

    r = al_llm_request(llm, lc, ep, NULL, 0,
                       (const unsigned char *) req.body, req.body_len,
                       &again);

    if (r != AL_REASON_NONE || again.body != NULL
        || again.max_output != req.max_output
        || again.stream != req.stream
        || strcmp(again.model, req.model) != 0
        || (req.hide_usage && !again.client_usage))
    {
        abort();
    }

    al_llm_request_free(&again);
    al_llm_request_free(&req);
}


/* the ids the scan kept are those the state reader reads */

static void
fuzz_state(const al_llm_req_t *req, const uint8_t *body, size_t len)
{
    int                  rc;
    size_t               k;
    al_llm_state_req_t   sr;
    al_llm_state_ref_t   ref;
    const al_llm_state_id_t  *id;

    if (!req->state_read) {
        return;                         /* read apart */
    }

    if (req->nstate > AL_LLM_STATE_REFS + 1
        || al_llm_state_request(body, len, &sr) != 0)
    {
        abort();
    }

    k = 0;

    if (sr.named) {
        id = &req->state[k++];

        if (k > req->nstate || id->index != AL_LLM_STATE_PREV
            || id->len != sr.prev.len
            || (id->len > 0
                && memcmp(body + id->at, sr.prev.id, id->len) != 0))
        {
            abort();
        }
    }

    for ( ;; ) {
        rc = al_llm_state_item(&sr, body, &ref);

        if (rc < 0) {
            abort();
        }

        if (rc == 0) {
            break;
        }

        id = &req->state[k++];

        if (k > req->nstate || id->index != sr.index
            || id->len != ref.len
            || (id->len > 0 && memcmp(body + id->at, ref.id, id->len) != 0))
        {
            abort();
        }
    }

    if (k != req->nstate) {
        abort();
    }

    /* the rewrite keeps them: the ids the module looks up are sent */

    if (req->body != NULL) {
        if (al_llm_state_request((const unsigned char *) req->body,
                                 req->body_len, &sr)
            != 0)
        {
            abort();
        }

        k = 0;

        if (sr.named && sr.prev.len != req->state[k++].len) {
            abort();
        }

        while (al_llm_state_item(&sr, (const unsigned char *) req->body,
                                 &ref)
               == 1)
        {
            if (k >= req->nstate || ref.len != req->state[k].len
                || memcmp(ref.id, body + req->state[k].at, ref.len) != 0)
            {
                abort();
            }

            k++;
        }

        if (k != req->nstate) {
            abort();
        }
    }
}


/*
 * al_llm_request_with() decides the same and writes the same bytes into
 * memory of the caller's allocator (here: one block, freed here).
 */

static void
fuzz_request_with(const al_llm_t *llm, const al_llm_client_t *lc,
    al_llm_endpoint_t ep, const uint8_t *body, size_t len,
    const al_llm_req_t *req)
{
    void          *block;
    al_reason_t    r;
    al_llm_req_t   with;

    block = NULL;

    r = al_llm_request_with(llm, lc, ep, NULL, NULL, 0, body, len,
                            fuzz_alloc, &block, &with);

    if (r != req->reason
        || strcmp(with.detail, req->detail) != 0
        || (with.body == NULL) != (req->body == NULL)
        || (with.body != NULL
            && (with.body != block || !with.body_theirs
                || with.body_len != req->body_len
                || memcmp(with.body, req->body, req->body_len) != 0
                || with.body_model_at != req->body_model_at))
        || with.max_output != req->max_output
        || with.prompt_estimate != req->prompt_estimate
        || with.hide_usage != req->hide_usage
        || strcmp(with.model, req->model) != 0)
    {
        abort();
    }

    al_llm_request_free(&with);
    free(block);
}


static void *
fuzz_alloc(void *data, size_t size)
{
    void  **block = data;

    if (*block != NULL) {
        abort();                        /* one rewrite, one allocation */
    }

    *block = malloc(size);

    return *block;
}


static void
fuzz_scan(const uint8_t *body, size_t len)
{
    int             rc1, rc2;
    size_t          i;
    json_t         *j, *so;
    al_llm_body_t   b;
    json_error_t    err;
    char            d1[AL_DETAIL_MAX], d2[AL_DETAIL_MAX];

    static const char *const  names[] = {
        "model", "stream", "max_tokens", "max_completion_tokens",
        "max_output_tokens", "stream_options", "n", "tools",
        "web_search_options", "mcp_servers"
    };

    rc1 = al_llm_body_scan(body, len, &b, d1, sizeof(d1));
    rc2 = al_json_check(NULL, body, len, d2, sizeof(d2));

    if (rc1 != 0) {
        /*
         * jansson drops a NUL byte that follows a number (its reader
         * takes a NUL in its one-byte pushback for "read more"), so
         * "1\0" passes al_json_check(); the scanner refuses it.
         */
        if (rc2 == 0 && memchr(body, '\0', len) == NULL) {

            /* what jansson reads, refused only for a key's case */

            j = json_loadb((const char *) body, len,
                           JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
            i = (j != NULL && fuzz_case(j));
            json_decref(j);

            if (!i || strstr(d1, "only by case") == NULL) {
                abort();                /* refused what jansson reads */
            }
        }
        return;
    }

    if (b.jansson) {
        return;                         /* the caller asks jansson */
    }

    if (rc2 != 0) {
        abort();                        /* accepted what jansson refuses */
    }

    j = json_loadb((const char *) body, len,
                   JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    if (j == NULL) {
        abort();
    }

    if (json_is_object(j) != (b.root.type == AL_LLM_JT_OBJECT)
        || b.root.at + b.root.len > len || fuzz_case(j))
    {
        abort();
    }

    if (json_is_object(j)) {
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            fuzz_field(&b, body, &b.f[i], json_object_get(j, names[i]));
        }

        so = json_object_get(j, "stream_options");
        fuzz_field(&b, body, &b.f[AL_LLM_F_INCLUDE_USAGE],
                   json_is_object(so)
                   ? json_object_get(so, "include_usage") : NULL);

        fuzz_prompt(&b, j);

        fuzz_field(&b, body, &b.f[AL_LLM_F_TOOL_CHOICE],
                   json_object_get(j, "tool_choice"));
        fuzz_choice(&b, body, json_object_get(j, "tool_choice"));

        if (json_is_string(json_object_get(j, "model"))
            && json_string_length(json_object_get(j, "model"))
               < sizeof(b.model)
            && memcmp(b.model, json_string_value(json_object_get(j, "model")),
                      json_string_length(json_object_get(j, "model")))
               != 0)
        {
            abort();
        }
    }

    json_decref(j);
}


/*
 * What the scan notes of "tool_choice" (al_llm_body_t's choice), from
 * jansson's tree: a string, unescaped; of an object, its "type" (the
 * string unescaped) and its first key that is "type", "tools" or
 * "allowed_tools" in another case, as Go folds it.
 */

static void
fuzz_choice(const al_llm_body_t *b, const uint8_t *body, json_t *v)
{
    size_t       i, n, klen;
    json_t      *t, *e;
    const char  *key, *want, *wkey;

    static const char *const  names[] = {
        "type", "tools", "allowed_tools", NULL
    };

    if (json_is_string(v)) {
        n = json_string_length(v);
        n = n < AL_LLM_CHOICE_TYPE ? n : AL_LLM_CHOICE_TYPE;

        if (b->f[AL_LLM_F_TOOL_CHOICE].esc
            && memcmp(b->choice_type, json_string_value(v), n) != 0)
        {
            abort();
        }
        return;
    }

    if (!json_is_object(v)) {
        return;
    }

    t = json_object_get(v, "type");

    fuzz_field(b, body, &b->choice, t);

    if (json_is_string(t)) {
        n = json_string_length(t);
        n = n < AL_LLM_CHOICE_TYPE ? n : AL_LLM_CHOICE_TYPE;

        if (memcmp(b->choice_type, json_string_value(t), n) != 0) {
            abort();
        }
    }

    want = NULL;
    wkey = NULL;
    klen = 0;

    json_object_keylen_foreach(v, key, n, e) {
        (void) e;

        for (i = 0; want == NULL && names[i] != NULL; i++) {
            if (strcmp(key, names[i]) != 0
                && al_folds_to(key, n, names[i], strlen(names[i])))
            {
                want = names[i];
                wkey = key;
                klen = n;
            }
        }
    }

    if ((want == NULL) != (b->choice_case == NULL)
        || (want != NULL
            && (strcmp(want, b->choice_case) != 0
                || klen != b->choice_key_len
                || memcmp(wkey, b->choice_key, klen) != 0)))
    {
        abort();
    }
}


/*
 * The prompt estimate's counts, from jansson's tree by the scanner's
 * rules: under the root members that hold prompt text, the unescaped
 * length of every string and key and one per integer; a member named like an
 * attachment counts a flat estimate instead of its value.
 */

static const char *const  fuzz_prompt_keys[] = {
    "messages", "prompt", "input", "instructions", "system", "tools",
    "functions", "response_format", "text", NULL
};

static const char *const  fuzz_attachment_keys[] = {
    "image_url", "image", "source", "file", "file_data", "input_audio",
    NULL
};


static void
fuzz_prompt(const al_llm_body_t *b, json_t *root)
{
    json_t      *v;
    uint64_t     text, extra;
    const char  *key;

    text = 0;
    extra = 0;

    json_object_foreach(root, key, v) {
        if (fuzz_in(fuzz_prompt_keys, key)) {
            fuzz_count(v, &text, &extra);
        }
    }

    if (b->text_bytes != text || b->extra != extra) {
        abort();
    }
}


static void
fuzz_count(json_t *v, uint64_t *text, uint64_t *extra)
{
    size_t       i;
    json_t      *m;
    const char  *key;

    switch (json_typeof(v)) {

    case JSON_STRING:
        *text += json_string_length(v);
        break;

    case JSON_INTEGER:
        (*extra)++;
        break;

    case JSON_ARRAY:
        json_array_foreach(v, i, m) {
            fuzz_count(m, text, extra);
        }
        break;

    case JSON_OBJECT:
        json_object_foreach(v, key, m) {
            *text += strlen(key);           /* keys are prompt too */

            if (fuzz_in(fuzz_attachment_keys, key)) {
                *extra += AL_LLM_ATTACHMENT_TOKENS;

            } else {
                fuzz_count(m, text, extra);
            }
        }
        break;

    default:
        break;
    }
}


static int
fuzz_in(const char *const *list, const char *key)
{
    size_t  i;

    for (i = 0; list[i] != NULL; i++) {
        if (strcmp(list[i], key) == 0) {
            return 1;
        }
    }

    return 0;
}


static void
fuzz_field(const al_llm_body_t *b, const uint8_t *body,
    const al_llm_jfield_t *f, json_t *v)
{
    unsigned  t;
    json_t   *again;

    (void) b;

    if (v == NULL) {
        if (f->type != AL_LLM_JT_NONE) {
            abort();
        }
        return;
    }

    switch (json_typeof(v)) {
    case JSON_NULL: t = AL_LLM_JT_NULL; break;
    case JSON_FALSE: t = AL_LLM_JT_FALSE; break;
    case JSON_TRUE: t = AL_LLM_JT_TRUE; break;
    case JSON_INTEGER: t = AL_LLM_JT_INT; break;
    case JSON_REAL: t = AL_LLM_JT_REAL; break;
    case JSON_STRING: t = AL_LLM_JT_STRING; break;
    case JSON_ARRAY: t = AL_LLM_JT_ARRAY; break;
    default: t = AL_LLM_JT_OBJECT; break;
    }

    if (f->type != t
        || (t == AL_LLM_JT_INT && f->num != json_integer_value(v))
        || (t == AL_LLM_JT_STRING
            && (size_t) f->num != json_string_length(v)))
    {
        abort();
    }

    /* the span is the value's whole text */

    again = json_loadb((const char *) body + f->at, f->len,
                       JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    if (again == NULL || !json_equal(again, v)) {
        abort();
    }

    json_decref(again);
}


static void
fuzz_route(const al_llm_t *llm, const al_llm_client_t *lc,
    unsigned method, const uint8_t *s, size_t len)
{
    al_reason_t             r;
    static al_llm_route_t   rt;

    r = al_llm_route(llm, lc, method, (const char *) s, len, &rt);

    fuzz_detail(rt.detail, sizeof(rt.detail), r == AL_REASON_NONE);

    if (r == AL_REASON_NONE) {
        if (rt.endpoint == AL_LLM_EP_NONE
            || rt.uri_len != strlen(rt.uri)
            || strncmp(rt.uri, "/v1/", 4) != 0)
        {
            abort();
        }

    } else if (r != AL_REASON_PATH && r != AL_REASON_NO_ROUTE
               && r != AL_REASON_METHOD && r != AL_REASON_QUERY
               && r != AL_REASON_MODEL)
    {
        abort();
    }
}


static int
fuzz_same_field(const al_llm_jfield_t *a, const al_llm_jfield_t *b)
{
    /*
     * An absent member is its type alone (al_llm_body_clear() sets no
     * more); esc is set for strings only
     */

    if (a->type != b->type) {
        return 0;
    }

    return a->type == AL_LLM_JT_NONE
           || (a->at == b->at && a->len == b->len && a->num == b->num
               && (a->type != AL_LLM_JT_STRING || a->esc == b->esc));
}


/* the tools' families, and the first span of each */

static int
fuzz_same_tools(const al_llm_body_t *a, const al_llm_body_t *b)
{
    size_t  k;

    if (a->tools != b->tools) {
        return 0;
    }

    for (k = 0; k < AL_LLM_PT_MAX; k++) {
        if ((a->tools & (UINT32_C(1) << k))
            && (a->tool_at[k] != b->tool_at[k]
                || a->tool_len[k] != b->tool_len[k]))
        {
            return 0;
        }
    }

    return 1;
}


static void
fuzz_flat(const al_llm_scan_spec_t *spec, const uint8_t *body, size_t len)
{
    int             rc1, rc2;
    size_t          k, n;
    al_llm_body_t   a, b;
    char            d1[AL_DETAIL_MAX], d2[AL_DETAIL_MAX];

    rc1 = al_llm_json_scan(spec, body, len, &a, d1, sizeof(d1));
    rc2 = al_llm_json_scan_strict(spec, body, len, &b, d2, sizeof(d2));

    if (rc1 != rc2) {
        abort();
    }

    if (rc1 != 0) {
        if (strcmp(d1, d2) != 0) {
            abort();
        }
        return;
    }

    if (!fuzz_same_field(&a.root, &b.root)) {
        abort();
    }

    for (k = 0; k < AL_LLM_F_MAX; k++) {
        if (!fuzz_same_field(&a.f[k], &b.f[k])) {
            abort();
        }
    }

    if (a.root_last != b.root_last || a.root_members != b.root_members
        || a.so_last != b.so_last || a.so_members != b.so_members
        || a.jansson != b.jansson || a.text_bytes != b.text_bytes
        || a.extra != b.extra || a.model[0] != b.model[0]
        || !fuzz_same_tools(&a, &b))
    {
        abort();
    }

    if (spec->model >= 0 && a.f[spec->model].type == AL_LLM_JT_STRING) {
        n = (size_t) a.f[spec->model].num;
        n = n < sizeof(a.model) ? n : sizeof(a.model);

        if (memcmp(a.model, b.model, n) != 0) {
            abort();
        }
    }

    /* the request's own entry point is the same scan */

    if (spec == &fz_request_spec) {
        rc1 = al_llm_body_scan(body, len, &a, d1, sizeof(d1));

        if (rc1 != 0 || !fuzz_same_field(&a.root, &b.root)
            || a.root_last != b.root_last || a.root_members != b.root_members
            || a.so_last != b.so_last || a.so_members != b.so_members
            || a.jansson != b.jansson || a.text_bytes != b.text_bytes
            || a.extra != b.extra || !fuzz_same_tools(&a, &b))
        {
            abort();
        }

        for (k = 0; k < AL_LLM_F_MAX; k++) {
            if (!fuzz_same_field(&a.f[k], &b.f[k])) {
                abort();
            }
        }

        if (a.f[0].type == AL_LLM_JT_STRING) {
            n = (size_t) a.f[0].num;
            n = n < sizeof(a.model) ? n : sizeof(a.model);

            if (memcmp(a.model, b.model, n) != 0) {
                abort();
            }
        }
    }
}


static void
fuzz_response(al_llm_kind_t kind, al_llm_endpoint_t ep, const uint8_t *s,
    size_t len, size_t cut)
{
    int             rc1, rc2;
    size_t          i;
    al_llm_resp_t  *r;
    al_llm_usage_t  u1, u2;
    char            m1[AL_LLM_MODEL_MAX], m2[AL_LLM_MODEL_MAX];

    r = malloc(sizeof(al_llm_resp_t));
    if (r == NULL) {
        abort();
    }

    rc1 = al_llm_usage_parse(kind, ep, s, len, &u1, m1, sizeof(m1));

    al_llm_resp_init(r, kind, ep);
    al_llm_resp_feed(r, s, cut);
    al_llm_resp_feed(r, s + cut, len - cut);
    rc2 = al_llm_resp_usage(r, &u2, m2, sizeof(m2));

    if (rc1 != rc2 || memcmp(&u1, &u2, sizeof(u1)) != 0
        || strcmp(m1, m2) != 0)
    {
        abort();
    }

    if (len < 512) {
        al_llm_resp_init(r, kind, ep);
        for (i = 0; i < len; i++) {
            al_llm_resp_feed(r, s + i, 1);
        }
        rc2 = al_llm_resp_usage(r, &u2, m2, sizeof(m2));

        if (rc1 != rc2 || memcmp(&u1, &u2, sizeof(u1)) != 0
            || strcmp(m1, m2) != 0)
        {
            abort();
        }
    }

    free(r);
}


static void
fuzz_format(al_llm_kind_t kind, const uint8_t *s, size_t len)
{
    size_t           n, i;
    al_llm_record_t  rec;
    char             msg[300], buf[AL_LLM_RECORD_MAX];

    n = len < sizeof(msg) - 1 ? len : sizeof(msg) - 1;
    memcpy(msg, s, n);
    msg[n] = '\0';

    for (i = 0; i <= AL_LLM_ERR_AUTH; i++) {
        n = al_llm_error_body(kind, (al_llm_error_t) i, msg, msg, buf,
                              sizeof(buf));
        fuzz_valid_json(buf, n, sizeof(buf));
    }

    memset(&rec, 0, sizeof(rec));
    rec.time_ms = (int64_t) len * 1000003;
    rec.model.data = (const char *) s;
    rec.model.len = len;
    rec.client.data = msg;
    rec.client.len = strlen(msg);
    rec.provider = rec.client;
    rec.request_id = rec.model;
    rec.usage.prompt_tokens = len;
    rec.source = (al_llm_source_t) (len % 3);

    n = al_llm_record_format(&rec, buf, sizeof(buf));
    fuzz_valid_json(buf, n, sizeof(buf));
}


static void
fuzz_detail(const char *detail, size_t size, int allowed)
{
    size_t         i;
    unsigned char  c;

    for (i = 0; i < size && detail[i] != '\0'; i++) {
        c = (unsigned char) detail[i];
        if (c < 0x20 || c >= 0x7f) {
            abort();
        }
    }

    if (i == size || (allowed && i != 0) || (!allowed && i == 0)) {
        abort();
    }
}


static void
fuzz_valid_json(const char *buf, size_t n, size_t size)
{
    json_t        *j;
    json_error_t   err;

    if (n >= size || strlen(buf) != n) {
        abort();
    }

    j = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &err);
    if (j == NULL || !json_is_object(j)) {
        abort();
    }

    json_decref(j);
}


/*
 * 1 when a key the scanner must refuse is in root: one of the names read
 * in another case, at the top, in stream_options or in an element of
 * tools.
 */

static int
fuzz_case(json_t *root)
{
    size_t   i;
    json_t  *v, *e;

    /* the scan's members (fz_fields) and where the prompt is */
    static const char *const  top[] = {
        "messages", "prompt", "input", "instructions", "system",
        "functions", "response_format", "text", NULL
    };
    static const char *const  so[] = { "include_usage", NULL };
    static const char *const  tool[] = { "type", NULL };

    if (!json_is_object(root)) {
        return 0;
    }

    if (fuzz_case_in(root, fz_fields) || fuzz_case_in(root, top)) {
        return 1;
    }

    v = json_object_get(root, "stream_options");

    if (json_is_object(v) && fuzz_case_in(v, so)) {
        return 1;
    }

    v = json_object_get(root, "tools");

    json_array_foreach(v, i, e) {
        if (json_is_object(e) && fuzz_case_in(e, tool)) {
            return 1;
        }
    }

    return 0;
}


static int
fuzz_case_in(json_t *obj, const char *const *names)
{
    size_t       i, klen;
    json_t      *v;
    const char  *key;

    json_object_keylen_foreach(obj, key, klen, v) {
        (void) v;

        /* the scan's members from AL_LLM_F_LISTED on: not in case */

        for (i = 0;
             names[i] != NULL && (names != fz_fields || i < AL_LLM_F_LISTED);
             i++)
        {
            if (strcmp(key, names[i]) != 0
                && al_folds_to(key, klen, names[i], strlen(names[i])))
            {
                return 1;
            }
        }
    }

    return 0;
}
