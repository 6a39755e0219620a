/* test_flags.c - the table-driven command line (base/src/flags.c) on a toy
 * table with a row of every kind: defaults, "--name VALUE" and
 * "--name=VALUE", short names, BOOL rows, repeated flags, positionals,
 * "--", --help, every refusal's wording, env tables, params with active
 * rows and text functions, the recipe, --help's layout (79 columns, the
 * defaults) and gf_flags_check catching a bad row. Unit: no files. */
#include <stdbool.h>

#include "check.h"
#include "gf/flags.h"
#include "gf/parse.h"

typedef struct toy {
  bool verbose;
  int count;
  int64_t big;
  uint64_t seed;
  double rate;
  char name[8];
  const char *path;
  int color;
  bool given;
  unsigned list; /* CUSTOM: bits */
  unsigned bits; /* BITS */
  int npos;
  const char *pos[4];
} toy;

static gf_status parse_list(const gf_flag *row, void *obj, const char *v,
                            gf_err *err) {
  toy *t = obj;
  if (strcmp(v, "a") == 0) t->list = 1;
  else if (strcmp(v, "a,b") == 0) t->list = 3;
  else if (strcmp(v, "none") == 0) t->list = 0;
  else return gf_fail(err, GF_EINVAL, "%s: '%s' is not a list", row->name, v);
  return GF_OK;
}

static void list_text(const gf_flag *row, const void *obj, char *out,
                      size_t cap) {
  const toy *t = obj;
  (void)row;
  snprintf(out, cap, "%s", t->list == 3 ? "a,b" : t->list == 1 ? "a" : "none");
}

static bool counted(const void *obj) { return ((const toy *)obj)->count > 0; }

static const gf_flag_choice k_colors[] = {{"red", 1}, {"green", 2},
                                          {"blue", 3}, {NULL, 0}};
static const gf_flag_choice k_bits[] = {{"x", 1}, {"y", 2}, {"z", 4},
                                        {NULL, 0}};

#define F(f) GF_FLAG_FIELD(toy, f)
static const gf_flag k_rows[] = {
  {.name = "--verbose", .short_name = 'v', .kind = GF_FLAG_BOOL,
   F(verbose), .param = "verbose", .help = "say more"},
  {.name = "--count", .short_name = 'n', .arg = "N", .kind = GF_FLAG_INT,
   F(count), .lo = 0, .hi = 10, .def_i = 3, .param = "count",
   .recipe = "count", .help = "how many"},
  {.name = "--big", .arg = "N", .kind = GF_FLAG_I64, F(big),
   .lo = INT64_MIN, .hi = INT64_MAX, .def_i = -5, .section = 1,
   .help = "a wide number"},
  {.name = "--seed", .arg = "S", .kind = GF_FLAG_U64, F(seed), .ulo = 0,
   .uhi = UINT64_MAX, .def_u = 7, .section = 1, .param = "seed",
   .help = "a seed"},
  {.name = "--rate", .arg = "X", .kind = GF_FLAG_F64, F(rate), .flo = 0,
   .fhi = 1, .fopen = GF_PARSE_LO_OPEN, .def_f = 2e-4, .param = "rate",
   .recipe = "rate", .active = counted,
   .help = "a rate in (0, 1], with a help text long enough to be wrapped "
           "over more than one line of the seventy-nine columns"},
  {.name = "--name", .arg = "NAME", .kind = GF_FLAG_STR, F(name),
   .nonempty = true, .def_s = "abc", .help = "a short name"},
  {.name = "--path", .arg = "P", .kind = GF_FLAG_ARG, F(path),
   .def_help = "", .help = "a borrowed path"},
  {.name = "--color", .kind = GF_FLAG_CHOICE, F(color), .choices = k_colors,
   .def_i = 2, GF_FLAG_GIVEN(toy, given), .param = "color",
   .recipe = "color", .help = "a color"},
  {.name = "--list", .arg = "LIST", .kind = GF_FLAG_CUSTOM,
   .parse = parse_list, .text = list_text, .def_s = "a", .param = "list",
   .help = "a list"},
  {.kind = GF_FLAG_CUSTOM, .param = "derived", .text = list_text},
  {.name = "--bits", .arg = "LIST", .kind = GF_FLAG_BITS, F(bits),
   .choices = k_bits, .none = "none", .def_i = 5, .section = 1,
   .help = "some of x, y, z"},
};
#undef F

