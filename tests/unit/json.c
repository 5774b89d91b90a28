/*
 * al_json_check(): strict parsing and rule trees.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "tap.h"


#define S(s)  { s, sizeof(s) - 1 }

#define HEAD_RE  "^remediation/[A-Za-z0-9._/-]+$"
#define NAME_RE  "^[^/\\\\]+$"


static void refuse(const al_json_rule_t *rule, const char *body, size_t len,
    const char *want, const char *name);
static void pass(const al_json_rule_t *rule, const char *body, size_t len,
    const char *name);
static int glob(const char *pat, const char *s);
static char *nest(size_t depth, int objects);
static void test_pr(void);
static void test_syntax(void);
static void test_depth(void);
static void test_nested(void);
static void test_detail(void);
static void test_folded(void);
static void test_names(void);


/* POST /repos/{owner}/{repo}/pulls */

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


/* a file name: no '/' or '\', also as an upstream that normalizes reads it */

static al_json_rule_t  file_members[] = {
    { .name = S("name"), .type = AL_JSON_STRING, .required = 1,
      .pattern = S(NAME_RE) }
};

static al_json_rule_t  file = {
    .name = S(""), .type = AL_JSON_OBJECT,
    .members = file_members, .nmembers = 1
};


/* two levels of objects, every scalar type */

static al_json_rule_t  user_members[] = {
    { .name = S("name"), .type = AL_JSON_STRING, .required = 1 },
    { .name = S("id"), .type = AL_JSON_INTEGER },
    { .name = S("tags"), .type = AL_JSON_ARRAY }
};

static al_json_rule_t  meta_members[] = {
    { .name = S("id"), .type = AL_JSON_INTEGER, .required = 1 }
};

static al_json_rule_t  doc_members[] = {
    { .name = S("user"), .type = AL_JSON_OBJECT, .required = 1,
      .members = user_members, .nmembers = 3 },
    { .name = S("meta"), .type = AL_JSON_OBJECT, .additional = 1,
      .members = meta_members, .nmembers = 1 },
    { .name = S("score"), .type = AL_JSON_NUMBER },
    { .name = S("draft"), .type = AL_JSON_BOOLEAN },
    { .name = S("none"), .type = AL_JSON_NULL },
    { .name = S("any"), .type = AL_JSON_ANY }
};

static al_json_rule_t  doc = {
    .name = S(""), .type = AL_JSON_OBJECT,
    .members = doc_members, .nmembers = 6
};

static al_json_rule_t  closed = {
    .name = S(""), .type = AL_JSON_OBJECT
};

static al_json_rule_t  any_object = {
    .name = S(""), .type = AL_JSON_OBJECT, .additional = 1
};

static al_json_rule_t  kelvin_members[] = {
    { .name = S("key"), .type = AL_JSON_ANY },
    { .name = S("case"), .type = AL_JSON_ANY },
    { .name = S("ann\xc3\xa9" "e"), .type = AL_JSON_ANY },  /* année */
    { .name = S("gr\xc3\xb6\xc3\x9f" "e"), .type = AL_JSON_ANY }  /* größe */
};

static al_json_rule_t  any_kelvin = {
    .name = S(""), .type = AL_JSON_OBJECT, .additional = 1,
    .members = kelvin_members, .nmembers = 4
};


#define PREFIX  "{\"head\":\"remediation/x\",\"base\":\"m\",\"title\":\"T\",\""

#define GOOD  "{\"head\":\"remediation/fix-1\",\"base\":\"main\"," \
              "\"title\":\"Fix\"}"


int
main(void)
{
    char  err[256];

    pr_members[0].re = al_regex_compile(HEAD_RE, sizeof(HEAD_RE) - 1, err,
                                        sizeof(err));
    if (!tap_ok(pr_members[0].re != NULL, "head pattern compiles")) {
        printf("# %s\n", err);
        return tap_done();
    }

    test_pr();
    test_syntax();
    test_depth();
    test_nested();
    test_detail();

    file_members[0].re = al_regex_compile(NAME_RE, sizeof(NAME_RE) - 1, err,
                                          sizeof(err));
    if (tap_ok(file_members[0].re != NULL, "name pattern compiles")) {
        test_folded();
        al_regex_free(file_members[0].re);
    }

    test_names();

    al_regex_free(pr_members[0].re);

    return tap_done();
}


