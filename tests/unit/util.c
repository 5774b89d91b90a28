/*
 * Unit tests for the small helpers of al_util.c the modules use on every
 * request: al_hex64() against printf's %016llx, al_fold_plain() eight
 * bytes at a time against the byte it is about; and al_reason_find() and
 * al_denial_reason(), which tell the proxy's denials from an upstream's
 * 403; al_proc_started(), against a child whose pid is then free;
 * al_shown(), the \xHH form airlockctl shows policy text in (a
 * backslash as \\);
 * al_fold_letters[], every entry through al_folds_to() and al_fold_plain(),
 * and no other code point folded to ASCII.
 */

#include <inttypes.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "airlock.h"
#include "al_internal.h"
#include "tap.h"


static void test_hex64(void);
static void test_fold_plain(void);
static void test_reason_find(void);
static void test_denial_reason(void);
static void test_proc_started(void);
static void test_shown(void);
static void test_fold_letters(void);
static size_t utf8_put(unsigned char *p, uint32_t code);


int
main(void)
{
    test_hex64();
    test_fold_plain();
    test_reason_find();
    test_denial_reason();
    test_proc_started();
    test_shown();
    test_fold_letters();

    return tap_done();
}


static void
test_hex64(void)
{
    char      got[17], want[17];
    size_t    i, bad;
    uint64_t  v, x;

    static const uint64_t  edges[] = {
        0, 1, 9, 10, 15, 16, 0x99, 0xaa, 0xff, UINT64_C(0x0123456789abcdef),
        UINT64_C(0xfedcba9876543210), UINT64_C(0x8000000000000000),
        UINT64_C(0x00000000ffffffff), UINT64_C(0xffffffff00000000),
        UINT64_MAX
    };

    got[16] = '\0';
    bad = 0;

    for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        al_hex64(got, edges[i]);
        snprintf(want, sizeof(want), "%016" PRIx64, edges[i]);

        if (strcmp(got, want) != 0) {
            tap_diag("got ", got);
            tap_diag("want ", want);
            bad++;
        }
    }

    tap_ok(bad == 0, "al_hex64: the edges as printf writes them");

    /* every nibble value at every position */

    bad = 0;

    for (i = 0; i < 16 * 16; i++) {
        v = (uint64_t) (i % 16) << (4 * (i / 16));
        al_hex64(got, v);
        snprintf(want, sizeof(want), "%016" PRIx64, v);
        bad += (strcmp(got, want) != 0);
    }

    tap_ok(bad == 0, "al_hex64: each digit at each place");

    /* a million values of a xorshift generator */

    bad = 0;
    x = UINT64_C(0x9e3779b97f4a7c15);

    for (i = 0; i < 1000000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        al_hex64(got, x);
        snprintf(want, sizeof(want), "%016" PRIx64, x);
        bad += (strcmp(got, want) != 0);
    }

    tap_ok(bad == 0, "al_hex64: a million values as printf writes them");
}


/*
 * Every byte value at every place of keys of 1 to 24 bytes of 'a' (and
 * of '~', above the capitals): plain unless it is an ASCII capital or a
 * lead byte of the letters Go folds; a byte of 0x80 or more before a
 * capital too.
 */

static void
test_fold_plain(void)
{
    int       bad, want;
    char      key[24];
    size_t    len, at, k;
    unsigned  c, fill;

    static const unsigned char  fills[] = { 'a', '~' };

    bad = 0;

    for (k = 0; k < sizeof(fills); k++) {
        fill = fills[k];

        for (len = 1; len <= sizeof(key); len++) {
            for (at = 0; at < len; at++) {
                for (c = 0; c < 256; c++) {
                    memset(key, (int) fill, len);
                    key[at] = (char) c;

                    want = !((c >= 'A' && c <= 'Z') || c == 0xc4
                             || c == 0xc5 || c == 0xe2);

                    bad += (al_fold_plain(key, len) != want);

                    if (at + 1 < len) {
                        /* a high byte first, then a capital after it */
                        key[len - 1] = 'Q';
                        bad += (al_fold_plain(key, len) != 0);
                    }
                }
            }
        }
    }

    tap_ok(bad == 0, "al_fold_plain: each byte at each place");
}


