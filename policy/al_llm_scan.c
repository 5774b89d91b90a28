/*
 * LLM gateway: one strict pass over a request body.
 *
 * The scanner validates the whole document as strictly as al_json_check()
 * does (jansson with duplicate keys refused): JSON syntax, one value and
 * nothing after it, UTF-8, escapes (no \u0000, no lone surrogate), no
 * control character in a string, integers that fit in 64 bits, reals that
 * do not overflow, nesting of at most AL_JSON_DEPTH_MAX, and no key twice
 * in an object, compared after unescaping ("mo\u0064el" is "model").  It
 * builds no tree: it records where the members al_llm_request() reads
 * begin and end in the body, so a rewrite is a splice of a few byte
 * ranges, and it counts the prompt text for the estimate on the way.
 * It reads a little inside some of them: the type of each element of
 * "tools" (al_llm_scan_tool()), and the "type" of a "tool_choice"
 * object with its first key in another case (al_llm_scan_choice_key()).
 *
 * Duplicate keys are found by comparing each key with the keys before it
 * in the same object: its unescaped length, then a hash, then the bytes.
 * An object of more than AL_LLM_SCAN_KEYS keys stops that (it would be
 * quadratic) and asks the caller to run jansson's check over the body
 * instead.
 */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "al_internal.h"
#include "al_llm_internal.h"


#define AL_LLM_SCAN_KEYS   64           /* keys compared per object */
#define AL_LLM_SCAN_NAME   AL_LLM_MEMBER_MAX  /* longest member name we
                                                 look for */
#define AL_LLM_SCAN_STR(s)  { s, sizeof(s) - 1 }
#define AL_LLM_ONES        0x0101010101010101ull    /* a byte per byte */
#define AL_LLM_HIGHS       0x8080808080808080ull    /* their high bits */


#if defined __GNUC__
typedef signed char  al_llm_v16s_t __attribute__((vector_size(16)));
#endif

typedef struct {
    uint32_t             hash;
    unsigned             hashed;        /* hash is set */
    unsigned             esc;           /* has backslash escapes */
    size_t               at;            /* raw, between the quotes */
    size_t               len;
    size_t               dlen;          /* unescaped length */
} al_llm_key_t;

typedef struct {
    const unsigned char *p;
    size_t               len;
    size_t               pos;
    const al_llm_scan_spec_t  *spec;
    al_llm_body_t       *b;
    char                *detail;
    size_t               size;
    al_llm_key_t        *keys;          /* a stack: the open objects' keys */
    size_t               nkeys;
    size_t               nalloc;
    unsigned             ep;            /* request bodies: the endpoint's
                                           bit (AL_LLM_M_*), 0: members
                                           not checked */
    const al_llm_t      *llm;           /* its allow_members, or NULL */
    al_llm_key_t         kbuf[AL_LLM_SCAN_KEYS];
} al_llm_sc_t;

/* a string as scanned */
typedef struct {
    size_t               at;            /* raw, between the quotes */
    size_t               len;
    size_t               dlen;          /* unescaped length */
    uint32_t             hash;          /* of the unescaped bytes */
    unsigned             hashed;        /* hash is set (escapes, UTF-8:
                                           made as it was read) */
    unsigned             esc;
} al_llm_sstr_t;

/* where a value is and what the caller wants of it */
typedef struct {
    unsigned             kind;          /* AL_LLM_SK_* */
    unsigned             count;         /* prompt text: count it */
    char                *dst;           /* strings: unescape here */
    size_t               cap;
    al_llm_jfield_t     *field;         /* record here, or NULL */
} al_llm_sv_t;

/* an object or array al_llm_scan_flat() is in */
typedef struct {
    unsigned             obj;           /* an object, else an array */
    unsigned             kind;          /* AL_LLM_SK_* */
    unsigned             count;         /* prompt text: count it */
    unsigned             tracked;       /* its keys are compared */
    size_t               at;            /* its '{' or '[' */
    size_t               last;          /* after the last member's value,
                                           or after '{' */
    size_t               first;         /* its keys in sc->keys */
    size_t               members;
    al_llm_jfield_t     *field;         /* record it here, or NULL */
} al_llm_frame_t;

enum {
    AL_LLM_SK_OTHER = 0,
    AL_LLM_SK_ROOT,                     /* the body */
    AL_LLM_SK_SO,                       /* spec->nested */
    AL_LLM_SK_TOOLS,                    /* a request body's "tools" */
    AL_LLM_SK_TOOL,                     /* an element of it */
    AL_LLM_SK_CHOICE,                   /* its "tool_choice" */
    AL_LLM_SK_INPUT,                    /* a Responses body's "input" */
    AL_LLM_SK_ITEM                      /* an element of it */
};

#define al_llm_scan_is(name, lit)  (memcmp(name, lit, sizeof(lit) - 1) == 0)

/* what al_llm_scan_deep_key() finds: a key noted at any depth */
#define AL_LLM_DEEP_URL    1
#define AL_LLM_DEEP_AUDIO  2
#define AL_LLM_DEEP_REF    3            /* "audio": an audio answer's id */


static int al_llm_scan_run(const al_llm_scan_spec_t *spec,
    const al_llm_t *llm, unsigned ep, const unsigned char *p, size_t len,
    al_llm_body_t *b, char *detail, size_t size, unsigned flat);
static void al_llm_scan_clear(al_llm_body_t *b);
static int al_llm_scan_flat(al_llm_sc_t *sc);
static int al_llm_scan_value(al_llm_sc_t *sc, unsigned depth,
    al_llm_sv_t *sv);
static int al_llm_scan_object(al_llm_sc_t *sc, unsigned depth,
    al_llm_sv_t *sv);
static int al_llm_scan_array(al_llm_sc_t *sc, unsigned depth,
    al_llm_sv_t *sv);
static int al_llm_scan_string(al_llm_sc_t *sc, al_llm_sstr_t *s, char *dst,
    size_t cap, unsigned hash);
static int al_llm_scan_string_any(al_llm_sc_t *sc, al_llm_sstr_t *s,
    char *dst, size_t cap, unsigned hash);
static inline size_t al_llm_scan_plain(const unsigned char *p, size_t i,
    size_t len);
static int al_llm_scan_escape(al_llm_sc_t *sc, uint32_t *cp);
static int al_llm_scan_hex4(al_llm_sc_t *sc, uint32_t *v);
static uint32_t al_llm_scan_hexv(const unsigned char *s);
static int al_llm_scan_number(al_llm_sc_t *sc, al_llm_jfield_t *f);
static int al_llm_scan_key_dup(al_llm_sc_t *sc, size_t first,
    al_llm_sstr_t *s);
static int al_llm_scan_key_eq(const unsigned char *p, const al_llm_key_t *a,
    const al_llm_sstr_t *b);
static size_t al_llm_scan_unescape(const unsigned char *s, size_t len,
    char *dst);
static int al_llm_scan_field(const char *const *names, const char *name,
    size_t len);
static inline int al_llm_scan_name_is(const char *want, const char *name,
    size_t len);
static inline int al_llm_scan_in(const al_str_t *list, uint64_t lens,
    const char *name, size_t len);
static inline int al_llm_scan_request_key(const char *name, size_t n,
    unsigned *prompt);
static inline unsigned al_llm_scan_member(const char *name, size_t n);
static inline int al_llm_scan_eq(const char *a, const char *b, size_t n);
static void al_llm_scan_unlisted(al_llm_sc_t *sc, const al_llm_sstr_t *s,
    const char *name) __attribute__((cold));
static inline void al_llm_scan_ws(al_llm_sc_t *sc);
static inline int al_llm_scan_deep_key(const char *name, size_t n);
static inline void al_llm_scan_skip_ws(const unsigned char *p, size_t *pos,
    size_t len);
static inline int al_llm_scan_tool_self(const char *name, size_t n);
static inline unsigned al_llm_scan_element(al_llm_frame_t *fr);
static al_llm_jfield_t *al_llm_scan_state(al_llm_body_t *b, size_t index,
    const char *name, size_t n);
static void al_llm_scan_tool(al_llm_body_t *b, unsigned obj, size_t at,
    size_t len);
static const char *al_llm_scan_case(const al_llm_scan_spec_t *spec,
    unsigned kind, const char *name, size_t len);
static const char *al_llm_scan_folded(const char *const *names,
    size_t from, size_t to, const char *name, size_t len);
static char *al_llm_scan_choice(al_llm_body_t *b) __attribute__((cold));
static int al_llm_scan_choice_value(al_llm_sc_t *sc, size_t pos,
    unsigned depth) __attribute__((noinline));
static al_llm_jfield_t *al_llm_scan_choice_key(al_llm_body_t *b,
    const char *name, size_t len) __attribute__((cold));
static int al_llm_scan_case_fail(al_llm_sc_t *sc, const al_llm_sstr_t *s,
    unsigned kind, const char *name) __attribute__((cold));
static int al_llm_scan_fail(al_llm_sc_t *sc, const char *what)
    __attribute__((cold));


/*
 * The members of the body read by al_llm_request(), by AL_LLM_F_*; with
 * stream_options' and a tool's, the names a key must not be in another
 * case (al_llm_scan_case()), but for the ones from AL_LLM_F_LISTED on.
 * All lower case ASCII, at most 43 bytes folded
 * (mock_testing_content_policy_fallbacks): within AL_LLM_SCAN_NAME.
 */
