/*
 * The LLM token gateway core (al_llm*.c).
 *
 * Clients call /v1/proxy/<name>/... exactly as they would call the
 * provider; the gateway decides the endpoint, checks and rewrites the JSON
 * body, swaps in the real key (the module does that part), and counts the
 * tokens on the way back, streaming included.  Everything here is plain C
 * over byte buffers: no nginx, no I/O, no clocks (callers pass "now"), no
 * global state.  Parsers are incremental and bounded, so the nginx filters
 * can feed them buffers as they arrive and never wait.
 *
 *   al_llm_route()          method + target after the prefix -> endpoint
 *                           and the upstream URI (al_llm.c)
 *   al_llm_request()        the JSON body: model allowlist, stream,
 *                           max tokens cap, stream_options.include_usage;
 *                           a rewritten body only when one is needed
 *   al_llm_resp_*()         usage from a non-streaming JSON response,
 *                           incremental (al_llm_usage.c)
 *   al_llm_sse_*()          usage from a text/event-stream response, and
 *                           the byte ranges to drop from it (al_llm_sse.c)
 *   al_llm_record_format()  the JSON usage log line
 *   al_llm_budget_*()       minute and day token windows (al_llm_budget.c)
 *   al_llm_admit()          every limit of a client at once: requests in
 *                           flight, requests per minute, tokens, dollars
 *   al_llm_cost*()          prices and costs in picodollars
 *   al_llm_error_body()     provider-native 4xx bodies
 *
 * Paths: the policy's upstream URL carries the API version
 * (https://api.openai.com/v1, https://api.anthropic.com/v1), so the part
 * after the prefix is "/chat/completions" or "/messages", never
 * "/v1/messages".  The upstream URI is the upstream's base path followed by
 * the re-encoded, normalized suffix.
 *
 * Nothing here ever sees the provider key, so no detail or error body can
 * carry it.  Client text that reaches a detail (a model name) is cut to a
 * few dozen bytes of printable ASCII.
 */

#ifndef AL_LLM_H
#define AL_LLM_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"


#define AL_LLM_MODEL_MAX        256     /* model name, with its NUL */
#define AL_LLM_EVENT_MAX        (1024 * 1024)  /* one SSE event, raw bytes */
#define AL_LLM_USAGE_MAX        4096    /* a captured "usage" value */
#define AL_LLM_RECORD_MAX       3584    /* always enough for a usage line */
#define AL_LLM_ERROR_MAX        2560    /* always enough for an error body */
#define AL_LLM_RECORD_STR_MAX   64      /* id, client, provider bytes kept */
#define AL_LLM_N_MAX            128     /* "n", choices per request */
#define AL_LLM_ATTACHMENT_TOKENS  1000  /* estimate for an image or file */
#define AL_LLM_COMPLETIONS_DEFAULT  16  /* legacy /completions max_tokens */
#define AL_LLM_MINUTE           60      /* budget windows, seconds */
#define AL_LLM_DAY              86400
#define AL_LLM_USD              UINT64_C(1000000000000)  /* picodollars */
#define AL_LLM_USD_MAX          32      /* "18446744.073709551615", NUL */


/* Endpoints (al_llm.c). */

typedef enum {
    AL_LLM_EP_NONE = 0,             /* not allowed */
    AL_LLM_EP_CHAT,                 /* POST /chat/completions */
    AL_LLM_EP_COMPLETIONS,          /* POST /completions */
    AL_LLM_EP_EMBEDDINGS,           /* POST /embeddings */
    AL_LLM_EP_RESPONSES,            /* POST /responses */
    AL_LLM_EP_MESSAGES,             /* POST /messages (Anthropic) */
    AL_LLM_EP_MODELS,               /* GET /models */
    AL_LLM_EP_MODEL                 /* GET /models/{id} */
} al_llm_endpoint_t;

/*
 * The table, per provider kind:
 *
 *   openai, openai-compatible   POST /chat/completions, /completions,
 *                               /embeddings, /responses;
 *                               GET /models, /models/{id}
 *   anthropic                   POST /messages (query: beta);
 *                               GET /models (query: limit, before_id,
 *                               after_id), /models/{id}
 *   azure                       POST /openai/deployments/{d}/chat/
 *                               completions, .../completions,
 *                               .../embeddings, /openai/responses
 *                               (query: api-version, replaced;
 *                               al_llm_alias.c)
 *
 * Everything else is refused: no files, batches, fine-tuning, assistants,
 * audio or images.  Only the listed query parameters pass, re-encoded.
 */

const char *al_llm_endpoint_name(al_llm_endpoint_t ep);

/* 1 for the endpoints that take a JSON body (al_llm_request()) */
int al_llm_endpoint_has_body(al_llm_endpoint_t ep);

/*
 * 1 when the first bytes of an answer's body (the first len, at most
 * AL_LLM_TEXT_PEEK) are text: printable ASCII, tab, CR, LF and UTF-8
 * sequences (a BOM is one), the last one possibly cut by the end of the
 * bytes.  0 otherwise: a compressed body (gzip 1f 8b, zstd 28 b5 2f fd,
 * zlib 78 9c and the like, xz, lz4 by their first bytes, brotli, raw
 * deflate or bzip2 by what follows, which is random), or any other
 * binary one (a NUL: UTF-16 and UTF-32 too).  Random bytes pass as
 * text by a chance of about one in 2^20 over 16 bytes.
 */
#define AL_LLM_TEXT_PEEK        16

int al_llm_body_text(const unsigned char *p, size_t len);

/*
 * Classifies a parsed suffix.  Returns the endpoint, or AL_LLM_EP_NONE with
 * *reason set: AL_REASON_NO_ROUTE when no endpoint has that path,
 * AL_REASON_METHOD when one does under another method.
 */
al_llm_endpoint_t al_llm_endpoint(al_llm_kind_t kind, unsigned method,
    const al_path_t *suffix, al_reason_t *reason);

typedef struct {
    al_reason_t          reason;        /* NONE = allowed so far */
    al_llm_endpoint_t    endpoint;
    char                 detail[AL_DETAIL_MAX];
    al_path_t            path;          /* the suffix, decoded */
    al_query_t           query;
    al_str_t             model;         /* GET /models/{id}: the id;
                                           azure: the deployment */
    al_str_t             alias;         /* azure: the alias the path
                                           named, or "" */
    char                 uri[AL_URI_MAX];   /* upstream path?query */
    size_t               uri_len;
} al_llm_route_t;

/*
 * Decides a request on an LLM prefix from its request line.  target is the
 * raw origin-form target with the prefix removed ("/chat/completions",
 * "/models?limit=5").  The path goes through al_target_parse(), so the
 * same refusals as for named routes apply (AL_REASON_PATH); then the
 * endpoint table (NO_ROUTE, METHOD), the query allowlist (QUERY) and, for
 * GET /models/{id}, the client's model list (al_llm_model_listed(): a
 * model it may use or an alias of one; lc may be NULL for the provider's
 * list): an id not on it is MODEL, answered as not found
 * (al_llm_error_from_route()).  Returns rt->reason.
 */
al_reason_t al_llm_route(const al_llm_t *llm, const al_llm_client_t *lc,
    unsigned method, const char *target, size_t len, al_llm_route_t *rt);

/* the client's entry in llm->clients, or NULL */
const al_llm_client_t *al_llm_find_client(const al_llm_t *llm,
    const al_client_t *client);

/*
 * The output cap a request that names none gets, and is reserved for:
 * lc->default_max_tokens, else lc->max_tokens, else
 * AL_LLM_DEFAULT_MAX_TOKENS when lc has a token budget, else 0 (none).
 */
uint64_t al_llm_default_max_tokens(const al_llm_client_t *lc);

/* lc->cap_member[], from its limits: once they are all set */
void al_llm_client_caps(al_llm_client_t *lc);

/* model allowlist: lc->models when lc has any, else llm->models */
int al_llm_model_allowed(const al_llm_t *llm, const al_llm_client_t *lc,
    const char *model, size_t len);


