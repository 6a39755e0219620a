/* mlmodel_signature.h - parsing MLmodel's `signature` (mlmodel_signature.c)
 * for gf_mlmodel_parse (mlmodel_read.c). Internal to gf_model. */
#ifndef GF_MLMODEL_SIGNATURE_H
#define GF_MLMODEL_SIGNATURE_H

#include "gf/mlmodel.h"
#include "yaml_tree.h"

/* The optional signature of root (the MLmodel mapping) into m:
 * has_signature, sig_inputs / sig_outputs (allocated into m, freed by
 * gf_mlmodel_free, also on failure). Absent or null: no signature. */
gf_status gf_mlmodel_parse_signature(const gf_ynode *root, gf_mlmodel *m,
                                     gf_err *err);

#endif