static const char *const  al_llm_scan_fields[] = {
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

static const char *const  al_llm_scan_so[] = { "include_usage", NULL };

static const char *const  al_llm_scan_tool_names[] = { "type", NULL };

/* the keys of a "tool_choice" object al_llm_request() reads */
static const char *const  al_llm_scan_choice_names[] = {
    "type", "tools", "allowed_tools", NULL
};

_Static_assert(AL_LLM_SCAN_NAME <= AL_LLM_CHOICE_KEY,
               "a key the scan compares fits choice_key");

static const al_llm_scan_spec_t  al_llm_scan_request = {
    al_llm_scan_fields, AL_LLM_F_MODEL, AL_LLM_F_STREAM_OPTIONS,
    al_llm_scan_so, AL_LLM_F_INCLUDE_USAGE, 1, NULL, NULL
};

/*
 * Where prompt text lives, per API; the estimate reads only these.  Every
 * key of the body is looked up in one of these two lists, so they carry
 * their lengths: most keys are told apart by length alone.
 */
static const al_str_t  al_llm_scan_prompt[] = {
    AL_LLM_SCAN_STR("messages"), AL_LLM_SCAN_STR("prompt"),
    AL_LLM_SCAN_STR("input"), AL_LLM_SCAN_STR("instructions"),
    AL_LLM_SCAN_STR("system"), AL_LLM_SCAN_STR("tools"),
    AL_LLM_SCAN_STR("functions"), AL_LLM_SCAN_STR("response_format"),
    AL_LLM_SCAN_STR("text"), { NULL, 0 }
};

#define AL_LLM_LEN(n)  (UINT64_C(1) << (sizeof(n) - 1))

/* the lengths of the names of al_llm_scan_prompt[] */
#define AL_LLM_SCAN_PROMPT_LENS                                               \
    (AL_LLM_LEN("messages") | AL_LLM_LEN("prompt") | AL_LLM_LEN("input")     \
     | AL_LLM_LEN("instructions") | AL_LLM_LEN("system")                      \
     | AL_LLM_LEN("tools") | AL_LLM_LEN("functions")                          \
     | AL_LLM_LEN("response_format") | AL_LLM_LEN("text"))

/* values that are images, audio or files: a flat estimate each */
static const al_str_t  al_llm_scan_attachment[] = {
    AL_LLM_SCAN_STR("image_url"), AL_LLM_SCAN_STR("image"),
    AL_LLM_SCAN_STR("source"), AL_LLM_SCAN_STR("file"),
    AL_LLM_SCAN_STR("file_data"), AL_LLM_SCAN_STR("input_audio"),
    { NULL, 0 }
};

/* and of al_llm_scan_attachment[] */
#define AL_LLM_SCAN_ATTACHMENT_LENS                                           \
    (AL_LLM_LEN("image_url") | AL_LLM_LEN("image") | AL_LLM_LEN("source")    \
     | AL_LLM_LEN("file") | AL_LLM_LEN("file_data")                          \
     | AL_LLM_LEN("input_audio"))

/*
 * The top-level members a request body may have besides the ones the
 * gateway reads itself (al_llm_scan_fields[], which its checks accept or
 * refuse), by endpoint: the request parameters the providers document
 * (OpenAI's chat completions, completions, embeddings and responses,
 * Anthropic's messages, Azure's) and the sampling parameters of
 * OpenAI-compatible servers (top_k, min_p, repetition_penalty), none of
 * which can change the model, the URL, the key, the provider or the price
 * beyond what the gateway accounts.  Any other member is refused
 * (al_llm_scan_unlisted()) unless the entry's allow_members names it:
 * routers behind an entry read members of their own as another model, URL,
 * key or a dearer option (LiteLLM's custom_llm_provider,
 * aws_bedrock_runtime_endpoint, tags; OpenRouter's route), and a list of
 * what to refuse is never complete.  "metadata" is not here: LiteLLM
 * routes a call by its "tags".  Nor is the Responses API's
 * "conversation": it names a conversation the provider keeps for the
 * account, which no call through the gateway creates, so the gateway
 * cannot tell whose it is (a "previous_response_id" it can: see
 * al_llm_state.c).
 *
 * Sorted by length, then name; al_llm_scan_member_first[n] is the first
 * of length n or more (tests/unit/llm_scan.c checks both).
 */
const al_llm_member_t  al_llm_scan_members[] = {
    { AL_LLM_SCAN_STR("echo"), AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("seed"), AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("stop"), AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("text"), AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("user"),
      AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS | AL_LLM_M_EMBEDDINGS
      | AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("input"), AL_LLM_M_EMBEDDINGS | AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("min_p"), AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("store"), AL_LLM_M_CHAT | AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("top_k"),
      AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS | AL_LLM_M_MESSAGES },
    { AL_LLM_SCAN_STR("top_p"),
      AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS | AL_LLM_M_RESPONSES
      | AL_LLM_M_MESSAGES },
    { AL_LLM_SCAN_STR("suffix"), AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("system"), AL_LLM_M_MESSAGES },
    { AL_LLM_SCAN_STR("include"), AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("logprobs"), AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("messages"), AL_LLM_M_CHAT | AL_LLM_M_MESSAGES },
    { AL_LLM_SCAN_STR("container"), AL_LLM_M_MESSAGES },
    { AL_LLM_SCAN_STR("functions"), AL_LLM_M_CHAT },
    { AL_LLM_SCAN_STR("verbosity"), AL_LLM_M_CHAT },
    { AL_LLM_SCAN_STR("dimensions"), AL_LLM_M_EMBEDDINGS },
    { AL_LLM_SCAN_STR("logit_bias"), AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("truncation"), AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("temperature"),
      AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS | AL_LLM_M_RESPONSES
      | AL_LLM_M_MESSAGES },
    { AL_LLM_SCAN_STR("instructions"), AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("top_logprobs"), AL_LLM_M_CHAT | AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("cache_control"), AL_LLM_M_MESSAGES },
    { AL_LLM_SCAN_STR("function_call"), AL_LLM_M_CHAT },
    { AL_LLM_SCAN_STR("max_tool_calls"), AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("stop_sequences"), AL_LLM_M_MESSAGES },
    { AL_LLM_SCAN_STR("encoding_format"), AL_LLM_M_EMBEDDINGS },
    { AL_LLM_SCAN_STR("response_format"), AL_LLM_M_CHAT },
    { AL_LLM_SCAN_STR("presence_penalty"),
      AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("prompt_cache_key"),
      AL_LLM_M_CHAT | AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("reasoning_effort"), AL_LLM_M_CHAT },
    { AL_LLM_SCAN_STR("frequency_penalty"),
      AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("safety_identifier"),
      AL_LLM_M_CHAT | AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("repetition_penalty"),
      AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS },
    { AL_LLM_SCAN_STR("parallel_tool_calls"),
      AL_LLM_M_CHAT | AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("previous_response_id"), AL_LLM_M_RESPONSES },
    { AL_LLM_SCAN_STR("prompt_cache_retention"),
      AL_LLM_M_CHAT | AL_LLM_M_RESPONSES },
    { { NULL, 0 }, 0 }
};

const unsigned char  al_llm_scan_member_first[AL_LLM_MEMBER_LONGEST + 2] = {
    0, 0, 0, 0, 0, 5, 10, 12, 13, 15, 18, 21, 22, 24, 26, 28, 30, 33, 35,
    36, 37, 38, 38, 39
};

/* 1: a string byte that needs no look (printable ASCII, not " or \) */
const unsigned char  al_llm_json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
    /* 0x80 and up: 0 */
};


int
al_llm_body_scan(const unsigned char *p, size_t len, al_llm_body_t *b,
    char *detail, size_t size)
{
    return al_llm_json_scan(&al_llm_scan_request, p, len, b, detail, size);
}


int
al_llm_body_scan_ep(const al_llm_t *llm, al_llm_endpoint_t ep,
    const unsigned char *p, size_t len, al_llm_body_t *b, char *detail,
    size_t size)
{
    return al_llm_scan_run(&al_llm_scan_request, llm, AL_LLM_M(ep), p, len,
                           b, detail, size, 1);
}


int
al_llm_json_scan(const al_llm_scan_spec_t *spec, const unsigned char *p,
    size_t len, al_llm_body_t *b, char *detail, size_t size)
{
    return al_llm_scan_run(spec, NULL, 0, p, len, b, detail, size, 1);
}


int
al_llm_json_scan_strict(const al_llm_scan_spec_t *spec,
    const unsigned char *p, size_t len, al_llm_body_t *b, char *detail,
    size_t size)
{
    return al_llm_scan_run(spec, NULL, 0, p, len, b, detail, size, 0);
}


/*
 * All zero but model[], written as far as anyone reads it, and the tools'
 * spans, read only under their bits (al_llm_body_clear()).
 */

static void
al_llm_scan_clear(al_llm_body_t *b)
{
    al_llm_body_clear(b);
}


/*
 * flat: the loop first (al_llm_scan_flat()); the recursive scan reads
 * what it leaves, from the start.
 */

static int
al_llm_scan_run(const al_llm_scan_spec_t *spec, const al_llm_t *llm,
    unsigned ep, const unsigned char *p, size_t len, al_llm_body_t *b,
    char *detail, size_t size, unsigned flat)
{
    int          rc;
    size_t       start;
    al_llm_sc_t  sc;
    al_llm_sv_t  sv;

    al_llm_scan_clear(b);

    if (len == 0) {
        (void) snprintf(detail, size, "empty body");
        return -1;
    }

    sc.p = p;
    sc.len = len;
    sc.pos = 0;
    sc.spec = spec;
    sc.b = b;
    sc.detail = detail;
    sc.size = size;
    sc.keys = sc.kbuf;
    sc.nkeys = 0;
    sc.nalloc = AL_LLM_SCAN_KEYS;
    sc.ep = ep;
    sc.llm = llm;

    al_llm_scan_ws(&sc);

    if (flat) {
        start = sc.pos;

        if (al_llm_scan_flat(&sc) == 0) {
            al_llm_scan_ws(&sc);

            if (sc.pos == sc.len) {
                b->state_flat = 1;
                return 0;
            }
        }

        al_llm_scan_clear(b);
        sc.pos = start;
        sc.nkeys = 0;
    }

    sv.kind = AL_LLM_SK_ROOT;
    sv.count = 0;
    sv.dst = NULL;
    sv.cap = 0;
    sv.field = &b->root;

    rc = al_llm_scan_value(&sc, 0, &sv);

    if (rc == 0) {
        al_llm_scan_ws(&sc);

        if (sc.pos != sc.len) {
            rc = al_llm_scan_fail(&sc, "end of file expected");
        }
    }

    if (sc.keys != sc.kbuf) {
        free(sc.keys);
    }

    return rc;
}


/*
 * The scan without recursion: the same reads (strings, numbers, keys and
 * their duplicate check, the members recorded, the prompt counted) in one
 * loop, each open object or array a frame of a stack instead of a call.
 * 0 with b as al_llm_scan_value() fills it; 1 for anything it does not
 * finish (an error, a nesting at the bound, no memory), which the
 * recursive scan then reads from the start: refusals and their details
 * are always the recursive scan's.
 */