/*
 * The request body (al_llm.c).
 *
 * Read in one strict pass that builds no tree (al_llm_body_scan(): what
 * al_json_check() refuses is refused, duplicate keys compared unescaped),
 * bounded by llm->body_max, and must be an object with a string "model"
 * in the allowlist.  "stream" must be a boolean (or null).
 *
 * Output caps, when the client has max_tokens:
 *   chat         max_completion_tokens and max_tokens, each clamped or
 *                refused; when neither is sent, max_completion_tokens
 *                (openai) or max_tokens (openai-compatible: Ollama and
 *                older vLLM only know that one) is added with the cap
 *   completions  max_tokens; absent means the API's default of 16, so the
 *                cap is added only when it is below 16
 *   responses    max_output_tokens; added when absent
 *   messages     max_tokens, which Anthropic requires: absent is refused
 *                even without a cap, with Anthropic's own wording
 *   embeddings   nothing to cap
 * "The cap" added to a request that names none is
 * al_llm_default_max_tokens(), which may be set without max_tokens.
 * A null value counts as absent.  Values must be positive integers.
 * lc->clamp rewrites a value over the cap to the cap; otherwise the
 * request is refused (AL_REASON_BODY).
 *
 * Usage in streams: for OpenAI-style chat and completions with stream
 * true and llm->include_usage, stream_options.include_usage is set to
 * true.  When the client had not set it itself, hide_usage says so and the
 * SSE parser drops the usage-only chunk the client did not ask for.
 *
 * A rewrite splices the body: a value over the cap is replaced by the
 * cap, a null by the cap or by {"include_usage":true}, a false
 * include_usage by true, and a member that is absent is added at the end
 * of its object ("," and the member after the last value).  Every other
 * byte is kept, so numbers, spacing and key order stay the client's.
 * body is NULL when nothing was rewritten: the original bytes are
 * forwarded untouched.
 *
 * model_at and model_raw_len locate the "model" value in the original
 * body as raw JSON, its quotes included: replacing those bytes with
 * another JSON string names another model.  body_model_at is where the
 * same bytes are in body when it was rewritten (no splice touches them).
 */

/*
 * A Responses request's ids of stored state, as the body scan found them
 * (al_llm_state.c): where the id's bytes are in the original body, the
 * body al_llm_request() read (no splice touches them: the rewritten body
 * carries the same bytes), and what names it.  len 0: named, but by no
 * id that could be bound (not a string, escaped, of other than printable
 * ASCII, or longer than AL_LLM_STATE_ID_MAX): refused as an unknown id.
 */

#define AL_LLM_STATE_REFS       64      /* ids a body scan keeps */
#define AL_LLM_STATE_PREV       SIZE_MAX    /* index: previous_response_id */

typedef struct {
    size_t           at;                /* the id, between its quotes */
    size_t           len;
    size_t           index;             /* the element of "input", or
                                           AL_LLM_STATE_PREV */
} al_llm_state_id_t;

typedef struct {
    al_reason_t      reason;            /* NONE, BODY, BODY_TOO_LARGE,
                                           MODEL */
    char             detail[AL_DETAIL_MAX];     /* C strings: bytes */
    char             model[AL_LLM_MODEL_MAX];   /* after the NUL unset */
    size_t           model_len;         /* this and all after: zeroed */
    unsigned         stream:1;
    unsigned         client_usage:1;    /* client set include_usage */
    unsigned         hide_usage:1;      /* we set it: hide the chunk */
    unsigned         clamped:1;         /* a value was lowered to the cap */
    unsigned         capped:1;          /* the cap was added */
    unsigned         body_theirs:1;     /* body from the caller's alloc */
    unsigned         cache_control:1;   /* the body names cache_control:
                                           input may be written to a
                                           prompt cache */
    unsigned         state_read:1;      /* responses: state[] holds every
                                           id of stored state the body
                                           names; 0: read them apart
                                           (al_llm_state_request()) */
    uint64_t         max_output;        /* output tokens the request may
                                           produce (cap x n); 0: unknown */
    uint64_t         prompt_estimate;   /* input tokens, roughly */
    uint64_t         prompt_text;       /* bytes of text it counted */
    char            *body;              /* rewritten (malloc, or the
                                           caller's alloc), or NULL */
    size_t           body_len;
    size_t           model_at;          /* "model" value in the original */
    size_t           model_raw_len;     /* quotes included */
    size_t           body_model_at;     /* the same bytes in body */
    size_t           nstate;            /* under state_read */

    /* not zeroed: the first nstate are set */
    al_llm_state_id_t  state[AL_LLM_STATE_REFS + 1];    /* the previous
                                           response first, then the ids of
                                           "input" in the body's order */
} al_llm_req_t;

/*
 * ctype is the request's Content-Type (NULL: not checked); it must be
 * application/json, with no charset but utf-8 (al_media_type_check()).
 * Returns req->reason.  Call al_llm_request_free() in every case.
 *
 * al_llm_request_with() takes the rewritten body from alloc(data, size)
 * instead of malloc(): a caller with a memory pool (nginx's request pool)
 * gets the bytes it sends in place, with no copy and no free.  NULL from
 * alloc refuses the request as out of memory.  al_llm_request_free()
 * leaves such a body to its owner.  alias is the alias the client named
 * (al_llm_model_map()'s, or an Azure path's; NULL or "" for none): the
 * checks that look at the model the call falls back to find it by that
 * alias, as the fallback does (al_llm_fallback_model()).
 */
typedef void *(*al_llm_alloc_pt)(void *data, size_t size);

al_reason_t al_llm_request(const al_llm_t *llm, const al_llm_client_t *lc,
    al_llm_endpoint_t ep, const char *ctype, size_t ctype_len,
    const unsigned char *body, size_t len, al_llm_req_t *req);
al_reason_t al_llm_request_with(const al_llm_t *llm,
    const al_llm_client_t *lc, al_llm_endpoint_t ep, const al_str_t *alias,
    const char *ctype, size_t ctype_len, const unsigned char *body,
    size_t len, al_llm_alloc_pt alloc, void *data, al_llm_req_t *req);
void al_llm_request_free(al_llm_req_t *req);

/* what a budget pre-check should reserve: prompt estimate + max_output */
uint64_t al_llm_request_need(const al_llm_req_t *req);

/*
 * The most input tokens a prompt can be, from al_llm_req_t's
 * prompt_estimate and prompt_text: its text at a token a byte (a text
 * token is at least one), what the estimate counts apart (an image, a
 * file, a token id) as the estimate counts it.  The charge of a prompt
 * no count came for where the client could have kept it from coming (a
 * stream cut, unread, or ended without its usage): computed then only.
 */
uint64_t al_llm_prompt_bound(uint64_t estimate, uint64_t text);


/*
 * Tools the provider runs itself (al_llm.c).  A request's top-level
 * "tools" may ask the provider to search or fetch the web, connect to a
 * remote MCP server, run code, and so on: the provider then reaches out
 * on the client's behalf, past the gateway, which would undo the boxing
 * of a client that has no other way out.  So every element of "tools"
 * must be a tool the client runs (a type of "function" or "custom", or
 * on messages no "type" at all, as Anthropic's own tools have: elsewhere
 * a router reads such an element as a tool the provider runs, LiteLLM
 * {"googleSearch": {}} and {"urlContext": {}} as Gemini's; a "function"
 * or "custom" element, and one of no "type", must have a "function",
 * "custom" or "name" member, as LiteLLM drops "type" and reads {"type":
 * "function", "googleSearch": {}} as Gemini's too), or a tool of
 * a family the entry's provider_tools allows; so must a hosted tool
 * "tool_choice" names, and the tools of an "allowed_tools" choice
 * (al_llm.c has the types that pass); "web_search_options" (chat) counts
 * as web_search, a top-level "mcp_servers" (Anthropic) as mcp and a
 * top-level "data_sources" (Azure On Your Data: the provider queries the
 * search service the request names) as data_sources, each unless null;
 * an image, file or document of the prompt given by a URL the provider
 * downloads (al_llm_req_urls()) as url_input; a file, container,
 * skill or prompt the account stores, named by its id
 * (al_llm_req_stored(), al_llm_req_stored_prompt()), as stored_files;
 * the network a code_interpreter's or hosted shell's container may reach
 * (its "network_policy", al_llm_req_network()) as web_fetch.
 * Anything else is refused (AL_REASON_BODY): a type of no family, a
 * "type" that is no string, an element that is no object, "tools" that
 * is no list (null passes).
 *
 * A type is of family F when it is F, or F followed by '_' and more:
 * web_search covers web_search, web_search_preview and
 * web_search_20250305.  The names are those of al_llm_tool_names[], in
 * the order of AL_LLM_PT_*; tests/unit/llm.c and docs/policy.md list
 * what each covers.
 */

