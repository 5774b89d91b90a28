/*
 * Policy schema v1: YAML node tree -> validated, compiled al_policy_t.
 *
 * Every error names the file, line and column, what was found and what
 * was expected.  Unknown keys are errors with the nearest known key
 * suggested.  Nothing an operator would want to see is defaulted: a path
 * param without a pattern, a route without a target, a plaintext secret
 * are all errors.  docs/policy.md is the reference for what is accepted.
 */

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "al_internal.h"
#include "al_llm.h"


#define AL_SECRET_MAX       65536
#define AL_BODY_MAX         (16 * 1024 * 1024)
#define AL_LLM_BODY_DEFAULT (4 * 1024 * 1024)
#define AL_LLM_PRICE_MAX    UINT64_C(10000000000)   /* $10000 per M */
#define AL_LLM_BUDGET_USD_MAX  (UINT64_C(1000000) * AL_LLM_USD)  /* $1M */


/*
 * Each route keeps a byte for every client (al_route_t's client_ok), so a
 * policy's routes times its clients is memory: 80000 routes for 150000
 * clients, a 12 MB file, took 12 GB to load (twice, with the copy each
 * route's table is built in), nginx's master and airlockctl alike.
 */
#define AL_ROUTE_CLIENTS_MAX  (64 * 1024 * 1024)


/*
 * The compiled patterns (code and JIT code) of a policy: one of 30 bytes
 * compiles to 50 KB, and a 16 MiB file of distinct ones took gigabytes
 * in nginx's master and in airlockctl check.  80000 routes of a simple
 * pattern each are 70 MB.
 */
#define AL_RE_SIZE_MAX      (256 * 1024 * 1024)

#define AL_RE_BUCKETS       1024

/*
 * The rendered header values of a policy, in all: a template may name a
 * secret of 64 KiB any number of times, and anyone may seal one to the
 * public key, so a policy file of "{s}{s}{s}..." rendered to hundreds of
 * gigabytes of guarded memory at nginx's load or check --key.  A header
 * value is sent with every request: one over a few KB is no upstream's.
 */
#define AL_RENDERED_MAX     (64 * 1024 * 1024)

/* rendered header values share guarded blocks of this size: each guarded
   block is three mappings, and a process has at most 65530 */
#define AL_SECURE_CHUNK     (64 * 1024)

/* an entry of the user or group database: the first buffer, and the
   largest one tried (a group lists its members) */
#define AL_UNIX_ENTRY       4096
#define AL_UNIX_ENTRY_MAX   (16 * 1024 * 1024)


typedef struct al_cc_re_s  al_cc_re_t;

/* compiled patterns by their text: routes that share one share the code */
struct al_cc_re_s {
    al_cc_re_t          *next;
    al_str_t             pattern;
    al_regex_t          *re;
};

/*
 * While a policy compiles, the YAML tree, lists and indexes live in tmp,
 * which is freed when the load ends: the compiled policy keeps only what
 * requests need, and strings that repeat (upstream and client names,
 * patterns, header templates) are kept once.
 */
typedef struct {
    al_pool_t           *pool;
    al_pool_t           *tmp;
    const char          *file;
    al_error_t          *err;
    al_policy_t         *p;
    const al_keyring_t  *kr;
    int                  open;              /* open the secrets: 0, 1 or
                                               AL_POLICY_SECRET_PATHS */
    al_cc_re_t          *re[AL_RE_BUCKETS];
    size_t               re_size;           /* of the compiled patterns */
    al_names_t           secret_names;
    al_names_t           upstream_names;
    al_str_t            *strs;              /* kept strings, by content */
    size_t               strs_mask;
    size_t               nstrs;
    al_inject_t        **rendered;          /* rendered templates */
    size_t               rendered_mask;
    size_t               nrendered;
    size_t               rendered_bytes;    /* of the rendered values */
    size_t              *llm_seen;          /* [nclients]: the llm entry
                                               (its index + 1) that last
                                               listed the client */
    unsigned char       *secure;            /* guarded memory left */
    size_t               secure_left;
} al_cc_t;


static int al_cc_error(al_cc_t *cc, const al_ynode_t *node,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const al_ynode_t *al_cc_get(const al_ynode_t *map, const char *key);
static int al_cc_keys(al_cc_t *cc, const al_ynode_t *map, const char *what,
    const char *const *known);
static int al_cc_need(al_cc_t *cc, const al_ynode_t *map, const char *key,
    const char *what, const al_ynode_t **out);
static int al_cc_type(al_cc_t *cc, const al_ynode_t *node,
    al_ynode_type_t type, const char *what);
static uint32_t al_cc_hash(const char *s, size_t len);
static int al_cc_keep(al_cc_t *cc, const al_ynode_t *node, al_str_t *out);
static int al_cc_keep_str(al_cc_t *cc, const char *s, size_t len,
    al_str_t *out);
static int al_names_init(al_pool_t *pool, al_names_t *ix, size_t n);
static const void *al_names_find(const al_names_t *ix, const void *base,
    size_t stride, const char *s, size_t len);
static const void *al_names_add(al_names_t *ix, const void *base,
    size_t stride, size_t i);
static int al_cc_string(al_cc_t *cc, const al_ynode_t *node,
    const char *what, al_str_t *out);
static int al_cc_name(al_cc_t *cc, const al_ynode_t *node, const char *what,
    al_str_t *out);
static int al_cc_header_secret(al_cc_t *cc, const al_ynode_t *node,
    const al_secret_t *sec, unsigned b64, const char *use);
static int al_cc_leading_zero(al_cc_t *cc, const al_ynode_t *node,
    const char *what);
static int al_cc_uint(al_cc_t *cc, const al_ynode_t *node, const char *what,
    uint64_t min, uint64_t max, uint64_t *out);
static int al_cc_bool(al_cc_t *cc, const al_ynode_t *node, const char *what,
    unsigned *out);
static int al_cc_duration(al_cc_t *cc, const al_ynode_t *node,
    const char *what, unsigned *out);
static int al_cc_list(al_cc_t *cc, const al_ynode_t *node, const char *what,
    const al_ynode_t ***items, size_t *n);
static int al_cc_regex(al_cc_t *cc, const al_ynode_t *node, const char *what,
    al_param_t *param);
static int al_cc_loopback(const al_str_t *hostname);
static int al_cc_host_kind(const al_str_t *hostname);
static int al_cc_clear(al_cc_t *cc, const al_ynode_t *node, const char *what,
    const al_upstream_t *u, const char *fix);
static int al_cc_url(al_cc_t *cc, const al_ynode_t *node, const char *what,
    al_upstream_t *u);

static int al_cc_clients(al_cc_t *cc, const al_ynode_t *node);
static int al_cc_client(al_cc_t *cc, const al_ynode_t *key,
    const al_ynode_t *val, al_client_t *c);
static int al_cc_cidr(al_cc_t *cc, const al_ynode_t *node, al_cidr_t *out);
static int al_cc_unix_id(al_cc_t *cc, const al_ynode_t *node, int group,
    uint64_t *id);
static int al_cc_client_overlaps(al_cc_t *cc, const al_ynode_t *node);
static int al_cc_secrets(al_cc_t *cc, const al_ynode_t *node);
static int al_cc_secret_open(al_cc_t *cc, const al_ynode_t *node,
    al_secret_t *s);
static int al_cc_upstreams(al_cc_t *cc, const al_ynode_t *node);
static int al_cc_routes(al_cc_t *cc, const al_ynode_t *node);
static int al_cc_route(al_cc_t *cc, const al_ynode_t *node, al_route_t *r);
static int al_cc_param(al_cc_t *cc, const al_ynode_t *node,
    al_param_t *param);
static int al_cc_route_clients(al_cc_t *cc, const al_ynode_t *node,
    uint8_t **ok);
static int al_cc_methods(al_cc_t *cc, const al_ynode_t *node,
    unsigned *methods);
static int al_cc_path(al_cc_t *cc, const al_ynode_t *node, al_route_t *r);
static int al_cc_to(al_cc_t *cc, const al_ynode_t *node, al_route_t *r);
static void al_cc_to_literal(al_route_t *r, const char *s, size_t len);
static int al_cc_query(al_cc_t *cc, const al_ynode_t *node, al_route_t *r);
static int al_cc_query_same(const char *a, const char *b, size_t len);
static int al_cc_body(al_cc_t *cc, const al_ynode_t *node, al_route_t *r);
static int al_cc_json_members(al_cc_t *cc, const al_ynode_t *node,
    al_json_rule_t *obj);
static const char *al_cc_query_base(const char *name, size_t len,
    size_t *blen);
static int al_cc_json_shadowed(al_cc_t *cc, const al_ynode_t *node,
    const al_route_t *r);
static int al_cc_inject(al_cc_t *cc, const al_ynode_t *node, al_route_t *r);
static int al_cc_inject_ctype(al_cc_t *cc, const al_ynode_t *node,
    al_route_t *r);
static al_inject_t *al_cc_rendered(al_cc_t *cc, const al_inject_t *inj,
    int add);
static unsigned char *al_cc_secure_alloc(al_cc_t *cc, size_t size);
static int al_cc_render(al_cc_t *cc, const al_ynode_t *node,
    al_inject_t *inj);
static int al_cc_llms(al_cc_t *cc, const al_ynode_t *node);
static int al_cc_llm(al_cc_t *cc, const al_ynode_t *node, al_llm_t *l);
static int al_cc_llm_provider(al_cc_t *cc, const al_ynode_t *node,
    al_llm_t *l);
static int al_cc_same(const al_str_t *a, const al_str_t *b);
static int al_cc_llm_fallback(al_cc_t *cc, const al_ynode_t *node,
    al_llm_t *l);
static int al_cc_llm_cache_write(al_cc_t *cc, const al_ynode_t *val,
    const al_llm_t *l, al_llm_price_t *pr);
static int al_cc_llm_prices(al_cc_t *cc, const al_ynode_t *node,
    al_llm_t *l);
static int al_cc_llm_rates(al_cc_t *cc, const al_ynode_t *val,
    const al_llm_t *l, const char *what, al_llm_price_t *pr);
static int al_cc_llm_long(al_cc_t *cc, const al_ynode_t *val,
    const al_llm_t *l, al_llm_price_t *pr);
static int al_cc_llm_tools(al_cc_t *cc, const al_ynode_t *node,
    al_llm_t *l);
static int al_cc_llm_members(al_cc_t *cc, const al_ynode_t *node,
    al_llm_t *l);
static int al_cc_llm_limits(al_cc_t *cc, const al_ynode_t *node,
    const al_llm_t *l, al_llm_client_t *lc);
static int al_cc_usd(al_cc_t *cc, const al_ynode_t *node, const char *what,
    unsigned scale, uint64_t min, uint64_t max, uint64_t *out);
static int al_cc_alerts(al_cc_t *cc, const al_ynode_t *node);
static int al_cc_threshold(al_cc_t *cc, const al_ynode_t *node,
    const char *what, int quarantine, al_threshold_t *t);
static int al_cc_prefix_conflicts(al_cc_t *cc, const al_ynode_t *node);
static const al_secret_t *al_cc_secret_ref(al_cc_t *cc,
    const al_ynode_t *node, const char *name, size_t len);
static int al_cc_segment_chars(const char *s, size_t len);
static int al_cc_clean_path(const char *s, size_t len);
static const char *al_cc_suggest(const char *s, size_t len,
    const char *const *known, size_t nknown);
static void al_cc_regex_free(void *data);
static void al_cc_secure_free(void *data);
static void al_cc_trie_free(void *data);


static const char *const al_top_keys[] = {
    "version", "clients", "secrets", "upstreams", "routes", "llm", "alerts",
    NULL
};

static const char *const al_client_keys[] = {
    "unix_uid", "unix_gid", "cidr", "token_sha256", "description", NULL
};

static const char *const al_secret_keys[] = {
    "sealed", "file", "description", NULL
};

static const char *const al_upstream_keys[] = {
    "url", "description", "allow_insecure_http", NULL
};

static const char *const al_route_keys[] = {
    "name", "description", "clients", "match", "params", "upstream", "to",
    "query", "body", "inject", "cookies", "scrub", NULL
};

static const char *const al_param_keys[] = {
    "pattern", "drive", NULL
};

static const char *const al_match_keys[] = {
    "method", "path", NULL
};

static const char *const al_query_keys[] = {
    "allow", "require", "patterns", NULL
};

static const char *const al_body_keys[] = {
    "max_bytes", "content_type", "json", "additional", NULL
};

static const char *const al_field_keys[] = {
    "type", "pattern", "required", "fields", "additional", NULL
};

static const char *const al_llm_keys[] = {
    "name", "description", "prefix", "provider", "upstream", "secret",
    "models", "clients", "include_usage", "max_body_bytes", "api_version",
    "aliases", "fallback", "prices", "provider_tools", "allow_members",
    "allow_insecure_http", NULL
};

static const char *const al_llm_client_keys[] = {
    "models", "tokens_per_minute", "tokens_per_day", "max_tokens",
    "over_max_tokens", "default_max_tokens", "requests_per_minute",
    "max_concurrent_requests", "usd_per_day", "usd_per_month", NULL
};

static const char *const al_llm_price_keys[] = {
    "input", "cached_input", "output", "cache_write", "cache_write_1h",
    "long_context", NULL
};

static const char *const al_llm_long_keys[] = {
    "above_input_tokens", "input", "cached_input", "output", "cache_write",
    "cache_write_1h", NULL
};

static const char *const al_alert_keys[] = {
    "deny", "quarantine", "sinks", NULL
};

static const char *const al_deny_keys[] = {
    "threshold", "window", NULL
};

static const char *const al_quarantine_keys[] = {
    "threshold", "window", "for", NULL
};

static const char *const al_sink_kinds[] = {
    "webhook", "alertmanager", NULL
};

static const char *const al_webhook_keys[] = {
    "url", "hmac_secret", "hmac_secret_also", "allow_insecure_http", NULL
};

static const char *const al_alertmanager_keys[] = {
    "url", NULL
};

static const char *const al_json_types[] = {
    "any", "string", "integer", "number", "boolean", "object", "array",
    "null", NULL
};

static const char *const al_providers[] = {
    "openai", "openai-compatible", "anthropic", "azure", NULL
};

/*
 * headers a route may not set: framing, hop-by-hop, routing, and the
 * body's coding (the body checks read the bytes as sent; an upstream
 * told they are gzip reads what they decode to)
 */
static const char *const al_inject_forbidden[] = {
    "host", "content-length", "transfer-encoding", "content-encoding",
    "connection", "upgrade", "te", "trailer", "keep-alive",
    "proxy-connection", "expect", NULL
};


al_policy_t *
al_policy_load(const char *path, const al_keyring_t *kr, al_error_t *err)
{
    return al_policy_load_open(path, kr, kr != NULL, err);
}


al_policy_t *
al_policy_load_open(const char *path, const al_keyring_t *kr, int open_secrets,
    al_error_t *err)
{
    int           fd;
    char         *buf;
    size_t        len;
    struct stat   st;
    al_policy_t  *p;

    /*
     * O_NONBLOCK: a FIFO in place of the policy must not hang nginx -t,
     * a reload or airlockctl in open(); fstat() refuses it next
     */

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        al_error_set(err, path, 0, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
        al_error_set(err, path, 0, 0, "not a regular file");
        close(fd);
        return NULL;
    }

    if (al_policy_trusted(path, fd, err) != 0) {
        close(fd);
        return NULL;
    }

    if (st.st_size > AL_POLICY_FILE_MAX) {
        al_error_set(err, path, 0, 0, "file is larger than %d bytes",
                     AL_POLICY_FILE_MAX);
        close(fd);
        return NULL;
    }

    buf = al_policy_read(fd, path, (size_t) st.st_size, &len, err);

    close(fd);

    if (buf == NULL) {
        return NULL;
    }

    p = al_policy_parse_open(path, buf, len, kr, open_secrets, err);

    free(buf);

    return p;
}


/*
 * The policy decides where every secret is sent: one that any user may
 * write is any user's (an agent's or a worker's uid on the appliance),
 * at the next reload.  Group write is the operators' (airlockctl edit
 * keeps it), and the owner may be one of them.
 */

int
al_policy_writable(const char *path, unsigned mode, al_error_t *err)
{
    if (mode & S_IWOTH) {
        al_error_set(err, path, 0, 0, "any user can write the policy (mode "
                     "%04o), and choose where its secrets are sent; "
                     "chmod o-w it", mode & 07777);
        return -1;
    }

    return 0;
}


/*
 * The file as fstat() saw it: size bytes, then its end.  A read that ends
 * early, or a file that goes on past size, means the file was truncated,
 * rewritten in place or appended to while it was read (or is not an
 * ordinary file, as one in /proc or /sys whose size is not its length):
 * what was read is not a policy anyone wrote, and none of it is parsed.
 */

char *
al_policy_read(int fd, const char *path, size_t size, size_t *len,
    al_error_t *err)
{
    char     *buf;
    ssize_t   n;

    /* one byte past size, to see a file that grew */

    buf = malloc(size + 1);
    if (buf == NULL) {
        al_error_set(err, path, 0, 0, "out of memory");
        return NULL;
    }

    *len = 0;

    while (*len <= size) {
        n = read(fd, buf + *len, size + 1 - *len);

        if (n == 0) {
            break;
        }

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            al_error_set(err, path, 0, 0, "cannot read: %s",
                         strerror(errno));
            free(buf);
            return NULL;
        }

        *len += (size_t) n;
    }

    if (*len < size) {
        al_error_set(err, path, 0, 0, "the file ended after %zu of its %zu "
                     "bytes: it was truncated or rewritten while it was "
                     "read; nothing was loaded, try again", *len, size);
        free(buf);
        return NULL;
    }

    if (*len > size) {
        al_error_set(err, path, 0, 0, "the file is longer than its %zu "
                     "bytes: it grew or was rewritten while it was read; "
                     "nothing was loaded, try again", size);
        free(buf);
        return NULL;
    }

    return buf;
}


al_policy_t *
al_policy_parse(const char *name, const char *buf, size_t len,
    const al_keyring_t *kr, al_error_t *err)
{
    return al_policy_parse_open(name, buf, len, kr, kr != NULL, err);
}


