/*
 * "airlockctl usage": a summary of the LLM gateway's usage log.
 *
 * Lines are read through one fixed buffer (al_llm_report_read()), parsed
 * one at a time and added to their group: the whole log, or one group per
 * client, model or UTC day, found through a small open-addressing index.
 * A line that does not parse as a usage line is counted and skipped.
 * "cost_usd" is taken from its decimal text into picodollars, so sums are
 * exact (al_llm_decimal_parse()); a group's cost is kept as whole dollars
 * and picodollars, so that it holds far more than the $18446744 of one
 * uint64_t of picodollars.  A sum that does not fit in a uint64_t all the
 * same is marked, and printed as "overflow" (null in JSON), never as the
 * number it stopped at.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "al_internal.h"
#include "al_llm_internal.h"
#include "al_llm_report.h"


#define AL_LLM_REPORT_STATUS_MAX  12    /* distinct statuses kept a group */
#define AL_LLM_REPORT_OUT_MAX     4096  /* one group as JSON or text */
#define AL_LLM_REPORT_USD_MAX     40    /* 20 digits, '.', 12 digits */

/* the sums of a group that did not fit (al_llm_report_group_t.over) */
#define AL_LLM_REPORT_OVER_PROMPT      0x01
#define AL_LLM_REPORT_OVER_COMPLETION  0x02
#define AL_LLM_REPORT_OVER_CACHED      0x04
#define AL_LLM_REPORT_OVER_TOTAL       0x08
#define AL_LLM_REPORT_OVER_COST        0x10


typedef struct {
    unsigned         status;
    uint64_t         count;
} al_llm_report_status_t;

typedef struct {
    char            *key;
    size_t           key_len;
    uint64_t         requests;
    uint64_t         errors;            /* status not 2xx */
    uint64_t         prompt;
    uint64_t         completion;
    uint64_t         cached;
    uint64_t         total;
    uint64_t         cost_usd;          /* whole dollars */
    uint64_t         cost;              /* and picodollars, under $1 */
    unsigned         over;              /* AL_LLM_REPORT_OVER_* */
    uint64_t         unpriced;          /* requests with cost_usd null */
    al_llm_report_status_t  status[AL_LLM_REPORT_STATUS_MAX];
    size_t           nstatus;
    uint64_t         status_other;
} al_llm_report_group_t;

typedef struct {
    uint64_t         line;
    char             reason[64];
} al_llm_report_bad_t;

typedef struct {
    const char      *magic;
    size_t           len;
    unsigned         digit;             /* a digit 1-9 follows the magic */
    const char      *name;
    const char      *cat;               /* what decompresses it */
} al_llm_report_packed_t;

struct al_llm_report_s {
    al_llm_report_by_t      by;
    al_llm_report_group_t   all;
    al_llm_report_group_t  *groups;
    size_t                  ngroups;
    size_t                  cap;
    uint32_t               *index;      /* position + 1; 0 empty */
    size_t                  mask;
    al_llm_report_group_t  *other;      /* past AL_LLM_REPORT_GROUPS_MAX */
    uint64_t                lines;      /* every line read */
    uint64_t                blank;
    uint64_t                counted;
    uint64_t                skipped;
    al_llm_report_bad_t     bad[AL_LLM_REPORT_BAD_KEPT];
    unsigned                nomem:1;
};


static int al_llm_report_bad(al_llm_report_t *rep, const char *reason);
static const al_llm_report_packed_t *al_llm_report_packed(const char *buf,
    size_t len);
static const char *al_llm_report_why(const json_error_t *jerr,
    size_t len);
static int al_llm_report_time(const char *s, size_t len);
static unsigned al_llm_report_2digits(const char *s);
static int al_llm_report_u64(const json_t *obj, const char *key,
    uint64_t *out);
static int al_llm_report_cost(const json_t *v, const char *line,
    size_t len, uint64_t *out);
static al_llm_report_group_t *al_llm_report_group(al_llm_report_t *rep,
    const char *key, size_t len);
static int al_llm_report_grow(al_llm_report_t *rep);
static void al_llm_report_add(al_llm_report_group_t *g, unsigned status,
    const uint64_t *tok, int priced, uint64_t cost);
static int al_llm_report_cmp(const void *a, const void *b);
static void al_llm_report_usd(const al_llm_report_group_t *g, char *buf,
    size_t size);
static void al_llm_report_json_u64(al_llm_out_t *o, const char *name,
    uint64_t v, int over);
static void al_llm_report_text_u64(char *buf, size_t size, uint64_t v,
    int over);
