/*
 * Small shared pieces: error values, reason and method names, hex digits,
 * key case as Go folds it, a key read as a path, a process's start time.
 */

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if (defined __x86_64__ && defined __SSE2__)
#include <emmintrin.h>
#endif

#include "airlock.h"
#include "al_internal.h"


static size_t al_fold(const char *s, size_t len, size_t i, unsigned char *c);


static const char *al_reasons[AL_REASON_MAX] = {
    "none",
    "client_unknown",
    "no_route",
    "method",
    "path",
    "param",
    "query",
    "body",
    "body_too_large",
    "quarantined",
    "request",
    "model",
    "budget",
    "refused"
};


static const struct {
    const char  *name;
    size_t       len;
    unsigned     bit;
} al_methods[] = {
    { "GET", 3, AL_METHOD_GET },
    { "HEAD", 4, AL_METHOD_HEAD },
    { "POST", 4, AL_METHOD_POST },
    { "PUT", 3, AL_METHOD_PUT },
    { "PATCH", 5, AL_METHOD_PATCH },
    { "DELETE", 6, AL_METHOD_DELETE },
    { "OPTIONS", 7, AL_METHOD_OPTIONS }
};


void
al_error_set(al_error_t *err, const char *file, unsigned line,
    unsigned column, const char *fmt, ...)
{
    va_list  ap;

    if (err == NULL) {
        return;
    }

    snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
    err->line = line;
    err->column = column;

    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}


size_t
al_error_format(const al_error_t *err, char *buf, size_t size)
{
    int  n;

    if (err->line) {
        n = snprintf(buf, size, "%s:%u:%u: %s", err->file, err->line,
                     err->column, err->msg);

    } else if (err->file[0]) {
        n = snprintf(buf, size, "%s: %s", err->file, err->msg);

    } else {
        n = snprintf(buf, size, "%s", err->msg);
    }

    return n < 0 ? 0 : (size_t) n;
}


size_t
al_shown(char *out, size_t size, const char *s, size_t len)
{
    size_t          i, n;
    unsigned char   c;

    static const char  hex[] = "0123456789abcdef";

    if (size == 0) {
        return 0;
    }

    n = 0;

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];

        if (c >= 0x20 && c < 0x7f && c != '\\') {
            if (n + 1 >= size) {
                break;
            }
            out[n++] = (char) c;
            continue;
        }

        /* a backslash is shown doubled: each one shown starts an escape */

        if (c == '\\') {
            if (n + 2 >= size) {
                break;
            }
            out[n++] = '\\';
            out[n++] = '\\';
            continue;
        }

        if (n + 4 >= size) {
            break;
        }

        out[n++] = '\\';
        out[n++] = 'x';
        out[n++] = hex[c >> 4];
        out[n++] = hex[c & 0xf];
    }

    out[n] = '\0';

    return n;
}



size_t
al_utf8_len(const unsigned char *p, size_t n)
{
    size_t    k, i;
    uint32_t  cp, min;

    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        k = 2;
        cp = p[0] & 0x1f;
        min = 0x80;

    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        k = 3;
        cp = p[0] & 0x0f;
        min = 0x800;

    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        k = 4;
        cp = p[0] & 0x07;
        min = 0x10000;

    } else {
        return 0;
    }

    if (k > n) {
        return 0;
    }

    for (i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (p[i] & 0x3f);
    }

    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }

    return k;
}


size_t
al_utf8_cut(const char *s, size_t len, size_t max)
{
    size_t                j, k;
    const unsigned char  *p;

    if (len <= max) {
        return len;
    }

    p = (const unsigned char *) s;

    /* the lead byte of a sequence that s[max] would continue */

    for (j = max; j > 0 && max - j < 3 && (p[j] & 0xc0) == 0x80; j--) {
        /* void */
    }

    if (j < max && p[j] >= 0xc2) {
        k = al_utf8_len(p + j, len - j);

        if (j + k > max) {
            return j;
        }
    }

    return max;
}


