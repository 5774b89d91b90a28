/*
 * YAML to a node tree, with the places of every node kept for error
 * messages.  Only the plain subset a policy needs is accepted: one
 * document, no anchors or aliases (no billion laughs, no shared nodes),
 * no tags, no duplicate mapping keys, no non-scalar keys.
 */

#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "al_internal.h"


#define AL_YAML_DEPTH_MAX   64


typedef struct {
    al_pool_t     *pool;
    const char    *name;
    al_error_t    *err;
    al_ynode_t    *stack[AL_YAML_DEPTH_MAX];
    size_t         cap[AL_YAML_DEPTH_MAX];
    size_t         cnt[AL_YAML_DEPTH_MAX];
    size_t         depth;
    al_ynode_t    *root;
} al_yaml_ctx_t;


static int al_yaml_add(al_yaml_ctx_t *ctx, al_ynode_t *node);
static al_ynode_t *al_yaml_node(al_yaml_ctx_t *ctx, al_ynode_type_t type,
    const yaml_mark_t *mark);
static int al_yaml_event(al_yaml_ctx_t *ctx, yaml_event_t *ev);


const char *
al_ynode_type_name(const al_ynode_t *node)
{
    switch (node->type) {
    case AL_Y_SEQ:
        return "a list";
    case AL_Y_MAP:
        return "a mapping";
    default:
        return "a scalar";
    }
}


al_ynode_t *
al_yaml_parse(al_pool_t *pool, const char *name, const char *buf,
    size_t len, al_error_t *err)
{
    int             done, rc;
    yaml_event_t    ev;
    al_yaml_ctx_t   ctx;
    yaml_parser_t   parser;

    memset(&ctx, 0, sizeof(ctx));
    ctx.pool = pool;
    ctx.name = name;
    ctx.err = err;

    if (!yaml_parser_initialize(&parser)) {
        al_error_set(err, name, 0, 0, "out of memory");
        return NULL;
    }

    yaml_parser_set_input_string(&parser, (const unsigned char *) buf, len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);

    done = 0;
    rc = 0;

    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            al_error_set(err, name, parser.problem_mark.line + 1,
                         parser.problem_mark.column + 1, "invalid YAML: %s%s%s",
                         parser.problem ? parser.problem : "syntax error",
                         parser.context ? " " : "",
                         parser.context ? parser.context : "");
            rc = -1;
            break;
        }

        done = (ev.type == YAML_STREAM_END_EVENT);
        rc = al_yaml_event(&ctx, &ev);
        yaml_event_delete(&ev);

        if (rc != 0) {
            break;
        }
    }

    yaml_parser_delete(&parser);

    if (rc != 0) {
        return NULL;
    }

    if (ctx.root == NULL) {
        al_error_set(err, name, 1, 1, "the policy file is empty");
        return NULL;
    }

    return ctx.root;
}