static void al_llm_report_group_json(al_llm_out_t *o,
    const al_llm_report_group_t *g, int with_key);
static size_t al_llm_report_shown(char *buf, size_t size,
    const al_llm_report_group_t *g);
static void al_llm_report_group_text(FILE *out,
    const al_llm_report_group_t *g, const char *key, size_t width);
static void al_llm_report_sum(uint64_t *sum, uint64_t v, unsigned *over,
    unsigned bit);


al_llm_report_t *
al_llm_report_create(al_llm_report_by_t by)
{
    al_llm_report_t  *rep;

    rep = calloc(1, sizeof(al_llm_report_t));
    if (rep == NULL) {
        return NULL;
    }

    rep->by = by;

    return rep;
}


void
al_llm_report_free(al_llm_report_t *rep)
{
    size_t  i;

    if (rep == NULL) {
        return;
    }

    for (i = 0; i < rep->ngroups; i++) {
        free(rep->groups[i].key);
    }

    if (rep->other != NULL) {
        free(rep->other->key);
        free(rep->other);
    }

    free(rep->groups);
    free(rep->index);
    free(rep);
}


int
al_llm_report_line(al_llm_report_t *rep, const char *line, size_t len)
{
    int                     priced;
    size_t                  klen;
    json_t                 *j, *v;
    uint64_t                tok[4], status, cost;
    const char             *key, *time;
    json_error_t            jerr;
    al_llm_report_group_t  *g;

    rep->lines++;

    if (len > AL_LLM_REPORT_LINE_MAX) {
        return al_llm_report_bad(rep, "longer than a usage line can be");
    }

    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }

    if (len == 0) {
        rep->blank++;
        return 0;
    }

    j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (j == NULL) {
        return al_llm_report_bad(rep, al_llm_report_why(&jerr, len));
    }

    if (!json_is_object(j)) {
        json_decref(j);
        return al_llm_report_bad(rep, "not a JSON object");
    }

    v = json_object_get(j, "time");
    time = json_string_value(v);

    if (time == NULL || al_llm_report_time(time, json_string_length(v)) != 0) {
        json_decref(j);
        return al_llm_report_bad(rep, "no \"time\" as the gateway writes it");
    }

    if (json_string_value(json_object_get(j, "client")) == NULL
        || json_string_value(json_object_get(j, "model")) == NULL)
    {
        json_decref(j);
        return al_llm_report_bad(rep, "no \"client\" or \"model\" string");
    }

    if (al_llm_report_u64(j, "status", &status) != 0 || status < 100
        || status > 999)
    {
        json_decref(j);
        return al_llm_report_bad(rep, "no \"status\" between 100 and 999");
    }

    if (al_llm_report_u64(j, "prompt_tokens", &tok[0]) != 0
        || al_llm_report_u64(j, "completion_tokens", &tok[1]) != 0
        || al_llm_report_u64(j, "cached_tokens", &tok[2]) != 0
        || al_llm_report_u64(j, "total_tokens", &tok[3]) != 0)
    {
        json_decref(j);
        return al_llm_report_bad(rep, "a token count that is not a "
                                 "non-negative integer");
    }

    /* each count is at most INT64_MAX (a JSON integer): the sum fits */

    if (tok[3] == 0) {
        tok[3] = tok[0] + tok[1];
    }

    v = json_object_get(j, "cost_usd");
    priced = (v != NULL && !json_is_null(v));
    cost = 0;

    if (priced && al_llm_report_cost(v, line, len, &cost) != 0) {
        json_decref(j);
        return al_llm_report_bad(rep, "\"cost_usd\" is not a number of "
                                 "dollars");
    }

    g = NULL;

    if (rep->by != AL_LLM_REPORT_BY_NONE) {
        if (rep->by == AL_LLM_REPORT_BY_DAY) {
            key = time;
            klen = 10;

        } else {
            v = json_object_get(j, rep->by == AL_LLM_REPORT_BY_CLIENT
                                   ? "client" : "model");
            key = json_string_value(v);
            klen = json_string_length(v);
        }

        g = al_llm_report_group(rep, key, klen);

        if (g == NULL) {
            json_decref(j);
            rep->nomem = 1;
            return al_llm_report_bad(rep, "out of memory");
        }
    }

    json_decref(j);

    al_llm_report_add(&rep->all, (unsigned) status, tok, priced, cost);

    if (g != NULL) {
        al_llm_report_add(g, (unsigned) status, tok, priced, cost);
    }

    rep->counted++;

    return 0;
}