al_policy_t *
al_policy_parse_open(const char *name, const char *buf, size_t len,
    const al_keyring_t *kr, int open_secrets, al_error_t *err)
{
    unsigned           line, col;
    uint64_t           version;
    al_cc_t            cc;
    al_pool_t         *pool;
    al_policy_t       *p;
    const char        *nul;
    const al_ynode_t  *root, *v;

    if (len > AL_POLICY_FILE_MAX) {
        al_error_set(err, name, 0, 0, "policy is larger than %d bytes",
                     AL_POLICY_FILE_MAX);
        return NULL;
    }

    nul = memchr(buf, '\0', len);

    if (nul != NULL) {

        /* where it is, as a YAML error is placed: a line and a column */

        al_yaml_place(buf, (size_t) (nul - buf), &line, &col);

        al_error_set(err, name, line, col, "policy contains a NUL byte");
        return NULL;
    }

    pool = al_pool_create();
    if (pool == NULL) {
        al_error_set(err, name, 0, 0, "out of memory");
        return NULL;
    }

    p = al_palloc(pool, sizeof(al_policy_t));
    if (p == NULL) {
        al_pool_destroy(pool);
        al_error_set(err, name, 0, 0, "out of memory");
        return NULL;
    }

    p->pool = pool;
    p->file.data = al_pstrndup(pool, name, strlen(name));
    p->file.len = strlen(name);

    memset(&cc, 0, sizeof(cc));
    cc.pool = pool;
    cc.file = p->file.data;
    cc.err = err;
    cc.p = p;
    cc.kr = kr;
    cc.open = open_secrets;

    cc.tmp = al_pool_create();
    if (cc.tmp == NULL) {
        al_error_set(err, name, 0, 0, "out of memory");
        goto failed;
    }

    root = al_yaml_parse(cc.tmp, cc.file, buf, len, err);
    if (root == NULL) {
        goto failed;
    }

    if (al_cc_type(&cc, root, AL_Y_MAP, "the policy") != 0
        || al_cc_keys(&cc, root, "the policy", al_top_keys) != 0
        || al_cc_need(&cc, root, "version", "the policy", &v) != 0
        || al_cc_uint(&cc, v, "version", 1, 1000, &version) != 0)
    {
        goto failed;
    }

    if (version != 1) {
        al_cc_error(&cc, v, "unsupported policy version %u; this Airlock "
                    "reads version 1", (unsigned) version);
        goto failed;
    }

    p->version = 1;

    if (al_cc_need(&cc, root, "clients", "the policy", &v) != 0
        || al_cc_clients(&cc, v) != 0)
    {
        goto failed;
    }

    v = al_cc_get(root, "secrets");
    if (v != NULL && al_cc_secrets(&cc, v) != 0) {
        goto failed;
    }

    p->secrets_open = (cc.open != 0);

    v = al_cc_get(root, "upstreams");
    if (v != NULL && al_cc_upstreams(&cc, v) != 0) {
        goto failed;
    }

    p->trie = al_trie_create();
    if (p->trie == NULL
        || al_pool_cleanup(pool, al_cc_trie_free, p->trie) != 0)
    {
        al_trie_free(p->trie);
        al_error_set(err, cc.file, 0, 0, "out of memory");
        goto failed;
    }

    v = al_cc_get(root, "routes");
    if (v != NULL && al_cc_routes(&cc, v) != 0) {
        goto failed;
    }

    v = al_cc_get(root, "llm");
    if (v != NULL && (al_cc_llms(&cc, v) != 0
                      || al_cc_prefix_conflicts(&cc, v) != 0))
    {
        goto failed;
    }

    if (al_cc_need(&cc, root, "alerts", "the policy", &v) != 0
        || al_cc_alerts(&cc, v) != 0)
    {
        goto failed;
    }

    al_pool_destroy(cc.tmp);

#ifdef __GLIBC__
    /*
     * The YAML tree of a large policy is most of what the load allocated;
     * give its pages back, or every nginx worker forked from this process
     * starts with them.
     */
    malloc_trim(0);
#endif

    return p;

failed:

    al_pool_destroy(cc.tmp);
    al_pool_destroy(pool);
    return NULL;
}


void
al_policy_free(al_policy_t *p)
{
    if (p != NULL) {
        al_pool_destroy(p->pool);
    }
}


const al_client_t *
al_policy_client(const al_policy_t *p, const char *name, size_t len)
{
    return al_names_find(&p->client_names, p->clients, sizeof(al_client_t),
                         name, len);
}


const al_route_t *
al_policy_route(const al_policy_t *p, const char *name, size_t len)
{
    return al_names_find(&p->route_names, p->routes, sizeof(al_route_t),
                         name, len);
}


/* name indexes: every array they index starts its elements with a name */

static uint32_t
al_cc_hash(const char *s, size_t len)
{
    uint32_t  h;

    h = al_fnv1a(s, len);

    return h ^ (h >> 15);
}


static int
al_names_init(al_pool_t *pool, al_names_t *ix, size_t n)
{
    size_t  cap;

    for (cap = 8; cap < 2 * n + 2; cap *= 2) {
        /* void */
    }

    ix->slot = al_palloc(pool, cap * sizeof(uint32_t));
    ix->mask = cap - 1;

    return ix->slot ? 0 : -1;
}


static const void *
al_names_find(const al_names_t *ix, const void *base, size_t stride,
    const char *s, size_t len)
{
    size_t           i;
    const al_str_t  *name;

    if (ix->slot == NULL) {
        return NULL;
    }

    for (i = al_cc_hash(s, len) & ix->mask; ix->slot[i] != 0;
         i = (i + 1) & ix->mask)
    {
        name = (const al_str_t *) ((const char *) base
                                   + (ix->slot[i] - 1) * stride);
        if (name->len == len && memcmp(name->data, s, len) == 0) {
            return name;
        }
    }

    return NULL;
}


/* adds entry i; returns the entry that already has its name, or NULL */

static const void *
al_names_add(al_names_t *ix, const void *base, size_t stride, size_t i)
{
    size_t           k;
    const al_str_t  *name, *other;

    name = (const al_str_t *) ((const char *) base + i * stride);

    for (k = al_cc_hash(name->data, name->len) & ix->mask; ix->slot[k] != 0;
         k = (k + 1) & ix->mask)
    {
        other = (const al_str_t *) ((const char *) base
                                    + (ix->slot[k] - 1) * stride);
        if (other->len == name->len
            && memcmp(other->data, name->data, name->len) == 0)
        {
            return other;
        }
    }

    ix->slot[k] = (uint32_t) (i + 1);

    return NULL;
}


/* a copy of a scalar in the policy, one per distinct content */

static int
al_cc_keep(al_cc_t *cc, const al_ynode_t *node, al_str_t *out)
{
    if (al_cc_keep_str(cc, node->scalar.data, node->scalar.len, out) != 0) {
        return al_cc_error(cc, node, "out of memory");
    }

    return 0;
}


static int
al_cc_keep_str(al_cc_t *cc, const char *s, size_t len, al_str_t *out)
{
    size_t     i, k, cap;
    uint32_t   h;
    al_str_t  *strs, *e;

    if (2 * (cc->nstrs + 1) > cc->strs_mask) {
        cap = cc->strs ? 2 * (cc->strs_mask + 1) : 1024;
        strs = al_palloc(cc->tmp, cap * sizeof(al_str_t));
        if (strs == NULL) {
            return -1;
        }
        for (i = 0; cc->strs != NULL && i <= cc->strs_mask; i++) {
            e = &cc->strs[i];
            if (e->data == NULL) {
                continue;
            }
            for (k = al_cc_hash(e->data, e->len) & (cap - 1);
                 strs[k].data != NULL; k = (k + 1) & (cap - 1))
            {
                /* void */
            }
            strs[k] = *e;
        }
        cc->strs = strs;
        cc->strs_mask = cap - 1;
    }

    h = al_cc_hash(s, len);

    for (k = h & cc->strs_mask; cc->strs[k].data != NULL;
         k = (k + 1) & cc->strs_mask)
    {
        e = &cc->strs[k];
        if (e->len == len && memcmp(e->data, s, len) == 0) {
            *out = *e;
            return 0;
        }
    }

    e = &cc->strs[k];
    e->data = al_pstrndup(cc->pool, s, len);
    if (e->data == NULL) {
        return -1;
    }
    e->len = len;
    cc->nstrs++;

    *out = *e;

    return 0;
}


/* generic node helpers */

static int
al_cc_error(al_cc_t *cc, const al_ynode_t *node, const char *fmt, ...)
{
    va_list  ap;
    char     msg[AL_ERR_MAX];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    al_error_set(cc->err, cc->file, node ? node->line : 0,
                 node ? node->column : 0, "%s", msg);

    return -1;
}


static const al_ynode_t *
al_cc_get(const al_ynode_t *map, const char *key)
{
    size_t             i, len;
    const al_ynode_t  *k;

    if (map->type != AL_Y_MAP) {
        return NULL;
    }

    len = strlen(key);

    for (i = 0; i < map->n; i++) {
        k = map->items[i * 2];
        if (k->scalar.len == len && memcmp(k->scalar.data, key, len) == 0) {
            return map->items[i * 2 + 1];
        }
    }

    return NULL;
}


static const char *
al_cc_suggest(const char *s, size_t len, const char *const *known,
    size_t nknown)
{
    size_t       i, d, best_d, klen;
    const char  *best;

    best = NULL;
    best_d = (size_t) -1;

    for (i = 0; i < nknown && known[i] != NULL; i++) {
        klen = strlen(known[i]);
        d = al_edit_distance(s, len, known[i], klen);
        if (d < best_d) {
            best_d = d;
            best = known[i];
        }
    }

    if (best != NULL && best_d <= (len < 6 ? 2 : len / 3 + 1)) {
        return best;
    }

    return NULL;
}


static int
al_cc_keys(al_cc_t *cc, const al_ynode_t *map, const char *what,
    const char *const *known)
{
    size_t             i, j, off;
    char               list[256];
    const char        *hint;
    const al_ynode_t  *k;

    for (i = 0; i < map->n; i++) {
        k = map->items[i * 2];

        for (j = 0; known[j] != NULL; j++) {
            if (strlen(known[j]) == k->scalar.len
                && memcmp(known[j], k->scalar.data, k->scalar.len) == 0)
            {
                break;
            }
        }

        if (known[j] != NULL) {
            continue;
        }

        hint = al_cc_suggest(k->scalar.data, k->scalar.len, known, 64);
        if (hint != NULL) {
            return al_cc_error(cc, k, "unknown key \"%s\" in %s (did you "
                               "mean \"%s\"?)", k->scalar.data, what, hint);
        }

        off = 0;
        list[0] = '\0';
        for (j = 0; known[j] != NULL && off < sizeof(list); j++) {
            off += snprintf(list + off, sizeof(list) - off, "%s%s",
                            j ? ", " : "", known[j]);
        }

        return al_cc_error(cc, k, "unknown key \"%s\" in %s; expected one "
                           "of: %s", k->scalar.data, what, list);
    }

    return 0;
}


static int
al_cc_need(al_cc_t *cc, const al_ynode_t *map, const char *key,
    const char *what, const al_ynode_t **out)
{
    *out = al_cc_get(map, key);
    if (*out == NULL) {
        return al_cc_error(cc, map, "%s is missing the required key \"%s\"",
                           what, key);
    }

    return 0;
}


static int
al_cc_type(al_cc_t *cc, const al_ynode_t *node, al_ynode_type_t type,
    const char *what)
{
    static const char *names[] = { "a scalar", "a list", "a mapping" };

    if (node->type != type) {
        return al_cc_error(cc, node, "%s must be %s, found %s", what,
                           names[type], al_ynode_type_name(node));
    }

    if (type == AL_Y_SCALAR && node->plain && node->scalar.len == 0) {
        return al_cc_error(cc, node, "%s is empty", what);
    }

    return 0;
}


static int
al_cc_string(al_cc_t *cc, const al_ynode_t *node, const char *what,
    al_str_t *out)
{
    if (al_cc_type(cc, node, AL_Y_SCALAR, what) != 0) {
        return -1;
    }

    if (node->scalar.len == 0) {
        return al_cc_error(cc, node, "%s is empty", what);
    }

    return al_cc_keep(cc, node, out);
}


static int
al_cc_name(al_cc_t *cc, const al_ynode_t *node, const char *what,
    al_str_t *out)
{
    size_t       i;
    const char  *s;

    if (al_cc_string(cc, node, what, out) != 0) {
        return -1;
    }

    s = out->data;

    for (i = 0; i < out->len; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
              || (s[i] >= '0' && s[i] <= '9')
              || (i > 0 && (s[i] == '-' || s[i] == '_' || s[i] == '.'))))
        {
            return al_cc_error(cc, node, "%s \"%s\" is not a valid name: "
                               "use letters, digits, '-', '_' and '.', "
                               "starting with a letter or digit", what, s);
        }
    }

    if (out->len > 64) {
        return al_cc_error(cc, node, "%s is longer than 64 characters",
                           what);
    }

    return 0;
}


/*
 * A secret a header carries as it is: printable ASCII and tabs only, no
 * space or tab at either end.  A
 * line break or NUL would end the header; a byte outside ASCII reaches
 * many upstreams as Latin-1 and is echoed back re-encoded (as UTF-8, as
 * \u00XX), a form the scrubber does not search, so the credential would
 * leave unscrubbed.  Base64 (b64) carries any bytes, line breaks and NUL
 * still refused there as before.
 */

static int
al_cc_header_secret(al_cc_t *cc, const al_ynode_t *node,
    const al_secret_t *sec, unsigned b64, const char *use)
{
    size_t               i;
    const unsigned char  *p;

    p = sec->value;

    for (i = 0; i < sec->len; i++) {
        if (p[i] == '\r' || p[i] == '\n' || p[i] == '\0') {
            return al_cc_error(cc, node, "secret \"%s\" contains a line "
                               "break or NUL and cannot be used %s",
                               sec->name.data, use);
        }

        if (!b64 && ((p[i] < 0x20 && p[i] != '\t') || p[i] >= 0x7f)) {

            /*
             * where, not what: the error goes to logs and terminals.
             * Nor the secret's length: the place is counted from the
             * nearer end, which tells little more than that place.
             */

            return al_cc_error(cc, node, "secret \"%s\" contains a byte "
                               "outside printable ASCII (its byte %zu "
                               "from its %s) and cannot be used %s as it "
                               "is (|base64 can carry it)", sec->name.data,
                               i < sec->len - i ? i + 1 : sec->len - i,
                               i < sec->len - i ? "start" : "end", use);
        }
    }

    /*
     * Upstreams trim the spaces around a header value and echo what is
     * left, which is not the string the scrubber searches for.
     */

    if (!b64 && sec->len > 0
        && (p[0] == ' ' || p[0] == '\t'
            || p[sec->len - 1] == ' ' || p[sec->len - 1] == '\t'))
    {
        return al_cc_error(cc, node, "secret \"%s\" begins or ends with a "
                           "space or tab and cannot be used %s as it is",
                           sec->name.data, use);
    }

    return 0;
}


/* YAML 1.1 reads 010 as octal 8: neither reading is guessed ("0.5" is) */

static int
al_cc_leading_zero(al_cc_t *cc, const al_ynode_t *node, const char *what)
{
    const char  *s;

    s = node->scalar.data;

    if (node->scalar.len > 1 && s[0] == '0' && s[1] != '.') {
        return al_cc_error(cc, node, "%s must be written without leading "
                           "zeros, found \"%s\"", what, s);
    }

    return 0;
}


static int
al_cc_uint(al_cc_t *cc, const al_ynode_t *node, const char *what,
    uint64_t min, uint64_t max, uint64_t *out)
{
    size_t       i;
    uint64_t     v;
    const char  *s;

    if (al_cc_type(cc, node, AL_Y_SCALAR, what) != 0) {
        return -1;
    }

    s = node->scalar.data;
    v = 0;

    if (!node->plain || node->scalar.len == 0 || node->scalar.len > 19) {
        goto invalid;
    }

    if (al_cc_leading_zero(cc, node, what) != 0) {
        return -1;
    }

    for (i = 0; i < node->scalar.len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            goto invalid;
        }
        v = v * 10 + (uint64_t) (s[i] - '0');
    }

    if (v < min || v > max) {
        return al_cc_error(cc, node, "%s must be between %llu and %llu, "
                           "found %s", what, (unsigned long long) min,
                           (unsigned long long) max, s);
    }

    *out = v;

    return 0;

invalid:

    return al_cc_error(cc, node, "%s must be a whole number, found \"%s\"",
                       what, s);
}


static int
al_cc_bool(al_cc_t *cc, const al_ynode_t *node, const char *what,
    unsigned *out)
{
    if (al_cc_type(cc, node, AL_Y_SCALAR, what) != 0) {
        return -1;
    }

    if (node->plain && strcmp(node->scalar.data, "true") == 0) {
        *out = 1;
        return 0;
    }

    if (node->plain && strcmp(node->scalar.data, "false") == 0) {
        *out = 0;
        return 0;
    }

    return al_cc_error(cc, node, "%s must be true or false, found \"%s\"",
                       what, node->scalar.data);
}


static int
al_cc_duration(al_cc_t *cc, const al_ynode_t *node, const char *what,
    unsigned *out)
{
    size_t       i, len;
    uint64_t     v, unit;
    const char  *s;

    if (al_cc_type(cc, node, AL_Y_SCALAR, what) != 0) {
        return -1;
    }

    s = node->scalar.data;
    len = node->scalar.len;
    v = 0;

    for (i = 0; i + 1 < len && i < 9; i++) {
        if (s[i] < '0' || s[i] > '9') {
            goto invalid;
        }
        v = v * 10 + (uint64_t) (s[i] - '0');
    }

    if (len < 2 || i != len - 1) {
        goto invalid;
    }

    switch (s[len - 1]) {
    case 's':
        unit = 1;
        break;
    case 'm':
        unit = 60;
        break;
    case 'h':
        unit = 3600;
        break;
    case 'd':
        unit = 86400;
        break;
    default:
        goto invalid;
    }

    v *= unit;

    if (v == 0 || v > 366 * 86400) {
        return al_cc_error(cc, node, "%s must be between 1s and 366d, "
                           "found \"%s\"", what, s);
    }

    *out = (unsigned) v;

    return 0;

invalid:

    return al_cc_error(cc, node, "%s must be a duration such as 30s, 10m, "
                       "1h or 1d, found \"%s\"", what, s);
}


static int
al_cc_list(al_cc_t *cc, const al_ynode_t *node, const char *what,
    const al_ynode_t ***items, size_t *n)
{
    size_t  i;

    if (node->type == AL_Y_SCALAR) {
        if (al_cc_type(cc, node, AL_Y_SCALAR, what) != 0) {
            return -1;
        }
        *items = al_palloc(cc->tmp, sizeof(al_ynode_t *));
        if (*items == NULL) {
            return al_cc_error(cc, node, "out of memory");
        }
        (*items)[0] = node;
        *n = 1;
        return 0;
    }

    if (node->type != AL_Y_SEQ) {
        return al_cc_error(cc, node, "%s must be a name or a list of names, "
                           "found %s", what, al_ynode_type_name(node));
    }

    for (i = 0; i < node->n; i++) {
        if (al_cc_type(cc, node->items[i], AL_Y_SCALAR, what) != 0) {
            return -1;
        }
    }

    *items = (const al_ynode_t **) node->items;
    *n = node->n;

    return 0;
}


