/*
 * Sealed secrets: key files, seal/unseal, guarded memory, base64.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "airlock.h"

#include "tap.h"


static char  dir[64];


static const char *
tmp(const char *name)
{
    static char  buf[4][256];
    static int   n;

    n = (n + 1) % 4;
    snprintf(buf[n], sizeof(buf[n]), "%s/%s", dir, name);

    return buf[n];
}


static int
write_file(const char *name, mode_t mode, const char *data)
{
    int     fd;
    size_t  len;

    fd = open(tmp(name), O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd == -1) {
        return -1;
    }

    len = strlen(data);
    if (write(fd, data, len) != (ssize_t) len) {
        close(fd);
        return -1;
    }

    fchmod(fd, mode);

    return close(fd);
}


static mode_t
file_mode(const char *name)
{
    struct stat  st;

    if (lstat(tmp(name), &st) == -1) {
        return (mode_t) -1;
    }

    return st.st_mode & 07777;
}


static int
has(const al_error_t *err, const char *s)
{
    if (strstr(err->msg, s) != NULL) {
        return 1;
    }

    printf("# error was: %s: %s\n", err->file, err->msg);

    return 0;
}


/* a sealed secret's decoded box, changed, encoded again */

static char *
reencode(const char *b64, size_t flip, size_t keep)
{
    char           *out;
    size_t          binlen, n;
    unsigned char   bin[1024];

    if (sodium_base642bin(bin, sizeof(bin), b64, strlen(b64), NULL,
                          &binlen, NULL, sodium_base64_VARIANT_ORIGINAL)
        != 0)
    {
        return NULL;
    }

    if (flip < binlen) {
        bin[flip] ^= 0x01;
    }

    if (keep < binlen) {
        binlen = keep;
    }

    n = al_base64_encode(NULL, 0, bin, binlen);
    out = malloc(n + 1);
    if (out != NULL) {
        al_base64_encode(out, n + 1, bin, binlen);
    }

    return out;
}


static int
round_trip(const al_keyring_t *kr, const unsigned char *msg, size_t len)
{
    int             ok;
    char           *box;
    size_t          outlen;
    al_error_t      err;
    const char     *why;
    unsigned char  *out;

    if (al_seal(tmp("key.pub"), msg, len, &box, &err) != 0) {
        printf("# seal: %s: %s\n", err.file, err.msg);
        return 0;
    }

    why = NULL;
    if (al_unseal(kr, box, strlen(box), &out, &outlen, &why) != 0) {
        printf("# unseal: %s\n", why);
        free(box);
        return 0;
    }

    ok = outlen == len && memcmp(out, msg, len) == 0 && out[len] == '\0';

    al_secure_free(out);
    free(box);

    return ok;
}


static void
test_base64(void)
{
    size_t  i;
    char    buf[16];

    static const char  *vec[][2] = {
        { "", "" },
        { "f", "Zg==" },
        { "fo", "Zm8=" },
        { "foo", "Zm9v" },
        { "foob", "Zm9vYg==" },
        { "fooba", "Zm9vYmE=" },
        { "foobar", "Zm9vYmFy" }
    };

    for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        memset(buf, 'x', sizeof(buf));
        tap_is_int((long) al_base64_encode(buf, sizeof(buf),
                                           (const unsigned char *) vec[i][0],
                                           strlen(vec[i][0])),
                   (long) strlen(vec[i][1]), "base64 length (RFC 4648)");
        tap_is_str(buf, vec[i][1], "base64 vector (RFC 4648)");
    }

    tap_is_int((long) al_base64_encode(NULL, 0,
                                       (const unsigned char *) "foobar", 6),
               8, "base64: cap 0 returns the needed length");

    memset(buf, 'x', sizeof(buf));
    tap_is_int((long) al_base64_encode(buf, 5,
                                       (const unsigned char *) "foobar", 6),
               8, "base64: truncated still returns 8");
    tap_ok(memcmp(buf, "Zm9vYx", 6) == 0,
           "base64: writes at most cap bytes");

    memset(buf, 'x', sizeof(buf));
    tap_is_int((long) al_base64_encode(buf, 8,
                                       (const unsigned char *) "foobar", 6),
               8, "base64: exact fit returns 8");
    tap_ok(memcmp(buf, "Zm9vYmFyx", 9) == 0,
           "base64: no NUL when there is no room for one");

    memset(buf, 'x', sizeof(buf));
    al_base64_encode(buf, 9, (const unsigned char *) "foobar", 6);
    tap_is_str(buf, "Zm9vYmFy", "base64: NUL when there is room");

    memset(buf, 'x', sizeof(buf));
    al_base64_encode(buf, sizeof(buf), (const unsigned char *) "\xff\xfe",
                     2);
    tap_is_str(buf, "//4=", "base64: uses + and / alphabet");
}


