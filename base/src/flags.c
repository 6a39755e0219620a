/* flags.c - the table-driven command line of gf/flags.h: the parse loop,
 * one value through its row, defaults, environment tables, params, the
 * recipe and --help. Numbers go through gf/parse.h. Not here: any
 * program's rows (each room keeps its own table). */
#include "gf/flags.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "gf/parse.h"
#include "gf/text.h"

#define HELP_WIDTH 79

static void *field(const gf_flag *row, void *obj) {
  return (char *)obj + row->off;
}

static const void *cfield(const gf_flag *row, const void *obj) {
  return (const char *)obj + row->off;
}

/* A CHOICE field holds an int, or a bool when it is one byte. */
static int choice_get(const gf_flag *row, const void *obj) {
  if (row->size == sizeof(bool)) {
    bool b;
    memcpy(&b, cfield(row, obj), sizeof b);
    return b;
  }
  int v;
  assert(row->size == sizeof v);
  memcpy(&v, cfield(row, obj), sizeof v);
  return v;
}

static void choice_put(const gf_flag *row, void *obj, int v) {
  if (row->size == sizeof(bool)) {
    bool b = v != 0;
    memcpy(field(row, obj), &b, sizeof b);
    return;
  }
  assert(row->size == sizeof v);
  memcpy(field(row, obj), &v, sizeof v);
}

static const char *choice_word(const gf_flag *row, int v) {
  for (const gf_flag_choice *c = row->choices; c && c->word; c++)
    if (c->value == v) return c->word;
  return "";
}

/* "a, b or c" into out[cap]. */
static void choice_list(const gf_flag *row, const char *last_sep, char *out,
                        size_t cap) {
  size_t n = 0, o = 0;
  while (row->choices[n].word) n++;
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    const char *sep = i == 0 ? "" : i + 1 == n ? last_sep : ", ";
    int k = snprintf(out + o, cap - o, "%s%s", sep, row->choices[i].word);
    if (!gf_fits(k, cap - o)) return; /* cut: a message, not data */
    o += (size_t)k;
  }
}

/* BITS: "a,b" -> the or of their values; each word at most once. */
static gf_status set_bits(const gf_flag *row, void *obj, const char *v,
                          gf_err *err) {
  unsigned m = 0;
  bool ok = *v != '\0';
  if (row->none && strcmp(v, row->none) == 0) {
    memcpy(field(row, obj), &m, sizeof m);
    return GF_OK;
  }
  for (const char *p = v; ok;) {
    size_t n = strcspn(p, ",");
    const gf_flag_choice *c = row->choices;
    while (c->word && !(strlen(c->word) == n && strncmp(p, c->word, n) == 0))
      c++;
    ok = c->word && !(m & (unsigned)c->value);
    if (ok) m |= (unsigned)c->value;
    if (!p[n]) break;
    p += n + 1;
  }
  if (!ok) {
    char list[256];
    choice_list(row, ", ", list, sizeof list);
    return gf_fail(err, GF_EINVAL, "%s: '%.64s' is not %s%sa comma-separated "
                   "list of %s (each at most once)", row->name, v,
                   row->none ? row->none : "", row->none ? ", or " : "", list);
  }
  memcpy(field(row, obj), &m, sizeof m);
  return GF_OK;
}

/* The words of bits m, in the choices' order, joined by ','; the none
 * word (or "") for none. */
static void bits_text(const gf_flag *row, unsigned m, char *out, size_t cap) {
  size_t o = 0;
  out[0] = '\0';
  for (const gf_flag_choice *c = row->choices; c->word; c++)
    if (m & (unsigned)c->value) {
      int n = snprintf(out + o, cap - o, "%s%s", o ? "," : "", c->word);
      assert(gf_fits(n, cap - o) && "the words fit a param value");
      o += (size_t)n;
    }
  if (!o && row->none) {
    GF_FORMAT_FITS(out, cap, "%s", row->none);
  }
}