static int
al_cc_regex(al_cc_t *cc, const al_ynode_t *node, const char *what,
    al_param_t *param)
{
    char         msg[256];
    size_t       i;
    uint32_t     h;
    al_cc_re_t  *e;

    if (al_cc_string(cc, node, what, &param->pattern) != 0) {
        return -1;
    }

    h = 2166136261u;
    for (i = 0; i < param->pattern.len; i++) {
        h = (h ^ (unsigned char) param->pattern.data[i]) * 16777619u;
    }

    for (e = cc->re[h % AL_RE_BUCKETS]; e != NULL; e = e->next) {
        if (e->pattern.len == param->pattern.len
            && memcmp(e->pattern.data, param->pattern.data,
                      param->pattern.len) == 0)
        {
            param->re = e->re;
            return 0;
        }
    }

    param->re = al_regex_compile(node->scalar.data, node->scalar.len, msg,
                                 sizeof(msg));
    if (param->re == NULL) {
        return al_cc_error(cc, node, "%s: %s", what, msg);
    }

    if (al_pool_cleanup(cc->pool, al_cc_regex_free, param->re) != 0) {
        al_regex_free(param->re);
        return al_cc_error(cc, node, "out of memory");
    }

    cc->re_size += al_regex_size(param->re);

    if (cc->re_size > AL_RE_SIZE_MAX) {
        return al_cc_error(cc, node, "%s: the policy's patterns compile to "
                           "more than %d MiB here; use fewer distinct "
                           "patterns, or simpler ones (a bounded repeat "
                           "of a group is compiled once for each time)",
                           what, AL_RE_SIZE_MAX / (1024 * 1024));
    }

    e = al_palloc(cc->pool, sizeof(al_cc_re_t));
    if (e == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    e->pattern = param->pattern;
    e->re = param->re;
    e->next = cc->re[h % AL_RE_BUCKETS];
    cc->re[h % AL_RE_BUCKETS] = e;

    return 0;
}


static void
al_cc_regex_free(void *data)
{
    al_regex_free(data);
}


static void
al_cc_secure_free(void *data)
{
    al_secure_free(data);
}


/* cleanups are called as void (*)(void *); no calls through a cast */

static void
al_cc_trie_free(void *data)
{
    al_trie_free(data);
}


/*
 * http[s]://host[:port][/base/path]: no credentials, query or fragment in
 * the URL; credentials belong in secrets.
 */

static int
al_cc_url(al_cc_t *cc, const al_ynode_t *node, const char *what,
    al_upstream_t *u)
{
    char             a6[INET6_ADDRSTRLEN];
    size_t           i, hlen;
    uint64_t         port;
    const char      *s, *end, *h, *hend, *colon;
    struct in6_addr  in6;

    if (al_cc_string(cc, node, what, &u->url) != 0) {
        return -1;
    }

    s = u->url.data;
    end = s + u->url.len;

    if (u->url.len > 7 && strncmp(s, "http://", 7) == 0) {
        h = s + 7;
        u->https = 0;
        port = 80;

    } else if (u->url.len > 8 && strncmp(s, "https://", 8) == 0) {
        h = s + 8;
        u->https = 1;
        port = 443;

    } else {

        /*
         * Only the scheme is shown: the rest of a webhook's URL is its
         * secret (Slack's, Teams'), and the error reaches logs.
         */

        for (i = 0; i < u->url.len && i < 16
                    && (isalnum((unsigned char) s[i]) || s[i] == '+'
                        || s[i] == '-' || s[i] == '.');
             i++)
        {
            /* void */
        }

        if (i > 0 && u->url.len - i >= 3 && memcmp(s + i, "://", 3) == 0) {
            return al_cc_error(cc, node, "%s must start with http:// or "
                               "https://, found \"%.*s://...\"", what,
                               (int) i, s);
        }

        return al_cc_error(cc, node, "%s must start with http:// or "
                           "https://, found no scheme", what);
    }

    for (hend = h; hend < end && *hend != '/'; hend++) {
        if (*hend == '@') {
            return al_cc_error(cc, node, "%s must not carry credentials; "
                               "put them in secrets and inject them", what);
        }
        if (*hend == '?' || *hend == '#') {
            break;
        }
    }

    if (memchr(s, '?', u->url.len) || memchr(s, '#', u->url.len)) {
        return al_cc_error(cc, node, "%s must not have a query or a "
                           "fragment", what);
    }

    colon = NULL;
    if (*h == '[') {
        for (i = 1; h + i < hend && h[i] != ']'; i++) { /* void */ }
        if (h + i == hend) {
            return al_cc_error(cc, node, "%s: unterminated IPv6 address",
                               what);
        }
        if (i - 1 >= sizeof(a6)) {
            return al_cc_error(cc, node, "%s: invalid IPv6 address", what);
        }
        memcpy(a6, h + 1, i - 1);
        a6[i - 1] = '\0';
        if (inet_pton(AF_INET6, a6, &in6) != 1) {
            return al_cc_error(cc, node, "%s: invalid IPv6 address", what);
        }
        if (h + i + 1 < hend) {
            if (h[i + 1] != ':') {
                return al_cc_error(cc, node, "%s: invalid host", what);
            }
            colon = h + i + 1;
        }

    } else {
        colon = memchr(h, ':', (size_t) (hend - h));
    }

    hlen = (size_t) ((colon ? colon : hend) - h);
    if (hlen == 0) {
        return al_cc_error(cc, node, "%s has no host", what);
    }

    for (i = 0; i < hlen && *h != '['; i++) {
        if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z')
              || (h[i] >= '0' && h[i] <= '9') || h[i] == '-' || h[i] == '.'))
        {
            return al_cc_error(cc, node, "%s: invalid character in host "
                               "name", what);
        }
    }

    if (colon != NULL) {
        port = 0;
        if (colon + 1 == hend || hend - colon > 6) {
            return al_cc_error(cc, node, "%s: invalid port", what);
        }
        for (s = colon + 1; s < hend; s++) {
            if (*s < '0' || *s > '9') {
                return al_cc_error(cc, node, "%s: invalid port", what);
            }
            port = port * 10 + (uint64_t) (*s - '0');
        }
        if (port == 0 || port > 65535) {
            return al_cc_error(cc, node, "%s: port out of range", what);
        }
    }

    u->port = (unsigned) port;
    u->hostname.data = al_pstrndup(cc->pool, h, hlen);
    u->hostname.len = hlen;
    u->host.data = al_pstrndup(cc->pool, h, (size_t) (hend - h));
    u->host.len = (size_t) (hend - h);

    /* the base path, without a trailing slash */
    s = hend;
    while (end > s && end[-1] == '/') {
        end--;
    }

    if (s < end && al_cc_segment_chars(s, (size_t) (end - s)) != 0) {
        return al_cc_error(cc, node, "%s: the path may only use letters, "
                           "digits and -._~!$&'()*+,=:@/", what);
    }

    if (s < end && al_cc_clean_path(s, (size_t) (end - s)) != 0) {
        return al_cc_error(cc, node, "%s: the path has an empty or a dot "
                           "segment", what);
    }

    u->base_path.data = al_pstrndup(cc->pool, s, (size_t) (end - s));
    u->base_path.len = (size_t) (end - s);
    u->url.len = (size_t) (end - u->url.data);
    u->url.data = al_pstrndup(cc->pool, u->url.data, u->url.len);

    if (u->hostname.data == NULL || u->host.data == NULL
        || u->base_path.data == NULL || u->url.data == NULL)
    {
        return al_cc_error(cc, node, "out of memory");
    }

    return 0;
}


/*
 * An upstream's host as nginx reads it: an address (IPv4 dotted quad or
 * bracketed IPv6) of this host or of another, or a name, which nginx
 * takes to its upstream blocks or to DNS.  A trailing dot makes a name
 * ("127.0.0.1." is looked up).  "localhost" is a name like any other:
 * nginx never reads /etc/hosts for a url it resolves per request, but
 * asks its resolver, whose answer anyone on the network path may forge.
 */

#define AL_HOST_LOCAL    0
#define AL_HOST_ADDRESS  1
#define AL_HOST_NAME     2

static int
al_cc_host_kind(const al_str_t *hostname)
{
    char             a[INET6_ADDRSTRLEN];
    size_t           len;
    const char      *h;
    struct in_addr   in4;
    struct in6_addr  in6;

    h = hostname->data;
    len = hostname->len;

    if (len >= 2 && h[0] == '[' && h[len - 1] == ']') {
        if (len - 2 >= sizeof(a)) {
            return AL_HOST_ADDRESS;
        }

        memcpy(a, h + 1, len - 2);
        a[len - 2] = '\0';

        if (inet_pton(AF_INET6, a, &in6) == 1
            && (IN6_IS_ADDR_LOOPBACK(&in6)
                || (IN6_IS_ADDR_V4MAPPED(&in6) && in6.s6_addr[12] == 127)))
        {
            return AL_HOST_LOCAL;
        }

        return AL_HOST_ADDRESS;
    }

    if (len >= sizeof(a)) {
        return AL_HOST_NAME;
    }

    memcpy(a, h, len);
    a[len] = '\0';

    if (inet_pton(AF_INET, a, &in4) != 1) {
        return AL_HOST_NAME;
    }

    return (ntohl(in4.s_addr) >> 24) == 127 ? AL_HOST_LOCAL
                                              : AL_HOST_ADDRESS;
}


/*
 * A webhook URL's host is this host: "localhost", 127.0.0.0/8, ::1 (or
 * ::ffff:127.x.y.z), a trailing dot or not.  alertd's client answers
 * localhost itself, without DNS.  A host name other than localhost is
 * not looked up: what it resolves to is DNS's to say, and may change.
 */

static int
al_cc_loopback(const al_str_t *hostname)
{
    al_str_t  h;

    h = *hostname;

    if (h.len > 0 && h.data[h.len - 1] == '.') {
        h.len--;
    }

    if (h.len == 9 && strncasecmp(h.data, "localhost", 9) == 0) {
        return 1;
    }

    return al_cc_host_kind(&h) == AL_HOST_LOCAL;
}


/*
 * A secret sent over http:// crosses the network in clear unless its
 * destination stays on this host, or the operator says so on the
 * upstream or llm entry (fix): a network of its own, a TLS-terminating
 * sidecar.  An address, and a name with a port (nginx looks it up in
 * DNS, never in its upstream blocks), are decided here; a name without
 * a port is nginx's to place (al_policy_clear()).
 */

static int
al_cc_clear(al_cc_t *cc, const al_ynode_t *node, const char *what,
    const al_upstream_t *u, const char *fix)
{
    if (u->https || u->insecure_http) {
        return 0;
    }

    switch (al_cc_host_kind(&u->hostname)) {

    case AL_HOST_LOCAL:
        return 0;

    case AL_HOST_ADDRESS:
        return al_cc_error(cc, node, "%s over http:// to \"%s\", not this "
                           "host: the credential would cross the network "
                           "in clear; use https://, or set "
                           "allow_insecure_http: true on %s", what,
                           u->hostname.data, fix);

    default:
        if (u->host.len == u->hostname.len) {
            return 0;
        }

        return al_cc_error(cc, node, "%s over http:// to \"%s\", a host "
                           "name with a port, which nginx looks up in DNS "
                           "(only a name without a port is one of its "
                           "upstream blocks): the credential could cross "
                           "the network in clear; use https://, 127.0.0.1 "
                           "or an upstream block, or set "
                           "allow_insecure_http: true on %s", what,
                           u->host.data, fix);
    }
}


int
al_policy_clear(const al_policy_t *p, size_t *i, al_clear_t *c)
{
    const al_llm_t       *l;
    const al_upstream_t  *u;

    while (*i < p->nupstreams + p->nllm) {
        if (*i < p->nupstreams) {
            u = &p->upstreams[*i];
            l = NULL;

            if (u->secret_route == 0) {
                (*i)++;
                continue;
            }

        } else {
            l = &p->llm[*i - p->nupstreams];
            u = &l->upstream;
        }

        (*i)++;

        if (u->https) {
            continue;
        }

        c->upstream = u;
        c->route = (l == NULL) ? &p->routes[u->secret_route - 1] : NULL;
        c->llm = l;
        c->local = (al_cc_host_kind(&u->hostname) == AL_HOST_LOCAL);
        c->insecure = u->insecure_http;

        return 1;
    }

    return 0;
}


/*
 * Characters that may stand unencoded in a path we write ourselves: the
 * unreserved set, sub-delims but ';', ':', '@' and '/'.  No '%': what the
 * policy says is what is sent.
 */

static int
al_cc_segment_chars(const char *s, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
            || (s[i] >= '0' && s[i] <= '9')
            || strchr("-._~!$&'()*+,=:@/", s[i]) != NULL)
        {
            if (s[i] != '\0') {
                continue;
            }
        }
        return -1;
    }

    return 0;
}


/*
 * "/a/b": no empty segment and no "." or ".." segment anywhere, the last
 * one included; what an upstream would collapse is not written.
 */

static int
al_cc_clean_path(const char *s, size_t len)
{
    size_t       seglen;
    const char  *end, *slash;

    end = s + len;

    while (s < end) {
        /* s points at a '/' */
        s++;
        slash = memchr(s, '/', (size_t) (end - s));
        seglen = (size_t) ((slash ? slash : end) - s);

        if (seglen == 0
            || (seglen == 1 && s[0] == '.')
            || (seglen == 2 && s[0] == '.' && s[1] == '.'))
        {
            return -1;
        }

        s += seglen;
    }

    return 0;
}


/* clients */

static int
al_cc_clients(al_cc_t *cc, const al_ynode_t *node)
{
    size_t  i;

    if (al_cc_type(cc, node, AL_Y_MAP, "clients") != 0) {
        return -1;
    }

    cc->p->clients = al_palloc(cc->pool, (node->n + 1) * sizeof(al_client_t));
    if (cc->p->clients == NULL
        || al_names_init(cc->pool, &cc->p->client_names, node->n) != 0)
    {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < node->n; i++) {
        if (al_cc_client(cc, node->items[i * 2], node->items[i * 2 + 1],
                         &cc->p->clients[i]) != 0)
        {
            return -1;
        }
        cc->p->clients[i].index = (unsigned) i;
        cc->p->nclients++;

        /* YAML keys are unique: the name is new */
        (void) al_names_add(&cc->p->client_names, cc->p->clients,
                            sizeof(al_client_t), i);
    }

    return al_cc_client_overlaps(cc, node);
}


static int
al_cc_client(al_cc_t *cc, const al_ynode_t *key, const al_ynode_t *val,
    al_client_t *c)
{
    char               what[128];
    size_t             i, j, n;
    uint64_t           id;
    const al_ynode_t  *v, **items;

    if (al_cc_name(cc, key, "client name", &c->name) != 0) {
        return -1;
    }

    c->line = key->line;
    snprintf(what, sizeof(what), "client \"%s\"", c->name.data);

    if (al_cc_type(cc, val, AL_Y_MAP, what) != 0
        || al_cc_keys(cc, val, what, al_client_keys) != 0)
    {
        return -1;
    }

    v = al_cc_get(val, "unix_uid");
    if (v != NULL) {
        if (al_cc_list(cc, v, "unix_uid", &items, &n) != 0) {
            return -1;
        }
        c->uids = al_palloc(cc->pool, n * sizeof(uid_t));
        if (c->uids == NULL) {
            return al_cc_error(cc, v, "out of memory");
        }
        for (i = 0; i < n; i++) {
            if (items[i]->scalar.data[0] >= '0'
                && items[i]->scalar.data[0] <= '9')
            {
                if (al_cc_uint(cc, items[i], "unix_uid", 0, 0xfffffffe, &id)
                    != 0)
                {
                    return -1;
                }

            } else if (al_cc_unix_id(cc, items[i], 0, &id) != 0) {
                return -1;
            }
            c->uids[i] = (uid_t) id;
        }
        c->nuids = n;
    }

    v = al_cc_get(val, "unix_gid");
    if (v != NULL) {
        if (al_cc_list(cc, v, "unix_gid", &items, &n) != 0) {
            return -1;
        }
        c->gids = al_palloc(cc->pool, n * sizeof(gid_t));
        if (c->gids == NULL) {
            return al_cc_error(cc, v, "out of memory");
        }
        for (i = 0; i < n; i++) {
            if (items[i]->scalar.data[0] >= '0'
                && items[i]->scalar.data[0] <= '9')
            {
                if (al_cc_uint(cc, items[i], "unix_gid", 0, 0xfffffffe, &id)
                    != 0)
                {
                    return -1;
                }

            } else if (al_cc_unix_id(cc, items[i], 1, &id) != 0) {
                return -1;
            }
            c->gids[i] = (gid_t) id;
        }
        c->ngids = n;
    }

    v = al_cc_get(val, "cidr");
    if (v != NULL) {
        if (al_cc_list(cc, v, "cidr", &items, &n) != 0) {
            return -1;
        }
        c->cidrs = al_palloc(cc->pool, n * sizeof(al_cidr_t));
        if (c->cidrs == NULL) {
            return al_cc_error(cc, v, "out of memory");
        }
        for (i = 0; i < n; i++) {
            if (al_cc_cidr(cc, items[i], &c->cidrs[i]) != 0) {
                return -1;
            }
        }
        c->ncidrs = n;
    }

    v = al_cc_get(val, "token_sha256");
    if (v != NULL) {
        if (al_cc_list(cc, v, "token_sha256", &items, &n) != 0) {
            return -1;
        }
        c->tokens = al_palloc(cc->pool, n * 32);
        if (c->tokens == NULL) {
            return al_cc_error(cc, v, "out of memory");
        }
        for (i = 0; i < n; i++) {
            if (items[i]->scalar.len != 64) {
                return al_cc_error(cc, items[i], "token_sha256 must be 64 "
                                   "hex digits (the SHA-256 of the token: "
                                   "printf %%s TOKEN | sha256sum)");
            }
            for (j = 0; j < 32; j++) {
                if (sscanf(items[i]->scalar.data + j * 2, "%2hhx",
                           &c->tokens[i][j]) != 1
                    || !strchr("0123456789abcdefABCDEF",
                               items[i]->scalar.data[j * 2])
                    || !strchr("0123456789abcdefABCDEF",
                               items[i]->scalar.data[j * 2 + 1]))
                {
                    return al_cc_error(cc, items[i], "token_sha256 must be "
                                       "64 hex digits");
                }
            }
        }
        c->ntokens = n;
    }

    if (c->nuids + c->ngids + c->ncidrs + c->ntokens == 0) {
        return al_cc_error(cc, val, "%s has no identity: give unix_uid, "
                           "unix_gid, cidr or token_sha256", what);
    }

    return 0;
}


/*
 * A user's uid or a group's gid, by name.  The entry is read into a
 * buffer that grows while it is too small (ERANGE): a group's entry lists
 * its members, and a large group's runs to many kilobytes, which a fixed
 * buffer reported as no such group.
 */

static int
al_cc_unix_id(al_cc_t *cc, const al_ynode_t *node, int group, uint64_t *id)
{
    int             rc;
    char           *buf, *more;
    size_t          size;
    const char     *name;
    struct group    gr, *grp;
    struct passwd   pw, *pwp;

    name = node->scalar.data;
    size = AL_UNIX_ENTRY;
    buf = NULL;
    grp = NULL;
    pwp = NULL;

    for ( ;; ) {
        more = realloc(buf, size);
        if (more == NULL) {
            free(buf);
            return al_cc_error(cc, node, "out of memory");
        }
        buf = more;

        rc = group ? getgrnam_r(name, &gr, buf, size, &grp)
                   : getpwnam_r(name, &pw, buf, size, &pwp);

        if (rc != ERANGE || size >= AL_UNIX_ENTRY_MAX) {
            break;
        }

        size *= 2;
    }

    free(buf);

    if (rc == 0 && grp != NULL) {
        *id = gr.gr_gid;
        return 0;
    }

    if (rc == 0 && pwp != NULL) {
        *id = pw.pw_uid;
        return 0;
    }

    if (rc != 0 && rc != ENOENT && rc != ESRCH && rc != EBADF
        && rc != EPERM)
    {
        return al_cc_error(cc, node, "cannot look up %s \"%s\": %s",
                           group ? "group" : "user", name, strerror(rc));
    }

    return al_cc_error(cc, node, "no such %s \"%s\" on this system (create "
                       "it, or give the numeric %s)",
                       group ? "group" : "user", name, group ? "gid" : "uid");
}


