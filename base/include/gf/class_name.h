/* class_name.h - the rule a class name obeys wherever ganflow meets one
 * (a dataset's classes, the model directory's config.json and MLmodel,
 * the server's `class=`): 1 .. GF_CLASS_NAME_MAX bytes of UTF-8 without
 * control characters (C0, DEL, C1) or invisible format characters
 * (U+00AD, U+200B-U+200F, U+2028-U+202E, U+2060-U+2069, U+FEFF), no
 * leading or trailing space, none of the characters of
 * GF_CLASS_NAME_FORBIDDEN. So a name goes into a CSV or JSON field and a
 * query value with no escaping beyond JSON's and a space's; '/', spaces
 * inside, apostrophes and non-ASCII letters are kept. Names differing only
 * in case are distinct.
 *
 * In gf_base so that model/ (which reads model directories) and trainer/
 * (which reads datasets) check one rule; not a store of names. */
#ifndef GF_CLASS_NAME_H
#define GF_CLASS_NAME_H

#include <stddef.h>

#include "gf/status.h"

#define GF_CLASS_NAME_MAX 64 /* bytes of one name, NUL excluded */
/* ASCII characters no class name may hold, besides controls: query
 * syntax (& = # + % ? ;), the CSV separator and JSON's escapes. */
#define GF_CLASS_NAME_FORBIDDEN "\"#%&+,;=?\\"

/* GF_OK when name is a valid class name, else GF_EINVAL with err saying
 * what is wrong ("class name 'a,b' contains ','"), the name quoted with
 * control and non-UTF-8 bytes as \xNN. Callers add where the name came
 * from. name must be non-NULL and NUL-terminated. Allocates nothing. */
gf_status gf_class_name_check(const char *name, gf_err *err);

/* NULL when the n bytes at p (need not be NUL-terminated) are a valid
 * class name, else why not, to follow the quoted name in a message ("is
 * empty", "contains ','..."): static text or written into why[cap] (cap
 * >= 128 holds every reason). For callers that word their own messages
 * (a classes.txt line, a folder name). */
const char *gf_class_name_problem(const char *p, size_t n, char *why, size_t cap);

/* GF_OK when names[0..n) are n >= 1 valid class names, none twice (bytes,
 * case-sensitive), else GF_EINVAL naming the first bad one and its index
 * ("class_names[3]: class name '' is empty", "class_names[4]: 'cat' is
 * also class_names[1]"). O(n^2) comparisons: meant for at most a few
 * thousand names. Allocates nothing. */
gf_status gf_class_names_check(const char *const *names, int n, gf_err *err);

/* Writes name into out[cap] (cap >= GF_CLASS_NAME_QUOTE_CAP) between
 * single quotes, printable as it stands: control bytes, C1 controls and,
 * when name is not valid UTF-8, every byte >= 0x80 become \xNN; at most
 * GF_CLASS_NAME_QUOTE_SHOW bytes are shown, then "...". For messages that
 * name a class. */
#define GF_CLASS_NAME_QUOTE_SHOW 72
#define GF_CLASS_NAME_QUOTE_CAP (4 * GF_CLASS_NAME_QUOTE_SHOW + 8)
void gf_class_name_quote(const char *name, char *out, size_t cap);
/* The same for the n bytes at name (not NUL-terminated: a line of a file). */
void gf_class_name_quote_n(const char *name, size_t n, char *out, size_t cap);

#endif
