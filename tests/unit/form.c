/*
 * al_form_method_check(): a form body's _method field, however a parser
 * upstream would read its name, and the route body decision that calls
 * it on every route with a body; every entry of al_fold_letters[] read
 * as its letter in a field name, raw, "%XX"-escaped and "%uXXXX", and no
 * other character.
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock.h"
#include "al_internal.h"
#include "tap.h"


#define FORM  "application/x-www-form-urlencoded"
#define MP    "multipart/form-data; boundary=b"

/* one part named by the disposition parameters given */
#define PART(params)                                                          \
    "--b\r\nContent-Disposition: form-data; " params "\r\n\r\nDELETE\r\n"  \
    "--b--\r\n"


static const char *const  policy_yaml =
    "version: 1\n"
    "clients:\n"
    "  agent: { unix_uid: 0 }\n"
    "upstreams:\n"
    "  app: { url: \"http://127.0.0.1:9090\" }\n"
    "routes:\n"
    "  - name: raw\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: /raw }\n"
    "    upstream: app\n"
    "    to: /raw\n"
    "    body: { max_bytes: 1024 }\n"
    "  - name: form\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: /form }\n"
    "    upstream: app\n"
    "    to: /form\n"
    "    body: { max_bytes: 1024, content_type: " FORM " }\n"
    "  - name: open\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: /open }\n"
    "    upstream: app\n"
    "    to: /open\n"
    "    body: { max_bytes: 1024, json: { id: '^[0-9]+$' },"
    " additional: true }\n"
    "  - name: listed\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: /listed }\n"
    "    upstream: app\n"
    "    to: /listed\n"
    "    body: { max_bytes: 1024, json: { _method: '^PATCH$' } }\n"
    "  - name: typed\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: /typed }\n"
    "    upstream: app\n"
    "    to: /typed\n"
    "    body: { max_bytes: 1024 }\n"
    "    inject: { content-type: " FORM " }\n"
    "  - name: shadow\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: \"/shadow/{dir}\" }\n"
    "    params: { dir: '^[a-z]+$' }\n"
    "    upstream: app\n"
    "    to: \"/shadow/{dir}\"\n"
    "    query: { allow: [file, page], patterns: { file: '^[a-z]+$' } }\n"
    "    body: { max_bytes: 1024 }\n"
    "alerts:\n"
    "  deny: { threshold: 3, window: 60s }\n";


static int check(const char *ctype, const char *s);
static int check_len(const char *ctype, const char *s, size_t len);
static void refuse(const char *ctype, const char *s, const char *name);
static void pass(const char *ctype, const char *s, const char *name);
static void test_urlencoded(void);
static void test_multipart(void);
static void test_multipart_php(void);
static void test_multipart_content_id(void);
static void test_overlap(void);
static void overlap_alarm(int signo);
static void test_types(void);
static void test_charsets(void);
static void test_query_charset(void);
static void test_proto(void);
static void test_proto_overlap(void);
static al_reason_t body(const al_route_t *route, const char *ctype,
    const char *s);
static void test_routes(void);
static void test_fold_letters(void);
static size_t fold_body(char *buf, size_t size, unsigned how,
    uint32_t code);


static char           why[AL_DETAIL_MAX];
static al_decision_t  d;


int
main(void)
{
    test_urlencoded();
    test_multipart();
    test_multipart_php();
    test_multipart_content_id();
    test_overlap();
    test_types();
    test_charsets();
    test_routes();
    test_fold_letters();
    test_proto();
    test_proto_overlap();

    return tap_done();
}


static int
check(const char *ctype, const char *s)
{
    return check_len(ctype, s, strlen(s));
}


static int
check_len(const char *ctype, const char *s, size_t len)
{
    why[0] = '\0';

    return al_form_method_check(ctype, ctype ? strlen(ctype) : 0,
                                (const unsigned char *) s, len, why,
                                sizeof(why));
}


static void
refuse(const char *ctype, const char *s, const char *name)
{
    if (!tap_ok(check(ctype, s) == -1, name)) {
        return;
    }

    if (strstr(why, "_method") == NULL && strstr(why, "RFC 2") == NULL
        && strstr(why, "charset") == NULL)
    {
        tap_diag("why: ", why);
    }
}


static void
pass(const char *ctype, const char *s, const char *name)
{
    if (!tap_ok(check(ctype, s) == 0, name)) {
        tap_diag("why: ", why);
    }
}


