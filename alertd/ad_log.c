/*
 * Logging and time.
 *
 * One line per event on stderr.  Under systemd (JOURNAL_STREAM names our
 * stderr) each line starts with a "<N>" syslog priority, which journald
 * strips and files as the priority; elsewhere it starts with the time and
 * the level in words.  Nothing secret is ever passed in: URLs go through
 * ad_url_label() first, which drops userinfo, the path and the query.
 *
 * A failure that repeats for as long as it lasts (a save, tried again
 * every second on a full disk) is not a line a second: ad_fail() says
 * the first, then one with the count of those since at most every
 * AD_FAIL_TELL ms, twice that, ... up to AD_FAIL_TELL_MAX, and at once
 * a failure of a cause (errno) not said yet since it began; the others
 * are debug lines (-v).  ad_fail_over() says when it works again, after
 * how many failures and how long.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alertd.h"


#define AD_LOG_LINE_MAX  2048
#define AD_BOOT_ID_PATH  "/proc/sys/kernel/random/boot_id"


static int ad_journal_stream(void);
static void ad_span(char *buf, size_t size, int64_t ms);
static int ad_digits(const char **p, int n, int *v);


static int   ad_log_verbose;
static int   ad_log_journald;
static int   ad_boot_id_read;
static char  ad_boot_id_text[AD_BOOT_ID_MAX + 1];


void
ad_log_init(int verbose)
{
    ad_log_verbose = verbose;
    ad_log_journald = ad_journal_stream();
}


/* JOURNAL_STREAM is "dev:ino" of the stream journald gave us */

static int
ad_journal_stream(void)
{
    const char          *s;
    struct stat          st;
    unsigned long long   dev, ino;

    s = getenv("JOURNAL_STREAM");
    if (s == NULL || sscanf(s, "%llu:%llu", &dev, &ino) != 2) {
        return 0;
    }

    if (fstat(STDERR_FILENO, &st) != 0) {
        return 0;
    }

    return (unsigned long long) st.st_dev == dev
           && (unsigned long long) st.st_ino == ino;
}


void
ad_log(int level, const char *fmt, ...)
{
    int          saved;
    size_t       n;
    va_list      ap;
    const char  *name;
    char         line[AD_LOG_LINE_MAX];
    char         now[AD_TIME_MAX];

    if (level == AD_LOG_DEBUG && !ad_log_verbose) {
        return;
    }

    saved = errno;

    switch (level) {
    case AD_LOG_ERR:
        name = "error";
        break;
    case AD_LOG_WARN:
        name = "warning";
        break;
    case AD_LOG_INFO:
        name = "info";
        break;
    default:
        name = "debug";
        break;
    }

    if (ad_log_journald) {
        n = (size_t) snprintf(line, sizeof(line), "<%d>", level);

    } else {
        ad_time_format(now, sizeof(now), ad_now_ms());
        n = (size_t) snprintf(line, sizeof(line), "%s %s[%ld] %s: ", now,
                              AD_NAME, (long) getpid(), name);
    }

    if (n < sizeof(line)) {
        va_start(ap, fmt);
        (void) vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        va_end(ap);
    }

    /*
     * One event, one line: no newline, and no other control byte, from
     * anywhere (a client name comes from the journal).
     */

    for (n = 0; line[n] != '\0'; n++) {
        if ((unsigned char) line[n] < 0x20 || line[n] == 0x7f) {
            line[n] = ' ';
        }
    }

    if (n + 1 < sizeof(line)) {
        line[n++] = '\n';
    } else {
        line[sizeof(line) - 2] = '\n';
        n = sizeof(line) - 1;
    }

    /* a single write keeps lines from interleaving */
    if (write(STDERR_FILENO, line, n) < 0) {
        /* nowhere left to say it */
    }

    errno = saved;
}


void
ad_fail(ad_fail_t *f, int level, const char *fmt, ...)
{
    int       saved;
    int64_t   now;
    uint64_t  cause;
    va_list   ap;
    char      what[AD_LOG_LINE_MAX];
    char      span[64];

    saved = errno;
    now = ad_mono_ms();

    va_start(ap, fmt);
    (void) vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);

    cause = UINT64_C(1) << (saved >= 0 && saved < 63 ? saved : 63);

    if (f->count++ == 0) {
        f->untold = 0;
        f->since_ms = now;
        f->told_ms = now;
        f->wait_ms = AD_FAIL_TELL;
        f->causes = cause;

        ad_log(level, "%s", what);

    } else if (now - f->told_ms < f->wait_ms && (f->causes & cause)) {
        f->untold++;

        ad_log(AD_LOG_DEBUG, "%s (failure %lld in a row)", what,
               (long long) f->count);

    } else {

        /* the interval is over, or a cause not said yet is said at once */

        ad_span(span, sizeof(span), now - f->since_ms);

        ad_log(level, "%s (still failing: %lld time(s) since the last "
               "line, %lld in a row in %s)", what, (long long) f->untold + 1,
               (long long) f->count, span);

        if (now - f->told_ms >= f->wait_ms) {
            f->wait_ms = (f->wait_ms < AD_FAIL_TELL_MAX / 2)
                         ? f->wait_ms * 2 : AD_FAIL_TELL_MAX;
        }

        f->untold = 0;
        f->told_ms = now;
        f->causes |= cause;
    }

    errno = saved;
}