/*
 * A format character that makes a line read as something else to a
 * terminal or a viewer, at p (a valid three-byte sequence, p[0] 0xe2):
 * U+200E, U+200F (direction marks), U+2028, U+2029 (line and paragraph
 * separators), U+202A..U+202E and U+2066..U+2069 (bidi embeddings,
 * overrides and isolates).
 */
#define al_json_format_char(p)                                              \
    (((p)[1] == 0x80                                                        \
      && ((p)[2] == 0x8e || (p)[2] == 0x8f                                  \
          || ((p)[2] >= 0xa8 && (p)[2] <= 0xae)))                           \
     || ((p)[1] == 0x81 && (p)[2] >= 0xa6 && (p)[2] <= 0xa9))


size_t
al_json_escape_len(const char *s, size_t len)
{
    size_t                i, n, k;
    unsigned char         c;
    const unsigned char  *p;

    p = (const unsigned char *) s;
    n = 0;

    for (i = 0; i < len; /* void */) {
        c = p[i];

        if (c >= 0x20 && c < 0x7f) {
            n += (c == '"' || c == '\\') ? 2 : 1;
            i++;
            continue;
        }

        if (c >= 0x80) {
            k = al_utf8_len(p + i, len - i);

            if (k != 0) {
                /* a C1 control (U+0080..U+009F) is escaped as C0 is */
                n += ((c == 0xc2 && p[i + 1] < 0xa0)
                      || (c == 0xe2 && al_json_format_char(p + i)))
                     ? 6 : k;
                i += k;
                continue;
            }
        }

        n += 6;
        i++;
    }

    return n;
}


char *
al_json_escape(char *dst, const char *s, size_t len)
{
    size_t                i, k;
    unsigned char         c;
    const unsigned char  *p;

    static const char  hex[] = "0123456789abcdef";

    p = (const unsigned char *) s;

    for (i = 0; i < len; /* void */) {
        c = p[i];

        if (c >= 0x20 && c < 0x7f) {
            if (c == '"' || c == '\\') {
                *dst++ = '\\';
            }

            *dst++ = (char) c;
            i++;
            continue;
        }

        if (c >= 0x80) {
            k = al_utf8_len(p + i, len - i);

            if (k == 2 && c == 0xc2 && p[i + 1] < 0xa0) {
                /* a C1 control: CSI (U+009B) moves a terminal's cursor */
                c = p[i + 1];
                i++;

            } else if (k == 3 && c == 0xe2 && al_json_format_char(p + i)) {
                /* U+20XX: a line break, or text shown in another order */
                c = (unsigned char) (((p[i + 1] & 0x3f) << 6)
                                     | (p[i + 2] & 0x3f));
                *dst++ = '\\';
                *dst++ = 'u';
                *dst++ = '2';
                *dst++ = '0';
                *dst++ = hex[c >> 4];
                *dst++ = hex[c & 0xf];
                i += 3;
                continue;

            } else if (k != 0) {
                memcpy(dst, p + i, k);
                dst += k;
                i += k;
                continue;
            }
        }

        /* a control, DEL, or a byte of no valid UTF-8 sequence */

        *dst++ = '\\';
        *dst++ = 'u';
        *dst++ = '0';
        *dst++ = '0';
        *dst++ = hex[c >> 4];
        *dst++ = hex[c & 0xf];
        i++;
    }

    return dst;
}


const char *
al_reason_name(al_reason_t reason)
{
    if ((unsigned) reason >= AL_REASON_MAX) {
        return "unknown";
    }

    return al_reasons[reason];
}


al_reason_t
al_reason_find(const char *name)
{
    unsigned  r;

    for (r = AL_REASON_NONE + 1; r < AL_REASON_MAX; r++) {
        if (strcmp(name, al_reasons[r]) == 0) {
            return (al_reason_t) r;
        }
    }

    return AL_REASON_NONE;
}


al_reason_t
al_denial_reason(const char *marker, const char *name)
{
    if (marker == NULL || name == NULL || strcmp(marker, name) != 0) {
        return AL_REASON_NONE;
    }

    return al_reason_find(name);
}