static void
test_urlencoded(void)
{
    refuse(FORM, "_method=DELETE", "urlencoded: _method");
    tap_is_str(why, "form field \"_method\" would change the method upstream",
               "urlencoded: the reason");
    refuse(FORM, "a=1&_method=PUT&b=2", "urlencoded: _method among others");
    refuse(FORM, "a=1;_method=PUT", "urlencoded: after ';'");
    refuse(FORM, "%5Fmethod=PUT", "urlencoded: %5Fmethod");
    refuse(FORM, "%5fm%65thod=PUT", "urlencoded: lower-case escapes");
    refuse(FORM, "%u005Fmethod=PUT", "urlencoded: %u005F (System.Web)");
    refuse(FORM, "%U005f%u006D%u0065thod=PUT", "urlencoded: %U, %u escapes");
    refuse(FORM, "_METHOD=PUT", "urlencoded: upper case (ASP.NET)");
    refuse(FORM, "_method[]=PUT", "urlencoded: _method[] (PHP, Rack)");
    refuse(FORM, "_method%5B%5D=PUT", "urlencoded: _method%5B%5D");
    refuse(FORM, "[]_method=PUT", "urlencoded: []_method (Rack)");
    refuse(FORM, "_method]=PUT", "urlencoded: _method] (Rack)");
    refuse(FORM, "a=1& _method=PUT", "urlencoded: leading space (Rack 2)");
    refuse(FORM, "+_method=PUT", "urlencoded: leading '+' (PHP)");
    refuse(FORM, ".method=PUT", "urlencoded: .method (PHP reads _method)");
    refuse(FORM, "%20.method=PUT", "urlencoded: leading space, then '.' "
           "(PHP)");
    refuse(FORM, "_method%00x=PUT", "urlencoded: a NUL ends it (PHP)");
    refuse(FORM, "_method", "urlencoded: without '='");
    refuse(FORM, "_method=", "urlencoded: empty value");

    pass(FORM, "a=1&b=2", "urlencoded: other fields");
    pass(FORM, "x_method=PUT", "urlencoded: x_method");
    pass(FORM, "%20method=PUT", "urlencoded: \" method\" is \"method\"");
    pass(FORM, "_methods=PUT", "urlencoded: _methods");
    pass(FORM, "_metho=PUT", "urlencoded: _metho");
    pass(FORM, "a=_method&b=%5Fmethod", "urlencoded: _method as a value");
    pass(FORM, "a%3D1%26_method=PUT", "urlencoded: an encoded '&' is data");
    pass(FORM, "%255Fmethod=PUT", "urlencoded: decoded once only");
    pass(FORM, "%u05Fmethod=PUT", "urlencoded: %u with three digits is "
         "no escape");
    pass(FORM, "%u015Fmethod=PUT", "urlencoded: %u015F is no '_'");
    pass(FORM, "", "urlencoded: empty body");
    pass(FORM, "&&=&", "urlencoded: empty fields");

    /* ASP.NET MVC reads the override header's name as a form field */
    refuse(FORM, "X-HTTP-Method-Override=DELETE",
           "urlencoded: X-HTTP-Method-Override (ASP.NET MVC)");
    tap_is_str(why, "form field \"X-HTTP-Method-Override\" would change "
               "the method upstream", "urlencoded: its reason");
    refuse(FORM, "x-http-method-override[]=DELETE",
           "urlencoded: x-http-method-override[]");
    refuse(MP, PART("name=\"X-Http-Method-Override\""),
           "multipart: X-Http-Method-Override");
    tap_is_str(why, "multipart field \"X-HTTP-Method-Override\" would "
               "change the method upstream", "multipart: its reason");
    pass(FORM, "X-HTTP-Method-Overrides=DELETE",
         "urlencoded: X-HTTP-Method-Overrides");
    pass(FORM, "X_HTTP_Method_Override=DELETE",
         "urlencoded: X_HTTP_Method_Override is another name");
}


static void
test_multipart(void)
{
    refuse(MP, PART("name=\"_method\""), "multipart: name=\"_method\"");
    tap_is_str(why, "multipart field \"_method\" would change the method "
               "upstream", "multipart: the reason");
    refuse(MP, PART("name=_method"), "multipart: unquoted");
    refuse(MP, PART("NAME = \"_method\""), "multipart: case, spaces");
    refuse(MP, PART("name=\"\\_method\""), "multipart: backslash escape");
    refuse(MP, PART("name=\"%5Fmethod\""), "multipart: percent-encoded");
    refuse(MP, PART("name*=utf-8''%5Fmethod"), "multipart: RFC 2231 name*");
    refuse(MP, PART("name*=UTF-8'en'_method"), "multipart: ... with a "
           "language");
    refuse(MP, PART("name*0=\"_me\"; name*1=\"thod\""),
           "multipart: RFC 2231 sections refused");
    tap_ok(strstr(why, "RFC 2231") != NULL, "multipart: sections reason");

    /* names this scan cannot read as every upstream does, whatever name */

    refuse(MP, PART("name*=utf-8''a"), "multipart: any RFC 2231 name*");
    tap_is_str(why, "multipart name in RFC 2231 form (name*=, name*0=)",
               "multipart: name* reason");
    refuse(MP, PART("name=\"a\"; name* = \"b\""),
           "multipart: name* with spaces, after a plain name");
    refuse(MP, PART("name=\"=?utf-8?B?X21ldGhvZA==?=\""),
           "multipart: RFC 2047 encoded word (ASP.NET decodes it)");
    tap_is_str(why, "multipart name with an RFC 2047 encoded word "
               "(=?...?=)", "multipart: encoded word reason");
    refuse(MP, PART("name=\"=?UTF-8?q?=5Fmethod?=\""),
           "multipart: encoded word, Q encoding");
    refuse(MP, PART("name==?utf-8?B?X21ldGhvZA==?="),
           "multipart: encoded word, unquoted");
    refuse(MP, PART("name=\"x =?utf-8?B?YQ==?=\""),
           "multipart: encoded word after other text");
    refuse(MP, PART("name=\"%3D?utf-8?B?X21ldGhvZA==?=\""),
           "multipart: encoded word, '=' percent-encoded");
    refuse(MP, PART("name=\"=\\?utf-8?B?X21ldGhvZA==?=\""),
           "multipart: encoded word, '?' backslash-escaped");
    refuse(MP, PART("filename=\"x\";name=\"_method[]\""),
           "multipart: after filename, with []");
    refuse(MP, "garbage name=\"_method\" garbage",
           "multipart: anywhere in the body, boundary or not");
    refuse("multipart/mixed; boundary=b", PART("name=\"_method\""),
           "multipart/mixed (Rack parses any multipart/)");

    /* blanks around '=' and after a token as Go's ParseMediaType trims */

    refuse(MP, PART("name\xc2\xa0=\"_method\""),
           "multipart: U+00A0 before '=' (Go trims Unicode spaces)");
    refuse(MP, PART("name=\xc2\xa0\"_method\""),
           "multipart: U+00A0 after '='");
    refuse(MP, PART("name=_method\xc2\xa0"),
           "multipart: U+00A0 after an unquoted name (not a token byte)");
    refuse(MP, PART("name\v=\v_method\v; filename=x"),
           "multipart: \\v around '=' and after the name");
    refuse(MP, PART("name*\xc2\xa0=utf-8''a"),
           "multipart: RFC 2231, U+00A0 between '*' and '='");

    pass(MP, PART("name=\"a\""), "multipart: another name");
    pass(MP, PART("name=\"a\"; filename=\"_method\""),
         "multipart: filename is not name");
    pass(MP, "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n"
         "_method\r\n--b--\r\n", "multipart: _method as a value");
    pass(MP, PART("name=\"_methodx\""), "multipart: _methodx");
    pass(MP, PART("name=caf\xc3\xa9"), "multipart: a UTF-8 name");
    pass(MP, PART("name\xc2\xa0=\"a\""), "multipart: U+00A0, another name");
    pass(MP, "rename=_method", "multipart: \"name\" inside a word");
    pass(MP, "name", "multipart: \"name\" at the end");
    pass(MP, "name*", "multipart: \"name*\" at the end");
    pass(MP, "name=\"", "multipart: an unterminated quote");
    pass(MP, PART("name=\"a=b?c\""), "multipart: '=' and '?' apart");
    pass(MP, PART("name=\"a\"; filename*=utf-8''caf%C3%A9.txt"),
         "multipart: filename* is a file name (not the field's)");
    pass(MP, PART("name=\"a\"; filename=\"=?utf-8?B?Y2Fmw6k=?=\""),
         "multipart: an encoded-word filename too (.NET sends one)");
}


