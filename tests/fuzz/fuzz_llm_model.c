/*
 * libFuzzer target for the model rewrite before the body check
 * (al_llm_model_locate(), al_llm_model_map(): aliases, Azure
 * deployments, fallback).
 *
 * Input: byte 0 picks an alias entry or a forced model; the rest is the
 * body.  Checked besides the sanitizers:
 *
 *   - a located value lies inside the body and is a quoted token;
 *   - a rewrite never turns a body jansson refuses (strict, duplicate
 *     keys refused) into one it accepts;
 *   - a rewrite of an accepted body is accepted, names the new model as
 *     its top-level "model", and leaves every other member as it was
 *     (or is refused for a duplicate "model" the scanner could not see).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "airlock.h"
#include "al_llm.h"


#define S(s)  { s, sizeof(s) - 1 }


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static json_t *fuzz_load(const unsigned char *p, size_t len);
static void fuzz_check(const uint8_t *body, size_t len, const al_str_t *want,
    const al_llm_map_t *m);


static al_str_t  models[] = { S("gpt-4o-mini"), S("m\"x\\y") };

static al_llm_alias_t  aliases[] = {
    { S("fast"), S("gpt-4o-mini") },
    { S("q"), S("m\"x\\y") }
};

static al_llm_t  llm = {
    .name = S("openai"), .kind = AL_LLM_OPENAI, .models = models,
    .nmodels = 2, .aliases = aliases, .naliases = 2, .body_max = 1 << 20
};

static const al_str_t  forces[] = { S("dep-1"), S("a\"b"), S("") };


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t          at, raw;
    const al_str_t  *force;
    al_llm_map_t    m;

    if (size < 1) {
        return 0;
    }

    force = (data[0] & 3) < 3 ? &forces[data[0] & 3] : NULL;
    data++;
    size--;

    if (al_llm_model_locate(data, size, &at, &raw) == 1
        && (at + raw > size || raw < 2 || data[at] != '"'
            || data[at + raw - 1] != '"'))
    {
        abort();
    }

    if (al_llm_model_map(&llm, force, data, size, &m) != 0) {
        return 0;
    }

    if (m.body != NULL) {
        fuzz_check(data, size, force, &m);
        free(m.body);
    }

    return 0;
}


static json_t *
fuzz_load(const unsigned char *p, size_t len)
{
    json_error_t  err;

    return json_loadb((const char *) p, len, JSON_REJECT_DUPLICATES, &err);
}


static void
fuzz_check(const uint8_t *body, size_t len, const al_str_t *want,
    const al_llm_map_t *m)
{
    size_t                 i;
    json_t                *a, *b, *v;
    const al_llm_alias_t  *alias;

    a = fuzz_load(body, len);
    b = fuzz_load(m->body, m->body_len);

    if (a == NULL && b != NULL) {
        /* a refused body became an accepted one */
        abort();
    }

    if (a == NULL || b == NULL) {
        json_decref(a);
        json_decref(b);
        return;
    }

    if (want == NULL) {
        alias = NULL;

        for (i = 0; i < llm.naliases; i++) {
            if (llm.aliases[i].name.len == m->alias_len
                && memcmp(llm.aliases[i].name.data, m->alias, m->alias_len)
                   == 0)
            {
                alias = &llm.aliases[i];
            }
        }

        if (alias == NULL) {
            abort();
        }

        want = &alias->model;
    }

    v = json_object_get(b, "model");

    if (!json_is_object(b) || v == NULL || !json_is_string(v)
        || json_string_length(v) != want->len
        || memcmp(json_string_value(v), want->data, want->len) != 0)
    {
        abort();
    }

    (void) json_object_del(a, "model");
    (void) json_object_del(b, "model");

    if (!json_equal(a, b)) {
        abort();
    }

    json_decref(a);
    json_decref(b);
}