enum {
    AL_LLM_PT_WEB_SEARCH = 0,
    AL_LLM_PT_WEB_FETCH,
    AL_LLM_PT_MCP,
    AL_LLM_PT_CODE_EXECUTION,
    AL_LLM_PT_CODE_INTERPRETER,
    AL_LLM_PT_FILE_SEARCH,
    AL_LLM_PT_IMAGE_GENERATION,
    AL_LLM_PT_TOOL_SEARCH,
    AL_LLM_PT_COMPUTER,
    AL_LLM_PT_BASH,
    AL_LLM_PT_TEXT_EDITOR,
    AL_LLM_PT_MEMORY,
    AL_LLM_PT_SHELL,
    AL_LLM_PT_LOCAL_SHELL,
    AL_LLM_PT_APPLY_PATCH,
    AL_LLM_PT_DATA_SOURCES,
    AL_LLM_PT_URL_INPUT,
    AL_LLM_PT_STORED_FILES,
    AL_LLM_PT_NAMED,                    /* the families with a name */
    AL_LLM_PT_UNKNOWN = AL_LLM_PT_NAMED, /* a type of no family */
    AL_LLM_PT_NOT_OBJECT,               /* an element that is no object */
    AL_LLM_PT_UNTYPED,                  /* an object of no "type" */
    AL_LLM_PT_UNNAMED,                  /* of a type the client runs, with
                                           no "function", "custom" or
                                           "name" */
    AL_LLM_PT_ANONYMOUS,                /* of no "type", with none of
                                           those either */
    AL_LLM_PT_MAX
};

/* by AL_LLM_PT_*, AL_LLM_PT_NAMED of them, then NULL */
extern const char *const  al_llm_tool_names[];

/*
 * The family of a tool type (len bytes, unescaped): AL_LLM_PT_* below
 * AL_LLM_PT_NAMED, AL_LLM_PT_UNKNOWN for a type of no family, or -1 for
 * the types of tools the client runs ("function", "custom").
 */
int al_llm_tool_family(const char *type, size_t len);

/*
 * The endpoints (1 << al_llm_endpoint_t) where the top-level request
 * member name may be sent without an entry's allow_members: all five
 * for a member the gateway reads itself (its checks decide) but the
 * thinking members of other servers (al_llm_members_think()), else those
 * where a provider documents it (al_llm_scan.c has the list); 0: none.
 */
unsigned al_llm_member_eps(const char *name, size_t len);

/*
 * The thinking members of other servers the n names of an entry's
 * allow_members list, a bit each, lowest first: "thinking_budget",
 * "thinking_token_budget", "thinking_budget_tokens",
 * "chat_template_kwargs", "nvext" and "enable_thinking" (compared
 * exactly).  The policy's loader keeps it in al_llm_t's think_members;
 * a request to an entry of none is not read for them (where they are
 * sent, they are refused as members no list has).
 */
unsigned al_llm_members_think(const al_str_t *members, size_t n);

/*
 * NULL when name may be listed in an llm entry's allow_members, else why
 * not: the gateway refuses it for cause (a model list, a URL, headers),
 * reads and checks it itself, or it differs from such a name only by
 * case; empty, or longer than 48 bytes.
 */
const char *al_llm_member_refused(const char *name, size_t len);


/* the AL_LLM_PT_* of a family name, or -1 */
int al_llm_tool_name(const char *name, size_t len);


/*
 * Azure OpenAI and model aliases (al_llm_alias.c).
 *
 * al_llm_azure_route() is al_llm_route() for an azure entry, on the
 * parsed path: the endpoint, the deployment (an alias resolved, checked
 * against the allowlist: rt->model, rt->alias), and the query replaced by
 * the policy's api-version (a client's api-version is dropped, any other
 * parameter refused).
 *
 * al_llm_model_locate() finds the top-level "model" member of a JSON
 * object body: 1 with [*at, *at + *raw_len) its string value, quotes
 * included; 0 when there is none (*at: just after the '{'); 2 when its
 * value is not a string; -1 when the body is not an object it can read.
 *
 * al_llm_model_splice() writes body with that range replaced by model as
 * a JSON string (raw_len 0: a "model" member inserted at at) into a
 * malloc'ed buffer.  Returns 0 or -1 (no memory, a bad range).
 *
 * al_llm_model_map() is what the gateway calls before al_llm_request():
 * with force (azure deployment paths: the deployment) the body's model
 * becomes force, added when absent; otherwise a model naming one of the
 * entry's aliases becomes the alias's model, and m->alias says which
 * alias was asked for.  Only a plain string value (printable ASCII, no
 * escapes) is replaced: a body the strict check would refuse stays one.
 * m->body is NULL when the body stays as it is; free() it.  Returns 0;
 * 1 with force when "model" is a string that is not plain (the call must
 * be refused: the check would read another model than the one served);
 * -1 when memory ran out.
 */

typedef struct {
    char             alias[AL_LLM_MODEL_MAX];   /* "" when none */
    size_t           alias_len;
    unsigned char   *body;              /* malloc'ed, or NULL */
    size_t           body_len;
} al_llm_map_t;

const al_llm_alias_t *al_llm_alias_find(const al_llm_t *llm,
    const char *name, size_t len);
al_reason_t al_llm_azure_route(const al_llm_t *llm,
    const al_llm_client_t *lc, unsigned method, al_llm_route_t *rt);
int al_llm_model_locate(const unsigned char *body, size_t len, size_t *at,
    size_t *raw_len);
int al_llm_model_splice(const unsigned char *body, size_t len, size_t at,
    size_t raw_len, const char *model, size_t mlen, unsigned char **out,
    size_t *out_len);
/* the refusal al_llm_model_map()'s 1 means, as the gateway and explain say */
#define AL_LLM_MAP_ESCAPED                                                    \
    "\"model\" on a deployment path must be written without escapes"

int al_llm_model_map(const al_llm_t *llm, const al_str_t *force,
    const unsigned char *body, size_t len, al_llm_map_t *m);

/*
 * GET /models is answered by the gateway, from the policy: the provider
 * is not asked, so the list names no model the client may not use (other
 * entries', other clients', an account's fine-tuned ones) and nothing of
 * the account (OpenAI's "owned_by": "org-...").  al_llm_model_list()
 * writes the answer: the models lc may use (lc->models, else
 * llm->models), in the policy's order, then the entry's aliases whose
 * model lc may use, in the provider's format:
 *
 *   openai, openai-compatible   {"object":"list","data":[{"id":ID,
 *                               "object":"model","created":0,
 *                               "owned_by":"airlock"},...]}
 *   anthropic                   {"data":[{"type":"model","id":ID,
 *                               "display_name":ID,"created_at":
 *                               "1970-01-01T00:00:00Z"},...],
 *                               "has_more":B,"first_id":ID,"last_id":ID}
 *
 * (created, owned_by, display_name and created_at stand in for what the
 * policy does not know).  Anthropic's pages follow page: at most limit
 * ids (0: AL_LLM_PAGE_DEFAULT), after after_id or before before_id; an
 * id that is not listed gives an empty page; first_id and last_id are
 * null on an empty page.  Returns the length the answer needs, without
 * its NUL, as snprintf does: out (size bytes, may be NULL when size is
 * 0) holds it when that is below size.
 */

#define AL_LLM_PAGE_DEFAULT     20      /* Anthropic's default limit */
#define AL_LLM_PAGE_MAX         1000    /* and its largest */

typedef struct {
    uint64_t         limit;             /* 0: AL_LLM_PAGE_DEFAULT */
    al_str_t         after_id;          /* len 0: none */
    al_str_t         before_id;
} al_llm_page_t;

size_t al_llm_model_list(const al_llm_t *llm, const al_llm_client_t *lc,
    const al_llm_page_t *page, char *out, size_t size);