static int
al_llm_scan_flat(al_llm_sc_t *sc)
{
    int                   id, deep;
    size_t                i, j, n, len, nf, cap;
    unsigned              kind, count;
    al_llm_key_t         *k;
    al_llm_body_t        *b;
    al_llm_sstr_t         s;
    al_llm_jfield_t       f, *field;
    al_llm_frame_t       *fr, st[AL_JSON_DEPTH_MAX];
    const char           *name;
    char                 *dst;
    const unsigned char  *p;
    char                  nbuf[AL_LLM_SCAN_NAME];

    b = sc->b;
    p = sc->p;
    len = sc->len;
    i = sc->pos;
    nf = 0;
    fr = NULL;

    /* what the value about to be read is: the body */

    kind = AL_LLM_SK_ROOT;
    count = 0;
    dst = NULL;
    cap = 0;
    field = &b->root;

    for ( ;; ) {

        /* a value at p[i] */

        if (i >= len) {
            return 1;
        }

        f.at = i;
        f.num = 0;
        f.esc = 0;

        switch (p[i]) {

        case '{':
        case '[':
            if (nf == AL_JSON_DEPTH_MAX) {
                return 1;                       /* the bound: refused */
            }

            fr = &st[nf++];
            fr->obj = (p[i] == '{');
            fr->kind = kind;
            fr->count = count;
            fr->at = i;
            fr->field = field;

            i++;

            if (fr->obj) {
                if (kind == AL_LLM_SK_TOOL) {
                    b->tool.type = AL_LLM_JT_NONE;
                    b->tool_named = 0;
                }

                fr->last = i;
                fr->first = sc->nkeys;
                fr->members = 0;
                fr->tracked = 1;

                al_llm_scan_skip_ws(p, &i, len);

                if (i < len && p[i] == '}') {
                    i++;
                    goto close;
                }

                goto key;
            }

            fr->members = 0;

            al_llm_scan_skip_ws(p, &i, len);

            if (i < len && p[i] == ']') {
                i++;
                goto close;
            }

            kind = al_llm_scan_element(fr);
            dst = NULL;
            cap = 0;
            field = NULL;
            continue;

        case '"':
            j = al_llm_scan_plain(p, i + 1, len);

            if (j < len && p[j] == '"') {
                n = j - i - 1;

                if (dst != NULL) {
                    memcpy(dst, p + i + 1, n < cap ? n : cap);
                }

                i = j + 1;

            } else {
                sc->pos = i;

                if (al_llm_scan_string_any(sc, &s, dst, cap, 0) != 0) {
                    return 1;
                }

                i = sc->pos;
                n = s.dlen;
                f.esc = s.esc;
            }

            if (count) {
                b->text_bytes += n;
            }

            f.type = AL_LLM_JT_STRING;
            f.num = (int64_t) n;
            break;

        case 't':
            if (len - i < 4 || memcmp(p + i, "true", 4) != 0) {
                return 1;
            }

            f.type = AL_LLM_JT_TRUE;
            i += 4;
            break;

        case 'f':
            if (len - i < 5 || memcmp(p + i, "false", 5) != 0) {
                return 1;
            }

            f.type = AL_LLM_JT_FALSE;
            i += 5;
            break;

        case 'n':
            if (len - i < 4 || memcmp(p + i, "null", 4) != 0) {
                return 1;
            }

            f.type = AL_LLM_JT_NULL;
            i += 4;
            break;

        default:
            sc->pos = i;

            if (al_llm_scan_number(sc, &f) != 0) {
                return 1;
            }

            i = sc->pos;

            if (count && f.type == AL_LLM_JT_INT) {
                b->extra++;
            }
            break;
        }

        f.len = i - f.at;

        if (field != NULL) {
            *field = f;
        }

        if (kind == AL_LLM_SK_TOOL) {
            al_llm_scan_tool(b, 0, f.at, f.len);
        }

    next:

        /* after a value: the body's end, or the next member or element */

        if (nf == 0) {
            sc->pos = i;
            return 0;
        }

        fr = &st[nf - 1];

        if (fr->obj) {
            fr->last = i;
        }

        al_llm_scan_skip_ws(p, &i, len);

        if (i >= len) {
            return 1;
        }

        if (p[i] == ',') {
            i++;
            al_llm_scan_skip_ws(p, &i, len);

            if (fr->obj) {
                goto key;
            }

            kind = al_llm_scan_element(fr);
            count = fr->count;
            dst = NULL;
            cap = 0;
            field = NULL;
            continue;
        }

        if (p[i] != (fr->obj ? '}' : ']')) {
            return 1;
        }

        i++;

    close:

        /* the frame on top closed before p[i] */

        fr = &st[--nf];

        if (fr->obj) {
            sc->nkeys = fr->first;

            if (fr->kind == AL_LLM_SK_ROOT) {
                b->root_last = fr->last;
                b->root_members = fr->members;

            } else if (fr->kind == AL_LLM_SK_SO) {
                b->so_last = fr->last;
                b->so_members = fr->members;
            }
        }

        if (fr->field != NULL) {
            fr->field->type = fr->obj ? AL_LLM_JT_OBJECT : AL_LLM_JT_ARRAY;
            fr->field->esc = 0;
            fr->field->at = fr->at;
            fr->field->len = i - fr->at;
            fr->field->num = 0;
        }

        if (fr->kind == AL_LLM_SK_TOOL) {
            al_llm_scan_tool(b, fr->obj, fr->at, i - fr->at);
        }

        goto next;

    key:

        /* a member of the object on top: its name, ':', what it is */

        if (i >= len || p[i] != '"') {
            return 1;
        }

        j = al_llm_scan_plain(p, i + 1, len);

        if (j < len && p[j] == '"') {
            s.at = i + 1;
            s.len = j - i - 1;
            s.dlen = s.len;
            s.hash = 0;
            s.hashed = 0;
            s.esc = 0;
            i = j + 1;

        } else {
            sc->pos = i;

            if (al_llm_scan_string_any(sc, &s, NULL, 0, 1) != 0) {
                return 1;
            }

            i = sc->pos;
        }

        name = (const char *) p + s.at;

        if (s.esc && s.dlen <= sizeof(nbuf)) {
            (void) al_llm_scan_unescape(p + s.at, s.len, nbuf);
            name = nbuf;
        }

        if (fr->tracked && fr->members == AL_LLM_SCAN_KEYS) {
            fr->tracked = 0;
            b->jansson = 1;
            sc->nkeys = fr->first;
        }

        if (fr->tracked) {

            /* the full check only when a key of the same length is there */

            for (k = &sc->keys[fr->first]; k < &sc->keys[sc->nkeys]; k++) {
                if (k->dlen == s.dlen) {
                    if (al_llm_scan_key_dup(sc, fr->first, &s) != 0) {
                        return 1;
                    }

                    break;
                }
            }

            if (sc->nkeys == sc->nalloc) {
                return 1;
            }

            k = &sc->keys[sc->nkeys++];
            k->hash = s.hash;
            k->hashed = s.hashed;
            k->esc = s.esc;
            k->at = s.at;
            k->len = s.len;
            k->dlen = s.dlen;
        }

        fr->members++;

        /* a key of the prompt is prompt too: a schema's property names */

        if (fr->count) {
            b->text_bytes += s.dlen;
        }

        al_llm_scan_skip_ws(p, &i, len);

        if (i >= len || p[i] != ':') {
            return 1;
        }

        i++;
        al_llm_scan_skip_ws(p, &i, len);

        kind = AL_LLM_SK_OTHER;
        count = fr->count;
        dst = NULL;
        cap = 0;
        field = NULL;
        n = s.dlen;

        if (n == 13 && al_llm_scan_is(name, "cache_control")) {
            b->cache_control = 1;
        }

        if (fr->kind == AL_LLM_SK_TOOL && al_llm_scan_tool_self(name, n)) {
            b->tool_named = 1;
        }

        if (sc->spec->prompt) {
            deep = al_llm_scan_deep_key(name, n);

            if (deep != 0) {
                b->urls |= (deep == AL_LLM_DEEP_URL) ? AL_LLM_URLS_KEY : 0;
                b->urls |= (deep == AL_LLM_DEEP_REF
                            && fr->kind != AL_LLM_SK_ROOT)
                           ? AL_LLM_URLS_AUDIO : 0;
                b->audio |= (deep == AL_LLM_DEEP_AUDIO);
            }
        }

        if (fr->kind == AL_LLM_SK_ITEM) {

            /* its element of "input" opened after the last ',' of it */

            field = al_llm_scan_state(b, st[nf - 2].members - 1, name, n);
        }

        if (n > sizeof(nbuf)) {
            /* longer than any name looked for */

            if (fr->kind == AL_LLM_SK_ROOT && sc->ep != 0) {
                al_llm_scan_unlisted(sc, &s, NULL);
            }

        } else if (fr->kind == AL_LLM_SK_ROOT
                   && sc->spec == &al_llm_scan_request)
        {
            id = al_llm_scan_request_key(name, n, &count);

            if (id < 0 && al_llm_scan_case(sc->spec, fr->kind, name, n)
                          != NULL)
            {
                return 1;
            }

            if (id < 0 && sc->ep != 0
                && (al_llm_scan_member(name, n) & sc->ep) == 0)
            {
                al_llm_scan_unlisted(sc, &s, name);
            }

            /* Responses: the stored state it names (al_llm_state.c) */

            if (id < 0 && sc->ep == AL_LLM_M_RESPONSES) {
                if (n == 5 && al_llm_scan_is(name, "input")) {
                    kind = AL_LLM_SK_INPUT;

                } else if (n == 20
                           && al_llm_scan_is(name, "previous_response_id"))
                {
                    field = &b->state_prev;
                }
            }

            /* a container the account stores: al_llm_req_refs() reads */

            if (id < 0 && n == 9 && al_llm_scan_is(name, "container")) {
                b->urls |= AL_LLM_URLS_CONTAINER;
            }

            if (id >= 0) {
                field = &b->f[id];

                if (id == AL_LLM_F_MODEL) {
                    dst = b->model;
                    cap = sizeof(b->model);

                } else if (id == AL_LLM_F_STREAM_OPTIONS) {
                    kind = AL_LLM_SK_SO;

                } else if (id == AL_LLM_F_TOOLS) {
                    kind = AL_LLM_SK_TOOLS;

                } else if (id >= AL_LLM_F_LISTED && sc->ep != 0) {
                    al_llm_scan_unlisted(sc, &s, name);
                }
            }

            if (id == AL_LLM_F_TOOL_CHOICE) {

                /*
                 * read apart (al_llm_scan_choice_value()): a frame kind
                 * of its own here cost every body's keys instructions
                 */

                if (al_llm_scan_choice_value(sc, i, nf) != 0) {
                    return 1;
                }

                i = sc->pos;
                goto next;
            }

        } else if (fr->kind == AL_LLM_SK_ROOT) {
            id = al_llm_scan_field(sc->spec->names, name, n);

            if (id < 0 && al_llm_scan_case(sc->spec, fr->kind, name, n)
                          != NULL)
            {
                return 1;
            }

            if (id >= 0) {
                field = &b->f[id];

                if (id == sc->spec->model) {
                    dst = b->model;
                    cap = sizeof(b->model);

                } else if (id == sc->spec->nested) {
                    kind = AL_LLM_SK_SO;
                }
            }

            count = sc->spec->prompt
                    && al_llm_scan_in(al_llm_scan_prompt,
                                      AL_LLM_SCAN_PROMPT_LENS, name, n);

            if (id < 0 && sc->spec->prompt && n == 9
                && al_llm_scan_is(name, "container"))
            {
                b->urls |= AL_LLM_URLS_CONTAINER;
            }

            if (count && n == 5 && al_llm_scan_is(name, "tools")) {
                kind = AL_LLM_SK_TOOLS;
            }

        } else if (fr->kind == AL_LLM_SK_SO) {
            id = al_llm_scan_field(sc->spec->nested_names, name, n);

            if (id < 0 && al_llm_scan_case(sc->spec, fr->kind, name, n)
                          != NULL)
            {
                return 1;
            }

            if (id >= 0) {
                field = &b->f[sc->spec->nested_base + (size_t) id];
            }

        } else if (fr->kind == AL_LLM_SK_TOOL && n == 4
                   && al_llm_scan_is(name, "type"))
        {
            field = &b->tool;
            dst = b->tool_type;
            cap = sizeof(b->tool_type);

        } else if (fr->kind == AL_LLM_SK_TOOL
                   && al_llm_scan_case(sc->spec, fr->kind, name, n) != NULL)
        {
            return 1;

        } else if (fr->count
                   && al_llm_scan_in(al_llm_scan_attachment,
                                     AL_LLM_SCAN_ATTACHMENT_LENS, name, n))
        {
            b->extra += AL_LLM_ATTACHMENT_TOKENS;
            count = 0;
        }
    }
}


/*
 * What an element of the array fr is: of "tools", a tool; of a Responses
 * body's "input", an item, counted in members (its index is members - 1)
 */

static inline unsigned
al_llm_scan_element(al_llm_frame_t *fr)
{
    if (fr->kind == AL_LLM_SK_TOOLS) {
        return AL_LLM_SK_TOOL;
    }

    if (fr->kind == AL_LLM_SK_INPUT) {
        fr->members++;
        return AL_LLM_SK_ITEM;
    }

    return AL_LLM_SK_OTHER;
}


/*
 * A member of the element index of a Responses body's "input": where
 * to record its value when it names stored state, as al_llm_state_item()
 * reads them, "id" and "approval_request_id" (an element's "id" is kept
 * before its "approval_request_id", as that reader gives them; no key
 * is there twice), or NULL.  Past AL_LLM_STATE_REFS they are counted,
 * and the module reads them apart.
 */

static al_llm_jfield_t *
al_llm_scan_state(al_llm_body_t *b, size_t index, const char *name,
    size_t n)
{
    size_t  k;

    if (!(n == 2 && name[0] == 'i' && name[1] == 'd')
        && !(n == 19 && al_llm_scan_is(name, "approval_request_id")))
    {
        return NULL;
    }

    k = b->nstate++;

    if (k >= AL_LLM_STATE_REFS) {
        return NULL;
    }

    b->state_index[k] = index;

    if (n == 2 && k > 0 && b->state_index[k - 1] == index) {
        b->state[k] = b->state[k - 1];          /* its approval, read */
        return &b->state[k - 1];
    }

    return &b->state[k];
}


/*
 * The unescaped bytes of a string value the scanner accepted (raw, quotes
 * excluded) into dst, which has room for its unescaped length (at most
 * len); returns that length.
 */

