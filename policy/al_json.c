/*
 * JSON body constraints.
 *
 * A body is parsed once, strictly, by jansson: duplicate keys, trailing
 * data, comments, NUL in strings, invalid UTF-8 and numbers that do not
 * fit are all refused, so the document we check is the only reading of
 * the bytes an upstream can make.  Nesting is bounded by a scan over the
 * raw bytes before jansson sees them, so a deep document never reaches its
 * recursive parser.  The parsed value is then walked against the rule tree.
 *
 * Reasons name the JSON path and the rule, never the client's values:
 * at most AL_JSON_SHOW_MAX bytes of client text (a key name, a token near
 * a syntax error) reach detail, and only as printable ASCII.
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "airlock.h"
#include "al_internal.h"


#define AL_JSON_SHOW_MAX   64
#define AL_JSON_PATH_MAX   AL_DETAIL_MAX


static int al_json_value(const al_json_rule_t *rule, json_t *v, char *path,
    size_t plen, char *detail, size_t size);
static int al_json_object(const al_json_rule_t *rule, json_t *obj,
    char *path, size_t plen, char *detail, size_t size);
static const char *al_json_shadow(const al_param_t *params,
    size_t nparams, const al_param_t *query, size_t nquery, const char *key,
    size_t klen);
static int al_json_load(const unsigned char *body, size_t len,
    size_t flags, json_t **root, char *detail, size_t size);
static int al_json_proto(json_t *v, unsigned ctor, char *detail,
    size_t size);
static int al_json_syntax(const json_error_t *err, char *detail,
    size_t size);
static size_t al_json_path_push(char *path, size_t plen, const char *name,
    size_t len);
static size_t al_json_show(char *dst, size_t cap, const char *src,
    size_t len);
static const char *al_json_found(const json_t *v);
static const char *al_json_expected(al_json_type_t type);
static int al_json_fail(char *detail, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), cold));


int
al_json_check(const al_json_rule_t *rule, const unsigned char *body,
    size_t len, char *detail, size_t detail_size)
{
    int      rc;
    char     path[AL_JSON_PATH_MAX];
    json_t  *root;

    if (al_json_load(body, len, 0, &root, detail, detail_size) != 0) {
        return -1;
    }

    rc = 0;

    if (rule != NULL) {
        path[0] = '\0';
        rc = al_json_value(rule, root, path, 0, detail, detail_size);

        if (rc == 0) {
            rc = al_json_proto(root, 0, detail, detail_size);
        }
    }

    json_decref(root);

    return rc;
}


int
al_json_media(const char *ctype, size_t len)
{
    size_t  i;

    if (ctype == NULL) {
        return 0;
    }

    /* "-json": Rails reads text/x-json as application/json */

    for (i = 0; i + 5 <= len; i++) {
        if ((ctype[i] == '/' || ctype[i] == '+' || ctype[i] == '-')
            && strncasecmp(ctype + i + 1, "json", 4) == 0)
        {
            return 1;
        }
    }

    return 0;
}


int
al_json_names_check(const al_param_t *params, size_t nparams,
    const al_param_t *query, size_t nquery, const unsigned char *body,
    size_t len, char *detail, size_t size)
{
    int          rc;
    size_t       klen;
    json_t      *root, *v;
    const char  *key, *name;
    char         show[AL_JSON_SHOW_MAX + 4];

    if (len == 0) {
        return 0;
    }

    /*
     * Only the names are read: a value jansson would refuse as a value
     * (an integer past 64 bits, a "\u0000" in a string) is taken; a name
     * with a NUL is still refused, as is all else that is not JSON.
     */

    if (al_json_load(body, len, JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL,
                     &root, detail, size)
        != 0)
    {
        return -1;
    }

    rc = al_json_proto(root, 0, detail, size);

    if (rc == 0 && json_is_object(root)) {

        json_object_keylen_foreach(root, key, klen, v) {

            (void) v;

            if (al_folds_to(key, klen, "_method", 7)) {
                (void) al_json_show(show, sizeof(show), key, klen);
                rc = al_json_fail(detail, size, "field \"%s\" would change "
                                  "the method upstream", show);
                break;
            }

            name = al_json_shadow(params, nparams, query, nquery, key, klen);

            if (name != NULL) {
                (void) al_json_show(show, sizeof(show), key, klen);
                rc = al_json_fail(detail, size, "field \"%s\" named like the "
                                  "checked param \"%s\" would stand for it "
                                  "upstream", show, name);
                break;
            }
        }
    }

    json_decref(root);

    return rc;
}