/*
 * GET /models/{id} is answered from the same list: al_llm_model_listed()
 * says whether id is on lc's list (a model lc may use, or an alias of
 * one), in one pass over it, and al_llm_model_get() writes the one
 * object the list holds for it, in the provider's format, with the same
 * return as al_llm_model_list().  An id that is not listed is answered
 * 404, the provider's not-found error (AL_LLM_ERR_NOT_FOUND), the same
 * for a model no one may use and one another client may: the answer
 * tells nothing of the rest of the policy.
 */
int al_llm_model_listed(const al_llm_t *llm, const al_llm_client_t *lc,
    const char *id, size_t len);
size_t al_llm_model_get(const al_llm_t *llm, const al_str_t *id, char *out,
    size_t size);

/*
 * At load, once lc->models is set: lists in out (room for llm->naliases)
 * the aliases of llm whose model lc may use, in the policy's order, and
 * sets lc->aliases and lc->naliases to them, so that no request looks for
 * them again.  Returns how many.  A client never passed here lists no
 * alias.
 */
size_t al_llm_client_list(const al_llm_t *llm, al_llm_client_t *lc,
    const al_llm_alias_t **out);


/*
 * Fallback to entry b (llm->fallback) with lc, the client's entry in b.
 * al_llm_fallback_model(): the model b gets for a call that asked for
 * model (alias: the alias the client named, alen 0 for none): b's alias
 * of that name, else model itself; 0 when lc may use it, else -1.
 * al_llm_fallback_uri(): b's upstream path?query for endpoint ep and that
 * model (azure: the deployment path and b's api-version); -1 for an
 * endpoint b does not serve or a URI over size.
 */
int al_llm_fallback_model(const al_llm_t *b, const al_llm_client_t *lc,
    const char *model, size_t mlen, const char *alias, size_t alen,
    al_str_t *out);
int al_llm_fallback_uri(const al_llm_t *b, al_llm_endpoint_t ep,
    const al_str_t *model, char *out, size_t size, size_t *len);


/*
 * Usage, normalized across providers (al_llm_usage.c):
 *   prompt_tokens      every input token, cached ones included (Anthropic:
 *                      input_tokens + cache_read + cache_creation)
 *   completion_tokens  output (OpenAI completion_tokens, Responses and
 *                      Anthropic output_tokens; 0 for embeddings)
 *   cached_tokens      input read from the prompt cache
 *   cache_write_tokens input written to the cache (Anthropic), all of
 *                      it: cache_creation_input_tokens, or the sum of
 *                      its 5-minute and 1-hour parts when that is more
 *   cache_write_1h_tokens  the part of it written for an hour (Anthropic's
 *                      cache_creation.ephemeral_1h_input_tokens)
 *   total_tokens       the provider's total, else prompt + completion;
 *                      this is what budgets are charged
 */

typedef struct {
    uint64_t         prompt_tokens;
    uint64_t         completion_tokens;
    uint64_t         cached_tokens;
    uint64_t         cache_write_tokens;
    uint64_t         cache_write_1h_tokens;
    uint64_t         total_tokens;
} al_llm_usage_t;

typedef enum {
    AL_LLM_SOURCE_RESPONSE = 0,         /* a JSON response's "usage" */
    AL_LLM_SOURCE_STREAM,               /* a complete stream's usage */
    AL_LLM_SOURCE_ESTIMATED             /* anything less */
} al_llm_source_t;

const char *al_llm_source_name(al_llm_source_t source);


/*
 * A non-streaming JSON response, fed in pieces.  A small scanner follows
 * the top-level object only and captures the raw values of "usage" (up to
 * AL_LLM_USAGE_MAX bytes) and "model"; everything else streams past, so a
 * 100 MB embeddings response costs no memory.  The captures are parsed at
 * the end.  The struct is plain data: embed it, no free needed; init
 * writes its few state fields, not the capture buffers.
 *
 * A "usage" value is taken into the struct while it fits in
 * AL_LLM_USAGE_INLINE bytes (every provider's so far), which keeps the
 * struct small enough for a pool's block.  A longer one, up to
 * AL_LLM_USAGE_MAX, goes to AL_LLM_USAGE_MAX bytes from alloc(alloc_ctx,
 * size) (al_llm_alloc_pt, as for al_llm_request_with()), which the caller
 * may set after init.  A value longer than its buffer (AL_LLM_USAGE_MAX,
 * or the struct's own with no alloc or when it returns NULL) is read as
 * it comes by the usage reader (al_llm_uread_t), which reads a taken
 * value too: its counts are read all the same, whatever else a provider
 * puts in it.  The memory is asked for at most once and is the caller's
 * to free.
 */

#define AL_LLM_USAGE_INLINE     512
/*
 * The numbers read from a usage object: OpenAI's prompt, completion,
 * total, (details), cached; Anthropic's input, cache read, cache
 * creation, output, (cache_creation), its 5-minute and 1-hour parts.
 */
#define AL_LLM_USAGE_V          7

#define AL_LLM_UREAD_DEPTH      2048    /* jansson's: JSON_PARSER_MAX_DEPTH */
#define AL_LLM_UREAD_DIGITS     40      /* of a number written as text */

/*
 * The usage reader (al_llm_usage.c): a usage object read a byte at a time
 * as it comes, never buffered, validated as JSON (RFC 8259) and its counts
 * read the way a client's JSON reader reads them (the last member of a
 * name, escapes decoded).  Private.
 */
typedef struct {
    unsigned             state:4;
    unsigned             anthropic:1;
    unsigned             responses:1;
    unsigned             name:1;        /* the string is a member's name */
    unsigned             nest:1;        /* in the object whose members are
                                           read too */
    unsigned             esc:1;
    unsigned             hex:3;         /* \uXXXX digits to come */
    unsigned             u8:2;          /* UTF-8 bytes to come */
    unsigned             num:4;         /* where in a number */
    unsigned             real:1;        /* the number has '.' or 'e' */
    unsigned char        lo, hi;        /* the next UTF-8 byte's range */
    unsigned char        klen;          /* the name's bytes; past key: none
                                           read */
    int                  slot;          /* the member's value: v[slot] */
    int                  cur;           /* the value being read: v[cur] */
    unsigned             cp;
    unsigned             depth;
    const char          *lit;           /* the rest of true, false, null */
    uint64_t             iv;
    uint64_t             v[AL_LLM_USAGE_V];     /* integers */
    uint64_t             c[AL_LLM_USAGE_V];     /* decimals and strings */
    char                 key[32];
    uint64_t             stack[AL_LLM_UREAD_DEPTH / 64];  /* 1: object */

    struct {                            /* a value's text as a number */
        unsigned         bad:1;         /* no number */
        unsigned         any:1;
        unsigned         neg:1;
        unsigned         point:1;
        unsigned         digit:1;       /* a digit before the exponent */
        unsigned         exp:1;
        unsigned         esign:1;       /* the exponent may take a sign */
        unsigned         edigit:1;
        unsigned         eneg:1;
        unsigned         sticky:1;      /* digits not 0 past sig */
        unsigned char    nsig;
        int32_t          dexp;
        int32_t          e;
        char             sig[AL_LLM_UREAD_DIGITS];
    }                    t;
} al_llm_uread_t;

typedef struct {
    al_llm_kind_t        kind;
    al_llm_endpoint_t    endpoint;
    al_llm_alloc_pt      alloc;         /* NULL after init */
    void                *alloc_ctx;
    unsigned             no_model:1;    /* 0 after init; 1: the "model"
                                           is not taken, and
                                           al_llm_resp_usage() gives "" */

    /* private */
    unsigned             state;
    unsigned             depth;
    unsigned             in_str:1;
    unsigned             esc:1;
    unsigned             is_key:1;
    unsigned             key_over:1;
    unsigned             key_esc:1;     /* key holds a backslash */
    unsigned             cap_over:1;
    unsigned             quick:1;       /* quick_v is the usage value's */
    unsigned             filter:1;      /* the usage value is over its
                                           buffer: read as it comes, by
                                           reader */
    unsigned             capture;       /* 0, or which value */
    unsigned             key_cap;       /* what the last name takes */
    size_t               key_len;
    size_t               cap_len;       /* bytes of the value being taken */
    char                *usage;         /* usage_in, or from alloc */
    size_t               usage_size;
    size_t               usage_len;
    size_t               model_len;
    uint64_t             quick_v[AL_LLM_USAGE_V];  /* read where the
                                                     value lay */
    char                 key[32];       /* a name cut between pieces or
                                           escaped: "usage" with each
                                           letter a \uXXXX fits */
    char                 model[AL_LLM_MODEL_MAX + 8];

    union {
        char             usage_in[AL_LLM_USAGE_INLINE];
        al_llm_uread_t   reader;        /* once the value is over its
                                           buffer (filter), in its place */
    };
} al_llm_resp_t;

