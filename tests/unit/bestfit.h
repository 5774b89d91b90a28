/*
 * What Windows' "best fit" turns into a path character: the code points
 * above U+007F that WideCharToMultiByte() without WC_NO_BEST_FIT_CHARS
 * (the ANSI file, CGI and command-line APIs an IIS or other Windows
 * upstream may pass a name through) maps to '/', '\', '%', ':', '.' or ' ' in
 * one of the ANSI code pages, as the WCTABLE sections of Microsoft's
 * tables list them (bestfit874.txt, bestfit932.txt ... bestfit1258.txt
 * and bestfit1361.txt, published by Unicode under
 * Public/MAPPINGS/VENDORS/MICSFT/WindowsBestFit/).  Written by hand from
 * those files; tests/unit/path.c tries every code point against these
 * lists with the ones of nfkc.h, so policy/al_path.c cannot lose one
 * unseen.
 */

#include <stdint.h>

/* to '/' or '\' */

static const uint32_t  bestfit_slash[] = {
    0x00a5,                                 /* YEN SIGN: '\' in 932 */
    0x00b4,                                 /* ACUTE ACCENT: '/' in 1253 */
    0x2044,                                 /* FRACTION SLASH */
    0x20a9,                                 /* WON SIGN: '\' in 949, 1361 */
    0x2215, 0x2216,                         /* DIVISION SLASH, SET MINUS */
    0xff0f, 0xff3c                          /* FULLWIDTH SOLIDUS, REVERSE */
};

/* to '%' */

static const uint32_t  bestfit_percent[] = {
    0x066a,                                 /* ARABIC PERCENT SIGN */
    0xff05                                  /* FULLWIDTH PERCENT SIGN */
};

/* to ':', a drive ("C:x") */

static const uint32_t  bestfit_colon[] = {
    0x0589, 0x2236,                         /* ARMENIAN FULL STOP, RATIO:
                                               1250, 1252, 1254 */
    0xff1a                                  /* FULLWIDTH COLON: most */
};

/* to '.' and to ' ': all of them dots and spaces of nfkc.h too */

static const uint32_t  bestfit_dot[] = {
    0xff0e                                  /* FULLWIDTH FULL STOP */
};

static const uint32_t  bestfit_space[] = {
    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x3000
};