/*
 * Lines through one buffer of AL_LLM_REPORT_LINE_MAX bytes: a longer
 * line is skipped whole; a last line without a newline is read too (a
 * line cut short by a crash fails to parse and is counted as skipped).
 * A compressed log (a rotated llm.log.2.gz) is refused, not read as one
 * line of garbage: that summary, all zeros with a success, read as a
 * month without LLM calls.
 */

int
al_llm_report_read(al_llm_report_t *rep, FILE *f, const char *name,
    al_error_t *err)
{
    int                            too_long, first;
    char                          *buf, *chunk, *p, *end, *nl;
    size_t                         n, len, take;
    const al_llm_report_packed_t  *packed;

    buf = malloc(AL_LLM_REPORT_LINE_MAX + 65536);
    if (buf == NULL) {
        al_error_set(err, name, 0, 0, "out of memory");
        return -1;
    }

    chunk = buf + AL_LLM_REPORT_LINE_MAX;
    len = 0;
    too_long = 0;
    first = 1;

    while ((n = fread(chunk, 1, 65536, f)) > 0) {
        p = chunk;
        end = chunk + n;

        if (first) {
            first = 0;
            packed = al_llm_report_packed(chunk, n);

            if (packed != NULL) {
                al_error_set(err, name, 0, 0, "cannot read: %s-compressed, "
                             "not a usage log; decompress it to standard "
                             "input (%s LOG | airlockctl usage -)",
                             packed->name, packed->cat);
                free(buf);
                return -1;
            }
        }

        while (p < end) {
            nl = memchr(p, '\n', end - p);
            take = (nl != NULL ? nl : end) - p;

            if (!too_long) {
                if (len + take > AL_LLM_REPORT_LINE_MAX) {
                    too_long = 1;

                } else {
                    memcpy(buf + len, p, take);
                    len += take;
                }
            }

            if (nl == NULL) {
                break;
            }

            if (too_long) {
                /* the whole line is skipped, however long */
                (void) al_llm_report_line(rep, buf,
                                          AL_LLM_REPORT_LINE_MAX + 1);
            } else {
                (void) al_llm_report_line(rep, buf, len);
            }

            len = 0;
            too_long = 0;
            p = nl + 1;
        }
    }

    if (ferror(f)) {
        al_error_set(err, name, 0, 0, "cannot read: %s", strerror(errno));
        free(buf);
        return -1;
    }

    if (too_long) {
        (void) al_llm_report_line(rep, buf, AL_LLM_REPORT_LINE_MAX + 1);

    } else if (len > 0) {
        (void) al_llm_report_line(rep, buf, len);
    }

    free(buf);

    return 0;
}


