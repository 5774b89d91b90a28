/*
 * LLM gateway: token usage from non-streaming responses, the usage log
 * line, and the small helpers the al_llm*.c files share.
 *
 * A non-streaming response may be large (embeddings) and arrives in
 * pieces, so it is never buffered: a byte scanner follows the nesting of
 * the top-level object, recognizes its member names, and copies only the
 * raw values of "usage" and "model" (each bounded), once, straight where
 * they are kept.  Inside other members it only looks for quotes and
 * brackets.  An answer whole in one piece, when the model is not taken
 * (the gateway's), is first read by bit masks up to its top-level
 * "usage" (al_llm_resp_whole()), and the scanner goes on from there.
 * The usage reader (al_llm_uread_feed()) reads the usage
 * taken at the end, or as it comes when it is over its buffer, and
 * validates it; the scanner is not a validator.
 */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#if (defined __x86_64__ && defined __SSE2__)
#include <emmintrin.h>
#endif

#include "al_llm_internal.h"


enum {
    AL_LLM_R_START = 0,
    AL_LLM_R_KEY,                       /* expecting a member name */
    AL_LLM_R_COLON,
    AL_LLM_R_VALUE,
    AL_LLM_R_DONE
};

enum {
    AL_LLM_CAP_NONE = 0,
    AL_LLM_CAP_USAGE,
    AL_LLM_CAP_MODEL
};

_Static_assert(sizeof(al_llm_uread_t) <= AL_LLM_USAGE_INLINE,
               "the usage reader takes the place of the struct's buffer");

/* where al_llm_uread_feed() is */
enum {
    AL_LLM_U_START = 0,                 /* before the object */
    AL_LLM_U_KEY1,                      /* after '{': a name or '}' */
    AL_LLM_U_KEY,                       /* after ',' in an object */
    AL_LLM_U_COLON,
    AL_LLM_U_VALUE1,                    /* after '[': a value or ']' */
    AL_LLM_U_VALUE,
    AL_LLM_U_STRING,
    AL_LLM_U_NUMBER,
    AL_LLM_U_LITERAL,
    AL_LLM_U_AFTER,                     /* after a value */
    AL_LLM_U_END,                       /* after the object */
    AL_LLM_U_BAD
};

/* what an object is to the quick reader, as the strict scanner's kinds */
enum {
    AL_LLM_QK_OTHER = 0,
    AL_LLM_QK_ROOT,                     /* the document */
    AL_LLM_QK_NESTED                    /* spec->nested */
};

#define AL_LLM_QUICK_KEYS  32           /* keys of the open objects */
#define AL_LLM_QUICK_DEPTH 16           /* open objects and arrays */
#define AL_LLM_ONES        UINT64_C(0x0101010101010101)
#define AL_LLM_HIGHS       UINT64_C(0x8080808080808080)
#define AL_LLM_ODD         UINT64_C(0xaaaaaaaaaaaaaaaa)   /* odd bits */

/* an object or array the quick reader is in */
typedef struct {
    unsigned                   obj;     /* an object, else an array */
    unsigned                   kind;    /* AL_LLM_QK_* */
    al_llm_jfield_t           *field;   /* record it here, or NULL */
    size_t                     at;
    size_t                     first;   /* its keys in the key stack */
    uint64_t                   seen;    /* a bit per key hash: a key
                                           whose bit is clear is new */
    size_t                     members;
    size_t                     last;    /* after the last member's value,
                                           or after '{' */
} al_llm_quick_frame_t;


static void al_llm_usage_counts(const json_t *usage, const char *in,
    const char *out, const char *details, al_llm_usage_t *u);
static inline unsigned al_llm_resp_name(const unsigned char *s, size_t n);
static unsigned al_llm_resp_escaped(const char *s, size_t n);
static inline size_t al_llm_resp_next(const unsigned char *p, size_t i,
    size_t n);
static inline size_t al_llm_resp_str(const unsigned char *p, size_t i,
    size_t n);
static size_t al_llm_resp_string(al_llm_resp_t *r, const unsigned char *p,
    size_t i, size_t len);
static size_t al_llm_resp_rest(al_llm_resp_t *r, const unsigned char *p,
    size_t i, size_t len);
static size_t al_llm_resp_skip(al_llm_resp_t *r, const unsigned char *p,
    size_t i, size_t len);
static void al_llm_resp_end_value(al_llm_resp_t *r);
static size_t al_llm_resp_whole(al_llm_resp_t *r, const unsigned char *p,
    size_t len);
static inline void al_llm_resp_block(const unsigned char *p, uint64_t *q,
    uint64_t *bs, uint64_t *br);
static size_t al_llm_resp_quick(al_llm_resp_t *r, const unsigned char *p,
    size_t i, size_t len);
static const al_str_t *al_llm_usage_keys(al_llm_kind_t kind,
    al_llm_endpoint_t ep);
static void *al_llm_resp_stack(void *ctx, size_t size);
static void al_llm_resp_capture(al_llm_resp_t *r, const unsigned char *p,
    size_t n);
static AL_LLM_NOINLINE int al_llm_resp_over(al_llm_resp_t *r,
    const unsigned char *p, size_t n);
static void al_llm_uread_value(al_llm_uread_t *u, unsigned char c);
static int al_llm_uread_number(al_llm_uread_t *u, unsigned char c);
static void al_llm_uread_string(al_llm_uread_t *u, unsigned char c);
static void al_llm_uread_char(al_llm_uread_t *u, unsigned cp);
static void al_llm_uread_name(al_llm_uread_t *u);
static void al_llm_uread_push(al_llm_uread_t *u, unsigned obj);
static void al_llm_uread_pop(al_llm_uread_t *u, unsigned obj);
static void al_llm_uread_text(al_llm_uread_t *u, unsigned char c);
static uint64_t al_llm_uread_count(const al_llm_uread_t *u);
static void al_llm_resp_model(const al_llm_resp_t *r, char *model,
    size_t size);
static size_t al_llm_json_tame(const unsigned char *p, size_t n, char *q);
static const char *al_llm_json_huge(const unsigned char *p, size_t n);
static int al_llm_json_hex4(const unsigned char *p, size_t n,
    unsigned *cp);
static int al_llm_usage_object(const unsigned char *p, size_t *pos,
    size_t len, const al_str_t *keys, uint64_t *v, unsigned depth);
static inline size_t al_llm_quick_number(const unsigned char *p, size_t i,
    size_t len, uint64_t *v, unsigned *frac);
static inline int al_llm_quick_name(const char *const *names,
    const unsigned char *s, size_t n);
static inline int al_llm_quick_key(const al_str_t *keys,
    const unsigned char *s, size_t n);
static inline size_t al_llm_quick_run(const unsigned char *p, size_t i,
    size_t n);
static inline size_t al_llm_ascii_run(const unsigned char *p, size_t i,
    size_t n, unsigned del);
static inline int al_llm_same(const char *a, const unsigned char *b,
    size_t n);
static size_t al_llm_dec_len(uint64_t v);
static void al_llm_out_dec(al_llm_out_t *o, uint64_t v, size_t width);
static void al_llm_digits(char *p, unsigned v, size_t width);
static const al_str_t *al_llm_record_endpoint(al_llm_endpoint_t ep);
static AL_LLM_NOINLINE size_t al_llm_record_cut(const al_llm_record_t *rec,
    char *buf, size_t size);
static AL_LLM_NOINLINE void al_llm_out_escaped(al_llm_out_t *o,
    const char *s, size_t n);
static size_t al_llm_record_write(const al_llm_record_t *rec, char *buf);


