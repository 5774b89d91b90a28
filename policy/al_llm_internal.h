/*
 * Private to the al_llm*.c files: a bounded output writer, the run of
 * plain JSON string bytes, usage objects from jansson values, and the
 * strict one-pass JSON scanner.
 */

#ifndef AL_LLM_INTERNAL_H
#define AL_LLM_INTERNAL_H

#include <string.h>
#include <jansson.h>

#if (defined __x86_64__ && defined __SSE2__)
#include <emmintrin.h>
#endif

#include "al_llm.h"


/* a function the compiler must not copy into its callers */
#if defined __GNUC__
#define AL_LLM_NOINLINE  __attribute__((noinline))
#else
#define AL_LLM_NOINLINE
#endif


/*
 * A sixteen-byte compare's result (GCC's vector extension: 0xff in each
 * byte where it holds) as a bit per byte, lowest byte lowest, in one
 * instruction (pmovmskb) where SSE2 is; the scanners then find the first
 * byte that holds with one count of trailing zeros.
 */
#if (defined __x86_64__ && defined __SSE2__)
#define AL_LLM_V16_MASK  1
#define al_llm_v16_mask(m)  ((unsigned) _mm_movemask_epi8((__m128i) (m)))
#else
#define AL_LLM_V16_MASK  0
#endif


/*
 * A bounded writer: appends what fits, always keeps buf NUL-terminated,
 * and counts in len what the whole output needs, as snprintf does.
 */
typedef struct {
    char            *buf;
    size_t           size;
    size_t           len;
} al_llm_out_t;

void al_llm_out_init(al_llm_out_t *o, char *buf, size_t size);
/* al_llm_out_raw() where n bytes and the NUL do not all fit */
void al_llm_out_cut(al_llm_out_t *o, const char *s, size_t n);

static inline void
al_llm_out_raw(al_llm_out_t *o, const char *s, size_t n)
{
    if (o->len + n < o->size) {
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        o->buf[o->len] = '\0';
        return;
    }

    al_llm_out_cut(o, s, n);
}

void al_llm_out_cstr(al_llm_out_t *o, const char *s);
/* a string literal, its length known when compiled */
#define al_llm_out_lit(o, lit)  al_llm_out_raw(o, lit, sizeof(lit) - 1)
void al_llm_out_u64(al_llm_out_t *o, uint64_t v);

/*
 * A JSON string, quotes included: as al_json_escape() (invalid UTF-8 and
 * C1 controls as \u00XX), but \n, \r, \t short and NUL as \ufffd (many
 * readers refuse \u0000; the bodies go to clients too).
 */
void al_llm_out_json(al_llm_out_t *o, const char *s, size_t n);


/*
 * The first '"' or backslash in p[i..n), else n: where a run of plain
 * JSON string bytes ends.  Eight bytes at a time while none of them is
 * either (a word has a zero byte exactly when (w - 0x01..) & ~w & 0x80..
 * is not 0; the lowest flag is exact, borrows only run upwards), then
 * byte by byte.
 */
static inline size_t
al_llm_str_run(const unsigned char *p, size_t i, size_t n)
{
    uint64_t  w, q, b, m;

    while (n - i >= 8) {
        memcpy(&w, p + i, 8);
        q = w ^ UINT64_C(0x2222222222222222);           /* '"' */
        b = w ^ UINT64_C(0x5c5c5c5c5c5c5c5c);           /* '\\' */
        m = (((q - UINT64_C(0x0101010101010101)) & ~q)
             | ((b - UINT64_C(0x0101010101010101)) & ~b))
            & UINT64_C(0x8080808080808080);

        if (m != 0) {
#if defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + (size_t) (__builtin_ctzll(m) >> 3);
#else
            break;
#endif
        }

        i += 8;
    }

    while (i < n && p[i] != '"' && p[i] != '\\') {
        i++;
    }

    return i;
}


/*
 * An OpenAI-style usage's total_tokens: 0 (absent), or one below the sum
 * of its prompt and completion tokens (the budget is charged the total,
 * and the answer says that many were used), is the sum; one above the
 * sum counts the rest as output, which the usage left out of
 * completion_tokens (proxies in front of Gemini leave its thinking
 * tokens, billed as output, there).
 */