static gf_status set_choice(const gf_flag *row, void *obj, const char *v,
                            gf_err *err) {
  for (const gf_flag_choice *c = row->choices; c->word; c++)
    if (strcmp(c->word, v) == 0) {
      choice_put(row, obj, c->value);
      return GF_OK;
    }
  char list[256];
  choice_list(row, " or ", list, sizeof list);
  return gf_fail(err, GF_EINVAL, "%s: '%.64s' is not %s", row->name, v, list);
}

gf_status gf_flag_copy(const gf_flag *row, void *obj, const char *v,
                      gf_err *err) {
  if (row->nonempty && !*v)
    return gf_fail(err, GF_EINVAL, "%s: empty", row->name);
  if (row->kind == GF_FLAG_ARG) {
    memcpy(field(row, obj), &v, sizeof v);
    return GF_OK;
  }
  size_t n = strlen(v);
  if (n >= row->size)
    return gf_fail(err, GF_EINVAL, "%s: value longer than %zu characters",
                   row->name, row->size - 1);
  memcpy(field(row, obj), v, n + 1);
  return GF_OK;
}

gf_status gf_flag_set(const gf_flag *row, void *obj, const char *value,
                      gf_err *err) {
  gf_status st = GF_OK;
  if (row->parse) {
    st = row->parse(row, obj, value, err);
  } else {
    switch (row->kind) {
    case GF_FLAG_BOOL: {
      bool t = true;
      assert(row->size == sizeof t);
      memcpy(field(row, obj), &t, sizeof t);
      break;
    }
    case GF_FLAG_INT: {
      int v;
      assert(row->size == sizeof v);
      st = gf_parse_int(row->name, value, (int)row->lo, (int)row->hi, &v, err);
      if (st == GF_OK) memcpy(field(row, obj), &v, sizeof v);
      break;
    }
    case GF_FLAG_I64: {
      int64_t v;
      assert(row->size == sizeof v);
      st = gf_parse_i64(row->name, value, row->lo, row->hi, &v, err);
      if (st == GF_OK) memcpy(field(row, obj), &v, sizeof v);
      break;
    }
    case GF_FLAG_U64: {
      uint64_t v;
      assert(row->size == sizeof v);
      st = gf_parse_u64(row->name, value, row->ulo, row->uhi, &v, err);
      if (st == GF_OK) memcpy(field(row, obj), &v, sizeof v);
      break;
    }
    case GF_FLAG_F64: {
      double v;
      assert(row->size == sizeof v);
      st = gf_parse_f64x(row->name, value, row->flo, row->fhi, row->fopen, &v,
                         err);
      if (st == GF_OK) memcpy(field(row, obj), &v, sizeof v);
      break;
    }
    case GF_FLAG_STR:
    case GF_FLAG_ARG:
      st = gf_flag_copy(row, obj, value, err);
      break;
    case GF_FLAG_CHOICE:
      st = set_choice(row, obj, value, err);
      break;
    case GF_FLAG_BITS:
      st = set_bits(row, obj, value, err);
      break;
    case GF_FLAG_CUSTOM:
      assert(!"a CUSTOM row has a parse function");
      st = gf_fail(err, GF_EINVAL, "%s: cannot be set", row->name);
      break;
    }
  }
  if (st == GF_OK && row->has_given) {
    bool t = true;
    memcpy((char *)obj + row->given_off, &t, sizeof t);
  }
  return st;
}

