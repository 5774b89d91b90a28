/*
 * libFuzzer target: what a sandbox writes, as the worker packs it into
 * a result (aw_result_json(), aw_json_bytes(), worker/aw_job.c), and the
 * small result that stands in for one Redis refused
 * (aw_result_unstored()).  The input is split into stdout, stderr and
 * an error message (a C string) by its first two bytes.  Invariants:
 * no crash and nothing read past the lengths; the result is one JSON
 * object that jansson reads without JSON_ALLOW_NUL (as the agent does:
 * no "\u0000"); stdout and stderr are strings of at most 3 bytes for
 * each byte written (U+FFFD), and exactly what was written when that is
 * UTF-8 with no NUL; the stand-in has neither, and says each was there.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../worker/aw_scan.c"
#include "../../worker/aw_job.c"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(const char *s, const aw_result_t *res, int whole);
static void fuzz_stream(json_t *root, const char *key, const char *in,
    size_t len, int whole);


/* aw_config.c's, which reads files: the one name a result needs */

const char *
aw_backend_name(aw_backend_e b)
{
    return b == AW_BACKEND_GVISOR ? "gvisor" : "bwrap";
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char         *s, *body;
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

    s = aw_result_json(&conf, "job-1", "sess-1", &res);
    fuzz_check(s, &res, 1);
    free(s);

    s = aw_result_unstored(&conf, "job-1", "sess-1", &res, n,
                           "OOM command not allowed");
    fuzz_check(s, &res, 0);
    free(s);

    free(body);

    return 0;
}


static void
fuzz_check(const char *s, const aw_result_t *res, int whole)
{
    json_t  *root;

    if (s == NULL) {
        abort();
    }

    /* without JSON_ALLOW_NUL: a "\u0000" would fail the parse */
    root = json_loads(s, 0, NULL);

    if (!json_is_object(root)
        || !json_is_string(json_object_get(root, "status"))
        || json_is_object(json_object_get(root, "error"))
           != (res->status != AW_ST_OK || !whole))
    {
        abort();
    }

    if (whole) {
        fuzz_stream(root, "stdout", res->out, res->out_len, 1);
        fuzz_stream(root, "stderr", res->err, res->err_len, 1);

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