/* JSON's whitespace */
#define al_llm_json_ws(c)                                                     \
    ((c) <= ' ' && ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t'))

/* a decimal digit */
#define al_llm_digit(c)  ((unsigned) ((c) - '0') < 10)


/* bytes the response scanner stops at inside members it does not take */
static const unsigned char  al_llm_resp_struct[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1
};

/* and in the top-level object */
static const unsigned char  al_llm_resp_top[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1, [','] = 1,
    [':'] = 1
};

/* sixteen bytes compared at once where GCC's vector extension is */
#if (defined __GNUC__ && defined __BYTE_ORDER__                              \
     && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define AL_LLM_V16  1
typedef unsigned char  al_llm_v16_t __attribute__((vector_size(16)));
#else
#define AL_LLM_V16  0
#endif

/*
 * The members of a captured "usage" read, per API; f[4] is cached_tokens
 * in the details object; Anthropic's f[5] and f[6] are the 5-minute and
 * 1-hour parts of its cache writes, in its cache_creation object.
 */
const char *const  al_llm_usage_ant_names[] = {
    "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
    "output_tokens", "cache_creation", NULL
};

const char *const  al_llm_usage_ant_cc_names[] = {
    "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", NULL
};

const al_llm_scan_spec_t  al_llm_usage_ant = {
    al_llm_usage_ant_names, -1, 4, al_llm_usage_ant_cc_names, 5, 0, NULL,
    NULL
};

const al_llm_scan_spec_t  al_llm_usage_ant_cc = {
    al_llm_usage_ant_cc_names, -1, -1, NULL, 0, 0, NULL, NULL
};

/*
 * The same names for al_llm_usage_quick(), with their lengths, in the
 * same order: the number of each goes where the strict scanner puts it
 * (index 3 of OpenAI's: the details object, whose "cached_tokens" is 4).
 */
#define AL_LLM_KEY(s)  { s, sizeof(s) - 1 }

static const al_str_t  al_llm_usage_oai_keys[] = {
    AL_LLM_KEY("prompt_tokens"), AL_LLM_KEY("completion_tokens"),
    AL_LLM_KEY("total_tokens"), AL_LLM_KEY("prompt_tokens_details"),
    { NULL, 0 }
};

static const al_str_t  al_llm_usage_resp_keys[] = {
    AL_LLM_KEY("input_tokens"), AL_LLM_KEY("output_tokens"),
    AL_LLM_KEY("total_tokens"), AL_LLM_KEY("input_tokens_details"),
    { NULL, 0 }
};

static const al_str_t  al_llm_usage_ant_keys[] = {
    AL_LLM_KEY("input_tokens"), AL_LLM_KEY("cache_read_input_tokens"),
    AL_LLM_KEY("cache_creation_input_tokens"), AL_LLM_KEY("output_tokens"),
    AL_LLM_KEY("cache_creation"), { NULL, 0 }
};

static const al_str_t  al_llm_usage_ant_cc_keys[] = {
    AL_LLM_KEY("ephemeral_5m_input_tokens"),
    AL_LLM_KEY("ephemeral_1h_input_tokens"), { NULL, 0 }
};

static const al_str_t  al_llm_usage_details_keys[] = {
    AL_LLM_KEY("cached_tokens"), { NULL, 0 }
};

/* "00" to "99" */
static const char  al_llm_pairs[] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static const char *const  al_llm_sources[] = {
    "response", "stream", "estimated"
};

/* the same with their lengths, for the usage line; then "unknown" */
static const al_str_t  al_llm_source_names[] = {
    AL_LLM_KEY("response"), AL_LLM_KEY("stream"), AL_LLM_KEY("estimated"),
    AL_LLM_KEY("unknown")
};

/* not generated text: left out of delta byte counts */
static const char *const  al_llm_meta_keys[] = {
    "type", "role", "id", "index", "signature", "model", "object", NULL
};


const char *
al_llm_source_name(al_llm_source_t source)
{
    if ((unsigned) source > AL_LLM_SOURCE_ESTIMATED) {
        return "unknown";
    }

    return al_llm_sources[source];
}


void
al_llm_resp_init(al_llm_resp_t *r, al_llm_kind_t kind,
    al_llm_endpoint_t ep)
{
    /* the capture buffers are written before they are read */

    r->kind = kind;
    r->endpoint = ep;
    r->alloc = NULL;
    r->alloc_ctx = NULL;
    r->no_model = 0;
    r->state = AL_LLM_R_START;
    r->depth = 0;
    r->in_str = 0;
    r->esc = 0;
    r->is_key = 0;
    r->key_over = 0;
    r->key_esc = 0;
    r->cap_over = 0;
    r->quick = 0;
    r->filter = 0;
    r->capture = AL_LLM_CAP_NONE;
    r->key_cap = AL_LLM_CAP_NONE;
    r->key_len = 0;
    r->cap_len = 0;
    r->usage = r->usage_in;
    r->usage_size = sizeof(r->usage_in);
    r->usage_len = 0;
    r->model_len = 0;
}


/*
 * The top-level object is read a member at a time: the name compared
 * where it lies, the value passed over (strings whole, nested values by
 * al_llm_resp_skip()), and the bytes of a value taken copied at its end
 * or at the end of the piece, in one piece.  Only a string cut between
 * pieces takes the slower al_llm_resp_rest().  What is taken is what the
 * byte scanner this replaced took (tests/unit/llm_resp_ref.h): the raw
 * bytes between the ':' after the name and the ',' or '}' that ends the
 * value, for the last "usage" and "model" names, read as a client's JSON
 * reader reads them: a name written with escapes ("us\u0061ge") is the
 * name it decodes to.
 */

void
al_llm_resp_feed(al_llm_resp_t *r, const unsigned char *p, size_t len)
{
    size_t         i, j, cs;
    unsigned char  c;

    i = 0;
    cs = 0;                 /* a value taken continues from here */

    if (r->state == AL_LLM_R_START && r->no_model) {
        i = al_llm_resp_whole(r, p, len);
    }

    while (i < len && r->state != AL_LLM_R_DONE) {

        if (r->in_str) {
            i = al_llm_resp_rest(r, p, i, len);
            continue;
        }

        if (r->depth > 1) {
            i = al_llm_resp_skip(r, p, i, len);
            continue;
        }

        if (r->state == AL_LLM_R_START) {
            c = p[i++];

            if (c == '{') {
                r->depth = 1;
                r->state = AL_LLM_R_KEY;

            } else if (!al_llm_json_ws(c)) {
                r->state = AL_LLM_R_DONE;
            }

            continue;
        }

        /*
         * In the top-level object, from one byte that counts there to the
         * next, until a string is cut, a value opens or the object ends.
         */

        for ( ;; ) {

            while (!al_llm_resp_top[p[i]]) {
                if (++i == len) {
                    goto end;
                }
            }

            c = p[i++];

            if (c == '"') {
                if (r->state != AL_LLM_R_KEY) {
                    i = al_llm_resp_string(r, p, i, len);

                } else {

                    /* a member's name, compared in place when all here */

                    j = al_llm_resp_str(p, i, len);

                    if (j == len || p[j] != '"') {
                        r->in_str = 1;
                        r->is_key = 1;
                        r->key_len = 0;
                        r->key_over = 0;
                        r->key_esc = 0;
                        break;
                    }

                    r->key_cap = al_llm_resp_name(p + i, j - i);
                    r->state = AL_LLM_R_COLON;
                    i = j + 1;
                }

                if (r->in_str || i == len) {
                    break;
                }

                continue;
            }

            if (c == ':') {
                if (r->state == AL_LLM_R_COLON) {
                    r->state = AL_LLM_R_VALUE;
                    r->cap_len = 0;
                    r->cap_over = 0;
                    r->capture = r->key_cap;
                    cs = i;

                    if (r->key_cap == AL_LLM_CAP_USAGE) {
                        r->usage_len = 0;
                        r->filter = 0;
                        r->quick = 0;

                        /*
                         * Read in place when it lies here whole: the
                         * scan goes on at the ',' or '}' after it.
                         */

                        j = al_llm_resp_quick(r, p, i, len);

                        if (j != 0) {
                            i = j;
                            continue;
                        }

                    } else if (r->key_cap == AL_LLM_CAP_MODEL) {
                        if (r->no_model) {
                            r->capture = AL_LLM_CAP_NONE;

                        } else {
                            r->model_len = 0;
                        }
                    }
                }

            } else if (c == ',' || c == '}') {
                if (r->capture) {
                    al_llm_resp_capture(r, p + cs, i - 1 - cs);
                }

                al_llm_resp_end_value(r);

                if (c == '}') {
                    r->state = AL_LLM_R_DONE;
                    return;
                }

                r->state = AL_LLM_R_KEY;

            } else if (c == ']') {

                /* the top level closed as an array: nothing more taken */

                r->depth = 0;
                r->state = AL_LLM_R_DONE;
                return;

            } else {                            /* '{' or '[' */
                r->depth = 2;
                break;
            }

            if (i == len) {
                break;
            }
        }
    }

end:

    if (r->capture && cs < len) {
        al_llm_resp_capture(r, p + cs, len - cs);
    }
}


/*
 * An answer whole in its first piece, when the model is not taken (the
 * gateway's reader).  The scanner visits every string and structural
 * byte of the top level to follow its state; here the piece's quotes,
 * backslashes and brackets are found sixty-four bytes at a time as bit
 * masks, and only the brackets are visited, with the strings that open
 * at the top level between them.  That is enough to find where the
 * scanner takes a "usage" value: at a top-level string "usage" that is a
 * name, which one right after a top-level ',' or the object's '{' is.
 * Returns where the scanner goes on: the opening quote of that name
 * (r->state AL_LLM_R_KEY, depth 1), or len when the object ended with no
 * top-level string "usage" (AL_LLM_R_DONE), or 0 to read the piece from
 * its start as before, whenever this is unsure: a piece that does not
 * end with '}', a backslash at the top level (a name may be escaped),
 * one outside a string (the masks pair backslashes wherever they are,
 * the scanner only in strings), a string "usage" at the top level after
 * another byte, an object the piece does not close.
 */

static size_t
al_llm_resp_whole(al_llm_resp_t *r, const unsigned char *p, size_t len)
{
#if (AL_LLM_V16 && AL_LLM_V16_MASK)
    size_t         i, j, k, n, top, base, pos;
    unsigned       depth;
    uint64_t       q, bs, br, esc, carry, in, u, s, t, seg, m;
    unsigned char  tail[64];

    n = len;

    while (n > 0 && al_llm_json_ws(p[n - 1])) {
        n--;
    }

    if (n == 0 || p[n - 1] != '}') {
        return 0;
    }

    for (i = 0; al_llm_json_ws(p[i]); i++) {
        /* void */
    }

    if (p[i] != '{') {
        return 0;
    }

    top = i;
    depth = 1;
    carry = 0;          /* the block before ended with a lone backslash */
    in = 0;             /* all ones: the block before ended in a string */

    for (base = top + 1; base < n; base += 64) {

        if (n - base >= 64) {
            al_llm_resp_block(p + base, &q, &bs, &br);

        } else {
            memset(tail, 0, sizeof(tail));
            memcpy(tail, p + base, n - base);
            al_llm_resp_block(tail, &q, &bs, &br);
        }

        /*
         * The bytes a backslash escapes, backslashes paired left to right:
         * t holds the backslashes that may escape (not one the block
         * before escapes); adding each run's first bit shifted by one to
         * the odd bits ends at an even or odd place by the run's length
         * (simdjson's way), and esc is the byte after each run of odd
         * length, and each escaped backslash.
         */

        if (bs == 0) {
            esc = carry;
            carry = 0;

        } else {
            t = bs & ~carry;
            t = (((t << 1) | AL_LLM_ODD) - t) ^ AL_LLM_ODD;
            esc = t ^ (bs | carry);
            carry = (t & bs) >> 63;
        }

        /* s: inside a string after each byte (its opening quote included) */

        u = q & ~esc;
        s = u ^ (u << 1);
        s ^= s << 2;
        s ^= s << 4;
        s ^= s << 8;
        s ^= s << 16;
        s ^= s << 32;
        s ^= in;

        if (bs & ~((s << 1) | (in & 1))) {
            return 0;
        }

        in = 0 - (s >> 63);
        u &= s;                         /* the strings' opening quotes */
        br &= ~s;
        pos = 0;

        for ( ;; ) {
            k = (br != 0) ? (size_t) __builtin_ctzll(br) : 64;

            if (depth == 1 && pos < k) {

                /* the top level's bytes from pos to k */

                seg = (k == 64 ? ~UINT64_C(0) : (UINT64_C(1) << k) - 1)
                      & (~UINT64_C(0) << pos);

                if (bs & seg) {
                    return 0;
                }

                for (m = u & seg; m != 0; m &= m - 1) {
                    j = base + (size_t) __builtin_ctzll(m);

                    if (p[j + 1] != 'u' || len - j < 7
                        || memcmp(p + j + 1, "usage\"", 6) != 0)
                    {
                        continue;
                    }

                    /* a name after a top-level ',' or the object's '{' */

                    for (i = j - 1; al_llm_json_ws(p[i]); i--) {
                        /* void */
                    }

                    if (p[i] != ',' && i != top) {
                        return 0;
                    }

                    r->state = AL_LLM_R_KEY;
                    r->depth = 1;
                    return j;
                }
            }

            if (k == 64) {
                break;
            }

            br &= br - 1;
            pos = k + 1;

            if (p[base + k] == '{' || p[base + k] == '[') {
                if (depth < UINT32_MAX) {
                    depth++;
                }

            } else if (depth > 1) {
                depth--;

            } else {
                r->state = AL_LLM_R_DONE;
                r->depth = (p[base + k] == '}');
                return len;
            }
        }
    }
#else
    (void) r;
    (void) p;
    (void) len;
#endif

    return 0;
}


/* sixty-four bytes' quotes, backslashes and brackets as bits */

static inline void
al_llm_resp_block(const unsigned char *p, uint64_t *q, uint64_t *bs,
    uint64_t *br)
{
#if (AL_LLM_V16 && AL_LLM_V16_MASK)
    unsigned      k;
    uint64_t      mq, mb, mr;
    al_llm_v16_t  v, x;

    mq = 0;
    mb = 0;
    mr = 0;

    for (k = 0; k < 64; k += 16) {
        memcpy(&v, p + k, 16);
        x = v | 0x20;

        mq |= (uint64_t) al_llm_v16_mask(v == '"') << k;
        mb |= (uint64_t) al_llm_v16_mask(v == '\\') << k;
        mr |= (uint64_t) al_llm_v16_mask((x == '{') | (x == '}')) << k;
    }

    *q = mq;
    *bs = mb;
    *br = mr;
#else
    (void) p;

    *q = 0;
    *bs = 0;
    *br = 0;
#endif
}


/* which value a member's name takes: "usage" and "model", unescaped */

static inline unsigned
al_llm_resp_name(const unsigned char *s, size_t n)
{
    if (n != 5) {
        return AL_LLM_CAP_NONE;
    }

    if (memcmp(s, "usage", 5) == 0) {
        return AL_LLM_CAP_USAGE;
    }

    if (memcmp(s, "model", 5) == 0) {
        return AL_LLM_CAP_MODEL;
    }

    return AL_LLM_CAP_NONE;
}


/*
 * The first of '"', '{', '}', '[', ']' in p[i..n), else n: sixteen bytes
 * at a time where the compiler has vectors ('[' and ']' are '{' and '}'
 * without bit 5), then byte by byte.
 */

static inline size_t
al_llm_resp_next(const unsigned char *p, size_t i, size_t n)
{
#if (AL_LLM_V16)
#if (AL_LLM_V16_MASK)
    unsigned      mask;
#else
    uint64_t      lo, hi;
#endif
    al_llm_v16_t  v, x, m;

    while (n - i >= 16) {
        memcpy(&v, p + i, 16);
        x = v | 0x20;
        m = (al_llm_v16_t) ((v == '"') | (x == '{') | (x == '}'));
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

    while (i < n && !al_llm_resp_struct[p[i]]) {
        i++;
    }

    return i;
}


/* al_llm_str_run() sixteen bytes at a time: the first '"' or backslash */

static inline size_t
al_llm_resp_str(const unsigned char *p, size_t i, size_t n)
{
#if (AL_LLM_V16)
#if (AL_LLM_V16_MASK)
    unsigned      mask;
#else
    uint64_t      lo, hi;
#endif
    al_llm_v16_t  v, m;

    while (n - i >= 16) {
        memcpy(&v, p + i, 16);
        m = (al_llm_v16_t) ((v == '"') | (v == '\\'));
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

    return al_llm_str_run(p, i, n);
}


/*
 * The rest of a string whose opening quote is before p[i]: returns the
 * byte after its closing quote, or len with r->in_str (and r->esc when
 * the piece ended right after a backslash) saying it goes on.
 */

static size_t
al_llm_resp_string(al_llm_resp_t *r, const unsigned char *p, size_t i,
    size_t len)
{
    for ( ;; ) {
        i = al_llm_resp_str(p, i, len);

        if (i == len) {
            r->in_str = 1;
            return len;
        }

        if (p[i] == '"') {
            return i + 1;
        }

        /* a backslash: the byte after it belongs to the string */

        if (i + 1 == len) {
            r->in_str = 1;
            r->esc = 1;
            return len;
        }

        i += 2;
    }
}


/*
 * A string cut between pieces goes on at p[i]: up to the next quote or
 * backslash; a member's name is kept as far as it could match.
 */

static size_t
al_llm_resp_rest(al_llm_resp_t *r, const unsigned char *p, size_t i,
    size_t len)
{
    size_t         j;
    unsigned char  c;

    j = al_llm_resp_str(p, i + r->esc, len);
    r->esc = 0;

    if (r->is_key) {
        if (r->key_len + (j - i) <= sizeof(r->key)) {
            memcpy(r->key + r->key_len, p + i, j - i);
            r->key_len += j - i;

        } else {
            r->key_over = 1;
        }
    }

    if (j == len) {
        return len;
    }

    c = p[j++];

    if (c == '\\') {
        r->esc = 1;

        /* a name's escapes are kept, to be decoded at its end */

        if (r->is_key) {
            if (r->key_len < sizeof(r->key)) {
                r->key[r->key_len++] = '\\';
                r->key_esc = 1;

            } else {
                r->key_over = 1;
            }
        }

        return j;
    }

    r->in_str = 0;

    if (r->is_key) {
        r->is_key = 0;
        r->state = AL_LLM_R_COLON;
        r->key_cap = r->key_over ? AL_LLM_CAP_NONE
                     : r->key_esc ? al_llm_resp_escaped(r->key, r->key_len)
                     : al_llm_resp_name((const unsigned char *) r->key,
                                        r->key_len);
    }

    return j;
}


/*
 * A member's name written with escapes, decoded as a client's JSON
 * reader decodes it (al_llm_uread_string()), compared with "usage" and
 * "model": "\u0061" is 'a', "\/" is '/'; an escape that decodes to no
 * ASCII byte, or no valid escape, is no name taken.
 */

static unsigned
al_llm_resp_escaped(const char *s, size_t n)
{
    al_llm_uread_t  u;

    al_llm_uread_init(&u, AL_LLM_OPENAI, AL_LLM_EP_CHAT);
    u.state = AL_LLM_U_STRING;
    u.name = 1;

    al_llm_uread_feed(&u, (const unsigned char *) s, n);
    al_llm_uread_feed(&u, (const unsigned char *) "\"", 1);

    if (u.state != AL_LLM_U_COLON) {
        return AL_LLM_CAP_NONE;
    }

    return al_llm_resp_name((const unsigned char *) u.key, u.klen);
}


/*
 * Inside a member only the nesting counts: strings are skipped whole and
 * brackets counted, the bytes between them passed sixteen at a time.
 * Returns where it stopped: the end of the slice (r->in_str and r->esc
 * say where a string cut there stands), or the byte after the bracket
 * that brought the scan back to the top-level object.
 */

static size_t
al_llm_resp_skip(al_llm_resp_t *r, const unsigned char *p, size_t i,
    size_t len)
{
    unsigned char  c;

    do {

        /*
         * Between two strings of a nested value there is most often one
         * byte (the ':' or ',' of "a":"b"), looked at before the vector
         * search is set up.
         */

        if (!al_llm_resp_struct[p[i]]) {
            if (++i == len) {
                return len;
            }

            if (!al_llm_resp_struct[p[i]]) {
                i = al_llm_resp_next(p, i + 1, len);

                if (i == len) {
                    return len;
                }
            }
        }

        c = p[i++];

        if (c == '"') {
            i = al_llm_resp_string(r, p, i, len);

            if (r->in_str) {
                return len;
            }

        } else if (c == '{' || c == '[') {
            if (r->depth < UINT32_MAX) {
                r->depth++;
            }

        } else if (--r->depth == 1) {           /* '}' or ']' */
            return i;
        }

    } while (i < len);

    return len;
}


/*
 * A top-level member's value ended: what was taken of it is kept, unless
 * it did not fit.  A member named twice keeps the last value.
 */

static void
al_llm_resp_end_value(al_llm_resp_t *r)
{
    if (r->capture == AL_LLM_CAP_USAGE) {
        r->usage_len = r->cap_over ? 0 : r->cap_len;
        r->quick &= !r->cap_over;

    } else if (r->capture == AL_LLM_CAP_MODEL) {
        r->model_len = r->cap_over ? 0 : r->cap_len;
    }

    r->capture = AL_LLM_CAP_NONE;
    r->cap_len = 0;
}


/*
 * A "usage" value that begins at p[i] (after its ':') and lies whole in
 * this piece, laid out as al_llm_usage_quick() reads it: read now, into
 * r->quick_v, while its bytes are in the cache.  Returns where the ','
 * or '}' after it is, or 0 to scan it as any other value.  Taken so, the
 * value is the same bytes the scan would have taken: its strings hold no
 * quote or backslash and its brackets pair, so the scan would have left
 * it at the same '}', and only whitespace follows.
 */

static size_t
al_llm_resp_quick(al_llm_resp_t *r, const unsigned char *p, size_t i,
    size_t len)
{
    while (i < len && al_llm_json_ws(p[i])) {
        i++;
    }

    if (i == len || p[i] != '{') {
        return 0;
    }

    memset(r->quick_v, 0, sizeof(r->quick_v));

    if (al_llm_usage_object(p, &i, len, al_llm_usage_keys(r->kind,
                                                          r->endpoint),
                            r->quick_v, 1)
        != 0)
    {
        return 0;
    }

    while (i < len && al_llm_json_ws(p[i])) {
        i++;
    }

    if (i == len || (p[i] != ',' && p[i] != '}')) {
        return 0;
    }

    r->quick = 1;

    return i;
}


/*
 * Straight into the buffer it is kept in; a "usage" value longer than
 * the struct's own buffer moves to one of AL_LLM_USAGE_MAX from
 * r->alloc().
 */

static void
al_llm_resp_capture(al_llm_resp_t *r, const unsigned char *p, size_t n)
{
    char    *buf;
    size_t   size;

    if (r->cap_over) {
        return;
    }

    if (r->capture == AL_LLM_CAP_USAGE) {

        if (n > r->usage_size - r->cap_len
            && al_llm_resp_over(r, p, n) != 0)
        {
            return;
        }

        buf = r->usage;

    } else {
        size = sizeof(r->model);

        if (n > size - r->cap_len) {
            r->cap_over = 1;
            return;
        }

        buf = r->model;
    }

    memcpy(buf + r->cap_len, p, n);
    r->cap_len += n;
}


/*
 * n bytes of a "usage" value that do not fit where it is taken: the
 * struct's buffer moves to one of AL_LLM_USAGE_MAX from r->alloc(), once;
 * returns 0 when they fit there.  Past that, the value is read as it
 * comes (al_llm_uread_feed()); usage_size and cap_len are then 0, so
 * every byte to come goes there too and nothing is taken as the raw
 * value.
 */

static AL_LLM_NOINLINE int
al_llm_resp_over(al_llm_resp_t *r, const unsigned char *p, size_t n)
{
    char  *buf, taken[AL_LLM_USAGE_INLINE];

    if (r->filter) {
        al_llm_uread_feed(&r->reader, p, n);
        return 1;
    }

    if (r->usage_size == 0) {

        /* a "usage" named again after one over its buffer */

        r->usage_size = (r->usage == r->usage_in) ? sizeof(r->usage_in)
                                                  : AL_LLM_USAGE_MAX;

        if (n <= r->usage_size - r->cap_len) {
            return 0;
        }
    }

    if (r->alloc != NULL && r->usage == r->usage_in) {
        buf = r->alloc(r->alloc_ctx, AL_LLM_USAGE_MAX);

        if (buf != NULL) {
            memcpy(buf, r->usage_in, r->cap_len);
            r->usage = buf;
            r->usage_size = AL_LLM_USAGE_MAX;

            if (n <= r->usage_size - r->cap_len) {
                return 0;
            }
        }
    }

    /* the reader takes the struct's buffer: what it holds is read first */

    buf = r->usage;

    if (buf == r->usage_in) {
        memcpy(taken, r->usage_in, r->cap_len);
        buf = taken;
    }

    r->filter = 1;
    al_llm_uread_init(&r->reader, r->kind, r->endpoint);
    al_llm_uread_feed(&r->reader, (const unsigned char *) buf, r->cap_len);
    al_llm_uread_feed(&r->reader, p, n);

    r->cap_len = 0;
    r->usage_size = 0;

    return 1;
}


int
al_llm_resp_usage(const al_llm_resp_t *r, al_llm_usage_t *u, char *model,
    size_t model_size)
{
    size_t          len;
    uint64_t        v[AL_LLM_USAGE_V];
    al_llm_uread_t  ur;

    memset(u, 0, sizeof(*u));

    if (model != NULL && model_size > 0) {
        al_llm_resp_model(r, model, model_size);
    }

    len = r->usage_len;

    /*
     * The usage object is a few integers: read by the quick loop when laid
     * out as providers lay it out, else by the usage reader; the same
     * numbers either way.  A value over its buffer was read as it came.
     */

    if (r->filter) {

        /* read as it came: the value must have ended, as a taken one */

        if (r->capture == AL_LLM_CAP_USAGE
            || al_llm_uread_end(&r->reader, v) != 0)
        {
            return -1;
        }

    } else if (len == 0) {
        return -1;

    } else if (r->quick) {
        memcpy(v, r->quick_v, sizeof(v));

    } else if (al_llm_usage_quick(r->kind, r->endpoint,
                                  (const unsigned char *) r->usage, len, v)
               != 0)
    {
        al_llm_uread_init(&ur, r->kind, r->endpoint);
        al_llm_uread_feed(&ur, (const unsigned char *) r->usage, len);

        if (al_llm_uread_end(&ur, v) != 0) {
            return -1;
        }
    }

    if (r->kind == AL_LLM_ANTHROPIC) {
        al_llm_usage_anthropic(v[0], v[1], v[2], v[5], v[6], v[3], u);
        return 0;
    }

    /* openai chat, completions, embeddings; responses: the same places */

    u->prompt_tokens = v[0];
    u->completion_tokens = v[1];
    u->total_tokens = v[2];
    u->cached_tokens = v[4];

    al_llm_usage_total(u);

    return 0;
}


/*
 * The usage reader: the one reader of a usage object that the quick
 * reader (al_llm_usage_quick()) does not take, whole or a byte at a time
 * as it comes, in no buffer.  It takes the JSON a client's reader takes
 * (RFC 8259: UTF-8, any escape, a lone surrogate, "\u0000", numbers of
 * any size), at most AL_LLM_UREAD_DEPTH deep as jansson, and reads the
 * members the usage is read from (al_llm_usage_keys(), and the members
 * of the object one of them names) as a client does: a name is what its
 * escapes decode to, and of a name given twice the last counts (an
 * object named twice: the members of the last).
 */

void
al_llm_uread_init(al_llm_uread_t *u, al_llm_kind_t kind,
    al_llm_endpoint_t ep)
{
    memset(u, 0, sizeof(*u));

    u->anthropic = (kind == AL_LLM_ANTHROPIC);
    u->responses = (ep == AL_LLM_EP_RESPONSES);
    u->slot = -1;
    u->cur = -1;
}


void
al_llm_uread_feed(al_llm_uread_t *u, const unsigned char *p, size_t n)
{
    size_t         i;
    unsigned char  c;

    for (i = 0; i < n && u->state != AL_LLM_U_BAD; i++) {
        c = p[i];

        switch (u->state) {

        case AL_LLM_U_STRING:
            al_llm_uread_string(u, c);
            continue;

        case AL_LLM_U_NUMBER:
            if (al_llm_uread_number(u, c) == 0) {
                continue;
            }

            /* the number ended before c, which is read after it */

            u->state = AL_LLM_U_AFTER;
            break;

        case AL_LLM_U_LITERAL:
            if (*u->lit != (char) c) {
                u->state = AL_LLM_U_BAD;

            } else if (*++u->lit == '\0') {
                u->state = AL_LLM_U_AFTER;
            }

            continue;

        default:
            break;
        }

        if (al_llm_json_ws(c)) {
            continue;
        }

        switch (u->state) {

        case AL_LLM_U_START:
            if (c != '{') {
                u->state = AL_LLM_U_BAD;
                break;
            }

            al_llm_uread_push(u, 1);
            break;

        case AL_LLM_U_KEY1:
        case AL_LLM_U_KEY:
            if (c == '}' && u->state == AL_LLM_U_KEY1) {
                al_llm_uread_pop(u, 1);
                break;
            }

            if (c != '"') {
                u->state = AL_LLM_U_BAD;
                break;
            }

            u->name = 1;
            u->klen = 0;
            u->state = AL_LLM_U_STRING;
            break;

        case AL_LLM_U_COLON:
            u->state = (c == ':') ? AL_LLM_U_VALUE : AL_LLM_U_BAD;
            break;

        case AL_LLM_U_VALUE1:
            if (c == ']') {
                al_llm_uread_pop(u, 0);
                break;
            }

            /* fall through */

        case AL_LLM_U_VALUE:
            al_llm_uread_value(u, c);
            break;

        case AL_LLM_U_AFTER:
            if (c == ',') {
                u->state = (u->stack[(u->depth - 1) / 64]
                            >> ((u->depth - 1) % 64) & 1)
                           ? AL_LLM_U_KEY : AL_LLM_U_VALUE;

            } else if (c == '}' || c == ']') {
                al_llm_uread_pop(u, c == '}');

            } else {
                u->state = AL_LLM_U_BAD;
            }

            break;

        default:                        /* AL_LLM_U_END */
            u->state = AL_LLM_U_BAD;
            break;
        }
    }
}


/*
 * The numbers read, when the bytes fed made one object: v[k] as the
 * quick reader has them, the integers; and when one of the counts is
 * one, the others written as decimals or strings are the numbers a
 * client reads (cached_tokens, which only lowers the price, aside).
 */

int
al_llm_uread_end(const al_llm_uread_t *u, uint64_t v[AL_LLM_USAGE_V])
{
    size_t    k;
    uint64_t  any;

    if (u->state != AL_LLM_U_END) {
        return -1;
    }

    any = 0;

    for (k = 0; k < AL_LLM_USAGE_V; k++) {
        v[k] = u->v[k];
        any |= (k != 4) ? v[k] : 0;
    }

    for (k = 0; any && k < AL_LLM_USAGE_V; k++) {
        if (k != 4 && u->c[k] > v[k]) {
            v[k] = u->c[k];
        }
    }

    return 0;
}


/* a value begins with c */

static void
al_llm_uread_value(al_llm_uread_t *u, unsigned char c)
{
    unsigned  nested;

    u->cur = u->slot;
    u->slot = -1;

    nested = u->anthropic ? 4 : 3;

    if (u->cur == (int) nested) {

        /* the object read too: the last of its name counts */

        memset(&u->v[4], 0, 3 * sizeof(uint64_t));
        memset(&u->c[4], 0, 3 * sizeof(uint64_t));
        u->cur = -1;

        if (c == '{' && u->depth == 1) {
            al_llm_uread_push(u, 1);
            u->nest = 1;
            return;
        }

    } else if (u->cur >= 0) {
        u->v[u->cur] = 0;
        u->c[u->cur] = 0;
    }

    memset(&u->t, 0, sizeof(u->t));

    switch (c) {

    case '"':
        u->name = 0;
        u->state = AL_LLM_U_STRING;
        return;

    case '{':
        al_llm_uread_push(u, 1);
        return;

    case '[':
        al_llm_uread_push(u, 0);
        return;

    case 't':
    case 'f':
    case 'n':
        u->lit = (c == 't') ? "rue" : (c == 'f') ? "alse" : "ull";
        u->state = AL_LLM_U_LITERAL;
        return;

    default:
        if (c != '-' && !al_llm_digit(c)) {
            u->state = AL_LLM_U_BAD;
            return;
        }

        u->iv = 0;
        u->real = 0;
        u->num = 8;
        u->state = AL_LLM_U_NUMBER;

        (void) al_llm_uread_number(u, c);
        return;
    }
}


/*
 * A byte of a number: 0 when it is one of its bytes, 1 when the number
 * ended before it (and was taken).  u->num: 0 after '-', 1 after a
 * leading 0, 2 in the integer digits, 3 after '.', 4 in the fraction,
 * 5 after 'e', 6 after its sign, 7 in the exponent, 8 before it.
 */

static int
al_llm_uread_number(al_llm_uread_t *u, unsigned char c)
{
    unsigned  digit, num;

    digit = al_llm_digit(c);
    num = u->num;

    if (num == 8) {
        num = (c == '-') ? 0 : (c == '0') ? 1 : 2;

    } else if (digit && num != 1) {
        num = (num == 0) ? ((c == '0') ? 1 : 2)
              : (num == 3) ? 4 : (num == 5 || num == 6) ? 7 : num;

    } else if (c == '.' && (num == 1 || num == 2)) {
        num = 3;
        u->real = 1;

    } else if ((c == 'e' || c == 'E') && (num == 1 || num == 2 || num == 4)) {
        num = 5;
        u->real = 1;

    } else if ((c == '+' || c == '-') && num == 5) {
        num = 6;

    } else {

        /* its end: valid after a digit */

        if (num != 1 && num != 2 && num != 4 && num != 7) {
            u->state = AL_LLM_U_BAD;
            return 0;
        }

        if (u->cur >= 0) {
            if (u->real) {
                u->c[u->cur] = al_llm_uread_count(u);

            } else if (!u->t.neg) {
                u->v[u->cur] = u->iv;
            }
        }

        u->cur = -1;

        return 1;
    }

    u->num = num;

    if (u->cur >= 0) {
        if (digit && !u->real) {

            /* as al_llm_json_u64(): at most 2^48 */

            u->iv = u->iv * 10 + (c - '0');

            if (u->iv > (UINT64_C(1) << 48)) {
                u->iv = UINT64_C(1) << 48;
            }
        }

        al_llm_uread_text(u, c);
    }

    return 0;
}


/* a byte of a string, or of a member's name */

static void
al_llm_uread_string(al_llm_uread_t *u, unsigned char c)
{
    unsigned  d, k;

    static const char  simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";

    if (u->u8 != 0) {
        if (c < u->lo || c > u->hi) {
            u->state = AL_LLM_U_BAD;
            return;
        }

        u->u8--;
        u->lo = 0x80;
        u->hi = 0xbf;
        return;
    }

    if (u->hex != 0) {
        if (al_llm_digit(c)) {
            d = c - '0';

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            d = (c | 0x20) - 'a' + 10;

        } else {
            u->state = AL_LLM_U_BAD;
            return;
        }

        u->cp = u->cp << 4 | d;

        if (--u->hex == 0) {
            al_llm_uread_char(u, u->cp);
        }

        return;
    }

    if (u->esc) {
        u->esc = 0;

        if (c == 'u') {
            u->hex = 4;
            u->cp = 0;
            return;
        }

        for (k = 0; simple[k] != '\0' && simple[k] != (char) c; k += 2) {
            /* void */
        }

        if (simple[k] == '\0') {
            u->state = AL_LLM_U_BAD;
            return;
        }

        al_llm_uread_char(u, (unsigned char) simple[k + 1]);
        return;
    }

    if (c == '\\') {
        u->esc = 1;
        return;
    }

    if (c == '"') {
        if (u->name) {
            al_llm_uread_name(u);
            u->state = AL_LLM_U_COLON;
            return;
        }

        if (u->cur >= 0) {
            u->c[u->cur] = al_llm_uread_count(u);
            u->cur = -1;
        }

        u->state = (u->depth == 0) ? AL_LLM_U_END : AL_LLM_U_AFTER;
        return;
    }

    if (c < 0x20) {
        u->state = AL_LLM_U_BAD;
        return;
    }

    if (c >= 0x80) {

        /* UTF-8 as RFC 3629 has it: no overlong form, no surrogate */

        if (c < 0xc2 || c > 0xf4) {
            u->state = AL_LLM_U_BAD;
            return;
        }

        u->u8 = (c < 0xe0) ? 1 : (c < 0xf0) ? 2 : 3;
        u->lo = (c == 0xe0) ? 0xa0 : (c == 0xf0) ? 0x90 : 0x80;
        u->hi = (c == 0xed) ? 0x9f : (c == 0xf4) ? 0x8f : 0xbf;
    }

    al_llm_uread_char(u, c);
}


/* a character of a string decoded: its code point, or a byte past ASCII */

static void
al_llm_uread_char(al_llm_uread_t *u, unsigned cp)
{
    if (!u->name) {
        if (u->cur >= 0) {
            al_llm_uread_text(u, (cp < 0x80) ? (unsigned char) cp : 'x');
        }

        return;
    }

    if (cp >= 0x80 || u->klen >= sizeof(u->key)) {
        u->klen = sizeof(u->key) + 1;           /* no name read */
        return;
    }

    u->key[u->klen++] = (char) cp;
}


/* a member's name ended: which of v[] its value is, else -1 */

static void
al_llm_uread_name(al_llm_uread_t *u)
{
    size_t           k;
    const al_str_t  *keys;

    u->slot = -1;

    if (u->depth == 1) {
        keys = u->anthropic ? al_llm_usage_ant_keys
               : u->responses ? al_llm_usage_resp_keys
               : al_llm_usage_oai_keys;

    } else if (u->depth == 2 && u->nest) {
        keys = u->anthropic ? al_llm_usage_ant_cc_keys
                            : al_llm_usage_details_keys;

    } else {
        return;
    }

    for (k = 0; keys[k].data != NULL; k++) {
        if (keys[k].len == u->klen
            && memcmp(keys[k].data, u->key, u->klen) == 0)
        {
            u->slot = (int) k + ((u->depth == 1) ? 0
                                 : u->anthropic ? 5 : 4);
            return;
        }
    }
}


/* an object (1) or an array opens */

static void
al_llm_uread_push(al_llm_uread_t *u, unsigned obj)
{
    uint64_t  bit;

    if (u->depth == AL_LLM_UREAD_DEPTH) {
        u->state = AL_LLM_U_BAD;
        return;
    }

    bit = UINT64_C(1) << (u->depth % 64);

    if (obj) {
        u->stack[u->depth / 64] |= bit;

    } else {
        u->stack[u->depth / 64] &= ~bit;
    }

    u->depth++;
    u->state = obj ? AL_LLM_U_KEY1 : AL_LLM_U_VALUE1;
}


/* an object (1) or an array closes: the one open, else the JSON is bad */

static void
al_llm_uread_pop(al_llm_uread_t *u, unsigned obj)
{
    u->depth--;

    if ((u->stack[u->depth / 64] >> (u->depth % 64) & 1) != obj) {
        u->state = AL_LLM_U_BAD;
        return;
    }

    if (u->depth <= 1) {
        u->nest = 0;
    }

    u->state = (u->depth == 0) ? AL_LLM_U_END : AL_LLM_U_AFTER;
}


/*
 * A count written as a decimal or a string is read as strtod() reads its
 * characters (al_llm_count_text()), from any number of them: kept are
 * its sign, its first AL_LLM_UREAD_DIGITS significant digits, whether a
 * digit not 0 follows them, and its power of ten, which make the same
 * double.
 */

static void
al_llm_uread_text(al_llm_uread_t *u, unsigned char c)
{
    unsigned  first;

    first = !u->t.any;
    u->t.any = 1;

    if (u->t.exp) {
        if ((c == '+' || c == '-') && u->t.esign) {
            u->t.eneg = (c == '-');

        } else if (al_llm_digit(c)) {
            u->t.edigit = 1;

            if (u->t.e < 1000000) {
                u->t.e = u->t.e * 10 + (c - '0');
            }

        } else {
            u->t.bad = 1;
        }

        u->t.esign = 0;
        return;
    }

    if ((c == '+' || c == '-') && first) {
        u->t.neg = (c == '-');

    } else if (c == '.' && !u->t.point) {
        u->t.point = 1;

    } else if ((c == 'e' || c == 'E') && u->t.digit) {
        u->t.exp = 1;
        u->t.esign = 1;

    } else if (!al_llm_digit(c)) {
        u->t.bad = 1;

    } else {
        u->t.digit = 1;

        if (c == '0' && u->t.nsig == 0) {
            if (u->t.point && u->t.dexp > -1000000) {
                u->t.dexp--;
            }

            return;
        }

        if (!u->t.point && u->t.dexp < 1000000) {
            u->t.dexp++;
        }

        if (u->t.nsig < AL_LLM_UREAD_DIGITS) {
            u->t.sig[u->t.nsig++] = (char) c;

        } else if (c != '0') {
            u->t.sticky = 1;
        }
    }
}


/* the count the text read makes, as al_llm_count_text() */

static uint64_t
al_llm_uread_count(const al_llm_uread_t *u)
{
    int       e;
    char      buf[AL_LLM_UREAD_DIGITS + 24];
    double    d;
    uint64_t  x;

    if (u->t.bad || !u->t.digit || (u->t.exp && !u->t.edigit) || u->t.neg
        || u->t.nsig == 0)
    {
        return 0;
    }

    e = u->t.dexp + (u->t.eneg ? -u->t.e : u->t.e);

    (void) snprintf(buf, sizeof(buf), "0.%.*s%se%d", (int) u->t.nsig,
                    u->t.sig, u->t.sticky ? "1" : "", e);

    d = strtod(buf, NULL);

    if (d >= (double) (UINT64_C(1) << 48)) {
        return UINT64_C(1) << 48;
    }

    x = (uint64_t) d;

    return x + ((double) x < d);
}


/*
 * jansson refuses some valid JSON (RFC 8259), as the strict scanner does:
 * a "\u0000" (in a name, or in a value without JSON_ALLOW_NUL), a lone
 * surrogate, an integer past 64 bits, a number past a double.  A client's
 * reader takes them (JSON.parse: a string with U+0000 or the lone half,
 * 1e20, Infinity), so a stream's event with one anywhere is read again
 * with them written as what the gateway reads the same way (a JSON
 * answer's usage takes them as they are: al_llm_uread_feed()):
 *
 *   - "\u0000" and a lone second half of a surrogate pair as "\u0001", a
 *     lone first half as "\ufffd": no name the gateway reads holds
 *     either, no string with either is a number, and each decodes to the
 *     bytes the scan of a stream counts for it (al_llm_sse.c);
 *   - an integer past 64 bits as the nearest within: a count past 2^48
 *     is 2^48 (as one past 2^48 within 64 bits is), a negative one none;
 *   - a decimal from 1e308 up (past a double from 1.8e308) as 1e308 or
 *     -1e308: a count of 2^48 where a decimal count is read, as a string
 *     "1e999" already was, or none.
 *
 * Invalid JSON stays invalid: only escapes and numbers that are valid
 * are rewritten, into valid ones of no more bytes, and the bytes around
 * them are kept.
 */

json_t *
al_llm_json_load(const unsigned char *p, size_t n)
{
    char          *q;
    size_t         len;
    json_t        *root;
    json_error_t   err;

    /* a NUL byte is in no valid JSON; jansson takes one after a number */

    if (n == 0 || memchr(p, '\0', n) != NULL) {
        return NULL;
    }

    root = json_loadb((const char *) p, n, 0, &err);

    if (root != NULL) {
        return root;
    }

    /* what is written is never longer than what it replaces */

    q = malloc(n);
    if (q == NULL) {
        return NULL;
    }

    len = al_llm_json_tame(p, n, q);

    if (len != 0) {
        root = json_loadb(q, len, 0, &err);
    }

    free(q);

    return root;
}


/* p[0..n) rewritten into q as al_llm_json_load() says; 0: unchanged */

static size_t
al_llm_json_tame(const unsigned char *p, size_t n, char *q)
{
    size_t          i, j, o;
    unsigned        cp, lo, changed;
    const char     *w;
    unsigned char   c;

    i = 0;
    o = 0;
    changed = 0;

    while (i < n) {
        c = p[i];

        if (c == '"') {
            q[o++] = (char) p[i++];

            while (i < n && p[i] != '"') {
                if (p[i] != '\\' || n - i < 6 || p[i + 1] != 'u'
                    || al_llm_json_hex4(p + i + 2, 4, &cp) != 0)
                {
                    /* a byte, or an escape left as it is (with its byte) */

                    if (p[i] == '\\' && n - i > 1) {
                        q[o++] = (char) p[i++];
                    }

                    q[o++] = (char) p[i++];
                    continue;
                }

                w = NULL;

                if (cp == 0 || (cp >= 0xdc00 && cp <= 0xdfff)) {
                    w = "\\u0001";

                } else if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (n - i >= 12 && p[i + 6] == '\\' && p[i + 7] == 'u'
                        && al_llm_json_hex4(p + i + 8, 4, &lo) == 0
                        && lo >= 0xdc00 && lo <= 0xdfff)
                    {
                        memcpy(q + o, p + i, 12);   /* a pair */
                        o += 12;
                        i += 12;
                        continue;
                    }

                    w = "\\ufffd";
                }

                if (w != NULL) {
                    memcpy(q + o, w, 6);
                    changed = 1;

                } else {
                    memcpy(q + o, p + i, 6);
                }

                o += 6;
                i += 6;
            }

            if (i < n) {
                q[o++] = (char) p[i++];
            }

            continue;
        }

        if (c != '-' && !al_llm_digit(c)) {
            q[o++] = (char) p[i++];
            continue;
        }

        /* a number: the bytes that may be one */

        for (j = i + 1;
             j < n && (al_llm_digit(p[j]) || p[j] == '.' || p[j] == 'e'
                       || p[j] == 'E' || p[j] == '+' || p[j] == '-');
             j++)
        {
            /* void */
        }

        w = al_llm_json_huge(p + i, j - i);

        if (w != NULL && strlen(w) <= j - i) {
            memcpy(q + o, w, strlen(w));
            o += strlen(w);
            changed = 1;

        } else {
            memcpy(q + o, p + i, j - i);
            o += j - i;
        }

        i = j;
    }

    return changed ? o : 0;
}


/*
 * A valid JSON number past what jansson reads: the number written in its
 * place; NULL for any other (one it reads, or no valid number).  An
 * integer is past 64 bits by its digits; a decimal is taken for one past
 * a double from 1e308 up (the largest double is 1.797...e308: one that
 * jansson still reads, between them, is a count of 2^48 all the same),
 * by where its first digit that is not 0 stands, and its exponent.
 */

static const char *
al_llm_json_huge(const unsigned char *p, size_t n)
{
    size_t     i, at, digits, first;
    int64_t    e, x;
    unsigned   neg, real, eneg;

    i = 0;
    neg = (p[0] == '-');
    i += neg;
    at = i;

    if (i == n || !al_llm_digit(p[i])
        || (p[i] == '0' && i + 1 < n && al_llm_digit(p[i + 1])))
    {
        return NULL;
    }

    first = SIZE_MAX;                   /* the first digit not 0 */

    while (i < n && al_llm_digit(p[i])) {
        if (first == SIZE_MAX && p[i] != '0') {
            first = i;
        }

        i++;
    }

    digits = i - at;
    real = 0;

    /* the power of ten past the first digit not 0: 10^(e-1) <= |v| */

    e = (first == SIZE_MAX) ? 0 : (int64_t) (i - first);

    if (i < n && p[i] == '.') {
        if (++i == n || !al_llm_digit(p[i])) {
            return NULL;
        }

        while (i < n && al_llm_digit(p[i])) {
            if (first == SIZE_MAX && p[i] != '0') {
                first = i;
                e = -(int64_t) (i - at - digits - 1);
            }

            i++;
        }

        real = 1;
    }

    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        eneg = 0;

        if (i < n && (p[i] == '+' || p[i] == '-')) {
            eneg = (p[i] == '-');
            i++;
        }

        if (i == n || !al_llm_digit(p[i])) {
            return NULL;
        }

        for (x = 0; i < n && al_llm_digit(p[i]); i++) {
            if (x < 1000000) {
                x = x * 10 + (p[i] - '0');
            }
        }

        e += eneg ? -x : x;
        real = 1;
    }

    if (i != n) {
        return NULL;
    }

    if (real) {
        if (first == SIZE_MAX || e < 309) {
            return NULL;
        }

        return neg ? "-1e308" : "1e308";
    }

    /* INT64_MAX is 9223372036854775807, 19 digits */

    if (digits < 19
        || (digits == 19
            && memcmp(p + at, neg ? "9223372036854775808"
                                  : "9223372036854775807", 19) <= 0))
    {
        return NULL;
    }

    return neg ? "-9223372036854775808" : "9223372036854775807";
}


/* four hex digits: their value in *cp, else -1 */

static int
al_llm_json_hex4(const unsigned char *p, size_t n, unsigned *cp)
{
    size_t    k;
    unsigned  d;

    *cp = 0;

    if (n < 4) {
        return -1;
    }

    for (k = 0; k < 4; k++) {
        d = p[k];

        if (al_llm_digit(d)) {
            d -= '0';

        } else if ((d | 0x20) >= 'a' && (d | 0x20) <= 'f') {
            d = (d | 0x20) - 'a' + 10;

        } else {
            return -1;
        }

        *cp = *cp << 4 | d;
    }

    return 0;
}


/*
 * A usage object as the usage reader reads it (al_llm_resp_usage()), in
 * the layout providers send: an object whose
 * values are integers of at most 18 digits, decimals without exponent,
 * strings of printable ASCII without escapes, true, false, null, or
 * objects of those (one level); no key twice in an object, keys without
 * escapes, whitespace where JSON allows it.  v[k] is the count of the
 * member keys[k], a non-negative integer, at most 2^48 (v[4]:
 * "cached_tokens" in the details object OpenAI's keys[3] names;
 * Anthropic's v[5] and v[6]: the members of its keys[4],
 * cache_creation).  1: anything else, which the usage reader reads.
 */

int
al_llm_usage_quick(al_llm_kind_t kind, al_llm_endpoint_t ep,
    const unsigned char *p, size_t len, uint64_t v[AL_LLM_USAGE_V])
{
    size_t           i;
    const al_str_t  *keys;

    keys = al_llm_usage_keys(kind, ep);

    memset(v, 0, AL_LLM_USAGE_V * sizeof(uint64_t));

    for (i = 0; i < len && al_llm_json_ws(p[i]); i++) { /* void */ }

    if (i == len || p[i] != '{'
        || al_llm_usage_object(p, &i, len, keys, v, 1) != 0)
    {
        return 1;
    }

    while (i < len && al_llm_json_ws(p[i])) {
        i++;
    }

    return (i == len) ? 0 : 1;
}


/* the members of the usage object of the API */

static const al_str_t *
al_llm_usage_keys(al_llm_kind_t kind, al_llm_endpoint_t ep)
{
    return (kind == AL_LLM_ANTHROPIC) ? al_llm_usage_ant_keys
           : (ep == AL_LLM_EP_RESPONSES) ? al_llm_usage_resp_keys
           : al_llm_usage_oai_keys;
}


/*
 * The object at p[*pos] ('{'): the integers of the members keys names
 * (NULL: none) into v[index]; keys other than Anthropic's name at index 3
 * an object whose keys are al_llm_usage_details_keys, read into v + 4;
 * Anthropic's at index 4 one of al_llm_usage_ant_cc_keys, into v + 5.
 * depth: how many levels of objects may still open inside.
 */

static int
al_llm_usage_object(const unsigned char *p, size_t *pos, size_t len,
    const al_str_t *keys, uint64_t *v, unsigned depth)
{
    int        id;
    size_t     i, j, k, n, at, nkeys, nall, hint;
    uint64_t   x;
    unsigned   neg, frac, seen;
    size_t     key_at[AL_LLM_QUICK_KEYS], key_len[AL_LLM_QUICK_KEYS];

    i = *pos + 1;
    nkeys = 0;                  /* the keys not in keys[] */
    nall = 0;
    hint = 0;                   /* keys[] come in their order, mostly */
    seen = 0;

    while (i < len && al_llm_json_ws(p[i])) {
        i++;
    }

    if (i < len && p[i] == '}') {
        *pos = i + 1;
        return 0;
    }

    for ( ;; ) {

        /* the key */

        if (i >= len || p[i] != '"') {
            return 1;
        }

        at = i + 1;

        /*
         * A name of keys[] is a key twice when its bit is set; any other
         * is compared with the other keys before it.  The name expected
         * next (hint) is compared where it lies: its bytes need no escape,
         * so when they and the quote after them are there, the run of
         * plain bytes would have ended at that quote.
         */

        id = -1;

        if (keys != NULL && keys[hint].data != NULL
            && keys[hint].len < len - at
            && p[at + keys[hint].len] == '"'
            && al_llm_same(keys[hint].data, p + at, keys[hint].len))
        {
            id = (int) hint;
            j = at + keys[hint].len;

        } else {
            j = al_llm_ascii_run(p, at, len, 0);

            if (j == len || p[j] != '"') {
                return 1;
            }

            n = j - at;

            if (keys != NULL) {
                for (k = 0; keys[k].data != NULL; k++) {
                    if (keys[k].len == n && keys[k].data[0] == (char) p[at]
                        && al_llm_same(keys[k].data, p + at, n))
                    {
                        id = (int) k;
                        break;
                    }
                }
            }
        }

        n = j - at;

        if (nall == AL_LLM_QUICK_KEYS) {
            return 1;
        }

        nall++;

        if (id >= 0) {
            if (seen & (1u << id)) {
                return 1;
            }

            seen |= 1u << id;
            hint = (size_t) id + 1;

        } else {
            for (k = 0; k < nkeys; k++) {
                if (key_len[k] == n && p[key_at[k]] == p[at]
                    && al_llm_same((const char *) p + key_at[k], p + at, n))
                {
                    return 1;
                }
            }

            key_at[nkeys] = at;
            key_len[nkeys] = n;
            nkeys++;
        }

        i = j + 1;

        while (i < len && al_llm_json_ws(p[i])) {
            i++;
        }

        if (i >= len || p[i] != ':') {
            return 1;
        }

        i++;

        while (i < len && al_llm_json_ws(p[i])) {
            i++;
        }

        if (i >= len) {
            return 1;
        }

        /* the value */

        switch (p[i]) {

        case '{':
            if (depth == 0) {
                return 1;
            }

            if (id == 3 && keys != al_llm_usage_ant_keys) {
                if (al_llm_usage_object(p, &i, len,
                                        al_llm_usage_details_keys, v + 4,
                                        depth - 1)
                    != 0)
                {
                    return 1;
                }

            } else if (id == 4 && keys == al_llm_usage_ant_keys) {
                if (al_llm_usage_object(p, &i, len,
                                        al_llm_usage_ant_cc_keys, v + 5,
                                        depth - 1)
                    != 0)
                {
                    return 1;
                }

            } else if (al_llm_usage_object(p, &i, len, NULL, NULL,
                                           depth - 1)
                       != 0)
            {
                return 1;
            }

            break;

        case '"':

            /* a count written as a string: the strict reader's */

            if (id >= 0) {
                return 1;
            }

            j = al_llm_ascii_run(p, i + 1, len, 0);

            if (j == len || p[j] != '"') {
                return 1;
            }

            i = j + 1;
            break;

        case 't':
            if (len - i < 4 || memcmp(p + i, "true", 4) != 0) {
                return 1;
            }

            i += 4;
            break;

        case 'f':
            if (len - i < 5 || memcmp(p + i, "false", 5) != 0) {
                return 1;
            }

            i += 5;
            break;

        case 'n':
            if (len - i < 4 || memcmp(p + i, "null", 4) != 0) {
                return 1;
            }

            i += 4;
            break;

        default:
            neg = (p[i] == '-');

            j = al_llm_quick_number(p, i, len, &x, &frac);
            if (j == 0) {
                return 1;
            }

            if (frac) {
                if (id >= 0) {
                    return 1;           /* a decimal count: the strict
                                           reader's */
                }

                neg = 1;
            }

            /* as al_llm_usage_u64(): negative 0, at most 2^48 */

            if (id >= 0 && !neg) {
                v[id] = x > (UINT64_C(1) << 48) ? (UINT64_C(1) << 48) : x;
            }

            i = j;
            break;
        }

        while (i < len && al_llm_json_ws(p[i])) {
            i++;
        }

        if (i < len && p[i] == ',') {
            i++;

            while (i < len && al_llm_json_ws(p[i])) {
                i++;
            }

            continue;
        }

        if (i < len && p[i] == '}') {
            *pos = i + 1;
            return 0;
        }

        return 1;
    }
}


/*
 * The captured "model" value as jansson reads it and al_llm_copy_str()
 * copies it; a string of printable ASCII without escapes (all models
 * named so far) is copied in place, anything else goes to jansson.
 */

static void
al_llm_resp_model(const al_llm_resp_t *r, char *model, size_t size)
{
    size_t                 i, j, k, n;
    json_t                *v;
    json_error_t           err;
    const unsigned char   *p;

    model[0] = '\0';

    p = (const unsigned char *) r->model;
    n = r->model_len;

    if (n == 0) {
        return;
    }

    for (i = 0; i < n && al_llm_json_ws(p[i]); i++) { /* void */ }

    if (i < n && p[i] == '"') {
        j = al_llm_ascii_run(p, i + 1, n, 0);

        if (j < n && p[j] == '"') {
            for (k = j + 1; k < n && al_llm_json_ws(p[k]); k++) {
                /* void */
            }

            if (k == n) {
                if (j - i - 1 < size) {
                    memcpy(model, p + i + 1, j - i - 1);
                    model[j - i - 1] = '\0';
                }

                return;
            }
        }
    }

    v = json_loadb(r->model, n, JSON_DECODE_ANY, &err);
    if (v != NULL) {
        (void) al_llm_copy_str(v, model, size);
        json_decref(v);
    }
}


int
al_llm_json_read(const al_llm_scan_spec_t *spec, const unsigned char *p,
    size_t len, al_llm_body_t *b, char *detail, size_t size)
{
    if (al_llm_json_quick(spec, p, len, b) == 0) {
        return 0;
    }

    return al_llm_json_scan(spec, p, len, b, detail, size);
}


/*
 * The quick reader: al_llm_json_scan() for the layouts providers send, in
 * less work.  It takes JSON whose strings are printable ASCII without
 * escapes, whose numbers are integers of at most 18 digits or decimals
 * without an exponent, nested at most AL_LLM_QUICK_DEPTH deep, with at
 * most AL_LLM_QUICK_KEYS keys in the open objects; whitespace anywhere
 * JSON allows it.  Anything else (escapes, other bytes, exponents, long
 * integers, deep nesting, many keys, duplicate keys, invalid JSON, prompt
 * counting) it leaves to the strict scanner by returning 1, so every
 * result is the strict scanner's: what it accepts, the strict scanner
 * accepts (ASCII, no escapes, no overflow, no key twice), and it records
 * what that records.  One loop, an explicit stack, no calls per value.
 */

int
al_llm_json_quick(const al_llm_scan_spec_t *spec, const unsigned char *p,
    size_t len, al_llm_body_t *b)
{
    int                    id;
    size_t                 i, j, k, n, at, depth, nkeys;
    int64_t                num;
    uint64_t               v;
    unsigned               kind, model, type, frac;
    al_llm_jfield_t       *field;
    al_llm_quick_frame_t  *fr;
    al_llm_quick_frame_t   stack[AL_LLM_QUICK_DEPTH];
    size_t                 key_at[AL_LLM_QUICK_KEYS];
    size_t                 key_len[AL_LLM_QUICK_KEYS];
    uint64_t               bit;

    if (spec->prompt || len == 0) {
        return 1;
    }

    al_llm_body_clear(b);               /* as al_llm_json_scan() */

    i = 0;
    depth = 0;
    nkeys = 0;
    fr = NULL;

    /* what the value read next is: the document */

    kind = AL_LLM_QK_ROOT;
    field = &b->root;
    model = 0;

    while (i < len && al_llm_json_ws(p[i])) {
        i++;
    }

value:

    if (i >= len) {
        return 1;
    }

    at = i;
    num = 0;

    switch (p[i]) {

    case '{':
    case '[':
        if (depth == AL_LLM_QUICK_DEPTH) {
            return 1;
        }

        fr = &stack[depth++];
        fr->obj = (p[i] == '{');
        fr->kind = fr->obj ? kind : AL_LLM_QK_OTHER;
        fr->field = field;
        fr->at = at;
        fr->first = nkeys;
        fr->seen = 0;
        fr->members = 0;
        fr->last = ++i;

        while (i < len && al_llm_json_ws(p[i])) {
            i++;
        }

        if (i < len && p[i] == (fr->obj ? '}' : ']')) {
            i++;
            goto close;
        }

        if (fr->obj) {
            goto key;
        }

        kind = AL_LLM_QK_OTHER;
        field = NULL;
        model = 0;
        goto value;

    case '"':
        j = al_llm_quick_run(p, i + 1, len);

        if (j == len || p[j] != '"') {
            return 1;
        }

        n = j - i - 1;

        if (model) {
            memcpy(b->model, p + i + 1,
                   n < sizeof(b->model) ? n : sizeof(b->model));
        }

        type = AL_LLM_JT_STRING;
        num = (int64_t) n;
        i = j + 1;
        break;

    case 't':
        if (len - i < 4 || memcmp(p + i, "true", 4) != 0) {
            return 1;
        }

        type = AL_LLM_JT_TRUE;
        i += 4;
        break;

    case 'f':
        if (len - i < 5 || memcmp(p + i, "false", 5) != 0) {
            return 1;
        }

        type = AL_LLM_JT_FALSE;
        i += 5;
        break;

    case 'n':
        if (len - i < 4 || memcmp(p + i, "null", 4) != 0) {
            return 1;
        }

        type = AL_LLM_JT_NULL;
        i += 4;
        break;

    default:
        j = al_llm_quick_number(p, i, len, &v, &frac);
        if (j == 0) {
            return 1;
        }

        type = frac ? AL_LLM_JT_REAL : AL_LLM_JT_INT;

        if (type == AL_LLM_JT_INT) {
            num = (p[i] == '-') ? -(int64_t) v : (int64_t) v;
        }

        i = j;
        break;
    }

    if (field != NULL) {
        field->type = type;
        field->esc = 0;
        field->at = at;
        field->len = i - at;
        field->num = num;
    }

next:

    /* after a value: the end, or what its object or array has next */

    if (depth == 0) {
        while (i < len && al_llm_json_ws(p[i])) {
            i++;
        }

        return (i == len) ? 0 : 1;
    }

    fr = &stack[depth - 1];
    fr->last = i;

    while (i < len && al_llm_json_ws(p[i])) {
        i++;
    }

    if (i < len && p[i] == ',') {
        i++;

        while (i < len && al_llm_json_ws(p[i])) {
            i++;
        }

        if (fr->obj) {
            goto key;
        }

        kind = AL_LLM_QK_OTHER;
        field = NULL;
        model = 0;
        goto value;
    }

    if (i < len && p[i] == (fr->obj ? '}' : ']')) {
        i++;
        goto close;
    }

    return 1;

close:

    /* the byte after '}' or ']' */

    fr = &stack[--depth];

    if (fr->obj) {
        nkeys = fr->first;

        if (fr->kind == AL_LLM_QK_ROOT) {
            b->root_last = fr->last;
            b->root_members = fr->members;

        } else if (fr->kind == AL_LLM_QK_NESTED) {
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

    goto next;

key:

    /* a member of the object fr */

    if (i >= len || p[i] != '"') {
        return 1;
    }

    at = i + 1;
    j = al_llm_quick_run(p, at, len);

    if (j == len || p[j] != '"') {
        return 1;
    }

    n = j - at;

    /*
     * Keys without escapes: the same bytes are the same key.  Equal keys
     * have the same length and ends, so the same bit of fr->seen: the
     * keys before are compared only when this key's bit is already set.
     */

    bit = (uint64_t) 1 << ((n * 7 + p[at] + p[j - 1]) & 63);

    if (fr->seen & bit) {
        for (k = fr->first; k < nkeys; k++) {
            if (key_len[k] == n && p[key_at[k]] == p[at]
                && al_llm_same((const char *) p + key_at[k], p + at, n))
            {
                return 1;
            }
        }
    }

    fr->seen |= bit;

    if (nkeys == AL_LLM_QUICK_KEYS) {
        return 1;
    }

    key_at[nkeys] = at;
    key_len[nkeys] = n;
    nkeys++;
    fr->members++;

    i = j + 1;

    while (i < len && al_llm_json_ws(p[i])) {
        i++;
    }

    if (i >= len || p[i] != ':') {
        return 1;
    }

    i++;

    while (i < len && al_llm_json_ws(p[i])) {
        i++;
    }

    /* what the member is to the caller, as the strict scanner tells it */

    kind = AL_LLM_QK_OTHER;
    field = NULL;
    model = 0;

    if (fr->kind == AL_LLM_QK_ROOT) {
        id = (spec->keys != NULL) ? al_llm_quick_key(spec->keys, p + at, n)
                                  : al_llm_quick_name(spec->names, p + at, n);

        if (id >= 0) {
            field = &b->f[id];

            if (id == spec->model) {
                model = 1;

            } else if (id == spec->nested) {
                kind = AL_LLM_QK_NESTED;
            }
        }

    } else if (fr->kind == AL_LLM_QK_NESTED) {
        id = (spec->nested_keys != NULL)
             ? al_llm_quick_key(spec->nested_keys, p + at, n)
             : al_llm_quick_name(spec->nested_names, p + at, n);

        if (id >= 0) {
            field = &b->f[spec->nested_base + (size_t) id];
        }
    }

    goto value;
}


/*
 * The index of the name s (n bytes, none of them NUL: a key of printable
 * ASCII) in names, else -1.  A name matches when its first n bytes are
 * those of s and it ends there.  The comparison stops at a shorter
 * name's NUL, which differs from every byte of s, so no name is read past
 * its end and none needs measuring.
 */

/*
 * A number at p[i] as the quick readers take it: '-' or not, an integer
 * part of at most 18 digits (so no overflow to check), a fraction or not,
 * no exponent.  Returns the index after it, or 0 to decline (the strict
 * scanner decides); *v is the integer part, *frac says if there was a
 * fraction.
 */

static inline size_t
al_llm_quick_number(const unsigned char *p, size_t i, size_t len,
    uint64_t *v, unsigned *frac)
{
    size_t    j, start;
    uint64_t  x;

    j = i + (p[i] == '-');

    if (j >= len || !al_llm_digit(p[j])) {
        return 0;
    }

    x = 0;

    if (p[j] == '0') {
        j++;

    } else {
        start = j;

        while (j < len && al_llm_digit(p[j])) {
            if (j - start == 18) {
                return 0;
            }

            x = x * 10 + (uint64_t) (p[j] - '0');
            j++;
        }
    }

    *frac = 0;

    if (j < len && p[j] == '.') {
        j++;

        if (j >= len || !al_llm_digit(p[j])) {
            return 0;
        }

        while (j < len && al_llm_digit(p[j])) {
            j++;
        }

        *frac = 1;
    }

    if (j < len && (p[j] | 0x20) == 'e') {
        return 0;
    }

    *v = x;

    return j;
}


static inline int
al_llm_quick_name(const char *const *names, const unsigned char *s,
    size_t n)
{
    int          i;
    const char  *name;

    if (names == NULL || n == 0) {
        return -1;
    }

    for (i = 0; names[i] != NULL; i++) {
        name = names[i];

        if ((unsigned char) name[0] == s[0]
            && strncmp(name, (const char *) s, n) == 0 && name[n] == '\0')
        {
            return i;
        }
    }

    return -1;
}


/*
 * al_llm_quick_name() with the names' lengths: a name is compared only
 * when it has the key's length and first byte, in place, by words.
 */

static inline int
al_llm_quick_key(const al_str_t *keys, const unsigned char *s, size_t n)
{
    int  i;

    for (i = 0; keys[i].data != NULL; i++) {
        if (keys[i].len == n && (unsigned char) keys[i].data[0] == s[0]
            && al_llm_same(keys[i].data, s, n))
        {
            return i;
        }
    }

    return -1;
}


/*
 * al_llm_ascii_run() without del, for the quick reader: the first byte
 * in p[i..n) that is not printable ASCII, or is '"' or '\\', else n.
 * Sixteen bytes at a time with SSE2 (a signed compare with 0x20 takes
 * the bytes under it and those from 0x80 at once).
 */

static inline size_t
al_llm_quick_run(const unsigned char *p, size_t i, size_t n)
{
#if (defined __x86_64__ && defined __SSE2__)

    unsigned  m;
    __m128i   v;

    while (n - i >= 16) {
        v = _mm_loadu_si128((const __m128i *) (const void *) (p + i));
        m = (unsigned) _mm_movemask_epi8(
                _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                 _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                    _mm_cmplt_epi8(v, _mm_set1_epi8(0x20))));

        if (m != 0) {
            return i + (size_t) __builtin_ctz(m);
        }

        i += 16;
    }

    while (i < n && al_llm_json_plain[p[i]]) {
        i++;
    }

    return i;

#else

    return al_llm_ascii_run(p, i, n, 0);

#endif
}


/* al_llm_usage_parse()'s buffer for a long usage value */

static void *
al_llm_resp_stack(void *ctx, size_t size)
{
    (void) size;

    return ctx;
}


int
al_llm_usage_parse(al_llm_kind_t kind, al_llm_endpoint_t ep,
    const unsigned char *body, size_t len, al_llm_usage_t *u, char *model,
    size_t model_size)
{
    al_llm_resp_t  r;
    char           usage[AL_LLM_USAGE_MAX];

    al_llm_resp_init(&r, kind, ep);
    r.alloc = al_llm_resp_stack;
    r.alloc_ctx = usage;
    al_llm_resp_feed(&r, body, len);

    return al_llm_resp_usage(&r, u, model, model_size);
}


/* {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details} */

void
al_llm_usage_openai(const json_t *usage, al_llm_usage_t *u)
{
    al_llm_usage_counts(usage, "prompt_tokens", "completion_tokens",
                        "prompt_tokens_details", u);
}


/* {input_tokens, output_tokens, total_tokens, input_tokens_details} */

void
al_llm_usage_responses(const json_t *usage, al_llm_usage_t *u)
{
    al_llm_usage_counts(usage, "input_tokens", "output_tokens",
                        "input_tokens_details", u);
}


/* the two layouts' reader: their input and output counts' names differ */

static void
al_llm_usage_counts(const json_t *usage, const char *in, const char *out,
    const char *details, al_llm_usage_t *u)
{
    json_t  *d;

    memset(u, 0, sizeof(*u));

    u->prompt_tokens = al_llm_json_u64(usage, in, NULL);
    u->completion_tokens = al_llm_json_u64(usage, out, NULL);
    u->total_tokens = al_llm_json_u64(usage, "total_tokens", NULL);

    /* some count read: the others as a client reads them */

    if ((u->prompt_tokens | u->completion_tokens | u->total_tokens) != 0) {
        u->prompt_tokens = al_llm_json_count(usage, in, u->prompt_tokens);
        u->completion_tokens = al_llm_json_count(usage, out,
                                                 u->completion_tokens);
        u->total_tokens = al_llm_json_count(usage, "total_tokens",
                                            u->total_tokens);
    }

    d = json_object_get(usage, details);
    if (d != NULL && json_is_object(d)) {
        u->cached_tokens = al_llm_json_u64(d, "cached_tokens", NULL);
    }

    al_llm_usage_total(u);
}


/*
 * Anthropic's input_tokens leaves out what was read from or written to the
 * cache; all three are input the request consumed.  Its cache writes
 * (cache_creation_input_tokens) are broken down, in cache_creation, into
 * those written for 5 minutes and for an hour, which cost more; where the
 * parts add up to more than the total, the parts are taken.
 */

void
al_llm_usage_anthropic(uint64_t in, uint64_t cache_read,
    uint64_t cache_write, uint64_t write_5m, uint64_t write_1h,
    uint64_t out, al_llm_usage_t *u)
{
    memset(u, 0, sizeof(*u));

    if (write_5m + write_1h > cache_write) {
        cache_write = write_5m + write_1h;
    }

    u->prompt_tokens = in + cache_read + cache_write;
    u->completion_tokens = out;
    u->cached_tokens = cache_read;
    u->cache_write_tokens = cache_write;
    u->cache_write_1h_tokens = write_1h;
    u->total_tokens = u->prompt_tokens + u->completion_tokens;
}


uint64_t
al_llm_json_u64(const json_t *obj, const char *key, unsigned *found)
{
    json_t      *v;
    json_int_t   i;

    if (found != NULL) {
        *found = 0;
    }

    v = json_object_get(obj, key);
    if (v == NULL || !json_is_integer(v)) {
        return 0;
    }

    i = json_integer_value(v);
    if (i < 0) {
        return 0;
    }

    if (found != NULL) {
        *found = 1;
    }

    /* no count is near 2^40; this keeps sums far from wrapping */
    return (uint64_t) i > (UINT64_C(1) << 48) ? (UINT64_C(1) << 48)
                                             : (uint64_t) i;
}


/*
 * The characters of a number, or of a string between its quotes, read as
 * the usage reader reads a count's (al_llm_uread_text()): a string's
 * escapes decoded, its characters a number as strtod() reads one.
 */

uint64_t
al_llm_count_text(const unsigned char *p, size_t n)
{
    al_llm_uread_t  u;

    al_llm_uread_init(&u, AL_LLM_OPENAI, AL_LLM_EP_CHAT);
    u.state = AL_LLM_U_STRING;
    u.cur = 0;

    al_llm_uread_feed(&u, p, n);
    al_llm_uread_feed(&u, (const unsigned char *) "\"", 1);

    return (u.state == AL_LLM_U_END) ? u.c[0] : 0;
}


uint64_t
al_llm_json_count(const json_t *obj, const char *key, uint64_t v)
{
    size_t           k, len;
    double           d;
    json_t          *j;
    uint64_t         x;
    const char      *s;
    al_llm_uread_t   u;

    j = json_object_get(obj, key);

    if (j == NULL) {
        return v;
    }

    if (json_is_real(j)) {
        d = json_real_value(j);

        if (!(d > 0)) {
            return v;
        }

        if (d >= (double) (UINT64_C(1) << 48)) {
            x = UINT64_C(1) << 48;

        } else {
            x = (uint64_t) d;
            x += ((double) x < d);
        }

    } else if (json_is_string(j)) {

        /* its characters, decoded already: a backslash is no escape */

        s = json_string_value(j);
        len = json_string_length(j);
        memset(&u.t, 0, sizeof(u.t));

        for (k = 0; k < len; k++) {
            al_llm_uread_text(&u, (unsigned char) s[k]);
        }

        x = al_llm_uread_count(&u);

    } else {
        return v;
    }

    return (x > v) ? x : v;
}


int
al_llm_copy_str(const json_t *v, char *dst, size_t size)
{
    size_t  len;

    if (size == 0) {
        return -1;
    }

    dst[0] = '\0';

    if (v == NULL || !json_is_string(v)) {
        return -1;
    }

    len = json_string_length(v);
    if (len >= size) {
        return -1;
    }

    memcpy(dst, json_string_value(v), len);
    dst[len] = '\0';

    return 0;
}


uint64_t
al_llm_text_bytes(const json_t *v, unsigned depth)
{
    size_t       i, k;
    json_t      *m;
    uint64_t     n;
    const char  *key;

    if (v == NULL || depth > AL_JSON_DEPTH_MAX) {
        return 0;
    }

    n = 0;

    switch (json_typeof(v)) {

    case JSON_STRING:
        return json_string_length(v);

    case JSON_ARRAY:
        json_array_foreach(v, i, m) {
            n += al_llm_text_bytes(m, depth + 1);
        }
        return n;

    case JSON_OBJECT:
        json_object_foreach((json_t *) v, key, m) {
            for (k = 0; al_llm_meta_keys[k] != NULL; k++) {
                if (strcmp(key, al_llm_meta_keys[k]) == 0) {
                    break;
                }
            }

            if (al_llm_meta_keys[k] == NULL) {
                n += al_llm_text_bytes(m, depth + 1);
            }
        }
        return n;

    default:
        return 0;
    }
}


size_t
al_llm_show(char *dst, size_t cap, const char *src, size_t len, size_t max)
{
    size_t         i;
    unsigned char  c;

    if (cap == 0) {
        return 0;
    }

    if (max > cap - 1) {
        max = cap - 1;
    }

    for (i = 0; i < len && i < max; i++) {
        c = (unsigned char) src[i];
        dst[i] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
                 ? (char) c : '?';
    }

    if (i < len && i >= 3) {
        memcpy(dst + i - 3, "...", 3);
    }

    dst[i] = '\0';

    return i;
}


/*
 * The usage line is written straight into a buffer that holds the longest
 * line: AL_LLM_RECORD_WORST bounds it, with the names and punctuation
 * under 512 bytes, five strings of AL_LLM_RECORD_STR_MAX bytes and the
 * model's AL_LLM_MODEL_MAX / 2 escaped at worst (six bytes a byte:
 * \u0001, \u00ff or \ufffd, and two quotes), ten numbers of 20 digits and the
 * cost (tests/unit/llm.c writes the worst line).  So only the strings and
 * numbers are written by the bounded writer, and the names and
 * punctuation between them are plain copies: a short line of code each.
 */

#define AL_LLM_RECORD_WORST                                                   \
    (512 + 5 * (2 + 6 * AL_LLM_RECORD_STR_MAX)                                \
     + (2 + 6 * (AL_LLM_MODEL_MAX / 2)) + 10 * 20 + AL_LLM_USD_MAX)

_Static_assert(AL_LLM_RECORD_WORST < AL_LLM_RECORD_MAX,
               "the longest usage line fits AL_LLM_RECORD_MAX");

/* a literal, where the whole line is known to fit */
#define al_llm_put_lit(o, lit)                                                \
    do {                                                                      \
        memcpy((o)->buf + (o)->len, lit, sizeof(lit) - 1);                    \
        (o)->len += sizeof(lit) - 1;                                          \
    } while (0)

/* name (a literal: ,"key":) and the string s cut to max bytes, never
   inside a UTF-8 sequence */
#define al_llm_put_field(o, name, s, max)                                     \
    do {                                                                      \
        al_llm_put_lit(o, name);                                              \
        al_llm_out_json(o, (s)->data,                                         \
                        (s)->len <= (max)                                     \
                            ? (s)->len                                        \
                            : al_utf8_cut((s)->data, (s)->len, (max)));       \
    } while (0)

/* name (a literal: ,"key":) and the string s, needing no escape, cut */
#define al_llm_put_plain(o, name, s)                                          \
    do {                                                                      \
        size_t  n_;                                                           \
                                                                              \
        al_llm_put_lit(o, name);                                              \
        n_ = (s)->len < AL_LLM_RECORD_STR_MAX ? (s)->len                      \
                                              : AL_LLM_RECORD_STR_MAX;        \
        (o)->buf[(o)->len] = '"';                                             \
        memcpy((o)->buf + (o)->len + 1, (s)->data, n_);                       \
        (o)->buf[(o)->len + 1 + n_] = '"';                                    \
        (o)->len += n_ + 2;                                                   \
    } while (0)

/*
 * name (a literal: ,"key":) and v in decimal; up to three digits (most
 * counts and latencies, every status) written here, the rest by
 * al_llm_out_u64()
 */
#define al_llm_put_count(o, name, v)                                          \
    do {                                                                      \
        uint64_t  v_ = (v);                                                   \
                                                                              \
        al_llm_put_lit(o, name);                                              \
                                                                              \
        if (v_ < 10) {                                                        \
            (o)->buf[(o)->len++] = (char) ('0' + v_);                         \
                                                                              \
        } else if (v_ < 100) {                                                \
            memcpy((o)->buf + (o)->len, al_llm_pairs + v_ * 2, 2);            \
            (o)->len += 2;                                                    \
                                                                              \
        } else if (v_ < 1000) {                                               \
            (o)->buf[(o)->len] = (char) ('0' + v_ / 100);                     \
            memcpy((o)->buf + (o)->len + 1, al_llm_pairs + v_ % 100 * 2, 2);  \
            (o)->len += 3;                                                    \
                                                                              \
        } else {                                                              \
            al_llm_out_u64(o, v_);                                            \
        }                                                                     \
    } while (0)


size_t
al_llm_record_format(const al_llm_record_t *rec, char *buf, size_t size)
{
    if (size >= AL_LLM_RECORD_MAX) {
        return al_llm_record_write(rec, buf);
    }

    return al_llm_record_cut(rec, buf, size);
}


/*
 * A buffer shorter than the longest line: the line is written whole on
 * the stack and cut into buf by the bounded writer, as snprintf would.
 * Kept out of line, so the usual call's frame does not hold the copy.
 */

static AL_LLM_NOINLINE size_t
al_llm_record_cut(const al_llm_record_t *rec, char *buf, size_t size)
{
    al_llm_out_t  o;
    char          line[AL_LLM_RECORD_MAX];

    al_llm_out_init(&o, buf, size);
    al_llm_out_raw(&o, line, al_llm_record_write(rec, line));

    return o.len;
}


/* the line into buf, which holds AL_LLM_RECORD_MAX bytes; its length */

static size_t
al_llm_record_write(const al_llm_record_t *rec, char *buf)
{
    int64_t          ms, days, sec, secs, year;
    unsigned         month, day;
    al_llm_out_t     o;
    al_llm_clock_t  *clock;
    size_t           n;
    uint64_t         total;
    const al_str_t  *ep, *src;
    char             usd[AL_LLM_USD_MAX];
    char             ts[23];            /* 2026-12-01T15:04:05.123 */

    al_llm_out_init(&o, buf, AL_LLM_RECORD_MAX);

    days = rec->time_ms / 86400000;
    ms = rec->time_ms % 86400000;
    if (ms < 0) {
        ms += 86400000;
        days--;
    }

    sec = ms / 1000;
    ms %= 1000;
    secs = days * 86400 + sec;

    total = rec->usage.total_tokens;
    if (total == 0) {
        total = rec->usage.prompt_tokens + rec->usage.completion_tokens;
    }

    /*
     * 2026-12-01T15:04:05.123Z, written digit by digit, or to the second
     * as the caller's clock has it when it is of the same second
     */

    al_llm_put_lit(&o, "{\"time\":\"");

    clock = rec->clock;

    if (clock != NULL && clock->sec == secs) {
        memcpy(o.buf + o.len, clock->text, sizeof(clock->text));
        o.len += sizeof(clock->text);

    } else {
        al_llm_civil(days, &year, &month, &day);

        /* years past 9999 (only from nonsense clocks) take more digits */

        if (year > 9999) {
            al_llm_out_dec(&o, (uint64_t) year, 4);

        } else {
            al_llm_digits(ts, (unsigned) (year < 0 ? 0 : year), 4);
            memcpy(o.buf + o.len, ts, 4);
            o.len += 4;
        }

        ts[4] = '-';
        al_llm_digits(ts + 5, month, 2);
        ts[7] = '-';
        al_llm_digits(ts + 8, day, 2);
        ts[10] = 'T';
        al_llm_digits(ts + 11, (unsigned) (sec / 3600), 2);
        ts[13] = ':';
        al_llm_digits(ts + 14, (unsigned) (sec / 60 % 60), 2);
        ts[16] = ':';
        al_llm_digits(ts + 17, (unsigned) (sec % 60), 2);
        memcpy(o.buf + o.len, ts + 4, 15);
        o.len += 15;

        if (clock != NULL && year <= 9999) {
            memcpy(clock->text, o.buf + o.len - sizeof(clock->text),
                   sizeof(clock->text));
            clock->sec = secs;
        }
    }

    ts[19] = '.';
    al_llm_digits(ts + 20, (unsigned) ms, 3);
    memcpy(o.buf + o.len, ts + 19, 4);
    o.len += 4;

    al_llm_put_lit(&o, "Z\"");
    al_llm_put_field(&o, ",\"request_id\":", &rec->request_id,
                     AL_LLM_RECORD_STR_MAX);
    if (rec->names_plain) {
        al_llm_put_plain(&o, ",\"client\":", &rec->client);
        al_llm_put_plain(&o, ",\"provider\":", &rec->provider);

    } else {
        al_llm_put_field(&o, ",\"client\":", &rec->client,
                         AL_LLM_RECORD_STR_MAX);
        al_llm_put_field(&o, ",\"provider\":", &rec->provider,
                         AL_LLM_RECORD_STR_MAX);
    }
    al_llm_put_lit(&o, ",\"endpoint\":\"");
    ep = al_llm_record_endpoint(rec->endpoint);
    al_llm_out_raw(&o, ep->data, ep->len);
    al_llm_put_lit(&o, "\"");
    al_llm_put_field(&o, ",\"model\":", &rec->model, AL_LLM_MODEL_MAX / 2);

    if (rec->alias.len) {
        al_llm_put_field(&o, ",\"alias\":", &rec->alias,
                         AL_LLM_RECORD_STR_MAX);
    }

    if (rec->fallback_from.len) {
        al_llm_put_field(&o, ",\"fallback_from\":", &rec->fallback_from,
                         AL_LLM_RECORD_STR_MAX);
        al_llm_put_count(&o, ",\"fallback_status\":", rec->fallback_status);
    }

    al_llm_put_count(&o, ",\"prompt_tokens\":", rec->usage.prompt_tokens);
    al_llm_put_count(&o, ",\"completion_tokens\":",
                     rec->usage.completion_tokens);
    al_llm_put_count(&o, ",\"cached_tokens\":", rec->usage.cached_tokens);

    if (rec->usage.cache_write_tokens != 0) {
        al_llm_put_count(&o, ",\"cache_write_tokens\":",
                         rec->usage.cache_write_tokens);
        al_llm_put_count(&o, ",\"cache_write_1h_tokens\":",
                         rec->usage.cache_write_1h_tokens);
    }

    al_llm_put_count(&o, ",\"total_tokens\":", total);
    al_llm_put_count(&o, ",\"status\":", rec->status);
    al_llm_put_count(&o, ",\"latency_ms\":", rec->latency_ms);
    al_llm_put_count(&o, ",\"ttfb_ms\":", rec->ttfb_ms);

    if (rec->stream) {
        al_llm_put_lit(&o, ",\"stream\":true");

    } else {
        al_llm_put_lit(&o, ",\"stream\":false");
    }

    al_llm_put_lit(&o, ",\"usage_source\":\"");
    src = ((unsigned) rec->source > AL_LLM_SOURCE_ESTIMATED)
          ? &al_llm_source_names[AL_LLM_SOURCE_ESTIMATED + 1]
          : &al_llm_source_names[rec->source];
    al_llm_out_raw(&o, src->data, src->len);
    al_llm_put_lit(&o, "\",\"cost_usd\":");

    if (rec->priced) {
        n = al_llm_usd_format(rec->cost, usd, sizeof(usd));
        al_llm_out_raw(&o, usd, n < sizeof(usd) ? n : sizeof(usd) - 1);

    } else {
        al_llm_put_lit(&o, "null");
    }

    al_llm_put_lit(&o, "}");
    o.buf[o.len] = '\0';

    return o.len;
}


/* the endpoint as the usage line names it */

static const al_str_t *
al_llm_record_endpoint(al_llm_endpoint_t ep)
{
    static const al_str_t  names[] = {
        AL_LLM_KEY("none"), AL_LLM_KEY("chat"), AL_LLM_KEY("completions"),
        AL_LLM_KEY("embeddings"), AL_LLM_KEY("responses"),
        AL_LLM_KEY("messages"), AL_LLM_KEY("models")
    };

    switch (ep) {

    case AL_LLM_EP_CHAT:
        return &names[1];

    case AL_LLM_EP_COMPLETIONS:
        return &names[2];

    case AL_LLM_EP_EMBEDDINGS:
        return &names[3];

    case AL_LLM_EP_RESPONSES:
        return &names[4];

    case AL_LLM_EP_MESSAGES:
        return &names[5];

    case AL_LLM_EP_MODELS:
    case AL_LLM_EP_MODEL:
        return &names[6];

    default:
        return &names[0];
    }
}




void
al_llm_out_init(al_llm_out_t *o, char *buf, size_t size)
{
    o->buf = buf;
    o->size = size;
    o->len = 0;

    if (buf != NULL && size > 0) {
        buf[0] = '\0';
    }
}


void
al_llm_out_cut(al_llm_out_t *o, const char *s, size_t n)
{
    size_t  room;

    if (o->buf != NULL && o->size > 0 && o->len < o->size - 1) {
        room = o->size - 1 - o->len;
        if (room > n) {
            room = n;
        }
        memcpy(o->buf + o->len, s, room);
        o->buf[o->len + room] = '\0';
    }

    o->len += n;
}


void
al_llm_out_cstr(al_llm_out_t *o, const char *s)
{
    al_llm_out_raw(o, s, strlen(s));
}


/*
 * v in decimal, two digits a turn; straight into the buffer when the
 * longest number fits.
 */

void
al_llm_out_u64(al_llm_out_t *o, uint64_t v)
{
    size_t  n;
    char    tmp[20];

    if (o->len + sizeof(tmp) < o->size) {

        /* most counts, statuses and latencies: one or two digits */

        if (v < 100) {
            if (v < 10) {
                o->buf[o->len++] = (char) ('0' + v);

            } else {
                memcpy(o->buf + o->len, al_llm_pairs + v * 2, 2);
                o->len += 2;
            }

            o->buf[o->len] = '\0';
            return;
        }

        n = al_llm_dec_len(v);
        al_llm_dec_back(o->buf + o->len + n, v);
        o->len += n;
        o->buf[o->len] = '\0';
        return;
    }

    n = al_llm_dec_len(v);
    al_llm_dec_back(tmp + n, v);
    al_llm_out_raw(o, tmp, n);
}


/* the number of decimal digits of v */

static size_t
al_llm_dec_len(uint64_t v)
{
    size_t  n;

    static const uint64_t  pow10[] = {
        UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000),
        UINT64_C(100000), UINT64_C(1000000), UINT64_C(10000000),
        UINT64_C(100000000), UINT64_C(1000000000), UINT64_C(10000000000),
        UINT64_C(100000000000), UINT64_C(1000000000000),
        UINT64_C(10000000000000), UINT64_C(100000000000000),
        UINT64_C(1000000000000000), UINT64_C(10000000000000000),
        UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
        UINT64_C(10000000000000000000)
    };

    for (n = 0; n < sizeof(pow10) / sizeof(pow10[0]) && v >= pow10[n]; n++) {
        /* void */
    }

    return n + 1;
}


char *
al_llm_dec_back(char *end, uint64_t v)
{
    uint64_t  q;
    unsigned  r;

    /* four digits a division by a constant, then two */

    while (v >= 10000) {
        q = v / 10000;
        r = (unsigned) (v - q * 10000);
        v = q;

        end -= 4;
        memcpy(end, al_llm_pairs + (r / 100) * 2, 2);
        memcpy(end + 2, al_llm_pairs + (r % 100) * 2, 2);
    }

    if (v >= 100) {
        end -= 2;
        memcpy(end, al_llm_pairs + (v % 100) * 2, 2);
        v /= 100;
    }

    if (v >= 10) {
        end -= 2;
        memcpy(end, al_llm_pairs + v * 2, 2);

    } else {
        *--end = (char) ('0' + v);
    }

    return end;
}


/* v in decimal, at least width digits (zeros in front); no printf */

static void
al_llm_out_dec(al_llm_out_t *o, uint64_t v, size_t width)
{
    char   *p;
    char    tmp[24];

    p = tmp + sizeof(tmp);

    do {
        *--p = (char) ('0' + v % 10);
        v /= 10;
    } while (v != 0 || (size_t) (tmp + sizeof(tmp) - p) < width);

    al_llm_out_raw(o, p, (size_t) (tmp + sizeof(tmp) - p));
}


/* the width lowest decimal digits of v, zero-padded, at p */

static void
al_llm_digits(char *p, unsigned v, size_t width)
{
    while (width >= 2) {
        width -= 2;
        memcpy(p + width, al_llm_pairs + (v % 100) * 2, 2);
        v /= 100;
    }

    if (width == 1) {
        p[0] = (char) ('0' + v % 10);
    }
}


void
al_llm_out_json(al_llm_out_t *o, const char *s, size_t n)
{
    char  *d;

    /* most strings: printable ASCII that needs no escape, room for all */

    if (s != NULL && o->len + n + 2 < o->size
        && al_llm_ascii_run((const unsigned char *) s, 0, n, 1) == n)
    {
        d = o->buf + o->len;
        d[0] = '"';
        memcpy(d + 1, s, n);
        d[n + 1] = '"';
        d[n + 2] = '\0';
        o->len += n + 2;
        return;
    }

    al_llm_out_escaped(o, s, n);
}


/*
 * The rest of al_llm_out_json(): strings with bytes to escape, or too
 * long for the room left.  Out of line, so the usual call's code stays
 * a few cache lines.
 */

static AL_LLM_NOINLINE void
al_llm_out_escaped(al_llm_out_t *o, const char *s, size_t n)
{
    char                 *e;
    size_t                i, j, k;
    unsigned char         c;
    const unsigned char  *p;
    char                  esc[8];

    static const char  hex[] = "0123456789abcdef";

    p = (const unsigned char *) s;

    al_llm_out_raw(o, "\"", 1);

    for (i = 0; s != NULL && i < n; /* void */) {

        /* a run of printable ASCII that needs no escape, in one copy */

        j = al_llm_ascii_run(p, i, n, 1);

        if (j > i) {
            al_llm_out_raw(o, s + i, j - i);
            i = j;
            continue;
        }

        c = p[i];

        if (c >= 0x80) {

            /* as in every log line (al_json_escape()): an invalid byte or
               a C1 control as \u00XX, a bidi control or line separator
               (all of them E2 xx xx) as \u20XX, other characters as
               they are */

            k = al_utf8_len(p + i, n - i);

            if (k == 0 || (k == 2 && c == 0xc2 && p[i + 1] < 0xa0)
                || (k == 3 && c == 0xe2))
            {
                k = (k == 0) ? 1 : k;
                e = al_json_escape(esc, s + i, k);
                al_llm_out_raw(o, esc, (size_t) (e - esc));

            } else {
                al_llm_out_raw(o, s + i, k);
            }

            i += k;
            continue;
        }

        switch (c) {

        case '"':
            al_llm_out_raw(o, "\\\"", 2);
            break;

        case '\\':
            al_llm_out_raw(o, "\\\\", 2);
            break;

        case '\n':
            al_llm_out_raw(o, "\\n", 2);
            break;

        case '\r':
            al_llm_out_raw(o, "\\r", 2);
            break;

        case '\t':
            al_llm_out_raw(o, "\\t", 2);
            break;

        case '\0':
            /* valid JSON, but many readers (jansson, jsonb) refuse it */
            al_llm_out_raw(o, "\\ufffd", 6);
            break;

        default:
            if (c < 0x20 || c == 0x7f) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 0xf];
                al_llm_out_raw(o, esc, 6);

            } else {
                al_llm_out_raw(o, s + i, 1);
            }
            break;
        }

        i++;
    }

    al_llm_out_raw(o, "\"", 1);
}