int
al_llm_report_print(const al_llm_report_t *rep, FILE *out, int json)
{
    size_t                  i, len, width;
    char                    key[4 * AL_LLM_REPORT_KEY_MAX + 1];
    char                    buf[AL_LLM_REPORT_OUT_MAX];
    al_llm_out_t            o;
    const char             *by, *head;
    al_llm_report_group_t  *sorted;

    static const char  *names[] = { "total", "client", "model", "day" };

    by = names[rep->by];

    sorted = NULL;

    if (rep->ngroups) {
        sorted = malloc(rep->ngroups * sizeof(al_llm_report_group_t));
        if (sorted == NULL) {
            return -1;
        }

        memcpy(sorted, rep->groups,
               rep->ngroups * sizeof(al_llm_report_group_t));
        qsort(sorted, rep->ngroups, sizeof(al_llm_report_group_t),
              al_llm_report_cmp);
    }

    if (json) {
        fprintf(out, "{\"by\":\"%s\",\"groups\":[", by);

        for (i = 0; i < rep->ngroups + (rep->other != NULL); i++) {
            al_llm_out_init(&o, buf, sizeof(buf));
            al_llm_out_cstr(&o, i ? "," : "");
            al_llm_report_group_json(&o, i < rep->ngroups ? &sorted[i]
                                                          : rep->other, 1);
            fwrite(buf, 1, o.len < sizeof(buf) ? o.len : sizeof(buf) - 1,
                   out);
        }

        al_llm_out_init(&o, buf, sizeof(buf));
        al_llm_out_cstr(&o, "],\"total\":");
        al_llm_report_group_json(&o, &rep->all, 0);
        fwrite(buf, 1, o.len < sizeof(buf) ? o.len : sizeof(buf) - 1, out);

        fprintf(out, ",\"lines\":{\"read\":%llu,\"counted\":%llu,"
                "\"blank\":%llu,\"skipped\":%llu,\"first_skipped\":[",
                (unsigned long long) rep->lines,
                (unsigned long long) rep->counted,
                (unsigned long long) rep->blank,
                (unsigned long long) rep->skipped);

        for (i = 0; i < AL_LLM_REPORT_BAD_KEPT && i < rep->skipped; i++) {
            fprintf(out, "%s{\"line\":%llu,\"reason\":", i ? "," : "",
                    (unsigned long long) rep->bad[i].line);
            al_llm_out_init(&o, buf, sizeof(buf));
            al_llm_out_json(&o, rep->bad[i].reason,
                            strlen(rep->bad[i].reason));
            fprintf(out, "%s}", buf);
        }

        fprintf(out, "]}}\n");

        free(sorted);

        return ferror(out) ? -1 : 0;
    }

    head = (rep->by == AL_LLM_REPORT_BY_CLIENT) ? "CLIENT"
           : (rep->by == AL_LLM_REPORT_BY_MODEL) ? "MODEL"
           : (rep->by == AL_LLM_REPORT_BY_DAY) ? "DAY (UTC)" : "";

    width = strlen(head) > 7 ? strlen(head) : 7;

    for (i = 0; i < rep->ngroups; i++) {
        len = al_llm_report_shown(key, sizeof(key), &sorted[i]);
        if (len > width) {
            width = len;
        }
    }

    /*
     * Names as al_shown() shows them, as the rest of airlockctl does:
     * printable ASCII, any other byte as \xHH (a terminal acts on
     * none), a backslash as \\ (no two names are shown alike).
     * The columns stay in view; a longer name is shown whole all the
     * same, its row's columns further right: two names alike in their
     * first 40 bytes are two rows told apart.
     */

    if (width > 40) {
        width = 40;
    }

    fprintf(out, "%-*s %10s %8s %12s %12s %12s %12s %16s %8s\n",
            (int) width, head, "REQUESTS", "ERRORS", "PROMPT", "CACHED",
            "COMPLETION", "TOTAL", "COST_USD", "UNPRICED");

    for (i = 0; i < rep->ngroups; i++) {
        (void) al_llm_report_shown(key, sizeof(key), &sorted[i]);
        al_llm_report_group_text(out, &sorted[i], key, width);
    }

    if (rep->other != NULL) {
        al_llm_report_group_text(out, rep->other, "(other)", width);
    }

    al_llm_report_group_text(out, &rep->all, "total", width);

    if (rep->all.nstatus || rep->all.status_other) {
        fprintf(out, "\nstatus:");
        for (i = 0; i < rep->all.nstatus; i++) {
            fprintf(out, "%s %u: %llu", i ? "," : "",
                    rep->all.status[i].status,
                    (unsigned long long) rep->all.status[i].count);
        }
        if (rep->all.status_other) {
            fprintf(out, "%s other: %llu", rep->all.nstatus ? "," : "",
                    (unsigned long long) rep->all.status_other);
        }
        fprintf(out, "\n");
    }

    if (rep->all.over) {
        fprintf(out, "\noverflow: a sum over 18446744073709551615 (tokens, "
                "or whole dollars) is not shown\n");
    }

    fprintf(out, "\nlines: %llu read, %llu counted, %llu skipped\n",
            (unsigned long long) rep->lines,
            (unsigned long long) rep->counted,
            (unsigned long long) rep->skipped);

    for (i = 0; i < AL_LLM_REPORT_BAD_KEPT && i < rep->skipped; i++) {
        fprintf(out, "  line %llu: %s\n",
                (unsigned long long) rep->bad[i].line, rep->bad[i].reason);
    }

    if (rep->skipped > AL_LLM_REPORT_BAD_KEPT) {
        fprintf(out, "  and %llu more\n", (unsigned long long)
                (rep->skipped - AL_LLM_REPORT_BAD_KEPT));
    }

    free(sorted);

    return ferror(out) ? -1 : 0;
}


static int
al_llm_report_bad(al_llm_report_t *rep, const char *reason)
{
    al_llm_report_bad_t  *b;

    if (rep->skipped < AL_LLM_REPORT_BAD_KEPT) {
        b = &rep->bad[rep->skipped];
        b->line = rep->lines;
        snprintf(b->reason, sizeof(b->reason), "%s", reason);
    }

    rep->skipped++;

    return -1;
}


/*
 * The compression whose magic number starts the file, or NULL.  A usage
 * line starts with '{': a log that starts with one of these is none.
 */

