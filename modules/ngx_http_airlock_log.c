
/*
 * Airlock deny log: one JSON line per denied request.
 *
 *   {"time":"2024-05-01T12:00:00+00:00","request_id":"...","client":"agent",
 *    "method":"GET","path":"/x","route":null,"reason":"no_route",
 *    "detail":"no route matches this path"}
 *
 * The file is opened like access_log files (ngx_conf_open_file), so it is
 * reopened on USR1, and each line is one write() to an O_APPEND file.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"


#define NGX_HTTP_AIRLOCK_PATH_MAX  256

/* U+2026 HORIZONTAL ELLIPSIS: the path was cut */
#define NGX_HTTP_AIRLOCK_CUT       "\xe2\x80\xa6"


static u_char *ngx_http_airlock_json_str(u_char *p, u_char *s, size_t len);
static size_t ngx_http_airlock_json_str_len(u_char *s, size_t len);


char *
ngx_http_airlock_deny_log(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_srv_conf_t  *ascf = conf;

    ngx_str_t  *value, name;

    if (ascf->deny_log != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        ascf->deny_log = NULL;
        return NGX_CONF_OK;
    }

    name = value[1];

    ascf->deny_log = ngx_conf_open_file(cf->cycle, &name);
    if (ascf->deny_log == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


void
ngx_http_airlock_log_deny(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    const char *detail)
{
    u_char                       *line, *p;
    size_t                        len, plen, dlen;
    ssize_t                       n;
    ngx_str_t                     id, client, route, esc;
    ngx_uint_t                    cut;
    const char                   *reason;
    ngx_open_file_t              *file;
    ngx_http_airlock_srv_conf_t  *ascf;
    u_char                        buf[AL_DETAIL_MAX * 6];

    reason = al_reason_name(ctx->reason);

    if (detail == NULL) {
        detail = "";
    }

    dlen = ngx_strlen(detail);

    if (ctx->client != NULL) {
        client.data = (u_char *) ctx->client->name.data;
        client.len = ctx->client->name.len;

    } else {
        ngx_str_null(&client);
    }

    if (ctx->route != NULL) {
        route.data = (u_char *) ctx->route->name.data;
        route.len = ctx->route->name.len;

    } else {
        ngx_str_null(&route);
    }

    if (ngx_http_airlock_request_id(r, &id) != NGX_OK) {
        ngx_str_set(&id, "-");
    }

    /* the error log line: the detail never holds a secret */

    if (dlen > AL_DETAIL_MAX) {
        dlen = AL_DETAIL_MAX;
    }

    esc.data = buf;
    esc.len = ngx_http_airlock_json_escape(buf, (u_char *) detail, dlen)
              - buf;

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "airlock: denied, reason \"%s\", client \"%V\", "
                  "route \"%V\", request_id \"%V\": %V",
                  reason, &client, &route, &id, &esc);

    ascf = ngx_http_get_module_srv_conf(r, ngx_http_airlock_module);
    file = ascf->deny_log;

    if (file == NULL) {
        return;
    }

    plen = r->unparsed_uri.len;
    cut = 0;

    if (plen > NGX_HTTP_AIRLOCK_PATH_MAX) {
        plen = NGX_HTTP_AIRLOCK_PATH_MAX;
        cut = 1;
    }

    len = sizeof("{\"time\":\"\",\"request_id\":\"\",\"client\":,"
                 "\"method\":\"\",\"path\":\"\",\"route\":,"
                 "\"reason\":\"\",\"detail\":\"\"}") - 1
          + ngx_cached_http_log_iso8601.len
          + ngx_http_airlock_json_escape_len(id.data, id.len)
          + ngx_http_airlock_json_str_len(client.data, client.len)
          + ngx_http_airlock_json_escape_len(r->method_name.data,
                                             r->method_name.len)
          + ngx_http_airlock_json_escape_len(r->unparsed_uri.data, plen)
          + sizeof(NGX_HTTP_AIRLOCK_CUT) - 1
          + ngx_http_airlock_json_str_len(route.data, route.len)
          + ngx_strlen(reason)
          + ngx_http_airlock_json_escape_len((u_char *) detail, dlen)
          + 1;

    line = ngx_pnalloc(r->pool, len);
    if (line == NULL) {
        return;
    }

    p = ngx_cpymem(line, "{\"time\":\"", sizeof("{\"time\":\"") - 1);
    p = ngx_cpymem(p, ngx_cached_http_log_iso8601.data,
                   ngx_cached_http_log_iso8601.len);

    p = ngx_cpymem(p, "\",\"request_id\":\"",
                   sizeof("\",\"request_id\":\"") - 1);
    p = ngx_http_airlock_json_escape(p, id.data, id.len);

    p = ngx_cpymem(p, "\",\"client\":", sizeof("\",\"client\":") - 1);
    p = ngx_http_airlock_json_str(p, client.data, client.len);

    p = ngx_cpymem(p, ",\"method\":\"", sizeof(",\"method\":\"") - 1);
    p = ngx_http_airlock_json_escape(p, r->method_name.data,
                                     r->method_name.len);

    p = ngx_cpymem(p, "\",\"path\":\"", sizeof("\",\"path\":\"") - 1);
    p = ngx_http_airlock_json_escape(p, r->unparsed_uri.data, plen);

    if (cut) {
        p = ngx_cpymem(p, NGX_HTTP_AIRLOCK_CUT,
                       sizeof(NGX_HTTP_AIRLOCK_CUT) - 1);
    }

    p = ngx_cpymem(p, "\",\"route\":", sizeof("\",\"route\":") - 1);
    p = ngx_http_airlock_json_str(p, route.data, route.len);

    p = ngx_sprintf(p, ",\"reason\":\"%s\",\"detail\":\"", reason);
    p = ngx_http_airlock_json_escape(p, (u_char *) detail, dlen);
    p = ngx_cpymem(p, "\"}", 2);
    *p++ = LF;

    n = ngx_write_fd(file->fd, line, p - line);

    if (n == -1) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, ngx_errno,
                      ngx_write_fd_n " to \"%s\" failed", file->name.data);

    } else if (n != p - line) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      ngx_write_fd_n " to \"%s\" was incomplete: %z of %uz",
                      file->name.data, n, (size_t) (p - line));
    }
}