/* a[0..n) == b[0..n), eight bytes at a time (the last eight overlap) */

static inline int
al_llm_same(const char *a, const unsigned char *b, size_t n)
{
    size_t    i;
    uint64_t  x, y;

    if (n < 8) {
        for (i = 0; i < n; i++) {
            if ((unsigned char) a[i] != b[i]) {
                return 0;
            }
        }

        return 1;
    }

    for (i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);

        if (x != y) {
            return 0;
        }
    }

    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);

    return x == y;
}


/*
 * Where the run of printable ASCII at p[i..n) ends: the first byte that is
 * not one, or '"' or '\\', or with del 0x7f; else n.  Sixteen bytes at a
 * time with SSE2 (as al_llm_quick_run()), then eight (the lowest flag of
 * each test is exact: borrows only run upwards), then byte by byte.
 * Without del these are the bytes the strict scanner reads as plain
 * string bytes.
 */

static inline size_t
al_llm_ascii_run(const unsigned char *p, size_t i, size_t n, unsigned del)
{
#if (defined __x86_64__ && defined __SSE2__)
    unsigned  m;
    __m128i   v, x;
#endif
#if defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t  w, q, b, d, bad;
#endif

#if (defined __x86_64__ && defined __SSE2__)

    while (n - i >= 16) {
        v = _mm_loadu_si128((const __m128i *) (const void *) (p + i));
        x = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));

        if (del) {
            x = _mm_or_si128(x, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
        }

        m = (unsigned) _mm_movemask_epi8(x);

        if (m != 0) {
            return i + (size_t) __builtin_ctz(m);
        }

        i += 16;
    }

#endif

#if defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__

    while (n - i >= 8) {
        memcpy(&w, p + i, 8);

        q = w ^ (AL_LLM_ONES * '"');
        b = w ^ (AL_LLM_ONES * '\\');

        bad = (((w - AL_LLM_ONES * 0x20) & ~w) | w    /* < 0x20, >= 0x80 */
               | ((q - AL_LLM_ONES) & ~q)              /* '"' */
               | ((b - AL_LLM_ONES) & ~b));            /* '\\' */

        if (del) {
            d = w ^ (AL_LLM_ONES * 0x7f);
            bad |= (d - AL_LLM_ONES) & ~d;
        }

        bad &= AL_LLM_HIGHS;

        if (bad != 0) {
            return i + (size_t) (__builtin_ctzll(bad) >> 3);
        }

        i += 8;
    }

#endif

    while (i < n && al_llm_json_plain[p[i]] && !(del && p[i] == 0x7f)) {
        i++;
    }

    return i;
}