static int
al_cc_cidr(al_cc_t *cc, const al_ynode_t *node, al_cidr_t *out)
{
    char           addr[64];
    size_t         len, i;
    uint64_t       prefix;
    const char    *s, *slash;
    struct in_addr   a4;

    s = node->scalar.data;
    len = node->scalar.len;
    slash = memchr(s, '/', len);

    if (slash == NULL || (size_t) (slash - s) >= sizeof(addr)) {
        return al_cc_error(cc, node, "cidr must be ADDRESS/PREFIX such as "
                           "10.0.0.0/8 or fd00::/8, found \"%s\"", s);
    }

    memcpy(addr, s, (size_t) (slash - s));
    addr[slash - s] = '\0';

    prefix = 0;
    if (slash[1] == '\0' || strlen(slash + 1) > 3) {
        goto invalid;
    }
    for (i = 1; slash[i] != '\0'; i++) {
        if (slash[i] < '0' || slash[i] > '9') {
            goto invalid;
        }
        prefix = prefix * 10 + (uint64_t) (slash[i] - '0');
    }

    memset(out, 0, sizeof(al_cidr_t));

    if (inet_pton(AF_INET, addr, &a4) == 1) {
        if (prefix > 32) {
            goto invalid;
        }
        out->addr[10] = 0xff;
        out->addr[11] = 0xff;
        memcpy(&out->addr[12], &a4, 4);
        out->prefix = (unsigned) prefix + 96;

    } else if (inet_pton(AF_INET6, addr, out->addr) == 1) {
        if (prefix > 128) {
            goto invalid;
        }
        out->prefix = (unsigned) prefix;

    } else {
        goto invalid;
    }

    for (i = out->prefix; i < 128; i++) {
        if (out->addr[i / 8] & (0x80 >> (i % 8))) {
            return al_cc_error(cc, node, "cidr \"%s\" has bits set past "
                               "the prefix length", s);
        }
    }

    return 0;

invalid:

    return al_cc_error(cc, node, "invalid cidr \"%s\"", s);
}


/*
 * One identity, one client: overlapping identities are config errors.
 * Exact identities (uid, gid, token) go through a hash table and CIDRs are
 * sorted and swept, so many clients cost n log n, not n * n.  Of several
 * overlaps, the one of the earliest client pair is reported.
 */

typedef struct {
    const uint8_t       *v;                 /* NULL: empty slot */
    unsigned             len;
    unsigned             kind;
    size_t               owner;
} al_cc_ident_t;

typedef struct {
    const al_cidr_t     *cidr;
    size_t               owner;
} al_cc_net_t;


static void
al_cc_overlap_pair(size_t a, size_t b, size_t *pa, size_t *pb)
{
    size_t  t;

    if (a > b) {
        t = a;
        a = b;
        b = t;
    }

    if (a < *pa || (a == *pa && b < *pb)) {
        *pa = a;
        *pb = b;
    }
}


static int
al_cc_net_cmp(const void *x, const void *y)
{
    int                 n;
    const al_cc_net_t  *a, *b;

    a = x;
    b = y;

    n = memcmp(a->cidr->addr, b->cidr->addr, 16);
    if (n != 0) {
        return n;
    }

    /* the wider block first */
    if (a->cidr->prefix != b->cidr->prefix) {
        return a->cidr->prefix < b->cidr->prefix ? -1 : 1;
    }

    return a->owner < b->owner ? -1 : (a->owner > b->owner);
}


/* the last address of a block: its address with the host bits set */

static void
al_cc_net_end(const al_cidr_t *c, uint8_t *end)
{
    unsigned  i;

    memcpy(end, c->addr, 16);

    for (i = c->prefix; i < 128; i++) {
        end[i / 8] |= (uint8_t) (0x80 >> (i % 8));
    }
}


static int
al_cc_client_overlaps(al_cc_t *cc, const al_ynode_t *node)
{
    size_t               i, k, n, nnets, cap, a, b, slot;
    uint8_t              end[16], top_end[16];
    uint32_t             h;
    al_cc_net_t         *nets, *top;
    al_cc_ident_t       *tab, *e;
    const al_client_t   *c;

    n = 0;
    nnets = 0;
    for (i = 0; i < cc->p->nclients; i++) {
        c = &cc->p->clients[i];
        n += c->nuids + c->ngids + c->ntokens;
        nnets += c->ncidrs;
    }

    for (cap = 16; cap < 2 * n + 2; cap *= 2) {
        /* void */
    }

    tab = al_palloc(cc->tmp, cap * sizeof(al_cc_ident_t));
    nets = al_palloc(cc->tmp, (nnets + 1) * sizeof(al_cc_net_t));
    if (tab == NULL || nets == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    a = (size_t) -1;
    b = (size_t) -1;
    nnets = 0;

    for (i = 0; i < cc->p->nclients; i++) {
        c = &cc->p->clients[i];

        for (k = 0; k < c->nuids + c->ngids + c->ntokens; k++) {
            al_cc_ident_t  id;

            if (k < c->nuids) {
                id.kind = 0;
                id.v = (const uint8_t *) &c->uids[k];
                id.len = sizeof(uid_t);

            } else if (k < c->nuids + c->ngids) {
                id.kind = 1;
                id.v = (const uint8_t *) &c->gids[k - c->nuids];
                id.len = sizeof(gid_t);

            } else {
                id.kind = 2;
                id.v = c->tokens[k - c->nuids - c->ngids];
                id.len = 32;
            }

            id.owner = i;

            h = al_cc_hash((const char *) id.v, id.len) ^ id.kind;

            for (slot = h & (cap - 1); tab[slot].v != NULL;
                 slot = (slot + 1) & (cap - 1))
            {
                e = &tab[slot];
                if (e->kind == id.kind && memcmp(e->v, id.v, id.len) == 0) {
                    break;
                }
            }

            if (tab[slot].v != NULL) {
                al_cc_overlap_pair(tab[slot].owner, i, &a, &b);
                continue;
            }

            tab[slot] = id;
        }

        for (k = 0; k < c->ncidrs; k++) {
            nets[nnets].cidr = &c->cidrs[k];
            nets[nnets].owner = i;
            nnets++;
        }
    }

    /* blocks are aligned: two overlap only when one holds the other */
    qsort(nets, nnets, sizeof(al_cc_net_t), al_cc_net_cmp);

    top = NULL;

    for (k = 0; k < nnets; k++) {
        if (top != NULL && memcmp(nets[k].cidr->addr, top_end, 16) <= 0) {
            al_cc_overlap_pair(top->owner, nets[k].owner, &a, &b);
        }

        al_cc_net_end(nets[k].cidr, end);

        if (top == NULL || memcmp(end, top_end, 16) > 0) {
            top = &nets[k];
            memcpy(top_end, end, 16);
        }
    }

    if (a == (size_t) -1) {
        return 0;
    }

    /* point at the client that repeats the identity */

    if (a == b) {
        return al_cc_error(cc, node->items[a * 2], "client \"%s\" "
                           "(line %u) lists the same identity twice",
                           cc->p->clients[a].name.data,
                           cc->p->clients[a].line);
    }

    return al_cc_error(cc, node->items[b * 2], "clients \"%s\" (line %u) "
                       "and \"%s\" (line %u) share an identity (uid, gid, "
                       "overlapping cidr or token); a request must name "
                       "exactly one client", cc->p->clients[a].name.data,
                       cc->p->clients[a].line, cc->p->clients[b].name.data,
                       cc->p->clients[b].line);
}


/* secrets */

static int
al_cc_secrets(al_cc_t *cc, const al_ynode_t *node)
{
    char               what[128];
    size_t             i, j;
    al_secret_t       *s;
    const al_ynode_t  *key, *val, *sealed, *file;

    if (al_cc_type(cc, node, AL_Y_MAP, "secrets") != 0) {
        return -1;
    }

    cc->p->secrets = al_palloc(cc->pool, (node->n + 1) * sizeof(al_secret_t));
    if (cc->p->secrets == NULL
        || al_names_init(cc->tmp, &cc->secret_names, node->n) != 0)
    {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < node->n; i++) {
        key = node->items[i * 2];
        val = node->items[i * 2 + 1];
        s = &cc->p->secrets[i];

        if (al_cc_name(cc, key, "secret name", &s->name) != 0) {
            return -1;
        }

        for (j = 0; j < s->name.len; j++) {
            if (s->name.data[j] == '|' || s->name.data[j] == '-'
                || s->name.data[j] == '.')
            {
                return al_cc_error(cc, key, "secret names may use letters, "
                                   "digits and '_' only");
            }
        }

        s->line = key->line;
        snprintf(what, sizeof(what), "secret \"%s\"", s->name.data);

        if (val->type == AL_Y_SCALAR) {
            return al_cc_error(cc, val, "%s is written in plain text; "
                               "secrets must be {sealed: ...} (airlockctl "
                               "seal) or {file: PATH}", what);
        }

        if (al_cc_type(cc, val, AL_Y_MAP, what) != 0
            || al_cc_keys(cc, val, what, al_secret_keys) != 0)
        {
            return -1;
        }

        sealed = al_cc_get(val, "sealed");
        file = al_cc_get(val, "file");

        if ((sealed == NULL) == (file == NULL)) {
            return al_cc_error(cc, val, "%s needs exactly one of \"sealed\" "
                               "or \"file\"", what);
        }

        if (sealed != NULL) {
            if (al_cc_string(cc, sealed, "sealed", &s->source) != 0) {
                return -1;
            }
            s->sealed = 1;

        } else {
            if (al_cc_string(cc, file, "file", &s->source) != 0) {
                return -1;
            }
            if (s->source.data[0] != '/') {
                return al_cc_error(cc, file, "file must be an absolute "
                                   "path");
            }
        }

        cc->p->nsecrets++;
        (void) al_names_add(&cc->secret_names, cc->p->secrets,
                            sizeof(al_secret_t), i);

        if (al_cc_secret_open(cc, sealed ? sealed : file, s) != 0) {
            return -1;
        }
    }

    return 0;
}


static int
al_cc_secret_open(al_cc_t *cc, const al_ynode_t *node, al_secret_t *s)
{
    int             rc;
    size_t          i;
    const char     *why;
    char            why_buf[AL_ERR_MAX];

    if (cc->open != 1) {
        /* validated for shape only; opened where the key lives */
        for (i = 0; s->sealed && i < s->source.len; i++) {
            if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        "0123456789+/=", s->source.data[i]))
            {
                return al_cc_error(cc, node, "sealed secret \"%s\" is not "
                                   "base64", s->name.data);
            }
        }

        /* a file: secret's file as opening it checks it, not read */

        if (cc->open == AL_POLICY_SECRET_PATHS && !s->sealed) {
            rc = al_secret_check_file(s->source.data, AL_SECRET_MAX,
                                      why_buf, sizeof(why_buf));
            if (rc == -1) {
                return al_cc_error(cc, node, "secret \"%s\": %s",
                                   s->name.data, why_buf);
            }

            s->unreached = (rc == 1);
        }

        return 0;
    }

    if (s->sealed) {
        if (cc->kr == NULL) {
            return al_cc_error(cc, node, "secret \"%s\" is sealed: the "
                               "keyring is needed to open it", s->name.data);
        }

        if (al_unseal(cc->kr, s->source.data, s->source.len, &s->value,
                      &s->len, &why) != 0)
        {
            return al_cc_error(cc, node, "secret \"%s\" %s", s->name.data,
                               why);
        }

    } else {
        if (al_secret_read_file(s->source.data, AL_SECRET_MAX, &s->value,
                                &s->len, why_buf, sizeof(why_buf))
            != 0)
        {
            return al_cc_error(cc, node, "secret \"%s\": %s", s->name.data,
                               why_buf);
        }
    }

    if (al_pool_cleanup(cc->pool, al_cc_secure_free, s->value) != 0) {
        al_secure_free(s->value);
        s->value = NULL;
        return al_cc_error(cc, node, "out of memory");
    }

    if (s->len == 0) {
        return al_cc_error(cc, node, "secret \"%s\" is empty", s->name.data);
    }

    if (al_key_is_private(s->value, s->len)) {
        return al_cc_error(cc, node, "secret \"%s\"%s%s holds an Airlock "
                           "private key, the one that opens sealed "
                           "secrets: it is never a credential to send "
                           "upstream", s->name.data,
                           s->sealed ? "" : ": ",
                           s->sealed ? "" : s->source.data);
    }

    return 0;
}


static const al_secret_t *
al_cc_secret_ref(al_cc_t *cc, const al_ynode_t *node, const char *name,
    size_t len)
{
    size_t             i;
    const char        *known[64], *hint;
    const al_secret_t  *s;

    s = al_names_find(&cc->secret_names, cc->p->secrets, sizeof(al_secret_t),
                      name, len);
    if (s != NULL) {
        return s;
    }

    for (i = 0; i < cc->p->nsecrets && i < 63; i++) {
        known[i] = cc->p->secrets[i].name.data;
    }

    known[i < 63 ? i : 63] = NULL;
    hint = al_cc_suggest(name, len, known, 64);

    al_cc_error(cc, node, "unknown secret \"%.*s\"%s%s%s", (int) len, name,
                hint ? " (did you mean \"" : "", hint ? hint : "",
                hint ? "\"?)" : "");

    return NULL;
}


/* upstreams */

static int
al_cc_upstreams(al_cc_t *cc, const al_ynode_t *node)
{
    char               what[128];
    size_t             i;
    unsigned           insecure;
    al_upstream_t     *u;
    const al_ynode_t  *key, *val, *url, *f;

    if (al_cc_type(cc, node, AL_Y_MAP, "upstreams") != 0) {
        return -1;
    }

    cc->p->upstreams = al_palloc(cc->pool,
                                 (node->n + 1) * sizeof(al_upstream_t));
    if (cc->p->upstreams == NULL
        || al_names_init(cc->tmp, &cc->upstream_names, node->n) != 0)
    {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < node->n; i++) {
        key = node->items[i * 2];
        val = node->items[i * 2 + 1];
        u = &cc->p->upstreams[i];

        if (al_cc_name(cc, key, "upstream name", &u->name) != 0) {
            return -1;
        }

        u->line = key->line;
        snprintf(what, sizeof(what), "upstream \"%s\"", u->name.data);

        if (al_cc_type(cc, val, AL_Y_MAP, what) != 0
            || al_cc_keys(cc, val, what, al_upstream_keys) != 0
            || al_cc_need(cc, val, "url", what, &url) != 0
            || al_cc_url(cc, url, "url", u) != 0)
        {
            return -1;
        }

        /* checked where a route or an llm entry sends it a secret */

        insecure = 0;
        f = al_cc_get(val, "allow_insecure_http");
        if (f != NULL
            && al_cc_bool(cc, f, "allow_insecure_http", &insecure) != 0)
        {
            return -1;
        }

        u->insecure_http = insecure;

        cc->p->nupstreams++;
        (void) al_names_add(&cc->upstream_names, cc->p->upstreams,
                            sizeof(al_upstream_t), i);
    }

    return 0;
}


/* routes */

static int
al_cc_routes(al_cc_t *cc, const al_ynode_t *node)
{
    size_t             i;
    al_route_t        *r;
    const al_route_t  *other;

    if (al_cc_type(cc, node, AL_Y_SEQ, "routes") != 0) {
        return -1;
    }

    if ((uint64_t) node->n * (cc->p->nclients + 1) > AL_ROUTE_CLIENTS_MAX) {
        return al_cc_error(cc, node, "%zu routes for %zu clients are "
                           "too many: each route keeps a table of every "
                           "client, and routes times (clients + 1) may be "
                           "at most %d", node->n, cc->p->nclients,
                           AL_ROUTE_CLIENTS_MAX);
    }

    cc->p->routes = al_palloc(cc->pool, (node->n + 1) * sizeof(al_route_t));
    if (cc->p->routes == NULL
        || al_names_init(cc->pool, &cc->p->route_names, node->n) != 0)
    {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < node->n; i++) {
        r = &cc->p->routes[i];
        r->index = (unsigned) i;

        if (al_cc_route(cc, node->items[i], r) != 0) {
            return -1;
        }

        other = al_names_add(&cc->p->route_names, cc->p->routes,
                             sizeof(al_route_t), i);
        if (other != NULL) {
            return al_cc_error(cc, node->items[i], "route name \"%s\" "
                               "is already used at line %u",
                               r->name.data, other->line);
        }

        if (al_trie_insert(cc->p->trie, r, &other) != 0) {
            if (other == NULL) {
                return al_cc_error(cc, node->items[i], "out of memory");
            }
            return al_cc_error(cc, node->items[i], "route \"%s\" (%s) can "
                               "match the same requests as route \"%s\" "
                               "(%s, line %u); make the paths or methods "
                               "distinct", r->name.data, r->path.data,
                               other->name.data, other->path.data,
                               other->line);
        }

        cc->p->nroutes++;
    }

    return 0;
}


static int
al_cc_route(al_cc_t *cc, const al_ynode_t *node, al_route_t *r)
{
    char               what[128], sends[256], fix[128];
    size_t             i;
    unsigned           cookies, scrub;
    al_upstream_t     *up;
    const al_ynode_t  *v, *match, *m, *unode;

    if (al_cc_type(cc, node, AL_Y_MAP, "a route") != 0
        || al_cc_keys(cc, node, "a route", al_route_keys) != 0
        || al_cc_need(cc, node, "name", "a route", &v) != 0
        || al_cc_name(cc, v, "route name", &r->name) != 0)
    {
        return -1;
    }

    r->line = node->line;
    snprintf(what, sizeof(what), "route \"%s\"", r->name.data);

    v = al_cc_get(node, "description");
    if (v != NULL
        && al_cc_type(cc, v, AL_Y_SCALAR, "route description") != 0)
    {
        return -1;
    }
    r->description = (al_str_t) { "", 0 };
    if (v != NULL && al_cc_keep(cc, v, &r->description) != 0) {
        return -1;
    }

    if (al_cc_need(cc, node, "clients", what, &v) != 0
        || al_cc_route_clients(cc, v, &r->client_ok) != 0)
    {
        return -1;
    }

    if (al_cc_need(cc, node, "match", what, &match) != 0
        || al_cc_type(cc, match, AL_Y_MAP, "match") != 0
        || al_cc_keys(cc, match, "match", al_match_keys) != 0
        || al_cc_need(cc, match, "method", "match", &m) != 0
        || al_cc_methods(cc, m, &r->methods) != 0
        || al_cc_need(cc, match, "path", "match", &m) != 0
        || al_cc_path(cc, m, r) != 0)
    {
        return -1;
    }

    /* every path param has a pattern, every pattern a param */
    v = al_cc_get(node, "params");
    if (v != NULL) {
        if (al_cc_type(cc, v, AL_Y_MAP, "params") != 0) {
            return -1;
        }
        for (i = 0; i < v->n; i++) {
            size_t  k;

            for (k = 0; k < r->nparams; k++) {
                if (r->params[k].name.len == v->items[i * 2]->scalar.len
                    && memcmp(r->params[k].name.data,
                              v->items[i * 2]->scalar.data,
                              r->params[k].name.len) == 0)
                {
                    break;
                }
            }
            if (k == r->nparams) {
                return al_cc_error(cc, v->items[i * 2], "params names "
                                   "\"%s\", which is not a {param} of path "
                                   "%s", v->items[i * 2]->scalar.data,
                                   r->path.data);
            }
            if (al_cc_param(cc, v->items[i * 2 + 1], &r->params[k]) != 0) {
                return -1;
            }
        }
    }

    for (i = 0; i < r->nparams; i++) {
        if (r->params[i].re == NULL) {
            return al_cc_error(cc, v ? v : node, "%s: path param {%s} has "
                               "no pattern; add params: { %s: \"^...$\" }",
                               what, r->params[i].name.data,
                               r->params[i].name.data);
        }
    }

    if (al_cc_need(cc, node, "upstream", what, &v) != 0
        || al_cc_type(cc, v, AL_Y_SCALAR, "upstream") != 0)
    {
        return -1;
    }

    r->upstream = al_names_find(&cc->upstream_names, cc->p->upstreams,
                                sizeof(al_upstream_t), v->scalar.data,
                                v->scalar.len);

    if (r->upstream == NULL) {
        return al_cc_error(cc, v, "%s names upstream \"%s\", which is not "
                           "defined in upstreams", what, v->scalar.data);
    }

    unode = v;

    if (al_cc_need(cc, node, "to", what, &v) != 0 || al_cc_to(cc, v, r) != 0)
    {
        return -1;
    }

    v = al_cc_get(node, "query");
    if (v != NULL && al_cc_query(cc, v, r) != 0) {
        return -1;
    }

    v = al_cc_get(node, "body");
    if (v != NULL && al_cc_body(cc, v, r) != 0) {
        return -1;
    }

    if (r->json != NULL) {
        r->json->params = r->params;
        r->json->nparams = r->nparams;
        r->json->query = r->query_patterns;
        r->json->nquery = r->nquery_allow;
    }

    v = al_cc_get(node, "inject");
    if (v != NULL && al_cc_inject(cc, v, r) != 0) {
        return -1;
    }

    if (r->inject_secret) {
        up = &cc->p->upstreams[r->upstream - cc->p->upstreams];

        snprintf(sends, sizeof(sends), "%s sends a secret to upstream "
                 "\"%s\"", what, up->name.data);
        snprintf(fix, sizeof(fix), "upstream \"%s\"", up->name.data);

        if (al_cc_clear(cc, unode, sends, up, fix) != 0) {
            return -1;
        }

        if (up->secret_route == 0) {
            up->secret_route = r->index + 1;
        }
    }

    v = al_cc_get(node, "cookies");
    if (v != NULL) {
        if (al_cc_bool(cc, v, "cookies", &cookies) != 0) {
            return -1;
        }
        r->allow_cookies = cookies;
    }

    /* scrub: false says the upstream holds no credential: not one sent */

    v = al_cc_get(node, "scrub");
    if (v != NULL) {
        if (al_cc_bool(cc, v, "scrub", &scrub) != 0) {
            return -1;
        }
        r->no_scrub = !scrub;

        for (i = 0; r->no_scrub && i < r->ninject; i++) {
            if (memchr(r->inject[i].tmpl.data, '{', r->inject[i].tmpl.len)
                != NULL)
            {
                return al_cc_error(cc, v, "%s injects a secret in %s, so "
                                   "its answers are scrubbed: scrub: false "
                                   "is only for a route whose upstream "
                                   "holds no credential", what,
                                   r->inject[i].name.data);
            }
        }
    }

    return 0;
}