void al_llm_resp_init(al_llm_resp_t *r, al_llm_kind_t kind,
    al_llm_endpoint_t ep);
void al_llm_resp_feed(al_llm_resp_t *r, const unsigned char *p, size_t len);

/*
 * Returns 0 with *u filled when the response carried a usage object, -1
 * when not (an error body, a cut connection: estimate).  model (may be
 * NULL) gets the response's "model", or "" when there was none.
 */
int al_llm_resp_usage(const al_llm_resp_t *r, al_llm_usage_t *u,
    char *model, size_t model_size);

/* the same for a whole body at once */
int al_llm_usage_parse(al_llm_kind_t kind, al_llm_endpoint_t ep,
    const unsigned char *body, size_t len, al_llm_usage_t *u, char *model,
    size_t model_size);


/*
 * State the provider keeps for the account (al_llm_state.c).  A Responses
 * API request may name a stored response, "previous_response_id", and
 * the provider continues that conversation from what it stored; its
 * "input" may name stored items by their ids (an item_reference, or any
 * item that carries an "id": the provider reads that item from storage).
 * Every client of an entry shares its key, so the gateway binds each
 * response id, and each output item id, it sees a 2xx answer carry to the
 * client of that call (the module keeps the bindings in airlock_llm_zone)
 * and lets a request name only ids bound to its own client.  An id is
 * kept as printable ASCII without escapes, at most AL_LLM_STATE_ID_MAX
 * bytes.
 *
 * al_llm_request() keeps those ids as its body scan reads them (req's
 * state[], state_read; al_llm_state_collect()); al_llm_state_request()
 * reads them again, for a body it kept them not of, and for tests that
 * compare the two.
 *
 * al_llm_state_request() reads a Responses body that al_llm_request()
 * accepted: 0, with req->named 0 when it names no previous response
 * (none, or null) and 1 when it does, req->prev the id, or req->prev.len
 * 0 when the value is no id that could be bound (not a string, escaped,
 * too long): a request that names it is refused as one naming an unknown
 * id is; -1 when the body cannot be read (refuse it).
 * al_llm_state_item() then gives, one a call, the ids the elements of
 * "input" carry: its "id", and an mcp_approval_response's
 * "approval_request_id" (the id of the mcp_approval_request item it
 * answers; an element of neither, or null, names none): 1 with ref (len
 * 0 as above) and req->index the element's index (an element of both
 * gives two, of the same index), 0 after the last, -1 when the body
 * cannot be read.
 *
 * al_llm_state_resp_*() read a Responses answer as it arrives and give
 * the ids it binds, one at a time: a JSON body's top-level "id" and the
 * "id" of each element of its top-level "output"; in an event stream
 * (stream 1), of the events whose "type" begins "response.", the
 * "response.id" of the first that has one (response.created; the others
 * repeat it) and the "item.id" of each (response.output_item.added and
 * .done; the completed response's output repeats them).  feed() reads
 * up to len bytes and returns how many it read: when id_len is then not
 * 0, an id ended in them (id, of an output item when item is 1), and the
 * caller takes it before it feeds the rest; done: a JSON body ended,
 * nothing more is read.
 */

#define AL_LLM_STATE_ID_MAX     128

typedef struct {
    size_t           len;               /* 0: no id that could be bound */
    char             id[AL_LLM_STATE_ID_MAX + 1];
} al_llm_state_ref_t;

typedef struct {
    al_llm_state_ref_t  prev;           /* previous_response_id */
    unsigned         named;             /* it names one */
    size_t           index;             /* al_llm_state_item(): of the
                                           element */

    /* private */
    size_t           at;                /* in "input": the next element */
    size_t           end;               /* its closing bracket */
    size_t           next;              /* the next element's index */
    unsigned         more;              /* ref2 is given next */
    al_llm_state_ref_t  ref2;           /* the element's second id */
} al_llm_state_req_t;

int al_llm_state_request(const unsigned char *body, size_t len,
    al_llm_state_req_t *req);
int al_llm_state_item(al_llm_state_req_t *req, const unsigned char *body,
    al_llm_state_ref_t *ref);

#define AL_LLM_STATE_KEYS   4           /* depths whose keys are followed */

typedef struct {
    size_t           id_len;            /* 0: none in the bytes read */
    unsigned         item:1;            /* the id is an output item's */
    unsigned         done:1;            /* nothing more is read */

    /* private */
    unsigned         stream:1;
    unsigned         rid:1;             /* the response's id was given */
    unsigned         cr:1;
    unsigned         line:3;
    unsigned         in_str:1;
    unsigned         esc:1;
    unsigned         bad:1;
    unsigned         ended:1;           /* the document closed */
    unsigned         expect_key:1;
    unsigned         str:3;             /* what the open string is */
    unsigned         str_bad:1;
    unsigned         type_ok:1;
    unsigned         cand_item:1;       /* the candidate is an item's */
    unsigned         cand_two:1;        /* an event with two: none */
    uint32_t         depth;
    unsigned char    obj[AL_LLM_STATE_KEYS];    /* depth d an object */
    unsigned char    key[AL_LLM_STATE_KEYS];    /* the key of its value */
    size_t           field_len;
    size_t           str_len;
    size_t           cand_len;
    char             field[4];
    char             keybuf[8];
    char             cand[AL_LLM_STATE_ID_MAX];

    char             id[AL_LLM_STATE_ID_MAX + 1];     /* last */
} al_llm_state_resp_t;

void al_llm_state_resp_init(al_llm_state_resp_t *s, unsigned stream);
size_t al_llm_state_resp_feed(al_llm_state_resp_t *s, const unsigned char *p,
    size_t len);


/*
 * Streaming responses (al_llm_sse.c): an incremental text/event-stream
 * parser that extracts usage and says which bytes to drop.
 *
 * Bytes are grouped into blocks: a block is every byte from the end of the
 * previous block up to and including the blank line that ends it, so the
 * blocks of a stream are contiguous and cover it exactly.  A block holding
 * "data:" lines dispatches one event when it ends; comments (":..."),
 * "event:", "id:" and "retry:" lines belong to their block too.  Lines end
 * with LF, CRLF or CR (the CRLF pair may be split between slices; a block
 * ending in CR completes only once the next byte shows whether an LF
 * belongs to it).  Offsets are absolute: bytes since the stream began,
 * counted over every slice fed.
 *
 * What is read:
 *   openai chat, completions
 *                 "data: [DONE]" ends the stream; a chunk with "usage"
 *                 (an object) gives the usage; one whose "choices" is []
 *                 and has usage is the usage-only chunk, dropped when
 *                 hide_usage; choices[].delta and .text strings are
 *                 counted for estimates
 *   openai responses
 *                 response.completed / .incomplete / .failed end the
 *                 stream, response.usage gives the usage, "*.delta"
 *                 strings are counted
 *   anthropic     message_start: model and input usage (+ cache fields);
 *                 message_delta: usage.output_tokens, CUMULATIVE, so it
 *                 replaces (as do input and cache fields when present);
 *                 content_block_delta strings are counted; message_stop
 *                 ends the stream
 *
 * A block over AL_LLM_EVENT_MAX raw bytes stops the parser for good: the
 * usage becomes estimated, nothing more is dropped, and every byte from
 * then on is settled as soon as it is fed.
 *
 * The bytes must be the body as the provider sent it, without content
 * coding: the module asks the upstream for identity (no Accept-Encoding)
 * and treats a coded stream as unparsed (usage estimated).
 *
 * Driving it.  Without filtering (hide_usage 0) the caller passes every
 * buffer on unchanged and only calls al_llm_sse_observe() on it.  With
 * filtering, a block can be dropped only as a whole and only once its end
 * has been seen, so the caller holds back the bytes of the block still
 * open at the end of each slice (at most AL_LLM_EVENT_MAX + 1 bytes; SSE
 * clients act on an event only at its blank line, so holding it delays
 * nothing they could see).  With "pending" the offset of the first byte
 * not yet emitted or dropped, and "held" a copy of [pending, A) where A is
 * the offset of the slice p[0..len):
 *
 *     off = 0;
 *     while (off < len) {
 *         if (al_llm_sse_feed(s, p + off, len - off, &used, &blk) == 1
 *             && blk.drop)
 *         {
 *             emit [pending, blk.start);  -- held bytes first, then p
 *             pending = blk.end;          -- the held copy is done with
 *         }
 *         off += used;
 *     }
 *     settled = al_llm_sse_settled(s);
 *     emit [pending, settled); pending = settled;
 *     held = copy of [pending, A + len);  -- the open block only
 *
 * and at the end of the stream al_llm_sse_finish() (same drop handling for
 * the block it may complete) and emit the rest.  Every "emit" of a range
 * inside p is a pointer into p: complete events are never copied, only the
 * tail of an event that spans slices.  al_llm_sse_feed() may return a
 * block with *used == 0 (a CR-ended block learning that no LF follows);
 * the loop above handles that.
 */