void gf_flags_defaults(const gf_flag_table *t, void *obj) {
  for (size_t i = 0; i < t->n; i++) {
    const gf_flag *r = &t->rows[i];
    switch (r->kind) {
    case GF_FLAG_BOOL: {
      bool b = r->def_i != 0;
      memcpy(field(r, obj), &b, sizeof b);
      break;
    }
    case GF_FLAG_INT: {
      int v = (int)r->def_i;
      memcpy(field(r, obj), &v, sizeof v);
      break;
    }
    case GF_FLAG_I64:
      memcpy(field(r, obj), &r->def_i, sizeof r->def_i);
      break;
    case GF_FLAG_U64:
      memcpy(field(r, obj), &r->def_u, sizeof r->def_u);
      break;
    case GF_FLAG_F64:
      memcpy(field(r, obj), &r->def_f, sizeof r->def_f);
      break;
    case GF_FLAG_STR:
      if (r->def_s) {
        size_t n = strlen(r->def_s);
        assert(n < r->size);
        memcpy(field(r, obj), r->def_s, n + 1);
      }
      break;
    case GF_FLAG_ARG:
      if (r->def_s) memcpy(field(r, obj), &r->def_s, sizeof r->def_s);
      break;
    case GF_FLAG_CHOICE:
      choice_put(r, obj, (int)r->def_i);
      break;
    case GF_FLAG_BITS: {
      unsigned m = (unsigned)r->def_i;
      memcpy(field(r, obj), &m, sizeof m);
      break;
    }
    case GF_FLAG_CUSTOM:
      if (r->def_s) {
        gf_status st = r->parse(r, obj, r->def_s, NULL);
        assert(st == GF_OK && "a default reads through its own row");
        (void)st;
      }
      break;
    }
  }
}

const gf_flag *gf_flags_find(const gf_flag_table *t, const char *name) {
  for (size_t i = 0; i < t->n; i++) {
    const gf_flag *r = &t->rows[i];
    if (!r->name) continue;
    if (strcmp(r->name, name) == 0) return r;
    if (r->short_name && name[0] == '-' && name[1] == r->short_name &&
        name[2] == '\0')
      return r;
  }
  return NULL;
}

static gf_status unexpected(const gf_flags_opts *o, const char *a,
                            gf_err *err) {
  const char *hint = o && o->hint ? o->hint : "";
  return gf_fail(err, GF_EINVAL, "'%.200s': unexpected argument%s%s", a,
                 *hint ? " " : "", hint);
}

static gf_status positional(const gf_flags_opts *o, void *obj, const char *a,
                            gf_err *err) {
  if (o && o->positional) return o->positional(obj, a, err);
  return unexpected(o, a, err);
}

gf_status gf_flags_parse(const gf_flag_table *t, void *obj, int argc,
                         char *const *argv, const gf_flags_opts *opts,
                         bool *help, int *dashdash, gf_err *err) {
  *help = false;
  if (dashdash) *dashdash = argc;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      if (opts && opts->stop_at_dashdash) {
        if (dashdash) *dashdash = i;
        return GF_OK;
      }
      for (i++; i < argc; i++) GF_TRY(positional(opts, obj, argv[i], err));
      return GF_OK;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      *help = true;
      return GF_OK;
    }
    if (a[0] != '-' || a[1] == '\0') {
      GF_TRY(positional(opts, obj, a, err));
      continue;
    }
    /* "--name=value" (long names only) or "--name" / "-c" */
    char name[64];
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    const gf_flag *row = NULL;
    if (nl < sizeof name) {
      memcpy(name, a, nl);
      name[nl] = '\0';
      row = gf_flags_find(t, name);
    }
    if (!row)
      return gf_fail(err, GF_EINVAL, "unknown flag '%.*s'",
                     nl > 100 ? 100 : (int)nl, a);
    const char *v = NULL;
    if (row->kind == GF_FLAG_BOOL) {
      if (eq) return gf_fail(err, GF_EINVAL, "%s takes no value", row->name);
    } else if (eq) {
      v = eq + 1;
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      return gf_fail(err, GF_EINVAL, "%s: missing value", row->name);
    }
    GF_TRY(gf_flag_set(row, obj, v, err));
  }
  return GF_OK;
}