static void
test_pr(void)
{
    pass(&pr, GOOD, strlen(GOOD), "pr: minimal");
    pass(&pr, "{\"title\":\"T\",\"base\":\"main\",\"body\":\"text\","
           "\"head\":\"remediation/a.b/c_d-9\"}", (size_t) -1,
           "pr: all fields, any order");
    pass(&pr, " \t\r\n" GOOD " \n", (size_t) -1,
           "pr: surrounding whitespace");
    pass(&pr, "{\"head\":\"remediation\\/x\",\"base\":\"main\","
           "\"title\":\"\\u00e9t\\u00e9 \xc3\xa9\"}", (size_t) -1,
           "pr: escapes and UTF-8");

    refuse(&pr, "{\"head\":\"main\",\"base\":\"main\",\"title\":\"T\"}",
           (size_t) -1, "field \"head\": does not match " HEAD_RE,
           "pr: head=main");
    refuse(&pr, "{\"head\":\"remediation/\",\"base\":\"m\",\"title\":\"T\"}",
           (size_t) -1, "field \"head\": does not match " HEAD_RE,
           "pr: head=remediation/ (empty branch)");
    refuse(&pr, "{\"head\":\"remediation/x\\n\",\"base\":\"m\","
           "\"title\":\"T\"}", (size_t) -1,
           "field \"head\": does not match " HEAD_RE,
           "pr: head with trailing newline");
    refuse(&pr, "{\"head\":\"xremediation/x\",\"base\":\"m\",\"title\":\"T\"}",
           (size_t) -1, "field \"head\": does not match " HEAD_RE,
           "pr: head with prefix");
    refuse(&pr, "{\"head\":\"remediation/x y\",\"base\":\"m\","
           "\"title\":\"T\"}", (size_t) -1,
           "field \"head\": does not match " HEAD_RE,
           "pr: head with a space");
    refuse(&pr, "{\"base\":\"main\",\"title\":\"T\"}", (size_t) -1,
           "missing required field \"head\"", "pr: head missing");
    refuse(&pr, "{\"head\":\"remediation/x\",\"title\":\"T\"}", (size_t) -1,
           "missing required field \"base\"", "pr: base missing");
    refuse(&pr, "{\"head\":42,\"base\":\"main\",\"title\":\"T\"}", (size_t) -1,
           "field \"head\": expected string, found integer",
           "pr: head a number");
    refuse(&pr, "{\"head\":null,\"base\":\"main\",\"title\":\"T\"}",
           (size_t) -1, "field \"head\": expected string, found null",
           "pr: head null");
    refuse(&pr, "{\"head\":[\"remediation/x\"],\"base\":\"m\",\"title\":\"T\"}",
           (size_t) -1, "field \"head\": expected string, found array",
           "pr: head an array");
    refuse(&pr, "{\"head\":\"remediation/x\",\"base\":\"main\","
           "\"title\":\"T\",\"draft\":true}", (size_t) -1,
           "unexpected field \"draft\"", "pr: extra field");
    refuse(&pr, "{\"head\":\"remediation/x\",\"head\":\"main\","
           "\"base\":\"main\",\"title\":\"T\"}", (size_t) -1,
           "duplicate key \"head\"", "pr: duplicate head, second wins");
    refuse(&pr, "{\"head\":\"main\",\"base\":\"main\",\"title\":\"T\","
           "\"head\":\"remediation/x\"}", (size_t) -1,
           "duplicate key \"head\"", "pr: duplicate head, first wins");
    refuse(&pr, "{\"head\":\"remediation/x\",\"h\\u0065ad\":\"main\","
           "\"base\":\"main\",\"title\":\"T\"}", (size_t) -1,
           "duplicate key \"h\\u0065ad\"", "pr: duplicate head, escaped");
    refuse(&pr, "[" GOOD "]", (size_t) -1, "expected object, found array",
           "pr: root array");
    refuse(&pr, "\"remediation/x\"", (size_t) -1,
           "expected object, found string", "pr: root string");
}


