/* checkpoint.h - the training checkpoints of DESIGN §4.2: the whole state
 * of a gf_gan (G and D parameters, BN running statistics, both Adam moments
 * and step counters) as one safetensors file per checkpoint, written
 * atomically with a SHA-256 of the data and the metadata of gf/ckpt_meta.h;
 * the last K kept; the newest good one found on resume, skipping truncated
 * or corrupted files. (`ganflow inspect` reads them through cli/.)
 *
 * Tensor names in a checkpoint file:
 *   "<param>"           every tensor of G and D by its state_dict name
 *                       ("g.main.0.weight", "d.main.1.running_mean", ...)
 *   "<param>.adam_m"    first Adam moment of each trainable parameter
 *   "<param>.adam_v"    second Adam moment
 *   "g_ema.<name>"      the EMA generator's parameters and BN running
 *                       statistics when the GAN has one ("g_ema.main.0.weight":
 *                       G's names with g_ema for g)
 *   "g.adam_step", "d.adam_step"   I64 scalars: Adam updates applied
 * D's spectral norm vectors are D tensors ("d.main.0.weight_u"; its
 * parameter is then "d.main.0.weight_orig").
 * All float tensors are F32 with the parameter's shape.
 *
 * Not here: when to checkpoint, uploading to MLflow (the trainer loop), the
 * MLflow model directory (gf/mlmodel.h). */
#ifndef GF_CHECKPOINT_H
#define GF_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gf/ckpt_meta.h"
#include "gf/gan.h"
#include "gf/net.h"
#include "gf/status.h"

/* Limits of a checkpoint file, for its writers and readers. Tensors: value
 * + two Adam moments per tensor of G and D, G's again for its EMA, plus the
 * two step counters. */
#define GF_CKPT_MAX_TENSORS (3 * 3 * GF_NET_MAX_TENSORS + 2)
/* Longest tensor name: a parameter name plus ".adam_m". */
#define GF_CKPT_TENSOR_NAME_MAX (GF_PARAM_NAME_MAX + 16)
/* Longest path built by the checkpoint code (directory + file name). */
#define GF_CKPT_PATH_MAX 4096

/* File name of the checkpoint of a step, printf format taking (long long)
 * step; zero-padded so that names sort by step. */
#define GF_CKPT_NAME_FMT "ckpt-%012lld.safetensors"

/* 1 when name is a checkpoint file name exactly as GF_CKPT_NAME_FMT spells
 * it (temporary files "<name>.tmp.XXXXXX" are not), with its step in
 * *step; else 0. */
int gf_checkpoint_parse_name(const char *name, int64_t *step);

/* Writes gan's whole training state as dir/ckpt-<step>.safetensors through
 * gf_ckpt_write (atomic, fsync'd, SHA-256 of the data): for G and D every
 * parameter value, BN running statistics, both Adam moments (names:
 * "<param>", "<param>.adam_m", "<param>.adam_v", BN buffers by their
 * state_dict names) and the Adam step counters (I64 tensors "g.adam_step",
 * "d.adam_step"); metadata from *meta (meta->step names the file;
 * meta->config must equal gan->cfg). dir must exist. Then deletes all but
 * the newest `keep` checkpoints of dir (keep <= 0 keeps all). path_out (may
 * be NULL) receives the written path (path_cap bytes). gan is only read;
 * nothing allocated outlives the call. */
gf_status gf_checkpoint_save(const char *dir, const gf_gan *gan,
                             const gf_ckpt_meta *meta, int keep,
                             char *path_out, size_t path_cap, gf_err *err);

/* The newest checkpoint of dir that opens cleanly (strict parse, digest
 * verified, metadata valid): newer files that are truncated, corrupted or
 * unreadable are skipped - never loaded - and counted in *n_skipped (may be
 * NULL), the last skip's reason in skip_msg (may be NULL; skip_cap bytes).
 * GF_ENOTFOUND when dir has no good checkpoint (or does not exist).
 * Temporary files of an interrupted write are ignored. path_out receives
 * the path (path_cap bytes; GF_EINVAL when too small), meta_out (may be
 * NULL) its metadata. Allocates nothing that outlives the call. */
gf_status gf_checkpoint_find_latest(const char *dir, char *path_out,
                                    size_t path_cap, gf_ckpt_meta *meta_out,
                                    int *n_skipped, char *skip_msg,
                                    size_t skip_cap, gf_err *err);

/* Loads a checkpoint into gan (built for training with the same config: a
 * config mismatch, a missing/extra tensor or a shape/dtype mismatch is an
 * error naming it and leaves gan unchanged), restoring every arena
 * byte-for-byte and the Adam step counters. The file is verified (digest,
 * metadata) before anything is copied. meta_out (may be NULL) receives its
 * metadata. CPU arenas only (GF_EUNSUPPORTED otherwise). */
gf_status gf_checkpoint_load(const char *path, gf_gan *gan,
                             gf_ckpt_meta *meta_out, gf_err *err);

/* ---- StyleGAN2-ADA training states (gf/sg2_gan.h) ----------------------
 * The same file names, keep-K pruning, SHA-256 and metadata (meta->config
 * a stylegan2 config), the tensors those of gf_sg2_gan_save; found by
 * gf_checkpoint_find_latest as any other. */
struct gf_sg2_gan;
gf_status gf_checkpoint_save_sg2(const char *dir, const struct gf_sg2_gan *gan,
                                 const gf_ckpt_meta *meta, int keep,
                                 char *path_out, size_t path_cap, gf_err *err);
/* Verifies and loads one into gan (built with the same config): a file of
 * another model (its metadata config not stylegan2, or no sg2 state) is
 * GF_EINVAL naming it; gan is unchanged on any refusal. */
gf_status gf_checkpoint_load_sg2(const char *path, struct gf_sg2_gan *gan,
                                 gf_ckpt_meta *meta_out, gf_err *err);

#endif
