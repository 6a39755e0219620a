/* sg2_import.h - an official StyleGAN2-ADA snapshot's G_ema (read by
 * gf/sg2_snapshot.h) as a ganflow stylegan2 model: its model config
 * (gf/model_config.h, architecture "stylegan2") and a G (gf/sg2_net.h)
 * holding every one of its tensors, ready to be written as
 * generator.safetensors (official state_dict names, no prefix) or run.
 *
 * What ganflow cannot represent is refused with the reason (GF_EUNSUPPORTED
 * naming it): a class other than Generator, a synthesis architecture
 * other than 'skip', a mapping learning-rate multiplier other than 0.01,
 * c_dim 1, any constructor kwarg ganflow does not know (named), a
 * resample filter other than the official [1, 3, 3, 1], a tensor the net
 * lacks or lacks one it has, shapes that differ. num_fp16_res is fine:
 * ganflow computes in fp32, as the official force_fp32. */
#ifndef GF_SG2_IMPORT_H
#define GF_SG2_IMPORT_H

#include "gf/mlmodel.h"
#include "gf/model_config.h"
#include "gf/sg2_net.h"
#include "gf/sg2_snapshot.h"

/* The model config of snapshot network g (G_ema). */
gf_status gf_sg2_import_config(const gf_sg2_snap_net *g, gf_model_config *out,
                               gf_err *err);

/* Builds net (inference, max_batch rows, on ctx) from cfg (from
 * gf_sg2_import_config of g) and loads every tensor of g into it.
 * Memory: net is the caller's; release with gf_sg2_net_free, also after a
 * failure. */
gf_status gf_sg2_import_net(const gf_sg2_snap_net *g,
                            const gf_model_config *cfg, gf_ctx *ctx,
                            int max_batch, gf_sg2_net *net, gf_err *err);

/* The whole import: s's G_ema as a ganflow model directory dir (created
 * if missing; gf_mlmodel_write: generator.safetensors with the official
 * names, config.json, the signature, MLmodel last) with info and meta
 * (plus "ganflow.generator": "ema"). cfg_out (may be NULL) receives the
 * config. Works on the CPU; allocates nothing that outlives the call. On
 * a refusal nothing is written. */
gf_status gf_sg2_import_dir(const gf_sg2_snapshot *s, const char *dir,
                            const gf_mlmodel_info *info, const gf_st_kv *meta,
                            size_t n_meta, gf_model_config *cfg_out,
                            gf_err *err);

#endif