/*
 * A part's headers as PHP reads them (main/rfc1867.c), which Laravel and
 * Symfony take _method from: a value quoted in ' as in ", and a line
 * that begins with a blank or has no ':' joined to the one before it,
 * without the line end, so a name cut by one is whole to PHP.
 */

static void
test_multipart_php(void)
{
    refuse(MP, PART("name='_method'"), "PHP: name in single quotes");
    refuse(MP, PART("NAME = '_METHOD'; filename=\"x\""),
           "PHP: single quotes, case, spaces");
    refuse(MP, PART("name='\\_method'"),
           "PHP: single quotes, a backslash escape");
    refuse(MP, PART("name=\"_me\r\nthod\""),
           "PHP: a quoted name cut by CRLF, joined");
    refuse(MP, PART("name='_me\nthod'"),
           "PHP: a name in single quotes cut by LF, joined");
    refuse(MP, PART("name=\"\r\n _method\""),
           "PHP: a folded quoted name, its leading blank skipped");
    refuse(MP, PART("name=_me\r\nthod"), "PHP: a token cut by CRLF, joined");
    refuse(MP, PART("name=_\nme\nthod"), "PHP: a token cut twice");
    refuse(MP, PART("na\r\nme=\"_method\""), "PHP: \"name\" cut by CRLF");
    refuse(MP, PART("nam\nE=_method"), "PHP: \"name\" cut by LF");
    refuse(MP, PART("n\r\na\r\nm\r\ne='_method'"),
           "PHP: \"name\" cut between each letter");
    refuse(MP, PART("name=\"X-HTTP-Method-\r\nOverride\""),
           "PHP: X-HTTP-Method-Override cut, joined");

    pass(MP, PART("name='a'"), "PHP: another name in single quotes");
    refuse(MP, PART("name='_method"),
           "PHP: an unterminated single quote ends with its line");
    pass(MP, PART("name=\"_me\r\n thod\""),
         "PHP: a folded line keeps its blank (\"_me thod\")");
    pass(MP, PART("name=_me\r\n thod"),
         "PHP: a token ends at the blank a folded line begins with");
    pass(MP, PART("name=\"_me\r\n\r\nthod\""),
         "PHP: an empty line ends the headers: nothing joined");
    pass(MP, PART("name=_me\rthod"), "PHP: a CR alone is no line end");
    pass(MP, PART("na\r\n me=_method"), "PHP: \"na me\" is no \"name\"");
    pass(MP, PART("na\r\n\r\nme=_method"),
         "PHP: two line ends inside \"name\": not joined");
    pass(MP, PART("name=\"a\"\r\nContent-Type: text/plain"),
         "PHP: a closed value is not read on");
    pass(MP, PART("name=a\r\nContent-Type: text/plain"),
         "PHP: a token and the next header");
    pass(MP, PART("name=_method_\r\nx"),
         "PHP: a token read on is longer than the name");
    pass(MP, "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n"
         "name=x\nport=1\n--b--\r\n", "PHP: name=x in a part's text");
}


/*
 * Rack (Rails, Sinatra) names a part that has no Content-Disposition
 * name by its Content-ID header, and MethodOverride reads _method from
 * what Rack parsed.
 */

static void
test_multipart_content_id(void)
{
    refuse(MP, "--b\r\nContent-ID: _method\r\n\r\nDELETE\r\n--b--\r\n",
           "Rack: a part named by its Content-ID");
    refuse(MP, "--b\r\ncontent-id:_METHOD\r\n\r\nDELETE\r\n--b--\r\n",
           "Rack: Content-ID in any case, no blank");
    refuse(MP, "--b\r\nContent-ID: [_method]\r\n\r\nDELETE\r\n--b--\r\n",
           "Rack: its leading brackets skipped");
    refuse(MP, "--b\r\nContent-ID:\r\n _method\r\n\r\nDELETE\r\n",
           "Rack: a folded Content-ID");
    refuse(MP, "--b\r\nX-Content-ID: _method\r\n\r\nDELETE\r\n",
           "Rack 2: Content-ID found inside another name");
    refuse(MP, "--b\r\nContent-Disposition: form-data; filename=\"x\"\r\n"
           "Content-ID: X-HTTP-Method-Override\r\n\r\nDELETE\r\n",
           "Rack: Content-ID beside a disposition without a name");

    pass(MP, "--b\r\nContent-ID: <_method@x>\r\n\r\nDELETE\r\n--b--\r\n",
         "Rack: another Content-ID");
    pass(MP, "--b\r\nContent-ID _method\r\n\r\nDELETE\r\n--b--\r\n",
         "Rack: no ':', no header");
    pass(MP, "--b\r\nContent-Type: _method\r\n\r\nDELETE\r\n--b--\r\n",
         "Rack: another header");
    pass(MP, "--b\r\nContent-ID: _method_x\r\n\r\nDELETE\r\n--b--\r\n",
         "Rack: a longer name");
}