static const al_llm_report_packed_t *
al_llm_report_packed(const char *buf, size_t len)
{
    size_t  i;

    static const al_llm_report_packed_t  packed[] = {
        { "\x1f\x8b", 2, 0, "gzip", "zcat" },
        { "\xfd" "7zXZ\0", 6, 0, "xz", "xzcat" },
        { "\x28\xb5\x2f\xfd", 4, 0, "zstd", "zstdcat" },
        { "BZh", 3, 1, "bzip2", "bzcat" }       /* then the block size */
    };

    for (i = 0; i < sizeof(packed) / sizeof(packed[0]); i++) {
        if (len >= packed[i].len + packed[i].digit
            && memcmp(buf, packed[i].magic, packed[i].len) == 0
            && (packed[i].digit == 0
                || (buf[packed[i].len] >= '1' && buf[packed[i].len] <= '9')))
        {
            return &packed[i];
        }
    }

    return NULL;
}


/*
 * Why a line is not JSON, in words that fit the bad line's reason: a
 * constant (jansson's own text quotes the line, which may hold anything
 * a terminal acts on).  A line that ends too soon, in a string or
 * after a token, looks cut short; one past 64 bits or not UTF-8 does not.
 */

static const char *
al_llm_report_why(const json_error_t *jerr, size_t len)
{
    switch (json_error_code(jerr)) {

    case json_error_premature_end_of_input:
        return "not JSON (cut short?)";

    case json_error_invalid_syntax:
        return (jerr->position >= 0 && (size_t) jerr->position >= len)
               ? "not JSON (cut short?)" : "not JSON";

    case json_error_invalid_utf8:
        return "not JSON: not UTF-8";

    case json_error_numeric_overflow:
        return "not JSON: a number out of range";

    case json_error_null_character:
    case json_error_null_byte_in_key:
        return "not JSON: a NUL character";

    case json_error_duplicate_key:
        return "not JSON: a member given twice";

    case json_error_stack_overflow:
        return "not JSON: nested too deep";

    default:
        return "not JSON";
    }
}


/*
 * A time as the gateway writes it, "2024-07-03T09:46:40.123Z": a UTC
 * date that exists, a time of day, a fraction of a second or none, "Z".
 * The first 10 bytes are the line's day (--by day).  Returns 0 or -1.
 */

static int
al_llm_report_time(const char *s, size_t len)
{
    size_t    i;
    unsigned  year, month, day, days;

    static const unsigned  mdays[] = {
        31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
    };

    if (len < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T'
        || s[13] != ':' || s[16] != ':' || s[len - 1] != 'Z')
    {
        return -1;
    }

    for (i = 0; i < 19; i++) {
        if (i != 4 && i != 7 && i != 10 && i != 13 && i != 16
            && (s[i] < '0' || s[i] > '9'))
        {
            return -1;
        }
    }

    if (len > 20) {
        if (s[19] != '.' || len == 21) {
            return -1;
        }

        for (i = 20; i < len - 1; i++) {
            if (s[i] < '0' || s[i] > '9') {
                return -1;
            }
        }
    }

    year = al_llm_report_2digits(s) * 100 + al_llm_report_2digits(s + 2);
    month = al_llm_report_2digits(s + 5);
    day = al_llm_report_2digits(s + 8);

    if (month < 1 || month > 12) {
        return -1;
    }

    days = mdays[month - 1];

    if (month == 2 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0))
    {
        days = 29;
    }

    if (day < 1 || day > days || al_llm_report_2digits(s + 11) > 23
        || al_llm_report_2digits(s + 14) > 59
        || al_llm_report_2digits(s + 17) > 59)
    {
        return -1;
    }

    return 0;
}


/* two decimal digits, checked already */

static unsigned
al_llm_report_2digits(const char *s)
{
    return (unsigned) (s[0] - '0') * 10 + (unsigned) (s[1] - '0');
}


/* a non-negative integer member; absent is 0 */

static int
al_llm_report_u64(const json_t *obj, const char *key, uint64_t *out)
{
    json_t  *v;

    v = json_object_get(obj, key);

    if (v == NULL) {
        *out = 0;
        return 0;
    }

    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        return -1;
    }

    *out = (uint64_t) json_integer_value(v);

    return 0;
}


/*
 * The cost from its text: the number after the last "cost_usd" key of
 * the line (the gateway writes it last; a string cannot hold the key's
 * quotes unescaped), when it is the line's own cost_usd: the same amount
 * as the parsed value, not a "cost_usd" of an object nested after it.  A
 * number in another form (an exponent) is taken from its double, rounded
 * to the picodollar.
 */