static inline void
al_llm_usage_total(al_llm_usage_t *u)
{
    uint64_t  sum;

    sum = u->prompt_tokens + u->completion_tokens;

    if (u->total_tokens < sum) {
        u->total_tokens = sum;

    } else if (u->total_tokens > sum && sum >= u->prompt_tokens) {
        u->completion_tokens = u->total_tokens - u->prompt_tokens;
    }
}


/* usage objects as each API reports them, into the normalized form */
void al_llm_usage_openai(const json_t *usage, al_llm_usage_t *u);
void al_llm_usage_responses(const json_t *usage, al_llm_usage_t *u);
void al_llm_usage_anthropic(uint64_t in, uint64_t cache_read,
    uint64_t cache_write, uint64_t write_5m, uint64_t write_1h,
    uint64_t out, al_llm_usage_t *u);

/* a non-negative integer member, else 0; *found says whether it was one */
uint64_t al_llm_json_u64(const json_t *obj, const char *key,
    unsigned *found);

/* nesting of '[' and '{' outside strings is at most AL_JSON_DEPTH_MAX */

/* the civil date (UTC) of a day count since 1970-01-01 */
void al_llm_civil(int64_t days, int64_t *year, unsigned *month,
    unsigned *day);

/* printable ASCII copy of client text for a detail, "..." when cut */
size_t al_llm_show(char *dst, size_t cap, const char *src, size_t len,
    size_t max);

/*
 * A JSON text (an answer's usage, a stream's event) into jansson's tree,
 * read as a client's reader (JSON.parse) reads it: valid JSON (RFC 8259)
 * that jansson refuses (a "\u0000", a lone surrogate, an integer past 64
 * bits, a number past a double) is read too, those written as what the
 * gateway reads the same way (al_llm_usage.c says how); NULL for invalid
 * JSON.  Cold: what the strict scanner refuses comes here.
 */
json_t *al_llm_json_load(const unsigned char *p, size_t n);

/* copies a string value into a NUL-terminated buffer; 0 or -1 if cut */
int al_llm_copy_str(const json_t *v, char *dst, size_t size);

/* the total byte length of string values under v, skipping some keys */
uint64_t al_llm_text_bytes(const json_t *v, unsigned depth);


/*
 * One strict pass over a request body (al_llm_scan.c): validated as
 * al_json_check() would, with the members al_llm_request() reads
 * located, not parsed into a tree.  Spans are byte offsets into the body;
 * a value's span is its raw JSON text (a string's quotes included).
 */

enum {
    AL_LLM_JT_NONE = 0,                 /* absent */
    AL_LLM_JT_NULL,
    AL_LLM_JT_FALSE,
    AL_LLM_JT_TRUE,
    AL_LLM_JT_INT,
    AL_LLM_JT_REAL,
    AL_LLM_JT_STRING,
    AL_LLM_JT_ARRAY,
    AL_LLM_JT_OBJECT
};

