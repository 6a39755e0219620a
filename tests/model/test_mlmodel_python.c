/* test_mlmodel_python.c - MLflow reads MLmodel with PyYAML's safe_load:
 * check that the file we write loads there with the intended types (ints
 * as ints, versions, digests, uuid and time as strings), that the
 * generator loads with safetensors.numpy, and that MLflow's own
 * mlflow.models.Model.load reads the signature (columns seed long and z
 * array<double>, both optional -> tensor image float32 [-1, C, H, W]) and
 * the python_function flavor; and for a class-conditional model the class
 * names (YAML and config.json) and the signature's class column.
 * Usage: test_mlmodel_python PYTHON (the checkout's .venv, where
 * deploy/install-deps.sh puts PyYAML with MLflow, and safetensors). Exits 77
 * (skipped), saying why, when the interpreter is missing (no .venv); when it
 * is there, every check runs, and one that cannot import yaml,
 * safetensors.numpy or mlflow fails with Python's error (a broken .venv). */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "python_util.h"
#include "gf/mlmodel.h"
#include "file_util.h"

static const char k_script[] =
    "import sys, yaml\n"
    "d = yaml.safe_load(open(sys.argv[1] + '/MLmodel'))\n"
    "g = d['flavors']['ganflow']\n"
    "c = g['config']\n"
    "assert c['z_dim'] == 100 and type(c['z_dim']) is int, c\n"
    "assert c['architecture'] == 'dcgan' and c['pixel_normalization'] == 'tanh_-1_1', c\n"
    "assert c['num_classes'] == 0 and c['image_height'] == 64, c\n"
    "for k in ('artifact_path', 'run_id', 'mlflow_version', 'model_uuid', 'utc_time_created'):\n"
    "    assert type(d[k]) is str, (k, d[k])\n"
    "assert d['run_id'] == '1234567890', d\n"
    "assert d['mlflow_version'] == '2.17.0' and g['ganflow_version'] == '0.1.0', d\n"
    "assert len(d['model_uuid']) == 32, d\n"
    "for n, f in g['files'].items():\n"
    "    assert type(f['sha256']) is str and len(f['sha256']) == 64, (n, f)\n"
    "from safetensors.numpy import load_file\n"
    "t = load_file(sys.argv[1] + '/generator.safetensors')\n"
    "assert t['w'].tolist() == [1.0, 2.0], t\n"
    "assert type(d['signature']['inputs']) is str, d['signature']\n";

/* MLflow's own reader: Model.load and the signature it finds. */
static const char k_mlflow_script[] =
    "import sys, numpy as np, mlflow\n"
    "m = mlflow.models.Model.load(sys.argv[1])\n"
    "print(m.signature.to_dict())\n"
    "from mlflow.types import DataType\n"
    "from mlflow.types.schema import Array\n"
    "i, o = m.signature.inputs.inputs, m.signature.outputs.inputs\n"
    "assert len(i) == 2 and len(o) == 1, m.signature\n"
    "assert not m.signature.inputs.is_tensor_spec(), i\n"
    "assert i[0].name == 'seed' and i[0].type == DataType.long and not i[0].required, i\n"
    "assert i[1].name == 'z' and i[1].type == Array(DataType.double), i\n"
    "assert not i[1].required, i\n"
    "assert o[0].name == 'image' and o[0].type == np.dtype('float32'), o\n"
    "assert o[0].shape == (-1, 3, 64, 64), o\n"
    "assert m.run_id == '1234567890' and m.artifact_path == 'model', m\n"
    "assert 'ganflow' in m.flavors, m.flavors\n"
    "p = m.flavors['python_function']\n"
    "assert p['loader_module'] == 'ganflow_pyfunc' and p['code'] == 'code', p\n"
    "assert p['env'] == {'conda': 'conda.yaml', 'virtualenv': 'python_env.yaml'}, p\n"
    "from mlflow.utils.environment import _PythonEnv\n"
    "e = _PythonEnv.from_yaml(sys.argv[1] + '/python_env.yaml')\n"
    "assert e.python == p['python_version'], (e.python, p)\n"
    "assert open(sys.argv[1] + '/requirements.txt').read().split() == ['mlflow', 'numpy']\n";

/* A class-conditional model: PyYAML reads the flavor config's class names
 * as the strings written (also "yes" and "3", which unquoted would not
 * be), config.json carries the same, and MLflow's signature has the
 * optional long column class after seed and z. */
static const char k_cond_script[] =
    "import sys, json, yaml, mlflow\n"
    "from mlflow.types import DataType\n"
    "want = ['Ankle boot', 'yes', '3', 'T-shirt/top', 'caf\\u00e9']\n"
    "d = yaml.safe_load(open(sys.argv[1] + '/MLmodel', encoding='utf-8'))\n"
    "c = d['flavors']['ganflow']['config']\n"
    "assert c['class_names'] == want and c['num_classes'] == 5, c\n"
    "j = json.load(open(sys.argv[1] + '/config.json', encoding='utf-8'))\n"
    "assert j['class_names'] == want and j['num_classes'] == 5, j\n"
    "i = mlflow.models.Model.load(sys.argv[1]).signature.inputs.inputs\n"
    "assert [x.name for x in i] == ['seed', 'z', 'class'], i\n"
    "assert i[2].type == DataType.long and not i[2].required, i\n";

int main(int argc, char **argv) {
  if (argc != 2 || !argv[1][0]) {
    fprintf(stderr, "usage: test_mlmodel_python PYTHON\n");
    return 2;
  }
  if (tu_python_ready(argv[1], "yaml, safetensors.numpy, mlflow") != 0)
    return 1;

  char dir[256], mdir[300], script[300], cmd[8192];
  tu_mkdtemp(dir, sizeof dir);
  snprintf(mdir, sizeof mdir, "%s/model", dir);
  snprintf(script, sizeof script, "%s/check.py", dir);
  tu_write(script, k_script, strlen(k_script));
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  float w[2] = {1, 2};
  const int64_t s[] = {2};
  gf_st_tensor_desc t[] = {{"w", GF_ST_F32, 1, s, w}};
  /* An all-digit run id would read back as an int if written unquoted. */
  gf_mlmodel_info info = {"model", "1234567890", "2.17.0", "0.1.0", NULL};
  gf_err err = {GF_OK, ""};
  REQUIRE(gf_mlmodel_write(mdir, &c, t, 1, NULL, 0, &info, NULL, &err) == GF_OK);
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", argv[1], script, mdir);
  int rc = system(cmd);
  CHECKF(rc == 0, "python check failed (%d)", rc);
  tu_write(script, k_mlflow_script, strlen(k_mlflow_script));
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", argv[1], script, mdir);
  rc = system(cmd);
  CHECKF(rc == 0, "mlflow.models.Model.load check failed (%d)", rc);

  static const char *const names[] = {"Ankle boot", "yes", "3", "T-shirt/top",
                                      "caf\xc3\xa9"};
  gf_mlmodel_info cinfo = {"model", "1234567890", "2.17.0", "0.1.0", names};
  c.num_classes = 5;
  snprintf(mdir, sizeof mdir, "%s/cond", dir);
  REQUIRE(gf_mlmodel_write(mdir, &c, t, 1, NULL, 0, &cinfo, NULL, &err) == GF_OK);
  tu_write(script, k_cond_script, strlen(k_cond_script));
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", argv[1], script, mdir);
  rc = system(cmd);
  CHECKF(rc == 0, "conditional model check failed (%d)", rc);
  tu_rmdir(dir);
  return check_report();
}