void
ad_fail_over(ad_fail_t *f, const char *fmt, ...)
{
    int      saved;
    va_list  ap;
    char     what[AD_LOG_LINE_MAX];
    char     span[64];

    if (f->count == 0) {
        return;
    }

    saved = errno;

    va_start(ap, fmt);
    (void) vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);

    ad_span(span, sizeof(span), ad_mono_ms() - f->since_ms);

    ad_log(AD_LOG_INFO, "%s works again, after %lld failure(s) in %s (%lld "
           "since the last line)", what, (long long) f->count, span,
           (long long) f->untold);

    f->count = 0;
    f->untold = 0;

    errno = saved;
}


/* "850 ms", "42 s", "3 min 20 s", "5 h 2 min" */

static void
ad_span(char *buf, size_t size, int64_t ms)
{
    long long  s;

    s = (long long) (ms / 1000);

    if (s < 1) {
        (void) snprintf(buf, size, "%lld ms", (long long) (ms > 0 ? ms : 0));

    } else if (s < 120) {
        (void) snprintf(buf, size, "%lld s", s);

    } else if (s < 7200) {
        (void) snprintf(buf, size, "%lld min %lld s", s / 60, s % 60);

    } else {
        (void) snprintf(buf, size, "%lld h %lld min", s / 3600,
                        s / 60 % 60);
    }
}


void
ad_url_label(char *buf, size_t size, const char *url)
{
    size_t       n;
    uint32_t     h;
    const char  *scheme, *auth, *at, *end, *p;

    scheme = strstr(url, "://");
    auth = (scheme != NULL) ? scheme + 3 : url;

    end = auth + strcspn(auth, "/?#");
    at = memrchr(auth, '@', (size_t) (end - auth));
    if (at != NULL) {
        auth = at + 1;
    }

    n = (scheme != NULL) ? (size_t) (scheme + 3 - url) : 0;

    /*
     * The path, query and fragment may be the secret (a Slack or Teams
     * webhook's path is): in their place "/...#" and a short hash of
     * them, which tells two sinks on one host apart and gives nothing
     * away; no space, so that the label stays one word of a log line.
     */

    if (*end == '\0' || (end[0] == '/' && end[1] == '\0')) {
        (void) snprintf(buf, size, "%.*s%.*s%s", (int) n, url,
                        (int) (end - auth), auth, end);
        return;
    }

    h = 2166136261u;

    for (p = end; *p != '\0'; p++) {
        h = (h ^ (unsigned char) *p) * 16777619u;
    }

    (void) snprintf(buf, size, "%.*s%.*s/...#%06x", (int) n, url,
                    (int) (end - auth), auth, (unsigned) (h & 0xffffff));
}


int64_t
ad_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


int64_t
ad_mono_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


int64_t
ad_boot_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/*
 * The kernel's id of this boot, read once: a reading of the boot clock
 * saved by one alertd is compared with another's only if both are of
 * the same boot (the clock starts again at 0 with each).  "" when it
 * cannot be read: then nothing is compared.  --boot-id gives it
 * instead (ad_boot_id_set()), for a systemd unit whose /proc shows no
 * /proc/sys (ProcSubset=pid): its specifier %b is the same id.
 */

const char *
ad_boot_id(void)
{
    int      fd;
    char     buf[64];
    ssize_t  n;

    if (ad_boot_id_read) {
        return ad_boot_id_text;
    }

    ad_boot_id_read = 1;

    fd = open(AD_BOOT_ID_PATH, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        ad_log(AD_LOG_WARN, "cannot read %s: %s; a step of the wall clock "
               "while alertd is stopped is not told from the time that "
               "passed (--boot-id gives the boot id)", AD_BOOT_ID_PATH,
               strerror(errno));
        return ad_boot_id_text;
    }

    do {
        n = read(fd, buf, sizeof(buf) - 1);
    } while (n == -1 && errno == EINTR);

    (void) close(fd);

    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';

    if (ad_boot_id_set(buf) != 0) {
        ad_log(AD_LOG_WARN, "%s holds no boot id; a step of the wall clock "
               "while alertd is stopped is not told from the time that "
               "passed (--boot-id gives the boot id)", AD_BOOT_ID_PATH);
    }

    return ad_boot_id_text;
}


/*
 * A boot id as the kernel writes it (8-4-4-4-12 hex digits) or as
 * systemd's %b does (32, no dash), kept in the second form, lower case.
 * Returns 0, or -1 when s is neither.
 */