/* the body's members al_llm_request() reads, and one of stream_options */
enum {
    AL_LLM_F_MODEL = 0,
    AL_LLM_F_STREAM,
    AL_LLM_F_MAX_TOKENS,
    AL_LLM_F_MAX_COMPLETION_TOKENS,
    AL_LLM_F_MAX_OUTPUT_TOKENS,
    AL_LLM_F_STREAM_OPTIONS,
    AL_LLM_F_N,
    AL_LLM_F_TOOLS,
    AL_LLM_F_WEB_SEARCH_OPTIONS,
    AL_LLM_F_MCP_SERVERS,
    AL_LLM_F_BEST_OF,
    AL_LLM_F_SERVICE_TIER,
    AL_LLM_F_N_PREDICT,                 /* llama.cpp's cap: refused */
    AL_LLM_F_MODELS,                    /* routers' model lists: */
    AL_LLM_F_FALLBACKS,                 /*   refused */
    AL_LLM_F_SPEED,                     /* fast mode */
    AL_LLM_F_DATA_SOURCES,              /* Azure On Your Data */
    AL_LLM_F_INFERENCE_GEO,             /* Anthropic's US-only inference */
    AL_LLM_F_CONTEXT_WINDOW_FALLBACKS,  /* more routers' model lists: */
    AL_LLM_F_CONTENT_POLICY_FALLBACKS,  /*   refused */
    AL_LLM_F_FALLBACK_MODELS,
    AL_LLM_F_MODALITIES,                /* audio (or image) output */
    AL_LLM_F_AUDIO,
    AL_LLM_F_PLUGINS,                   /* OpenRouter's */
    AL_LLM_F_MOCK_FALLBACKS,            /* LiteLLM's: make the call */
    AL_LLM_F_MOCK_CONTEXT_FALLBACKS,    /*   fall back: refused */
    AL_LLM_F_MOCK_CONTENT_POLICY_FALLBACKS,
    AL_LLM_F_PROVIDER,                  /* OpenRouter's provider routing */
    AL_LLM_F_BACKGROUND,                /* Responses: answered at once */
    AL_LLM_F_USER_CONFIG,               /* LiteLLM's router of the call */
    AL_LLM_F_API_BASE,                  /* LiteLLM's: where the call */
    AL_LLM_F_BASE_URL,                  /*   goes: refused */
    AL_LLM_F_EXTRA_BODY,                /* LiteLLM's: merged into what */
    AL_LLM_F_EXTRA_HEADERS,             /*   the provider gets: */
    AL_LLM_F_HEADERS,                   /*   refused */
    AL_LLM_F_PREDICTION,                /* Predicted Outputs */
    AL_LLM_F_CONTEXT_MANAGEMENT,        /* Anthropic's: compaction */
    AL_LLM_F_PROMPT,                    /* completions: one, or a batch */
    AL_LLM_F_TOOL_CHOICE,               /* may name a provider tool */
    AL_LLM_F_THINKING,                  /* budget_tokens: output */
    AL_LLM_F_REASONING,                 /* max_tokens: output */
    AL_LLM_F_THINKING_BUDGET,           /* other servers' thinking */
    AL_LLM_F_THINKING_TOKEN_BUDGET,     /*   budgets, al_llm_think[]'s */
    AL_LLM_F_THINKING_BUDGET_TOKENS,    /*   order: read only where */
    AL_LLM_F_CHAT_TEMPLATE_KWARGS,      /*   allow_members lists one, */
    AL_LLM_F_NVEXT,                     /*   unlisted keys elsewhere */
    AL_LLM_F_ENABLE_THINKING,           /* and Qwen's switch */
    AL_LLM_F_INCLUDE_USAGE,             /* in stream_options */
    AL_LLM_F_MAX = 48                   /* room for other specs */
};

/*
 * The first of the members read only as allow_members lists them: to the
 * scan they are still keys of no endpoint's list (al_llm_scan_unlisted(),
 * as listed exactly), and not names a key must not be in another case
 * (al_llm_scan_case()).
 */
#define AL_LLM_F_LISTED  AL_LLM_F_THINKING_BUDGET

typedef struct {
    unsigned             type;          /* AL_LLM_JT_* */
    unsigned             esc;           /* strings: has escapes */
    size_t               at;            /* the value's raw span */
    size_t               len;
    int64_t              num;           /* integers; strings: unescaped
                                           length */
} al_llm_jfield_t;

/*
 * A count written as a decimal or as a string of a number ("5000",
 * 5000.0), in a usage of which some other count is an integer: the
 * number a client reads, a fraction rounded up, at most 2^48; v (what
 * was read of it as an integer) when it is neither or reads as less.
 * al_llm_count_text() reads the text of one (a number, or a string's
 * bytes between its quotes, its escapes decoded), 0 for none;
 * al_llm_field_count() a scanned field whose raw span is in p;
 * al_llm_json_count() a member of obj.
 */
uint64_t al_llm_count_text(const unsigned char *p, size_t n);
uint64_t al_llm_json_count(const json_t *obj, const char *key, uint64_t v);

static inline uint64_t
al_llm_field_count(const al_llm_jfield_t *f, const unsigned char *p,
    uint64_t v)
{
    uint64_t  x;

    if (f->type == AL_LLM_JT_REAL) {
        x = al_llm_count_text(p + f->at, f->len);

    } else if (f->type == AL_LLM_JT_STRING && f->len >= 2) {
        x = al_llm_count_text(p + f->at + 1, f->len - 2);     /* quotes */

    } else {
        return v;
    }

    return (x > v) ? x : v;
}