static void
test_syntax(void)
{
    refuse(&pr, GOOD "x", (size_t) -1, "invalid JSON at line 1 column *",
           "trailing garbage");
    refuse(&pr, GOOD GOOD, (size_t) -1, "invalid JSON at line 1 column *",
           "two documents");
    refuse(&pr, GOOD "\0", sizeof(GOOD), "invalid JSON at line 1 column *",
           "trailing NUL byte");
    refuse(&pr, "{\"head\":\"remediation/x\",\"base\":\"m\",\"title\":\"T\",}",
           (size_t) -1, "invalid JSON at line 1 column *", "trailing comma");
    refuse(&pr, "{\"head\":\"remediation/x\", // c\n\"base\":\"m\","
           "\"title\":\"T\"}", (size_t) -1, "invalid JSON at line 1 column *",
           "// comment");
    refuse(&pr, "/* c */" GOOD, (size_t) -1,
           "invalid JSON at line 1 column *", "/* */ comment");
    refuse(&pr, "{'head':'remediation/x','base':'m','title':'T'}",
           (size_t) -1, "invalid JSON at line 1 column *", "single quotes");
    refuse(&pr, "{head:\"remediation/x\",base:\"m\",title:\"T\"}",
           (size_t) -1, "invalid JSON at line 1 column *", "bare keys");
    refuse(NULL, "[NaN]", (size_t) -1, "invalid JSON at line 1 column *",
           "NaN");
    refuse(NULL, "[Infinity]", (size_t) -1, "invalid JSON at line 1 column *",
           "Infinity");
    refuse(NULL, "[-Infinity]", (size_t) -1,
           "invalid JSON at line 1 column *", "-Infinity");
    refuse(NULL, "[1e400]", (size_t) -1,
           "invalid JSON at line 1 column *overflow*", "1e400");
    refuse(NULL, "[-1e400]", (size_t) -1,
           "invalid JSON at line 1 column *overflow*", "-1e400");
    refuse(NULL, "[99999999999999999999999]", (size_t) -1,
           "invalid JSON at line 1 column *too big*",
           "99999999999999999999999");
    pass(NULL, "[9223372036854775807,-9223372036854775808]", (size_t) -1,
           "json_int_t limits");
    refuse(NULL, "[9223372036854775808]", (size_t) -1,
           "invalid JSON at line 1 column *too big*", "json_int_t max + 1");
    refuse(NULL, "[01]", (size_t) -1, "invalid JSON at line 1 column *",
           "leading zero");
    refuse(&pr, "{\"head\":\"remediation/x\\u0000\",\"base\":\"m\","
           "\"title\":\"T\"}", (size_t) -1,
           "invalid JSON at line 1 column *", "NUL via \\u0000 in a value");
    refuse(NULL, "{\"a\\u0000b\":1}", (size_t) -1,
           "invalid JSON at line 1 column *", "NUL via \\u0000 in a key");
    refuse(&pr, "{\"head\":\"remediation/\xff\",\"base\":\"m\","
           "\"title\":\"T\"}", (size_t) -1,
           "invalid JSON at line 1 column *", "invalid UTF-8 byte 0xff");
    refuse(NULL, "[\"\xc0\xaf\"]", (size_t) -1,
           "invalid JSON at line 1 column *", "overlong UTF-8");
    refuse(NULL, "[\"\xed\xa0\x80\"]", (size_t) -1,
           "invalid JSON at line 1 column *", "UTF-8 encoded surrogate");
    refuse(NULL, "[\"\\ud800\"]", (size_t) -1,
           "invalid JSON at line 1 column *", "lone surrogate \\ud800");
    refuse(NULL, "[\"\\udc00\\ud800\"]", (size_t) -1,
           "invalid JSON at line 1 column *", "reversed surrogate pair");
    pass(NULL, "[\"\\ud83d\\ude00\"]", (size_t) -1, "valid surrogate pair");
    refuse(NULL, "[\"a\tb\"]", (size_t) -1,
           "invalid JSON at line 1 column *", "raw control byte in string");
    refuse(&pr, "\xef\xbb\xbf" GOOD, (size_t) -1,
           "invalid JSON at line 1 column *", "BOM at start");
    refuse(&pr, "", 0, "empty body", "empty body");
    refuse(NULL, "", 0, "empty body", "empty body, no rule");
    refuse(&pr, " \r\n\t ", (size_t) -1, "invalid JSON at line *",
           "whitespace only");
    refuse(&pr, "{\"head\":\"remediation/x\"", (size_t) -1,
           "invalid JSON at line *", "truncated document");
    refuse(&pr, "{\"head\":\"remediation/x", (size_t) -1,
           "invalid JSON at line *", "unterminated string");

    pass(NULL, "42", (size_t) -1, "no rule: scalar root");
    pass(NULL, "null", (size_t) -1, "no rule: null root");
    pass(NULL, "{\"a\":[1,2.5,true,false,null,\"s\",{}]}", (size_t) -1,
           "no rule: every type");
}


