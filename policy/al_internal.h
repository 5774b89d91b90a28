/*
 * Private to libairlock: the allocation pool a compiled policy lives in,
 * and the YAML node tree the loader validates.
 */

#ifndef AL_INTERNAL_H
#define AL_INTERNAL_H

#include "airlock.h"


typedef struct al_pool_s  al_pool_t;

al_pool_t *al_pool_create(void);
void al_pool_destroy(al_pool_t *pool);
void *al_palloc(al_pool_t *pool, size_t size);         /* zeroed */
char *al_pstrndup(al_pool_t *pool, const char *s, size_t len);
int al_pool_cleanup(al_pool_t *pool, void (*fn)(void *), void *data);


typedef enum {
    AL_Y_SCALAR = 0,
    AL_Y_SEQ,
    AL_Y_MAP
} al_ynode_type_t;

typedef struct al_ynode_s  al_ynode_t;

struct al_ynode_s {
    al_ynode_type_t   type;
    unsigned          line;                 /* 1-based */
    unsigned          column;
    unsigned          plain:1;              /* unquoted scalar */
    al_str_t          scalar;               /* NUL-terminated too */
    al_ynode_t      **items;                /* seq: n items; map: key,
                                               value, key, value, ... */
    size_t            n;                    /* items, or pairs for maps */
};

/* parses one YAML document; no anchors, aliases, tags or duplicate keys */
al_ynode_t *al_yaml_parse(al_pool_t *pool, const char *name,
    const char *buf, size_t len, al_error_t *err);

const char *al_ynode_type_name(const al_ynode_t *node);

/* the line and column of byte off of buf, 1-based, a column a character */
void al_yaml_place(const char *buf, size_t off, unsigned *line,
    unsigned *column);


/*
 * Reads the policy file open on fd, which fstat() said is size bytes
 * long, into a malloc()ed buffer of *len bytes.  NULL with err set when a
 * read fails or the file is not size bytes long any more (it changed
 * while it was read).  al_policy_load_open() is open(), fstat() and this,
 * apart so that a test can change the file in between.
 */
char *al_policy_read(int fd, const char *path, size_t size, size_t *len,
    al_error_t *err);


/* edit distance, for "did you mean" suggestions */
size_t al_edit_distance(const char *a, size_t alen, const char *b,
    size_t blen);

/*
 * Key case as Go's encoding/json folds it (al_util.c), which Go and
 * ASP.NET upstreams bind keys by, the last one winning: al_folds_to() is
 * 1 when key and name are the same but for ASCII case, the Kelvin sign
 * (U+212A) for k, the long s (U+017F) for s, or the dotted capital I
 * (U+0130) or dotless i (U+0131) for i, and with any character outside
 * ASCII where the other has one (Go folds those by Unicode case, never
 * to ASCII).  Each of those is 1 to 3 bytes for one ASCII letter, so key
 * is nlen to 3 * nlen bytes long when it folds to an ASCII name.
 * al_fold_plain() is 1 when s has no ASCII capital and no lead byte of
 * those letters: such a key folds to a lower case ASCII name only when
 * it is that name.
 */
int al_folds_to(const char *key, size_t klen, const char *name,
    size_t nlen);
int al_fold_plain(const char *s, size_t len);

/*
 * The one table of those letters outside ASCII (al_util.c), which every
 * reader that folds them uses: JSON keys (al_folds_to()), form field
 * names in UTF-8 and in "%uXXXX" (al_form.c).  al_fold_letter() is the
 * lower case ASCII letter a code point folds to, 0 for none;
 * al_fold_lead() is 1 when byte c begins the UTF-8 of one of them.
 * al_utf8_read() reads the character p begins, as strict UTF-8 (no
 * overlong form, surrogate or code point past U+10FFFF): its length in
 * bytes, with *code, or 0 when len bytes hold no such character.
 */
typedef struct {
    uint32_t       code;                    /* the code point */
    unsigned char  letter;                  /* lower case ASCII */
} al_fold_letter_t;

extern const al_fold_letter_t  al_fold_letters[];
extern const size_t            al_nfold_letters;

unsigned al_fold_letter(uint32_t code);
int al_fold_lead(unsigned c);
size_t al_utf8_read(const unsigned char *p, size_t len, uint32_t *code);


/*
 * A key an upstream may read as a path of keys to set, as qs reads a
 * form ("a[b][c]", "a.b.c" with allowDots), express-fileupload's
 * parseNested a multipart name, and a path setter a JSON key (flat's
 * unflatten()), read a character at a time (al_util.c): its parts are
 * cut at '[', ']' and '.', an empty one is no part.  al_key_path_next()
 * takes the next character (a code point; one past 0xff is in no
 * word), al_key_path_end() ends the key; each returns AL_KEY_PROTO once
 * a part is "__proto__", AL_KEY_CTOR once a part "prototype" follows a
 * part "constructor", or 0.  ctor in al_key_path_init() says the key is
 * read as if after a part "constructor" (a key of the object a
 * "constructor" key holds); after al_key_path_end() it says the last
 * part was one.  parts counts the parts ended, n the current part's
 * characters, sizeof(part) for that many or more (no word is so long).
 */
typedef struct {
    unsigned char  part[12];
    size_t         n;
    size_t         parts;
    unsigned       ctor;
} al_key_path_t;

#define AL_KEY_PROTO  1
#define AL_KEY_CTOR   2

void al_key_path_init(al_key_path_t *kp, unsigned ctor);
unsigned al_key_path_next(al_key_path_t *kp, unsigned c);
unsigned al_key_path_end(al_key_path_t *kp);


/* FNV-1a of len bytes, for the library's hash tables */

static inline uint32_t
al_fnv1a(const void *s, size_t len)
{
    size_t                i;
    uint32_t              h;
    const unsigned char  *p;

    p = s;
    h = 2166136261u;

    for (i = 0; i < len; i++) {
        h = (h ^ p[i]) * 16777619u;
    }

    return h;
}

#endif /* AL_INTERNAL_H */