typedef struct {
    uint64_t         start;             /* first byte, absolute */
    uint64_t         end;               /* one past the blank line */
    unsigned         drop:1;            /* remove it from the client stream */
    unsigned         event:1;           /* it dispatched an event */
} al_llm_sse_block_t;

/*
 * The scan of one event's data (al_llm_sse.c): where strings begin and
 * end, the nesting, the few keys the parser acts on.  Private.
 */
typedef struct {
    uint64_t         arrays;            /* bit d: level d is an array */
    uint64_t         count;             /* text bytes counted */
    unsigned         state;
    unsigned         depth;
    unsigned         expect;            /* key, value or neither next */
    unsigned         role;              /* of the open string */
    unsigned         key;               /* the last key read */
    unsigned         choices;           /* depths of containers, 0: none */
    unsigned         delta;
    unsigned         skip;
    unsigned         hex_left;
    unsigned         hex;
    unsigned         flags;
    uint32_t         key_len;           /* at most sizeof(key_buf) + 1 */
    uint32_t         type_len;          /* of a block's data: under 2^32 */
    char             key_buf[10];
    char             type[64];
    char             type_tail[6];
} al_llm_sse_scan_t;

/* the scan's state after the first at bytes of an event's data */
#define AL_LLM_SSE_POINTS  6

typedef struct {
    size_t             at;
    al_llm_sse_scan_t  scan;
} al_llm_sse_point_t;

typedef struct {
    /* results, valid at any time */
    al_llm_usage_t   usage;             /* as reported so far */
    char             model[AL_LLM_MODEL_MAX];
    uint64_t         delta_bytes;       /* generated text seen */
    uint64_t         events;
    uint64_t         dropped;           /* blocks dropped */
    uint64_t         parsed;            /* events read as JSON */
    uint64_t         jansson;           /* of those, read by jansson */
    unsigned         done:1;            /* the stream's end marker */
    unsigned         usage_seen:1;      /* final usage reported */
    unsigned         error:1;           /* an error event */
    unsigned         stopped:1;         /* an event was over the bound */
    unsigned         nomem:1;           /* ... or memory ran out */
    unsigned         unread:1;          /* an event's data was no JSON
                                           object: what it held is not
                                           known */

    /* private */
    unsigned         proto;
    unsigned         hide_usage:1;
    unsigned         cr:1;              /* last byte ended a line with CR */
    unsigned         cr_block:1;        /* a block ended with CR */
    unsigned         block_drop:1;
    unsigned         block_event:1;
    unsigned         event_over:1;
    unsigned         started:1;         /* Anthropic message_start */
    unsigned         usage_last:1;      /* chat: the usage came beside no
                                           choice (not a count so far) */
    unsigned         ended:1;           /* al_llm_sse_finish() ran */
    unsigned         parse_all:1;       /* tests: every event to jansson */
    unsigned         no_model:1;        /* model not wanted: no event is
                                           read in full only for it */
    unsigned         memo_try:1;        /* the scan records points */
    unsigned         memo_full:1;       /* the last point is in text */
    unsigned         tail_ok:1;         /* tail[] and tail_scan are set */
    unsigned         state;
    unsigned         target;
    uint64_t         offset;
    uint64_t         block_start;
    char             field[8];
    size_t           field_len;
    char             event_name[64];
    size_t           event_len;
    unsigned char    head[6];           /* the data's first bytes */
    size_t           data_total;        /* the data's length, joined */
    const unsigned char  *span;         /* its last piece, in the slice */
    size_t           span_len;
    unsigned char   *data;              /* the pieces before, copied */
    size_t           data_len;
    size_t           data_cap;
    size_t           data_lines;
    al_llm_sse_scan_t  scan;
    const unsigned char  *memo_p;       /* the data, while recording */
    size_t           memo_len;          /* bytes in memo */
    size_t           memo_points;
    size_t           memo_keep;         /* points kept when recording */
    size_t           memo_misses;       /* events in a row that shared no
                                           point with it */
    size_t           tail_len;          /* bytes in tail */
    uint64_t         tail_count;        /* text bytes the tail counts */
    uint64_t         in, cache_read, cache_write, out;
    uint64_t         write_5m, write_1h;  /* cache_creation's parts */

    /* last: al_llm_sse_init() does not clear them */
    al_llm_sse_point_t  memo_point[AL_LLM_SSE_POINTS];
    unsigned char    memo[256];         /* the start of an event's data */
    al_llm_sse_scan_t  tail_scan;       /* the state at the line's end */
    unsigned char    tail[64];          /* after the text, to the line's
                                           end */
} al_llm_sse_t;

/*
 * The parser for a response of endpoint ep from a provider of this kind;
 * hide_usage is al_llm_req_t.hide_usage.  Events are read where they lie
 * in the slice; the event buffer (at most AL_LLM_EVENT_MAX + 1 bytes) is
 * malloc'ed only for an event whose data spans slices or has several
 * lines: al_llm_sse_free() it.  Only events that can carry usage, the
 * end, an error or the model are parsed as JSON ("parsed" counts them),
 * by the strict one-pass scanner, or by jansson ("jansson" counts those)
 * when the scanner cannot tell what jansson would read; the text of the
 * others is counted by a scan of their bytes.  A caller that does not read
 * model sets no_model after this: the first event of a chat stream (and
 * Responses' response.created) is then only scanned.
 */
void al_llm_sse_init(al_llm_sse_t *s, al_llm_kind_t kind,
    al_llm_endpoint_t ep, unsigned hide_usage);
void al_llm_sse_free(al_llm_sse_t *s);

/*
 * Consumes p[0..len) up to and including the end of the next block.
 * Returns 1 when a block ended, with *blk filled and *used the bytes of p
 * consumed (possibly 0, see above); 0 when all len bytes were consumed
 * without a block ending.
 */
int al_llm_sse_feed(al_llm_sse_t *s, const unsigned char *p, size_t len,
    size_t *used, al_llm_sse_block_t *blk);

/*
 * al_llm_sse_feed() that returns 1 only for a block to drop: the blocks
 * kept pass without a return, so a caller that acts on dropped blocks
 * alone (the loop above) runs once a slice and once a dropped block.
 */
int al_llm_sse_feed_drops(al_llm_sse_t *s, const unsigned char *p,
    size_t len, size_t *used, al_llm_sse_block_t *blk);

/* feeds all of p, ignoring blocks: for callers that never drop */
void al_llm_sse_observe(al_llm_sse_t *s, const unsigned char *p,
    size_t len);

/* bytes before this offset can no longer be dropped */
uint64_t al_llm_sse_settled(const al_llm_sse_t *s);

/* bytes fed so far */
uint64_t al_llm_sse_offset(const al_llm_sse_t *s);

/*
 * End of the stream.  Returns 1 when a CR-ended block completes here,
 * with *blk filled; an unfinished block is not dispatched (as an SSE
 * client would not) and is settled.
 */
int al_llm_sse_finish(al_llm_sse_t *s, al_llm_sse_block_t *blk);