static size_t
al_llm_scan_unescape(const unsigned char *s, size_t len, char *dst)
{
    size_t    i, n;
    uint32_t  cp, lo;

    n = 0;

    for (i = 0; i < len; i++) {

        if (s[i] != '\\') {
            dst[n++] = (char) s[i];
            continue;
        }

        i++;

        switch (s[i]) {
        case 'b': dst[n++] = '\b'; continue;
        case 'f': dst[n++] = '\f'; continue;
        case 'n': dst[n++] = '\n'; continue;
        case 'r': dst[n++] = '\r'; continue;
        case 't': dst[n++] = '\t'; continue;
        case 'u': break;
        default: dst[n++] = (char) s[i]; continue;
        }

        cp = al_llm_scan_hexv(s + i + 1);
        i += 4;

        if (cp >= 0xd800 && cp <= 0xdbff) {
            lo = al_llm_scan_hexv(s + i + 3);
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            i += 6;
        }

        if (cp < 0x80) {
            dst[n++] = (char) cp;

        } else if (cp < 0x800) {
            dst[n++] = (char) (0xc0 | (cp >> 6));
            dst[n++] = (char) (0x80 | (cp & 0x3f));

        } else if (cp < 0x10000) {
            dst[n++] = (char) (0xe0 | (cp >> 12));
            dst[n++] = (char) (0x80 | ((cp >> 6) & 0x3f));
            dst[n++] = (char) (0x80 | (cp & 0x3f));

        } else {
            dst[n++] = (char) (0xf0 | (cp >> 18));
            dst[n++] = (char) (0x80 | ((cp >> 12) & 0x3f));
            dst[n++] = (char) (0x80 | ((cp >> 6) & 0x3f));
            dst[n++] = (char) (0x80 | (cp & 0x3f));
        }
    }

    return n;
}


static int
al_llm_scan_value(al_llm_sc_t *sc, unsigned depth, al_llm_sv_t *sv)
{
    size_t            start, n;
    al_llm_sstr_t     s;
    al_llm_jfield_t   f;

    if (sc->pos >= sc->len) {
        return al_llm_scan_fail(sc, "premature end of input");
    }

    start = sc->pos;
    f.at = start;
    f.num = 0;

    switch (sc->p[sc->pos]) {

    case '{':
        f.type = AL_LLM_JT_OBJECT;

        if (sv->kind == AL_LLM_SK_TOOL) {
            sc->b->tool.type = AL_LLM_JT_NONE;
            sc->b->tool_named = 0;
        }

        if (al_llm_scan_object(sc, depth + 1, sv) != 0) {
            return -1;
        }
        break;

    case '[':
        f.type = AL_LLM_JT_ARRAY;
        if (al_llm_scan_array(sc, depth + 1, sv) != 0) {
            return -1;
        }
        break;

    case '"':
        f.type = AL_LLM_JT_STRING;
        if (al_llm_scan_string(sc, &s, sv->dst, sv->cap, 0) != 0) {
            return -1;
        }

        if (sv->count) {
            sc->b->text_bytes += s.dlen;
        }

        f.num = (int64_t) s.dlen;
        f.esc = s.esc;
        break;

    case 't':
    case 'f':
    case 'n':
        if (sc->p[sc->pos] == 't') {
            f.type = AL_LLM_JT_TRUE;
            n = 4;

        } else if (sc->p[sc->pos] == 'f') {
            f.type = AL_LLM_JT_FALSE;
            n = 5;

        } else {
            f.type = AL_LLM_JT_NULL;
            n = 4;
        }

        if (sc->len - sc->pos < n
            || memcmp(sc->p + sc->pos,
                      f.type == AL_LLM_JT_TRUE ? "true"
                      : f.type == AL_LLM_JT_FALSE ? "false" : "null", n)
               != 0)
        {
            return al_llm_scan_fail(sc, "invalid token");
        }

        sc->pos += n;
        break;

    default:
        if (al_llm_scan_number(sc, &f) != 0) {
            return -1;
        }

        if (sv->count && f.type == AL_LLM_JT_INT) {
            sc->b->extra++;
        }
        break;
    }

    f.len = sc->pos - start;

    if (sv->field != NULL) {
        *sv->field = f;
    }

    if (sv->kind == AL_LLM_SK_TOOL) {
        al_llm_scan_tool(sc->b, f.type == AL_LLM_JT_OBJECT, start, f.len);
    }

    return 0;
}


static int
al_llm_scan_object(al_llm_sc_t *sc, unsigned depth, al_llm_sv_t *sv)
{
    int               id, deep;
    size_t            first, nmembers, last;
    unsigned          tracked;
    al_llm_sv_t       child;
    al_llm_sstr_t     s;
    al_llm_key_t     *k;
    al_llm_body_t    *b;
    const char       *name;
    char              nbuf[AL_LLM_SCAN_NAME];

    if (depth > AL_JSON_DEPTH_MAX) {
        return al_llm_scan_fail(sc, NULL);
    }

    b = sc->b;
    sc->pos++;                          /* '{' */
    last = sc->pos;
    first = sc->nkeys;
    nmembers = 0;
    tracked = 1;

    al_llm_scan_ws(sc);

    if (sc->pos < sc->len && sc->p[sc->pos] == '}') {
        sc->pos++;
        goto done;
    }

    for ( ;; ) {

        if (sc->pos >= sc->len || sc->p[sc->pos] != '"') {
            return al_llm_scan_fail(sc, "string or '}' expected");
        }

        if (al_llm_scan_string(sc, &s, NULL, 0, 1) != 0) {
            return -1;
        }

        /*
         * The name as compared with the names looked for: the raw bytes
         * when the key has no escapes (most do), else its unescaped
         * bytes, which matter only when short enough to be one of them.
         */

        name = (const char *) sc->p + s.at;

        if (s.esc && s.dlen <= sizeof(nbuf)) {
            (void) al_llm_scan_unescape(sc->p + s.at, s.len, nbuf);
            name = nbuf;
        }

        /* duplicate keys, compared unescaped */

        if (tracked && nmembers == AL_LLM_SCAN_KEYS) {
            tracked = 0;
            b->jansson = 1;
            sc->nkeys = first;
        }

        if (tracked) {
            if (al_llm_scan_key_dup(sc, first, &s) != 0) {
                return -1;
            }

            if (sc->nkeys == sc->nalloc) {
                k = malloc(2 * sc->nalloc * sizeof(al_llm_key_t));
                if (k == NULL) {
                    return al_llm_scan_fail(sc, "out of memory");
                }

                memcpy(k, sc->keys, sc->nkeys * sizeof(al_llm_key_t));

                if (sc->keys != sc->kbuf) {
                    free(sc->keys);
                }

                sc->keys = k;
                sc->nalloc *= 2;
            }

            k = &sc->keys[sc->nkeys++];
            k->hash = s.hash;
            k->hashed = s.hashed;
            k->esc = s.esc;
            k->at = s.at;
            k->len = s.len;
            k->dlen = s.dlen;
        }

        nmembers++;

        /* a key of the prompt is prompt too: a schema's property names */

        if (sv->count) {
            b->text_bytes += s.dlen;
        }

        al_llm_scan_ws(sc);

        if (sc->pos >= sc->len || sc->p[sc->pos] != ':') {
            return al_llm_scan_fail(sc, "':' expected");
        }

        sc->pos++;
        al_llm_scan_ws(sc);

        /* as the scan without recursion reads it, at any depth */

        if (s.dlen == 13 && al_llm_scan_is(name, "cache_control")) {
            b->cache_control = 1;
        }

        if (sv->kind == AL_LLM_SK_TOOL && al_llm_scan_tool_self(name, s.dlen))
        {
            b->tool_named = 1;
        }

        if (sc->spec->prompt) {
            deep = al_llm_scan_deep_key(name, s.dlen);

            if (deep != 0) {
                b->urls |= (deep == AL_LLM_DEEP_URL) ? AL_LLM_URLS_KEY : 0;
                b->urls |= (deep == AL_LLM_DEEP_REF
                            && sv->kind != AL_LLM_SK_ROOT)
                           ? AL_LLM_URLS_AUDIO : 0;
                b->audio |= (deep == AL_LLM_DEEP_AUDIO);
            }
        }

        /* what this member is to al_llm_request() */

        child.kind = AL_LLM_SK_OTHER;
        child.count = sv->count;
        child.dst = NULL;
        child.cap = 0;
        child.field = NULL;

        if (s.dlen > sizeof(nbuf)) {
            /* longer than any name looked for */

            if (sv->kind == AL_LLM_SK_ROOT && sc->ep != 0) {
                al_llm_scan_unlisted(sc, &s, NULL);
            }

        } else if (sv->kind == AL_LLM_SK_ROOT) {
            id = al_llm_scan_field(sc->spec->names, name, s.dlen);

            if (id < 0
                && al_llm_scan_case(sc->spec, sv->kind, name, s.dlen)
                   != NULL)
            {
                return al_llm_scan_case_fail(sc, &s, sv->kind, name);
            }

            if (id < 0 && sc->ep != 0
                && (al_llm_scan_member(name, s.dlen) & sc->ep) == 0)
            {
                al_llm_scan_unlisted(sc, &s, name);
            }

            if (id < 0 && sc->spec->prompt && s.dlen == 9
                && al_llm_scan_is(name, "container"))
            {
                b->urls |= AL_LLM_URLS_CONTAINER;
            }

            if (id >= 0) {
                child.field = &b->f[id];

                if (id == sc->spec->model) {
                    child.dst = b->model;
                    child.cap = sizeof(b->model);

                } else if (id == sc->spec->nested) {
                    child.kind = AL_LLM_SK_SO;

                } else if (id == AL_LLM_F_TOOL_CHOICE
                           && sc->spec == &al_llm_scan_request)
                {
                    child.kind = AL_LLM_SK_CHOICE;
                    child.dst = al_llm_scan_choice(b);
                    child.cap = AL_LLM_CHOICE_TYPE;

                } else if (id >= AL_LLM_F_LISTED && sc->ep != 0) {
                    al_llm_scan_unlisted(sc, &s, name);
                }
            }

            child.count = sc->spec->prompt
                          && al_llm_scan_in(al_llm_scan_prompt,
                                            AL_LLM_SCAN_PROMPT_LENS, name,
                                            s.dlen);

            if (child.count && s.dlen == 5 && al_llm_scan_is(name, "tools"))
            {
                child.kind = AL_LLM_SK_TOOLS;
            }

        } else if (sv->kind == AL_LLM_SK_SO) {
            id = al_llm_scan_field(sc->spec->nested_names, name, s.dlen);

            if (id < 0
                && al_llm_scan_case(sc->spec, sv->kind, name, s.dlen)
                   != NULL)
            {
                return al_llm_scan_case_fail(sc, &s, sv->kind, name);
            }

            if (id >= 0) {
                child.field = &b->f[sc->spec->nested_base + (size_t) id];
            }

        } else if (sv->kind == AL_LLM_SK_TOOL && s.dlen == 4
                   && al_llm_scan_is(name, "type"))
        {
            child.field = &b->tool;
            child.dst = b->tool_type;
            child.cap = sizeof(b->tool_type);

        } else if (sv->kind == AL_LLM_SK_TOOL
                   && al_llm_scan_case(sc->spec, sv->kind, name, s.dlen)
                      != NULL)
        {
            return al_llm_scan_case_fail(sc, &s, sv->kind, name);

        } else if (sv->kind == AL_LLM_SK_CHOICE) {
            child.field = al_llm_scan_choice_key(b, name, s.dlen);
            child.dst = (child.field != NULL) ? b->choice_type : NULL;
            child.cap = AL_LLM_CHOICE_TYPE;

        } else if (sv->count
                   && al_llm_scan_in(al_llm_scan_attachment,
                                     AL_LLM_SCAN_ATTACHMENT_LENS, name,
                                     s.dlen))
        {
            b->extra += AL_LLM_ATTACHMENT_TOKENS;
            child.count = 0;
        }

        if (al_llm_scan_value(sc, depth, &child) != 0) {
            return -1;
        }

        last = sc->pos;

        al_llm_scan_ws(sc);

        if (sc->pos < sc->len && sc->p[sc->pos] == ',') {
            sc->pos++;
            al_llm_scan_ws(sc);
            continue;
        }

        if (sc->pos < sc->len && sc->p[sc->pos] == '}') {
            sc->pos++;
            break;
        }

        return al_llm_scan_fail(sc, "',' or '}' expected");
    }

done:

    sc->nkeys = first;                  /* this object's keys are done */

    if (sv->kind == AL_LLM_SK_ROOT) {
        b->root_last = last;
        b->root_members = nmembers;

    } else if (sv->kind == AL_LLM_SK_SO) {
        b->so_last = last;
        b->so_members = nmembers;
    }

    return 0;
}