static int
al_cc_route_clients(al_cc_t *cc, const al_ynode_t *node, uint8_t **ok)
{
    size_t              i, j, n;
    al_str_t            kept;
    const char         *known[64], *hint;
    const al_ynode_t  **items;
    const al_client_t  *c;

    if (al_cc_list(cc, node, "clients", &items, &n) != 0) {
        return -1;
    }

    if (n == 0) {
        return al_cc_error(cc, node, "clients is empty: name at least one "
                           "client");
    }

    /* built in tmp; routes with the same clients share one copy */
    *ok = al_palloc(cc->tmp, cc->p->nclients + 1);
    if (*ok == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < n; i++) {
        c = al_policy_client(cc->p, items[i]->scalar.data,
                             items[i]->scalar.len);
        if (c == NULL) {
            for (j = 0; j < cc->p->nclients && j < 63; j++) {
                known[j] = cc->p->clients[j].name.data;
            }
            known[j] = NULL;
            hint = al_cc_suggest(items[i]->scalar.data, items[i]->scalar.len,
                                 known, 64);
            return al_cc_error(cc, items[i], "unknown client \"%s\"%s%s%s",
                               items[i]->scalar.data,
                               hint ? " (did you mean \"" : "",
                               hint ? hint : "", hint ? "\"?)" : "");
        }
        (*ok)[c->index] = 1;
    }

    if (al_cc_keep_str(cc, (const char *) *ok, cc->p->nclients, &kept) != 0)
    {
        return al_cc_error(cc, node, "out of memory");
    }

    *ok = (uint8_t *) kept.data;

    return 0;
}


static int
al_cc_methods(al_cc_t *cc, const al_ynode_t *node, unsigned *methods)
{
    size_t              i, j, n;
    unsigned            bit;
    const char         *s;
    const al_ynode_t  **items;

    if (al_cc_list(cc, node, "method", &items, &n) != 0) {
        return -1;
    }

    *methods = 0;

    for (i = 0; i < n; i++) {
        s = items[i]->scalar.data;
        bit = al_method_bit(s, items[i]->scalar.len);

        if (bit == 0) {
            char  upper[16];

            for (j = 0; j < sizeof(upper) - 1 && s[j]; j++) {
                upper[j] = (s[j] >= 'a' && s[j] <= 'z') ? s[j] - 32 : s[j];
            }
            upper[j] = '\0';

            if (al_method_bit(upper, j) != 0) {
                return al_cc_error(cc, items[i], "methods are upper case: "
                                   "write %s, not %s", upper, s);
            }

            return al_cc_error(cc, items[i], "method \"%s\" is not allowed; "
                               "use GET, HEAD, POST, PUT, PATCH, DELETE or "
                               "OPTIONS", s);
        }

        if (*methods & bit) {
            return al_cc_error(cc, items[i], "method %s is listed twice", s);
        }

        *methods |= bit;
    }

    if (*methods == 0) {
        return al_cc_error(cc, node, "method is empty");
    }

    return 0;
}


/*
 * A path param: its pattern, or { pattern: '...', drive: true }, whose
 * segment may then start with a drive ("A:B"): the operator's word that
 * the upstream does not read it as a Windows path.
 */

static int
al_cc_param(al_cc_t *cc, const al_ynode_t *node, al_param_t *param)
{
    char               what[128];
    const al_ynode_t  *v;

    param->drive = 0;

    if (node->type != AL_Y_MAP) {
        return al_cc_regex(cc, node, "param pattern", param);
    }

    snprintf(what, sizeof(what), "param {%s}", param->name.data);

    if (al_cc_keys(cc, node, what, al_param_keys) != 0
        || al_cc_need(cc, node, "pattern", what, &v) != 0
        || al_cc_regex(cc, v, "param pattern", param) != 0)
    {
        return -1;
    }

    v = al_cc_get(node, "drive");
    if (v == NULL) {
        return 0;
    }

    snprintf(what, sizeof(what), "param {%s}: drive", param->name.data);

    return al_cc_bool(cc, v, what, &param->drive);
}


/* "/logs/{service}": literal segments and whole-segment {params} */