/*
 * The usage to record and charge.  STREAM when the end marker and the
 * final usage were both seen, the usage counts some token, and the
 * parser never stopped; otherwise
 * ESTIMATED with what was seen: reported numbers where there are some,
 * completion tokens at least delta_bytes / 4, and prompt tokens prompt
 * when no prompt count arrived (the gateway passes 0, and charges such a
 * prompt al_llm_prompt_bound(), computed then only); when the parser
 * stopped, or the final usage did not come and the stream was cut or
 * had an event that was no JSON object (unread), completion tokens at
 * least reserved (al_llm_req_t's max_output).
 */
al_llm_source_t al_llm_sse_result(const al_llm_sse_t *s, uint64_t prompt,
    uint64_t reserved, al_llm_usage_t *u);


/*
 * The usage log line (al_llm_usage.c), one JSON object, no newline:
 * {"time","request_id","client","provider","endpoint","model",
 *  ["alias",] ["fallback_from","fallback_status",] "prompt_tokens",
 *  "completion_tokens","cached_tokens",["cache_write_tokens",
 *  "cache_write_1h_tokens",] "total_tokens","status",
 *  "latency_ms","ttfb_ms","stream","usage_source","cost_usd"}
 * time is RFC 3339 UTC with milliseconds.  "model" is the model the
 * provider was asked for; "alias", only when the client asked for an
 * alias, is that alias.  After a fallback, "provider" is the entry that
 * served the call and "fallback_from" the one that failed first, with
 * the status it failed with.  cost_usd is a decimal number of dollars,
 * exact (al_llm_usd_format()), or null when the model has no price.
 * Strings are escaped; NUL and invalid UTF-8 become U+FFFD.  request_id,
 * client, provider and alias are cut to
 * AL_LLM_RECORD_STR_MAX bytes and model to AL_LLM_MODEL_MAX / 2, so the
 * line always fits AL_LLM_RECORD_MAX.  Returns the length of the line, as
 * snprintf does.
 */

/*
 * A usage line's time to the second, kept by the caller from one line to
 * the next (al_llm_record_t's clock): lines of the same second copy it.
 */
typedef struct {
    int64_t          sec;               /* Unix time, seconds, floored;
                                           AL_LLM_CLOCK_NONE: none yet */
    char             text[19];          /* 2026-12-01T15:04:05 */
} al_llm_clock_t;

#define AL_LLM_CLOCK_NONE  INT64_MIN

typedef struct {
    int64_t          time_ms;           /* Unix time, milliseconds */
    al_llm_clock_t  *clock;             /* NULL, or the caller's: read and
                                           set */
    al_str_t         request_id;
    al_str_t         client;
    al_str_t         provider;          /* the llm entry's name */
    al_str_t         model;
    al_str_t         alias;             /* "" when none */
    al_str_t         fallback_from;     /* the entry that failed, or "" */
    unsigned         fallback_status;   /* what it answered; 502: no
                                           connection */
    al_llm_endpoint_t  endpoint;        /* "endpoint": chat, responses... */
    al_llm_usage_t   usage;
    unsigned         status;
    uint64_t         latency_ms;
    uint64_t         ttfb_ms;
    unsigned         stream:1;
    al_llm_source_t  source;
    unsigned         priced:1;          /* "cost_usd": cost, else null */
    unsigned         names_plain:1;     /* client and provider are the
                                           policy's names (letters,
                                           digits, '-', '_', '.'; at most
                                           64): copied, no escape looked
                                           for */
    uint64_t         cost;              /* picodollars */
} al_llm_record_t;

size_t al_llm_record_format(const al_llm_record_t *rec, char *buf,
    size_t size);


/*
 * Token budgets (al_llm_budget.c): fixed windows, the current UTC minute
 * and the current UTC day, as one small plain struct the module keeps in
 * shared memory (under its mutex; these functions do not lock).  now is
 * Unix time in seconds.  A zero limit is unlimited.
 *
 * The module reserves what a request may use before sending it
 * (al_llm_budget_reserve() with al_llm_request_need()), so concurrent
 * requests cannot all pass one check, and settles the reservation with the
 * real usage at the end (al_llm_budget_settle()).
 */

typedef struct {
    int64_t          minute;            /* start of the minute window */
    uint64_t         minute_used;
    int64_t          day;               /* start of the UTC day */
    uint64_t         day_used;
    uint64_t         minute_requests;   /* admitted in the minute window */
    uint64_t         day_cost;          /* picodollars in the day window */
    int64_t          month;             /* start of the UTC month */
    uint64_t         month_cost;
    uint64_t         active;            /* admitted and not yet finished */
} al_llm_budget_t;

typedef struct {
    uint64_t         minute_limit;      /* 0: unlimited */
    uint64_t         minute_remaining;  /* UINT64_MAX when unlimited */
    unsigned         minute_reset;      /* seconds until the window rolls */
    uint64_t         day_limit;
    uint64_t         day_remaining;
    unsigned         day_reset;
    int64_t          minute_end;        /* when the windows roll, seconds */
    int64_t          day_end;           /* since the epoch */
    unsigned         retry_after;       /* seconds; 0 when allowed */
    unsigned         over_minute:1;     /* the minute window refused */
    unsigned         over_day:1;        /* the day window refused */
    unsigned         too_large:1;       /* need exceeds a whole window */

    /* al_llm_admit() only; costs in picodollars */
    uint64_t         requests_limit;    /* per minute; 0: unlimited */
    uint64_t         requests_remaining;
    unsigned         requests_reset;
    uint64_t         concurrent_limit;  /* 0: unlimited */
    uint64_t         concurrent_active; /* in flight, this one excluded */
    uint64_t         cost_day_limit;
    uint64_t         cost_day_remaining;
    uint64_t         cost_month_limit;
    uint64_t         cost_month_remaining;
    unsigned         month_reset;
    int64_t          month_end;
    uint64_t         cost_need;
    unsigned         over_concurrent:1;
    unsigned         over_requests:1;
    unsigned         over_cost_day:1;
    unsigned         over_cost_month:1;
    unsigned         cost_too_large:1;  /* cost need exceeds a budget */
    int64_t          at;                /* admitted: the time its
                                           reservation counts at, the
                                           at of al_llm_finish() */
} al_llm_quota_t;

/* starts new windows when now has left the current ones */
void al_llm_budget_roll(al_llm_budget_t *b, int64_t now);

/*
 * Rolls, then says whether need tokens fit both windows.  Returns 0 or -1;
 * q (may be NULL) gets the limits, what remains, the resets and, when
 * refused, retry_after: the wait until the refusing window rolls (the day
 * window when both refuse).  A need larger than a whole window can never
 * fit: too_large is set and retry_after is 0.
 */
int al_llm_budget_check(al_llm_budget_t *b, const al_llm_client_t *lc,
    int64_t now, uint64_t need, al_llm_quota_t *q);

/*
 * Seconds from now until the window of q that ends at end rolls, 1 to
 * unit: the reset as a response sent at now must say it, however long
 * the provider took since q was filled in.
 */
unsigned al_llm_quota_reset(int64_t end, int64_t unit, int64_t now);

/* check, and on success charge need at once */
int al_llm_budget_reserve(al_llm_budget_t *b, const al_llm_client_t *lc,
    int64_t now, uint64_t need, al_llm_quota_t *q);

/* adds tokens to both windows (saturating) */
void al_llm_budget_charge(al_llm_budget_t *b, int64_t now, uint64_t tokens);

/*
 * Replaces a reservation of `reserved` tokens made at `at` with the actual
 * usage: windows still current give back the reservation and take the
 * actual; windows that rolled since take the actual only.
 */
void al_llm_budget_settle(al_llm_budget_t *b, int64_t now, int64_t at,
    uint64_t reserved, uint64_t actual);

/* "token budget exhausted: ... retry in 23s", for error bodies and logs */
size_t al_llm_quota_message(const al_llm_quota_t *q, uint64_t need,
    char *buf, size_t size);