/*
 * Values that overlap: "name=name=..." is as many names, each a token to
 * the end of the body.  Read whole for each name, 64 KiB of it held an
 * nginx worker for over a second, 1 MiB for minutes.  The alarm is a
 * safety net: at 1 MiB a linear scan takes milliseconds, the quadratic
 * one several minutes, and the alarm ends the test as a failure.
 */

static void
test_overlap(void)
{
    char    *s;
    size_t   i, n;

    n = 1024 * 1024;

    s = malloc(n + sizeof("_method"));
    if (!tap_ok(s != NULL, "overlap: memory")) {
        return;
    }

    for (i = 0; i + 5 <= n; i += 5) {
        memcpy(s + i, "name=", 5);
    }

    n = i;

    (void) signal(SIGALRM, overlap_alarm);
    alarm(10);

    tap_ok(check_len(MP, s, n) == 0, "overlap: 1 MiB of name=name=... "
           "passes, read in linear time");

    memcpy(s + n, "_method", 7);
    tap_ok(check_len(MP, s, n + 7) == -1 && strstr(why, "_method") != NULL,
           "overlap: ... ending in name=_method is refused");

    memcpy(s + 5, "=?", 2);
    tap_ok(check_len(MP, s, n) == -1 && strstr(why, "RFC 2047") != NULL,
           "overlap: ... with an encoded word in the first is refused");

    memcpy(s + 5, "\"=?", 3);
    tap_ok(check_len(MP, s, n) == -1 && strstr(why, "RFC 2047") != NULL,
           "overlap: ... or in a quoted value among them");

    /* each token read on past its line end, as PHP joins the lines */

    for (i = 0; i + 7 <= n; i += 7) {
        memcpy(s + i, "name=x\n", 7);
    }

    tap_ok(check_len(MP, s, i) == 0, "overlap: 1 MiB of name=x LF ... "
           "passes, read in linear time");

    for (i = 0; i + 7 <= n; i += 7) {
        memcpy(s + i, "name=\"\n", 7);
    }

    tap_ok(check_len(MP, s, i) == 0, "overlap: 1 MiB of name=\" LF ... "
           "passes, read in linear time");

    for (i = 0; i + 8 <= n; i += 8) {
        memcpy(s + i, "nam\ne='\n", 8);
    }

    tap_ok(check_len(MP, s, i) == 0, "overlap: 1 MiB of nam LF e=' LF ... "
           "passes, read in linear time");

    for (i = 0; i + 11 <= n; i += 11) {
        memcpy(s + i, "Content-ID:", 11);
    }

    tap_ok(check_len(MP, s, i) == 0, "overlap: 1 MiB of Content-ID: ... "
           "passes, read in linear time");

    memcpy(s + i, "_method", 7);
    tap_ok(check_len(MP, s, i + 7) == -1 && strstr(why, "_method") != NULL,
           "overlap: ... ending in Content-ID:_method is refused");

    alarm(0);

    free(s);
}


static void
overlap_alarm(int signo)
{
    ssize_t  n;

    static const char  msg[] = "not ok - overlap: the multipart scan did "
                               "not end in 10 s (quadratic)\n";

    (void) signo;

    n = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
    (void) n;

    _exit(1);
}


/*
 * A form is read as ASCII: its charset must be one in which the ASCII
 * bytes mean what they say.  "_method=DELETE" in UTF-16LE, which ASP.NET
 * Core decodes by the charset, has no ASCII "_method" in it.
 */