static int
al_cc_path(al_cc_t *cc, const al_ynode_t *node, al_route_t *r)
{
    size_t       i, k, n, len, seglen;
    const char  *s, *seg, *end;

    if (al_cc_string(cc, node, "path", &r->path) != 0) {
        return -1;
    }

    s = r->path.data;
    len = r->path.len;

    if (s[0] != '/') {
        return al_cc_error(cc, node, "path must start with '/', found "
                           "\"%s\"", s);
    }

    n = 0;
    for (i = 1; i < len; i++) {
        n += (s[i] == '/');
    }
    n = (len == 1) ? 0 : n + 1;

    if (n > AL_SEGMENTS_MAX) {
        return al_cc_error(cc, node, "path has more than %d segments",
                           AL_SEGMENTS_MAX);
    }

    k = 0;
    for (i = 0; i + 1 < len; i++) {
        k += (s[i] == '/' && s[i + 1] == '{');
    }

    r->segs = al_palloc(cc->pool, n * sizeof(al_str_t));
    r->seg_is_param = al_palloc(cc->pool, n);
    r->params = al_palloc(cc->pool, k * sizeof(al_param_t));
    if (r->segs == NULL || r->seg_is_param == NULL || r->params == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    seg = s + 1;
    end = s + len;

    for (i = 0; i < n; i++) {
        const char  *slash;

        slash = memchr(seg, '/', (size_t) (end - seg));
        seglen = (size_t) ((slash ? slash : end) - seg);

        if (seglen == 0) {
            return al_cc_error(cc, node, "path \"%s\" has an empty segment "
                               "(\"//\" or a trailing '/'); requests with "
                               "those are refused, so the route could "
                               "never match", s);
        }

        if (seg[0] == '{') {
            if (seglen < 3 || seg[seglen - 1] != '}') {
                return al_cc_error(cc, node, "path \"%s\": a param must be "
                                   "a whole segment like {name}", s);
            }
            for (k = 1; k < seglen - 1; k++) {
                if (!((seg[k] >= 'a' && seg[k] <= 'z') || seg[k] == '_'
                      || (k > 1 && seg[k] >= '0' && seg[k] <= '9')))
                {
                    return al_cc_error(cc, node, "path \"%s\": param names "
                                       "use a-z, 0-9 and '_'", s);
                }
            }

            r->seg_is_param[i] = 1;
            if (al_cc_keep_str(cc, seg + 1, seglen - 2, &r->segs[i]) != 0) {
                return al_cc_error(cc, node, "out of memory");
            }

            for (k = 0; k < r->nparams; k++) {
                if (r->params[k].name.len == r->segs[i].len
                    && memcmp(r->params[k].name.data, r->segs[i].data,
                              r->segs[i].len) == 0)
                {
                    return al_cc_error(cc, node, "path \"%s\" uses param "
                                       "{%s} twice", s, r->segs[i].data);
                }
            }

            r->params[r->nparams++].name = r->segs[i];

        } else {
            if (memchr(seg, '{', seglen) || memchr(seg, '}', seglen)) {
                return al_cc_error(cc, node, "path \"%s\": a param must be "
                                   "a whole segment like {name}", s);
            }
            if (al_cc_segment_chars(seg, seglen) != 0) {
                return al_cc_error(cc, node, "path \"%s\": literal segments "
                                   "may only use letters, digits and "
                                   "-._~!$&'()*+,=:@", s);
            }
            /* "...", like "..", is refused in requests (Windows trims
               the trailing dots): the route could never match */

            for (k = 0; k < seglen && seg[k] == '.'; k++) {
                /* void */
            }

            if (k == seglen) {
                return al_cc_error(cc, node, "path \"%s\" has a dot "
                                   "segment; requests with one are "
                                   "refused, so the route could never "
                                   "match", s);
            }

            if (seglen >= 2 && seg[1] == ':'
                && ((seg[0] >= 'a' && seg[0] <= 'z')
                    || (seg[0] >= 'A' && seg[0] <= 'Z')))
            {
                return al_cc_error(cc, node, "path \"%s\" has a segment "
                                   "that starts with a drive (\"C:\"); "
                                   "requests with one are refused, so the "
                                   "route could never match; for an "
                                   "upstream that does not read it as a "
                                   "Windows path, make it a {param} with "
                                   "drive: true", s);
            }

            if (al_cc_keep_str(cc, seg, seglen, &r->segs[i]) != 0) {
                return al_cc_error(cc, node, "out of memory");
            }
        }

        seg += seglen + 1;
    }

    r->nsegs = n;

    return 0;
}


/* "/repos/acme/{repo}/pulls": literal text and whole-segment {params} */

static int
al_cc_to(al_cc_t *cc, const al_ynode_t *node, al_route_t *r)
{
    int         *param;
    size_t       i, k, n, len, seglen;
    al_str_t    *parts;
    const char  *s, *seg, *end, *slash;

    if (al_cc_string(cc, node, "to", &r->to) != 0) {
        return -1;
    }

    s = r->to.data;
    len = r->to.len;

    if (s[0] != '/') {
        return al_cc_error(cc, node, "to must start with '/', found \"%s\"",
                           s);
    }

    n = 1;
    for (i = 0; i < len; i++) {
        n += (s[i] == '/');
    }

    /* parts alternate literal text and params; at most 2n + 1 of them,
       built in tmp and kept exactly sized */
    r->to_parts = al_palloc(cc->tmp, (2 * n + 1) * sizeof(al_str_t));
    r->to_param = al_palloc(cc->tmp, (2 * n + 1) * sizeof(int));
    if (r->to_parts == NULL || r->to_param == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    seg = s;
    end = s + len;
    r->nto_parts = 0;

    while (seg < end) {
        /* seg points at a '/' */
        seg++;
        slash = memchr(seg, '/', (size_t) (end - seg));
        seglen = (size_t) ((slash ? slash : end) - seg);

        if (seglen > 0 && seg[0] == '{') {
            if (seglen < 3 || seg[seglen - 1] != '}') {
                return al_cc_error(cc, node, "to \"%s\": a param must be a "
                                   "whole segment like {name}", s);
            }

            for (k = 0; k < r->nparams; k++) {
                if (r->params[k].name.len == seglen - 2
                    && memcmp(r->params[k].name.data, seg + 1, seglen - 2)
                       == 0)
                {
                    break;
                }
            }

            if (k == r->nparams) {
                return al_cc_error(cc, node, "to \"%s\" uses {%.*s}, which "
                                   "is not a param of path %s", s,
                                   (int) (seglen - 2), seg + 1,
                                   r->path.data);
            }

            al_cc_to_literal(r, seg - 1, 1);
            r->to_parts[r->nto_parts] = r->params[k].name;
            r->to_param[r->nto_parts++] = (int) k;

        } else {
            if (al_cc_segment_chars(seg, seglen) != 0
                || memchr(seg, '{', seglen) || memchr(seg, '}', seglen))
            {
                return al_cc_error(cc, node, "to \"%s\": literal text may "
                                   "only use letters, digits and "
                                   "-._~!$&'()*+,=:@", s);
            }
            if ((seglen == 1 && seg[0] == '.')
                || (seglen == 2 && seg[0] == '.' && seg[1] == '.'))
            {
                return al_cc_error(cc, node, "to \"%s\" has a dot segment",
                                   s);
            }

            /* "/" + the literal segment */
            al_cc_to_literal(r, seg - 1, seglen + 1);
        }

        seg += seglen;
    }

    parts = al_palloc(cc->pool, r->nto_parts * sizeof(al_str_t));
    param = al_palloc(cc->pool, r->nto_parts * sizeof(int));
    if (parts == NULL || param == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    memcpy(parts, r->to_parts, r->nto_parts * sizeof(al_str_t));
    memcpy(param, r->to_param, r->nto_parts * sizeof(int));
    r->to_parts = parts;
    r->to_param = param;

    return 0;
}


/* literal text of to: joined to the part before when that is literal */

static void
al_cc_to_literal(al_route_t *r, const char *s, size_t len)
{
    al_str_t  *last;

    if (r->nto_parts > 0 && r->to_param[r->nto_parts - 1] < 0) {
        last = &r->to_parts[r->nto_parts - 1];
        if (last->data + last->len == s) {
            last->len += len;
            return;
        }
    }

    r->to_parts[r->nto_parts].data = s;
    r->to_parts[r->nto_parts].len = len;
    r->to_param[r->nto_parts++] = -1;
}


/*
 * 1 when two names of len bytes are one parameter to some upstream: the
 * same but for ASCII case (ASP.NET) or a '.' or ' ' for a '_' (PHP).
 */

static int
al_cc_query_same(const char *a, const char *b, size_t len)
{
    size_t         i;
    unsigned char  x, y;

    for (i = 0; i < len; i++) {
        x = (unsigned char) a[i];
        y = (unsigned char) b[i];

        if (x == '.' || x == ' ') {
            x = '_';

        } else if (x >= 'A' && x <= 'Z') {
            x |= 0x20;
        }

        if (y == '.' || y == ' ') {
            y = '_';

        } else if (y >= 'A' && y <= 'Z') {
            y |= 0x20;
        }

        if (x != y) {
            return 0;
        }
    }

    return 1;
}


static int
al_cc_query(al_cc_t *cc, const al_ynode_t *node, al_route_t *r)
{
    size_t              i, j, n, blen;
    const char         *base;
    const al_ynode_t   *v, **items;

    if (al_cc_type(cc, node, AL_Y_MAP, "query") != 0
        || al_cc_keys(cc, node, "query", al_query_keys) != 0
        || al_cc_need(cc, node, "allow", "query", &v) != 0
        || al_cc_list(cc, v, "allow", &items, &n) != 0)
    {
        return -1;
    }

    r->query_allow = al_palloc(cc->pool, (n + 1) * sizeof(al_str_t));
    r->query_required = al_palloc(cc->pool, n + 1);
    r->query_patterns = al_palloc(cc->pool, (n + 1) * sizeof(al_param_t));
    if (r->query_allow == NULL || r->query_required == NULL
        || r->query_patterns == NULL)
    {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < n; i++) {
        for (j = 0; j < i; j++) {
            if (r->query_allow[j].len == items[i]->scalar.len
                && memcmp(r->query_allow[j].data, items[i]->scalar.data,
                          items[i]->scalar.len) == 0)
            {
                return al_cc_error(cc, items[i], "query parameter \"%s\" is "
                                   "listed twice", items[i]->scalar.data);
            }

            if (r->query_allow[j].len == items[i]->scalar.len
                && al_cc_query_same(r->query_allow[j].data,
                                    items[i]->scalar.data,
                                    items[i]->scalar.len))
            {
                return al_cc_error(cc, items[i], "query parameters \"%s\" "
                                   "and \"%s\" differ only by case or by "
                                   "'.', ' ' for '_', which ASP.NET or PHP "
                                   "reads as one parameter",
                                   r->query_allow[j].data,
                                   items[i]->scalar.data);
            }
        }

        /*
         * Spring's @ModelAttribute binds a request parameter over the
         * path variable of its name, ASP.NET in any case: the query
         * value would stand for the path param its pattern checked.
         * A name is also its key as PHP and Rack nest it ("id[x]" is
         * id's), as the JSON fields are compared (al_cc_json_shadowed()).
         */

        base = al_cc_query_base(items[i]->scalar.data, items[i]->scalar.len,
                                &blen);

        for (j = 0; j < r->nparams; j++) {
            if ((r->params[j].name.len == items[i]->scalar.len
                 && al_cc_query_same(r->params[j].name.data,
                                     items[i]->scalar.data,
                                     items[i]->scalar.len))
                || (r->params[j].name.len == blen
                    && al_cc_query_same(r->params[j].name.data, base, blen)))
            {
                return al_cc_error(cc, items[i], "query parameter \"%s\" "
                                   "has the name of the path param {%s}, "
                                   "which an upstream may read it for "
                                   "(Spring binds the query's over the "
                                   "path's); rename one",
                                   items[i]->scalar.data,
                                   r->params[j].name.data);
            }
        }

        if (al_cc_keep(cc, items[i], &r->query_allow[i]) != 0) {
            return -1;
        }
        r->query_patterns[i].name = r->query_allow[i];
    }

    r->nquery_allow = n;

    v = al_cc_get(node, "require");
    if (v != NULL) {
        if (al_cc_list(cc, v, "require", &items, &n) != 0) {
            return -1;
        }
        for (i = 0; i < n; i++) {
            for (j = 0; j < r->nquery_allow; j++) {
                if (r->query_allow[j].len == items[i]->scalar.len
                    && memcmp(r->query_allow[j].data, items[i]->scalar.data,
                              items[i]->scalar.len) == 0)
                {
                    break;
                }
            }
            if (j == r->nquery_allow) {
                return al_cc_error(cc, items[i], "required query parameter "
                                   "\"%s\" is not in allow",
                                   items[i]->scalar.data);
            }
            r->query_required[j] = 1;
        }
    }

    v = al_cc_get(node, "patterns");
    if (v != NULL) {
        if (al_cc_type(cc, v, AL_Y_MAP, "patterns") != 0) {
            return -1;
        }
        for (i = 0; i < v->n; i++) {
            for (j = 0; j < r->nquery_allow; j++) {
                if (r->query_allow[j].len == v->items[i * 2]->scalar.len
                    && memcmp(r->query_allow[j].data,
                              v->items[i * 2]->scalar.data,
                              r->query_allow[j].len) == 0)
                {
                    break;
                }
            }
            if (j == r->nquery_allow) {
                return al_cc_error(cc, v->items[i * 2], "pattern for query "
                                   "parameter \"%s\", which is not in allow",
                                   v->items[i * 2]->scalar.data);
            }
            if (al_cc_regex(cc, v->items[i * 2 + 1], "query pattern",
                            &r->query_patterns[j]) != 0)
            {
                return -1;
            }

            r->query_checked = 1;
        }
    }

    return 0;
}


static int
al_cc_body(al_cc_t *cc, const al_ynode_t *node, al_route_t *r)
{
    uint64_t           max;
    unsigned           additional;
    const al_ynode_t  *v;

    if (al_cc_type(cc, node, AL_Y_MAP, "body") != 0
        || al_cc_keys(cc, node, "body", al_body_keys) != 0
        || al_cc_need(cc, node, "max_bytes", "body", &v) != 0
        || al_cc_uint(cc, v, "max_bytes", 1, AL_BODY_MAX, &max) != 0)
    {
        return -1;
    }

    r->has_body = 1;
    r->body_max = (size_t) max;

    v = al_cc_get(node, "content_type");
    if (v != NULL && al_cc_string(cc, v, "content_type", &r->content_type)
                     != 0)
    {
        return -1;
    }

    v = al_cc_get(node, "json");
    if (v != NULL) {
        if (al_cc_type(cc, v, AL_Y_MAP, "json") != 0) {
            return -1;
        }

        r->json = al_palloc(cc->pool, sizeof(al_json_rule_t));
        if (r->json == NULL) {
            return al_cc_error(cc, v, "out of memory");
        }

        r->json->type = AL_JSON_OBJECT;
        r->json->required = 1;

        if (al_cc_json_members(cc, v, r->json) != 0
            || al_cc_json_shadowed(cc, v, r) != 0)
        {
            return -1;
        }

        if (r->content_type.len == 0) {
            r->content_type.data = "application/json";
            r->content_type.len = sizeof("application/json") - 1;
        }

        v = al_cc_get(node, "additional");
        if (v != NULL) {
            if (al_cc_bool(cc, v, "additional", &additional) != 0) {
                return -1;
            }
            r->json->additional = additional;
        }

    } else if (al_cc_get(node, "additional") != NULL) {
        return al_cc_error(cc, al_cc_get(node, "additional"),
                           "additional only applies together with json");
    }

    return 0;
}


/*
 * The top-level key of a query name as PHP and Rack read "a[b]": leading
 * spaces (PHP) and brackets (Rack) skipped, up to a '[' or a ']'.  Its
 * length in *blen; 0 when nothing is left.
 */

static const char *
al_cc_query_base(const char *name, size_t len, size_t *blen)
{
    size_t  i, k;

    for (i = 0; i < len; i++) {
        if (name[i] != ' ' && name[i] != '[' && name[i] != ']') {
            break;
        }
    }

    for (k = i; k < len; k++) {
        if (name[k] == '[' || name[k] == ']') {
            break;
        }
    }

    *blen = k - i;

    return name + i;
}


/*
 * Rails merges the query over a JSON body's top-level fields and the path
 * params over both, Symfony's get() (Laravel's $request->get()) reads the
 * query first, Laravel's input() the body, ASP.NET binds any of them in
 * any case: a field the rules check, named like a path param or a query
 * parameter the route allows (with a pattern or not: it is a second
 * value), could be read upstream as the other, unchecked or checked by
 * another rule.  Names are compared as al_cc_query() compares them, and
 * a query name also by the key PHP and Rack nest it under ("pr[head]" is
 * pr's, which Rails merges over the body's whole "pr").
 */

static int
al_cc_json_shadowed(al_cc_t *cc, const al_ynode_t *node, const al_route_t *r)
{
    size_t             i, j, blen;
    const char        *base;
    const al_str_t    *q;
    const al_ynode_t  *key;

    for (i = 0; i < node->n; i++) {
        key = node->items[i * 2];

        for (j = 0; j < r->nparams; j++) {
            if (r->params[j].name.len == key->scalar.len
                && al_cc_query_same(r->params[j].name.data,
                                    key->scalar.data, key->scalar.len))
            {
                return al_cc_error(cc, key, "JSON field \"%s\" has the "
                                   "name of the path param {%s}, which an "
                                   "upstream may read for it (Rails reads "
                                   "the path's over the body's); rename "
                                   "one", key->scalar.data,
                                   r->params[j].name.data);
            }
        }

        for (j = 0; j < r->nquery_allow; j++) {
            q = &r->query_allow[j];
            base = al_cc_query_base(q->data, q->len, &blen);

            if ((q->len == key->scalar.len
                 && al_cc_query_same(q->data, key->scalar.data, q->len))
                || (blen == key->scalar.len
                    && al_cc_query_same(base, key->scalar.data, blen)))
            {
                return al_cc_error(cc, key, "JSON field \"%s\" has the "
                                   "name of the query parameter \"%s\", "
                                   "which an upstream may read for it "
                                   "(Rails and Symfony read the query's "
                                   "over the body's, ASP.NET in any case); "
                                   "rename one or take it out of allow",
                                   key->scalar.data, q->data);
            }
        }
    }

    return 0;
}


/*
 * json: { head: "^remediation/...$", draft: { type: boolean,
 * required: false }, user: { type: object, fields: { ... } } }
 */

static int
al_cc_json_members(al_cc_t *cc, const al_ynode_t *node, al_json_rule_t *obj)
{
    size_t             i, t;
    unsigned           flag;
    al_param_t         re;
    al_json_rule_t    *m;
    const al_ynode_t  *key, *val, *v;

    obj->members = al_palloc(cc->pool,
                             (node->n + 1) * sizeof(al_json_rule_t));
    if (obj->members == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < node->n; i++) {
        key = node->items[i * 2];
        val = node->items[i * 2 + 1];
        m = &obj->members[i];

        if (al_cc_keep(cc, key, &m->name) != 0) {
            return -1;
        }
        m->required = 1;

        if (val->type == AL_Y_SCALAR) {
            m->type = AL_JSON_STRING;
            if (al_cc_regex(cc, val, "field pattern", &re) != 0) {
                return -1;
            }
            m->re = re.re;
            m->pattern = re.pattern;
            continue;
        }

        if (al_cc_type(cc, val, AL_Y_MAP, "a JSON field rule") != 0
            || al_cc_keys(cc, val, "a JSON field rule", al_field_keys) != 0
            || al_cc_need(cc, val, "type", "a JSON field rule", &v) != 0
            || al_cc_type(cc, v, AL_Y_SCALAR, "type") != 0)
        {
            return -1;
        }

        for (t = 0; al_json_types[t] != NULL; t++) {
            if (strcmp(al_json_types[t], v->scalar.data) == 0) {
                break;
            }
        }

        if (al_json_types[t] == NULL) {
            return al_cc_error(cc, v, "unknown JSON type \"%s\"; use any, "
                               "string, integer, number, boolean, object, "
                               "array or null", v->scalar.data);
        }

        m->type = (al_json_type_t) t;

        v = al_cc_get(val, "required");
        if (v != NULL) {
            if (al_cc_bool(cc, v, "required", &flag) != 0) {
                return -1;
            }
            m->required = flag;
        }

        v = al_cc_get(val, "pattern");
        if (v != NULL) {
            if (m->type != AL_JSON_STRING) {
                return al_cc_error(cc, v, "pattern only applies to type "
                                   "string");
            }
            if (al_cc_regex(cc, v, "field pattern", &re) != 0) {
                return -1;
            }
            m->re = re.re;
            m->pattern = re.pattern;
        }

        v = al_cc_get(val, "fields");
        if (v != NULL) {
            if (m->type != AL_JSON_OBJECT) {
                return al_cc_error(cc, v, "fields only applies to type "
                                   "object");
            }
            if (al_cc_type(cc, v, AL_Y_MAP, "fields") != 0
                || al_cc_json_members(cc, v, m) != 0)
            {
                return -1;
            }

        } else if (m->type == AL_JSON_OBJECT) {
            /* an object without listed fields is opaque */
            m->additional = 1;
        }

        v = al_cc_get(val, "additional");
        if (v != NULL) {
            if (m->type != AL_JSON_OBJECT) {
                return al_cc_error(cc, v, "additional only applies to type "
                                   "object");
            }
            if (al_cc_bool(cc, v, "additional", &flag) != 0) {
                return -1;
            }
            m->additional = flag;
        }
    }

    obj->nmembers = node->n;

    return 0;
}


static int
al_cc_inject(al_cc_t *cc, const al_ynode_t *node, al_route_t *r)
{
    size_t             i, j, k;
    char               lower[64];
    al_inject_t       *inj;
    const al_ynode_t  *key, *val;

    if (al_cc_type(cc, node, AL_Y_MAP, "inject") != 0) {
        return -1;
    }

    r->inject = al_palloc(cc->pool, node->n * sizeof(al_inject_t));
    if (r->inject == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < node->n; i++) {
        key = node->items[i * 2];
        val = node->items[i * 2 + 1];
        inj = &r->inject[i];

        if (al_cc_keep(cc, key, &inj->name) != 0) {
            return -1;
        }

        if (inj->name.len == 0 || inj->name.len >= sizeof(lower)) {
            return al_cc_error(cc, key, "invalid header name");
        }

        for (j = 0; j < inj->name.len; j++) {
            char  c = inj->name.data[j];

            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                  || (c >= '0' && c <= '9') || c == '-'))
            {
                return al_cc_error(cc, key, "invalid header name \"%s\": "
                                   "use letters, digits and '-'",
                                   inj->name.data);
            }
            lower[j] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
        }
        lower[j] = '\0';

        for (k = 0; al_inject_forbidden[k] != NULL; k++) {
            if (strcmp(lower, al_inject_forbidden[k]) == 0
                || strncmp(lower, "proxy-", 6) == 0)
            {
                return al_cc_error(cc, key, "header \"%s\" cannot be "
                                   "injected: it is set by the proxy itself",
                                   inj->name.data);
            }
        }

        for (k = 0; k < i; k++) {
            if (strcasecmp(r->inject[k].name.data, inj->name.data) == 0) {
                return al_cc_error(cc, key, "header \"%s\" is injected "
                                   "twice", inj->name.data);
            }
        }

        if (al_cc_string(cc, val, "an injected header", &inj->tmpl) != 0
            || al_cc_render(cc, val, inj) != 0)
        {
            return -1;
        }

        /* a '{' that al_cc_render() took is a secret's */
        if (memchr(inj->tmpl.data, '{', inj->tmpl.len) != NULL) {
            r->inject_secret = 1;
        }

        if (strcmp(lower, "content-type") == 0) {
            r->inject_ctype = inj;

            if (al_cc_inject_ctype(cc, val, r) != 0) {
                return -1;
            }
        }
    }

    r->ninject = node->n;

    return 0;
}


/*
 * An injected Content-Type reaches the upstream with a body or without
 * one, and Tomcat (useBodyEncodingForURI) or System.Web may read the
 * query in its charset, where the route's query patterns read UTF-8:
 * on a route with query patterns it is held to a form's charsets, here
 * where airlockctl check sees it.  A secret in it would be a charset
 * not seen until the secrets open.
 */

static int
al_cc_inject_ctype(al_cc_t *cc, const al_ynode_t *node, al_route_t *r)
{
    const al_inject_t  *inj;

    if (!r->query_checked) {
        return 0;
    }

    inj = r->inject_ctype;

    if (memchr(inj->tmpl.data, '{', inj->tmpl.len) != NULL) {
        return al_cc_error(cc, node, "route \"%s\" injects a secret in "
                           "Content-Type: on a route with query patterns "
                           "it must be a constant, as an upstream may read "
                           "the query in its charset", r->name.data);
    }

    if (al_form_charset_check(inj->tmpl.data, inj->tmpl.len) != 0) {
        return al_cc_error(cc, node, "route \"%s\" injects Content-Type "
                           "\"%s\": on a route with query patterns its "
                           "charset must be utf-8, us-ascii or iso-8859-1, "
                           "as an upstream may read the query in it",
                           r->name.data, inj->tmpl.data);
    }

    return 0;
}


/*
 * Renders "Bearer {name}" or "Basic {name|base64}".  Every reference is
 * checked; values are rendered only when the secrets are open.
 */

static int
al_cc_render(al_cc_t *cc, const al_ynode_t *node, al_inject_t *inj)
{
    int                 pass, b64;
    size_t              i, len, nlen, out;
    const char         *s, *close;
    unsigned char      *buf;
    al_inject_t        *same;
    const al_secret_t  *sec;

    s = inj->tmpl.data;
    len = inj->tmpl.len;
    buf = NULL;

    for (pass = 0; pass < 2; pass++) {
        out = 0;

        for (i = 0; i < len; i++) {
            if (s[i] == '}') {
                return al_cc_error(cc, node, "unbalanced '}' in \"%s\"", s);
            }

            if (s[i] != '{') {
                if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f) {
                    return al_cc_error(cc, node, "control character in "
                                       "header template");
                }
                if (buf) {
                    buf[out] = (unsigned char) s[i];
                }
                out++;
                continue;
            }

            close = memchr(s + i, '}', len - i);
            if (close == NULL) {
                return al_cc_error(cc, node, "unterminated '{' in \"%s\"",
                                   s);
            }

            nlen = (size_t) (close - (s + i + 1));
            b64 = 0;
            if (nlen > 7 && memcmp(close - 7, "|base64", 7) == 0) {
                b64 = 1;
                nlen -= 7;
            }

            sec = al_cc_secret_ref(cc, node, s + i + 1, nlen);
            if (sec == NULL) {
                return -1;
            }

            i = (size_t) (close - s);

            if (sec->value == NULL) {
                continue;
            }

            if (al_cc_header_secret(cc, node, sec, b64, "in a header")
                != 0)
            {
                return -1;
            }

            if (b64) {
                out += al_base64_encode(buf ? (char *) buf + out : NULL,
                                        buf ? (sec->len + 2) / 3 * 4 + 1 : 0,
                                        sec->value, sec->len);
            } else {
                if (buf) {
                    memcpy(buf + out, sec->value, sec->len);
                }
                out += sec->len;
            }
        }

        if (!cc->p->secrets_open) {
            return 0;
        }

        if (pass == 0) {
            /* routes with the same template share its rendered value */
            same = al_cc_rendered(cc, inj, 0);
            if (same != NULL) {
                inj->value = same->value;
                inj->len = same->len;
                return 0;
            }

            if (out > AL_RENDERED_MAX - cc->rendered_bytes) {
                return al_cc_error(cc, node, "the policy's injected header "
                                   "values come to more than %d MiB with "
                                   "this one (%zu bytes): a secret named "
                                   "many times in a template is copied "
                                   "each time", AL_RENDERED_MAX
                                   / (1024 * 1024), out);
            }

            cc->rendered_bytes += out + 1;

            buf = al_cc_secure_alloc(cc, out + 1);
            if (buf == NULL) {
                return al_cc_error(cc, node, "out of memory");
            }
        }
    }

    buf[out] = '\0';
    inj->value = buf;
    inj->len = out;

    if (al_cc_rendered(cc, inj, 1) == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    return 0;
}


/* the inject rendered from the same template; add: remember inj */

static al_inject_t *
al_cc_rendered(al_cc_t *cc, const al_inject_t *inj, int add)
{
    size_t         i, k, cap;
    al_inject_t  **tab, *e;

    if (add && 2 * (cc->nrendered + 1) > cc->rendered_mask) {
        cap = cc->rendered ? 2 * (cc->rendered_mask + 1) : 256;
        tab = al_palloc(cc->tmp, cap * sizeof(al_inject_t *));
        if (tab == NULL) {
            return NULL;
        }
        for (i = 0; cc->rendered != NULL && i <= cc->rendered_mask; i++) {
            e = cc->rendered[i];
            if (e == NULL) {
                continue;
            }
            for (k = al_cc_hash(e->tmpl.data, e->tmpl.len) & (cap - 1);
                 tab[k] != NULL; k = (k + 1) & (cap - 1))
            {
                /* void */
            }
            tab[k] = e;
        }
        cc->rendered = tab;
        cc->rendered_mask = cap - 1;
    }

    if (cc->rendered == NULL) {
        return NULL;
    }

    for (k = al_cc_hash(inj->tmpl.data, inj->tmpl.len) & cc->rendered_mask;
         cc->rendered[k] != NULL; k = (k + 1) & cc->rendered_mask)
    {
        e = cc->rendered[k];
        if (e->tmpl.len == inj->tmpl.len
            && memcmp(e->tmpl.data, inj->tmpl.data, e->tmpl.len) == 0)
        {
            return e;
        }
    }

    if (!add) {
        return NULL;
    }

    cc->rendered[k] = (al_inject_t *) inj;
    cc->nrendered++;

    return cc->rendered[k];
}


/* guarded memory for rendered values, carved from shared blocks */

static unsigned char *
al_cc_secure_alloc(al_cc_t *cc, size_t size)
{
    unsigned char  *p;

    if (size > AL_SECURE_CHUNK / 4) {
        p = al_secure_alloc(size);
        if (p != NULL && al_pool_cleanup(cc->pool, al_cc_secure_free, p) != 0)
        {
            al_secure_free(p);
            return NULL;
        }
        return p;
    }

    if (cc->secure == NULL || cc->secure_left < size) {
        p = al_secure_alloc(AL_SECURE_CHUNK);
        if (p == NULL) {
            return NULL;
        }
        if (al_pool_cleanup(cc->pool, al_cc_secure_free, p) != 0) {
            al_secure_free(p);
            return NULL;
        }
        cc->secure = p;
        cc->secure_left = AL_SECURE_CHUNK;
    }

    p = cc->secure;
    cc->secure += size;
    cc->secure_left -= size;

    return p;
}


/* llm providers */

static int
al_cc_llms(al_cc_t *cc, const al_ynode_t *node)
{
    size_t  i, j;

    if (al_cc_type(cc, node, AL_Y_SEQ, "llm") != 0) {
        return -1;
    }

    cc->p->llm = al_palloc(cc->pool, (node->n + 1) * sizeof(al_llm_t));
    if (cc->p->llm == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < node->n; i++) {
        if (al_cc_llm(cc, node->items[i], &cc->p->llm[i]) != 0) {
            return -1;
        }

        for (j = 0; j < i; j++) {
            if (cc->p->llm[j].name.len == cc->p->llm[i].name.len
                && memcmp(cc->p->llm[j].name.data, cc->p->llm[i].name.data,
                          cc->p->llm[i].name.len) == 0)
            {
                return al_cc_error(cc, node->items[i], "llm name \"%s\" is "
                                   "already used at line %u",
                                   cc->p->llm[i].name.data,
                                   cc->p->llm[j].line);
            }
        }

        cc->p->nllm++;
    }

    for (i = 0; i < node->n; i++) {
        if (al_cc_llm_fallback(cc, node->items[i], &cc->p->llm[i]) != 0) {
            return -1;
        }
    }

    return 0;
}


/*
 * fallback names another entry of the same API (OpenAI-style or
 * Anthropic) that lists every client of this one; a call goes there at
 * most once, so the fallback's own fallback is not followed.
 */

static int
al_cc_llm_fallback(al_cc_t *cc, const al_ynode_t *node, al_llm_t *l)
{
    size_t             i, j;
    const al_llm_t    *b;
    const al_ynode_t  *v;

    if (l->fallback_name.len == 0) {
        return 0;
    }

    v = al_cc_get(node, "fallback");

    for (i = 0; i < cc->p->nllm; i++) {
        if (al_cc_same(&cc->p->llm[i].name, &l->fallback_name)) {
            break;
        }
    }

    if (i == cc->p->nllm) {
        return al_cc_error(cc, v, "fallback \"%s\" is not an llm entry",
                           l->fallback_name.data);
    }

    b = &cc->p->llm[i];

    if (b == l) {
        return al_cc_error(cc, v, "llm \"%s\" cannot be its own fallback",
                           l->name.data);
    }

    if ((b->kind == AL_LLM_ANTHROPIC) != (l->kind == AL_LLM_ANTHROPIC)) {
        return al_cc_error(cc, v, "fallback \"%s\" speaks another API: "
                           "an anthropic entry falls back to an anthropic "
                           "entry, an OpenAI-style one (openai, "
                           "openai-compatible, azure) to an OpenAI-style one",
                           b->name.data);
    }

    for (i = 0; i < l->nclients; i++) {
        for (j = 0; j < b->nclients; j++) {
            if (b->clients[j].client == l->clients[i].client) {
                break;
            }
        }

        if (j == b->nclients) {
            return al_cc_error(cc, v, "fallback \"%s\" does not list "
                               "client \"%s\" of llm \"%s\"; list it "
                               "there with the models it may use",
                               b->name.data,
                               l->clients[i].client->name.data,
                               l->name.data);
        }
    }

    /* the fallback's checks are this entry's: it may not allow less */

    for (i = 0; i < AL_LLM_PT_NAMED; i++) {
        if ((l->provider_tools & ~b->provider_tools) & (UINT32_C(1) << i)) {
            return al_cc_error(cc, v, "fallback \"%s\" does not allow "
                               "provider tool %s, which llm \"%s\" "
                               "allows; add it to the fallback's "
                               "provider_tools", b->name.data,
                               al_llm_tool_names[i], l->name.data);
        }
    }

    for (i = 0; i < l->nallow_members; i++) {
        for (j = 0; j < b->nallow_members; j++) {
            if (b->allow_members[j].len == l->allow_members[i].len
                && memcmp(b->allow_members[j].data, l->allow_members[i].data,
                          l->allow_members[i].len)
                   == 0)
            {
                break;
            }
        }

        if (j == b->nallow_members) {
            return al_cc_error(cc, v, "fallback \"%s\" does not allow "
                               "member \"%s\", which llm \"%s\" allows; "
                               "add it to the fallback's allow_members",
                               b->name.data, l->allow_members[i].data,
                               l->name.data);
        }
    }

    l->fallback = b;

    return 0;
}


/*
 * provider_tools: the families of tools the provider runs itself (web
 * search, remote MCP, ...) that requests may ask for (al_llm.h); none
 * when absent.
 */

static int
al_cc_llm_tools(al_cc_t *cc, const al_ynode_t *node, al_llm_t *l)
{
    int                 id;
    size_t              i, k, n, len;
    char                names[256];
    const al_ynode_t  **items;

    if (al_cc_list(cc, node, "provider_tools", &items, &n) != 0) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        id = al_llm_tool_name(items[i]->scalar.data, items[i]->scalar.len);

        if (id < 0) {
            len = 0;
            names[0] = '\0';

            for (k = 0; al_llm_tool_names[k] != NULL; k++) {
                len += (size_t) snprintf(names + len, sizeof(names) - len,
                                         "%s%s", k ? ", " : "",
                                         al_llm_tool_names[k]);
                if (len >= sizeof(names)) {
                    break;
                }
            }

            return al_cc_error(cc, items[i], "unknown provider tool \"%s\"; "
                               "use one of: %s", items[i]->scalar.data,
                               names);
        }

        if (l->provider_tools & (UINT32_C(1) << id)) {
            return al_cc_error(cc, items[i], "provider tool \"%s\" is "
                               "listed twice", items[i]->scalar.data);
        }

        l->provider_tools |= UINT32_C(1) << id;
    }

    return 0;
}