unsigned
al_method_bit(const char *name, size_t len)
{
    size_t  i;

    for (i = 0; i < sizeof(al_methods) / sizeof(al_methods[0]); i++) {
        if (al_methods[i].len == len
            && memcmp(al_methods[i].name, name, len) == 0)
        {
            return al_methods[i].bit;
        }
    }

    return 0;
}


const char *
al_method_name(unsigned bit)
{
    size_t  i;

    for (i = 0; i < sizeof(al_methods) / sizeof(al_methods[0]); i++) {
        if (al_methods[i].bit == bit) {
            return al_methods[i].name;
        }
    }

    return "?";
}


void
al_methods_format(char *buf, size_t size, unsigned methods)
{
    size_t    n;
    unsigned  bit;

    if (size == 0) {
        return;
    }

    buf[0] = '\0';
    n = 0;

    for (bit = 1; bit <= AL_METHOD_OPTIONS; bit <<= 1) {
        if ((methods & bit) && n < size) {
            n += snprintf(buf + n, size - n, "%s%s", n ? "," : "",
                          al_method_name(bit));
        }
    }
}


/*
 * All sixteen digits at once.  With SSE2: the bytes, most significant
 * first, split into their high and low nibbles, interleaved into sixteen
 * bytes, '0' added to every byte and 'a' - '0' - 10 more to those above 9.
 * Else each nibble spread into a byte of its own (three shift-and-mask
 * steps per half), then the same additions (adding 6 carries into bit 4
 * exactly for the bytes that need the letters).  No table and no loop.
 */

void
al_hex64(char *dst, uint64_t v)
{
#if (defined __x86_64__ && defined __SSE2__)

    __m128i  x, d, big;

    x = _mm_cvtsi64_si128((long long) __builtin_bswap64(v));

    d = _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(x, 4),
                                        _mm_set1_epi8(0x0f)),
                          _mm_and_si128(x, _mm_set1_epi8(0x0f)));

    big = _mm_and_si128(_mm_cmpgt_epi8(d, _mm_set1_epi8(9)),
                        _mm_set1_epi8('a' - '0' - 10));

    d = _mm_add_epi8(d, _mm_add_epi8(big, _mm_set1_epi8('0')));

    _mm_storeu_si128((__m128i *) (void *) dst, d);

#else

    unsigned  h;
    uint64_t  x, big;

    for (h = 0; h < 2; h++) {
        x = (h == 0) ? v >> 32 : v & 0xffffffff;

        /* nibble k (from the least significant) to byte k */

        x = ((x & UINT64_C(0x00000000ffff0000)) << 16)
            | (x & UINT64_C(0x000000000000ffff));
        x = ((x & UINT64_C(0x0000ff000000ff00)) << 8)
            | (x & UINT64_C(0x000000ff000000ff));
        x = ((x & UINT64_C(0x00f000f000f000f0)) << 4)
            | (x & UINT64_C(0x000f000f000f000f));

        big = ((x + UINT64_C(0x0606060606060606)) >> 4)
              & UINT64_C(0x0101010101010101);
        x += UINT64_C(0x3030303030303030) + big * ('a' - '0' - 10);

        /* the most significant digit is the highest byte: written first */

#if (defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
        x = __builtin_bswap64(x);
#elif !(defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#error "al_hex64: unknown byte order"
#endif

        memcpy(dst + 8 * h, &x, 8);
    }

#endif
}


int
al_folds_to(const char *key, size_t klen, const char *name, size_t nlen)
{
    size_t         i, j;
    unsigned char  a, b;

    i = 0;
    j = 0;

    while (i < klen && j < nlen) {
        a = (unsigned char) key[i];
        b = (unsigned char) name[j];

        if ((a | b) < 0x80) {
            /* both ASCII, as nearly every key is: al_fold() in line */

            a = (a >= 'A' && a <= 'Z') ? (unsigned char) (a | 0x20) : a;
            b = (b >= 'A' && b <= 'Z') ? (unsigned char) (b | 0x20) : b;
            i++;
            j++;

        } else {
            i = al_fold(key, klen, i, &a);
            j = al_fold(name, nlen, j, &b);
        }

        if (a != b) {
            return 0;
        }
    }

    return i == klen && j == nlen;
}