static void
test_charsets(void)
{
    static const char  utf16[] = "_\0m\0e\0t\0h\0o\0d\0=\0D\0E\0L\0"
                                 "E\0T\0E\0";

    tap_ok(check_len(FORM "; charset=utf-16", utf16, sizeof(utf16) - 1)
           == -1, "charset=utf-16: _method in UTF-16LE refused");
    tap_is_str(why, "form body: the charset must be utf-8, us-ascii or "
               "iso-8859-1", "charset: the reason");

    refuse(FORM "; charset=UTF-16LE", "a=1", "charset=UTF-16LE");
    refuse(FORM "; charset=utf-16be", "a=1", "charset=utf-16be");
    refuse(FORM "; charset=\"utf-16\"", "a=1", "charset quoted");
    refuse(FORM ";charset = utf-32", "a=1", "charset, spaces around '='");
    refuse(FORM "; CHARSET=UCS-2", "a=1", "CHARSET=UCS-2");
    refuse(FORM "; charset=utf-7", "a=1", "charset=utf-7");
    refuse(FORM "; charset=cp037", "a=1", "charset=cp037 (EBCDIC)");
    refuse(FORM "; charset=ibm500", "a=1", "charset=ibm500 (EBCDIC)");
    refuse(FORM "; charset=x-unknown", "a=1", "an unknown charset");
    refuse(FORM "; charset=windows-1252", "a=1", "windows-1252 (not listed)");
    refuse(FORM "; charset=", "a=1", "an empty charset");
    refuse(FORM "; charset=utf-8; charset=utf-16", "a=1",
           "a second charset");
    refuse(FORM "; charset*=utf-8''utf-8", "a=1", "charset* (RFC 2231)");
    refuse(FORM "; charset*0=utf-8", "a=1", "charset*0 (RFC 2231)");
    refuse(FORM "; charset=\"utf\\-8\"", "a=1", "an escaped quoted value");
    refuse(FORM ", text/plain; charset=utf-16", "a=1",
           "a charset after ','");
    refuse(MP "; charset=utf-16", PART("name=\"a\""),
           "multipart: charset=utf-16");
    refuse("multipart/form-data; boundary=\"x; charset=utf-16\"",
           PART("name=\"a\""), "multipart: a charset in the boundary counts");
    refuse("; charset=utf-16", "a=1", "no media type (Rack's form)");

    pass(FORM "; charset=utf-8", "a=1", "charset=utf-8");
    pass(FORM "; charset=UTF-8", "a=1", "charset=UTF-8");
    pass(FORM "; charset=\"utf8\"", "a=1", "charset=\"utf8\"");
    pass(FORM "; charset=US-ASCII", "a=1", "charset=US-ASCII");
    pass(FORM "; charset=ascii", "a=1", "charset=ascii");
    pass(FORM "; charset=ISO-8859-1", "a=1", "charset=ISO-8859-1");
    pass(FORM "; charset=latin1", "a=1", "charset=latin1");
    pass(FORM "; charset=iso_8859-1", "a=1", "charset=iso_8859-1");
    pass(MP "; charset=utf-8", PART("name=\"a\""),
         "multipart: charset=utf-8");
    test_query_charset();

    /* Tomcat reads the charset after the first "charset=", wherever */
    refuse(FORM "; xcharset=utf-16", "a=1", "xcharset=utf-16 (Tomcat)");
    refuse(FORM "; a1charset=utf-16", "a=1", "a1charset=utf-16 (Tomcat)");
    pass(FORM "; xcharset=utf-8", "a=1", "xcharset=utf-8");
    pass(FORM "; charsets=utf-16", "a=1", "charsets is another parameter");
    pass("text/plain; charset=utf-16", "_method=PUT",
         "text/plain in UTF-16 is not a form");
    pass(FORM "; charset=utf-16", "", "an empty body");

    /*
     * A byte order mark names a charset too: ASP.NET Core's FormReader
     * decodes by it, and drops UTF-8's before the first field.
     */

    tap_ok(check_len(FORM, "\xff\xfe" "_\0m\0e\0t\0h\0o\0d\0=\0P\0", 18)
           == -1, "a UTF-16LE byte order mark refused");
    tap_is_str(why, "form body: a UTF-16 or UTF-32 byte order mark would "
               "have it read in that charset", "byte order mark: the reason");
    tap_ok(check_len(FORM, "\xfe\xff\0_\0m", 6) == -1,
           "a UTF-16BE byte order mark refused");
    tap_ok(check_len(FORM, "\xff\xfe\0\0_\0\0\0", 8) == -1,
           "a UTF-32LE byte order mark refused");
    tap_ok(check_len(FORM, "\0\0\xfe\xff\0\0\0_", 8) == -1,
           "a UTF-32BE byte order mark refused");
    tap_ok(check_len(MP, "\xff\xfe-\0-\0b\0", 8) == -1,
           "multipart: a UTF-16 byte order mark refused");
    refuse(FORM, "\xef\xbb\xbf_method=DELETE",
           "_method after a UTF-8 byte order mark");
    refuse(FORM, "\xef\xbb\xbf%5Fmethod=DELETE",
           "%5Fmethod after a UTF-8 byte order mark");

    pass(FORM, "\xef\xbb\xbf" "a=1&b=2", "a UTF-8 byte order mark, other "
         "fields");
    pass(FORM, "a=\xff\xfe", "FF FE inside a value");
    tap_ok(check_len(NULL, "\xff\xfe" "a\0=\0", 6) == 0,
           "no Content-Type: a byte order mark is not read");
    tap_ok(check_len("text/plain", "\xff\xfe_\0m\0", 6) == 0,
           "text/plain: a byte order mark is not read");
}


static void
test_types(void)
{
    refuse(NULL, "_method=PUT", "no Content-Type: read as a form (Rack)");
    refuse("", "_method=PUT", "empty Content-Type");
    refuse("; charset=utf-8", "_method=PUT", "Content-Type without a type");
    refuse(FORM "; charset=utf-8", "_method=PUT", "form with parameters");
    refuse("Application/X-WWW-Form-URLEncoded", "_method=PUT",
           "form type in any case");
    refuse(FORM ", text/plain", "_method=PUT", "form type before ','");
    refuse(" " FORM, "_method=PUT", "form type after a space");
    refuse(FORM "\v", "_method=PUT", "form type before \\v (Rack's rstrip)");
    refuse(FORM "\f; charset=utf-8", "_method=PUT",
           "form type before \\f and ';' (Rack 2's split)");
    refuse(FORM "\xa0", "_method=PUT",
           "form type before 0xA0 (trim() on a Latin-1 header)");
    refuse(FORM "\xc2\xa0", "_method=PUT",
           "form type before UTF-8 U+00A0 (Go's TrimSpace)");
    refuse("\v" FORM, "_method=PUT", "form type after \\v");
    refuse("\xc2\xa0" MP, PART("name=\"_method\""),
           "multipart type after UTF-8 U+00A0");
    refuse("\x1f", "_method=PUT", "a control byte alone: no media type");

    pass("text/plain", "_method=PUT", "text/plain is not a form");
    pass("application/json", "{\"_method\":\"PUT\"}",
         "JSON is not scanned here (al_json.c)");
    refuse("application/x-www-form-urlencodedx", "_method=PUT",
           "a longer type that begins with the form's (Symfony)");
    refuse("Application/X-WWW-Form-URLEncoded-v2", "_method=PUT",
           "a longer type that begins with the form's, in any case");
    pass("application/x-www-form-urlencode", "_method=PUT",
         "a shorter type is another type");
    refuse("text/plain; x=application/x-www-form-urlencoded", "_method=PUT",
           "a type that holds the form's in a parameter (old Fastify)");
    refuse("text/plain; x=\"Application/X-WWW-Form-URLEncoded\"",
           "_method=PUT", "a type that holds the form's, quoted, any case");
    refuse("text/plain; x=multipart/form-data", PART("name=\"_method\""),
           "a type that holds multipart/form-data in a parameter");
    pass("text/plain; x=multipart/mixed", PART("name=\"_method\""),
         "a parameter of another multipart type is no form");
    refuse("application/json; x=application/x-www-form-urlencoded",
           "_method=PUT", "JSON whose parameter holds the form's type");
    pass("application/octet-stream", "\x01name=\"_method\"",
         "binary is not a form");
    pass("text/plain\v", "_method=PUT", "text/plain before \\v is not a form");
    pass("text/plain\xc2\xa0", "_method=PUT",
         "text/plain before U+00A0 is not a form");
}