/*
 * allow_members: top-level request members the gateway passes beyond
 * its own list of documented ones (al_llm_member_eps()), on every
 * endpoint of the entry; never one it refuses or checks itself.
 */

static int
al_cc_llm_members(al_cc_t *cc, const al_ynode_t *node, al_llm_t *l)
{
    size_t              i, k, n;
    const char         *why;
    const al_ynode_t  **items;

    if (al_cc_list(cc, node, "allow_members", &items, &n) != 0) {
        return -1;
    }

    l->allow_members = al_palloc(cc->pool, (n ? n : 1) * sizeof(al_str_t));
    if (l->allow_members == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < n; i++) {
        why = al_llm_member_refused(items[i]->scalar.data,
                                    items[i]->scalar.len);
        if (why != NULL) {
            return al_cc_error(cc, items[i], "allow_members: \"%s\" cannot "
                               "be allowed: %s", items[i]->scalar.data, why);
        }

        for (k = 0; k < i; k++) {
            if (l->allow_members[k].len == items[i]->scalar.len
                && memcmp(l->allow_members[k].data, items[i]->scalar.data,
                          items[i]->scalar.len)
                   == 0)
            {
                return al_cc_error(cc, items[i], "allow_members: \"%s\" is "
                                   "listed twice", items[i]->scalar.data);
            }
        }

        if (al_cc_keep(cc, items[i], &l->allow_members[i]) != 0) {
            return -1;
        }
    }

    l->nallow_members = n;
    l->think_members = al_llm_members_think(l->allow_members, n);

    return 0;
}


static int
al_cc_llm(al_cc_t *cc, const al_ynode_t *node, al_llm_t *l)
{
    char                what[128], sends[160];
    size_t              i, j, k, n;
    uint64_t            v64;
    unsigned            flag;
    al_str_t            s;
    al_llm_client_t    *lc;
    const al_ynode_t   *v, *key, *val, *w, **items, *unode;
    const al_client_t  *c;

    if (al_cc_type(cc, node, AL_Y_MAP, "an llm provider") != 0
        || al_cc_keys(cc, node, "an llm provider", al_llm_keys) != 0
        || al_cc_need(cc, node, "name", "an llm provider", &v) != 0
        || al_cc_name(cc, v, "llm name", &l->name) != 0)
    {
        return -1;
    }

    l->line = node->line;
    snprintf(what, sizeof(what), "llm \"%s\"", l->name.data);

    if (al_cc_need(cc, node, "prefix", what, &v) != 0
        || al_cc_string(cc, v, "prefix", &l->prefix) != 0)
    {
        return -1;
    }

    if (l->prefix.data[0] != '/' || l->prefix.len < 2
        || l->prefix.data[l->prefix.len - 1] == '/'
        || al_cc_segment_chars(l->prefix.data, l->prefix.len) != 0
        || al_cc_clean_path(l->prefix.data, l->prefix.len) != 0)
    {
        return al_cc_error(cc, v, "prefix must be a path such as "
                           "/v1/proxy/openai (no trailing '/')");
    }

    if (al_cc_need(cc, node, "provider", what, &v) != 0
        || al_cc_type(cc, v, AL_Y_SCALAR, "provider") != 0)
    {
        return -1;
    }

    for (i = 0; al_providers[i] != NULL; i++) {
        if (strcmp(al_providers[i], v->scalar.data) == 0) {
            break;
        }
    }

    if (al_providers[i] == NULL) {
        return al_cc_error(cc, v, "unknown provider \"%s\"; use openai, "
                           "openai-compatible, anthropic or azure",
                           v->scalar.data);
    }

    l->kind = (al_llm_kind_t) i;
    l->include_usage = (l->kind != AL_LLM_ANTHROPIC);
    l->body_max = AL_LLM_BODY_DEFAULT;

    if (al_cc_need(cc, node, "upstream", what, &v) != 0
        || al_cc_type(cc, v, AL_Y_SCALAR, "upstream") != 0)
    {
        return -1;
    }

    if (strstr(v->scalar.data, "://") != NULL) {
        if (al_cc_url(cc, v, "upstream", &l->upstream) != 0) {
            return -1;
        }

    } else {
        const al_upstream_t  *up;

        up = al_names_find(&cc->upstream_names, cc->p->upstreams,
                           sizeof(al_upstream_t), v->scalar.data,
                           v->scalar.len);
        if (up != NULL) {
            l->upstream = *up;

        } else {
            return al_cc_error(cc, v, "%s: upstream \"%s\" is neither a URL "
                               "nor defined in upstreams", what,
                               v->scalar.data);
        }
    }

    unode = v;

    /* its own, or the named upstream's (copied above) */

    v = al_cc_get(node, "allow_insecure_http");
    if (v != NULL) {
        if (al_cc_bool(cc, v, "allow_insecure_http", &flag) != 0) {
            return -1;
        }

        l->upstream.insecure_http |= flag;
    }

    l->upstream.secret_route = 0;

    snprintf(sends, sizeof(sends), "%s sends its secret", what);

    if (al_cc_clear(cc, unode, sends, &l->upstream, what) != 0) {
        return -1;
    }

    if (al_cc_need(cc, node, "secret", what, &v) != 0
        || al_cc_string(cc, v, "secret", &s) != 0)
    {
        return -1;
    }

    l->secret = al_cc_secret_ref(cc, v, s.data, s.len);
    if (l->secret == NULL) {
        return -1;
    }

    if (l->secret->value != NULL
        && al_cc_header_secret(cc, v, l->secret, 0, "as an API key") != 0)
    {
        return -1;
    }

    if (al_cc_need(cc, node, "models", what, &v) != 0
        || al_cc_list(cc, v, "models", &items, &n) != 0)
    {
        return -1;
    }

    if (n == 0) {
        return al_cc_error(cc, v, "models is empty: list the models "
                           "clients may use");
    }

    l->models = al_palloc(cc->pool, n * sizeof(al_str_t));
    if (l->models == NULL) {
        return al_cc_error(cc, v, "out of memory");
    }

    for (i = 0; i < n; i++) {
        if (al_cc_keep(cc, items[i], &l->models[i]) != 0) {
            return -1;
        }
    }
    l->nmodels = n;

    v = al_cc_get(node, "include_usage");
    if (v != NULL) {
        if (al_cc_bool(cc, v, "include_usage", &flag) != 0) {
            return -1;
        }
        if (l->kind == AL_LLM_ANTHROPIC) {
            return al_cc_error(cc, v, "include_usage applies to OpenAI-style "
                               "providers; Anthropic streams always carry "
                               "usage");
        }
        l->include_usage = flag;
    }

    v = al_cc_get(node, "max_body_bytes");
    if (v != NULL) {
        if (al_cc_uint(cc, v, "max_body_bytes", 1, AL_BODY_MAX, &v64) != 0) {
            return -1;
        }
        l->body_max = (size_t) v64;
    }

    if (al_cc_llm_provider(cc, node, l) != 0) {
        return -1;
    }

    v = al_cc_get(node, "provider_tools");
    if (v != NULL && al_cc_llm_tools(cc, v, l) != 0) {
        return -1;
    }

    v = al_cc_get(node, "allow_members");
    if (v != NULL && al_cc_llm_members(cc, v, l) != 0) {
        return -1;
    }

    v = al_cc_get(node, "prices");
    if (v != NULL && al_cc_llm_prices(cc, v, l) != 0) {
        return -1;
    }

    if (al_cc_need(cc, node, "clients", what, &v) != 0
        || al_cc_type(cc, v, AL_Y_MAP, "clients") != 0)
    {
        return -1;
    }

    if (v->n == 0) {
        return al_cc_error(cc, v, "clients is empty: name at least one "
                           "client");
    }

    l->clients = al_palloc(cc->pool, v->n * sizeof(al_llm_client_t));
    if (l->clients == NULL) {
        return al_cc_error(cc, v, "out of memory");
    }

    for (i = 0; i < v->n; i++) {
        key = v->items[i * 2];
        val = v->items[i * 2 + 1];
        lc = &l->clients[i];

        c = al_policy_client(cc->p, key->scalar.data, key->scalar.len);
        if (c == NULL) {
            return al_cc_error(cc, key, "unknown client \"%s\"",
                               key->scalar.data);
        }
        lc->client = c;

        if (al_cc_type(cc, val, AL_Y_MAP, "an llm client") != 0
            || al_cc_keys(cc, val, "an llm client", al_llm_client_keys) != 0)
        {
            return -1;
        }

        w = al_cc_get(val, "models");
        if (w != NULL) {
            if (al_cc_list(cc, w, "models", &items, &n) != 0) {
                return -1;
            }
            /* an empty list reads as "none", the gateway takes it as
               "all": refuse it rather than guess */
            if (n == 0) {
                return al_cc_error(cc, w, "models is empty: list the "
                                   "models this client may use, or leave "
                                   "models out for all of the provider's");
            }
            lc->models = al_palloc(cc->pool, (n + 1) * sizeof(al_str_t));
            if (lc->models == NULL) {
                return al_cc_error(cc, w, "out of memory");
            }
            for (j = 0; j < n; j++) {
                for (k = 0; k < l->nmodels; k++) {
                    if (strcmp(l->models[k].data, items[j]->scalar.data)
                        == 0)
                    {
                        break;
                    }
                }
                if (k == l->nmodels) {
                    return al_cc_error(cc, items[j], "model \"%s\" is not in "
                                       "the provider's models",
                                       items[j]->scalar.data);
                }
                if (al_cc_keep(cc, items[j], &lc->models[j]) != 0) {
                    return -1;
                }
            }
            lc->nmodels = n;
        }

        w = al_cc_get(val, "tokens_per_minute");
        if (w != NULL && al_cc_uint(cc, w, "tokens_per_minute", 1,
                                    UINT32_MAX, &lc->tokens_per_minute) != 0)
        {
            return -1;
        }

        w = al_cc_get(val, "tokens_per_day");
        if (w != NULL && al_cc_uint(cc, w, "tokens_per_day", 1,
                                    UINT64_C(1) << 40, &lc->tokens_per_day)
                         != 0)
        {
            return -1;
        }

        w = al_cc_get(val, "max_tokens");
        if (w != NULL && al_cc_uint(cc, w, "max_tokens", 1, 10000000,
                                    &lc->max_tokens) != 0)
        {
            return -1;
        }

        w = al_cc_get(val, "over_max_tokens");
        if (w != NULL) {
            if (lc->max_tokens == 0) {
                return al_cc_error(cc, w, "over_max_tokens needs "
                                   "max_tokens");
            }
            if (al_cc_type(cc, w, AL_Y_SCALAR, "over_max_tokens") != 0) {
                return -1;
            }
            if (strcmp(w->scalar.data, "clamp") == 0) {
                lc->clamp = 1;

            } else if (strcmp(w->scalar.data, "reject") != 0) {
                return al_cc_error(cc, w, "over_max_tokens must be clamp or "
                                   "reject, found \"%s\"", w->scalar.data);
            }

        } else if (lc->max_tokens) {
            return al_cc_error(cc, val, "max_tokens needs over_max_tokens: "
                               "clamp or reject");
        }

        /*
         * The output cap a request without one gets: what is reserved for
         * it, so that concurrent calls cannot spend more than the budget.
         */

        w = al_cc_get(val, "default_max_tokens");
        if (w != NULL) {
            if (al_cc_uint(cc, w, "default_max_tokens", 1, 10000000,
                           &lc->default_max_tokens)
                != 0)
            {
                return -1;
            }
            if (lc->max_tokens && lc->default_max_tokens > lc->max_tokens) {
                return al_cc_error(cc, w, "default_max_tokens %llu is over "
                                   "max_tokens %llu",
                                   (unsigned long long)
                                   lc->default_max_tokens,
                                   (unsigned long long) lc->max_tokens);
            }
        }

        if (al_cc_llm_limits(cc, val, l, lc) != 0) {
            return -1;
        }

        al_llm_client_caps(lc);

        /* the aliases of its model list, once: GET /models reads them */

        if (l->naliases > 0) {
            const al_llm_alias_t  **list;

            list = al_palloc(cc->pool,
                             l->naliases * sizeof(const al_llm_alias_t *));
            if (list == NULL) {
                return al_cc_error(cc, val, "out of memory");
            }

            (void) al_llm_client_list(l, lc, list);
        }

        /* a stamp, not a search of those before: 50000 clients of one
           entry took 40 s to load */

        if (cc->llm_seen == NULL) {
            cc->llm_seen = al_palloc(cc->tmp,
                                     (cc->p->nclients + 1) * sizeof(size_t));
            if (cc->llm_seen == NULL) {
                return al_cc_error(cc, key, "out of memory");
            }
        }

        if (cc->llm_seen[c->index] == (size_t) (l - cc->p->llm) + 1) {
            return al_cc_error(cc, key, "client \"%s\" is listed twice",
                               key->scalar.data);
        }

        cc->llm_seen[c->index] = (size_t) (l - cc->p->llm) + 1;
    }

    l->nclients = v->n;

    return 0;
}


/*
 * The fields of an llm entry that choose what the provider is sent:
 * api_version (azure only, and required there) and aliases.
 */

static int
al_cc_llm_provider(al_cc_t *cc, const al_ynode_t *node, al_llm_t *l)
{
    size_t             i, j, k;
    const char        *s;
    const al_ynode_t  *v, *key, *val;

    v = al_cc_get(node, "api_version");

    if (v == NULL) {
        if (l->kind == AL_LLM_AZURE) {
            return al_cc_error(cc, node, "llm \"%s\": an azure provider "
                               "needs api_version, e.g. \"2024-10-21\"",
                               l->name.data);
        }

    } else {
        if (l->kind != AL_LLM_AZURE) {
            return al_cc_error(cc, v, "api_version applies to azure "
                               "providers only");
        }

        if (al_cc_string(cc, v, "api_version", &l->api_version) != 0) {
            return -1;
        }

        s = l->api_version.data;

        for (i = 0; i < l->api_version.len; i++) {
            if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')
                  || (i > 0 && s[i] == '-')))
            {
                return al_cc_error(cc, v, "api_version \"%s\" is not an "
                                   "Azure API version such as 2024-10-21 "
                                   "or 2025-04-01-preview", s);
            }
        }

        if (l->api_version.len > 32) {
            return al_cc_error(cc, v, "api_version is longer than 32 "
                               "characters");
        }
    }

    v = al_cc_get(node, "fallback");

    if (v != NULL
        && al_cc_name(cc, v, "fallback", &l->fallback_name) != 0)
    {
        return -1;
    }

    v = al_cc_get(node, "aliases");

    if (v == NULL) {
        return 0;
    }

    if (al_cc_type(cc, v, AL_Y_MAP, "aliases") != 0) {
        return -1;
    }

    if (v->n == 0) {
        return al_cc_error(cc, v, "aliases is empty: map names clients ask "
                           "for to models, or leave aliases out");
    }

    l->aliases = al_palloc(cc->pool, v->n * sizeof(al_llm_alias_t));
    if (l->aliases == NULL) {
        return al_cc_error(cc, v, "out of memory");
    }

    for (i = 0; i < v->n; i++) {
        key = v->items[i * 2];
        val = v->items[i * 2 + 1];

        if (al_cc_name(cc, key, "alias", &l->aliases[i].name) != 0
            || al_cc_string(cc, val, "alias target", &l->aliases[i].model)
               != 0)
        {
            return -1;
        }

        for (k = 0; k < l->nmodels; k++) {
            if (al_cc_same(&l->models[k], &l->aliases[i].name)) {
                return al_cc_error(cc, key, "alias \"%s\" is also one of "
                                   "the provider's models; an alias must "
                                   "be a name of its own",
                                   key->scalar.data);
            }
        }

        for (k = 0; k < l->nmodels; k++) {
            if (al_cc_same(&l->models[k], &l->aliases[i].model)) {
                break;
            }
        }

        if (k == l->nmodels) {
            return al_cc_error(cc, val, "alias \"%s\" names model \"%s\", "
                               "which is not in the provider's models",
                               key->scalar.data, val->scalar.data);
        }

        for (j = 0; j < i; j++) {
            if (al_cc_same(&l->aliases[j].name, &l->aliases[i].name)) {
                return al_cc_error(cc, key, "alias \"%s\" is listed twice",
                                   key->scalar.data);
            }
        }
    }

    l->naliases = v->n;

    return 0;
}