static int
al_llm_scan_array(al_llm_sc_t *sc, unsigned depth, al_llm_sv_t *sv)
{
    al_llm_sv_t  child;

    if (depth > AL_JSON_DEPTH_MAX) {
        return al_llm_scan_fail(sc, NULL);
    }

    sc->pos++;                          /* '[' */

    child.kind = (sv->kind == AL_LLM_SK_TOOLS) ? AL_LLM_SK_TOOL
                                               : AL_LLM_SK_OTHER;
    child.count = sv->count;
    child.dst = NULL;
    child.cap = 0;
    child.field = NULL;

    al_llm_scan_ws(sc);

    if (sc->pos < sc->len && sc->p[sc->pos] == ']') {
        sc->pos++;
        return 0;
    }

    for ( ;; ) {
        if (al_llm_scan_value(sc, depth, &child) != 0) {
            return -1;
        }

        al_llm_scan_ws(sc);

        if (sc->pos < sc->len && sc->p[sc->pos] == ',') {
            sc->pos++;
            al_llm_scan_ws(sc);
            continue;
        }

        if (sc->pos < sc->len && sc->p[sc->pos] == ']') {
            sc->pos++;
            return 0;
        }

        return al_llm_scan_fail(sc, "',' or ']' expected");
    }
}


/*
 * A string at sc->pos (the opening quote).  When dst is not NULL the
 * unescaped bytes go there (at most cap); s->dlen is the whole unescaped
 * length either way.  With hash (keys: the duplicate check) a string with
 * escapes is hashed as it is unescaped; one without is hashed only if the
 * check needs it (al_llm_scan_key_dup()), from its raw bytes.
 *
 * Most strings are printable ASCII to the closing quote: they are done
 * here, in a function small enough to cost little per string.  Anything
 * else (an escape, UTF-8, an error) is read again from the start by
 * al_llm_scan_string_any().
 */

static int
al_llm_scan_string(al_llm_sc_t *sc, al_llm_sstr_t *s, char *dst,
    size_t cap, unsigned hash)
{
    size_t                 i, j, n;
    const unsigned char   *p;

    p = sc->p;
    i = sc->pos + 1;
    j = al_llm_scan_plain(p, i, sc->len);

    if (j == sc->len || p[j] != '"') {
        return al_llm_scan_string_any(sc, s, dst, cap, hash);
    }

    n = j - i;

    if (dst != NULL) {
        memcpy(dst, p + i, n < cap ? n : cap);
    }

    s->at = i;
    s->len = n;
    s->dlen = n;
    s->hash = 0;
    s->hashed = 0;
    s->esc = 0;

    sc->pos = j + 1;

    return 0;
}


static int
al_llm_scan_string_any(al_llm_sc_t *sc, al_llm_sstr_t *s, char *dst,
    size_t cap, unsigned hash)
{
    size_t          i, j, k, n, len, start;
    uint32_t        cp, h;
    unsigned char   c, u[4];
    const unsigned char   *p;

    p = sc->p;
    len = sc->len;
    i = sc->pos + 1;
    start = i;
    n = 0;
    h = 2166136261u;
    s->esc = 0;

    for ( ;; ) {

        /* the common case: a run of printable ASCII, then what it needs */

        j = al_llm_scan_plain(p, i, len);

        if (dst != NULL && n < cap) {
            memcpy(dst + n, p + i, (j - i < cap - n) ? j - i : cap - n);
        }

        if (hash) {
            for (k = i; k < j; k++) {
                h = (h ^ p[k]) * 16777619u;
            }
        }

        n += j - i;
        i = j;

        if (i >= len) {
            sc->pos = i;
            return al_llm_scan_fail(sc, "premature end of input");
        }

        c = p[i];

        if (c == '"') {
            break;
        }

        if (c < 0x20) {
            sc->pos = i;
            return al_llm_scan_fail(sc, "control character in a string");
        }

        if (c == '\\') {
            sc->pos = i;
            if (al_llm_scan_escape(sc, &cp) != 0) {
                return -1;
            }
            i = sc->pos;
            s->esc = 1;

        } else {
            /* UTF-8: the shortest form, no surrogates, at most U+10FFFF */

            sc->pos = i;

            if (c >= 0xc2 && c <= 0xdf) {
                if (len - i < 2 || (p[i + 1] & 0xc0) != 0x80) {
                    return al_llm_scan_fail(sc, "invalid UTF-8");
                }
                cp = ((uint32_t) (c & 0x1f) << 6) | (p[i + 1] & 0x3f);
                i += 2;

            } else if (c >= 0xe0 && c <= 0xef) {
                if (len - i < 3 || (p[i + 1] & 0xc0) != 0x80
                    || (p[i + 2] & 0xc0) != 0x80)
                {
                    return al_llm_scan_fail(sc, "invalid UTF-8");
                }
                cp = ((uint32_t) (c & 0x0f) << 12)
                     | ((uint32_t) (p[i + 1] & 0x3f) << 6)
                     | (p[i + 2] & 0x3f);
                if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) {
                    return al_llm_scan_fail(sc, "invalid UTF-8");
                }
                i += 3;

            } else if (c >= 0xf0 && c <= 0xf4) {
                if (len - i < 4 || (p[i + 1] & 0xc0) != 0x80
                    || (p[i + 2] & 0xc0) != 0x80
                    || (p[i + 3] & 0xc0) != 0x80)
                {
                    return al_llm_scan_fail(sc, "invalid UTF-8");
                }
                cp = ((uint32_t) (c & 0x07) << 18)
                     | ((uint32_t) (p[i + 1] & 0x3f) << 12)
                     | ((uint32_t) (p[i + 2] & 0x3f) << 6)
                     | (p[i + 3] & 0x3f);
                if (cp < 0x10000 || cp > 0x10ffff) {
                    return al_llm_scan_fail(sc, "invalid UTF-8");
                }
                i += 4;

            } else {
                return al_llm_scan_fail(sc, "invalid UTF-8");
            }
        }

        /* the code point, as the unescaped UTF-8 bytes */

        if (cp < 0x80) {
            u[0] = (unsigned char) cp;
            c = 1;

        } else if (cp < 0x800) {
            u[0] = (unsigned char) (0xc0 | (cp >> 6));
            u[1] = (unsigned char) (0x80 | (cp & 0x3f));
            c = 2;

        } else if (cp < 0x10000) {
            u[0] = (unsigned char) (0xe0 | (cp >> 12));
            u[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
            u[2] = (unsigned char) (0x80 | (cp & 0x3f));
            c = 3;

        } else {
            u[0] = (unsigned char) (0xf0 | (cp >> 18));
            u[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
            u[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
            u[3] = (unsigned char) (0x80 | (cp & 0x3f));
            c = 4;
        }

        for (cp = 0; cp < c; cp++) {
            if (dst != NULL && n + cp < cap) {
                dst[n + cp] = (char) u[cp];
            }

            if (hash) {
                h = (h ^ u[cp]) * 16777619u;
            }
        }

        n += c;
    }

    s->at = start;
    s->len = i - start;
    s->dlen = n;
    s->hash = h;
    s->hashed = hash;

    sc->pos = i + 1;

    return 0;
}


/*
 * The end of the run of plain string bytes (al_llm_json_plain[]) that
 * starts at i.  Prompts are long runs of them, so eight bytes are tested
 * at a time: a byte is not plain when it is below 0x20, 0x80 or above,
 * '"' or '\\'.  The tests are the usual "has a byte below n" and "has a
 * zero byte" ones: the high bit of every byte that fails is set, and a
 * false one (a borrow) only ever above a byte that truly fails, so on a
 * little-endian machine the lowest bit set is the first byte that ends
 * the run.  Elsewhere, and for the last bytes of the body, byte by byte.
 */

static inline size_t
al_llm_scan_plain(const unsigned char *p, size_t i, size_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__

    uint64_t  w, q, b, bad;

#if defined __GNUC__
#if (AL_LLM_V16_MASK)
    unsigned      mask;
#else
    uint64_t      lo, hi;
#endif
    al_llm_v16s_t  v, m;

    /* sixteen at a time: as signed bytes, 0x80 and up are below 0x20 */

    while (len - i >= 16) {
        memcpy(&v, p + i, 16);
        m = (al_llm_v16s_t) ((v < 0x20) | (v == '"') | (v == '\\'));
#if (AL_LLM_V16_MASK)
        mask = al_llm_v16_mask(m);

        if (mask != 0) {
            return i + (size_t) __builtin_ctz(mask);
        }
#else
        memcpy(&lo, &m, 8);
        memcpy(&hi, (const unsigned char *) &m + 8, 8);

        if ((lo | hi) != 0) {
            return i + (lo != 0 ? (size_t) (__builtin_ctzll(lo) >> 3)
                                : 8 + (size_t) (__builtin_ctzll(hi) >> 3));
        }
#endif

        i += 16;
    }
#endif

    while (len - i >= 8) {
        memcpy(&w, p + i, 8);

        q = w ^ (AL_LLM_ONES * '"');
        b = w ^ (AL_LLM_ONES * '\\');

        bad = ((((w - AL_LLM_ONES * 0x20) & ~w) | w)  /* < 0x20, >= 0x80 */
               | ((q - AL_LLM_ONES) & ~q)             /* '"' */
               | ((b - AL_LLM_ONES) & ~b))            /* '\\' */
              & AL_LLM_HIGHS;

        if (bad != 0) {
            return i + (size_t) (__builtin_ctzll(bad) / 8);
        }

        i += 8;
    }

#endif

    while (i < len && al_llm_json_plain[p[i]]) {
        i++;
    }

    return i;
}


/* at a backslash: one escape, a surrogate pair as one code point */

static int
al_llm_scan_escape(al_llm_sc_t *sc, uint32_t *cp)
{
    uint32_t  lo;

    if (sc->len - sc->pos < 2) {
        sc->pos = sc->len;
        return al_llm_scan_fail(sc, "premature end of input");
    }

    switch (sc->p[sc->pos + 1]) {
    case '"': *cp = '"'; break;
    case '\\': *cp = '\\'; break;
    case '/': *cp = '/'; break;
    case 'b': *cp = '\b'; break;
    case 'f': *cp = '\f'; break;
    case 'n': *cp = '\n'; break;
    case 'r': *cp = '\r'; break;
    case 't': *cp = '\t'; break;

    case 'u':
        sc->pos += 2;

        if (al_llm_scan_hex4(sc, cp) != 0) {
            return -1;
        }

        if (*cp == 0) {
            return al_llm_scan_fail(sc, "\\u0000 is not allowed");
        }

        if (*cp >= 0xdc00 && *cp <= 0xdfff) {
            return al_llm_scan_fail(sc, "invalid Unicode escape");
        }

        if (*cp >= 0xd800 && *cp <= 0xdbff) {
            if (sc->len - sc->pos < 2 || sc->p[sc->pos] != '\\'
                || sc->p[sc->pos + 1] != 'u')
            {
                return al_llm_scan_fail(sc, "invalid Unicode escape");
            }

            sc->pos += 2;

            if (al_llm_scan_hex4(sc, &lo) != 0) {
                return -1;
            }

            if (lo < 0xdc00 || lo > 0xdfff) {
                return al_llm_scan_fail(sc, "invalid Unicode escape");
            }

            *cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
        }

        return 0;

    default:
        return al_llm_scan_fail(sc, "invalid escape");
    }

    sc->pos += 2;

    return 0;
}


static int
al_llm_scan_hex4(al_llm_sc_t *sc, uint32_t *v)
{
    size_t         i;
    unsigned char  c;

    if (sc->len - sc->pos < 4) {
        sc->pos = sc->len;
        return al_llm_scan_fail(sc, "premature end of input");
    }

    *v = 0;

    for (i = 0; i < 4; i++) {
        c = sc->p[sc->pos + i];

        if (c >= '0' && c <= '9') {
            *v = (*v << 4) | (uint32_t) (c - '0');

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            *v = (*v << 4) | (uint32_t) ((c | 0x20) - 'a' + 10);

        } else {
            return al_llm_scan_fail(sc, "invalid escape");
        }
    }

    sc->pos += 4;

    return 0;
}


/*
 * -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?  An integer (no
 * fraction, no exponent) must fit in int64_t, a real must not overflow a
 * double: what jansson refuses.
 */

static int
al_llm_scan_number(al_llm_sc_t *sc, al_llm_jfield_t *f)
{
    int             neg;
    char           *copy, buf[64];
    size_t          i, start, len;
    double          d;
    uint64_t        v, max;
    const unsigned char   *p;

    p = sc->p;
    len = sc->len;
    i = sc->pos;
    start = i;
    neg = 0;

    if (i < len && p[i] == '-') {
        neg = 1;
        i++;
    }

    if (i >= len || p[i] < '0' || p[i] > '9') {
        return al_llm_scan_fail(sc, "invalid token");
    }

    v = 0;
    max = neg ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX;

    if (p[i] == '0') {
        i++;

    } else {
        while (i < len && p[i] >= '0' && p[i] <= '9') {
            if (v > (max - (uint64_t) (p[i] - '0')) / 10) {
                v = max + 1;            /* over; keep scanning */
            } else {
                v = v * 10 + (uint64_t) (p[i] - '0');
            }
            i++;
        }
    }

    f->type = AL_LLM_JT_INT;

    if (i < len && p[i] == '.') {
        i++;
        if (i >= len || p[i] < '0' || p[i] > '9') {
            sc->pos = i;
            return al_llm_scan_fail(sc, "invalid number");
        }
        while (i < len && p[i] >= '0' && p[i] <= '9') {
            i++;
        }
        f->type = AL_LLM_JT_REAL;
    }

    if (i < len && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < len && (p[i] == '+' || p[i] == '-')) {
            i++;
        }
        if (i >= len || p[i] < '0' || p[i] > '9') {
            sc->pos = i;
            return al_llm_scan_fail(sc, "invalid number");
        }
        while (i < len && p[i] >= '0' && p[i] <= '9') {
            i++;
        }
        f->type = AL_LLM_JT_REAL;
    }

    if (f->type == AL_LLM_JT_INT) {
        if (v > max) {
            return al_llm_scan_fail(sc, neg ? "too big negative integer"
                                            : "too big integer");
        }

        f->num = neg ? (int64_t) (0 - v) : (int64_t) v;

        sc->pos = i;
        return 0;
    }

    /* a real: only overflow is refused, as jansson does */

    copy = buf;

    if (i - start >= sizeof(buf)) {
        copy = malloc(i - start + 1);
        if (copy == NULL) {
            return al_llm_scan_fail(sc, "out of memory");
        }
    }

    memcpy(copy, p + start, i - start);
    copy[i - start] = '\0';

    errno = 0;
    d = strtod(copy, NULL);

    if (copy != buf) {
        free(copy);
    }

    if ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE) {
        return al_llm_scan_fail(sc, "real number overflow");
    }

    sc->pos = i;

    return 0;
}


