/* flags.h - a command line described once, as a table of rows (in the
 * manner of Redis's standardConfig rows in src/config.c): each row holds a
 * flag's name, the field of the caller's struct it sets (offsetof and
 * sizeof), its kind and bounds, its default, its --help text, and the
 * MLflow param key and training-recipe key it shows as (or none). From
 * the table come the parsing (every number through gf/parse.h, so a bad
 * value is refused in the one wording, naming the flag), the defaults,
 * --help, the params and the recipe; environment variables read as
 * numbers can be rows of a table too (gf_flags_env).
 *
 * A flag with a grammar of its own (--device, --resume, a list) keeps a
 * per-row parse function; a value shown in another form than the field's
 * own (a derived param) a per-row text function. Rules between flags stay
 * with the caller (after gf_flags_parse).
 *
 * The parser: "--name VALUE" and "--name=VALUE" (a value may start with
 * '-': "--steps -5" gives --steps the value "-5"); "-c VALUE" for a row
 * with a short name; a BOOL row takes no value; "--help" and "-h" stop the
 * parse; "--" ends the flags. Names are matched whole (no abbreviations);
 * the last of a repeated flag wins unless its parse function keeps every
 * one. Messages: "unknown flag '--x'", "--batch: missing value", "--kid
 * takes no value", "'x': unexpected argument" (+ the caller's hint).
 *
 * Not here: the number grammar (gf/parse.h); what a program does with the
 * values. Nothing prints except gf_flags_usage, into the stream given. */
#ifndef GF_FLAGS_H
#define GF_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gf/status.h"

typedef enum gf_flag_kind {
  GF_FLAG_BOOL = 1, /* bool field; the flag takes no value and sets it */
  GF_FLAG_INT,      /* int field (an enum or unsigned of int's size too):
                       a decimal in [lo, hi] */
  GF_FLAG_I64,      /* int64_t field: [lo, hi] */
  GF_FLAG_U64,      /* uint64_t (or size_t) field: [ulo, uhi] */
  GF_FLAG_F64,      /* double field: [flo, fhi], ends left out by fopen */
  GF_FLAG_STR,      /* char[size] field: a copy of the value */
  GF_FLAG_ARG,      /* const char * field: the argv string, borrowed */
  GF_FLAG_CHOICE,   /* int (or bool) field: the value of a word of choices */
  GF_FLAG_BITS,     /* unsigned field: a comma-separated list of words of
                       choices, each at most once, their values (bits)
                       or'ed; the row's none word for the empty set */
  GF_FLAG_CUSTOM,   /* no single field: the row's parse and text functions */
} gf_flag_kind;

/* A word of a CHOICE row and the value it stores. */
typedef struct gf_flag_choice {
  const char *word;
  int value;
} gf_flag_choice;

typedef struct gf_flag gf_flag;

/* A grammar of the row's own: reads value into obj (the caller's struct).
 * GF_EINVAL naming row->name. */
typedef gf_status (*gf_flag_parse_fn)(const gf_flag *row, void *obj,
                                      const char *value, gf_err *err);
/* The value of the row in obj as text into out[cap] (a param value). */
typedef void (*gf_flag_text_fn)(const gf_flag *row, const void *obj,
                                char *out, size_t cap);
/* Whether the row counts in obj: an inactive row has no param and shows
 * as 0 in the recipe. */
typedef bool (*gf_flag_active_fn)(const void *obj);

struct gf_flag {
  const char *name;        /* "--batch" (a variable's name in an env
                              table); NULL: no flag, a param only */
  char short_name;         /* 'n': also "-n"; 0: none */
  const char *arg;         /* the value in --help ("N"); NULL: BOOL, or a
                              CHOICE's words joined by '|' */
  gf_flag_kind kind;
  size_t off, size;        /* the field (GF_FLAG_FIELD); CUSTOM: unused */
  int64_t lo, hi;          /* INT, I64 bounds (inclusive) */
  uint64_t ulo, uhi;       /* U64 bounds */
  double flo, fhi;         /* F64 bounds */
  unsigned fopen;          /* F64: GF_PARSE_LO_OPEN | GF_PARSE_HI_OPEN */
  const gf_flag_choice *choices; /* CHOICE, BITS: ends with a NULL word */
  const char *none;        /* BITS: the word of the empty set ("none");
                              NULL: at least one word */
  /* The default, by kind: BOOL, INT, I64, CHOICE def_i; U64 def_u; F64
   * def_f; BITS def_i (the bits); STR, ARG def_s (NULL: left as it is);
 * CUSTOM def_s through
   * parse when not NULL. Outside the bounds is allowed (0: "not set"). */
  int64_t def_i;
  uint64_t def_u;
  double def_f;
  const char *def_s;
  const char *def_help;    /* the default as --help shows it; NULL: the
                              default above; "": none shown */
  const char *help;        /* one sentence or a few, wrapped by the printer */
  int section;             /* index into the table's headings */
  const char *param;       /* MLflow param key; NULL: none */
  const char *recipe;      /* key in the training recipe; NULL: none */
  bool has_given;          /* given_off names a bool set when the flag */
  size_t given_off;        /* is given (GF_FLAG_GIVEN) */
  bool nonempty;           /* STR, ARG: "" refused ("--data: empty") */
  gf_flag_parse_fn parse;  /* a grammar of its own; NULL: the kind's */
  gf_flag_text_fn text;    /* NULL: the field as the kind writes it */
  gf_flag_active_fn active; /* NULL: always active */
  bool recipe_if_active;   /* an inactive row is left out of the recipe
                              (not shown as 0): rows of one model only,
                              so the other models' recipes stay as they
                              were */
};