ngx_int_t
ngx_http_airlock_request_id(ngx_http_request_t *r, ngx_str_t *id)
{
    ngx_http_variable_value_t     *v;
    ngx_http_airlock_main_conf_t  *amcf;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    v = ngx_http_get_indexed_variable(r, amcf->request_id_index);

    if (v == NULL || v->not_found) {
        return NGX_ERROR;
    }

    id->data = v->data;
    id->len = v->len;

    return NGX_OK;
}


/* a JSON string, or null when there is none */

static u_char *
ngx_http_airlock_json_str(u_char *p, u_char *s, size_t len)
{
    if (s == NULL) {
        return ngx_cpymem(p, "null", 4);
    }

    *p++ = '"';
    p = ngx_http_airlock_json_escape(p, s, len);
    *p++ = '"';

    return p;
}


static size_t
ngx_http_airlock_json_str_len(u_char *s, size_t len)
{
    if (s == NULL) {
        return 4;
    }

    return 2 + ngx_http_airlock_json_escape_len(s, len);
}


/*
 * Bytes outside printable ASCII become \u00XX, one code point per byte,
 * so the line is valid JSON (and UTF-8) whatever the client sent.
 */

u_char *
ngx_http_airlock_json_escape(u_char *dst, u_char *src, size_t len)
{
    u_char         c;
    static u_char  hex[] = "0123456789abcdef";

    while (len--) {
        c = *src++;

        if (c == '"' || c == '\\') {
            *dst++ = '\\';
            *dst++ = c;

        } else if (c < 0x20 || c >= 0x7f) {
            *dst++ = '\\';
            *dst++ = 'u';
            *dst++ = '0';
            *dst++ = '0';
            *dst++ = hex[c >> 4];
            *dst++ = hex[c & 0xf];

        } else {
            *dst++ = c;
        }
    }

    return dst;
}


size_t
ngx_http_airlock_json_escape_len(u_char *src, size_t len)
{
    u_char  c;
    size_t  n;

    n = 0;

    while (len--) {
        c = *src++;

        if (c == '"' || c == '\\') {
            n += 2;

        } else if (c < 0x20 || c >= 0x7f) {
            n += 6;

        } else {
            n++;
        }
    }

    return n;
}