/*
 * prices: model -> { input, cached_input, output }, USD per million
 * tokens with at most six decimals, kept as microdollars per million
 * tokens (picodollars per token).  cached_input defaults to input and may
 * not be above it.  cache_write and cache_write_1h, Anthropic's prices of
 * prompt-cache writes, default to its multiples of input (1.25 and 2,
 * rounded up to a whole picodollar per token); elsewhere nothing is
 * written to a cache, and they are input.  The worst case of a request is
 * all input at the highest of input and the two.
 */

static int
al_cc_llm_prices(al_cc_t *cc, const al_ynode_t *node, al_llm_t *l)
{
    size_t              i, k;
    al_llm_price_t     *pr;
    const al_ynode_t   *key, *val, *w;

    if (al_cc_type(cc, node, AL_Y_MAP, "prices") != 0) {
        return -1;
    }

    if (node->n == 0) {
        return al_cc_error(cc, node, "prices is empty: give the price of "
                           "each model, or leave prices out");
    }

    l->prices = al_palloc(cc->pool, node->n * sizeof(al_llm_price_t));
    if (l->prices == NULL) {
        return al_cc_error(cc, node, "out of memory");
    }

    for (i = 0; i < node->n; i++) {
        key = node->items[i * 2];
        val = node->items[i * 2 + 1];
        pr = &l->prices[i];

        for (k = 0; k < l->nmodels; k++) {
            if (strcmp(l->models[k].data, key->scalar.data) == 0) {
                break;
            }
        }

        if (k == l->nmodels) {
            return al_cc_error(cc, key, "prices: model \"%s\" is not in "
                               "the provider's models", key->scalar.data);
        }

        if (al_cc_keep(cc, key, &pr->model) != 0
            || al_cc_type(cc, val, AL_Y_MAP, "a model's prices") != 0
            || al_cc_keys(cc, val, "a model's prices", al_llm_price_keys)
               != 0
            || al_cc_llm_rates(cc, val, l, "a model's prices", pr) != 0)
        {
            return -1;
        }

        pr->above_input_tokens = 0;
        pr->long_context = NULL;

        w = al_cc_get(val, "long_context");
        if (w != NULL && al_cc_llm_long(cc, w, l, pr) != 0) {
            return -1;
        }
    }

    l->nprices = node->n;

    return 0;
}


/* input, output, cached_input and the cache writes of a set of prices */

static int
al_cc_llm_rates(al_cc_t *cc, const al_ynode_t *val, const al_llm_t *l,
    const char *what, al_llm_price_t *pr)
{
    const al_ynode_t  *w;

    if (al_cc_need(cc, val, "input", what, &w) != 0
        || al_cc_usd(cc, w, "input", 6, 0, AL_LLM_PRICE_MAX, &pr->input)
           != 0
        || al_cc_need(cc, val, "output", what, &w) != 0
        || al_cc_usd(cc, w, "output", 6, 0, AL_LLM_PRICE_MAX, &pr->output)
           != 0)
    {
        return -1;
    }

    pr->cached_input = pr->input;

    w = al_cc_get(val, "cached_input");
    if (w != NULL) {
        if (al_cc_usd(cc, w, "cached_input", 6, 0, AL_LLM_PRICE_MAX,
                      &pr->cached_input)
            != 0)
        {
            return -1;
        }

        if (pr->cached_input > pr->input) {
            return al_cc_error(cc, w, "cached_input is over input: "
                               "cached tokens cost at most as much as "
                               "the others");
        }
    }

    return al_cc_llm_cache_write(cc, val, l, pr);
}


/*
 * long_context: { above_input_tokens, input, output, ... }: the prices of
 * a call of more input tokens than above_input_tokens (cached and
 * cache-write ones included), for all of its tokens, as providers charge
 * long prompts.  Its prices default as the model's own do, from its own
 * input, and none is below the model's own: a long prompt never costs
 * less, so no call is charged below what the prices named first say.
 */

static int
al_cc_llm_long(al_cc_t *cc, const al_ynode_t *val, const al_llm_t *l,
    al_llm_price_t *pr)
{
    size_t             k;
    uint64_t           a, b;
    const char        *name;
    al_llm_price_t    *lp;
    const al_ynode_t  *w;

    static const char *const  names[] = {
        "input", "cached_input", "output", "cache_write", "cache_write_1h"
    };

    if (al_cc_type(cc, val, AL_Y_MAP, "long_context") != 0
        || al_cc_keys(cc, val, "long_context", al_llm_long_keys) != 0
        || al_cc_need(cc, val, "above_input_tokens", "long_context", &w)
           != 0
        || al_cc_uint(cc, w, "above_input_tokens", 1, 100000000,
                      &pr->above_input_tokens)
           != 0)
    {
        return -1;
    }

    lp = al_palloc(cc->pool, sizeof(al_llm_price_t));
    if (lp == NULL) {
        return al_cc_error(cc, val, "out of memory");
    }

    memset(lp, 0, sizeof(al_llm_price_t));
    lp->model = pr->model;

    if (al_cc_llm_rates(cc, val, l, "long_context", lp) != 0) {
        return -1;
    }

    for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        name = names[k];
        a = (k == 0) ? pr->input : (k == 1) ? pr->cached_input
            : (k == 2) ? pr->output : (k == 3) ? pr->cache_write
            : pr->cache_write_1h;
        b = (k == 0) ? lp->input : (k == 1) ? lp->cached_input
            : (k == 2) ? lp->output : (k == 3) ? lp->cache_write
            : lp->cache_write_1h;

        if (b < a) {
            w = al_cc_get(val, name);

            return al_cc_error(cc, (w != NULL) ? w : val, "long_context: "
                               "%s is below the model's own %s: a long "
                               "prompt costs at least as much", name, name);
        }
    }

    pr->long_context = lp;

    return 0;
}


/* a model's cache_write and cache_write_1h (al_cc_llm_prices()) */

static int
al_cc_llm_cache_write(al_cc_t *cc, const al_ynode_t *val, const al_llm_t *l,
    al_llm_price_t *pr)
{
    size_t             k;
    uint64_t          *out;
    const char        *name;
    const al_ynode_t  *w;

    pr->cache_write = pr->input;
    pr->cache_write_1h = pr->input;

    if (l->kind == AL_LLM_ANTHROPIC) {
        pr->cache_write = pr->input + (pr->input + 3) / 4;
        pr->cache_write_1h = pr->input * 2;
    }

    for (k = 0; k < 2; k++) {
        name = (k == 0) ? "cache_write" : "cache_write_1h";
        out = (k == 0) ? &pr->cache_write : &pr->cache_write_1h;

        w = al_cc_get(val, name);
        if (w == NULL) {
            continue;
        }

        if (l->kind != AL_LLM_ANTHROPIC) {
            return al_cc_error(cc, w, "%s is for anthropic entries only: "
                               "no other provider reports tokens written "
                               "to a prompt cache", name);
        }

        if (al_cc_usd(cc, w, name, 6, 0, AL_LLM_PRICE_MAX, out) != 0) {
            return -1;
        }
    }

    return 0;
}


/*
 * A client's request and dollar limits.  A dollar budget needs a price
 * for every model the client may use: an unpriced model would be free,
 * and the budget a promise the gateway cannot keep.
 */

static int
al_cc_llm_limits(al_cc_t *cc, const al_ynode_t *node, const al_llm_t *l,
    al_llm_client_t *lc)
{
    size_t             i, n;
    const al_str_t    *models;
    const al_ynode_t  *w, *budget;

    w = al_cc_get(node, "requests_per_minute");
    if (w != NULL && al_cc_uint(cc, w, "requests_per_minute", 1, 1000000000,
                                &lc->requests_per_minute) != 0)
    {
        return -1;
    }

    w = al_cc_get(node, "max_concurrent_requests");
    if (w != NULL && al_cc_uint(cc, w, "max_concurrent_requests", 1,
                                1000000, &lc->max_concurrent) != 0)
    {
        return -1;
    }

    budget = NULL;

    w = al_cc_get(node, "usd_per_day");
    if (w != NULL) {
        if (al_cc_usd(cc, w, "usd_per_day", 12, 1, AL_LLM_BUDGET_USD_MAX,
                      &lc->cost_per_day)
            != 0)
        {
            return -1;
        }
        budget = w;
    }

    w = al_cc_get(node, "usd_per_month");
    if (w != NULL) {
        if (al_cc_usd(cc, w, "usd_per_month", 12, 1, AL_LLM_BUDGET_USD_MAX,
                      &lc->cost_per_month)
            != 0)
        {
            return -1;
        }
        budget = (budget != NULL) ? budget : w;
    }

    if (budget == NULL) {
        return 0;
    }

    models = lc->models ? lc->models : l->models;
    n = lc->models ? lc->nmodels : l->nmodels;

    for (i = 0; i < n; i++) {
        if (al_llm_price(l, models[i].data, models[i].len) == NULL) {
            return al_cc_error(cc, budget, "%s has a dollar budget but "
                               "model \"%s\" has no price: add it to the "
                               "prices of llm \"%s\", or leave it out of "
                               "this client's models",
                               lc->client->name.data, models[i].data,
                               l->name.data);
        }
    }

    return 0;
}


static int
al_cc_same(const al_str_t *a, const al_str_t *b)
{
    return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}


/* dollars as a decimal with at most scale decimals, in 10^-scale units */

static int
al_cc_usd(al_cc_t *cc, const al_ynode_t *node, const char *what,
    unsigned scale, uint64_t min, uint64_t max, uint64_t *out)
{
    char      lo[AL_LLM_USD_MAX], hi[AL_LLM_USD_MAX];
    uint64_t  f;

    if (al_cc_type(cc, node, AL_Y_SCALAR, what) != 0) {
        return -1;
    }

    if (node->plain && al_cc_leading_zero(cc, node, what) != 0) {
        return -1;
    }

    if (!node->plain
        || al_llm_decimal_parse(node->scalar.data, node->scalar.len, scale,
                                UINT64_MAX, out)
           != 0)
    {
        return al_cc_error(cc, node, "%s must be a number of dollars with "
                           "at most %u decimals, found \"%s\"", what,
                           scale, node->scalar.data);
    }

    if (*out < min || *out > max) {
        /* shown in dollars: a unit is 10^(12-scale) picodollars */
        for (f = 1; scale < 12; scale++) {
            f *= 10;
        }
        (void) al_llm_usd_format(min * f, lo, sizeof(lo));
        (void) al_llm_usd_format(max * f, hi, sizeof(hi));

        return al_cc_error(cc, node, "%s must be between %s and %s, found "
                           "%s", what, lo, hi, node->scalar.data);
    }

    return 0;
}


/* an LLM prefix is its own namespace: no route or other prefix inside it */

static int
al_cc_prefix_conflicts(al_cc_t *cc, const al_ynode_t *node)
{
    size_t             i, j, k, n, seglen;
    const char        *s, *end, *slash;
    const al_llm_t    *l;
    const al_route_t  *r;

    for (i = 0; i < cc->p->nllm; i++) {
        l = &cc->p->llm[i];

        for (j = 0; j < cc->p->nllm; j++) {
            const al_llm_t  *o = &cc->p->llm[j];

            if (i != j && o->prefix.len >= l->prefix.len
                && memcmp(o->prefix.data, l->prefix.data, l->prefix.len) == 0
                && (o->prefix.len == l->prefix.len
                    || o->prefix.data[l->prefix.len] == '/'))
            {
                return al_cc_error(cc, node->items[j], "llm prefix %s is "
                                   "inside llm prefix %s (line %u)",
                                   o->prefix.data, l->prefix.data, l->line);
            }
        }

        for (j = 0; j < cc->p->nroutes; j++) {
            r = &cc->p->routes[j];
            s = l->prefix.data + 1;
            end = l->prefix.data + l->prefix.len;

            for (k = 0, n = 0; s < end; k++) {
                slash = memchr(s, '/', (size_t) (end - s));
                seglen = (size_t) ((slash ? slash : end) - s);

                if (k >= r->nsegs) {
                    break;
                }
                if (!r->seg_is_param[k]
                    && (r->segs[k].len != seglen
                        || memcmp(r->segs[k].data, s, seglen) != 0))
                {
                    break;
                }

                n++;
                s += seglen + (slash != NULL);
                if (slash == NULL) {
                    break;
                }
            }

            if (s >= end && n > 0 && n <= r->nsegs) {
                return al_cc_error(cc, node->items[i], "route \"%s\" (%s, "
                                   "line %u) is inside llm prefix %s",
                                   r->name.data, r->path.data, r->line,
                                   l->prefix.data);
            }
        }
    }

    return 0;
}


/* alerts */

static int
al_cc_alerts(al_cc_t *cc, const al_ynode_t *node)
{
    size_t             i, j;
    unsigned           insecure;
    al_sink_t         *sink;
    al_str_t           s = { NULL, 0 };
    al_upstream_t      u;
    const al_ynode_t  *v, *k, *val, *w, *f;

    if (al_cc_type(cc, node, AL_Y_MAP, "alerts") != 0
        || al_cc_keys(cc, node, "alerts", al_alert_keys) != 0
        || al_cc_need(cc, node, "deny", "alerts", &v) != 0
        || al_cc_threshold(cc, v, "alerts.deny", 0, &cc->p->deny) != 0)
    {
        return -1;
    }

    v = al_cc_get(node, "quarantine");
    if (v != NULL && al_cc_threshold(cc, v, "alerts.quarantine", 1,
                                     &cc->p->quarantine) != 0)
    {
        return -1;
    }

    v = al_cc_get(node, "sinks");
    if (v == NULL) {
        return 0;
    }

    if (al_cc_type(cc, v, AL_Y_SEQ, "sinks") != 0) {
        return -1;
    }

    cc->p->sinks = al_palloc(cc->pool, (v->n + 1) * sizeof(al_sink_t));
    if (cc->p->sinks == NULL) {
        return al_cc_error(cc, v, "out of memory");
    }

    for (i = 0; i < v->n; i++) {
        w = v->items[i];
        sink = &cc->p->sinks[i];

        if (al_cc_type(cc, w, AL_Y_MAP, "a sink") != 0
            || al_cc_keys(cc, w, "a sink", al_sink_kinds) != 0)
        {
            return -1;
        }

        if (w->n != 1) {
            return al_cc_error(cc, w, "a sink is either webhook: {...} or "
                               "alertmanager: {...}");
        }

        k = w->items[0];
        val = w->items[1];

        if (strcmp(k->scalar.data, "webhook") == 0) {
            sink->kind = AL_SINK_WEBHOOK;
            if (al_cc_type(cc, val, AL_Y_MAP, "webhook") != 0
                || al_cc_keys(cc, val, "webhook", al_webhook_keys) != 0
                || al_cc_need(cc, val, "hmac_secret", "webhook", &w) != 0
                || al_cc_string(cc, w, "hmac_secret", &s) != 0)
            {
                return -1;
            }
            sink->hmac = al_cc_secret_ref(cc, w, s.data, s.len);
            if (sink->hmac == NULL) {
                return -1;
            }

            /*
             * A second key for a change of secret: alertd signs each
             * alert with both, so a receiver that knows either takes it.
             */

            f = al_cc_get(val, "hmac_secret_also");
            if (f != NULL) {
                if (al_cc_string(cc, f, "hmac_secret_also", &s) != 0) {
                    return -1;
                }

                sink->hmac_also = al_cc_secret_ref(cc, f, s.data, s.len);
                if (sink->hmac_also == NULL) {
                    return -1;
                }

                if (sink->hmac_also == sink->hmac) {
                    return al_cc_error(cc, f, "hmac_secret_also names "
                                       "\"%s\", the webhook's hmac_secret; "
                                       "it is the other key of a change "
                                       "of secret, the old or the new one",
                                       sink->hmac->name.data);
                }
            }

        } else {
            sink->kind = AL_SINK_ALERTMANAGER;
            if (al_cc_type(cc, val, AL_Y_MAP, "alertmanager") != 0
                || al_cc_keys(cc, val, "alertmanager", al_alertmanager_keys)
                   != 0)
            {
                return -1;
            }
        }

        insecure = 0;
        memset(&u, 0, sizeof(u));
        if (al_cc_need(cc, val, "url", k->scalar.data, &w) != 0
            || al_cc_url(cc, w, "url", &u) != 0)
        {
            return -1;
        }

        sink->url = u.url;
        sink->hostname = u.hostname;
        sink->port = u.port;

        /*
         * A webhook's alerts and their signatures would cross the network
         * in clear: http:// only to this host, or where the operator says
         * so (a network of its own, a TLS-terminating sidecar).
         */

        if (sink->kind == AL_SINK_WEBHOOK) {
            f = al_cc_get(val, "allow_insecure_http");
            if (f != NULL
                && al_cc_bool(cc, f, "allow_insecure_http", &insecure) != 0)
            {
                return -1;
            }

            if (!u.https && !insecure && !al_cc_loopback(&u.hostname)) {
                return al_cc_error(cc, w, "webhook url is http:// to "
                                   "\"%s\", not this host: alerts and "
                                   "their signatures would cross the "
                                   "network in clear; use https://, or "
                                   "set allow_insecure_http: true",
                                   u.hostname.data);
            }

            sink->insecure_http = insecure;
        }

        /*
         * The same place twice (after the URL is normalized, as alertd
         * names its outboxes) would get every alert twice; alertd
         * refuses to start on it, so nginx -t and check refuse it first.
         */

        for (j = 0; j < i; j++) {
            if (cc->p->sinks[j].kind == sink->kind
                && cc->p->sinks[j].url.len == sink->url.len
                && memcmp(cc->p->sinks[j].url.data, sink->url.data,
                          sink->url.len) == 0)
            {
                return al_cc_error(cc, w, "alerts.sinks lists this %s "
                                   "url already (sink %zu)", k->scalar.data,
                                   j + 1);
            }
        }

        cc->p->nsinks++;
    }

    return 0;
}


static int
al_cc_threshold(al_cc_t *cc, const al_ynode_t *node, const char *what,
    int quarantine, al_threshold_t *t)
{
    uint64_t           n;
    const al_ynode_t  *v;

    if (al_cc_type(cc, node, AL_Y_MAP, what) != 0
        || al_cc_keys(cc, node, what,
                      quarantine ? al_quarantine_keys : al_deny_keys) != 0
        || al_cc_need(cc, node, "threshold", what, &v) != 0
        || al_cc_uint(cc, v, "threshold", 1, 1000000, &n) != 0
        || al_cc_need(cc, node, "window", what, &v) != 0
        || al_cc_duration(cc, v, "window", &t->window) != 0)
    {
        return -1;
    }

    t->threshold = (unsigned) n;

    if (quarantine
        && (al_cc_need(cc, node, "for", what, &v) != 0
            || al_cc_duration(cc, v, "for", &t->duration) != 0))
    {
        return -1;
    }

    return 0;
}