static void
test_keyfiles(void)
{
    al_error_t     err;
    al_keyring_t  *kr;

    tap_is_int(al_keygen(tmp("key"), &err), 0, "keygen");
    tap_is_int(file_mode("key"), 0600, "private key file is 0600");
    tap_is_int(file_mode("key.pub"), 0644, "public key file is 0644");

    tap_is_int(al_keygen(tmp("key"), &err), -1, "keygen refuses to "
               "overwrite");
    tap_ok(has(&err, "refusing to overwrite existing"),
           "overwrite error says why");
    tap_is_str(err.file, tmp("key"), "overwrite error names the file");

    /* a .pub in the way: the private key must not be left behind */

    tap_is_int(write_file("lone.pub", 0644, "x\n"), 0, "setup lone.pub");
    tap_is_int(al_keygen(tmp("lone"), &err), -1,
               "keygen refuses to overwrite the .pub");
    tap_ok(access(tmp("lone"), F_OK) == -1 && errno == ENOENT,
           "private key removed when the .pub cannot be written");
    unlink(tmp("lone.pub"));

    kr = al_keyring_load(tmp("key"), &err);
    tap_ok(kr != NULL, "keyring loads");
    al_keyring_free(kr);

    tap_is_int(chmod(tmp("key"), 0644), 0, "setup chmod 644");
    kr = al_keyring_load(tmp("key"), &err);
    tap_ok(kr == NULL, "keyring refuses a 0644 private key");
    tap_ok(has(&err, "mode 0644") && has(&err, "chmod 600"),
           "mode error is actionable");
    al_keyring_free(kr);

    chmod(tmp("key"), 0640);
    kr = al_keyring_load(tmp("key"), &err);
    tap_ok(kr == NULL, "keyring refuses a 0640 private key");
    al_keyring_free(kr);
    chmod(tmp("key"), 0600);

    tap_is_int(symlink(tmp("key"), tmp("link")), 0, "setup symlink");
    kr = al_keyring_load(tmp("link"), &err);
    tap_ok(kr == NULL, "keyring refuses a symlink");
    tap_ok(has(&err, "symbolic link"), "symlink error says why");
    al_keyring_free(kr);

    write_file("garbage", 0600, "hello, world\n");
    kr = al_keyring_load(tmp("garbage"), &err);
    tap_ok(kr == NULL && has(&err, "not an Airlock private key"),
           "keyring refuses garbage");
    al_keyring_free(kr);

    write_file("wronghdr", 0600, "airlock-public-key-v1 "
               "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n");
    kr = al_keyring_load(tmp("wronghdr"), &err);
    tap_ok(kr == NULL && has(&err, "this is the public key"),
           "keyring refuses a public key header");
    al_keyring_free(kr);

    write_file("short", 0600, "airlock-secret-key-v1 "
               "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n");
    kr = al_keyring_load(tmp("short"), &err);
    tap_ok(kr == NULL && has(&err, "29 bytes, expected 32"),
           "keyring refuses a truncated key");
    al_keyring_free(kr);

    write_file("badb64", 0600, "airlock-secret-key-v1 "
               "AAAAAAAAAAAAAAAAAAAA!AAAAAAAAAAAAAAAAAAAAAA=\n");
    kr = al_keyring_load(tmp("badb64"), &err);
    tap_ok(kr == NULL && has(&err, "not valid base64"),
           "keyring refuses bad base64");
    al_keyring_free(kr);

    write_file("twolines", 0600, "airlock-secret-key-v1 "
               "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n");
    kr = al_keyring_load(tmp("twolines"), &err);
    tap_ok(kr == NULL, "keyring refuses trailing data");
    al_keyring_free(kr);

    write_file("empty", 0600, "");
    kr = al_keyring_load(tmp("empty"), &err);
    tap_ok(kr == NULL, "keyring refuses an empty file");
    al_keyring_free(kr);

    kr = al_keyring_load(tmp("missing"), &err);
    tap_ok(kr == NULL && has(&err, "No such file"),
           "keyring reports a missing file");
    al_keyring_free(kr);

    kr = al_keyring_load(dir, &err);
    tap_ok(kr == NULL && has(&err, "not a regular file"),
           "keyring refuses a directory");
    al_keyring_free(kr);

    write_file("nl", 0600, "airlock-secret-key-v1 "
               "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    kr = al_keyring_load(tmp("nl"), &err);
    tap_ok(kr != NULL, "keyring accepts a key without the final newline");
    al_keyring_free(kr);
}


static void
test_seal(void)
{
    int             rc;
    char           *box, *bad;
    size_t          i, outlen;
    al_error_t      err;
    const char     *why;
    al_keyring_t   *kr, *other;
    unsigned char  *big, *out, bin[256];

    kr = al_keyring_load(tmp("key"), &err);
    if (kr == NULL) {
        printf("# %s: %s\n", err.file, err.msg);
    }

    tap_ok(kr != NULL, "keyring for seal tests");
    if (kr == NULL) {
        return;
    }

    tap_ok(round_trip(kr, (const unsigned char *) "ghp_abc123", 10),
           "round trip: short token");
    tap_ok(round_trip(kr, (const unsigned char *) "x", 1),
           "round trip: 1 byte");
    tap_ok(round_trip(kr, (const unsigned char *) "", 0),
           "round trip: empty");

    for (i = 0; i < sizeof(bin); i++) {
        bin[i] = (unsigned char) i;
    }

    tap_ok(round_trip(kr, bin, sizeof(bin)),
           "round trip: every byte value, NUL, CR and LF included");

    big = malloc(64 * 1024 + 1);
    randombytes_buf(big, 64 * 1024 + 1);
    tap_ok(round_trip(kr, big, 64 * 1024), "round trip: 64 KiB");

    box = (char *) 1;
    tap_is_int(al_seal(tmp("key.pub"), big, 64 * 1024 + 1, &box, &err), -1,
               "seal refuses more than 64 KiB");
    tap_ok(box == NULL, "seal leaves *out NULL on failure");
    tap_ok(strstr(err.msg, "over 65536 bytes") != NULL
           && strstr(err.msg, "65537") == NULL,
           "seal's refusal gives the limit, not the secret's length");
    tap_diag("error: ", err.msg);
    free(big);

    tap_is_int(al_seal(tmp("key"), (const unsigned char *) "x", 1, &box,
                       &err),
               -1, "seal refuses the private key file");
    tap_ok(has(&err, "this is the private key"),
           "seal error says which file to use");

    tap_is_int(al_seal(tmp("nope.pub"), (const unsigned char *) "x", 1,
                       &box, &err),
               -1, "seal with a missing public key fails");

    /* a public key others may write is someone else's to choose */

    (void) chmod(tmp("key.pub"), 0666);
    box = (char *) 1;
    tap_is_int(al_seal(tmp("key.pub"), (const unsigned char *) "x", 1, &box,
                       &err),
               -1, "seal refuses a public key others may write");
    tap_ok(box == NULL && has(&err, "written by others (mode 0666)"),
           "and says why");
    (void) chmod(tmp("key.pub"), 0664);
    tap_is_int(al_seal(tmp("key.pub"), (const unsigned char *) "x", 1, &box,
                       &err),
               0, "seal takes a group-writable public key");
    free(box);
    (void) chmod(tmp("key.pub"), 0644);

    rc = al_seal(tmp("key.pub"), (const unsigned char *) "s3cret", 6, &box,
                 &err);
    tap_is_int(rc, 0, "seal");
    if (rc != 0) {
        al_keyring_free(kr);
        return;
    }

    tap_is_int((long) strlen(box), (long) ((6 + 48 + 2) / 3 * 4),
               "sealed box is base64 of 54 bytes");

    /* another keyring cannot open it */

    tap_is_int(al_keygen(tmp("other"), &err), 0, "keygen another key");
    other = al_keyring_load(tmp("other"), &err);
    tap_ok(other != NULL, "other keyring loads");

    if (other != NULL) {
        why = NULL;
        out = (unsigned char *) 1;
        tap_is_int(al_unseal(other, box, strlen(box), &out, &outlen, &why),
                   -1, "unseal with another keyring fails");
        tap_is_str(why, "cannot be opened with this key (tampered, or "
                   "sealed to another key)", "another keyring: why");
        tap_ok(out == NULL, "unseal leaves *out NULL on failure");
        al_keyring_free(other);
    }

    for (i = 0; i < 54; i += 53) {
        bad = reencode(box, i, (size_t) -1);
        why = NULL;
        tap_is_int(al_unseal(kr, bad, strlen(bad), &out, &outlen, &why), -1,
                   i ? "tampered ciphertext byte fails"
                     : "tampered ephemeral key byte fails");
        tap_ok(why != NULL && strstr(why, "tampered") != NULL,
               "tampered: why");
        free(bad);
    }

    bad = reencode(box, (size_t) -1, 50);
    tap_is_int(al_unseal(kr, bad, strlen(bad), &out, &outlen, &why), -1,
               "truncated box (50 bytes) fails");
    tap_ok(strstr(why, "tampered") != NULL, "truncated box: why");
    free(bad);

    bad = reencode(box, (size_t) -1, 47);
    tap_is_int(al_unseal(kr, bad, strlen(bad), &out, &outlen, &why), -1,
               "box shorter than the overhead fails");
    tap_is_str(why, "too short to be a sealed box", "too short: why");
    free(bad);

    tap_is_int(al_unseal(kr, "", 0, &out, &outlen, &why), -1,
               "empty box fails");

    tap_is_int(al_unseal(kr, box, strlen(box) - 4, &out, &outlen, &why), -1,
               "base64 cut short fails");

    tap_is_int(al_unseal(kr, "not base64!", 11, &out, &outlen, &why), -1,
               "bad base64 fails");
    tap_is_str(why, "not valid base64", "bad base64: why");

    bad = malloc(strlen(box) + 2);
    memcpy(bad, box, 20);
    bad[20] = '\n';
    memcpy(bad + 21, box + 20, strlen(box) - 20 + 1);
    tap_is_int(al_unseal(kr, bad, strlen(bad), &out, &outlen, &why), -1,
               "line break inside base64 is refused");
    free(bad);

    tap_is_int(al_unseal(kr, box, strlen(box), &out, &outlen, &why), 0,
               "the untouched box still opens");
    tap_ok(outlen == 6 && memcmp(out, "s3cret", 7) == 0,
           "opened value is NUL-terminated");
    al_secure_free(out);

    free(box);
    al_keyring_free(kr);
}


/*
 * file: secrets get the private key's checks: a regular file, not a
 * symbolic link, reachable by its owner only, bounded; a FIFO is refused
 * at once instead of blocking the load.  Through the policy loader, the
 * error names the secret and the file.
 */

static int
read_secret(const char *name, size_t max, char *why, size_t whylen,
    unsigned char **out, size_t *outlen)
{
    return al_secret_read_file(tmp(name), max, out, outlen, why, whylen);
}


static void
test_secret_files(void)
{
    int             rc;
    char            why[256], yaml[1024];
    size_t          len;
    al_error_t      err;
    al_policy_t    *p;
    al_keyring_t   *kr;
    unsigned char  *v;

    write_file("sec-ok", 0600, "tok-123\r\n");
    rc = read_secret("sec-ok", 64, why, sizeof(why), &v, &len);
    tap_ok(rc == 0 && len == 7 && strcmp((char *) v, "tok-123") == 0,
           "file secret 0600: read, CRLF dropped");
    al_secure_free(v);

    write_file("sec-ro", 0400, "tok-456");
    rc = read_secret("sec-ro", 64, why, sizeof(why), &v, &len);
    tap_ok(rc == 0 && len == 7, "file secret 0400: read");
    al_secure_free(v);

    write_file("sec-644", 0644, "tok-789");
    rc = read_secret("sec-644", 64, why, sizeof(why), &v, &len);
    tap_ok(rc == -1 && v == NULL && strstr(why, tmp("sec-644")) != NULL
           && strstr(why, "group or others (mode 0644)") != NULL
           && strstr(why, "chmod 600") != NULL,
           "file secret 0644: refused, naming the file and the mode");
    tap_diag("why: ", why);

    write_file("sec-640", 0640, "tok-789");
    rc = read_secret("sec-640", 64, why, sizeof(why), &v, &len);
    tap_ok(rc == -1 && strstr(why, "mode 0640") != NULL,
           "file secret 0640: refused");

    write_file("sec-big", 0600, "0123456789abcdefX");
    rc = read_secret("sec-big", 16, why, sizeof(why), &v, &len);
    tap_ok(rc == -1 && strstr(why, "larger than 16 bytes") != NULL,
           "file secret over the bound: refused");

    rc = read_secret("sec-none", 64, why, sizeof(why), &v, &len);
    tap_ok(rc == -1 && strstr(why, "cannot open") != NULL,
           "missing file secret: cannot open");

    (void) unlink(tmp("sec-link"));
    rc = symlink(tmp("sec-ok"), tmp("sec-link"));
    rc = read_secret("sec-link", 64, why, sizeof(why), &v, &len);
    tap_ok(rc == -1 && strstr(why, "symbolic link") != NULL,
           "file secret through a symbolic link: refused");

    rc = read_secret("", 64, why, sizeof(why), &v, &len);
    tap_ok(rc == -1 && strstr(why, "a directory") != NULL,
           "a directory: refused");

    /* nobody writes to it: a blocking open would never return */

    (void) unlink(tmp("sec-fifo"));
    if (!tap_ok(mkfifo(tmp("sec-fifo"), 0600) == 0, "mkfifo")) {
        return;
    }

    alarm(30);                              /* a safety net, not a test */
    rc = read_secret("sec-fifo", 64, why, sizeof(why), &v, &len);
    alarm(0);
    tap_ok(rc == -1 && strstr(why, "not a regular file (a FIFO)") != NULL,
           "a FIFO: refused without waiting for a writer");

    /* the loader names the secret and the file */

    kr = NULL;

    if (al_keygen(tmp("sec-key"), &err) != 0
        || (kr = al_keyring_load(tmp("sec-key"), &err)) == NULL)
    {
        tap_ok(0, "keygen for the loader");
        tap_diag("error: ", err.msg);
        return;
    }

    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "clients:\n"
             "  agent: { unix_uid: 0 }\n"
             "secrets:\n"
             "  ok: { file: %s }\n"
             "  loose: { file: %s }\n"
             "alerts:\n"
             "  deny: { threshold: 3, window: 60s }\n",
             tmp("sec-ok"), tmp("sec-644"));

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    tap_ok(p == NULL && err.line == 6
           && strstr(err.msg, "secret \"loose\": ") != NULL
           && strstr(err.msg, tmp("sec-644")) != NULL
           && strstr(err.msg, "mode 0644") != NULL,
           "loader: a 0644 file secret refused, naming secret and file");
    tap_diag("error: ", err.msg);
    al_policy_free(p);

    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "clients:\n"
             "  agent: { unix_uid: 0 }\n"
             "secrets:\n"
             "  pipe: { file: %s }\n"
             "alerts:\n"
             "  deny: { threshold: 3, window: 60s }\n",
             tmp("sec-fifo"));

    memset(&err, 0, sizeof(err));
    alarm(30);
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    alarm(0);
    tap_ok(p == NULL && strstr(err.msg, "secret \"pipe\": ") != NULL
           && strstr(err.msg, "a FIFO") != NULL,
           "loader: a FIFO file secret refused");
    al_policy_free(p);

    /* a secret a header carries as it is: printable ASCII only */

    write_file("sec-latin", 0600, "p\xc3\xa4ssw\xc3\xb6rd-long-s3cret");

    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "clients:\n"
             "  agent: { unix_uid: 0 }\n"
             "secrets:\n"
             "  latin: { file: %s }\n"
             "upstreams:\n"
             "  up: { url: \"http://127.0.0.1:9\" }\n"
             "routes:\n"
             "  - name: r\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /r }\n"
             "    upstream: up\n"
             "    to: /r\n"
             "    inject: { Authorization: \"Bearer {latin}\" }\n"
             "alerts:\n"
             "  deny: { threshold: 3, window: 60s }\n",
             tmp("sec-latin"));

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    tap_ok(p == NULL && strstr(err.msg, "secret \"latin\" contains a byte "
                                        "outside printable ASCII (its byte 2 "
                                        "from its start)")
                        != NULL,
           "loader: a non-ASCII secret in a header is refused (echoed back "
           "as Latin-1 it would pass the scrubber)");
    tap_ok(p == NULL && strcasestr(err.msg, "c3") == NULL
           && strstr(err.msg, "\xc3") == NULL,
           "loader: the refusal says where the byte is, not its value (the "
           "error goes to logs and terminals)");
    tap_diag("error: ", err.msg);
    al_policy_free(p);

    (void) snprintf(strstr(yaml, "Bearer {latin}"), 32,
                    "Basic {latin|base64}\" }\n");
    strcat(yaml, "alerts:\n  deny: { threshold: 3, window: 60s }\n");

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    tap_ok(p != NULL, "loader: ... and allowed through |base64");
    tap_diag("error: ", err.msg);
    al_policy_free(p);

    /* upstreams trim a header value's ends, then echo it */

    write_file("sec-space", 0600, "s3cret-token-0123 ");

    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "clients:\n"
             "  agent: { unix_uid: 0 }\n"
             "secrets:\n"
             "  spaced: { file: %s }\n"
             "upstreams:\n"
             "  up: { url: \"http://127.0.0.1:9\" }\n"
             "routes:\n"
             "  - name: r\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /r }\n"
             "    upstream: up\n"
             "    to: /r\n"
             "    inject: { X-Token: \"{spaced}\" }\n"
             "alerts:\n"
             "  deny: { threshold: 3, window: 60s }\n",
             tmp("sec-space"));

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    tap_ok(p == NULL && strstr(err.msg, "secret \"spaced\" begins or ends "
                                        "with a space or tab") != NULL,
           "loader: a header secret ending in a space is refused (echoed "
           "trimmed, it would pass the scrubber)");
    tap_diag("error: ", err.msg);
    al_policy_free(p);

    al_keyring_free(kr);
}


