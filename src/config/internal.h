/* internal.h -- what the config module's files share: one table of
 * settings that both the command line (cli.c) and the YAML loader
 * (load.c) read, and the value parsers behind it (options.c).
 *
 * A setting is described once: its flag names, its YAML key (a dotted path
 * for nested keys, e.g. "routing.scheduler.settings.serial.agingDivisor"),
 * its kind and range, and where it lives (offsetof into the struct it
 * belongs to). So a flag and its key can never accept different values,
 * and the help text's defaults are rendered from st_config_init() itself.
 */
#ifndef STRATA_CONFIG_INTERNAL_H
#define STRATA_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/config.h"

enum st_cfg_kind {
    ST_CFG_FLAG,      /* bool; on the command line takes no value, --no-x clears it */
    ST_CFG_INT32,     /* [imin, imax] */
    ST_CFG_INT64,     /* [imin, imax] */
    ST_CFG_SIZE,      /* size_t bytes; 8388608, 512k, 8m, 1g (binary units) */
    ST_CFG_DOUBLE,    /* finite, >= dmin (> dmin when dmin_excl) */
    ST_CFG_STRING,    /* owned char *, non-empty */
    ST_CFG_CHOICE,    /* an enum (int-sized): index into 'choices' */
    ST_CFG_GPUS,      /* struct st_config_gpus */
    ST_CFG_KEY,       /* --api-key: appends a struct st_config_key */
    ST_CFG_ALIASES,   /* char ** + size_t count (models only) */
};

struct st_cfg_def {
    int         id;          /* enum st_opt, or -1 for a model/key field */
    const char *lng;         /* "--port"; NULL = no flag */
    const char *shrt;        /* "-np"; NULL = none */
    const char *yaml;        /* "port", dotted for nested keys; NULL = flag only */
    enum st_cfg_kind kind;
    size_t      off;         /* offsetof into the target struct */
    ptrdiff_t   has_off;     /* offsetof a bool set when the value is given; -1 = none */
    int64_t     imin, imax;
    double      dmin;
    bool        dmin_excl;
    const char *const *choices;   /* NULL-terminated, in enum order */
    const char *metavar;     /* "N", "PATH" */
    const char *help;        /* one line for --help */
    const char *zero;        /* --help's default when the value is 0 ("model": the GGUF's);
                              * NULL = the number */
};

/* The server-level settings, ST_OPT_COUNT of them, in enum st_opt order. */
extern const struct st_cfg_def st_cfg_opts[ST_OPT_COUNT];
/* Fields of one `models:` entry and of one `api_keys:` entry; n_* each. */
extern const struct st_cfg_def st_cfg_model_fields[];
extern const size_t st_cfg_n_model_fields;
extern const struct st_cfg_def st_cfg_key_fields[];
extern const size_t st_cfg_n_key_fields;

/* Parse 'text' as 'd' says and store it in the struct at 'base'. On a bad
 * value returns ST_ERR_BAD_CONFIG and writes what was expected into 'why'
 * ("an integer 0..65535"), never touching the field; ST_ERR_NOMEM. */
enum st_status st_cfg_set(const struct st_cfg_def *d, void *base, const char *text,
                          char *why, size_t why_cap);

/* The same for a boolean value ("true", "false", "yes", "no", "on", "off"). */
bool st_cfg_parse_bool(const char *text, bool *out);

/* What 'd' expects, as in "expected <this>" (for errors without a value). */
void st_cfg_expected(const struct st_cfg_def *d, char *out, size_t cap);

/* Render the value of 'd' in the struct at 'base' as the user would type
 * it ("8080", "8m", "high-first", "none"). */
void st_cfg_render(const struct st_cfg_def *d, const void *base, char *out, size_t cap);

/* Quote 'text' for a message: at most ~60 bytes, control bytes as '?'. */
void st_cfg_quote(const char *text, char *out, size_t cap);

/* Levenshtein distance of two short words (99 when either is over 64). */
size_t st_cfg_edit_distance(const char *a, const char *b);

/* A llama-server flag that is not one of our settings (cli_compat.c):
 * 'opt' < ST_OPT_COUNT sets that setting to 'value' (NULL: the value the
 * user gave); ST_OPT_COUNT accepts it with no effect, warning 'why'. */
struct st_cli_compat {
    const char *lng, *shrt;
    bool        takes_value;
    int         opt;
    const char *value;
    const char *why;
    const char *const *map;  /* NULL, or pairs: llama-server's value, ours */
};

/* The entry for the flag 'arg' (its first 'len' bytes), or NULL. */
const struct st_cli_compat *st_cli_compat_find(const char *arg, size_t len);
/* The value to give setting x->opt for the user's 'value'; NULL when the
 * map has no such value. */
const char *st_cli_compat_value(const struct st_cli_compat *x, const char *value);

/* Append an owned copy of a formatted warning to c->warnings. */
enum st_status st_cfg_warn(struct st_config *c, const char *fmt, ...) ST_PRINTF(2, 3);

/* Grow c->models / c->keys by one zeroed entry; returns it, NULL on OOM. */
struct st_config_model *st_cfg_add_model(struct st_config *c);
struct st_config_key *st_cfg_add_key(struct st_config *c);

void st_cfg_model_fini(struct st_config_model *m);
void st_cfg_key_fini(struct st_config_key *k);

/* ---- the YAML tree (yaml_tree.c) ----------------------------------- */

enum st_ynode_kind { ST_YNODE_SCALAR, ST_YNODE_MAP, ST_YNODE_SEQ };

/* A parsed YAML node. Maps hold key, value, key, value ... (n = 2 *
 * pairs); keys are always scalars and unique. */
struct st_ynode {
    enum st_ynode_kind kind;
    int32_t  line;           /* 1-based line where the node starts */
    char    *text;           /* scalar: owned, NUL-terminated */
    bool     is_null;        /* scalar: plain "", "~" or "null" */
    struct st_ynode **items; /* owned */
    size_t   n;              /* items: scalars 0, seqs one per entry, maps two per pair */
    size_t   cap;
};

/* Parse one YAML document. *out = NULL for an empty document. Anchors are
 * allowed, aliases are not; nesting is limited. Messages start with
 * "name:line: ". Every libyaml event is deleted on every path. */
enum st_status st_yaml_parse(const char *name, const char *data, size_t len,
                             struct st_ynode **out, struct st_err *err);
void st_ynode_free(struct st_ynode *n);   /* NULL is a no-op */

/* --alias and --tags onto the command line's model m (cli_names.c): each a
 * comma-separated list, blanks trimmed, empty items and repeats dropped,
 * sorted; m->name is the first alias, the others join m->aliases, as
 * llama-server names its model. ST_ERR_BAD_CONFIG for an --alias of no
 * name, ST_ERR_NOMEM. */
enum st_status st_cfg_cli_names(const struct st_config *c, struct st_config_model *m,
                                struct st_err *err);

#endif /* STRATA_CONFIG_INTERNAL_H */