static int
al_yaml_event(al_yaml_ctx_t *ctx, yaml_event_t *ev)
{
    const char     *anchor;
    const char     *tag;
    al_ynode_t     *node;
    yaml_mark_t    *m;

    m = &ev->start_mark;
    anchor = NULL;
    tag = NULL;

    switch (ev->type) {

    case YAML_DOCUMENT_START_EVENT:
        if (ctx->root != NULL) {
            al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                         "only one YAML document is allowed in a policy");
            return -1;
        }
        return 0;

    case YAML_ALIAS_EVENT:
        al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                     "YAML aliases (*name) are not supported in a policy");
        return -1;

    case YAML_SCALAR_EVENT:
        anchor = (const char *) ev->data.scalar.anchor;
        tag = (const char *) ev->data.scalar.tag;
        break;

    case YAML_SEQUENCE_START_EVENT:
        anchor = (const char *) ev->data.sequence_start.anchor;
        tag = (const char *) ev->data.sequence_start.tag;
        break;

    case YAML_MAPPING_START_EVENT:
        anchor = (const char *) ev->data.mapping_start.anchor;
        tag = (const char *) ev->data.mapping_start.tag;
        break;

    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        ctx->depth--;
        return 0;

    default:
        return 0;
    }

    if (anchor != NULL) {
        al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                     "YAML anchors (&%s) are not supported in a policy",
                     anchor);
        return -1;
    }

    if (tag != NULL
        && !(ev->type == YAML_SCALAR_EVENT && strcmp(tag, "!") == 0))
    {
        al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                     "YAML tags (%s) are not supported in a policy", tag);
        return -1;
    }

    if (ev->type == YAML_SCALAR_EVENT) {
        node = al_yaml_node(ctx, AL_Y_SCALAR, m);
        if (node == NULL) {
            return -1;
        }

        node->scalar.data = al_pstrndup(ctx->pool,
                                        (const char *) ev->data.scalar.value,
                                        ev->data.scalar.length);
        if (node->scalar.data == NULL) {
            al_error_set(ctx->err, ctx->name, 0, 0, "out of memory");
            return -1;
        }
        node->scalar.len = ev->data.scalar.length;
        node->plain = (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE);

        return al_yaml_add(ctx, node);
    }

    node = al_yaml_node(ctx, ev->type == YAML_SEQUENCE_START_EVENT
                             ? AL_Y_SEQ : AL_Y_MAP, m);
    if (node == NULL || al_yaml_add(ctx, node) != 0) {
        return -1;
    }

    if (ctx->depth == AL_YAML_DEPTH_MAX) {
        al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                     "nesting deeper than %d levels", AL_YAML_DEPTH_MAX);
        return -1;
    }

    ctx->stack[ctx->depth] = node;
    ctx->cap[ctx->depth] = 0;
    ctx->cnt[ctx->depth] = 0;
    ctx->depth++;

    return 0;
}


static al_ynode_t *
al_yaml_node(al_yaml_ctx_t *ctx, al_ynode_type_t type,
    const yaml_mark_t *mark)
{
    al_ynode_t  *node;

    node = al_palloc(ctx->pool, sizeof(al_ynode_t));
    if (node == NULL) {
        al_error_set(ctx->err, ctx->name, 0, 0, "out of memory");
        return NULL;
    }

    node->type = type;
    node->line = mark->line + 1;
    node->column = mark->column + 1;

    return node;
}


static int
al_yaml_add(al_yaml_ctx_t *ctx, al_ynode_t *node)
{
    size_t       i, count, ncap;
    al_ynode_t  *parent, *key, **items;

    if (ctx->depth == 0) {
        ctx->root = node;
        return 0;
    }

    parent = ctx->stack[ctx->depth - 1];
    count = ctx->cnt[ctx->depth - 1];

    if (parent->type == AL_Y_MAP && count % 2 == 0) {
        /* node is a key */
        if (node->type != AL_Y_SCALAR) {
            al_error_set(ctx->err, ctx->name, node->line, node->column,
                         "mapping keys must be plain names, found %s",
                         al_ynode_type_name(node));
            return -1;
        }

        for (i = 0; i < parent->n; i++) {
            key = parent->items[i * 2];
            if (key->scalar.len == node->scalar.len
                && memcmp(key->scalar.data, node->scalar.data,
                          key->scalar.len) == 0)
            {
                al_error_set(ctx->err, ctx->name, node->line, node->column,
                             "duplicate key \"%s\" (first given at line %u)",
                             node->scalar.data, key->line);
                return -1;
            }
        }
    }

    if (count == ctx->cap[ctx->depth - 1]) {
        ncap = count ? count * 2 : 8;
        items = al_palloc(ctx->pool, ncap * sizeof(al_ynode_t *));
        if (items == NULL) {
            al_error_set(ctx->err, ctx->name, 0, 0, "out of memory");
            return -1;
        }
        if (count) {
            memcpy(items, parent->items, count * sizeof(al_ynode_t *));
        }
        parent->items = items;
        ctx->cap[ctx->depth - 1] = ncap;
    }

    parent->items[count] = node;
    ctx->cnt[ctx->depth - 1] = ++count;
    parent->n = parent->type == AL_Y_MAP ? count / 2 : count;

    return 0;
}
