/* mlmodel_classes.h - the class names of a model directory (gf/mlmodel.h):
 * read from flavors.ganflow.config (YAML) and config.json (JSON), written
 * into config.json, and checked against each other. Internal to gf_model;
 * the lookup gf_mlmodel_class_index is public (gf/mlmodel.h). */
#ifndef GF_MLMODEL_CLASSES_H
#define GF_MLMODEL_CLASSES_H

#include <cjson/cJSON.h>

#include "gf/mlmodel.h"
#include "yaml_tree.h"

/* flavors.ganflow.config.class_names of the config mapping cfg (already
 * parsed into m->config) into m->class_names / n_class_names (owned by m,
 * freed by gf_mlmodel_free, also on failure). Absent or null: none.
 * GF_EFORMAT when it is not a sequence of scalars, the model is not
 * conditional, the count is not num_classes, or a name is bad or
 * repeated. */
gf_status gf_mlmodel_parse_class_names(const gf_ynode *cfg, gf_mlmodel *m, gf_err *err);

/* Checks that config.json's text (len bytes, already parsed as a config
 * equal to the flavor's) carries the same class_names as m: both absent,
 * or the same names in the same order. GF_EFORMAT naming path when not. */
gf_status gf_mlmodel_check_json_class_names(const char *text, size_t len, const gf_mlmodel *m,
                                            const char *path, gf_err *err);

/* config.json of cfg with names (n == cfg->num_classes, checked by the
 * caller) as "class_names" after the config's fields, pretty-printed with
 * a trailing newline into *out (malloc'd, caller frees). */
gf_status gf_mlmodel_config_json_with_names(const gf_model_config *cfg,
                                            const char *const *names, int n, char **out,
                                            gf_err *err);

#endif