/* four hex digits the scanner accepted */

static uint32_t
al_llm_scan_hexv(const unsigned char *s)
{
    size_t    i;
    uint32_t  v;

    v = 0;

    for (i = 0; i < 4; i++) {
        v = (v << 4) | (uint32_t) (s[i] <= '9' ? s[i] - '0'
                                               : (s[i] | 0x20) - 'a' + 10);
    }

    return v;
}


/*
 * A key equal to one of this object's earlier keys is refused.  Keys of
 * another unescaped length differ; for the others the hashes are compared
 * first, made now for keys without escapes (their raw bytes are their
 * unescaped bytes), so most keys are never hashed at all.
 */

static int
al_llm_scan_key_dup(al_llm_sc_t *sc, size_t first, al_llm_sstr_t *s)
{
    size_t         i;
    al_llm_key_t  *k;
    char           show[AL_DETAIL_MAX];

    for (i = first; i < sc->nkeys; i++) {
        k = &sc->keys[i];

        if (k->dlen != s->dlen) {
            continue;
        }

        if (!k->hashed) {
            k->hash = al_fnv1a(sc->p + k->at, k->len);
            k->hashed = 1;
        }

        if (!s->hashed) {
            s->hash = al_fnv1a(sc->p + s->at, s->len);
            s->hashed = 1;
        }

        if (k->hash != s->hash) {
            continue;
        }

        switch (al_llm_scan_key_eq(sc->p, k, s)) {

        case 0:
            continue;

        case 1:
            (void) al_llm_show(show, sizeof(show),
                               (const char *) sc->p + s->at - 1, s->len + 2,
                               64);
            (void) snprintf(sc->detail, sc->size, "duplicate key %s", show);
            return -1;

        default:
            return al_llm_scan_fail(sc, "out of memory");
        }
    }

    return 0;
}


/* FNV-1a of bytes: the hash al_llm_scan_string_any() makes as it goes */

/* 1 when equal unescaped, 0 when not, -1 out of memory */

static int
al_llm_scan_key_eq(const unsigned char *p, const al_llm_key_t *a,
    const al_llm_sstr_t *b)
{
    int    eq;
    char  *da, *db;

    if (!a->esc && !b->esc) {
        return a->len == b->len && memcmp(p + a->at, p + b->at, a->len) == 0;
    }

    da = malloc(a->len + b->len + 2);
    if (da == NULL) {
        return -1;
    }

    db = da + a->len + 1;

    eq = al_llm_scan_unescape(p + a->at, a->len, da) == a->dlen
         && al_llm_scan_unescape(p + b->at, b->len, db) == b->dlen
         && memcmp(da, db, a->dlen) == 0;

    free(da);

    return eq;
}


static int
al_llm_scan_field(const char *const *names, const char *name, size_t len)
{
    int  i;

    if (len == 0) {
        return -1;                      /* no name looked for is empty */
    }

    for (i = 0; names != NULL && names[i] != NULL; i++) {
        if (al_llm_scan_name_is(names[i], name, len)) {
            return i;
        }
    }

    return -1;
}


/*
 * A member of a request body: al_llm_scan_field() on al_llm_scan_fields[]
 * and, in *prompt, al_llm_scan_in() on al_llm_scan_prompt[], by length
 * first (tests/unit/llm_scan.c checks every name of both lists).
 */

static inline int
al_llm_scan_request_key(const char *name, size_t n, unsigned *prompt)
{
    int          id;
    const char  *want;

    *prompt = 0;

    switch (n) {

    case 1:
        return name[0] == 'n' ? AL_LLM_F_N : -1;

    case 4:
        *prompt = al_llm_scan_is(name, "text");
        return -1;

    case 5:
        if (al_llm_scan_is(name, "model")) {
            return AL_LLM_F_MODEL;
        }

        if (al_llm_scan_is(name, "tools")) {
            *prompt = 1;
            return AL_LLM_F_TOOLS;
        }

        if (al_llm_scan_is(name, "speed")) {
            return AL_LLM_F_SPEED;
        }

        if (al_llm_scan_is(name, "audio")) {
            return AL_LLM_F_AUDIO;
        }

        if (al_llm_scan_is(name, "input")) {
            *prompt = 1;
            return -1;
        }

        return al_llm_scan_is(name, "nvext") ? AL_LLM_F_NVEXT : -1;

    case 6:
        if (al_llm_scan_is(name, "stream")) {
            return AL_LLM_F_STREAM;
        }

        if (al_llm_scan_is(name, "models")) {
            return AL_LLM_F_MODELS;
        }

        if (al_llm_scan_is(name, "prompt")) {
            *prompt = 1;
            return AL_LLM_F_PROMPT;
        }

        *prompt = al_llm_scan_is(name, "system");
        return -1;

    case 7:
        if (al_llm_scan_is(name, "best_of")) {
            return AL_LLM_F_BEST_OF;
        }

        if (al_llm_scan_is(name, "plugins")) {
            return AL_LLM_F_PLUGINS;
        }

        return al_llm_scan_is(name, "headers") ? AL_LLM_F_HEADERS : -1;

    case 8:
        if (al_llm_scan_is(name, "messages")) {
            *prompt = 1;
            return -1;
        }

        if (al_llm_scan_is(name, "thinking")) {
            return AL_LLM_F_THINKING;
        }

        if (al_llm_scan_is(name, "provider")) {
            return AL_LLM_F_PROVIDER;
        }

        if (al_llm_scan_is(name, "api_base")) {
            return AL_LLM_F_API_BASE;
        }

        return al_llm_scan_is(name, "base_url") ? AL_LLM_F_BASE_URL : -1;

    case 9:
        if (al_llm_scan_is(name, "n_predict")) {
            return AL_LLM_F_N_PREDICT;
        }

        if (al_llm_scan_is(name, "fallbacks")) {
            return AL_LLM_F_FALLBACKS;
        }

        if (al_llm_scan_is(name, "reasoning")) {
            return AL_LLM_F_REASONING;
        }

        *prompt = al_llm_scan_is(name, "functions");
        return -1;

    case 10:
        if (al_llm_scan_is(name, "max_tokens")) {
            return AL_LLM_F_MAX_TOKENS;
        }

        if (al_llm_scan_is(name, "modalities")) {
            return AL_LLM_F_MODALITIES;
        }

        if (al_llm_scan_is(name, "background")) {
            return AL_LLM_F_BACKGROUND;
        }

        if (al_llm_scan_is(name, "extra_body")) {
            return AL_LLM_F_EXTRA_BODY;
        }

        return al_llm_scan_is(name, "prediction") ? AL_LLM_F_PREDICTION : -1;

    case 11:

        /*
         * "temperature" is as long: the first byte picks the one name it
         * may be, then two words compared, not memcmp()
         */

        switch (name[0]) {

        case 'm':
            want = "mcp_servers";
            id = AL_LLM_F_MCP_SERVERS;
            break;

        case 'u':
            want = "user_config";
            id = AL_LLM_F_USER_CONFIG;
            break;

        case 't':
            want = "tool_choice";
            id = AL_LLM_F_TOOL_CHOICE;
            break;

        default:
            return -1;
        }

        return al_llm_scan_eq(name, want, 11) ? id : -1;

    case 12:
        if (al_llm_scan_is(name, "service_tier")) {
            return AL_LLM_F_SERVICE_TIER;
        }

        if (al_llm_scan_is(name, "data_sources")) {
            return AL_LLM_F_DATA_SOURCES;
        }

        *prompt = al_llm_scan_is(name, "instructions");
        return -1;

    case 13:
        if (al_llm_scan_is(name, "inference_geo")) {
            return AL_LLM_F_INFERENCE_GEO;
        }

        return al_llm_scan_is(name, "extra_headers")
               ? AL_LLM_F_EXTRA_HEADERS : -1;

    case 14:
        return al_llm_scan_is(name, "stream_options")
               ? AL_LLM_F_STREAM_OPTIONS : -1;

    case 15:
        if (al_llm_scan_is(name, "fallback_models")) {
            return AL_LLM_F_FALLBACK_MODELS;
        }

        if (al_llm_scan_is(name, "response_format")) {
            *prompt = 1;
            return -1;
        }

        if (al_llm_scan_is(name, "thinking_budget")) {
            return AL_LLM_F_THINKING_BUDGET;
        }

        return al_llm_scan_is(name, "enable_thinking")
               ? AL_LLM_F_ENABLE_THINKING : -1;

    case 17:
        return al_llm_scan_is(name, "max_output_tokens")
               ? AL_LLM_F_MAX_OUTPUT_TOKENS : -1;

    case 18:
        if (al_llm_scan_is(name, "web_search_options")) {
            return AL_LLM_F_WEB_SEARCH_OPTIONS;
        }

        return al_llm_scan_is(name, "context_management")
               ? AL_LLM_F_CONTEXT_MANAGEMENT : -1;

    case 20:
        return al_llm_scan_is(name, "chat_template_kwargs")
               ? AL_LLM_F_CHAT_TEMPLATE_KWARGS : -1;

    case 21:
        if (al_llm_scan_is(name, "max_completion_tokens")) {
            return AL_LLM_F_MAX_COMPLETION_TOKENS;
        }

        return al_llm_scan_is(name, "thinking_token_budget")
               ? AL_LLM_F_THINKING_TOKEN_BUDGET : -1;

    case 22:
        if (al_llm_scan_is(name, "mock_testing_fallbacks")) {
            return AL_LLM_F_MOCK_FALLBACKS;
        }

        return al_llm_scan_is(name, "thinking_budget_tokens")
               ? AL_LLM_F_THINKING_BUDGET_TOKENS : -1;

    case 24:
        if (al_llm_scan_is(name, "context_window_fallbacks")) {
            return AL_LLM_F_CONTEXT_WINDOW_FALLBACKS;
        }

        return al_llm_scan_is(name, "content_policy_fallbacks")
               ? AL_LLM_F_CONTENT_POLICY_FALLBACKS : -1;

    case 30:
        return al_llm_scan_is(name, "mock_testing_context_fallbacks")
               ? AL_LLM_F_MOCK_CONTEXT_FALLBACKS : -1;

    case 37:
        return al_llm_scan_is(name, "mock_testing_content_policy_fallbacks")
               ? AL_LLM_F_MOCK_CONTENT_POLICY_FALLBACKS : -1;

    default:
        return -1;
    }
}