gf_status gf_flags_env(const gf_flag_table *t, void *obj,
                       const char *(*get)(void *user, const char *name),
                       void *user, gf_err *err) {
  for (size_t i = 0; i < t->n; i++) {
    const gf_flag *r = &t->rows[i];
    if (!r->name) continue;
    const char *v = get(user, r->name);
    if (v && *v) GF_TRY(gf_flag_set(r, obj, v, err));
  }
  return GF_OK;
}

void gf_flag_text(const gf_flag *row, const void *obj, char *out,
                  size_t cap) {
  int n = 0;
  assert(cap > 0);
  if (row->text) {
    row->text(row, obj, out, cap);
    return;
  }
  switch (row->kind) {
  case GF_FLAG_BOOL: {
    bool b;
    memcpy(&b, cfield(row, obj), sizeof b);
    n = snprintf(out, cap, "%s", b ? "true" : "false");
    break;
  }
  case GF_FLAG_INT: {
    int v;
    memcpy(&v, cfield(row, obj), sizeof v);
    n = snprintf(out, cap, "%d", v);
    break;
  }
  case GF_FLAG_I64: {
    int64_t v;
    memcpy(&v, cfield(row, obj), sizeof v);
    n = snprintf(out, cap, "%" PRId64, v);
    break;
  }
  case GF_FLAG_U64: {
    uint64_t v;
    memcpy(&v, cfield(row, obj), sizeof v);
    n = snprintf(out, cap, "%" PRIu64, v);
    break;
  }
  case GF_FLAG_F64: {
    double v;
    char t[GF_F64_TEXT_MAX];
    memcpy(&v, cfield(row, obj), sizeof v);
    gf_f64_text(v, t);
    n = snprintf(out, cap, "%s", t);
    break;
  }
  case GF_FLAG_STR:
    n = snprintf(out, cap, "%.*s", (int)row->size - 1,
                 (const char *)cfield(row, obj));
    break;
  case GF_FLAG_ARG: {
    const char *s;
    memcpy(&s, cfield(row, obj), sizeof s);
    n = snprintf(out, cap, "%s", s ? s : "");
    break;
  }
  case GF_FLAG_CHOICE:
    n = snprintf(out, cap, "%s", choice_word(row, choice_get(row, obj)));
    break;
  case GF_FLAG_BITS: {
    unsigned m;
    memcpy(&m, cfield(row, obj), sizeof m);
    bits_text(row, m, out, cap);
    break;
  }
  case GF_FLAG_CUSTOM:
    assert(!"a CUSTOM row has a text function");
    out[0] = '\0';
    break;
  }
  assert(gf_fits(n, cap) && "a param value fits its buffer");
  (void)n;
}

bool gf_flag_param(const gf_flag *row, const void *obj, char *out,
                   size_t cap) {
  out[0] = '\0';
  if (!row->param || (row->active && !row->active(obj))) return false;
  gf_flag_text(row, obj, out, cap);
  return true;
}

gf_status gf_flags_recipe(const gf_flag_table *t, const void *obj,
                          const char *what, char *out, size_t cap,
                          gf_err *err) {
  char buf[2048], val[256];
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < t->n; i++) {
    const gf_flag *r = &t->rows[i];
    if (!r->recipe) continue;
    if (r->recipe_if_active && r->active && !r->active(obj)) continue;
    if (r->active && !r->active(obj)) {
      memcpy(val, "0", 2);
    } else {
      gf_flag_text(r, obj, val, sizeof val);
    }
    int n = snprintf(buf + o, sizeof buf - o, "%s%s=%s", o ? "," : "",
                     r->recipe, val);
    if (!gf_fits(n, sizeof buf - o))
      return gf_fail(err, GF_EINVAL, "%s too long", what);
    o += (size_t)n;
  }
  return gf_format(out, cap, err, what, "%s", buf);
}

/* ---- --help ------------------------------------------------------------ */

/* Writes text wrapped at HELP_WIDTH from column *col, continuation lines
 * starting at column indent. */
