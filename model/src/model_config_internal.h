/* model_config_internal.h - internal to gf_model: config <-> cJSON object,
 * shared by config.json, checkpoint metadata and the MLmodel reader (which
 * turns the YAML config mapping into a cJSON object first). */
#ifndef GF_MODEL_CONFIG_INTERNAL_H
#define GF_MODEL_CONFIG_INTERNAL_H

#include <cjson/cJSON.h>

#include "gf/model_config.h"

/* Reads and validates the fields of obj (unknown keys ignored). */
gf_status gf_model_config_from_cjson(const cJSON *obj, gf_model_config *out,
                                     gf_err *err);
/* New cJSON object with every field (caller cJSON_Delete's it), or NULL
 * when out of memory. Does not validate. */
cJSON *gf_model_config_to_cjson(const gf_model_config *c);

#endif