static void
test_depth(void)
{
    char  *p;

    p = nest(AL_JSON_DEPTH_MAX, 0);
    pass(NULL, p, (size_t) -1, "32 levels");
    free(p);

    p = nest(AL_JSON_DEPTH_MAX, 1);
    pass(&any_object, p, (size_t) -1, "32 levels of objects");
    free(p);

    p = nest(AL_JSON_DEPTH_MAX + 1, 1);
    refuse(&any_object, p, (size_t) -1, "nesting deeper than 32",
           "33 levels of objects");
    free(p);

    p = nest(AL_JSON_DEPTH_MAX + 1, 0);
    refuse(NULL, p, (size_t) -1, "nesting deeper than 32", "33 levels");
    free(p);

    p = nest(100000, 0);
    refuse(&pr, p, (size_t) -1, "nesting deeper than 32", "100000 levels");
    free(p);

    /* unclosed: never reaches jansson */
    p = nest(100000, 0);
    p[100000] = '\0';
    refuse(NULL, p, (size_t) -1, "nesting deeper than 32",
           "100000 open brackets");
    free(p);

    pass(NULL, "[\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{{{{{{{\"]",
           (size_t) -1, "brackets inside a string");
    pass(NULL, "[\"\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]",
           (size_t) -1, "brackets after an escaped quote");
    refuse(NULL, "[\"\\\\\",[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]"
           "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", (size_t) -1,
           "nesting deeper than 32", "brackets after an escaped backslash");
}