static void wrap(FILE *out, const char *text, int indent, int *col) {
  const char *p = text;
  while (*p) {
    while (*p == ' ') p++;
    if (!*p) break;
    size_t w = strcspn(p, " ");
    bool first = *col == indent;
    if (!first && *col + 1 + (int)w > HELP_WIDTH) {
      fprintf(out, "\n%*s", indent, "");
      *col = indent;
      first = true;
    }
    fprintf(out, "%s%.*s", first ? "" : " ", (int)w, p);
    *col += (first ? 0 : 1) + (int)w;
    p += w;
  }
}

/* The default as --help shows it: a string of the row's, or a number or
 * list written into num[DEFAULT_TEXT_MAX]; "" for none. */
#define DEFAULT_TEXT_MAX 128
static const char *default_text(const gf_flag *r,
                                char num[DEFAULT_TEXT_MAX]) {
  int n = 0;
  if (r->def_help) return r->def_help;
  switch (r->kind) {
  case GF_FLAG_INT:
  case GF_FLAG_I64:
    n = snprintf(num, DEFAULT_TEXT_MAX, "%" PRId64, r->def_i);
    break;
  case GF_FLAG_U64:
    n = snprintf(num, DEFAULT_TEXT_MAX, "%" PRIu64, r->def_u);
    break;
  case GF_FLAG_F64:
    gf_f64_text(r->def_f, num);
    return num;
  case GF_FLAG_CHOICE:
    return choice_word(r, (int)r->def_i);
  case GF_FLAG_BITS:
    bits_text(r, (unsigned)r->def_i, num, DEFAULT_TEXT_MAX);
    return num;
  case GF_FLAG_STR:
  case GF_FLAG_ARG:
  case GF_FLAG_CUSTOM:
    return r->def_s ? r->def_s : "";
  case GF_FLAG_BOOL:
    return "";
  }
  assert(gf_fits(n, DEFAULT_TEXT_MAX)); /* 20 digits and a sign */
  (void)n;
  return num;
}

static void usage_row(FILE *out, const gf_flag_table *t, const gf_flag *r) {
  int col = fprintf(out, "  ");
  if (r->short_name) col += fprintf(out, "-%c, ", r->short_name);
  col += fprintf(out, "%s", r->name);
  if (r->arg) {
    col += fprintf(out, " %s", r->arg);
  } else if (r->kind == GF_FLAG_CHOICE) {
    for (const gf_flag_choice *c = r->choices; c->word; c++)
      col += fprintf(out, "%c%s", c == r->choices ? ' ' : '|', c->word);
  }
  if (col + 1 > t->help_col) {
    fprintf(out, "\n%*s", t->help_col, "");
  } else {
    fprintf(out, "%*s", t->help_col - col, "");
  }
  col = t->help_col;
  wrap(out, r->help ? r->help : "", t->help_col, &col);
  char num[DEFAULT_TEXT_MAX], tail[256];
  const char *def = default_text(r, num);
  if (def[0]) {
    GF_FORMAT_FITS(tail, sizeof tail, "(%s)", def);
    wrap(out, tail, t->help_col, &col);
  }
  fputc('\n', out);
}

void gf_flags_usage(FILE *out, const gf_flag_table *t) {
  for (size_t s = 0; s < t->n_sections; s++) {
    const char *h = t->sections ? t->sections[s] : NULL;
    if (h && *h) fprintf(out, "%s\n", h);
    for (size_t i = 0; i < t->n; i++)
      if (t->rows[i].name && t->rows[i].section == (int)s)
        usage_row(out, t, &t->rows[i]);
  }
  static const gf_flag help = {.name = "--help", .kind = GF_FLAG_BOOL,
                               .help = "this text"};
  usage_row(out, t, &help);
}

/* ---- checks for tests -------------------------------------------------- */