/*
 * The endpoints where a top-level member that is no name the gateway
 * reads (al_llm_scan_request_key() found none) may be sent: its entry of
 * al_llm_scan_members[], found among the few of its length, else none.
 */

static inline unsigned
al_llm_scan_member(const char *name, size_t n)
{
    size_t  i;

    if (n > AL_LLM_MEMBER_LONGEST) {
        return 0;
    }

    for (i = al_llm_scan_member_first[n];
         i < al_llm_scan_member_first[n + 1];
         i++)
    {
        if (al_llm_scan_members[i].name.data[0] == name[0]
            && al_llm_scan_eq(al_llm_scan_members[i].name.data, name, n))
        {
            return al_llm_scan_members[i].eps;
        }
    }

    return 0;
}


/*
 * 1 when the n bytes at a and b are the same, n of 4 to 24: two or three
 * loads a side that overlap, not a call to memcmp() (the names of
 * al_llm_scan_members[] are 4 to 22 bytes).
 */

static inline int
al_llm_scan_eq(const char *a, const char *b, size_t n)
{
    uint32_t  a4, b4, c4, d4;
    uint64_t  a8, b8, c8, d8, e8, f8;

    if (n < 8) {
        memcpy(&a4, a, 4);
        memcpy(&b4, b, 4);
        memcpy(&c4, a + n - 4, 4);
        memcpy(&d4, b + n - 4, 4);

        return ((a4 ^ b4) | (c4 ^ d4)) == 0;
    }

    memcpy(&a8, a, 8);
    memcpy(&b8, b, 8);
    memcpy(&c8, a + n - 8, 8);
    memcpy(&d8, b + n - 8, 8);

    if (n <= 16) {
        return ((a8 ^ b8) | (c8 ^ d8)) == 0;
    }

    memcpy(&e8, a + 8, 8);
    memcpy(&f8, b + 8, 8);

    return ((a8 ^ b8) | (c8 ^ d8) | (e8 ^ f8)) == 0;
}


/*
 * A top-level key of a request body the endpoint's list does not have:
 * allowed when the entry's allow_members names it (compared unescaped;
 * name is NULL for a key longer than any of them), else the first such
 * key is recorded for al_llm_request() to refuse.  Not a refusal here:
 * the checks that give a member a reason of its own come first.
 */

static void
al_llm_scan_unlisted(al_llm_sc_t *sc, const al_llm_sstr_t *s,
    const char *name)
{
    if (sc->b->unlisted.type != AL_LLM_JT_NONE) {
        return;
    }

    if (name != NULL && sc->llm != NULL
        && al_llm_allows_member(sc->llm, name, s->dlen))
    {
        return;
    }

    sc->b->unlisted.type = AL_LLM_JT_STRING;
    sc->b->unlisted.esc = s->esc;
    sc->b->unlisted.at = s->at;
    sc->b->unlisted.len = s->len;
    sc->b->unlisted.num = (int64_t) s->dlen;
}


int
al_llm_allows_member(const al_llm_t *llm, const char *name, size_t len)
{
    size_t           i;
    const al_str_t  *m;

    for (i = 0; i < llm->nallow_members; i++) {
        m = &llm->allow_members[i];

        if (m->len == len && memcmp(m->data, name, len) == 0) {
            return 1;
        }
    }

    return 0;
}


unsigned
al_llm_members_think(const al_str_t *members, size_t n)
{
    int       id;
    size_t    i;
    unsigned  think;

    think = 0;

    for (i = 0; i < n; i++) {
        if (members[i].len > AL_LLM_SCAN_NAME) {
            continue;
        }

        id = al_llm_scan_field(al_llm_scan_fields, members[i].data,
                               members[i].len);

        if (id >= AL_LLM_F_LISTED) {
            think |= 1u << (id - AL_LLM_F_LISTED);
        }
    }

    return think;
}


unsigned
al_llm_member_eps(const char *name, size_t len)
{
    if (len == 0 || len > AL_LLM_SCAN_NAME) {
        return 0;
    }

    switch (al_llm_scan_field(al_llm_scan_fields, name, len)) {

    /* not read, or other servers' thinking members: the list's (none) */

    case -1:
    case AL_LLM_F_THINKING_BUDGET:
    case AL_LLM_F_THINKING_TOKEN_BUDGET:
    case AL_LLM_F_THINKING_BUDGET_TOKENS:
    case AL_LLM_F_CHAT_TEMPLATE_KWARGS:
    case AL_LLM_F_NVEXT:
    case AL_LLM_F_ENABLE_THINKING:
        break;

    /* read by the gateway where they pass: the providers' endpoints */

    case AL_LLM_F_THINKING:
        return AL_LLM_M_MESSAGES;

    case AL_LLM_F_REASONING:
        return AL_LLM_M_RESPONSES;

    default:
        return AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS | AL_LLM_M_EMBEDDINGS
               | AL_LLM_M_RESPONSES | AL_LLM_M_MESSAGES;
    }

    return al_llm_scan_member(name, len);
}


const char *
al_llm_member_refused(const char *name, size_t len)
{
    int  id;

    if (len == 0) {
        return "a member name is not empty";
    }

    if (len > AL_LLM_SCAN_NAME) {
        return "longer than 48 bytes";
    }

    if (memchr(name, '\0', len) != NULL) {
        return "a member name has no NUL";
    }

    id = al_llm_scan_field(al_llm_scan_fields, name, len);

    switch (id) {

    case AL_LLM_F_N_PREDICT:
    case AL_LLM_F_MODELS:
    case AL_LLM_F_FALLBACKS:
    case AL_LLM_F_CONTEXT_WINDOW_FALLBACKS:
    case AL_LLM_F_CONTENT_POLICY_FALLBACKS:
    case AL_LLM_F_FALLBACK_MODELS:
    case AL_LLM_F_MOCK_FALLBACKS:
    case AL_LLM_F_MOCK_CONTEXT_FALLBACKS:
    case AL_LLM_F_MOCK_CONTENT_POLICY_FALLBACKS:
    case AL_LLM_F_USER_CONFIG:
    case AL_LLM_F_API_BASE:
    case AL_LLM_F_BASE_URL:
    case AL_LLM_F_EXTRA_BODY:
    case AL_LLM_F_EXTRA_HEADERS:
    case AL_LLM_F_HEADERS:
        return "the gateway refuses it in every request: routers read it "
               "as other models, URLs, keys or headers";

    case AL_LLM_F_PREDICTION:           /* some endpoints'; their checks */
    case AL_LLM_F_CONTEXT_MANAGEMENT:
    case AL_LLM_F_PROMPT:               /*   read the list elsewhere */
    case AL_LLM_F_TOOL_CHOICE:
    case AL_LLM_F_THINKING:
    case AL_LLM_F_REASONING:
    case AL_LLM_F_THINKING_BUDGET:      /* other servers': pass only */
    case AL_LLM_F_THINKING_TOKEN_BUDGET:    /*   as listed */
    case AL_LLM_F_THINKING_BUDGET_TOKENS:
    case AL_LLM_F_CHAT_TEMPLATE_KWARGS:
    case AL_LLM_F_NVEXT:
    case AL_LLM_F_ENABLE_THINKING:
    case -1:
        break;

    default:
        return "the gateway reads it itself and its checks decide; it "
               "needs no allow_members";
    }

    if (al_llm_scan_case(&al_llm_scan_request, AL_LLM_SK_ROOT, name, len)
        != NULL)
    {
        return "it differs from a member the gateway reads only by case, "
               "and is refused as a duplicate is";
    }

    /*
     * A thinking member of another server in another case: a server
     * that binds keys in any case (Go's) would take it for the member,
     * which the gateway reads only as it is spelled
     */

    if (id < 0 && !al_fold_plain(name, len)
        && al_llm_scan_folded(al_llm_scan_fields, AL_LLM_F_LISTED, SIZE_MAX,
                              name, len)
           != NULL)
    {
        return "it differs from a thinking member the gateway reads only "
               "by case: list it in lower case";
    }

    return NULL;
}


/*
 * The keys under which a prompt may give an input by URL, which the
 * provider downloads: "url" (OpenAI's image_url object, Anthropic's
 * source), "image_url" and "file_url" (Responses), "video_url" and
 * "audio_url" (vLLM), also in another case as a Go server behind an
 * entry binds them (al_folds_to()), and "file_data" and "file_id" (a file
 * part's, which OpenRouter and LiteLLM take as URLs too; as they are
 * spelled): AL_LLM_DEEP_URL, and al_llm_req_refs() reads the body when
 * one is seen.  And "input_audio", an audio input
 * (OpenAI's chat content part, which routers pass on), billed at audio
 * prices: AL_LLM_DEEP_AUDIO, for al_llm_req_audio().  And "audio", which
 * below the top level may name an earlier audio answer the provider
 * stores (an assistant message's {"audio": {"id": ...}}):
 * AL_LLM_DEEP_REF, for al_llm_req_refs() and al_llm_req_audio().
 */

static inline int
al_llm_scan_deep_key(const char *name, size_t n)
{
    switch (n) {

    case 3:
        if (al_llm_scan_is(name, "url")) {
            return AL_LLM_DEEP_URL;
        }

        break;

    case 5:
        if (al_llm_scan_is(name, "audio")) {
            return AL_LLM_DEEP_REF;
        }

        break;

    case 7:
        if (al_llm_scan_is(name, "file_id")) {
            return AL_LLM_DEEP_URL;
        }

        break;

    case 8:
        if (al_llm_scan_is(name, "file_url")) {
            return AL_LLM_DEEP_URL;
        }

        break;

    case 9:
        if (al_llm_scan_is(name, "image_url")
            || al_llm_scan_is(name, "video_url")
            || al_llm_scan_is(name, "audio_url")
            || al_llm_scan_is(name, "file_data"))
        {
            return AL_LLM_DEEP_URL;
        }

        break;

    case 11:
        if (al_llm_scan_is(name, "input_audio")) {
            return AL_LLM_DEEP_AUDIO;
        }

        break;

    default:
        break;
    }

    /*
     * "url" folded is 3 to 9 bytes, the longest names 9 to 27; every
     * name ends in "url", and no byte but u, r and l, in either case,
     * folds to those three (Go's folds to ASCII are of k, s and i), so
     * a key that ends otherwise is turned away before its bytes are
     * looked at
     */

    if (n < 3 || n > 27
        || (name[n - 3] | 0x20) != 'u' || (name[n - 2] | 0x20) != 'r'
        || (name[n - 1] | 0x20) != 'l'
        || al_fold_plain(name, n))
    {
        return 0;
    }

    return (al_llm_url_key(name, n) != NULL) ? AL_LLM_DEEP_URL : 0;
}