static void
test_nested(void)
{
    pass(&doc, "{\"user\":{\"name\":\"a\"}}", (size_t) -1,
           "nested: minimal");
    pass(&doc, "{\"user\":{\"name\":\"a\",\"id\":7,\"tags\":[1,\"x\"]},"
           "\"meta\":{\"id\":1,\"extra\":{\"deep\":[]}},\"score\":2.5,"
           "\"draft\":false,\"none\":null,\"any\":[{\"x\":1}]}", (size_t) -1,
           "nested: everything, additional=1 accepts extras");
    pass(&doc, "{\"user\":{\"name\":\"a\"},\"score\":3}", (size_t) -1,
           "nested: integer is a number");
    pass(&any_object, "{\"x\":1,\"y\":{\"z\":[]}}", (size_t) -1,
           "additional=1 without members");

    refuse(&doc, "{\"user\":{\"name\":7}}", (size_t) -1,
           "field \"user.name\": expected string, found integer",
           "nested: wrong type two levels down");
    refuse(&doc, "{\"user\":{}}", (size_t) -1,
           "missing required field \"user.name\"",
           "nested: missing two levels down");
    refuse(&doc, "{\"user\":{\"name\":\"a\",\"admin\":true}}", (size_t) -1,
           "unexpected field \"user.admin\"",
           "nested: unexpected two levels down");
    refuse(&doc, "{\"user\":{\"name\":\"a\",\"id\":1.0}}", (size_t) -1,
           "field \"user.id\": expected integer, found number",
           "nested: 1.0 is not an integer");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"meta\":{\"x\":1}}",
           (size_t) -1, "missing required field \"meta.id\"",
           "nested: additional=1 still requires");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"meta\":{\"id\":\"1\"}}",
           (size_t) -1, "field \"meta.id\": expected integer, found string",
           "nested: additional=1 still checks listed members");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"meta\":{\"id\":1,\"ID\":2}}",
           (size_t) -1, "field \"meta.ID\" differs from \"id\" only by case",
           "additional=1: a listed key in another case is refused (Go and "
           "ASP.NET bind it to the listed field)");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"meta\":{\"iD\":2,\"id\":1}}",
           (size_t) -1, "field \"meta.iD\" differs from \"id\" only by case",
           "additional=1: ... before the listed key too");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"meta\":{\"id\":1,"
           "\"\\u0130D\":2}}", (size_t) -1,
           "field \"meta.*\" differs from \"id\" only by case",
           "additional=1: a dotted capital I folds to i, as in Go");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"draft\":true,"
           "\"meta\":{\"id\":1,\"\\u0131d\":2}}", (size_t) -1,
           "field \"meta.*\" differs from \"id\" only by case",
           "additional=1: ... and a dotless i");
    refuse(&any_kelvin, "{\"\\u212Aey\":1}", (size_t) -1,
           "field \"*\" differs from \"key\" only by case",
           "additional=1: the Kelvin sign folds to k");
    refuse(&any_kelvin, "{\"ca\\u017Fe\":1}", (size_t) -1,
           "field \"*\" differs from \"case\" only by case",
           "additional=1: the long s folds to s");
    refuse(&any_kelvin, "{\"ann\xc3\xa9" "e\":1,\"ANN\\u00C9E\":2}",
           (size_t) -1, "field \"ANN*E\" differs from \"ann*e\" only by case",
           "additional=1: a listed name outside ASCII in upper case (Go "
           "folds U+00C9 to U+00E9)");
    refuse(&any_kelvin, "{\"gr\xc3\xb6\xc3\x9f" "e\":1,"
           "\"GR\xc3\x96\xe1\xba\x9e" "E\":2}", (size_t) -1,
           "field \"GR*E\" differs from \"gr*e\" only by case",
           "additional=1: ... letters of other lengths in UTF-8 (U+00DF and "
           "U+1E9E)");
    pass(&any_kelvin, "{\"annee\":1,\"gr\xc3\xb6sse\":2,"
         "\"ann\xc3\xa9" "es\":3}", (size_t) -1,
         "additional=1: other ASCII letters, or longer, are other keys");
    pass(&doc, "{\"user\":{\"name\":\"a\"},\"meta\":{\"id\":1,\"idx\":2}}",
         (size_t) -1, "additional=1: a longer key is another key");
    refuse(&any_object, "{\"x\":1,\"_method\":\"DELETE\"}", (size_t) -1,
           "field \"_method\" would change the method upstream",
           "additional=1: a top-level _method is refused (Laravel reads it "
           "as the method)");
    refuse(&any_object, "{\"_Method\":\"DELETE\"}", (size_t) -1,
           "field \"_Method\" would change the method upstream",
           "additional=1: ... in any case");
    pass(&doc, "{\"user\":{\"name\":\"a\"},\"meta\":{\"id\":1,"
         "\"_method\":\"DELETE\"}}", (size_t) -1,
         "additional=1: a nested _method is data");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"draft\":\"true\"}",
           (size_t) -1, "field \"draft\": expected boolean, found string",
           "nested: boolean");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"none\":0}",
           (size_t) -1, "field \"none\": expected null, found integer",
           "nested: null");
    refuse(&doc, "{\"user\":{\"name\":\"a\"},\"score\":\"1\"}",
           (size_t) -1, "field \"score\": expected number, found string",
           "nested: number");
    refuse(&doc, "{\"user\":{\"name\":\"a\",\"tags\":{}}}",
           (size_t) -1, "field \"user.tags\": expected array, found object",
           "nested: array");
    refuse(&doc, "{\"user\":[]}", (size_t) -1,
           "field \"user\": expected object, found array",
           "nested: object");
    refuse(&doc, "{\"user\":{\"name\":\"a\",\"name\":\"b\"}}", (size_t) -1,
           "duplicate key \"name\"", "nested: duplicate key");
    refuse(NULL, "{\"a_long_key_of_40_bytes_xxxxxxxxxxxxxxxx\":1,"
           "\"a_long_key_of_40_bytes_xxxxxxxxxxxxxxxx\":2}", (size_t) -1,
           "duplicate key at line 1 column *", "duplicate long key");
}