/* a secret that is the private key's file is told from a credential */

static void
test_key_is_private(void)
{
    static const char  key[] = "airlock-secret-key-v1 RkFLRQ==";
    static const char  pub[] = "airlock-public-key-v1 RkFLRQ==";
    static const char  other[] = "FAKE airlock-secret-key-v1";

    tap_ok(al_key_is_private((const unsigned char *) key, sizeof(key) - 1),
           "key_is_private: a private key file's line");
    tap_ok(al_key_is_private((const unsigned char *) key, 21),
           "key_is_private: its header alone");
    tap_ok(!al_key_is_private((const unsigned char *) key, 20),
           "key_is_private: less than its header is no key");
    tap_ok(!al_key_is_private((const unsigned char *) pub, sizeof(pub) - 1),
           "key_is_private: a public key file is not");
    tap_ok(!al_key_is_private((const unsigned char *) other,
                              sizeof(other) - 1),
           "key_is_private: the header inside a credential is not");
}


int
main(void)
{
    size_t       i;
    const char  *files[] = {
        "key", "key.pub", "other", "other.pub", "link", "garbage",
        "wronghdr", "short", "badb64", "twolines", "empty", "nl",
        "lone", "lone.pub", "sec-ok", "sec-ro", "sec-644", "sec-640",
        "sec-big", "sec-link", "sec-fifo", "sec-key", "sec-key.pub",
        "sec-latin", "sec-space"
    };

    snprintf(dir, sizeof(dir), "/tmp/airlock-secret-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }

    test_base64();
    test_key_is_private();
    test_keyfiles();
    test_seal();
    test_secret_files();

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        (void) unlink(tmp(files[i]));
    }

    if (rmdir(dir) == -1) {
        printf("# rmdir %s: %s\n", dir, strerror(errno));
    }

    return tap_done();
}
