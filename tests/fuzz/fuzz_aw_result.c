/*
 * libFuzzer target: what a sandbox writes, as the worker packs it into
 * a result (aw_result_json(), aw_json_bytes(), worker/aw_job.c), and the
 * small result that stands in for one Redis refused or the worker could
 * not build (aw_result_unstored(), written with no allocation).  The
 * input is split into stdout, stderr and an error message (a C string)
 * by its first two bytes; the top six bits of the second, when not 0,
 * make jansson's allocation of that number fail in aw_result_json().
 * Invariants: no crash and nothing read past the lengths; the result is
 * one JSON object that jansson reads without JSON_ALLOW_NUL (as the
 * agent does: no "\u0000"); stdout and stderr are strings of at most 3
 * bytes for each byte written (U+FFFD), and exactly what was written
 * when that is UTF-8 with no NUL; a failed allocation gives no result
 * (NULL), never one with a field left out; the stand-in has neither
 * stdout nor stderr, and says each was there.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../worker/aw_scan.c"
#include "../../worker/aw_job.c"


/* what fuzz_check() expects */
#define FUZZ_WHOLE    0             /* the result, exactly */
#define FUZZ_SHAPE    1             /* the result, an allocation failed */
#define FUZZ_STANDIN  2             /* aw_result_unstored()'s */


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void *fuzz_malloc(size_t n);

static void fuzz_check(const char *s, const aw_result_t *res, int how);
static void fuzz_stream(json_t *root, const char *key, const char *in,
    size_t len, int whole);


/* jansson's allocations: the fuzz_fail_at-th fails (0: none) */
static unsigned long  fuzz_allocs, fuzz_fail_at;


static void *
fuzz_malloc(size_t n)
{
    if (fuzz_fail_at != 0 && ++fuzz_allocs == fuzz_fail_at) {
        return NULL;
    }

    return malloc(n);
}


/* aw_config.c's, which reads files: the one name a result needs */

const char *
aw_backend_name(aw_backend_e b)
{
    return b == AW_BACKEND_GVISOR ? "gvisor" : "bwrap";
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char         *s, *body, small[AW_RESULT_SMALL];
    size_t        k, m, n;
    aw_conf_t     conf;
    aw_result_t   res;

    if (size < 2) {
        return 0;
    }

    n = size - 2;
    k = ((size_t) data[0] | (size_t) data[1] << 8) % (n + 1);

    body = malloc(n ? n : 1);
    if (body == NULL) {
        return 0;
    }

    memcpy(body, data + 2, n);

    memset(&conf, 0, sizeof(conf));
    memset(&res, 0, sizeof(res));
    conf.backend = data[0] & 1 ? AW_BACKEND_BWRAP : AW_BACKEND_GVISOR;

    res.ran = data[1] & 1;
    res.exit_code = (int) data[0] - 128;
    res.out = body;
    res.out_len = k;
    res.out_trunc = data[0] & 2;
    res.err = body + k;
    res.err_len = n - k;
    res.err_trunc = data[0] & 4;

    if (data[1] & 2) {
        /* the tail of stderr, as a C string, for the message */
        m = n - k < sizeof(res.message) - 1 ? n - k
                                              : sizeof(res.message) - 1;
        aw_result_fail(&res, AW_ST_ERROR, "exit", "%.*s", (int) m,
                       body + n - m);
    }

    json_set_alloc_funcs(fuzz_malloc, free);
    fuzz_allocs = 0;
    fuzz_fail_at = data[1] >> 2;

    s = aw_result_json(&conf, "job-1", "sess-1", &res);

    if (fuzz_fail_at != 0 && fuzz_allocs >= fuzz_fail_at) {
        /*
         * an allocation failed: no result, or every field there (one
         * aw_json_bytes() could not check may be U+FFFD)
         */
        fuzz_fail_at = 0;
        if (s != NULL) {
            fuzz_check(s, &res, FUZZ_SHAPE);
        }

    } else {
        fuzz_fail_at = 0;
        fuzz_check(s, &res, FUZZ_WHOLE);
    }

    free(s);

    if (aw_result_unstored(&conf, "job-1", "sess-1", &res, n,
                           "OOM command not allowed", small, sizeof(small))
        != strlen(small))
    {
        abort();
    }

    fuzz_check(small, &res, FUZZ_STANDIN);

    free(body);

    return 0;
}


static void
fuzz_check(const char *s, const aw_result_t *res, int how)
{
    size_t       i;
    json_t      *root, *t;
    static const char  *const keys[] = {
        "job_id", "session_id", "status", "exit_code", "stdout", "stderr",
        "stdout_truncated", "stderr_truncated", "backend", "timing_ms"
    };
    static const char  *const timings[] = {
        "fetch", "prepare", "start", "run", "teardown", "total"
    };

    if (s == NULL) {
        abort();
    }

    /* without JSON_ALLOW_NUL: a "\u0000" would fail the parse */
    root = json_loads(s, 0, NULL);

    if (!json_is_object(root)
        || !json_is_string(json_object_get(root, "status"))
        || json_is_object(json_object_get(root, "error"))
           != (res->status != AW_ST_OK || how == FUZZ_STANDIN))
    {
        abort();
    }

    /* every field, always: none is left out */
    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (json_object_get(root, keys[i]) == NULL) {
            abort();
        }
    }

    t = json_object_get(root, "timing_ms");

    for (i = 0; i < sizeof(timings) / sizeof(timings[0]); i++) {
        if (!json_is_integer(json_object_get(t, timings[i]))) {
            abort();
        }
    }

    if (json_is_object(json_object_get(root, "error"))
        && (!json_is_string(json_object_get(json_object_get(root, "error"),
                                            "code"))
            || !json_is_string(json_object_get(json_object_get(root,
                                                               "error"),
                                               "message"))))
    {
        abort();
    }

    if (how == FUZZ_WHOLE || how == FUZZ_SHAPE) {
        fuzz_stream(root, "stdout", res->out, res->out_len,
                    how == FUZZ_WHOLE);
        fuzz_stream(root, "stderr", res->err, res->err_len,
                    how == FUZZ_WHOLE);

    } else {
        fuzz_stream(root, "stdout", "", 0, 0);
        fuzz_stream(root, "stderr", "", 0, 0);

        if (json_is_true(json_object_get(root, "stdout_truncated"))
            != (res->out_trunc || res->out_len > 0)
            || json_is_true(json_object_get(root, "stderr_truncated"))
               != (res->err_trunc || res->err_len > 0))
        {
            abort();
        }
    }

    json_decref(root);
}


static void
fuzz_stream(json_t *root, const char *key, const char *in, size_t len,
    int whole)
{
    json_t      *v, *t;
    size_t       got;
    const char  *p;

    v = json_object_get(root, key);
    if (!json_is_string(v)) {
        abort();
    }

    p = json_string_value(v);
    got = json_string_length(v);

    if (got > 3 * len || memchr(p, '\0', got) != NULL) {
        abort();
    }

    if (!whole) {
        return;
    }

    /* UTF-8 with no NUL goes as it came */
    t = memchr(in, '\0', len) == NULL ? json_stringn(in, len) : NULL;

    if (t != NULL && (got != len || memcmp(p, in, len) != 0)) {
        abort();
    }

    json_decref(t);
}