static int
al_llm_report_cost(const json_t *v, const char *line, size_t len,
    uint64_t *out)
{
    double       d, t;
    size_t       n;
    uint64_t     pico;
    const char  *p, *last, *end;

    if (!json_is_number(v)) {
        return -1;
    }

    d = json_number_value(v);

    last = NULL;
    end = line + len;

    for (p = line; p != NULL && p < end; p++) {
        p = memmem(p, end - p, "\"cost_usd\"", 10);
        if (p == NULL) {
            break;
        }
        last = p;
    }

    if (last != NULL) {
        p = last + 10;

        while (p < end && (*p == ' ' || *p == '\t' || *p == ':')) {
            p++;
        }

        for (n = 0; p + n < end && ((p[n] >= '0' && p[n] <= '9')
                                    || p[n] == '.');
             n++)
        {
            /* void */
        }

        if (n > 0 && (p + n == end || p[n] == ',' || p[n] == '}'
                      || p[n] == ' ')
            && al_llm_decimal_parse(p, n, 12, UINT64_MAX, &pico) == 0)
        {
            /* a double holds the text to 15 digits, at least */

            t = (double) pico / 1e12;

            if ((t > d ? t - d : d - t) <= d * 1e-12 + 1e-12) {
                *out = pico;
                return 0;
            }
        }
    }

    if (!(d >= 0) || d > 1e7) {
        return -1;
    }

    /*
     * Up to 1e19 picodollars: past what llround()'s long long holds
     * (from $9223372.04), within a uint64_t; rounded half up
     */

    *out = (uint64_t) (d * 1e12 + 0.5);

    return 0;
}


static al_llm_report_group_t *
al_llm_report_group(al_llm_report_t *rep, const char *key, size_t len)
{
    size_t                  k;
    uint32_t                pos;
    al_llm_report_group_t  *g;

    if (len > AL_LLM_REPORT_KEY_MAX) {
        len = AL_LLM_REPORT_KEY_MAX;

        /*
         * Cut before the character the limit falls in, not inside it:
         * the JSON output has a name of whole characters (the names
         * are UTF-8, as jansson reads them), where a lead byte left
         * alone came out as \u00XX, a character the name does not have
         */

        while (len > 0 && ((unsigned char) key[len] & 0xc0) == 0x80) {
            len--;
        }
    }

    if (rep->index != NULL) {
        for (k = al_fnv1a(key, len) & rep->mask;
             (pos = rep->index[k]) != 0;
             k = (k + 1) & rep->mask)
        {
            g = &rep->groups[pos - 1];
            if (g->key_len == len && memcmp(g->key, key, len) == 0) {
                return g;
            }
        }
    }

    if (rep->ngroups >= AL_LLM_REPORT_GROUPS_MAX) {
        if (rep->other == NULL) {
            rep->other = calloc(1, sizeof(al_llm_report_group_t));
        }
        return rep->other;
    }

    if (rep->ngroups == rep->cap || 2 * (rep->ngroups + 1) > rep->mask) {
        if (al_llm_report_grow(rep) != 0) {
            return NULL;
        }
    }

    g = &rep->groups[rep->ngroups];
    memset(g, 0, sizeof(*g));

    g->key = malloc(len + 1);
    if (g->key == NULL) {
        return NULL;
    }

    memcpy(g->key, key, len);
    g->key[len] = '\0';
    g->key_len = len;

    rep->ngroups++;

    for (k = al_fnv1a(key, len) & rep->mask; rep->index[k] != 0;
         k = (k + 1) & rep->mask)
    {
        /* void */
    }

    rep->index[k] = (uint32_t) rep->ngroups;

    return g;
}


/* doubles the groups and the index, and indexes again */

static int
al_llm_report_grow(al_llm_report_t *rep)
{
    size_t                  i, k, cap, slots;
    uint32_t               *index;
    al_llm_report_group_t  *groups;

    cap = rep->cap ? rep->cap * 2 : 64;

    if (cap > rep->cap && rep->ngroups == rep->cap) {
        groups = realloc(rep->groups, cap * sizeof(al_llm_report_group_t));
        if (groups == NULL) {
            return -1;
        }
        rep->groups = groups;
        rep->cap = cap;
    }

    slots = 4 * rep->cap;

    index = calloc(slots, sizeof(uint32_t));
    if (index == NULL) {
        return -1;
    }

    for (i = 0; i < rep->ngroups; i++) {
        for (k = al_fnv1a(rep->groups[i].key,
                                    rep->groups[i].key_len) & (slots - 1);
             index[k] != 0;
             k = (k + 1) & (slots - 1))
        {
            /* void */
        }
        index[k] = (uint32_t) (i + 1);
    }

    free(rep->index);
    rep->index = index;
    rep->mask = slots - 1;

    return 0;
}