static const char *const k_sections[] = {"First:", "Second:"};
static const gf_flag_table k_table = {k_rows, sizeof k_rows / sizeof *k_rows,
                                      k_sections, 2, 22};

static gf_status pos_cb(void *obj, const char *arg, gf_err *err) {
  toy *t = obj;
  if (t->npos == 4) return gf_fail(err, GF_EINVAL, "too many");
  t->pos[t->npos++] = arg;
  return GF_OK;
}

/* Parses the NULL-terminated arguments (argv[0] added) into *t. */
static gf_status run(toy *t, const gf_flags_opts *o, bool *help, int *dd,
                     gf_err *e, const char **args) {
  char *argv[32] = {"prog"};
  int argc = 1;
  while (*args) argv[argc++] = (char *)*args++;
  memset(t, 0, sizeof *t);
  gf_flags_defaults(&k_table, t);
  memset(e, 0, sizeof *e);
  return gf_flags_parse(&k_table, t, argc, argv, o, help, dd, e);
}

#define BAD(want, ...)                                                     \
  do {                                                                     \
    const char *a_[] = {__VA_ARGS__, NULL};                                \
    toy t_;                                                                \
    bool h_;                                                               \
    gf_err e_;                                                             \
    gf_status st_ = run(&t_, NULL, &h_, NULL, &e_, a_);                    \
    CHECKF(st_ == GF_EINVAL && strcmp(e_.msg, want) == 0,                  \
           "got '%s', want '%s'", e_.msg, want);                           \
  } while (0)

static void test_defaults_and_values(void) {
  toy t;
  bool help;
  gf_err e;
  const char *none[] = {NULL};
  REQUIRE(run(&t, NULL, &help, NULL, &e, none) == GF_OK && !help);
  CHECK(!t.verbose && t.count == 3 && t.big == -5 && t.seed == 7);
  CHECK(t.rate == 2e-4 && strcmp(t.name, "abc") == 0 && t.path == NULL);
  CHECK(t.color == 2 && !t.given && t.list == 1 && t.bits == 5);
  const char *all[] = {"-v", "--count", "0", "--big=-9223372036854775808",
                       "--seed", "18446744073709551615", "--rate=1",
                       "--name", "1234567", "--path", "-", "--color", "blue",
                       "--list", "a,b", "-n", "10", NULL};
  REQUIRE(run(&t, NULL, &help, NULL, &e, all) == GF_OK);
  CHECK(t.verbose && t.count == 10 && t.big == INT64_MIN);
  CHECK(t.seed == UINT64_MAX && t.rate == 1 && !strcmp(t.name, "1234567"));
  CHECK(t.path && strcmp(t.path, "-") == 0 && t.color == 3 && t.given);
  CHECK(t.list == 3);
  const char *bits[] = {"--bits", "y,x", NULL};
  REQUIRE(run(&t, NULL, &help, NULL, &e, bits) == GF_OK);
  CHECK(t.bits == 3);
  char text[32];
  gf_flag_text(gf_flags_find(&k_table, "--bits"), &t, text, sizeof text);
  CHECK_STR_EQ(text, "x,y"); /* in the words' order */
  const char *none_[] = {"--bits", "none", NULL};
  REQUIRE(run(&t, NULL, &help, NULL, &e, none_) == GF_OK);
  CHECK(t.bits == 0);
  gf_flag_text(gf_flags_find(&k_table, "--bits"), &t, text, sizeof text);
  CHECK_STR_EQ(text, "none");
  /* a value may start with '-' */
  const char *neg[] = {"--big", "-3", NULL};
  REQUIRE(run(&t, NULL, &help, NULL, &e, neg) == GF_OK);
  CHECK(t.big == -3);
  /* --help stops the parse, even before a bad value */
  const char *h[] = {"--count", "2", "--help", "--count", "x", NULL};
  CHECK(run(&t, NULL, &help, NULL, &e, h) == GF_OK && help && t.count == 2);
  const char *h2[] = {"-h", NULL};
  CHECK(run(&t, NULL, &help, NULL, &e, h2) == GF_OK && help);
}