int
al_fold_plain(const char *s, size_t len)
{
    size_t         i;
    uint64_t       w;
    unsigned char  c;

    /*
     * Eight ASCII bytes at a time: a byte b below 0x80 is 'A' to 'Z' when
     * b + 0x3f reaches 0x80 and b + 0x25 does not (no carry leaves a
     * byte).  A byte of 0x80 or more sends the rest to the byte loop.
     */

    for (i = 0; len - i >= 8; i += 8) {
        memcpy(&w, s + i, 8);

        if (w & UINT64_C(0x8080808080808080)) {
            break;
        }

        if ((w + UINT64_C(0x3f3f3f3f3f3f3f3f))
            & ~(w + UINT64_C(0x2525252525252525))
            & UINT64_C(0x8080808080808080))
        {
            return 0;
        }
    }

    for ( /* void */ ; i < len; i++) {
        c = (unsigned char) s[i];

        if ((c >= 'A' && c <= 'Z') || al_fold_lead(c)) {
            return 0;
        }
    }

    return 1;
}


/*
 * The character at s[i] folded: ASCII letters to lower case, and the
 * letters outside ASCII that Go's encoding/json folds to ASCII ones
 * (al_fold_letters[]) to theirs.  Go folds every other letter by
 * Unicode's case orbits too ("É" and "é", "ẞ" and "ß", of other lengths
 * in UTF-8), and none of them to ASCII: so every other character outside
 * ASCII, its whole UTF-8 sequence, folds to one and the same 0x80, and a
 * name outside ASCII is matched in any case (and, more than Go would,
 * with any other such character in the place of one).  Other bytes stand
 * for themselves.  Returns where the next character starts.
 */

static size_t
al_fold(const char *s, size_t len, size_t i, unsigned char *c)
{
    size_t                n, k;
    uint32_t              code;
    unsigned              letter;
    const unsigned char  *p;

    p = (const unsigned char *) s + i;

    if (p[0] < 0x80) {
        *c = (p[0] >= 'A' && p[0] <= 'Z') ? (unsigned char) (p[0] | 0x20)
                                          : p[0];
        return i + 1;
    }

    if (al_fold_lead(p[0])) {
        n = al_utf8_read(p, len - i, &code);
        letter = (n != 0) ? al_fold_letter(code) : 0;

        if (letter != 0) {
            *c = (unsigned char) letter;
            return i + n;
        }
    }

    if (p[0] >= 0xc0) {
        n = (p[0] >= 0xf0) ? 4 : (p[0] >= 0xe0) ? 3 : 2;

        for (k = 1; k < n && i + k < len && (p[k] & 0xc0) == 0x80; k++) {
            /* void */
        }

        *c = 0x80;
        return i + k;
    }

    *c = p[0];

    return i + 1;
}


/*
 * The letters outside ASCII that case-insensitive readers take for ASCII
 * ones: Go's strings.EqualFold and encoding/json (upper case of lower
 * case) fold the Kelvin sign to 'k', the long s to 's', the dotted
 * capital I and the dotless i to 'i'.  JSON keys (al_fold()), form field
 * names as UTF-8 (al_form.c's al_form_letter()) and as System.Web's
 * "%uXXXX" (al_form_char()) are all folded by this one table.
 */

const al_fold_letter_t  al_fold_letters[] = {
    { 0x212a, 'k' },                        /* KELVIN SIGN */
    { 0x017f, 's' },                        /* LATIN SMALL LETTER LONG S */
    { 0x0130, 'i' },                        /* LATIN CAPITAL LETTER I
                                               WITH DOT ABOVE */
    { 0x0131, 'i' }                         /* LATIN SMALL LETTER
                                               DOTLESS I */
};