/*
 * The body parsed as al_json_check() takes it, with flags added to
 * jansson's: 0 with root, or -1.
 */

static int
al_json_load(const unsigned char *body, size_t len, size_t flags,
    json_t **root, char *detail, size_t size)
{
    json_error_t  err;

    if (detail != NULL && size > 0) {
        detail[0] = '\0';
    }

    if (body == NULL || len == 0) {
        return al_json_fail(detail, size, "empty body");
    }

    if (!al_json_depth_ok(body, len)) {
        return al_json_fail(detail, size, "nesting deeper than %d",
                            AL_JSON_DEPTH_MAX);
    }

    /* no JSON_DISABLE_EOF_CHECK: trailing data is a refusal */

    *root = json_loadb((const char *) body, len,
                       JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | flags, &err);
    if (*root == NULL) {
        return al_json_syntax(&err, detail, size);
    }

    return 0;
}


/*
 * Counts '[' and '{' outside strings.  Up to the first byte jansson
 * refuses, its lexer and this scan agree on where strings begin and end,
 * so the depth seen here bounds the depth jansson can reach.
 */

int
al_json_depth_ok(const unsigned char *p, size_t len)
{
    size_t    i, depth;
    unsigned  instr;

    depth = 0;
    instr = 0;

    for (i = 0; i < len; i++) {

        if (instr) {
            if (p[i] == '\\') {
                i++;

            } else if (p[i] == '"') {
                instr = 0;
            }

            continue;
        }

        switch (p[i]) {

        case '"':
            instr = 1;
            break;

        case '[':
        case '{':
            if (++depth > AL_JSON_DEPTH_MAX) {
                return 0;
            }
            break;

        case ']':
        case '}':
            if (depth > 0) {
                depth--;
            }
            break;

        default:
            break;
        }
    }

    return 1;
}


static int
al_json_value(const al_json_rule_t *rule, json_t *v, char *path,
    size_t plen, char *detail, size_t size)
{
    int          ok;
    const char  *at, *q;

    switch (rule->type) {

    case AL_JSON_ANY:
        return 0;

    case AL_JSON_STRING:
        ok = json_is_string(v);
        break;

    case AL_JSON_INTEGER:
        ok = json_is_integer(v);
        break;

    case AL_JSON_NUMBER:
        ok = json_is_number(v);
        break;

    case AL_JSON_BOOLEAN:
        ok = json_is_boolean(v);
        break;

    case AL_JSON_NULL:
        ok = json_is_null(v);
        break;

    case AL_JSON_ARRAY:
        ok = json_is_array(v);
        break;

    case AL_JSON_OBJECT:
        ok = json_is_object(v);
        break;

    default:
        return al_json_fail(detail, size, "unsupported rule type %d",
                            (int) rule->type);
    }

    /* "field "a.b": " or nothing at the root */

    at = plen ? "field \"" : "";
    q = plen ? "\": " : "";

    if (!ok) {
        return al_json_fail(detail, size, "%s%s%sexpected %s, found %s",
                            at, path, q, al_json_expected(rule->type),
                            al_json_found(v));
    }

    if (rule->type == AL_JSON_STRING && rule->re != NULL
        && al_regex_match(rule->re, json_string_value(v),
                          json_string_length(v)) != 1)
    {
        if (rule->pattern.len == 0) {
            return al_json_fail(detail, size, "%s%s%sdoes not match the "
                                "pattern", at, path, q);
        }

        return al_json_fail(detail, size, "%s%s%sdoes not match %.*s",
                            at, path, q, (int) rule->pattern.len,
                            rule->pattern.data);
    }

    if (rule->type == AL_JSON_OBJECT) {
        return al_json_object(rule, v, path, plen, detail, size);
    }

    return 0;
}


