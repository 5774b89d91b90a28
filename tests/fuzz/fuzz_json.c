/*
 * libFuzzer target for al_json_check(): the GitHub pull-request rule, a
 * nested rule and no rule at all, on every input.  Besides the sanitizers
 * it checks what callers rely on: the result is 0 or -1, detail is
 * terminated, empty on success, and printable ASCII (it reaches logs and
 * responses).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"


#define S(s)  { s, sizeof(s) - 1 }

#define HEAD_RE  "^remediation/[A-Za-z0-9._/-]+$"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void fuzz_init(void);
static void fuzz_check(const al_json_rule_t *rule, const uint8_t *data,
    size_t size);


static al_json_rule_t  pr_members[] = {
    { .name = S("head"), .type = AL_JSON_STRING, .required = 1,
      .pattern = S(HEAD_RE) },
    { .name = S("base"), .type = AL_JSON_STRING, .required = 1 },
    { .name = S("title"), .type = AL_JSON_STRING, .required = 1 },
    { .name = S("body"), .type = AL_JSON_STRING }
};

static al_json_rule_t  pr = {
    .name = S(""), .type = AL_JSON_OBJECT,
    .members = pr_members, .nmembers = 4
};

static al_json_rule_t  user_members[] = {
    { .name = S("name"), .type = AL_JSON_STRING, .required = 1,
      .pattern = S(HEAD_RE) },
    { .name = S("id"), .type = AL_JSON_INTEGER },
    { .name = S("tags"), .type = AL_JSON_ARRAY }
};

static al_json_rule_t  doc_members[] = {
    { .name = S("user"), .type = AL_JSON_OBJECT, .required = 1,
      .members = user_members, .nmembers = 3 },
    { .name = S("meta"), .type = AL_JSON_OBJECT, .additional = 1,
      .members = user_members + 1, .nmembers = 1 },
    { .name = S("score"), .type = AL_JSON_NUMBER },
    { .name = S("draft"), .type = AL_JSON_BOOLEAN },
    { .name = S("none"), .type = AL_JSON_NULL },
    { .name = S("any"), .type = AL_JSON_ANY }
};

static al_json_rule_t  doc = {
    .name = S(""), .type = AL_JSON_OBJECT,
    .members = doc_members, .nmembers = 6
};


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int  ready;

    if (!ready) {
        fuzz_init();
        ready = 1;
    }

    fuzz_check(&pr, data, size);
    fuzz_check(&doc, data, size);
    fuzz_check(NULL, data, size);

    return 0;
}


static void
fuzz_init(void)
{
    char  err[256];

    pr_members[0].re = al_regex_compile(HEAD_RE, sizeof(HEAD_RE) - 1, err,
                                        sizeof(err));
    if (pr_members[0].re == NULL) {
        abort();
    }

    user_members[0].re = pr_members[0].re;
}


static void
fuzz_check(const al_json_rule_t *rule, const uint8_t *data, size_t size)
{
    int            rc;
    size_t         i;
    unsigned char  c;
    char           detail[AL_DETAIL_MAX + 1];

    memset(detail, 'x', sizeof(detail));
    detail[AL_DETAIL_MAX] = 0x7f;

    rc = al_json_check(rule, data, size, detail, AL_DETAIL_MAX);

    if (rc != 0 && rc != -1) {
        abort();
    }

    if (detail[AL_DETAIL_MAX] != 0x7f) {
        abort();
    }

    for (i = 0; i < AL_DETAIL_MAX && detail[i] != '\0'; i++) {
        c = (unsigned char) detail[i];
        if (c < 0x20 || c >= 0x7f) {
            abort();
        }
    }

    if (i == AL_DETAIL_MAX || (rc == 0 && i != 0) || (rc == -1 && i == 0)) {
        abort();
    }
}