int
ad_boot_id_set(const char *s)
{
    size_t  n;
    char    id[AD_BOOT_ID_MAX + 1];

    n = 0;

    for ( /* void */ ; *s != '\0'; s++) {
        if (*s == '-' && (n == 8 || n == 12 || n == 16 || n == 20)) {
            continue;
        }

        if (n == 32
            || !((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')
                 || (*s >= 'A' && *s <= 'F')))
        {
            return -1;
        }

        id[n++] = (*s >= 'A' && *s <= 'F') ? (char) (*s - 'A' + 'a') : *s;
    }

    if (n != 32) {
        return -1;
    }

    memcpy(ad_boot_id_text, id, n);
    ad_boot_id_text[n] = '\0';
    ad_boot_id_read = 1;

    return 0;
}


/*
 * A saved "clock" member of o, {"boot":"<boot id>","off":<wall - boot
 * ms>} (an outbox entry's, the state's): 1 and *off when it is of this
 * boot; 0 when o has none or it is of another boot (or this boot's id is
 * unknown), which says nothing; -1 and why when it is no such object.
 */

int
ad_clock_read(const json_t *o, json_int_t *off, char *why, size_t whysize)
{
    json_t      *clock;
    const char  *boot;

    clock = json_object_get(o, "clock");

    if (clock == NULL) {
        return 0;
    }

    if (json_unpack(clock, "{s:s, s:I}", "boot", &boot, "off", off) != 0) {
        (void) snprintf(why, whysize, "\"clock\" is not a boot id and a "
                        "clock offset");
        return -1;
    }

    return (ad_boot_id()[0] != '\0' && strcmp(boot, ad_boot_id()) == 0);
}


static int
ad_digits(const char **p, int n, int *v)
{
    int  i;

    *v = 0;

    for (i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9') {
            return -1;
        }
        *v = *v * 10 + ((*p)[i] - '0');
    }

    *p += n;

    return 0;
}


/* RFC 3339: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM) */

int
ad_time_parse(const char *s, int64_t *ms)
{
    int          y, mo, d, h, mi, sec, frac, scale, oh, om, sign;
    time_t       t;
    struct tm    tm;
    const char  *p;

    p = s;

    if (ad_digits(&p, 4, &y) != 0 || *p++ != '-'
        || ad_digits(&p, 2, &mo) != 0 || *p++ != '-'
        || ad_digits(&p, 2, &d) != 0)
    {
        return -1;
    }

    if (*p != 'T' && *p != 't') {
        return -1;
    }

    p++;

    if (ad_digits(&p, 2, &h) != 0 || *p++ != ':'
        || ad_digits(&p, 2, &mi) != 0 || *p++ != ':'
        || ad_digits(&p, 2, &sec) != 0)
    {
        return -1;
    }

    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23
        || mi > 59 || sec > 60)
    {
        return -1;
    }

    frac = 0;

    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') {
            return -1;
        }

        for (scale = 100; *p >= '0' && *p <= '9'; p++, scale /= 10) {
            frac += (*p - '0') * scale;
        }
    }

    oh = 0;
    om = 0;
    sign = 0;

    if (*p == 'Z' || *p == 'z') {
        p++;

    } else if (*p == '+' || *p == '-') {
        sign = (*p == '-') ? -1 : 1;
        p++;
        if (ad_digits(&p, 2, &oh) != 0 || *p++ != ':'
            || ad_digits(&p, 2, &om) != 0 || oh > 23 || om > 59)
        {
            return -1;
        }

    } else {
        return -1;
    }

    if (*p != '\0') {
        return -1;
    }

    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;

    t = timegm(&tm);
    if (t == (time_t) -1) {
        return -1;
    }

    *ms = ((int64_t) t - (int64_t) sign * (oh * 3600 + om * 60)) * 1000
          + frac;

    return 0;
}


/*
 * Every time written is one ad_time_parse() (and Alertmanager) reads: a
 * four-digit year from 1970.  A journal time near either end, with an
 * offset or a repeat interval added, would be written as year 10000 or
 * with a negative millisecond field, and Alertmanager refuses the
 * whole alert; it is written as the nearest end of the range.
 */

void
ad_time_format(char *buf, size_t size, int64_t ms)
{
    time_t     t;
    struct tm  tm;

    if (ms < 0) {
        ms = 0;

    } else if (ms > AD_TIME_LAST_MS) {
        ms = AD_TIME_LAST_MS;
    }

    t = (time_t) (ms / 1000);

    if (gmtime_r(&t, &tm) == NULL) {
        (void) snprintf(buf, size, "1970-01-01T00:00:00.000Z");
        return;
    }

    (void) snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                    tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (ms % 1000));
}


int
ad_duration_parse(const char *s, int64_t *ms)
{
    char                *end;
    int64_t              unit;
    unsigned long long   v;

    if (*s < '0' || *s > '9') {
        return -1;
    }

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || v > 1000000000ULL) {
        return -1;
    }

    if (strcmp(end, "ms") == 0) {
        unit = 1;
    } else if (*end == '\0' || strcmp(end, "s") == 0) {
        unit = 1000;
    } else if (strcmp(end, "m") == 0) {
        unit = 60 * 1000;
    } else if (strcmp(end, "h") == 0) {
        unit = 3600 * 1000;
    } else {
        return -1;
    }

    *ms = (int64_t) v * unit;

    return 0;
}