static int
al_json_object(const al_json_rule_t *rule, json_t *obj, char *path,
    size_t plen, char *detail, size_t size)
{
    size_t                 i, n, klen;
    json_t                *v;
    const char            *key, *name;
    const al_json_rule_t  *m;
    char                   show[AL_JSON_SHOW_MAX + 4];

    for (i = 0; i < rule->nmembers; i++) {
        m = &rule->members[i];

        n = al_json_path_push(path, plen, m->name.data, m->name.len);

        v = json_object_getn(obj, m->name.data, m->name.len);

        if (v == NULL) {
            if (m->required) {
                return al_json_fail(detail, size,
                                    "missing required field \"%s\"", path);
            }

        } else if (al_json_value(m, v, path, n, detail, size) != 0) {
            return -1;
        }

        path[plen] = '\0';
    }

    /*
     * Keys are unique (duplicates were refused) and, without additional,
     * the first unlisted one ends the walk, so this is at most
     * (nmembers + 1) * nmembers compares; with it, nmembers a key.
     */

    json_object_keylen_foreach(obj, key, klen, v) {

        for (i = 0; i < rule->nmembers; i++) {
            m = &rule->members[i];

            if (m->name.len == klen
                && memcmp(m->name.data, key, klen) == 0)
            {
                break;
            }
        }

        if (i < rule->nmembers) {
            continue;
        }

        if (!rule->additional) {
            (void) al_json_show(show, sizeof(show), key, klen);

            return al_json_fail(detail, size, "unexpected field \"%s%s%s\"",
                                path, plen ? "." : "", show);
        }

        /*
         * An unlisted key allowed by additional, unless it is a listed
         * one in another case: Go's encoding/json and ASP.NET bind keys
         * regardless of case, the last one winning, so {"head":"ok",
         * "HEAD":"main"} would be read as head "main" there.
         */

        /*
         * Laravel reads a top-level "_method" of a JSON body as the
         * method, as it reads a form's (al_form.c): only a route that
         * lists it sends it.
         */

        if (plen == 0 && al_folds_to(key, klen, "_method", 7)) {
            (void) al_json_show(show, sizeof(show), key, klen);

            return al_json_fail(detail, size, "field \"%s\" would change "
                                "the method upstream", show);
        }

        /*
         * Rails and Laravel merge a JSON body's top-level fields with the
         * query and the path params, the body's read over the query's:
         * only a route that lists the field sends it (al_form.c).
         */

        name = (plen == 0) ? al_json_shadow(rule->params, rule->nparams,
                                             rule->query, rule->nquery,
                                             key, klen)
                            : NULL;

        if (name != NULL) {
            (void) al_json_show(show, sizeof(show), key, klen);

            return al_json_fail(detail, size, "field \"%s\" named like the "
                                "checked param \"%s\" would stand for it "
                                "upstream", show, name);
        }

        for (i = 0; i < rule->nmembers; i++) {
            m = &rule->members[i];

            if (al_folds_to(key, klen, m->name.data, m->name.len)) {
                (void) al_json_show(show, sizeof(show), key, klen);

                return al_json_fail(detail, size, "field \"%s%s%s\" differs "
                                    "from \"%.*s\" only by case", path,
                                    plen ? "." : "", show,
                                    (int) m->name.len, m->name.data);
            }
        }
    }

    return 0;
}