/*
 * 1 when name is one of list; lens has bit n set when a name of list is n
 * bytes long, so that most keys are told apart by their length alone.
 */

static inline int
al_llm_scan_in(const al_str_t *list, uint64_t lens, const char *name,
    size_t len)
{
    size_t  i;

    if (len >= 64 || (lens >> len & 1) == 0) {
        return 0;
    }

    for (i = 0; list[i].data != NULL; i++) {
        if (list[i].len == len && list[i].data[0] == name[0]
            && memcmp(list[i].data, name, len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * 1 when want (NUL-terminated) is the len bytes of name.  A key the
 * scanner accepted holds no NUL, so the loop stops at want's NUL at the
 * latest and never reads past it; most names differ in the first byte,
 * which is all this looks at then (no strlen() per name per key).
 */

static inline int
al_llm_scan_name_is(const char *want, const char *name, size_t len)
{
    size_t  i;

    if (want[0] != name[0]) {
        return 0;
    }

    for (i = 1; i < len; i++) {
        if (want[i] != name[i]) {
            return 0;
        }
    }

    return want[len] == '\0';
}


/* al_llm_scan_ws() on a position of the caller's */

static inline void
al_llm_scan_skip_ws(const unsigned char *p, size_t *pos, size_t len)
{
    size_t  i;

    i = *pos;

    if (i < len && p[i] > ' ') {
        return;
    }

    while (i < len
           && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
    {
        i++;
    }

    *pos = i;
}


static inline void
al_llm_scan_ws(al_llm_sc_t *sc)
{
    /* most calls stand on a token already: one test for them */

    if (sc->pos < sc->len && sc->p[sc->pos] > ' ') {
        return;
    }

    while (sc->pos < sc->len
           && (sc->p[sc->pos] == ' ' || sc->p[sc->pos] == '\n'
               || sc->p[sc->pos] == '\r' || sc->p[sc->pos] == '\t'))
    {
        sc->pos++;
    }
}


/*
 * 1: a key of an element of "tools" that names the tool the client runs
 * ("function" of chat, "custom", "name" of the other APIs).
 */

static inline int
al_llm_scan_tool_self(const char *name, size_t n)
{
    return (n == 8 && al_llm_scan_is(name, "function"))
           || (n == 6 && al_llm_scan_is(name, "custom"))
           || (n == 4 && al_llm_scan_is(name, "name"));
}


/*
 * An element of a request's "tools" has been read: [at, at + len) is its
 * raw span, obj says whether it was an object, and then b->tool is its
 * "type" (AL_LLM_JT_NONE: none) and b->tool_named whether it has a key
 * al_llm_scan_tool_self() takes.  Its family goes into b->tools, with the
 * span of the first element of each family (the type's, when it has one)
 * for the refusal to name.  Tools the client runs leave no trace, unless
 * they name no tool (AL_LLM_PT_UNNAMED: a router may read the key left
 * as a tool the provider runs); one of no "type" is AL_LLM_PT_UNTYPED,
 * which al_llm_request() passes on messages alone (Anthropic's own
 * tools), or AL_LLM_PT_ANONYMOUS when it names no tool either, which
 * passes nowhere.
 */

static void
al_llm_scan_tool(al_llm_body_t *b, unsigned obj, size_t at, size_t len)
{
    int                     family;
    const al_llm_jfield_t  *t;

    t = &b->tool;

    if (!obj) {
        family = AL_LLM_PT_NOT_OBJECT;

    } else if (t->type == AL_LLM_JT_NONE) {
        family = b->tool_named ? AL_LLM_PT_UNTYPED  /* Anthropic's, or not */
                               : AL_LLM_PT_ANONYMOUS;

    } else {
        at = t->at;
        len = t->len;

        if (t->type != AL_LLM_JT_STRING
            || (uint64_t) t->num > sizeof(b->tool_type))
        {
            family = AL_LLM_PT_UNKNOWN;

        } else {
            family = al_llm_tool_family(b->tool_type, (size_t) t->num);

            if (family < 0) {
                if (b->tool_named) {
                    return;
                }

                family = AL_LLM_PT_UNNAMED;
            }
        }
    }

    if (b->tools & (UINT32_C(1) << family)) {
        return;
    }

    b->tools |= UINT32_C(1) << family;
    b->tool_at[family] = at;
    b->tool_len[family] = len;
}


/*
 * A key of a request body's root, stream_options or tool element (or
 * "tool_choice" object, where it is noted, not refused:
 * al_llm_scan_choice_key()) that is one of the names read there in
 * another case, as Go's encoding/json folds (al_folds_to()): that name,
 * else NULL.  Ollama and Go proxies
 * behind an openai-compatible entry bind such a key to the member, the
 * last one winning, so {"model":"a","Model":"b"} would be checked as "a"
 * and used as "b".  At the root, the keys where the prompt is count
 * too: {"messages":[short],"Messages":[long]} would be estimated short
 * and answered long.  Called only for keys that are no name read there;
 * the names are lower case ASCII, so most keys (lower case, no lead byte
 * of a folded letter) are passed over after one look at their bytes, and
 * a key folds to a name of n bytes only if it is n to 3 * n bytes long.
 * The request's members from AL_LLM_F_LISTED on are not names here: they
 * pass only as allow_members lists them, which compares keys exactly, so
 * such a key in another case is a key of its own, unlisted unless listed
 * itself (al_llm_scan_unlisted()).
 */

static const char *
al_llm_scan_case(const al_llm_scan_spec_t *spec, unsigned kind,
    const char *name, size_t len)
{
    size_t              i, n, last;
    const char         *found;
    const char *const  *names;

    if (!spec->prompt) {
        return NULL;                    /* not a request body */
    }

    switch (kind) {

    case AL_LLM_SK_ROOT:
        names = spec->names;
        break;

    case AL_LLM_SK_SO:
        names = spec->nested_names;
        break;

    case AL_LLM_SK_TOOL:
        names = al_llm_scan_tool_names;
        break;

    case AL_LLM_SK_CHOICE:
        names = al_llm_scan_choice_names;
        break;

    default:
        return NULL;
    }

    if (names == NULL || al_fold_plain(name, len)) {
        return NULL;
    }

    last = (names == al_llm_scan_fields) ? AL_LLM_F_LISTED : SIZE_MAX;
    found = al_llm_scan_folded(names, 0, last, name, len);

    if (found != NULL) {
        return found;
    }

    if (kind != AL_LLM_SK_ROOT) {
        return NULL;
    }

    /* and where the prompt is: the estimate reads no other key */

    for (i = 0; al_llm_scan_prompt[i].data != NULL; i++) {
        n = al_llm_scan_prompt[i].len;

        if (len >= n && len - n <= 2 * n
            && al_folds_to(name, len, al_llm_scan_prompt[i].data, n))
        {
            return al_llm_scan_prompt[i].data;
        }
    }

    return NULL;
}


/*
 * The name of names[from] up to names[to] (or the list's end) that name
 * folds to in any case Go folds (al_folds_to()), or NULL: the one loop
 * of al_llm_scan_case() and of al_llm_member_refused()'s look at the
 * names al_llm_scan_case() leaves out.
 */

static const char *
al_llm_scan_folded(const char *const *names, size_t from, size_t to,
    const char *name, size_t len)
{
    size_t  i, n;

    for (i = from; i < to && names[i] != NULL; i++) {
        n = strlen(names[i]);

        if (len >= n && len - n <= 2 * n
            && al_folds_to(name, len, names[i], n))
        {
            return names[i];
        }
    }

    return NULL;
}


/*
 * The body's "tool_choice" is about to be read: what the scan notes of
 * it reset (al_llm_body_t's choice); where a string is unescaped.
 */

static char *
al_llm_scan_choice(al_llm_body_t *b)
{
    b->choice.type = AL_LLM_JT_NONE;
    b->choice_case = NULL;

    return b->choice_type;
}


/*
 * The body's "tool_choice", at pos, for the loop (al_llm_scan_flat(), at
 * depth open frames): a string of no escape as the loop reads one ("auto"
 * and the like, as most clients send it), anything else by the recursive
 * scan with what it notes of the choice (AL_LLM_SK_CHOICE), so that the
 * loop, which every body runs, carries no frame kind of its own for it.
 * The keys it grew (an object of many keys) are moved back to the
 * loop's buffer, which they fit once the member is read.  0 with
 * sc->pos after the value, else -1 (the recursive scan then reads the
 * body from the start, and frees them).
 */

static int
al_llm_scan_choice_value(al_llm_sc_t *sc, size_t pos, unsigned depth)
{
    int               rc;
    size_t            j;
    al_llm_sv_t       sv;
    al_llm_jfield_t  *f;

    f = &sc->b->f[AL_LLM_F_TOOL_CHOICE];

    if (pos < sc->len && sc->p[pos] == '"') {
        j = al_llm_scan_plain(sc->p, pos + 1, sc->len);

        if (j < sc->len && sc->p[j] == '"') {
            f->type = AL_LLM_JT_STRING;
            f->esc = 0;
            f->at = pos;
            f->len = j + 1 - pos;
            f->num = (int64_t) (j - pos - 1);
            sc->pos = j + 1;
            return 0;
        }
    }

    sc->pos = pos;

    sv.kind = AL_LLM_SK_CHOICE;
    sv.count = 0;
    sv.dst = al_llm_scan_choice(sc->b);
    sv.cap = AL_LLM_CHOICE_TYPE;
    sv.field = f;

    rc = al_llm_scan_value(sc, depth, &sv);

    if (rc == 0 && sc->keys != sc->kbuf) {
        memcpy(sc->kbuf, sc->keys, sc->nkeys * sizeof(al_llm_key_t));
        free(sc->keys);
        sc->keys = sc->kbuf;
        sc->nalloc = AL_LLM_SCAN_KEYS;
    }

    return rc;
}


/*
 * A key of the body's "tool_choice" object (name, len: unescaped, len at
 * most AL_LLM_SCAN_NAME): for "type", where its value is recorded; a key
 * that is "type", "tools" or "allowed_tools" in another case
 * (al_llm_scan_case()) is not refused here but noted, the first one, for
 * al_llm_request() to refuse where it reads the choice, after the checks
 * before it, as it always has.
 */

static al_llm_jfield_t *
al_llm_scan_choice_key(al_llm_body_t *b, const char *name, size_t len)
{
    if (len == 4 && al_llm_scan_is(name, "type")) {
        return &b->choice;
    }

    if (b->choice_case == NULL) {
        b->choice_case = al_llm_scan_case(&al_llm_scan_request,
                                          AL_LLM_SK_CHOICE, name, len);

        if (b->choice_case != NULL) {
            b->choice_key_len = len;
            memcpy(b->choice_key, name, len);
        }
    }

    return NULL;
}


/* the refusal of a key al_llm_scan_case() found: as a duplicate's */

static int
al_llm_scan_case_fail(al_llm_sc_t *sc, const al_llm_sstr_t *s,
    unsigned kind, const char *name)
{
    const char  *want;
    char         show[AL_DETAIL_MAX];

    want = al_llm_scan_case(sc->spec, kind, name, s->dlen);

    (void) al_llm_show(show, sizeof(show), (const char *) sc->p + s->at,
                       s->len, 64);
    (void) snprintf(sc->detail, sc->size, "key \"%s\" differs from \"%s\" "
                    "only by case", show, want);

    return -1;
}


/* what NULL means: the nesting bound */

static int
al_llm_scan_fail(al_llm_sc_t *sc, const char *what)
{
    size_t  i, line, col;

    if (what == NULL) {
        (void) snprintf(sc->detail, sc->size, "nesting deeper than %d",
                        AL_JSON_DEPTH_MAX);
        return -1;
    }

    line = 1;
    col = 1;

    for (i = 0; i < sc->pos && i < sc->len; i++) {
        if (sc->p[i] == '\n') {
            line++;
            col = 1;

        } else {
            col++;
        }
    }

    (void) snprintf(sc->detail, sc->size, "invalid JSON at line %zu column "
                    "%zu: %s", line, col, what);

    return -1;
}