static void
al_llm_report_add(al_llm_report_group_t *g, unsigned status,
    const uint64_t *tok, int priced, uint64_t cost)
{
    size_t  i;

    g->requests++;
    g->errors += (status < 200 || status > 299);
    al_llm_report_sum(&g->prompt, tok[0], &g->over,
                      AL_LLM_REPORT_OVER_PROMPT);
    al_llm_report_sum(&g->completion, tok[1], &g->over,
                      AL_LLM_REPORT_OVER_COMPLETION);
    al_llm_report_sum(&g->cached, tok[2], &g->over,
                      AL_LLM_REPORT_OVER_CACHED);
    al_llm_report_sum(&g->total, tok[3], &g->over, AL_LLM_REPORT_OVER_TOTAL);

    if (priced) {
        /* the picodollars stay under a dollar, the rest carries */
        g->cost += cost % AL_LLM_USD;
        al_llm_report_sum(&g->cost_usd,
                          cost / AL_LLM_USD + g->cost / AL_LLM_USD,
                          &g->over, AL_LLM_REPORT_OVER_COST);
        g->cost %= AL_LLM_USD;

    } else {
        g->unpriced++;
    }

    for (i = 0; i < g->nstatus; i++) {
        if (g->status[i].status == status) {
            g->status[i].count++;
            return;
        }
    }

    if (g->nstatus == AL_LLM_REPORT_STATUS_MAX) {
        g->status_other++;
        return;
    }

    /* kept in order: a handful at most */

    for (i = g->nstatus; i > 0 && g->status[i - 1].status > status; i--) {
        g->status[i] = g->status[i - 1];
    }

    g->status[i].status = status;
    g->status[i].count = 1;
    g->nstatus++;
}


static int
al_llm_report_cmp(const void *a, const void *b)
{
    const al_llm_report_group_t  *x = a;
    const al_llm_report_group_t  *y = b;
    int                           rc;

    rc = memcmp(x->key, y->key, x->key_len < y->key_len ? x->key_len
                                                        : y->key_len);
    if (rc != 0) {
        return rc;
    }

    return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}


/* the cost of a group in dollars, exact, as al_llm_usd_format() writes */

static void
al_llm_report_usd(const al_llm_report_group_t *g, char *buf, size_t size)
{
    char  frac[AL_LLM_USD_MAX];

    /* "0" or "0.000241": the whole dollars go in place of the "0" (the
       fraction is at most 13 bytes, '.' and 12 digits) */

    (void) al_llm_usd_format(g->cost, frac, sizeof(frac));

    if (g->cost_usd == 0) {
        snprintf(buf, size, "%s", frac);

    } else {
        snprintf(buf, size, "%llu%.13s", (unsigned long long) g->cost_usd,
                 frac + 1);
    }
}


/* a JSON member: a count, or null when it did not fit */

static void
al_llm_report_json_u64(al_llm_out_t *o, const char *name, uint64_t v,
    int over)
{
    al_llm_out_cstr(o, name);

    if (over) {
        al_llm_out_cstr(o, "null");

    } else {
        al_llm_out_u64(o, v);
    }
}


/* a table cell: a count, or "overflow" when it did not fit */

static void
al_llm_report_text_u64(char *buf, size_t size, uint64_t v, int over)
{
    if (over) {
        snprintf(buf, size, "overflow");

    } else {
        snprintf(buf, size, "%llu", (unsigned long long) v);
    }
}