static void
test_detail(void)
{
    int     rc;
    char    small[8], body[512], detail[AL_DETAIL_MAX];
    size_t  i, n;

    rc = al_json_check(&pr, (const unsigned char *) "{}", 2, small,
                       sizeof(small));
    tap_ok(rc == -1 && strlen(small) == sizeof(small) - 1,
           "detail is bounded and terminated");

    rc = al_json_check(&pr, (const unsigned char *) "{}", 2, NULL, 0);
    tap_is_int(rc, -1, "NULL detail still refuses");

    /* a long client key: at most 64 bytes of it are shown */

    n = strlen(PREFIX);
    memcpy(body, PREFIX, n);
    for (i = n; i < n + 300; i++) {
        body[i] = 'k';
    }
    memcpy(body + i, "\":1}", 5);

    rc = al_json_check(&pr, (const unsigned char *) body, strlen(body),
                       detail, sizeof(detail));
    tap_ok(rc == -1 && strncmp(detail, "unexpected field \"kkk", 21) == 0
           && strlen(detail) < 100, "long key is cut");

    /* a key with a control byte escape and non-ASCII is shown as ASCII */

    rc = al_json_check(&closed, (const unsigned char *)
                       "{\"\\u0001\xc3\xa9\":1}", 14, detail, sizeof(detail));
    tap_is_str(rc == -1 ? detail : NULL, "unexpected field \"???\"",
               "unexpected key is printable");

    rc = al_json_check(&pr, (const unsigned char *) "[\"\x01\"]", 5, detail,
                       sizeof(detail));
    for (i = 0; detail[i] != '\0'; i++) {
        if ((unsigned char) detail[i] < 0x20
            || (unsigned char) detail[i] >= 0x7f)
        {
            break;
        }
    }
    tap_ok(rc == -1 && detail[i] == '\0', "syntax reason is printable");

    rc = al_json_check(&pr, (const unsigned char *) GOOD, strlen(GOOD),
                       detail, sizeof(detail));
    tap_ok(rc == 0 && detail[0] == '\0', "detail is empty on success");
}


/* want is exact, or a glob where '*' matches any run of bytes */

static void
refuse(const al_json_rule_t *rule, const char *body, size_t len,
    const char *want, const char *name)
{
    int   rc;
    char  detail[AL_DETAIL_MAX];

    if (len == (size_t) -1) {
        len = strlen(body);
    }

    rc = al_json_check(rule, (const unsigned char *) body, len, detail,
                       sizeof(detail));

    if (!tap_ok(rc == -1 && glob(want, detail), name)) {
        printf("# rc %d, detail '%s'\n# want '%s'\n", rc, detail, want);
    }
}


static int
glob(const char *pat, const char *s)
{
    if (*pat == '\0') {
        return *s == '\0';
    }

    if (*pat == '*') {
        for ( ;; s++) {
            if (glob(pat + 1, s)) {
                return 1;
            }

            if (*s == '\0') {
                return 0;
            }
        }
    }

    return *pat == *s && glob(pat + 1, s + 1);
}


static void
pass(const al_json_rule_t *rule, const char *body, size_t len,
    const char *name)
{
    int   rc;
    char  detail[AL_DETAIL_MAX];

    if (len == (size_t) -1) {
        len = strlen(body);
    }

    rc = al_json_check(rule, (const unsigned char *) body, len, detail,
                       sizeof(detail));

    if (!tap_ok(rc == 0, name)) {
        printf("# rc %d, detail '%s'\n", rc, detail);
    }
}


/* [[[...]]] or {"a":{"a":{}}}, depth levels deep; the caller frees it */

static char *
nest(size_t depth, int objects)
{
    char    *p, *q;
    size_t   i;

    p = malloc(depth * 6 + 1);
    if (p == NULL) {
        abort();
    }

    q = p;

    for (i = 0; i < depth; i++) {
        if (!objects) {
            *q++ = '[';

        } else if (i + 1 < depth) {
            memcpy(q, "{\"a\":", 5);
            q += 5;

        } else {
            *q++ = '{';
        }
    }

    for (i = 0; i < depth; i++) {
        *q++ = objects ? '}' : ']';
    }

    *q = '\0';

    return p;
}


/*
 * A string is matched also as an upstream that applies NFKC or Windows'
 * best fit reads it: "..\u2215x" is "../x" to a Windows upstream that
 * opens it through an ANSI API, whichever way the JSON spells it.
 */