/*
 * Admission (al_llm_budget.c): every limit of lc in one step, under the
 * module's lock.  A request is admitted when all of these have room:
 *
 *   max_concurrent       requests admitted and not yet finished
 *   requests_per_minute  requests admitted in the current UTC minute
 *   tokens_per_minute,   need->tokens, as al_llm_budget_check()
 *   tokens_per_day
 *   cost_per_day,        need->cost picodollars, the worst case (the
 *   cost_per_month       input estimate and the output cap at their
 *                        prices) in the UTC day and the UTC month
 *
 * and then all of them are charged at once; refused, nothing is.  q
 * (may be NULL) gets every limit and what remains and, when refused,
 * retry_after: the longest wait among the refusing limits (1 second for
 * concurrency, which has no window; 0 when a need is larger than a whole
 * budget and can never fit).  Returns 0 or -1.
 *
 * al_llm_finish() ends an admitted request: it gives back its place in
 * flight (when slot), and replaces the reserved tokens and cost with the
 * actual ones as al_llm_budget_settle() does, at being q->at of its
 * admission: now, or, when a clock stepped back, a time in the windows
 * the reservation went to (they never move back).  It must run exactly
 * once per admitted request, whatever became of it.
 */

typedef struct {
    uint64_t         tokens;
    uint64_t         cost;              /* picodollars */
} al_llm_amount_t;

int al_llm_admit(al_llm_budget_t *b, const al_llm_client_t *lc,
    int64_t now, const al_llm_amount_t *need, al_llm_quota_t *q);
void al_llm_finish(al_llm_budget_t *b, int64_t now, int64_t at,
    const al_llm_amount_t *reserved, const al_llm_amount_t *actual,
    unsigned slot);

/* 1 when a budget holds nothing that time will not clear by now */
int al_llm_budget_idle(const al_llm_budget_t *b, int64_t now);

/* the start of the UTC month holding now; *end (may be NULL) its end */
int64_t al_llm_month_start(int64_t now, int64_t *end);

/* 1 when lc has any limit admission enforces */
int al_llm_client_limited(const al_llm_client_t *lc);

/* 1 when lc has a dollar budget */
int al_llm_client_priced(const al_llm_client_t *lc);

/*
 * Not 0 when an anthropic-beta header value (a comma-separated list)
 * names a beta billed above the policy's prices: AL_LLM_BETA_LONG for
 * the 1M-token context window ("context-1m-..."), whose long prompts
 * cost twice the input price and 1.5 times the output price (a model's
 * long_context prices count them); AL_LLM_BETA_OTHER for fast mode
 * ("fast-mode-..."), billed at several times the model's prices, and
 * for a value that is no plain list of beta names (letters, digits,
 * '-', '_', '.', ',', SP, HTAB), which a router behind an entry may
 * read otherwise.  Both may be set.
 */
#define AL_LLM_BETA_LONG   1
#define AL_LLM_BETA_OTHER  2

int al_llm_beta_priced(const char *v, size_t len);

/* the price of a model (exact name), or NULL */
const al_llm_price_t *al_llm_price(const al_llm_t *llm, const char *model,
    size_t len);

/*
 * The prices a call of input tokens pays: the model's long_context ones
 * when it has them and input is above their above_input_tokens, else its
 * own.  price may be NULL.
 */
const al_llm_price_t *al_llm_price_tier(const al_llm_price_t *price,
    uint64_t input);

/*
 * What a call costs, in picodollars, saturating: uncached input at the
 * input price, cached input (cached_tokens) at the cached price, input
 * written to a prompt cache at the cache_write price (the part written
 * for an hour at cache_write_1h), output at the output price; the
 * prices al_llm_price_tier() picks for its prompt_tokens.
 */
uint64_t al_llm_cost(const al_llm_price_t *price, const al_llm_usage_t *u);

/*
 * The worst case of a request: all output used, and all input at the
 * input price, or, when the request may write the prompt cache (cache:
 * al_llm_req_t's cache_control), at the highest of the input and
 * cache-write prices; the prices al_llm_price_tier() picks for four
 * times input (the prompt estimate counts four bytes a token, and a
 * token is at least a byte): a prompt that may be above a long_context
 * threshold is reserved at those prices.
 */
uint64_t al_llm_cost_need(const al_llm_price_t *price, int cache,
    uint64_t input, uint64_t output);

/*
 * A prompt the provider did not count (u->prompt_tokens is an estimate),
 * to be charged as al_llm_cost_need() reserved it: when the request may
 * write the prompt cache and a cache-write price is above the input
 * price, counted as written to the cache at the dearer of them.
 */
void al_llm_cost_guess(const al_llm_price_t *price, int cache,
    al_llm_usage_t *u);

/*
 * Picodollars as a decimal number of dollars, exact, without trailing
 * zeros ("0", "0.00015", "12.5").  Returns the length, as snprintf does;
 * AL_LLM_USD_MAX bytes always suffice.
 */
size_t al_llm_usd_format(uint64_t pico, char *buf, size_t size);

/*
 * The decimal digits of v, as "%llu" writes them, two at a time, the last
 * one just before end (20 bytes of room suffice).  Returns the first.
 */
char *al_llm_dec_back(char *end, uint64_t v);

/*
 * A non-negative decimal ("12", "0.15", "3.") into an integer in units of
 * 10^-scale (scale 0 to 12): "0.15" with scale 6 is 150000.  Refuses
 * signs, exponents, more fractional digits than scale (unless they are
 * zeros) and values over max.  Returns 0 or -1.
 */
int al_llm_decimal_parse(const char *s, size_t len, unsigned scale,
    uint64_t max, uint64_t *out);


/*
 * Error bodies in the provider's own format, so SDKs raise their usual
 * exceptions (al_llm_budget.c).
 *
 *                 status  openai type / code                 anthropic
 *   RATE_LIMIT    429     tokens / rate_limit_exceeded       rate_limit_error
 *   QUOTA         429     insufficient_quota / same          rate_limit_error
 *   MODEL         403     invalid_request_error /            permission_error
 *                         model_not_allowed, param "model"
 *   ENDPOINT      403     invalid_request_error /            permission_error
 *                         endpoint_not_allowed
 *   INVALID       400     invalid_request_error /            invalid_request_
 *                         invalid_request_body                 error
 *   TOO_LARGE     413     invalid_request_error /            request_too_large
 *                         request_too_large
 *   DENIED        403     permission_denied / same           permission_error
 *   AUTH          401     invalid_request_error /            authentication_
 *                         invalid_api_key                      error
 *   REQUESTS      429     requests / rate_limit_exceeded     rate_limit_error
 *   NOT_FOUND     404     invalid_request_error /            not_found_error
 *                         model_not_found, param "model"
 *   UNAVAILABLE   503     server_error /                     api_error
 *                         budget_unavailable
 *
 * OpenAI: {"error":{"message","type","param","code"}}; the request id is
 * appended to the message.  Anthropic: {"type":"error","error":{"type",
 * "message"},"request_id"}.  message NULL gives a default text.  The
 * message is cut to AL_DETAIL_MAX bytes and the request id to 64, so the
 * body always fits AL_LLM_ERROR_MAX.
 */

typedef enum {
    AL_LLM_ERR_RATE_LIMIT = 0,
    AL_LLM_ERR_QUOTA,
    AL_LLM_ERR_MODEL,
    AL_LLM_ERR_ENDPOINT,
    AL_LLM_ERR_INVALID,
    AL_LLM_ERR_TOO_LARGE,
    AL_LLM_ERR_DENIED,
    AL_LLM_ERR_AUTH,
    AL_LLM_ERR_REQUESTS,                /* request rate or concurrency */
    AL_LLM_ERR_NOT_FOUND,               /* GET models/{id}: not listed */
    AL_LLM_ERR_UNAVAILABLE              /* no room for the budget */
} al_llm_error_t;

/*
 * reason -> error; q decides REQUESTS (requests per minute, concurrency),
 * QUOTA (a day or month budget) or RATE_LIMIT for AL_REASON_BUDGET, and
 * AL_REASON_CLIENT_UNKNOWN (a key that names no client) is AUTH
 */
al_llm_error_t al_llm_error_from_reason(al_reason_t reason,
    const al_llm_quota_t *q);

/*
 * A route's refusal (al_llm_route()): as al_llm_error_from_reason(),
 * but an id of GET models/{id} that is not on the client's list is
 * NOT_FOUND, as the providers answer an id they do not have.
 */
al_llm_error_t al_llm_error_from_route(al_reason_t reason,
    al_llm_endpoint_t ep);
unsigned al_llm_error_status(al_llm_error_t err);

/* returns the length needed, as snprintf does */
size_t al_llm_error_body(al_llm_kind_t kind, al_llm_error_t err,
    const char *message, const char *request_id, char *buf, size_t size);


#endif /* AL_LLM_H */