const size_t  al_nfold_letters =
    sizeof(al_fold_letters) / sizeof(al_fold_letters[0]);


unsigned
al_fold_letter(uint32_t code)
{
    size_t  k;

    for (k = 0; k < al_nfold_letters; k++) {
        if (al_fold_letters[k].code == code) {
            return al_fold_letters[k].letter;
        }
    }

    return 0;
}


int
al_fold_lead(unsigned c)
{
    size_t    k;
    uint32_t  code;
    unsigned  lead;

    if (c < 0xc0 || c > 0xff) {
        return 0;
    }

    for (k = 0; k < al_nfold_letters; k++) {
        code = al_fold_letters[k].code;

        lead = (code < 0x800) ? (0xc0 | code >> 6)
               : (code < 0x10000) ? (0xe0 | code >> 12)
               : (0xf0 | code >> 18);

        if (lead == c) {
            return 1;
        }
    }

    return 0;
}


size_t
al_utf8_read(const unsigned char *p, size_t len, uint32_t *code)
{
    size_t    n, k;
    uint32_t  c, min;

    if (len == 0) {
        return 0;
    }

    c = p[0];

    if (c < 0x80) {
        *code = c;
        return 1;
    }

    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        c &= 0x1f;
        min = 0x80;

    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        c &= 0x0f;
        min = 0x800;

    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        c &= 0x07;
        min = 0x10000;

    } else {
        return 0;
    }

    if (len < n) {
        return 0;
    }

    for (k = 1; k < n; k++) {
        if ((p[k] & 0xc0) != 0x80) {
            return 0;
        }

        c = c << 6 | (p[k] & 0x3f);
    }

    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return 0;
    }

    *code = c;

    return n;
}



void
al_key_path_init(al_key_path_t *kp, unsigned ctor)
{
    kp->n = 0;
    kp->parts = 0;
    kp->ctor = ctor;
}


unsigned
al_key_path_next(al_key_path_t *kp, unsigned c)
{
    if (c == '[' || c == ']' || c == '.') {
        return al_key_path_end(kp);
    }

    if (kp->n < sizeof(kp->part)) {
        kp->part[kp->n++] = (c <= 0xff) ? (unsigned char) c : 0;
    }

    return 0;
}


unsigned
al_key_path_end(al_key_path_t *kp)
{
    size_t          n;
    unsigned        ctor;
    unsigned char  *w;

    n = kp->n;

    if (n == 0) {
        return 0;
    }

    kp->n = 0;
    kp->parts++;

    w = kp->part;
    ctor = kp->ctor;
    kp->ctor = (n == 11 && memcmp(w, "constructor", 11) == 0);

    if (n == 9 && memcmp(w, "__proto__", 9) == 0) {
        return AL_KEY_PROTO;
    }

    if (ctor && n == 9 && memcmp(w, "prototype", 9) == 0) {
        return AL_KEY_CTOR;
    }

    return 0;
}


uint64_t
al_proc_started(pid_t pid, int self)
{
    int          fd, field;
    char         path[64], buf[512];
    ssize_t      n;
    uint64_t     v;
    long long    first;
    const char  *p, *last;

    if (self) {
        (void) snprintf(path, sizeof(path), "/proc/self/stat");
    } else {
        (void) snprintf(path, sizeof(path), "/proc/%lld/stat",
                        (long long) pid);
    }

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return 0;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    (void) close(fd);

    if (n <= 0) {
        return 0;
    }

    buf[n] = '\0';
    last = buf + n;

    if (sscanf(buf, "%lld ", &first) != 1 || first != (long long) pid) {
        return 0;
    }

    /* the command's name (field 2) may hold spaces and ')': the last ')' */

    for (p = last; p > buf && p[-1] != ')'; p--) { /* void */ }

    if (p == buf) {
        return 0;
    }

    /* each space starts the next field */

    for (field = 2; p < last && field < 22; p++) {
        if (*p == ' ') {
            field++;
        }
    }

    for (v = 0; p < last && *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (uint64_t) (*p - '0');
    }

    return v;
}
