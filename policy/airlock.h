/*
 * libairlock: the Airlock policy library.
 *
 * Reads a policy file (YAML, schema v1, see docs/policy.md), validates it,
 * and compiles it into an immutable al_policy_t: clients, sealed secrets,
 * upstreams, the named-route table (a segment trie), LLM providers and the
 * alerting settings.  The nginx modules and airlockctl both link this
 * library, so a request is decided by exactly the same code in both.
 *
 * Nothing here depends on nginx, and nothing here blocks on the network.
 * Files are only read at load time, which happens at nginx configuration
 * time or in the CLI.
 */

#ifndef AIRLOCK_H
#define AIRLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>


#define AL_VERSION              "0.1.0"

#define AL_ERR_MAX              512
#define AL_PATH_MAX             4096    /* raw request path, bytes */
#define AL_SEGMENTS_MAX         64
#define AL_QUERY_MAX            4096    /* raw query string, bytes */
#define AL_QUERY_PARAMS_MAX     32
#define AL_URI_MAX              8192    /* upstream URI we build */
#define AL_DETAIL_MAX           256
#define AL_JSON_DEPTH_MAX       32
#define AL_POLICY_FILE_MAX      (16 * 1024 * 1024)


typedef struct {
    const char  *data;
    size_t       len;
} al_str_t;


/*
 * Errors are values.  line and column are 1-based; 0 means the error is
 * not tied to a place in a file.
 */
typedef struct {
    char         file[256];
    unsigned     line;
    unsigned     column;
    char         msg[AL_ERR_MAX];
} al_error_t;

