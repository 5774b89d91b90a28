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


/* edit distance, for "did you mean" suggestions */
size_t al_edit_distance(const char *a, size_t alen, const char *b,
    size_t blen);

#endif /* AL_INTERNAL_H */