static void
al_llm_report_group_json(al_llm_out_t *o, const al_llm_report_group_t *g,
    int with_key)
{
    size_t  i;
    char    usd[AL_LLM_REPORT_USD_MAX];
    char    num[32];

    al_llm_out_cstr(o, "{");

    if (with_key) {
        al_llm_out_cstr(o, "\"key\":");
        if (g->key != NULL) {
            al_llm_out_json(o, g->key, g->key_len);
        } else {
            /* no name: a group may be named "(other)" */
            al_llm_out_cstr(o, "null,\"other\":true");
        }
        al_llm_out_cstr(o, ",");
    }

    al_llm_out_cstr(o, "\"requests\":");
    al_llm_out_u64(o, g->requests);
    al_llm_out_cstr(o, ",\"errors\":");
    al_llm_out_u64(o, g->errors);
    al_llm_report_json_u64(o, ",\"prompt_tokens\":", g->prompt,
                           g->over & AL_LLM_REPORT_OVER_PROMPT);
    al_llm_report_json_u64(o, ",\"cached_tokens\":", g->cached,
                           g->over & AL_LLM_REPORT_OVER_CACHED);
    al_llm_report_json_u64(o, ",\"completion_tokens\":", g->completion,
                           g->over & AL_LLM_REPORT_OVER_COMPLETION);
    al_llm_report_json_u64(o, ",\"total_tokens\":", g->total,
                           g->over & AL_LLM_REPORT_OVER_TOTAL);
    al_llm_out_cstr(o, ",\"cost_usd\":");
    al_llm_report_usd(g, usd, sizeof(usd));
    al_llm_out_cstr(o, (g->over & AL_LLM_REPORT_OVER_COST) ? "null" : usd);
    al_llm_out_cstr(o, ",\"unpriced_requests\":");
    al_llm_out_u64(o, g->unpriced);
    al_llm_out_cstr(o, ",\"status\":{");

    for (i = 0; i < g->nstatus; i++) {
        snprintf(num, sizeof(num), "%s\"%u\":", i ? "," : "",
                 g->status[i].status);
        al_llm_out_cstr(o, num);
        al_llm_out_u64(o, g->status[i].count);
    }

    if (g->status_other) {
        al_llm_out_cstr(o, g->nstatus ? ",\"other\":" : "\"other\":");
        al_llm_out_u64(o, g->status_other);
    }

    al_llm_out_cstr(o, "}}");
}


/*
 * A group's name as the table shows it (al_shown()).  A name that would
 * read as a summary row, its first word "total" or "(other)" (a client
 * may be named "total"), has that word's first byte shown as \xHH, as
 * al_shown() shows the bytes it does not print: the summary rows are
 * told apart by their first column, by a reader and by awk alike.  A
 * name that is the text "\x74otal" is shown "\\x74otal".
 */

static size_t
al_llm_report_shown(char *buf, size_t size, const al_llm_report_group_t *g)
{
    size_t          len, a, n;
    unsigned char   c;

    static const char  hex[] = "0123456789abcdef";

    len = al_shown(buf, size, g->key, g->key_len);

    for (a = 0; a < len && buf[a] == ' '; a++) {
        /* void */
    }

    for (n = a; n < len && buf[n] != ' '; n++) {
        /* void */
    }

    n -= a;

    if (!((n == 5 && memcmp(buf + a, "total", 5) == 0)
          || (n == 7 && memcmp(buf + a, "(other)", 7) == 0))
        || len + 4 > size)
    {
        return len;
    }

    c = (unsigned char) buf[a];

    memmove(buf + a + 4, buf + a + 1, len - a);
    buf[a] = '\\';
    buf[a + 1] = 'x';
    buf[a + 2] = hex[c >> 4];
    buf[a + 3] = hex[c & 0xf];

    return len + 3;
}


static void
al_llm_report_group_text(FILE *out, const al_llm_report_group_t *g,
    const char *key, size_t width)
{
    char  usd[AL_LLM_REPORT_USD_MAX];
    char  prompt[24], cached[24], completion[24], total[24];

    if (g->unpriced == g->requests) {
        snprintf(usd, sizeof(usd), "-");

    } else if (g->over & AL_LLM_REPORT_OVER_COST) {
        snprintf(usd, sizeof(usd), "overflow");

    } else {
        al_llm_report_usd(g, usd, sizeof(usd));
    }

    al_llm_report_text_u64(prompt, sizeof(prompt), g->prompt,
                           g->over & AL_LLM_REPORT_OVER_PROMPT);
    al_llm_report_text_u64(cached, sizeof(cached), g->cached,
                           g->over & AL_LLM_REPORT_OVER_CACHED);
    al_llm_report_text_u64(completion, sizeof(completion), g->completion,
                           g->over & AL_LLM_REPORT_OVER_COMPLETION);
    al_llm_report_text_u64(total, sizeof(total), g->total,
                           g->over & AL_LLM_REPORT_OVER_TOTAL);

    fprintf(out, "%-*s %10llu %8llu %12s %12s %12s %12s %16s %8llu\n",
            (int) width, key,
            (unsigned long long) g->requests,
            (unsigned long long) g->errors, prompt, cached, completion,
            total, usd, (unsigned long long) g->unpriced);
}


/* adds v to *sum; past UINT64_MAX the sum stays there, marked in *over */

static void
al_llm_report_sum(uint64_t *sum, uint64_t v, unsigned *over, unsigned bit)
{
    if (*sum > UINT64_MAX - v) {
        *sum = UINT64_MAX;
        *over |= bit;
        return;
    }

    *sum += v;
}