static void
test_reason_find(void)
{
    unsigned  r, bad;

    bad = 0;

    for (r = AL_REASON_NONE + 1; r < AL_REASON_MAX; r++) {
        if (al_reason_find(al_reason_name((al_reason_t) r)) != r) {
            tap_diag("not found: ", al_reason_name((al_reason_t) r));
            bad++;
        }
    }

    tap_ok(bad == 0, "al_reason_find: every reason by its name");
    tap_ok(al_reason_find("none") == AL_REASON_NONE
           && al_reason_find("") == AL_REASON_NONE
           && al_reason_find("No_route") == AL_REASON_NONE
           && al_reason_find("no_route ") == AL_REASON_NONE
           && al_reason_find("forbidden by the service") == AL_REASON_NONE,
           "al_reason_find: none for any other name, \"none\" included");
}


static void
test_denial_reason(void)
{
    tap_ok(al_denial_reason("no_route", "no_route") == AL_REASON_NO_ROUTE
           && al_denial_reason("query", "query") == AL_REASON_QUERY,
           "al_denial_reason: the marker and the body name one reason");
    tap_ok(al_denial_reason(NULL, "no_route") == AL_REASON_NONE,
           "al_denial_reason: none without the marker");
    tap_ok(al_denial_reason("no_route", NULL) == AL_REASON_NONE
           && al_denial_reason("no_route", "query") == AL_REASON_NONE
           && al_denial_reason("no_route ", "no_route") == AL_REASON_NONE
           && al_denial_reason("No_route", "No_route") == AL_REASON_NONE
           && al_denial_reason("", "") == AL_REASON_NONE
           && al_denial_reason("none", "none") == AL_REASON_NONE,
           "al_denial_reason: none when they differ or name no reason");
}


static void
test_proc_started(void)
{
    int       st;
    pid_t     child;
    uint64_t  self, mine, kid;

    self = al_proc_started(getpid(), 1);
    mine = al_proc_started(getpid(), 0);

    tap_ok(self != 0 && self == mine,
           "al_proc_started: this process, by /proc/self and by its pid");

    /* another pid than the file's field 1: another pid namespace's /proc */
    tap_ok(al_proc_started(getpid() + 1, 1) == 0,
           "al_proc_started: 0 when field 1 is not the pid");

    child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }

    kid = al_proc_started(child, 0);
    (void) kill(child, SIGKILL);
    (void) waitpid(child, &st, 0);

    tap_ok(kid != 0 && kid >= self,
           "al_proc_started: a child started at or after its parent");
    tap_ok(al_proc_started(child, 0) == 0,
           "al_proc_started: 0 for a pid no process has");
}


static void
test_shown(void)
{
    char    out[64];
    size_t  n;

    n = al_shown(out, sizeof(out), "a\r\x1b[2K\xe2\x80\xae~\x7f", 11);
    tap_is_str(out, "a\\x0d\\x1b[2K\\xe2\\x80\\xae~\\x7f",
               "al_shown: CR, ESC, UTF-8 and DEL as \\xHH, ASCII as it is");
    tap_is_int((long) n, (long) strlen(out), "al_shown: returns the length");

    n = al_shown(out, 5, "ab\x01", 3);
    tap_is_str(out, "ab", "al_shown: an escape that does not fit is left "
               "out whole");
    tap_is_int((long) n, 2, "al_shown: and the length says so");

    n = al_shown(out, 7, "ab\x01" "c", 4);
    tap_is_str(out, "ab\\x01", "al_shown: cut to the size with its NUL");
    tap_is_int((long) n, 6, "al_shown: six bytes and the NUL");

    n = al_shown(out, 8, "a\0b", 3);
    tap_is_str(out, "a\\x00b", "al_shown: a NUL inside is shown");

    n = al_shown(out, sizeof(out), "a\\x01\x01\\", 7);
    tap_is_str(out, "a\\\\x01\\x01\\\\",
               "al_shown: a backslash as \\\\, the text \\x01 not the byte");
    tap_is_int((long) n, 12, "al_shown: and counted");

    n = al_shown(out, 3, "a\\", 2);
    tap_is_str(out, "a", "al_shown: a \\\\ that does not fit is left out "
               "whole");

    n = al_shown(out, 4, "a\\", 2);
    tap_is_str(out, "a\\\\", "al_shown: one that fits is shown");
}