static al_reason_t
body(const al_route_t *route, const char *ctype, const char *s)
{
    return al_decide_body(route, ctype, ctype ? strlen(ctype) : 0,
                          (const unsigned char *) s, strlen(s), &d);
}


/* al_decide_body() on routes with a body */

static void
test_routes(void)
{
    al_error_t          err;
    al_policy_t        *p;
    const al_route_t   *raw, *form, *open, *listed, *typed, *shadow;

    p = al_policy_parse("form.yaml", policy_yaml, strlen(policy_yaml), NULL,
                        &err);
    if (!tap_ok(p != NULL, "policy loads")) {
        printf("# %s:%u:%u: %s\n", err.file, err.line, err.column, err.msg);
        return;
    }

    raw = al_policy_route(p, "raw", 3);
    form = al_policy_route(p, "form", 4);
    open = al_policy_route(p, "open", 4);
    listed = al_policy_route(p, "listed", 6);
    typed = al_policy_route(p, "typed", 5);
    shadow = al_policy_route(p, "shadow", 6);

    memset(&d, 0, sizeof(d));

    tap_is_int(body(raw, FORM, "a=1&_method=DELETE"), AL_REASON_BODY,
               "route without content_type: form _method refused");
    tap_ok(strstr(d.detail, "_method") != NULL, "the detail names _method");
    tap_is_int(body(raw, NULL, "_method=DELETE"),
               AL_REASON_BODY, "route without content_type: no type");
    tap_is_int(body(raw, MP, PART("name=\"_method\"")), AL_REASON_BODY,
               "route without content_type: multipart _method refused");
    tap_is_int(body(raw, FORM, "a=1&b=2"), AL_REASON_NONE,
               "route without content_type: other forms pass");
    tap_is_int(body(raw, "text/plain", "_method=DELETE"), AL_REASON_NONE,
               "route without content_type: text passes");
    tap_is_int(body(form, FORM, "%5Fmethod=PUT"), AL_REASON_BODY,
               "form route: _method refused");
    tap_is_int(body(form, FORM, "a=1"), AL_REASON_NONE,
               "form route: a form passes");
    tap_is_int(body(form, FORM "; charset=utf-16", "a=1"), AL_REASON_BODY,
               "form route: a form in UTF-16 refused");
    tap_ok(strstr(d.detail, "charset") != NULL, "the detail names the "
           "charset");
    tap_is_int(body(raw, MP, PART("name=\"=?utf-8?B?X21ldGhvZA==?=\"")),
               AL_REASON_BODY, "route without content_type: an encoded-word "
               "multipart name refused");

    /* the upstream gets the injected Content-Type, not the client's */

    tap_is_int(body(typed, "text/plain", "_method=DELETE"), AL_REASON_BODY,
               "form type injected over text/plain: _method refused");
    tap_is_int(body(typed, NULL, "a=1"), AL_REASON_NONE,
               "form type injected: another form passes");

    tap_is_int(body(open, "application/json",
                    "{\"id\":\"1\",\"_method\":\"DELETE\"}"),
               AL_REASON_BODY, "JSON, additional: top-level _method refused "
               "(Laravel)");
    tap_is_str(d.detail, "field \"_method\" would change the method upstream",
               "JSON: the detail");
    tap_is_int(body(open, "application/json",
                    "{\"id\":\"1\",\"_METHOD\":\"DELETE\"}"),
               AL_REASON_BODY, "JSON, additional: in another case too");
    tap_is_int(body(open, "application/json",
                    "{\"id\":\"1\",\"x\":{\"_method\":\"DELETE\"}}"),
               AL_REASON_NONE, "JSON, additional: a nested one is data");
    tap_is_int(body(open, "application/json", "{\"id\":\"1\",\"y\":2}"),
               AL_REASON_NONE, "JSON, additional: other fields pass");
    tap_is_int(body(listed, "application/json", "{\"_method\":\"PATCH\"}"),
               AL_REASON_NONE, "JSON: a listed _method is the policy's "
               "choice");

    /* a form field would stand for the param of its name */

    tap_is_int(body(shadow, FORM, "a=1&file=..%2Fx"), AL_REASON_BODY,
               "form field named like a checked query parameter refused");
    tap_is_str(d.detail, "form field named like the checked param \"file\" "
               "would stand for it upstream", "the detail names it");
    tap_is_int(body(shadow, FORM, "+%5BFile.=x"), AL_REASON_NONE,
               "a longer name passes");
    tap_is_int(body(shadow, FORM, "+%5BFILE%5B%5D=x"), AL_REASON_BODY,
               "read as loosely as _method");
    tap_is_int(body(shadow, NULL, "DIR=.."), AL_REASON_BODY,
               "form field named like a path param refused");
    tap_is_int(body(shadow, MP, PART("name=\"dir\"")), AL_REASON_BODY,
               "multipart field named like a path param refused");
    tap_is_str(d.detail, "multipart field named like the checked param "
               "\"dir\" would stand for it upstream", "the detail names it");
    tap_is_int(body(shadow, FORM, "%C4%B1%C5%BF%C4%B0tem=x"),
               AL_REASON_NONE, "U+0131, U+017F, U+0130 are i, s, i: "
               "\"isitem\" is no param");
    tap_is_int(body(shadow, FORM, "f%C4%B1le=.."), AL_REASON_BODY,
               "a dotless i folds to i (as a JSON key does)");
    tap_is_int(body(shadow, FORM, "D\xc4\xb0R=.."), AL_REASON_BODY,
               "a raw dotted capital I folds to i");
    tap_is_int(body(shadow, MP, PART("name=\"d\xc4\xb1r\"")),
               AL_REASON_BODY, "... in a multipart name too");
    tap_is_int(body(shadow, MP, PART("name='file'")), AL_REASON_BODY,
               "a multipart name in single quotes (PHP)");
    tap_is_int(body(shadow, MP, PART("name=\"fi\r\nle\"")),
               AL_REASON_BODY, "a multipart name cut by a line end (PHP)");
    tap_is_int(body(shadow, MP, PART("name=\"fi\r\nles\"")),
               AL_REASON_NONE, "... that is another name joined passes");
    tap_is_int(body(shadow, FORM, "f%C4%B2le=.."), AL_REASON_NONE,
               "U+0132 is no i");
    tap_is_int(body(shadow, FORM, "fi%C4"), AL_REASON_NONE,
               "a lead byte at the end is read as itself");
    tap_is_int(body(shadow, FORM, "f%u0131le=.."), AL_REASON_BODY,
               "a %u escape of a dotless i folds to i");
    tap_is_int(body(shadow, FORM, "f%u00C4%B1le=.."), AL_REASON_NONE,
               "%u00C4 is a character, not a UTF-8 lead byte");
    tap_is_int(body(shadow, FORM, "page=..&files=1&xdir=2"), AL_REASON_NONE,
               "a query parameter without a pattern, other names pass");
    tap_is_int(body(raw, FORM, "file=..&dir=.."), AL_REASON_NONE,
               "a route without those params passes them");

    al_policy_free(p);
}