/* "file:line:column: msg" (or "file: msg"); returns strlen of the result */
size_t al_error_format(const al_error_t *err, char *buf, size_t size);
void al_error_set(al_error_t *err, const char *file, unsigned line,
    unsigned column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/*
 * len bytes of s as a terminal is to show them: every byte outside
 * printable ASCII (a control character, ESC, a C1 control, UTF-8) as
 * \xHH, so that text from a policy or a request cannot move the cursor,
 * erase or reorder what is shown; and a backslash as \\, so that every
 * backslash shown starts an escape and two texts are never shown alike
 * (a name holding the four characters \x01 is not one holding the byte).
 * Cut at a whole character to fit size (with its NUL); returns the
 * length written.
 */
size_t al_shown(char *out, size_t size, const char *s, size_t len);

/*
 * A JSON string's content, for every log line and status body the
 * modules write.  Valid UTF-8 (no overlong form, no surrogate, nothing
 * past U+10FFFF, no sequence cut short) is copied as it is; '"' and '\\'
 * get a backslash; a control (C0, DEL, and C1: U+0080..U+009F, which a
 * terminal may act on) becomes \u00XX; so does a byte that is not part
 * of valid UTF-8 (XX 80 to ff).  The format characters that make a
 * line read as something else to a terminal or viewer are \u20XX:
 * U+2028, U+2029 (line and paragraph separators), U+200E, U+200F and the
 * bidi controls U+202A..U+202E, U+2066..U+2069.  Other valid characters
 * are never escaped, so in the written line \u00a0..\u00ff always stands
 * for one such byte of the input and says which, and \u0080..\u009f for
 * that byte or the C1 control it names.  al_json_escape() writes at dst the
 * al_json_escape_len() bytes (at most 6 a byte) and returns their end.
 */
size_t al_json_escape_len(const char *s, size_t len);
char *al_json_escape(char *dst, const char *s, size_t len);

/* the length of the valid UTF-8 sequence at p (p[0] >= 0x80), else 0 */
size_t al_utf8_len(const unsigned char *p, size_t n);

/*
 * How much of s to keep to cut it at max bytes: max, or less so as not
 * to split a valid UTF-8 sequence (invalid bytes are cut anywhere);
 * len when len <= max.
 */
size_t al_utf8_cut(const char *s, size_t len, size_t max);


/*
 * Request paths and queries (al_path.c).
 *
 * One normalizer for the whole appliance.  The route decision is made on
 * the decoded segments below and the upstream URI is re-encoded from the
 * same segments, so what was matched is what is forwarded.  Anything that
 * could be read two ways is refused, not interpreted: encoded '/', '\' and
 * '%', dot segments, empty segments, ';', control bytes, raw non-ASCII,
 * invalid or overlong UTF-8.
 */

typedef struct {
    char         buf[AL_PATH_MAX];          /* decoded segments, each
                                               NUL-terminated */
    al_str_t     seg[AL_SEGMENTS_MAX];
    size_t       nseg;                       /* "/" has none */
    uint64_t     drive;                      /* bit i: seg[i] starts with
                                                a drive, kept by
                                                al_target_parse_drives() */
} al_path_t;

typedef struct {
    al_str_t     name;                       /* decoded */
    al_str_t     value;                      /* decoded, '+' is a space */
} al_query_param_t;

typedef struct {
    char              buf[AL_QUERY_MAX + AL_QUERY_PARAMS_MAX * 2];
    al_query_param_t  param[AL_QUERY_PARAMS_MAX];
    size_t            nparam;
} al_query_t;

/*
 * Splits an origin-form request target ("/path?query") and parses both
 * parts.  Returns 0, or -1 with *why set to a static, human-readable
 * reason ("encoded slash", "dot segment", ...).
 */
int al_target_parse(const char *target, size_t len, al_path_t *path,
    al_query_t *query, const char **why);

/*
 * As al_target_parse(), but a segment that starts with a drive ("A:B",
 * "x:generateContent", "C:x") is kept and its bit set in path->drive, for
 * the caller to refuse unless the route it matches takes it there (a
 * param with "drive: true": al_decide()).  A drive segment whose rest,
 * after its drives, is a dot segment ("C:..", "c:%2e%2e", "C%EF%BC%9A..")
 * is refused all the same ("drive letter").  al_target_parse() and
 * al_path_parse() refuse every drive segment and leave path->drive 0.
 */
int al_target_parse_drives(const char *target, size_t len, al_path_t *path,
    al_query_t *query, const char **why);
int al_path_parse(al_path_t *path, const char *raw, size_t len,
    const char **why);
int al_query_parse(al_query_t *query, const char *raw, size_t len,
    const char **why);

/*
 * Percent-encodes s for a path segment (query == 0) or a query name or
 * value (query == 1).  Unreserved bytes and the delimiters that are data
 * there are kept, everything else becomes %XX; '+' always does, a space
 * to a form decoder.  Writes at most cap bytes to out and returns the
 * length the full encoding needs (as snprintf does), so callers can
 * detect truncation.
 */
size_t al_uri_escape(char *out, size_t cap, const char *s, size_t len,
    int query);

/*
 * Writes s (valid UTF-8) to out, which has room for len bytes, with each
 * character that NFKC or Windows' best fit turns into '/', '\', '%', dots
 * or a space (the ones a path segment refuses or trims) replaced by the
 * ASCII an upstream that normalizes reads for it (U+2100 by "a/c",
 * U+2025 by "..", U+00A5 by '\'), never longer than the character; with
 * out NULL only counts.  Returns the number of characters replaced, the
 * length in *outlen.
 */
size_t al_fold_like(const char *s, size_t len, char *out, size_t *outlen);


/* Regular expressions: PCRE2, always anchored at both ends (al_regex.c). */

typedef struct al_regex_s  al_regex_t;

al_regex_t *al_regex_compile(const char *pattern, size_t len, char *err,
    size_t errsize);
int al_regex_match(const al_regex_t *re, const char *s, size_t len);

/*
 * al_regex_match() for a path param or query value: it must also match
 * as Windows opens it as a file name, cut at "::$" and without trailing
 * dots and spaces ("web.config::$DATA", "web.config. ").
 */
int al_regex_match_name(const al_regex_t *re, const char *s, size_t len);
void al_regex_free(al_regex_t *re);
size_t al_regex_size(const al_regex_t *re);


/* Sealed secrets (al_secret.c), libsodium sealed boxes to an X25519 key. */

typedef struct al_keyring_s  al_keyring_t;

/* writes the private key to path (0600, refuses to overwrite) and the
   public key to path.pub */
int al_keygen(const char *path, al_error_t *err);
al_keyring_t *al_keyring_load(const char *path, al_error_t *err);
void al_keyring_free(al_keyring_t *kr);

/* seals msg to the public key in pubpath; *out is malloc'ed base64 */
int al_seal(const char *pubpath, const unsigned char *msg, size_t len,
    char **out, al_error_t *err);

/* opens a base64 sealed box into guarded memory (al_secure_free it) */
int al_unseal(const al_keyring_t *kr, const char *b64, size_t b64len,
    unsigned char **out, size_t *outlen, const char **why);

/*
 * Reads a file: secret into guarded memory (al_secure_free it), NUL-ended,
 * one trailing newline ("\n" or "\r\n") dropped.  The file must be a
 * regular file, not a symbolic link, not reachable by group or others
 * (mode 0600 or 0400), and at most max bytes; it is opened non-blocking, so
 * a FIFO is refused at once.  Returns 0, or -1 with why saying what is
 * wrong with the file, naming it.
 */
int al_secret_read_file(const char *path, size_t max, unsigned char **out,
    size_t *outlen, char *why, size_t whylen);

/*
 * The checks al_secret_read_file() makes, without reading the file (it is
 * opened O_PATH): 0 taken, -1 refused, 1 not reachable here (no such
 * file, or a directory this user may not search); why says so.
 */
int al_secret_check_file(const char *path, size_t max, char *why,
    size_t whylen);

/* 1 when a secret's value is an Airlock private key file's text */
int al_key_is_private(const unsigned char *value, size_t len);

/* guarded memory: sodium_malloc'ed, wiped on free */
void *al_secure_alloc(size_t size);
void al_secure_free(void *p);

/* standard base64 with padding; returns the encoded length */
size_t al_base64_encode(char *out, size_t cap, const unsigned char *in,
    size_t len);

/* standard base64, padding optional; returns the decoded length, or -1 for
   a byte outside the alphabet, a bad length or bits left over; out holds
   at least len / 4 * 3 + 2 bytes */
ssize_t al_base64_decode(unsigned char *out, const char *in, size_t len);


/* The compiled policy. */

typedef enum {
    AL_REASON_NONE = 0,
    AL_REASON_CLIENT_UNKNOWN,
    AL_REASON_NO_ROUTE,
    AL_REASON_METHOD,
    AL_REASON_PATH,
    AL_REASON_PARAM,
    AL_REASON_QUERY,
    AL_REASON_BODY,
    AL_REASON_BODY_TOO_LARGE,
    AL_REASON_QUARANTINED,
    AL_REASON_REQUEST,          /* framing, hop headers, method override */
    AL_REASON_MODEL,
    AL_REASON_BUDGET,
    AL_REASON_REFUSED,          /* nginx refused it before the decision */
    AL_REASON_MAX
} al_reason_t;

const char *al_reason_name(al_reason_t reason);
/* the reason a name names ("no_route"), AL_REASON_NONE for any other */
al_reason_t al_reason_find(const char *name);

/*
 * The response header that marks the proxy's own refusals, its value the
 * reason ("Airlock-Denial: no_route").  ngx_http_airlock_module sets it on
 * the refusals it answers and removes it from every other answer, an
 * upstream's above all, so a client can tell the proxy's 403 from an
 * upstream's forged to look like one.
 */
#define AL_DENIAL_HEADER  "Airlock-Denial"

/*
 * The reason of the proxy's denial: marker, the one AL_DENIAL_HEADER of
 * the answer (NULL: none), and name, the reason its body names (NULL:
 * none), are the same reason of the policy.  AL_REASON_NONE otherwise:
 * the answer is not the proxy's denial.
 */
al_reason_t al_denial_reason(const char *marker, const char *name);

enum {
    AL_METHOD_GET     = 0x01,
    AL_METHOD_HEAD    = 0x02,
    AL_METHOD_POST    = 0x04,
    AL_METHOD_PUT     = 0x08,
    AL_METHOD_PATCH   = 0x10,
    AL_METHOD_DELETE  = 0x20,
    AL_METHOD_OPTIONS = 0x40
};

/* exact, case-sensitive: "get" is not GET; returns 0 when unknown */
unsigned al_method_bit(const char *name, size_t len);

/*
 * The start time of process pid in clock ticks since boot, field 22 of
 * /proc/PID/stat (of /proc/self/stat when self, pid being this process's
 * own): a pid names any process that gets it later, a pid and its start
 * time only one.  0 when there is no /proc, no such process, or field 1
 * is not pid, as in a /proc mounted for another pid namespace, where the
 * file would be another process's.  One read of procfs, which never
 * waits for a disk.
 */
uint64_t al_proc_started(pid_t pid, int self);
const char *al_method_name(unsigned bit);
/* "GET,HEAD" */
void al_methods_format(char *buf, size_t size, unsigned methods);

/* v as 16 lowercase hex digits, most significant first; no NUL */
void al_hex64(char *dst, uint64_t v);


typedef struct {
    uint8_t          addr[16];              /* IPv4 as ::ffff:a.b.c.d */
    unsigned         prefix;                /* over the 128 bits */
} al_cidr_t;

typedef struct {
    al_str_t         name;
    unsigned         index;
    unsigned         line;
    uid_t           *uids;
    size_t           nuids;
    gid_t           *gids;
    size_t           ngids;
    al_cidr_t       *cidrs;
    size_t           ncidrs;
    uint8_t        (*tokens)[32];           /* SHA-256 of the token */
    size_t           ntokens;
} al_client_t;

/* what the transport knows about the peer */
typedef struct {
    unsigned         unix_peer:1;           /* uid/gid are valid */
    unsigned         has_addr:1;
    uid_t            uid;
    gid_t            gid;
    uint8_t          addr[16];              /* IPv4 as ::ffff:a.b.c.d */
} al_peer_t;

/*
 * The peer of an accepted connection (al_peer.c): the credentials of a
 * unix-socket peer (SO_PEERCRED), the address of an IPv4 or IPv6 one.  sa
 * is the peer address accept() gave.  Returns 0, or -1 with errno set when
 * a unix peer's credentials cannot be read (peer is then empty).
 */
int al_peer_from_socket(int fd, const struct sockaddr *sa, al_peer_t *peer);

typedef struct {
    al_str_t         name;
    unsigned         line;
    unsigned         sealed:1;              /* else file: */
    unsigned         unreached:1;           /* file: not checked, not
                                               reachable here */
    al_str_t         source;                /* the sealed box or the path */
    unsigned char   *value;                 /* guarded memory, NUL-ended;
                                               NULL until opened */
    size_t           len;
} al_secret_t;

typedef struct {
    al_str_t         name;
    unsigned         line;
    al_str_t         url;                   /* as written, no trailing / */
    unsigned         https:1;
    al_str_t         host;                  /* for Host: name[:port] */
    al_str_t         hostname;
    unsigned         port;
    al_str_t         base_path;             /* "" or "/v1" */
    unsigned         insecure_http:1;       /* allow_insecure_http: a
                                               secret may go over http://
                                               past this host */
    unsigned         secret_route;          /* 1 + the index of the first
                                               route that injects a secret
                                               into requests to it; 0:
                                               none */
} al_upstream_t;

typedef struct {
    al_str_t         name;
    al_str_t         pattern;
    al_regex_t      *re;
    unsigned         drive;                 /* path param: "drive: true",
                                               its segment may start with
                                               a drive ("A:B") */
} al_param_t;

/*
 * JSON body constraints, a tree that mirrors the constrained part of the
 * document.  Objects that have constrained members refuse members that are
 * not listed unless additional is set.
 */
typedef enum {
    AL_JSON_ANY = 0,
    AL_JSON_STRING,
    AL_JSON_INTEGER,
    AL_JSON_NUMBER,
    AL_JSON_BOOLEAN,
    AL_JSON_OBJECT,
    AL_JSON_ARRAY,
    AL_JSON_NULL
} al_json_type_t;

typedef struct al_json_rule_s  al_json_rule_t;

struct al_json_rule_s {
    al_str_t         name;                  /* member name; "" at the root */
    al_json_type_t   type;
    unsigned         required:1;
    unsigned         additional:1;          /* objects: unlisted members ok */
    al_regex_t      *re;                    /* strings only */
    al_str_t         pattern;
    al_json_rule_t  *members;               /* objects */
    size_t           nmembers;
    /* the root of a route's rules: its path params and query parameters
       (those with re set), which no unlisted top-level field may name */
    const al_param_t  *params;
    size_t           nparams;
    const al_param_t  *query;
    size_t           nquery;
};

typedef struct {
    al_str_t         name;                  /* header name */
    al_str_t         tmpl;                  /* "Bearer {github_pr}" */
    unsigned char   *value;                 /* rendered, guarded; NULL when
                                               secrets are not open */
    size_t           len;
} al_inject_t;

typedef struct {
    al_str_t         name;
    unsigned         index;
    unsigned         line;
    al_str_t         description;           /* "" when not given */
    unsigned         methods;               /* AL_METHOD_* */
    unsigned         has_body:1;
    unsigned         allow_cookies:1;
    unsigned         no_scrub:1;            /* "scrub: false": answers
                                               pass unscrubbed */
    al_str_t         path;                  /* template as written */
    al_str_t        *segs;                  /* literal, or param name */
    uint8_t         *seg_is_param;
    size_t           nsegs;
    al_param_t      *params;                /* path params, in path order */
    size_t           nparams;
    uint8_t         *client_ok;             /* [policy->nclients] */
    const al_upstream_t  *upstream;
    al_str_t         to;                    /* target path template */
    al_str_t        *to_parts;              /* literal or param name, */
    int             *to_param;              /* -1 or index into params */
    size_t           nto_parts;

    al_str_t        *query_allow;
    uint8_t         *query_required;
    al_param_t      *query_patterns;        /* [nquery_allow], re may be
                                               NULL */
    size_t           nquery_allow;
    unsigned         query_checked:1;       /* a query parameter has a
                                               pattern: set at load */

    size_t           body_max;              /* bytes; 0 = no body allowed */
    al_str_t         content_type;          /* "" = any */
    al_json_rule_t  *json;                  /* NULL = body not JSON-checked */

    al_inject_t     *inject;
    size_t           ninject;
    unsigned         inject_secret:1;       /* an injected header holds a
                                               secret */
    const al_inject_t  *inject_ctype;       /* the injected Content-Type,
                                               or NULL */
} al_route_t;

typedef enum {
    AL_LLM_OPENAI = 0,
    AL_LLM_OPENAI_COMPATIBLE,
    AL_LLM_ANTHROPIC,
    AL_LLM_AZURE                            /* Azure OpenAI: api-key,
                                               api-version, deployments */
} al_llm_kind_t;

#define AL_LLM_CAP_MEMBER  48     /* ",\"max_completion_tokens\":" and 20
                                     digits fit */

typedef struct {
    const al_client_t  *client;
    al_str_t        *models;                /* NULL: the provider's list */
    size_t           nmodels;
    uint64_t         tokens_per_minute;     /* 0 = unlimited */
    uint64_t         tokens_per_day;
    uint64_t         max_tokens;            /* 0 = no cap */
    uint64_t         default_max_tokens;    /* as set; 0 = not set, see
                                               al_llm_default_max_tokens() */
    unsigned         clamp:1;               /* else reject over max_tokens */
    uint64_t         requests_per_minute;   /* 0 = unlimited */
    uint64_t         max_concurrent;        /* requests in flight; 0 = any */
    uint64_t         cost_per_day;          /* picodollars (1e-12 USD); */
    uint64_t         cost_per_month;        /* 0 = unlimited */

    /*
     * The member a body without an output cap gets, per AL_LLM_CAP_*:
     * ",\"<name>\":<al_llm_default_max_tokens()>", made at load
     * (al_llm_client_caps()); a length of 0: made per call instead.
     */
    char             cap_member[3][AL_LLM_CAP_MEMBER];
    unsigned char    cap_member_len[3];

    /*
     * The aliases of the entry whose model this client may use, in the
     * policy's order: the tail of its model list (GET /models), made at
     * load (al_llm_client_list()).
     */
    const struct al_llm_alias_s  **aliases;
    size_t           naliases;
} al_llm_client_t;

/* the output cap's names, the index of cap_member[] */
enum {
    AL_LLM_CAP_MAX_TOKENS = 0,
    AL_LLM_CAP_MAX_COMPLETION_TOKENS,
    AL_LLM_CAP_MAX_OUTPUT_TOKENS
};

/*
 * A model's price.  The policy gives USD per million tokens; stored as
 * microdollars per million tokens, which is also picodollars per token, so
 * costs are whole numbers of picodollars and sums never drift.  A model
 * may have a second set of prices (long_context) for a call of more than
 * above_input_tokens input tokens: all of such a call's tokens are priced
 * at them (al_llm_price_tier()).
 */
typedef struct al_llm_price_s  al_llm_price_t;

struct al_llm_price_s {
    al_str_t         model;
    uint64_t         input;
    uint64_t         cached_input;
    uint64_t         output;
    uint64_t         cache_write;       /* 5-minute prompt-cache writes */
    uint64_t         cache_write_1h;    /* 1-hour ones */
    uint64_t         above_input_tokens;    /* with long: its threshold */
    const al_llm_price_t  *long_context;    /* NULL: one set of prices */
};

/* default_max_tokens of a client with a token budget and no output caps */
#define AL_LLM_DEFAULT_MAX_TOKENS  4096

/* a name clients ask for, and the entry's model it stands for */
typedef struct al_llm_alias_s {
    al_str_t         name;                  /* "fast" */
    al_str_t         model;                 /* one of the entry's models */
} al_llm_alias_t;

typedef struct al_llm_s {
    al_str_t         name;
    unsigned         line;
    al_str_t         prefix;                /* "/v1/proxy/openai" */
    al_llm_kind_t    kind;
    al_upstream_t    upstream;
    const al_secret_t  *secret;
    al_str_t        *models;
    size_t           nmodels;
    al_llm_client_t *clients;
    size_t           nclients;
    unsigned         include_usage:1;       /* stream_options.include_usage */
    size_t           body_max;
    al_str_t         api_version;           /* azure: the api-version query
                                               sent upstream; "" otherwise */
    al_llm_alias_t  *aliases;
    size_t           naliases;
    al_str_t         fallback_name;         /* "" when none */
    const struct al_llm_s  *fallback;       /* the entry a failed call
                                               goes to, or NULL */
    al_llm_price_t  *prices;                /* NULL: no model priced */
    size_t           nprices;
    uint32_t         provider_tools;        /* 1 << AL_LLM_PT_* (al_llm.h):
                                               tool families the provider
                                               may run; 0: none */
    al_str_t        *allow_members;         /* top-level request members
                                               allowed beyond the
                                               gateway's list */
    size_t           nallow_members;
    unsigned         think_members;         /* the other servers' thinking
                                               members allow_members
                                               lists, a bit each
                                               (al_llm_members_think()) */
} al_llm_t;

typedef enum {
    AL_SINK_WEBHOOK = 0,
    AL_SINK_ALERTMANAGER
} al_sink_kind_t;

typedef struct {
    al_sink_kind_t   kind;
    al_str_t         url;
    al_str_t         hostname;              /* the url's, [ ] for IPv6 */
    unsigned         port;                  /* the url's, or its scheme's */
    const al_secret_t  *hmac;               /* webhooks */
    const al_secret_t  *hmac_also;          /* webhooks: a second key that
                                               signs too, or NULL */
    unsigned         insecure_http:1;       /* webhooks: allow_insecure_http,
                                               http:// past this host */
} al_sink_t;

typedef struct {
    unsigned         threshold;
    unsigned         window;                /* seconds */
    unsigned         duration;              /* quarantine only, seconds */
} al_threshold_t;

typedef struct al_trie_s  al_trie_t;

/*
 * A name index: open addressing over the position of each entry in its
 * array (position + 1; 0 is an empty slot), so a lookup by name costs one
 * hash whatever the number of entries.
 */
typedef struct {
    uint32_t        *slot;
    size_t           mask;                  /* slots - 1, a power of two */
} al_names_t;

typedef struct {
    al_str_t         file;
    unsigned         version;
    al_client_t     *clients;
    size_t           nclients;
    al_secret_t     *secrets;
    size_t           nsecrets;
    unsigned         secrets_open:1;
    al_upstream_t   *upstreams;
    size_t           nupstreams;
    al_route_t      *routes;
    size_t           nroutes;
    al_llm_t        *llm;
    size_t           nllm;
    al_threshold_t   deny;                  /* threshold 0 = off */
    al_threshold_t   quarantine;
    al_sink_t       *sinks;
    size_t           nsinks;
    al_trie_t       *trie;
    al_names_t       client_names;
    al_names_t       route_names;
    void            *pool;
} al_policy_t;


/*
 * Loading.  With a keyring, sealed and file: secrets are opened and the
 * inject templates rendered; without one (airlockctl check), everything
 * else is validated and values stay NULL.  The _open forms say whether to
 * open the secrets: with open_secrets and no keyring, file: secrets are
 * opened and a sealed one is an error (nginx without airlock_keyring).
 * open_secrets AL_POLICY_SECRET_PATHS (airlockctl check without the key):
 * nothing is opened, but each file: secret's file is held to the checks
 * opening it makes (al_secret_check_file()), not read; one that cannot
 * be reached from here is marked unreached.
 */
#define AL_POLICY_SECRET_PATHS  2

al_policy_t *al_policy_load(const char *path, const al_keyring_t *kr,
    al_error_t *err);
al_policy_t *al_policy_parse(const char *name, const char *buf, size_t len,
    const al_keyring_t *kr, al_error_t *err);
al_policy_t *al_policy_load_open(const char *path, const al_keyring_t *kr,
    int open_secrets, al_error_t *err);
al_policy_t *al_policy_parse_open(const char *name, const char *buf,
    size_t len, const al_keyring_t *kr, int open_secrets, al_error_t *err);

/* -1 with err set when a policy file of this mode is refused: any user
   may write it (al_policy_trusted() checks it) */
int al_policy_writable(const char *path, unsigned mode, al_error_t *err);

/* -1 with err set when the policy open on fd, at path, is refused: any
   user may write it, or a directory of its path (symbolic links
   followed) is one a user other than root and its writers may change
   (the loaders above check it; airlockctl check too) */
int al_policy_trusted(const char *path, int fd, al_error_t *err);

/* -1 with err set when a directory of the path of the file open on fd
   (symbolic links followed) is one a user other than root and the
   file's writers may change: al_policy_trusted()'s walk, for secret
   files and keys too; what names the file in the message ("policy") */
int al_path_trusted(const char *path, int fd, const char *what,
    al_error_t *err);
void al_policy_free(al_policy_t *p);

const al_client_t *al_policy_client(const al_policy_t *p, const char *name,
    size_t len);
const al_route_t *al_policy_route(const al_policy_t *p, const char *name,
    size_t len);

/*
 * Where a secret goes over http://: an upstream a route injects a
 * secret into requests to, or an llm entry.  Without allow_insecure_http,
 * the loader has refused an address that is not this host's and a host
 * name with a port; what is left is this host (localhost, 127.0.0.0/8,
 * ::1: local set) or a host name without a port, which only nginx can
 * place: on this host if it names an upstream block whose servers all
 * are.  nginx checks each against its blocks when it loads the policy;
 * airlockctl check, which has no blocks, warns.  Those with
 * allow_insecure_http come too (insecure set), for check and explain to
 * show.  *i starts at 0; 0 past the last.
 */
typedef struct {
    const al_upstream_t  *upstream;         /* url, hostname, line */
    const al_route_t     *route;            /* the first route that sends
                                               it a secret, or NULL */
    const al_llm_t       *llm;              /* or the llm entry */
    unsigned              local:1;          /* localhost or an address
                                               of this host */
    unsigned              insecure:1;       /* allow_insecure_http: true,
                                               nothing to place */
} al_clear_t;

int al_policy_clear(const al_policy_t *p, size_t *i, al_clear_t *c);

/*
 * Identifies the client from the transport peer and, when one was sent,
 * a bearer token.  A token that matches no client is unknown (it never
 * falls back to the address); two identities naming different clients
 * are ambiguous.  Tokens are hashed and compared in constant time.
 */
const al_client_t *al_client_identify(const al_policy_t *p,
    const al_peer_t *peer, const char *token, size_t token_len,
    const char **why);


/* Decisions (al_match.c). */

typedef struct {
    const char          *method;
    size_t               method_len;
    const char          *target;            /* origin-form, raw */
    size_t               target_len;
    const al_client_t   *client;
} al_request_t;

typedef struct {
    al_reason_t          reason;            /* NONE = allowed so far */
    const al_route_t    *route;             /* set once a path matched */
    char                 detail[AL_DETAIL_MAX];
    al_path_t            path;
    al_query_t           query;
    char                 uri[AL_URI_MAX];   /* upstream path?query */
    size_t               uri_len;
} al_decision_t;

/*
 * Decides everything that can be decided from the request line: path,
 * method, client, path params and query.  On success the upstream URI is
 * built from the validated form.  Returns d->reason.
 */
al_reason_t al_decide(const al_policy_t *p, const al_request_t *req,
    al_decision_t *d);

/*
 * 0 when target, built for route r by one of the proxy's clients (the
 * agent's tool call, the worker's input), is a target the proxy reads as
 * r's path: al_target_parse_drives() takes it, it has r's segments, and
 * each segment that starts with a drive ("C:x") is a param of r that
 * takes one (al_decide() refuses it otherwise, whatever r's patterns).
 * -1 otherwise, *why a static reason ("dot segment", "drive letter").
 * r's own patterns are al_decide()'s alone.
 */
int al_route_target(const al_route_t *r, const char *target, size_t len,
    const char **why);

/* the body half of the decision, for routes with has_body */
al_reason_t al_decide_body(const al_route_t *route, const char *ctype,
    size_t ctype_len, const unsigned char *body, size_t len,
    al_decision_t *d);

/*
 * A request's Content-Type against the media type want (case-insensitive,
 * parameters aside: "application/json; x=y" is application/json).  With
 * utf8, for a body the proxy reads as UTF-8 (JSON): the parameters must
 * parse as RFC 9110 has them (name=token or name="quoted string") and a
 * charset must be utf-8, so an upstream cannot read the bytes as another
 * document.  No Content-Type is refused.  Returns 0, or -1 with the
 * reason in why.  Route bodies and the LLM gateway both check through
 * it.
 */
int al_media_type_check(const char *ctype, size_t len, const char *want,
    size_t want_len, int utf8, char *why, size_t whylen);

/*
 * A body read as JSON whatever its type, on a route that names none: any
 * media type written as one (tchar and '/', "text/x-json"), or no
 * Content-Type, with its parameters checked as al_media_type_check()'s
 * utf8 does.  Returns 0, or -1 with the reason in why.
 */
int al_media_charset_check(const char *ctype, size_t len, char *why,
    size_t whylen);

/*
 * A body an upstream may read as a form (Content-Type
 * application/x-www-form-urlencoded or a type that begins with it,
 * multipart/..., or none) must not
 * have a field named _method, however it is encoded: Rack, Symfony,
 * Laravel and method-override read it as the request's method, and
 * ASP.NET MVC a field named X-HTTP-Method-Override (al_form.c).  Nor
 * may it be in a charset other than utf-8, us-ascii or iso-8859-1, or
 * have a multipart name in RFC 2231 form or with an RFC 2047 encoded
 * word, which would hide the name from this check, or a field whose name
 * read as a path ("a[b]", "a.b") has a part "__proto__", or
 * "constructor" then "prototype", which would set a prototype upstream.
 * Returns 0, or -1 with the reason in why.
 */
int al_form_method_check(const char *ctype, size_t ctype_len,
    const unsigned char *body, size_t len, char *why, size_t whylen);

/*
 * al_form_method_check(), and a field named like one of params (a route's
 * path params) or of query whose re is set (its query parameters with a
 * pattern) is refused too: PHP's $_REQUEST, Rails, Laravel, ASP.NET MVC
 * and Spring read a form field over the query parameter or path param of
 * its name, so it would stand for the value the pattern checked.  With
 * query_checked set (a route's query_checked: one of its query
 * parameters has a pattern), a body that is not a form is held to a
 * form's charsets too, as an upstream may read the query in its charset.
 */
int al_form_check(const char *ctype, size_t ctype_len,
    const unsigned char *body, size_t len, const al_param_t *params,
    size_t nparams, const al_param_t *query, size_t nquery,
    unsigned query_checked, char *why, size_t whylen);

/*
 * The charset test al_form_check() holds a form body to (and any body
 * on a route with a query pattern): every "charset" in the Content-Type
 * names utf-8, us-ascii or iso-8859-1.  Returns 0 when it does, -1
 * otherwise.
 */
int al_form_charset_check(const char *ctype, size_t ctype_len);

/*
 * A Cookie header a route lets through ("cookies: true"): a cookie named
 * like one of the route's path params or checked query parameters, read
 * as a form field's name is, is refused: PHP's $_REQUEST, without a
 * php.ini, reads cookies over the query and the form.  Returns 0, or -1
 * with the reason in why.
 */
int al_cookie_check(const al_route_t *route, const char *cookie, size_t len,
    char *why, size_t whylen);

/*
 * Checks a JSON document against a rule tree (al_json.c).  Duplicate keys,
 * trailing data, depth over AL_JSON_DEPTH_MAX, NUL in strings and numbers
 * that do not fit are refused.  Returns 0, or -1 with a reason in detail.
 */
int al_json_check(const al_json_rule_t *rule, const unsigned char *body,
    size_t len, char *detail, size_t detail_size);

/*
 * 1 when no '[' or '{' nests deeper than AL_JSON_DEPTH_MAX, counted
 * outside strings: run before jansson, whose parser recurses per level.
 */
int al_json_depth_ok(const unsigned char *p, size_t len);

/*
 * 1 when a Content-Type names JSON as the loosest reader takes it:
 * "/json", "+json" or "-json" anywhere in it, in any case (Laravel's
 * isJson() looks for the first two in the whole header, and Rails reads
 * text/x-json as JSON).
 */
int al_json_media(const char *ctype, size_t len);

/*
 * A JSON body of a route without json rules: parsed as al_json_check()
 * parses it, and refused when a top-level field is "_method" or named
 * like one of the route's path params or checked query parameters, in
 * any case: Rails and Laravel merge those fields with the params, and
 * Laravel reads "_method" as the method.  Returns 0, or -1 with a reason
 * in detail.
 */
int al_json_names_check(const al_param_t *params, size_t nparams,
    const al_param_t *query, size_t nquery, const unsigned char *body,
    size_t len, char *detail, size_t size);


/* The route trie (al_trie.c). */

al_trie_t *al_trie_create(void);
void al_trie_free(al_trie_t *t);

/* returns 0, or -1 and the route it conflicts with in *conflict */
int al_trie_insert(al_trie_t *t, const al_route_t *route,
    const al_route_t **conflict);

/*
 * Looks up a path.  *route is the route that matches path and method;
 * when the path matches only under other methods, *route is NULL and
 * *other is one of those routes.
 */
void al_trie_lookup(const al_trie_t *t, const al_path_t *path,
    unsigned method, const al_route_t **route, const al_route_t **other);


/* Semantic diff (al_diff.c): calls out() per line, returns the number of
   changes that grant something OLD did not. */
int al_policy_diff(const al_policy_t *old, const al_policy_t *new,
    void (*out)(void *data, const char *line), void *data);


/*
 * Scrub lists (al_scrub.c): the strings a response on a route must never
 * carry back to its client.  For every injected header whose template uses
 * a secret: the part after an auth scheme ("Bearer x" gives "x"), and
 * the rendered value and each secret it uses, raw and in base64 (standard
 * and URL-safe alphabets, each with and without padding), the secret
 * inside a longer base64 text (what only its own bits make there, for
 * each of the three places it can start, when it has 12 bytes or more),
 * and the secret and the part after the scheme in hex (lower or upper
 * case, nothing, " " or ":" between bytes).  For HTTP Basic ("Basic t",
 * t the base64 of "user:password"), also "user:password" (in base64 too,
 * alone and inside a longer text) and the password alone, the password
 * also in hex.  The strings live in guarded memory,
 * in byte order (a string before those it starts), without duplicates.
 * Returns NULL with *why set when memory runs out or secrets are not
 * open; a route that injects no secret gets a list with n == 0.
 *
 * al_scrub_match() finds each string in its encoded forms as well:
 * raw, URL-encoded (any byte as %XX, hex digits in either case, "+" for a
 * space), JSON-escaped (\" \\ \/ \b \f \n \r \t and \uXXXX for any
 * character, either case, surrogate pairs for 4-byte UTF-8) and
 * HTML-escaped (every name HTML5 gives an ASCII character, &amp; &lt;
 * &lowbar; &period; &sol;..., in any case; &#N; and &#xN; for any
 * character, and without ";" as HTML5 reads them: &#N, &#xN, &amp, &lt,
 * &gt, &quot), quoted-printable (=XX for any byte but the first, a soft
 * line break "=\r\n" or "=\n" between two bytes), URL-encoded,
 * JSON-escaped or HTML-escaped twice (%252F, \\u002f, \\/, &amp;lt;,
 * &amp;#39;), and an ASCII string in UTF-16 and UTF-32 (LE, BE).  A
 * match is read in one form from its first byte to its last (once and
 * twice escaped characters of one escaper mix), with a line end (CRLF or
 * LF, in that form) allowed between any two characters, as a wrapping
 * encoder puts one anywhere in base64 (not two in a row).
 */

/*
 * The distinct two-byte starts listed for the walks that take a block at
 * a time (the nginx module's): up to 16 each one compared on its own, up
 * to 64 sharing the AVX2 walk's 16 bits (a superset); more, none
 */
#define AL_SCRUB_PAIRS  64

typedef struct {
    al_str_t        *str;
    size_t           n;
    size_t           maxlen;                /* the longest string */
    size_t           minlen;                /* the shortest, 0 when n == 0 */
    size_t           maxspan;               /* most bytes one match covers
                                               in a response: 10 a byte,
                                               an HTML reference's */
    unsigned char    first[256];            /* 1: a byte a match can start
                                               with */
    unsigned char    no_pair[256];          /* bit AL_SCRUB_PAIR(a, b) set:
                                               no match starts with the
                                               bytes a b (0: ask) */
    unsigned char    pair[AL_SCRUB_PAIRS][2];  /* the strings' first two
                                               bytes, each pair once */
    size_t           npairs;                /* 0: more than AL_SCRUB_PAIRS,
                                               or a string of one byte */
    size_t           plen;                  /* the length of the starts in
                                               prefix[] (the shortest
                                               string's, at most 8); 0:
                                               none (a string under 3) */
    unsigned char    prefix[512];           /* bit (FNV-1a of a string's
                                               first plen bytes) & 4095
                                               set for each string */
    unsigned         plus;                  /* a string starts with ' ' */
} al_scrub_t;

/* 2,048 bits: pairs that share a bit are asked about together */
#define AL_SCRUB_PAIR(a, b)  ((((unsigned) (a) << 3) ^ (unsigned) (b)) & 2047)

/* 1: no match starts at p, where two bytes are there to see */
static inline int
al_scrub_pair_out(const al_scrub_t *s, const unsigned char *p)
{
    unsigned  bit;

    if (p[0] == '%' || p[0] == '\\' || p[0] == '+' || p[0] == '&') {
        return 0;
    }

    bit = AL_SCRUB_PAIR(p[0], p[1]);

    return (s->no_pair[bit >> 3] >> (bit & 7)) & 1;
}

#define AL_SCRUB_NONE     0
#define AL_SCRUB_FULL     1
#define AL_SCRUB_PARTIAL  2

al_scrub_t *al_scrub_collect(const al_policy_t *p, const al_route_t *route,
    const char **why);

/* the same for an llm entry: its key as sent ("Bearer k" to OpenAI-style
   providers), raw and in base64, and the key alone in hex and its first
   and last halves (AL_SCRUB_HALF) */
al_scrub_t *al_scrub_collect_llm(const al_policy_t *p, const al_llm_t *llm,
    const char **why);
void al_scrub_free(al_scrub_t *s);

/*
 * The policy's list, what every scrubbed response is searched for: every
 * secret, every header value rendered with one, and every llm key, each
 * in the forms above.  A response on one route must not carry another's
 * credential either: an upstream may have it from elsewhere (a log line,
 * an inspector of the requests it got).  NULL with *why set as above.
 */
al_scrub_t *al_scrub_collect_all(const al_policy_t *p, const char **why);

/*
 * 1 when the route's responses are scrubbed (with the policy's list):
 * every route is once the policy holds a credential (a secret or an llm
 * entry), whether or not it injects one, as its upstream may have one
 * from elsewhere (another route to it, a log it serves), unless the
 * route says "scrub: false".
 */
int al_scrub_route_scrubbed(const al_policy_t *p, const al_route_t *route);

/*
 * What only the credential s's own bits make in a longer base64 text
 * where it starts place (0, 1 or 2) bytes past a multiple of 3, in the
 * standard or (url) the URL-safe alphabet: its length, written to out
 * (8 * len / 6 bytes at most, no NUL).  Listed for every credential of
 * AL_SCRUB_INNER bytes or more.
 */
#define AL_SCRUB_INNER  12

/*
 * A secret or an llm entry's key of 2 * AL_SCRUB_HALF bytes or more is
 * listed with its first and its last half ((len + 1) / 2 bytes each): a
 * credential cut short or split in two holds one of them whole.
 */
#define AL_SCRUB_HALF   16

size_t al_scrub_inner(char *out, const unsigned char *s, size_t len,
    unsigned place, int url);

/* orders the n strings at str by their bytes and fills in the lengths
   and the first-byte and pair tables (the collectors call it) */
void al_scrub_index(al_scrub_t *s);

/*
 * Whether a scrub string, in one of its forms, starts at p: AL_SCRUB_FULL
 * with *len the bytes it covers (the longest match), AL_SCRUB_PARTIAL when
 * the avail bytes are a proper prefix of a form and more may follow (never
 * when final is set), which wins over a FULL match, else AL_SCRUB_NONE.
 */
int al_scrub_match(const al_scrub_t *s, const unsigned char *p, size_t avail,
    int final, size_t *len);


/*
 * Tool definitions (al_tools.c): every route granted to client becomes a
 * tool named after the route, whose argument schema is built from the
 * route's rules: {"params": {path params, with their patterns}, "query":
 * {allowed query params, the required ones required}, "body": the JSON
 * body rules}.  With a sandbox client, a run_python tool is added whose
 * inputs name the routes that client may fetch.  The agent offers these
 * to its model and airlockctl prints them.
 */

#define AL_TOOL_RUN_PYTHON      "run_python"
#define AL_TOOL_INPUTS_MAX      16

typedef enum {
    AL_TOOLS_OPENAI = 0,                    /* [{"type": "function", ...}] */
    AL_TOOLS_MCP                            /* {"tools": [{"name", ...}]} */
} al_tools_format_t;

/* malloc'ed JSON text (free() it), or NULL with err set */
char *al_tools_json(const al_policy_t *p, const al_client_t *client,
    const al_client_t *sandbox, al_tools_format_t fmt, al_error_t *err);

/* the method a tool call uses on a route (one bit of AL_METHOD_*) */
unsigned al_tool_method(const al_route_t *r);

/* the Content-Type a tool call's body is sent with on a route: at most
   AL_TOOL_CTYPE_MAX bytes, no control byte */
#define AL_TOOL_CTYPE_MAX       512
const char *al_tool_content_type(const al_route_t *r);

/* 1 when name is a valid tool name: 1-64 of [A-Za-z0-9_-] */
int al_tool_name_ok(const char *name, size_t len);


#endif /* AIRLOCK_H */