/*
 * Each entry of al_fold_letters[] as JSON keys hold it, raw UTF-8: read
 * back as its code point, folded to its letter by al_folds_to() (in a
 * name of either case, between other letters), to no other letter, and
 * not plain.  Every other code point outside ASCII folds to no ASCII
 * letter: to what "é" folds to.
 */

static void
test_fold_letters(void)
{
    char            key[8], name[4];
    size_t          k, n, bad, folded;
    uint32_t        code, got;
    unsigned char   u[4];
    unsigned        letter;

    bad = 0;

    for (k = 0; k < al_nfold_letters; k++) {
        code = al_fold_letters[k].code;
        letter = al_fold_letters[k].letter;
        n = utf8_put(u, code);

        bad += (al_utf8_read(u, n, &got) != n || got != code);
        bad += (al_utf8_read(u, n - 1, &got) != 0);
        bad += (al_fold_letter(code) != letter);
        bad += (al_fold_lead(u[0]) != 1);
        bad += (al_fold_plain((char *) u, n) != 0);

        key[0] = 'x';
        memcpy(key + 1, u, n);
        key[n + 1] = 'Y';

        name[0] = 'x';
        name[1] = (char) letter;
        name[2] = 'y';
        bad += (al_folds_to(key, n + 2, name, 3) != 1);

        name[1] = (char) (letter & ~0x20);
        bad += (al_folds_to(key, n + 2, name, 3) != 1);

        name[1] = (char) (letter == 'z' ? 'a' : letter + 1);
        bad += (al_folds_to(key, n + 2, name, 3) != 0);
    }

    tap_ok(bad == 0, "al_fold_letters: each one read, folded to its letter "
           "by al_folds_to(), not plain");

    bad = 0;
    folded = 0;

    for (code = 0x80; code <= 0x10ffff; code++) {
        if (code >= 0xd800 && code <= 0xdfff) {
            continue;
        }

        n = utf8_put(u, code);

        if (al_utf8_read(u, n, &got) != n || got != code) {
            bad++;
            continue;
        }

        if (al_fold_letter(code) != 0) {
            folded++;
            continue;
        }

        bad += (al_folds_to((char *) u, n, "\xc3\xa9", 2) != 1);
    }

    tap_ok(bad == 0 && folded == al_nfold_letters,
           "al_fold_letters: no other code point folds to ASCII");

    /* overlong forms and surrogates are no character */

    bad = (al_utf8_read((const unsigned char *) "\xc0\xaf", 2, &got) != 0)
          + (al_utf8_read((const unsigned char *) "\xe0\x84\xb0", 3, &got)
             != 0)
          + (al_utf8_read((const unsigned char *) "\xed\xa0\x80", 3, &got)
             != 0)
          + (al_utf8_read((const unsigned char *) "\xf4\x90\x80\x80", 4,
                          &got) != 0);

    tap_ok(bad == 0, "al_utf8_read: no overlong form, surrogate, or code "
           "point past U+10FFFF");
}


static size_t
utf8_put(unsigned char *p, uint32_t code)
{
    if (code < 0x80) {
        p[0] = (unsigned char) code;
        return 1;
    }

    if (code < 0x800) {
        p[0] = (unsigned char) (0xc0 | code >> 6);
        p[1] = (unsigned char) (0x80 | (code & 0x3f));
        return 2;
    }

    if (code < 0x10000) {
        p[0] = (unsigned char) (0xe0 | code >> 12);
        p[1] = (unsigned char) (0x80 | (code >> 6 & 0x3f));
        p[2] = (unsigned char) (0x80 | (code & 0x3f));
        return 3;
    }

    p[0] = (unsigned char) (0xf0 | code >> 18);
    p[1] = (unsigned char) (0x80 | (code >> 12 & 0x3f));
    p[2] = (unsigned char) (0x80 | (code >> 6 & 0x3f));
    p[3] = (unsigned char) (0x80 | (code & 0x3f));

    return 4;
}