/* how fold_body() writes the character */
#define FOLD_RAW      0                 /* UTF-8 */
#define FOLD_ESCAPED  1                 /* UTF-8, each byte "%XX" */
#define FOLD_WIDE     2                 /* "%uXXXX" */
#define FOLD_PART     3                 /* UTF-8 in a multipart name */
#define FOLD_WAYS     4


/*
 * Fields "xa" to "xz" are checked params: "x" and a letter of
 * al_fold_letters[] written each way is refused as "x" and its letter,
 * and "x" and any other character from U+0080 to U+FFFF is no param.
 */

static void
test_fold_letters(void)
{
    int          rc;
    char         buf[256], names[26][3], want[64];
    size_t       k, n, bad;
    unsigned     how, letter;
    uint32_t     code;
    al_param_t   params[26];

    static const char *const  ways[] = {
        "raw UTF-8", "UTF-8 as %XX", "%uXXXX", "a multipart name"
    };

    memset(params, 0, sizeof(params));

    for (k = 0; k < 26; k++) {
        names[k][0] = 'x';
        names[k][1] = (char) ('a' + k);
        names[k][2] = '\0';
        params[k].name.data = names[k];
        params[k].name.len = 2;
    }

    for (how = 0; how < FOLD_WAYS; how++) {
        bad = 0;

        for (k = 0; k < al_nfold_letters; k++) {
            code = al_fold_letters[k].code;
            letter = al_fold_letters[k].letter;

            n = fold_body(buf, sizeof(buf), how, code);
            rc = al_form_check(how == FOLD_PART ? MP : FORM,
                               strlen(how == FOLD_PART ? MP : FORM),
                               (const unsigned char *) buf, n, params, 26,
                               NULL, 0, 0, why, sizeof(why));

            (void) snprintf(want, sizeof(want), "\"x%c\"", letter);

            if (rc != -1 || strstr(why, want) == NULL) {
                tap_diag("not folded: ", buf);
                bad++;
            }
        }

        (void) snprintf(want, sizeof(want), "fold letters: each entry, %s, "
                        "is its letter", ways[how]);
        tap_ok(bad == 0, want);

        bad = 0;

        for (code = 0x80; code <= 0xffff; code++) {
            if (al_fold_letter(code) != 0
                || (how != FOLD_WIDE && code >= 0xd800 && code <= 0xdfff))
            {
                continue;
            }

            n = fold_body(buf, sizeof(buf), how, code);

            if (al_form_check(how == FOLD_PART ? MP : FORM,
                              strlen(how == FOLD_PART ? MP : FORM),
                              (const unsigned char *) buf, n, params, 26,
                              NULL, 0, 0, why, sizeof(why))
                != 0)
            {
                tap_diag("folded: ", buf);
                bad++;
            }
        }

        (void) snprintf(want, sizeof(want), "fold letters: no other "
                        "character, %s, is a letter", ways[how]);
        tap_ok(bad == 0, want);
    }
}


/* a body with one field, "x" and the code point written as how says */

static size_t
fold_body(char *buf, size_t size, unsigned how, uint32_t code)
{
    int            n;
    char           name[32];
    size_t         k, len;
    unsigned char  u[4];

    if (code < 0x800) {
        u[0] = (unsigned char) (0xc0 | code >> 6);
        u[1] = (unsigned char) (0x80 | (code & 0x3f));
        len = 2;

    } else {
        u[0] = (unsigned char) (0xe0 | code >> 12);
        u[1] = (unsigned char) (0x80 | (code >> 6 & 0x3f));
        u[2] = (unsigned char) (0x80 | (code & 0x3f));
        len = 3;
    }

    name[0] = 'x';

    if (how == FOLD_WIDE) {
        (void) snprintf(name + 1, sizeof(name) - 1, "%%u%04X",
                        (unsigned) code);

    } else if (how == FOLD_ESCAPED) {
        for (k = 0; k < len; k++) {
            (void) snprintf(name + 1 + 3 * k, sizeof(name) - 1 - 3 * k,
                            "%%%02X", u[k]);
        }

    } else {
        memcpy(name + 1, u, len);
        name[1 + len] = '\0';
    }

    if (how == FOLD_PART) {
        n = snprintf(buf, size, "--b\r\nContent-Disposition: form-data; "
                     "name=\"%s\"\r\n\r\n1\r\n--b--\r\n", name);

    } else {
        n = snprintf(buf, size, "%s=1", name);
    }

    return (n < 0) ? 0 : (size_t) n;
}


/*
 * A field whose name qs or express-fileupload reads as a path with a
 * part "__proto__", or "constructor" then "prototype", would set a
 * prototype upstream.
 */