static void
test_folded(void)
{
    pass(&file, "{\"name\":\"report.txt\"}", (size_t) -1, "file: ASCII");
    pass(&file, "{\"name\":\"caf\\u00e9 \xe2\x82\xac\"}", (size_t) -1,
         "file: other non-ASCII");
    refuse(&file, "{\"name\":\"..\\u2215..\\u2215win.ini\"}", (size_t) -1,
           "field \"name\": does not match*",
           "file: U+2215 DIVISION SLASH escaped");
    refuse(&file, "{\"name\":\"..\xe2\x88\x95x\"}", (size_t) -1,
           "field \"name\": does not match*", "file: U+2215 raw");
    refuse(&file, "{\"name\":\"a\\uff3cb\"}", (size_t) -1,
           "field \"name\": does not match*",
           "file: U+FF3C FULLWIDTH REVERSE SOLIDUS");
    refuse(&file, "{\"name\":\"..\\u00a5x\"}", (size_t) -1,
           "field \"name\": does not match*", "file: U+00A5 YEN SIGN");
}


/*
 * A route without json rules: al_json_media() says which bodies are
 * JSON, al_json_names_check() refuses a top-level "_method" or a field
 * named like a checked param, and a body that does not parse strictly.
 */

static int
names(const char *body, const char *want)
{
    int          rc;
    char         detail[256];
    al_param_t   params[1], query[2];

    params[0].name.data = "dir";
    params[0].name.len = 3;
    params[0].re = pr_members[0].re;
    query[0].name.data = "file";
    query[0].name.len = 4;
    query[0].re = pr_members[0].re;
    query[1].name.data = "page";
    query[1].name.len = 4;
    query[1].re = NULL;

    rc = al_json_names_check(params, 1, query, 2,
                             (const unsigned char *) body, strlen(body),
                             detail, sizeof(detail));

    if (want == NULL) {
        if (rc != 0) {
            printf("# refused: %s\n", detail);
        }

        return rc == 0;
    }

    if (rc == 0) {
        printf("# passed\n");
        return 0;
    }

    if (strstr(detail, want) == NULL) {
        printf("# detail: %s\n", detail);
        return 0;
    }

    return 1;
}