static gf_status check_row(const gf_flag *r, gf_err *err) {
  const char *n = r->name ? r->name : r->param ? r->param : "(row)";
  size_t want = 0;
  switch (r->kind) {
  case GF_FLAG_BOOL: want = sizeof(bool); break;
  case GF_FLAG_INT: want = sizeof(int); break;
  case GF_FLAG_I64: want = sizeof(int64_t); break;
  case GF_FLAG_U64: want = sizeof(uint64_t); break;
  case GF_FLAG_F64: want = sizeof(double); break;
  case GF_FLAG_ARG: want = sizeof(const char *); break;
  case GF_FLAG_STR: want = r->size >= 2 ? r->size : 2; break;
  case GF_FLAG_CHOICE:
    want = r->size == sizeof(bool) ? sizeof(bool) : sizeof(int);
    if (!r->choices || !r->choices[0].word)
      return gf_fail(err, GF_EINVAL, "%s: a CHOICE row without words", n);
    break;
  case GF_FLAG_BITS:
    want = sizeof(unsigned);
    if (!r->choices || !r->choices[0].word)
      return gf_fail(err, GF_EINVAL, "%s: a BITS row without words", n);
    break;
  case GF_FLAG_CUSTOM:
    if (r->name && !r->parse)
      return gf_fail(err, GF_EINVAL, "%s: a CUSTOM flag without parse", n);
    if ((r->param || r->recipe) && !r->text)
      return gf_fail(err, GF_EINVAL, "%s: a CUSTOM param without text", n);
    want = r->size;
    break;
  default:
    return gf_fail(err, GF_EINVAL, "%s: no kind", n);
  }
  if (r->size != want)
    return gf_fail(err, GF_EINVAL, "%s: field of %zu bytes for its kind's %zu",
                   n, r->size, want);
  if (r->kind == GF_FLAG_INT && (r->lo > r->hi || r->lo < INT32_MIN ||
                                 r->hi > INT32_MAX))
    return gf_fail(err, GF_EINVAL, "%s: bounds not within int", n);
  if (r->kind == GF_FLAG_I64 && r->lo > r->hi)
    return gf_fail(err, GF_EINVAL, "%s: bounds out of order", n);
  if (r->kind == GF_FLAG_U64 && r->ulo > r->uhi)
    return gf_fail(err, GF_EINVAL, "%s: bounds out of order", n);
  if (r->kind == GF_FLAG_F64 && !(r->flo <= r->fhi))
    return gf_fail(err, GF_EINVAL, "%s: bounds out of order", n);
  if (r->name && !r->help)
    return gf_fail(err, GF_EINVAL, "%s: no help text", n);
  if (r->name && r->name[0] != '-' && r->name[0] != '_' &&
      !(r->name[0] >= 'A' && r->name[0] <= 'Z'))
    return gf_fail(err, GF_EINVAL, "%s: neither a flag nor a variable", n);
  return GF_OK;
}

gf_status gf_flags_check(const gf_flag_table *t, gf_err *err) {
  if (t->n_sections < 1 || t->help_col < 8)
    return gf_fail(err, GF_EINVAL, "table: no section or help column");
  for (size_t i = 0; i < t->n; i++) {
    const gf_flag *r = &t->rows[i];
    GF_TRY(check_row(r, err));
    if (r->name && (r->section < 0 || (size_t)r->section >= t->n_sections))
      return gf_fail(err, GF_EINVAL, "%s: no section %d", r->name,
                     r->section);
    for (size_t j = 0; j < i; j++) {
      const gf_flag *q = &t->rows[j];
      if (r->name && q->name && strcmp(r->name, q->name) == 0)
        return gf_fail(err, GF_EINVAL, "%s: two rows", r->name);
      if (r->short_name && r->short_name == q->short_name)
        return gf_fail(err, GF_EINVAL, "-%c: two rows", r->short_name);
      if (r->param && q->param && strcmp(r->param, q->param) == 0)
        return gf_fail(err, GF_EINVAL, "param %s: two rows", r->param);
    }
  }
  return GF_OK;
}