static void
test_proto(void)
{
    size_t  i;

    static const char *const  proto[] = {
        "__proto__[dir]=..", "a[__proto__][dir]=..", "a.__proto__.dir=..",
        "__proto__.dir=..", "__proto__=1", "x=1&__proto__[dir]=..",
        "x=1;__proto__[dir]=..", "%5F%5Fproto%5F%5F[dir]=..",
        "__proto__%5Bdir%5D=..", "a%2E__proto__=1", "a]__proto__[b=1",
        "%u005F_proto__[dir]=.."
    };

    static const char *const  ctor[] = {
        "constructor[prototype][dir]=..", "constructor.prototype.dir=..",
        "a[constructor][prototype][dir]=..", "constructor][prototype=1",
        "constructor[][prototype]=1", "constructor%2Eprototype%2Edir=..",
        "%63onstructor[prototype]=1"
    };

    static const char *const  passed[] = {
        "__proto=1&proto__=2&x=__proto__&y=constructor[prototype]",
        "constructor[name]=1&prototype[x]=2&a.constructor=3&b.prototype=4",
        "__PROTO__[x]=1", "Constructor[prototype]=1", "__proto__x[y]=1",
        "x__proto__=1", "prototype.constructor=1", "constructor=prototype",
        "a+__proto__=1"
    };

    for (i = 0; i < sizeof(proto) / sizeof(proto[0]); i++) {
        tap_ok(check(FORM, proto[i]) == -1
               && strcmp(why, "form field with a \"__proto__\" key would "
                         "set an object's prototype upstream") == 0,
               proto[i]);
    }

    for (i = 0; i < sizeof(ctor) / sizeof(ctor[0]); i++) {
        tap_ok(check(FORM, ctor[i]) == -1
               && strcmp(why, "form field with a \"constructor\" key "
                         "holding \"prototype\" would set Object.prototype "
                         "upstream") == 0,
               ctor[i]);
    }

    for (i = 0; i < sizeof(passed) / sizeof(passed[0]); i++) {
        pass(FORM, passed[i], passed[i]);
    }

    tap_ok(check(NULL, "__proto__[dir]=..") == -1
           && strstr(why, "__proto__") != NULL,
           "proto: no Content-Type (Rack's form)");
    tap_ok(check(MP, PART("name=\"__proto__[dir]\"")) == -1
           && strstr(why, "multipart field with a \"__proto__\"") != NULL,
           "proto: a multipart name");
    tap_ok(check(MP, PART("name=a.__proto__.dir")) == -1,
           "proto: a multipart token a.__proto__.dir (parseNested)");
    tap_ok(check(MP, PART("name=\"constructor[prototype]\"")) == -1
           && strstr(why, "\"constructor\"") != NULL,
           "proto: a multipart constructor[prototype]");
    pass(MP, PART("name=\"a\"; filename=\"__proto__[x]\""),
         "proto: a file name is no field name");
    pass("text/plain", "__proto__[dir]=..", "proto: text/plain is no form");
}


/*
 * Overlapping multipart tokens read for prototype parts: each tail is
 * read only as far as its first parts, so this stays linear.
 */

static void
test_proto_overlap(void)
{
    char    *s;
    size_t   i, n, k;

    static const char *const  units[] = {
        "name=", "name=constructor.", "name=[[", "name=a.b."
    };

    n = 1024 * 1024;

    s = malloc(n + 64);
    if (!tap_ok(s != NULL, "proto overlap: memory")) {
        return;
    }

    (void) signal(SIGALRM, overlap_alarm);
    alarm(10);

    for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
        for (i = 0; i + strlen(units[k]) <= n; i += strlen(units[k])) {
            memcpy(s + i, units[k], strlen(units[k]));
        }

        tap_ok(check_len(MP, s, i) == 0, units[k]);

        memcpy(s + i, "name=__proto__", 14);
        tap_ok(check_len(MP, s, i + 14) == -1
               && strstr(why, "__proto__") != NULL, "... then __proto__");

        memcpy(s + i, "name=constructor.prototype", 26);
        tap_ok(check_len(MP, s, i + 26) == -1
               && strstr(why, "constructor") != NULL,
               "... then constructor.prototype");
    }

    alarm(0);

    free(s);
}


/*
 * System.Web reads the query of a request with a body in the charset of
 * its Content-Type: on a route with a query pattern (query_checked, set
 * at load), any body is held to a form's charsets.
 */

static void
test_query_charset(void)
{
    int          rc;
    char         err[128];
    al_regex_t  *re;
    al_param_t   query[1];

    query[0].name.data = "name";
    query[0].name.len = 4;
    re = al_regex_compile("^[a-z]+$", 8, err, sizeof(err));
    query[0].re = re;

    if (!tap_ok(re != NULL, "query charset: the pattern compiles")) {
        return;
    }

    rc = al_form_check("text/plain; charset=ibm037", 26,
                       (const unsigned char *) "data", 4, NULL, 0, query, 1,
                       1, why, sizeof(why));
    tap_ok(rc == -1 && strstr(why, "query is read in it") != NULL,
           "query charset: text/plain in EBCDIC refused");

    rc = al_form_check("text/plain; charset=utf-8", 25,
                       (const unsigned char *) "data", 4, NULL, 0, query, 1,
                       1, why, sizeof(why));
    tap_ok(rc == 0, "query charset: text/plain in utf-8 passes");

    query[0].re = NULL;

    rc = al_form_check("text/plain; charset=ibm037", 26,
                       (const unsigned char *) "data", 4, NULL, 0, query, 1,
                       0, why, sizeof(why));
    tap_ok(rc == 0, "query charset: no pattern, any charset");

    rc = al_form_check("text/plain; charset=ibm037", 26,
                       (const unsigned char *) "", 0, NULL, 0, query, 1,
                       1, why, sizeof(why));
    tap_ok(rc == 0, "query charset: no body, any charset");

    al_regex_free(re);
}