#define AL_LLM_TOOL_TYPE  32            /* longest tool type read */
#define AL_LLM_CHOICE_TYPE  64          /* of "tool_choice"'s: as much as
                                           a refusal shows of it */
#define AL_LLM_CHOICE_KEY   48          /* a key of it: the scan's longest
                                           name (AL_LLM_MEMBER_MAX) */

/*
 * What al_llm_body_t's urls holds, for al_llm_req_refs(): a key of an
 * input by URL or of a stored file's id at any depth, a top-level
 * "container" (a container or skills the account stores, Anthropic's),
 * and an "audio" below the top level (chat's reference to an earlier
 * audio answer the provider stores, {"audio": {"id": ...}})
 */
#define AL_LLM_URLS_KEY        1
#define AL_LLM_URLS_CONTAINER  2
#define AL_LLM_URLS_AUDIO      4

/*
 * root and f[]: a scan's start sets only their type to
 * AL_LLM_JT_NONE (al_llm_body_clear()); each scan that records one writes
 * all of it, type, at, len and num, and esc for a string, so the rest is
 * read only under a type other than AL_LLM_JT_NONE.
 */
typedef struct {
    al_llm_jfield_t      root;          /* the whole body */
    al_llm_jfield_t      f[AL_LLM_F_MAX];
    size_t               root_last;     /* after the last member's value,
                                           or after '{' */
    size_t               root_members;
    size_t               so_last;       /* the same in stream_options */
    size_t               so_members;
    unsigned             jansson;       /* an object too large for the
                                           duplicate check here: ask
                                           al_json_check() */
    unsigned             cache_control; /* a member of that name, at any
                                           depth (Anthropic's prompt
                                           cache is written only where
                                           one asks) */
    unsigned             urls;          /* AL_LLM_URLS_*: a member that
                                           may hold a URL the provider
                                           downloads or a file's id, at
                                           any depth
                                           (al_llm_scan_deep_key()), a
                                           top-level "container", an
                                           "audio" below it */
    unsigned             audio;         /* an "input_audio" member, at
                                           any depth */
    unsigned             state_flat;    /* the flat scan read the body:
                                           state_prev and state[] are
                                           its (the recursive scan keeps
                                           none) */
    size_t               nstate;        /* Responses: the ids of stored
                                           state of "input" (past
                                           AL_LLM_STATE_REFS counted,
                                           not kept) */
    al_llm_jfield_t      state_prev;    /* "previous_response_id" */
    al_llm_jfield_t      unlisted;      /* the first top-level key that
                                           al_llm_body_scan_ep() did not
                                           find allowed (its raw span
                                           between the quotes), or
                                           AL_LLM_JT_NONE */
    char                 model[AL_LLM_MODEL_MAX];   /* unescaped, cut */
    uint64_t             text_bytes;    /* prompt text, unescaped */
    uint64_t             extra;         /* prompt tokens counted apart */
    uint32_t             tools;         /* request bodies: 1 << AL_LLM_PT_*
                                           of the elements of "tools" */

    /*
     * Not cleared by a scan (al_llm_body_clear()): tool is set as each
     * element of "tools" opens, tool_at and tool_len of a family when
     * its bit of tools is first set, and none is read otherwise.
     */
    al_llm_jfield_t      tool;          /* the element's "type" */
    unsigned             tool_named;    /* it has "function", "custom" or
                                           "name" */
    char                 tool_type[AL_LLM_TOOL_TYPE];  /* unescaped, cut */
    size_t               tool_at[AL_LLM_PT_MAX];   /* the family's first
                                                      type value (or, for
                                                      NOT_OBJECT, element),
                                                      raw */
    size_t               tool_len[AL_LLM_PT_MAX];

    /*
     * Not cleared either: set as the body's "tool_choice" is read
     * (al_llm_scan_choice_value()), and read only under the type of
     * f[AL_LLM_F_TOOL_CHOICE]: choice and choice_case of an object,
     * reset as it opens; choice_type of a string with an escape, or of
     * the object's "type" string.
     */
    al_llm_jfield_t      choice;        /* the object's "type" */
    const char          *choice_case;   /* its first key that is "type",
                                           "tools" or "allowed_tools" in
                                           another case: that name, or
                                           NULL (al_llm_scan_case()) */
    size_t               choice_key_len;
    char                 choice_key[AL_LLM_CHOICE_KEY];  /* that key,
                                                            unescaped */
    char                 choice_type[AL_LLM_CHOICE_TYPE];   /* unescaped,
                                                               cut */

    /*
     * Not cleared either: the first nstate are set as the members of
     * the elements of "input" that name stored state are read (an
     * element's "id" before its "approval_request_id")
     */
    al_llm_jfield_t      state[AL_LLM_STATE_REFS];
    size_t               state_index[AL_LLM_STATE_REFS];    /* of the
                                                               element */
} al_llm_body_t;