/* .off and .size of field f of struct type T. */
#define GF_FLAG_FIELD(T, f) .off = offsetof(T, f), .size = sizeof(((T *)0)->f)
/* The bool field of T set when the row's flag is given. */
#define GF_FLAG_GIVEN(T, f) .has_given = true, .given_off = offsetof(T, f)

/* A command line (or a set of environment variables): rows in the order
 * their params and recipe words come, and --help's headings. */
typedef struct gf_flag_table {
  const gf_flag *rows;
  size_t n;
  const char *const *sections; /* heading of section i ("" or NULL: none) */
  size_t n_sections;           /* >= 1 */
  int help_col;                /* the column help text starts at (>= 8) */
} gf_flag_table;

/* A gf_flag_table over the array rows_ (its length counted), the array of
 * headings sections_ (n_sections_ of them; NULL and 1 for none) and the
 * column help text starts at. */
#define GF_FLAG_TABLE(rows_, sections_, n_sections_, help_col_)             \
  {.rows = (rows_), .n = sizeof(rows_) / sizeof((rows_)[0]),                \
   .sections = (sections_), .n_sections = (n_sections_),                    \
   .help_col = (help_col_)}

/* Checks the table's rows against their kinds (field sizes, bounds in
 * order, choices and functions present, names unique): GF_EINVAL naming
 * the first bad row. For tests; the parser asserts what it relies on. */
gf_status gf_flags_check(const gf_flag_table *t, gf_err *err);

/* Sets the field of every row to its default; the rest of obj is left as
 * it is (the caller zeroes it first). */
void gf_flags_defaults(const gf_flag_table *t, void *obj);

/* The row named name ("--batch", or "-n" for a short name); NULL if none. */
const gf_flag *gf_flags_find(const gf_flag_table *t, const char *name);

/* Reads value into obj through the row (its parse function, else its
 * kind), then sets the row's given field. BOOL rows take value NULL. */
gf_status gf_flag_set(const gf_flag *row, void *obj, const char *value,
                      gf_err *err);

/* The STR or ARG kind's own reading, for a parse function that checks
 * value and then stores it: "" refused when row->nonempty ("--data:
 * empty"), a copy longer than the field refused ("--data: value longer
 * than N characters"), an ARG's pointer stored as it is. */
gf_status gf_flag_copy(const gf_flag *row, void *obj, const char *value,
                       gf_err *err);

/* How gf_flags_parse treats what is not a flag. */
typedef struct gf_flags_opts {
  /* Each argument that is not a flag, in order (and each one after "--"
   * unless stop_at_dashdash); NULL: each is refused, "'ARG': unexpected
   * argument" followed by hint. */
  gf_status (*positional)(void *obj, const char *arg, gf_err *err);
  const char *hint;      /* e.g. "(flags are --name VALUE)"; NULL: none */
  bool stop_at_dashdash; /* "--" ends the parse; *dashdash its index */
} gf_flags_opts;

/* Parses argv[1..argc) into obj (defaults are the caller's:
 * gf_flags_defaults first). *help true when --help or -h came (the parse
 * stops there: GF_OK). *dashdash (may be NULL) the index of a "--" that
 * stopped the parse, else argc. opts may be NULL. GF_EINVAL naming the
 * flag, with nothing after the bad argument read. */
gf_status gf_flags_parse(const gf_flag_table *t, void *obj, int argc,
                         char *const *argv, const gf_flags_opts *opts,
                         bool *help, int *dashdash, gf_err *err);

/* The environment variables of an env table (rows named by the
 * variables), through get (get(user, name): the value or NULL). A
 * variable set to "" counts as unset, as the MLflow client reads them.
 * GF_EINVAL naming the variable. */
gf_status gf_flags_env(const gf_flag_table *t, void *obj,
                       const char *(*get)(void *user, const char *name),
                       void *user, gf_err *err);

/* The row's value in obj as its param shows it into out[cap]; false (out
 * "") when the row has no param or is inactive. */
bool gf_flag_param(const gf_flag *row, const void *obj, char *out,
                   size_t cap);

/* The value of the row in obj as text (the kind's form, or its text
 * function) into out[cap]. */
void gf_flag_text(const gf_flag *row, const void *obj, char *out,
                  size_t cap);

/* The recipe of obj: "key=value" for every row with a recipe key, in
 * table order, joined by ','; an inactive row shows 0. Into out[cap];
 * GF_EINVAL naming `what` when it does not fit. */
gf_status gf_flags_recipe(const gf_flag_table *t, const void *obj,
                          const char *what, char *out, size_t cap,
                          gf_err *err);

/* Writes the flags of the table by section, each with its value's name,
 * its help wrapped at 79 columns and its default in parentheses, then
 * "--help". */
void gf_flags_usage(FILE *out, const gf_flag_table *t);

#endif