static void test_refusals(void) {
  BAD("--count: 'x' is not an integer", "--count", "x");
  BAD("--count: ' 2' is not an integer", "--count", " 2");
  BAD("--count: 11 is outside [0, 10]", "-n", "11");
  BAD("--seed: '-1' is not an unsigned integer", "--seed", "-1");
  BAD("--rate: 0 is outside (0, 1]", "--rate", "0");
  BAD("--rate: 'nan' is not a number", "--rate=nan");
  BAD("--name: empty", "--name", "");
  BAD("--name: value longer than 7 characters", "--name", "12345678");
  BAD("--color: 'pink' is not red, green or blue", "--color", "pink");
  BAD("--list: 'b' is not a list", "--list", "b");
  BAD("--bits: 'x,x' is not none, or a comma-separated list of x, y, z "
      "(each at most once)", "--bits", "x,x");
  BAD("--bits: '' is not none, or a comma-separated list of x, y, z (each "
      "at most once)", "--bits", "");
  BAD("--bits: 'x,' is not none, or a comma-separated list of x, y, z (each "
      "at most once)", "--bits", "x,");
  BAD("--bits: 'w' is not none, or a comma-separated list of x, y, z (each "
      "at most once)", "--bits", "w");
  BAD("unknown flag '--nope'", "--nope", "1");
  BAD("unknown flag '--nope'", "--nope=1");
  BAD("unknown flag '-x'", "-x");
  BAD("unknown flag '--coun'", "--coun", "1"); /* no abbreviations */
  BAD("--count: missing value", "--count");
  BAD("--verbose takes no value", "--verbose=1");
  BAD("'stray': unexpected argument", "stray");
  /* nothing after the bad argument is read */
  toy t;
  bool help;
  gf_err e;
  const char *a[] = {"--count", "x", "--help", NULL};
  CHECK(run(&t, NULL, &help, NULL, &e, a) == GF_EINVAL && !help);
  /* the hint follows the unexpected argument */
  gf_flags_opts o = {.hint = "(flags are --name VALUE)"};
  const char *s[] = {"stray", NULL};
  CHECK(run(&t, &o, &help, NULL, &e, s) == GF_EINVAL &&
        strcmp(e.msg, "'stray': unexpected argument (flags are --name "
                      "VALUE)") == 0);
}

static void test_positionals(void) {
  toy t;
  bool help;
  gf_err e;
  int dd = -1;
  gf_flags_opts o = {.positional = pos_cb};
  const char *a[] = {"x", "--count", "1", "-", "--", "--count", "y", NULL};
  REQUIRE(run(&t, &o, &help, &dd, &e, a) == GF_OK);
  CHECK(t.npos == 4 && !strcmp(t.pos[0], "x") && !strcmp(t.pos[1], "-") &&
        !strcmp(t.pos[2], "--count") && !strcmp(t.pos[3], "y"));
  CHECK(t.count == 1 && dd == 8);
  /* stop_at_dashdash: the rest is the caller's */
  gf_flags_opts stop = {.stop_at_dashdash = true};
  const char *b[] = {"--count", "4", "--", "cmd", "--count", "x", NULL};
  REQUIRE(run(&t, &stop, &help, &dd, &e, b) == GF_OK);
  CHECK(t.count == 4 && dd == 3);
}

static const char *fake_get(void *user, const char *name) {
  const char *const *kv = user;
  size_t n = strlen(name);
  for (; *kv; kv++)
    if (strncmp(*kv, name, n) == 0 && (*kv)[n] == '=') return *kv + n + 1;
  return NULL;
}

static void test_env(void) {
  typedef struct env {
    int retries;
    double timeout;
  } env;
  static const gf_flag rows[] = {
    {.name = "TOY_RETRIES", .kind = GF_FLAG_INT,
     GF_FLAG_FIELD(env, retries), .lo = 0, .hi = 100, .def_i = 7,
     .help = "retries"},
    {.name = "TOY_TIMEOUT", .kind = GF_FLAG_F64,
     GF_FLAG_FIELD(env, timeout), .flo = 0.001, .fhi = 60, .def_f = 5,
     .help = "seconds"},
  };
  static const gf_flag_table t = {rows, 2, NULL, 1, 20};
  gf_err e;
  REQUIRE(gf_flags_check(&t, &e) == GF_OK);
  env v;
  gf_flags_defaults(&t, &v);
  const char *kv1[] = {"TOY_RETRIES=3", "TOY_TIMEOUT=", NULL};
  CHECK(gf_flags_env(&t, &v, fake_get, (void *)kv1, &e) == GF_OK &&
        v.retries == 3 && v.timeout == 5); /* "" counts as unset */
  const char *kv2[] = {"TOY_TIMEOUT= 1", NULL};
  CHECK(gf_flags_env(&t, &v, fake_get, (void *)kv2, &e) == GF_EINVAL &&
        strcmp(e.msg, "TOY_TIMEOUT: ' 1' is not a number") == 0);
}