/*
 * The name of al_llm_req_urls() a key is (in any case Go folds), or
 * NULL: "url", "image_url", "file_url", "video_url", "audio_url",
 * "file_data", "file_id".
 */
const char *al_llm_url_key(const char *key, size_t len);

/*
 * The ids of stored state the body scan kept (al_llm_state.c), into
 * req's state[] with state_read set, when it kept them all
 */
void al_llm_state_collect(const al_llm_body_t *b, const unsigned char *body,
    al_llm_req_t *req);

/*
 * A scan's start: the types of root and f[] AL_LLM_JT_NONE, the rest up
 * to model[] zero (unlisted with it), model[] empty, the counts after it
 * zero; what follows tools is left.  The 47 types are stored one by one,
 * the loop unrolled: zeroing all of f[] was 1.5 KB a scan, 188 words.
 */
static inline void
al_llm_body_clear(al_llm_body_t *b)
{
    size_t  i;

    b->root.type = AL_LLM_JT_NONE;

#ifdef __GNUC__
#pragma GCC unroll 48
#endif
    for (i = 0; i < AL_LLM_F_MAX; i++) {
        b->f[i].type = AL_LLM_JT_NONE;
    }

    memset(&b->root_last, 0,
           offsetof(al_llm_body_t, model)
           - offsetof(al_llm_body_t, root_last));
    b->model[0] = '\0';
    memset(b->model + sizeof(b->model), 0,
           offsetof(al_llm_body_t, tool) - offsetof(al_llm_body_t, model)
           - sizeof(b->model));
}

/*
 * What to record: the root object's members named in names go to
 * f[index]; the one at index model (-1: none) is also unescaped into
 * model[]; when the one at index nested is an object, its members named in
 * nested_names go to f[nested_base + index].  prompt: a request body:
 * count prompt text, and read the type of each element of its "tools"
 * into tools (al_llm_tool_family()).  keys and nested_keys, when not NULL,
 * are names and nested_names with their lengths, in the same order, ended
 * by a NULL data: the quick reader then compares a key only with the
 * names of its length.
 */
typedef struct {
    const char *const   *names;
    int                  model;
    int                  nested;
    const char *const   *nested_names;
    size_t               nested_base;
    unsigned             prompt;
    const al_str_t      *keys;
    const al_str_t      *nested_keys;
} al_llm_scan_spec_t;

/* 1: a byte of a JSON string that needs no escape (printable ASCII but
   '"' and '\\'; 0x7f included) */
extern const unsigned char  al_llm_json_plain[256];

/* Anthropic's usage object: input_tokens, cache_read_input_tokens,
   cache_creation_input_tokens, output_tokens, cache_creation (its
   members at 5 and 6) */
extern const char *const  al_llm_usage_ant_names[];
extern const al_llm_scan_spec_t  al_llm_usage_ant;
/* cache_creation: ephemeral_5m_input_tokens, ephemeral_1h_input_tokens */
extern const al_llm_scan_spec_t  al_llm_usage_ant_cc;