static void
test_names(void)
{
    tap_ok(al_json_media("application/json", 16), "media: application/json");
    tap_ok(al_json_media("Application/JSON; charset=utf-8", 31),
           "media: in another case");
    tap_ok(al_json_media("application/vnd.api+json", 24), "media: +json");
    tap_ok(al_json_media("text/plain; x=a/json", 20),
           "media: /json in a parameter");
    tap_ok(al_json_media("text/x-json", 11), "media: text/x-json (Rails)");
    tap_ok(al_json_media("Application/X-JSON", 18),
           "media: application/x-json in another case");
    tap_ok(!al_json_media("application/x-ndjson", 20), "media: ndjson");
    tap_ok(!al_json_media("application/jso", 15), "media: cut short");
    tap_ok(!al_json_media("application/json", 15),
           "media: only len bytes are read");
    tap_ok(!al_json_media(NULL, 0), "media: no Content-Type");

    tap_ok(names("{\"a\":1,\"files\":2,\"page\":\"..\"}", NULL),
           "names: other fields pass");
    tap_ok(names("{\"x\":{\"dir\":\"..\",\"_method\":\"PUT\"}}", NULL),
           "names: nested fields pass");
    tap_ok(names("[{\"dir\":\"..\"}]", NULL), "names: an array passes");
    tap_ok(names("\"_method\"", NULL), "names: a string passes");
    tap_ok(names("{\"n\":123456789012345678901234567890,"
                 "\"s\":\"a\\u0000b\"}", NULL),
           "names: a value jansson refuses as a value passes");
    tap_ok(names("{\"di\\u0000r\":1}", "NUL"), "names: a NUL in a name");
    tap_ok(names("", NULL), "names: no body passes");
    tap_ok(names("{\"dir\":\"..\"}",
                 "field \"dir\" named like the checked param \"dir\""),
           "names: a path param");
    tap_ok(names("{\"FiLe\":\"x\"}",
                 "field \"FiLe\" named like the checked param \"file\""),
           "names: a checked query param in another case");
    tap_ok(names("{\"_METHOD\":\"DELETE\"}",
                 "field \"_METHOD\" would change the method"),
           "names: _method in another case");
    tap_ok(names("{\"a\":1,\"a\":2}", "duplicate"),
           "names: a key given twice");
    tap_ok(names("{\"a\":1} x", ""), "names: trailing data");
    tap_ok(names("{'dir':1}", ""), "names: single quotes");

    /* a JavaScript reader that assigns takes it for the prototype */
    tap_ok(names("{\"__proto__\":{\"dir\":\"..\"}}", "__proto__"),
           "names: a __proto__ key");
    tap_ok(names("{\"a\":[{\"\\u005f_proto__\":1}]}", "__proto__"),
           "names: a __proto__ key, nested and escaped");
    tap_ok(names("{\"__proto\":1,\"__PROTO__\":2,\"x\":\"__proto__\"}",
                 NULL),
           "names: keys like __proto__ and a value pass");
    refuse(&any_object, "{\"a\":1,\"__proto__\":{\"a\":2}}", (size_t) -1,
           "*\"__proto__\" key would set*", "additional: a __proto__ key");
    pass(&any_object, "{\"a\":1,\"__proto\":{\"a\":2}}", (size_t) -1,
         "additional: __proto passes");

    /* a deep merge goes from "constructor" (Object) to Object.prototype */
    tap_ok(names("{\"constructor\":{\"prototype\":{\"dir\":\"..\"}}}",
                 "\"constructor\" key holding \"prototype\""),
           "names: constructor.prototype");
    tap_ok(names("{\"a\":[{\"\\u0063onstructor\":{\"prototype\":1}}]}",
                 "\"constructor\" key holding \"prototype\""),
           "names: constructor.prototype, nested and escaped");
    tap_ok(names("{\"constructor\":{\"name\":1},\"prototype\":{},"
                 "\"x\":{\"constructor\":\"prototype\"}}", NULL),
           "names: constructor without prototype, prototype alone pass");
    refuse(&any_object, "{\"a\":1,\"constructor\":{\"prototype\":"
           "{\"a\":2}}}", (size_t) -1,
           "*\"constructor\" key holding \"prototype\"*",
           "additional: constructor.prototype");
    pass(&any_object, "{\"a\":1,\"constructor\":{\"a\":2}}", (size_t) -1,
         "additional: constructor without prototype passes");

    /* a path setter (flat's unflatten()) reads a key as a path */
    tap_ok(names("{\"__proto__.dir\":\"..\"}",
                 "\"__proto__\" key would set an object's prototype "
                 "upstream (in \"__proto__.dir\")"),
           "names: a key __proto__.dir");
    tap_ok(names("{\"a\":{\"b[__proto__][dir]\":1}}", "__proto__"),
           "names: a key b[__proto__][dir], nested");
    tap_ok(names("{\"constructor.prototype.dir\":1}",
                 "\"constructor\" key holding \"prototype\" would set "
                 "Object.prototype upstream (in "
                 "\"constructor.prototype.dir\")"),
           "names: a key constructor.prototype.dir");
    tap_ok(names("{\"constructor[][prototype]\":1}", "\"constructor\""),
           "names: empty parts are no parts");
    tap_ok(names("{\"constructor\":{\"prototype.dir\":1}}",
                 "\"constructor\" key holding \"prototype\""),
           "names: constructor holding a key prototype.dir");
    tap_ok(names("{\"a.constructor\":{\"prototype\":1}}",
                 "\"constructor\" key holding \"prototype\""),
           "names: a.constructor holding prototype");
    tap_ok(names("{\"a.b\":1,\"x.__proto\":2,\"c[d]\":3,"
                 "\"constructor.name\":4,\"prototype.constructor\":5,"
                 "\"constructor\":{\"a.prototype\":6},"
                 "\"__proto__x.y\":7,\"a.__PROTO__\":8}", NULL),
           "names: path keys without those parts pass");
    refuse(&any_object, "{\"a\":1,\"__proto__.a\":2}", (size_t) -1,
           "*\"__proto__\" key would set*",
           "additional: a key __proto__.a");
    refuse(&any_object, "{\"a\":1,\"constructor.prototype.a\":2}",
           (size_t) -1, "*\"constructor\" key holding \"prototype\"*",
           "additional: a key constructor.prototype.a");
}
