/* sg2_snapshot.h - reads the network-snapshot-*.pkl files of
 * NVlabs/stylegan2-ada-pytorch without executing anything from them.
 *
 * Such a file is a pickle (pickle.dump, protocol 3 or 4) of
 *   {'training_set_kwargs': dict, 'G': Generator, 'D': Discriminator,
 *    'G_ema': Generator, 'augment_pipe': AugmentPipe or None}
 * where every network object is a persistence record: a REDUCE of
 * torch_utils.persistence._reconstruct_persistent_obj with one argument,
 * meta = {'type': 'class', 'version': int, 'module_src': str,
 * 'class_name': str, 'state': the module's __dict__}. The state holds
 * '_parameters', '_buffers' and '_modules' (OrderedDicts; submodules are
 * persistence records too), '_non_persistent_buffers_set' (left out, as
 * state_dict leaves them out), '_init_args' and '_init_kwargs' (the
 * constructor's arguments). module_src is checked to be a string and never
 * read.
 *
 * A tensor is torch._utils._rebuild_tensor_v2(storage, offset, size,
 * stride, requires_grad, hooks[, metadata]), a parameter
 * torch._utils._rebuild_parameter(tensor, requires_grad, hooks), and a
 * storage in a plain pickle torch.storage._load_from_bytes(bytes), whose
 * bytes are torch.save's legacy (non-zip) format: five pickles back to back
 * (the magic number 0x1950a86a20f9469cfc6c, the protocol version 1001, a
 * sys_info dict, the storage as a persistent id ('storage', torch.<T>Storage,
 * key, location, numel, view_metadata), the list of keys), then per key an
 * int64 element count and the raw little-endian elements.
 *
 * Allowed globals (the file is refused, with the name, for any other):
 *   outer pickle
 *     torch_utils.persistence._reconstruct_persistent_obj  every network
 *     collections.OrderedDict          _parameters, _buffers, _modules, hooks
 *     dnnlib.util.EasyDict             nested kwargs, training_set_kwargs
 *     builtins.set                     sets under protocol 3 (protocol 4
 *                                      has EMPTY_SET): _non_persistent_buffers_set
 *     torch._utils._rebuild_tensor_v2  every tensor
 *     torch._utils._rebuild_parameter  every parameter
 *     torch.storage._load_from_bytes   every storage
 *     numpy.dtype, numpy.core.multiarray.scalar (numpy 1),
 *     numpy._core.multiarray.scalar (numpy 2)
 *                                      numpy float64 attributes (the layers'
 *                                      weight_gain = lr / np.sqrt(fan_in))
 *   the storages' inner pickles
 *     torch.{Float,Half,Double,BFloat16,Long,Int,Short,Char,Byte,Bool}Storage
 *                                      the storage's dtype; all but float32
 *                                      and float16 are then refused by name
 *
 * The result is plain C: per network its class name, constructor kwargs and
 * every parameter and buffer as (state_dict name, shape, float32 data),
 * float16 converted. Errors name the culprit: "truncated at byte N",
 * "global os.system is not allowed", "tensor 'synthesis.b4.const' is
 * float64", "not a StyleGAN2-ADA snapshot: no key 'G_ema'". */
#ifndef GF_SG2_SNAPSHOT_H
#define GF_SG2_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

#define GF_SG2_MAX_DIMS 8
#define GF_SG2_MAX_FILE ((size_t)4 << 30) /* bytes gf_sg2_snapshot_read takes */

typedef struct gf_sg2_snap_tensor {
  char *name; /* state_dict name: "synthesis.b4.const" */
  int ndim;   /* 0 for a scalar (augment_pipe.p) */
  int64_t shape[GF_SG2_MAX_DIMS];
  size_t numel;
  float *data; /* numel values, row-major */
} gf_sg2_snap_tensor;

typedef struct gf_sg2_snap_kv {
  char *key;   /* "synthesis_kwargs.fp16_channels_last": nested dicts joined */
  char *value; /* Python-like text: "True", "None", "512", "0.5", "resnet" */
} gf_sg2_snap_kv;

/* One network. The int fields are the constructor's kwargs; absent ones
 * take the official constructors' defaults (Generator: mapping num_layers
 * 8, channel_base 32768, channel_max 512, num_fp16_res 0, conv_clamp None,
 * architecture "skip"; Discriminator: the same channel defaults,
 * architecture "resnet", mbstd_group_size 4, mbstd_num_channels 1), and -1
 * means None (conv_clamp, mbstd_group_size) or not a kwarg of this class. */
typedef struct gf_sg2_snap_net {
  int present;
  char class_name[64]; /* "Generator", "Discriminator", "AugmentPipe" */
  int64_t z_dim, c_dim, w_dim, img_resolution, img_channels;
  int64_t mapping_layers; /* mapping_kwargs.num_layers */
  int64_t channel_base, channel_max, num_fp16_res, conv_clamp;
  char architecture[16];
  int64_t mbstd_group_size, mbstd_num_channels; /* D: epilogue_kwargs */
  gf_sg2_snap_kv *extra; /* every other kwarg, in file order, then the
                                   positional arguments as "args.0"... (the
                                   official networks take none) */
  size_t n_extra;
  gf_sg2_snap_tensor *tensors; /* in state_dict order */
  size_t n_tensors;
} gf_sg2_snap_net;

typedef struct gf_sg2_snapshot {
  gf_sg2_snap_net G, D, G_ema, augment_pipe;
  int has_augment_p;
  float augment_p; /* augment_pipe's buffer p */
} gf_sg2_snapshot;

/* Parses a snapshot from buf[0..len) into *out (which it initialises); on
 * failure *out is left empty. The result owns copies of everything (buf
 * may be freed); free it with gf_sg2_snapshot_free. G_ema is required; G,
 * D and augment_pipe are read when present. */
gf_status gf_sg2_snapshot_parse(const uint8_t *buf, size_t len,
                                gf_sg2_snapshot *out, gf_err *err);
/* The same from a file; messages start with the path. */
gf_status gf_sg2_snapshot_read(const char *path, gf_sg2_snapshot *out,
                               gf_err *err);
/* Frees what *s owns and empties it; NULL or empty is fine. */
void gf_sg2_snapshot_free(gf_sg2_snapshot *s);

/* The tensor named name in n; NULL when there is none. */
const gf_sg2_snap_tensor *gf_sg2_snap_find(const gf_sg2_snap_net *n, const char *name);
/* The extra kwarg key's value text; NULL when there is none. */
const char *gf_sg2_snap_extra(const gf_sg2_snap_net *n, const char *key);

#endif