/*
 * A key "__proto__", at any depth, is refused: a JavaScript reader that
 * builds its objects by assignment (JSON5's parse() before 2.2.2, a
 * merge with Object.assign() or an old lodash merge()) takes its value
 * for the object's prototype, through which a field the rules saw
 * absent ({"__proto__":{"base":"release"}}) is read as present.  So is
 * a key "constructor" whose value is an object with a key "prototype":
 * a deep merge that walks into what the target already has (mixin-deep
 * before 1.3.2, merge-deep before 3.0.3, lodash's defaultsDeep() before
 * 4.17.12) goes from any object's "constructor", Object, to its
 * "prototype", Object.prototype, and writes the fields there, where
 * every object reads them.  A path setter (flat's unflatten() before
 * 5.0.1) reads a key as a path, "__proto__.base" or "a[__proto__]", so
 * each key is read as al_key_path_next() reads one: a part "__proto__",
 * or a part "prototype" after a part "constructor" (in the key, or as
 * its first part in the object a key ending in "constructor" holds), is
 * refused the same way.  ctor says v is the value of such a key.
 * Nesting is bounded (al_json_depth_ok()), and so is the recursion.
 */

static int
al_json_proto(json_t *v, unsigned ctor, char *detail, size_t size)
{
    size_t          i, k, klen;
    json_t         *m;
    unsigned        hit;
    const char     *key;
    al_key_path_t   kp;
    char            show[AL_JSON_SHOW_MAX + 4];

    if (json_is_object(v)) {
        json_object_keylen_foreach(v, key, klen, m) {

            al_key_path_init(&kp, ctor);
            hit = 0;

            for (k = 0; k < klen && hit == 0; k++) {
                hit = al_key_path_next(&kp, (unsigned char) key[k]);
            }

            if (hit == 0) {
                hit = al_key_path_end(&kp);
            }

            if (hit != 0) {
                (void) al_json_show(show, sizeof(show), key, klen);
            }

            if (hit == AL_KEY_PROTO) {
                return al_json_fail(detail, size, "a \"__proto__\" key "
                                    "would set an object's prototype "
                                    "upstream%s%s%s",
                                    klen != 9 ? " (in \"" : "",
                                    klen != 9 ? show : "",
                                    klen != 9 ? "\")" : "");
            }

            if (hit == AL_KEY_CTOR) {
                return al_json_fail(detail, size, "a \"constructor\" key "
                                    "holding \"prototype\" would set "
                                    "Object.prototype upstream%s%s%s",
                                    klen != 9 ? " (in \"" : "",
                                    klen != 9 ? show : "",
                                    klen != 9 ? "\")" : "");
            }

            if (al_json_proto(m, kp.ctor, detail, size) != 0) {
                return -1;
            }
        }

    } else if (json_is_array(v)) {
        json_array_foreach(v, i, m) {
            if (al_json_proto(m, 0, detail, size) != 0) {
                return -1;
            }
        }
    }

    return 0;
}


/*
 * The name of the path param or checked query parameter (one with a
 * pattern) of a route that key names, in any case (al_folds_to(), as
 * ASP.NET binds), or NULL.
 */

static const char *
al_json_shadow(const al_param_t *params, size_t nparams,
    const al_param_t *query, size_t nquery, const char *key, size_t klen)
{
    size_t  i;

    for (i = 0; i < nparams; i++) {
        if (al_folds_to(key, klen, params[i].name.data, params[i].name.len)) {
            return params[i].name.data;
        }
    }

    for (i = 0; i < nquery; i++) {
        if (query[i].re != NULL
            && al_folds_to(key, klen, query[i].name.data, query[i].name.len))
        {
            return query[i].name.data;
        }
    }

    return NULL;
}


/*
 * jansson's text may end with "near '<token>'", which is client bytes:
 * jansson only quotes tokens of up to 20 bytes, and al_json_show() keeps
 * what reaches detail printable.
 */

