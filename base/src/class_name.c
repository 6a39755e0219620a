/* class_name.c - the class-name rule of gf/class_name.h: validation and a
 * printable quoting for messages. No state, no allocation. */
#include "gf/class_name.h"

#include <stdint.h>
#include <string.h>

#include "gf/note.h"
#include "gf/text.h"

/* Bytes in the UTF-8 sequence led by b (1 for anything else). */
static size_t utf8_seq_len(uint8_t b) {
  return b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
}

/* Invisible format characters a name must not hide: soft hyphen,
 * zero-width spaces and joiners, direction marks and overrides, line and
 * paragraph separators, word joiners and invisible operators, direction
 * isolates, the byte order mark. */
static int invisible(uint32_t cp) {
  return cp == 0x00AD || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2069) ||
         cp == 0xFEFF;
}

void gf_class_name_quote(const char *name, char *out, size_t cap) {
  gf_class_name_quote_n(name, strlen(name), out, cap);
}

void gf_class_name_quote_n(const char *name, size_t n, char *out, size_t cap) {
  const uint8_t *p = (const uint8_t *)name;
  const int utf8 = gf_utf8_valid(p, n);
  size_t o = 0;
  if (cap < GF_CLASS_NAME_QUOTE_CAP) {
    if (cap > 0) out[0] = '\0';
    return;
  }
  out[o++] = '\'';
  size_t i = 0;
  while (i < n && o + 8 < cap) {
    uint8_t b = p[i];
    size_t k = utf8 && b >= 0x80 ? utf8_seq_len(b) : 1;
    if (i + k > GF_CLASS_NAME_QUOTE_SHOW) break;
    int c1 = k == 2 && b == 0xC2 && p[i + 1] < 0xA0;
    if (b < 0x20 || b == 0x7F || (b >= 0x80 && !utf8) || c1) {
      for (size_t j = 0; j < k; j++) {
        gf_note(out + o, cap - o, "\\x%02X", p[i + j]);
        o += 4;
      }
    } else {
      memcpy(out + o, p + i, k);
      o += k;
    }
    i += k;
  }
  if (i < n) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o++] = '\'';
  out[o] = '\0';
}

const char *gf_class_name_problem(const char *name, size_t n, char *why, size_t cap) {
  const uint8_t *p = (const uint8_t *)name;
  if (n == 0) return "is empty";
  if (n > GF_CLASS_NAME_MAX) {
    gf_note(why, cap, "is %zu bytes long, more than the %d allowed", n, GF_CLASS_NAME_MAX);
    return why;
  }
  for (size_t i = 0; i < n; i++) {
    if (p[i] < 0x20 || p[i] == 0x7F) {
      gf_note(why, cap, "contains the control character 0x%02X", p[i]);
      return why;
    }
  }
  if (!gf_utf8_valid(p, n)) return "is not valid UTF-8";
  for (size_t i = 0; i < n;) {
    size_t k = utf8_seq_len(p[i]);
    uint32_t cp = k == 1 ? p[i] : p[i] & (0x7Fu >> k);
    for (size_t j = 1; j < k; j++) cp = cp << 6 | (p[i + j] & 0x3Fu);
    i += k;
    if (cp >= 0x80 && cp < 0xA0) {
      gf_note(why, cap, "contains the control character U+%04X", (unsigned)cp);
      return why;
    }
    if (invisible(cp)) {
      gf_note(why, cap, "contains the invisible character U+%04X", (unsigned)cp);
      return why;
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (p[i] < 0x80 && strchr(GF_CLASS_NAME_FORBIDDEN, p[i])) {
      gf_note(why, cap, "contains '%c' (class names hold none of %s)", p[i],
           GF_CLASS_NAME_FORBIDDEN);
      return why;
    }
  }
  if (p[0] == ' ') return "begins with a space";
  if (p[n - 1] == ' ') return "ends with a space";
  return NULL;
}

gf_status gf_class_name_check(const char *name, gf_err *err) {
  if (!name) return gf_fail(err, GF_EINVAL, "class name: NULL");
  char why[128], q[GF_CLASS_NAME_QUOTE_CAP];
  const char *w = gf_class_name_problem(name, strlen(name), why, sizeof why);
  if (!w) return GF_OK;
  gf_class_name_quote(name, q, sizeof q);
  return gf_fail(err, GF_EINVAL, "class name %s %s", q, w);
}

gf_status gf_class_names_check(const char *const *names, int n, gf_err *err) {
  if (!names || n < 1) return gf_fail(err, GF_EINVAL, "class_names: none given");
  for (int k = 0; k < n; k++) {
    gf_err inner = {GF_OK, ""};
    if (gf_class_name_check(names[k], &inner) != GF_OK)
      return gf_fail(err, GF_EINVAL, "class_names[%d]: %s", k, inner.msg);
    for (int j = 0; j < k; j++) {
      if (strcmp(names[j], names[k]) == 0) {
        char q[GF_CLASS_NAME_QUOTE_CAP];
        gf_class_name_quote(names[k], q, sizeof q);
        return gf_fail(err, GF_EINVAL, "class_names[%d]: %s is also class_names[%d]", k, q, j);
      }
    }
  }
  return GF_OK;
}