/* a request body's endpoint as a bit, for al_llm_member_t's eps */
#define AL_LLM_M(ep)           (1u << (ep))
#define AL_LLM_M_CHAT          AL_LLM_M(AL_LLM_EP_CHAT)
#define AL_LLM_M_COMPLETIONS   AL_LLM_M(AL_LLM_EP_COMPLETIONS)
#define AL_LLM_M_EMBEDDINGS    AL_LLM_M(AL_LLM_EP_EMBEDDINGS)
#define AL_LLM_M_RESPONSES     AL_LLM_M(AL_LLM_EP_RESPONSES)
#define AL_LLM_M_MESSAGES      AL_LLM_M(AL_LLM_EP_MESSAGES)

/* a top-level member a request body may have, and where (al_llm_scan.c) */
typedef struct {
    al_str_t             name;
    unsigned             eps;           /* AL_LLM_M_* */
} al_llm_member_t;

#define AL_LLM_MEMBER_LONGEST  22       /* of al_llm_scan_members[] */
#define AL_LLM_MEMBER_MAX      48       /* of a name of allow_members: the
                                           longest key the scan compares */

/* sorted by length, then name; NULL-terminated */
extern const al_llm_member_t  al_llm_scan_members[];
/* [n]: the first of al_llm_scan_members[] of length n or more */
extern const unsigned char
    al_llm_scan_member_first[AL_LLM_MEMBER_LONGEST + 2];

/*
 * al_llm_body_scan() for a body sent to endpoint ep of llm: a top-level
 * member neither al_llm_member_eps() allows there nor llm's
 * allow_members lists is recorded in b->unlisted.
 */
int al_llm_body_scan_ep(const al_llm_t *llm, al_llm_endpoint_t ep,
    const unsigned char *p, size_t len, al_llm_body_t *b, char *detail,
    size_t size);

/* 1: llm's allow_members names the member name (len bytes, unescaped) */
int al_llm_allows_member(const al_llm_t *llm, const char *name, size_t len);

/* 0, or -1 with detail set; a request body (AL_LLM_F_*) */
int al_llm_body_scan(const unsigned char *p, size_t len, al_llm_body_t *b,
    char *detail, size_t size);
int al_llm_json_scan(const al_llm_scan_spec_t *spec, const unsigned char *p,
    size_t len, al_llm_body_t *b, char *detail, size_t size);
/* the same by the recursive scan alone, which stands behind its loop */
int al_llm_json_scan_strict(const al_llm_scan_spec_t *spec,
    const unsigned char *p, size_t len, al_llm_body_t *b, char *detail,
    size_t size);

/*
 * al_llm_json_scan()'s common case, read in less work (al_llm_usage.c):
 * JSON of printable ASCII strings without escapes, integers of at most 18
 * digits, decimals without exponents, no prompt counted.  0 with b filled
 * as al_llm_json_scan() fills it when it accepts; 1 for the rest, which
 * al_llm_json_scan() must read (b then says nothing).
 */
int al_llm_json_quick(const al_llm_scan_spec_t *spec, const unsigned char *p,
    size_t len, al_llm_body_t *b);
/*
 * A captured usage object of the API of kind and ep, in the same layout
 * (al_llm_usage.c): 0 with v[] what al_llm_resp_usage() reads (for
 * OpenAI v[4] is cached_tokens); 1 for the rest, which the usage reader
 * reads (al_llm_uread_feed()).
 */
int al_llm_usage_quick(al_llm_kind_t kind, al_llm_endpoint_t ep,
    const unsigned char *p, size_t len, uint64_t v[AL_LLM_USAGE_V]);
/* the usage reader (al_llm_usage.c, al_llm_uread_t) */
void al_llm_uread_init(al_llm_uread_t *u, al_llm_kind_t kind,
    al_llm_endpoint_t ep);
void al_llm_uread_feed(al_llm_uread_t *u, const unsigned char *p, size_t n);
/* 0 with v[] as al_llm_usage_quick() gives them, -1: no usage object */
int al_llm_uread_end(const al_llm_uread_t *u, uint64_t v[AL_LLM_USAGE_V]);
/* al_llm_json_quick(), else al_llm_json_scan() */
int al_llm_json_read(const al_llm_scan_spec_t *spec, const unsigned char *p,
    size_t len, al_llm_body_t *b, char *detail, size_t size);


#endif /* AL_LLM_INTERNAL_H */