static int
al_json_syntax(const json_error_t *err, char *detail, size_t size)
{
    size_t       len;
    const char  *near;
    char         text[JSON_ERROR_TEXT_LENGTH];

    len = strnlen(err->text, JSON_ERROR_TEXT_LENGTH - 1);

    switch (json_error_code(err)) {

    case json_error_out_of_memory:
        return al_json_fail(detail, size, "out of memory");

    case json_error_duplicate_key:
        near = strstr(err->text, " near '");
        if (near != NULL) {
            near += sizeof(" near '") - 1;
        }

        if (near != NULL && near < err->text + len
            && err->text[len - 1] == '\'')
        {
            (void) al_json_show(text, sizeof(text), near,
                                (size_t) (err->text + len - 1 - near));

            return al_json_fail(detail, size, "duplicate key %s", text);
        }

        return al_json_fail(detail, size, "duplicate key at line %d "
                            "column %d", err->line, err->column);

    default:
        (void) al_json_show(text, sizeof(text), err->text, len);

        return al_json_fail(detail, size, "invalid JSON at line %d column "
                            "%d: %s", err->line, err->column, text);
    }
}


/* appends ".name" (or "name" at the root); returns the new length */

static size_t
al_json_path_push(char *path, size_t plen, const char *name, size_t len)
{
    int  n;

    n = snprintf(path + plen, AL_JSON_PATH_MAX - plen, "%s%.*s",
                 plen ? "." : "", (int) len, name);

    if (n < 0) {
        path[plen] = '\0';
        return plen;
    }

    if ((size_t) n >= AL_JSON_PATH_MAX - plen) {
        return AL_JSON_PATH_MAX - 1;
    }

    return plen + n;
}


/*
 * Copies client text for a reason: printable ASCII only, at most
 * AL_JSON_SHOW_MAX bytes, "..." when cut.  Returns the length written.
 */

static size_t
al_json_show(char *dst, size_t cap, const char *src, size_t len)
{
    size_t         i, max;
    unsigned char  c;

    if (cap == 0) {
        return 0;
    }

    max = AL_JSON_SHOW_MAX < cap - 1 ? AL_JSON_SHOW_MAX : cap - 1;

    for (i = 0; i < len && i < max; i++) {
        c = (unsigned char) src[i];
        dst[i] = (c >= 0x20 && c < 0x7f) ? (char) c : '?';
    }

    if (i < len && i >= 3) {
        memcpy(dst + i - 3, "...", 3);
    }

    dst[i] = '\0';

    return i;
}


static const char *
al_json_found(const json_t *v)
{
    switch (json_typeof(v)) {

    case JSON_OBJECT:
        return "object";

    case JSON_ARRAY:
        return "array";

    case JSON_STRING:
        return "string";

    case JSON_INTEGER:
        return "integer";

    case JSON_REAL:
        return "number";

    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";

    case JSON_NULL:
        return "null";

    default:
        return "unknown";
    }
}


static const char *
al_json_expected(al_json_type_t type)
{
    switch (type) {

    case AL_JSON_ANY:
        return "any value";

    case AL_JSON_STRING:
        return "string";

    case AL_JSON_INTEGER:
        return "integer";

    case AL_JSON_NUMBER:
        return "number";

    case AL_JSON_BOOLEAN:
        return "boolean";

    case AL_JSON_OBJECT:
        return "object";

    case AL_JSON_ARRAY:
        return "array";

    case AL_JSON_NULL:
        return "null";

    default:
        return "unknown";
    }
}


static int
al_json_fail(char *detail, size_t size, const char *fmt, ...)
{
    va_list  ap;

    if (detail == NULL || size == 0) {
        return -1;
    }

    va_start(ap, fmt);
    (void) vsnprintf(detail, size, fmt, ap);
    va_end(ap);

    return -1;
}