static void test_params_and_recipe(void) {
  toy t;
  memset(&t, 0, sizeof t);
  gf_flags_defaults(&k_table, &t);
  char v[64];
  const char *want[][2] = {{"verbose", "false"}, {"count", "3"},
                           {"seed", "7"},        {"rate", "0.0002"},
                           {"color", "green"},   {"list", "a"},
                           {"derived", "a"}};
  size_t k = 0;
  for (size_t i = 0; i < k_table.n; i++)
    if (gf_flag_param(&k_rows[i], &t, v, sizeof v)) {
      REQUIRE(k < sizeof want / sizeof *want);
      CHECK_STR_EQ(k_rows[i].param, want[k][0]);
      CHECK_STR_EQ(v, want[k][1]);
      k++;
    }
  CHECK_INT_EQ(k, sizeof want / sizeof *want);
  char r[128];
  gf_err e;
  CHECK(gf_flags_recipe(&k_table, &t, "toy recipe", r, sizeof r, &e) ==
        GF_OK);
  CHECK_STR_EQ(r, "count=3,rate=0.0002,color=green");
  /* an inactive row: no param, 0 in the recipe */
  t.count = 0;
  CHECK(!gf_flag_param(&k_rows[4], &t, v, sizeof v) && v[0] == '\0');
  CHECK(gf_flags_recipe(&k_table, &t, "toy recipe", r, sizeof r, &e) ==
        GF_OK);
  CHECK_STR_EQ(r, "count=0,rate=0,color=green");
  CHECK(gf_flags_recipe(&k_table, &t, "toy recipe", r, 8, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "toy recipe") != NULL);
}

static void test_usage(void) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  REQUIRE(f);
  gf_flags_usage(f, &k_table);
  fclose(f);
  CHECKF(strstr(text, "First:\n  -v, --verbose       say more\n") == text,
         "%s", text);
  CHECK(strstr(text, "  -n, --count N       how many (3)\n") != NULL);
  CHECK(strstr(text, "Second:\n  --big N             a wide number (-5)\n"));
  CHECK(strstr(text, "  --color red|green|blue\n                      a "
                     "color (green)\n") != NULL);
  CHECK(strstr(text, "  --path P            a borrowed path\n") != NULL);
  CHECK(strstr(text, "(0.0002)") != NULL);
  CHECK(strstr(text, "some of x, y, z (x,z)") != NULL);
  CHECK(strstr(text, "  --help              this text\n") != NULL);
  /* every line within 79 columns */
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, "\n");
    CHECKF(n <= 79, "line of %zu: %.*s", n, (int)n, p);
    p += n + (p[n] ? 1 : 0);
  }
  free(text);
}

static void test_check(void) {
  gf_err e;
  CHECKF(gf_flags_check(&k_table, &e) == GF_OK, "%s", e.msg);
  /* a row whose field does not match its kind is caught */
  gf_flag bad[2];
  memcpy(bad, k_rows, sizeof bad);
  bad[1].size = sizeof(int64_t);
  gf_flag_table t = {bad, 2, k_sections, 2, 22};
  CHECK(gf_flags_check(&t, &e) == GF_EINVAL && strstr(e.msg, "--count"));
  memcpy(bad, k_rows, sizeof bad);
  bad[1].name = "--verbose";
  CHECK(gf_flags_check(&t, &e) == GF_EINVAL && strstr(e.msg, "two rows"));
  memcpy(bad, k_rows, sizeof bad);
  bad[1].lo = 11;
  CHECK(gf_flags_check(&t, &e) == GF_EINVAL);
}

int main(void) {
  test_defaults_and_values();
  test_refusals();
  test_positionals();
  test_env();
  test_params_and_recipe();
  test_usage();
  test_check();
  return check_report();
}
