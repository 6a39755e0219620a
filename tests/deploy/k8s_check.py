#!/usr/bin/env python3
"""k8s_check.py - offline checks of the Kubernetes manifests in deploy/k8s.

Usage: k8s_check.py SOURCE_DIR

Started by any python3, it runs itself again under SOURCE_DIR/.venv-deploy's
python (kubernetes-validate and PyYAML, from deploy/install-deps.sh) and
renders with SOURCE_DIR/.venv-deploy/bin/kubectl (kustomize v2.0.3). A
missing venv, module or kubectl is a failure with the reason, never a skip.

What it checks:
  1. Every manifest file under deploy/k8s (not kustomization.yaml, not the
     patches kustomizations name) holds only objects of a known kind: core
     kinds are validated by kubernetes-validate in strict mode (unknown
     fields rejected) against every bundled Kubernetes version from 1.25;
     TrainJob, PyTorchJob and JobSet (no bundled schema) get their fields
     checked against the API types they were written for, and their pod
     templates validated strictly as core objects (a PodTemplate, or for
     JobSet's job template a batch/v1 Job).
  2. Every kustomization directory (bases and overlays) renders with
     kustomize v2.0.3, and the output is validated the same way.
  3. Consistency, on each rendered set and on each platform file (with
     deploy/k8s/training/support's objects for its references): Service selectors and
     target ports, probe ports, the headless Service named by the Job's
     subdomain, --rdzv naming pod 0 of the job, --nnodes against the Job's
     size, $(VAR) in args defined in env, the PDB selector, the HPA target,
     every Secret/ConfigMap/PVC referred to present, paths given to
     ganflow on mounted volumes, the security settings, and per overlay
     the image tag, --device cuda and the GPU limits.
  4. Every fixture under tests/deploy/k8s-broken must be rejected, with an
     error containing the text its first line names (`# expect: TEXT`);
     fixtures marked `# strict-only` must also pass a non-strict
     validation, which shows that strict mode is what catches them.
Exit 0 when all hold, 1 otherwise.

Kubernetes 1.25-1.28's published OpenAPI marks onPodConditions as required
in every podFailurePolicy rule, although the API server takes a rule with
onExitCodes alone (the Kubernetes documentation's own example; the schema
was corrected in 1.29). For those versions a rule with onExitCodes is
validated with an empty onPodConditions added; nothing else is changed.
"""

import copy
import os
import re
import subprocess
import sys
import time

# ---------------------------------------------------------------- bootstrap

if len(sys.argv) != 2:
    sys.stderr.write("usage: k8s_check.py SOURCE_DIR\n")
    sys.exit(1)
SRC = os.path.abspath(sys.argv[1])
VENV = os.path.join(SRC, ".venv-deploy")
VPY = os.path.join(VENV, "bin", "python")
KUBECTL = os.path.join(VENV, "bin", "kubectl")


def die(msg):
    sys.stderr.write("k8s_check: FAIL: %s\n" % msg)
    sys.exit(1)


for path, what in ((VPY, "python"), (KUBECTL, "kubectl")):
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        die("%s not found at %s: run deploy/install-deps.sh (it makes "
            ".venv-deploy with kubernetes-validate and kubectl)" % (what, path))
if os.path.realpath(sys.prefix) != os.path.realpath(VENV):
    os.execv(VPY, [VPY, os.path.abspath(__file__), SRC])

try:
    import yaml
    import kubernetes_validate as kv
    from kubernetes_validate import utils as kvu
except ImportError as e:
    die("%s in %s: run deploy/install-deps.sh" % (e, VENV))

K8S = os.path.join(SRC, "deploy", "k8s")
BROKEN = os.path.join(SRC, "tests", "deploy", "k8s-broken")
CRD_KINDS = {("trainer.kubeflow.org/v1alpha1", "TrainJob"),
             ("kubeflow.org/v1", "PyTorchJob"),
             ("jobset.x-k8s.io/v1alpha2", "JobSet")}
UID = 10001


def ver_key(v):
    return tuple(int(x) for x in v.split(".")[:2])


VERSIONS = sorted({v for v in kvu.all_versions() if ver_key(v) >= (1, 25)},
                  key=ver_key)
if not VERSIONS:
    die("kubernetes-validate bundles no schema of Kubernetes 1.25 or newer")


def rel(p):
    return os.path.relpath(p, SRC)


def name_of(o):
    return "%s/%s" % (o.get("kind"), (o.get("metadata") or {}).get("name"))


# ---------------------------------------------------------------- loading

def load_yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def kustomize_dirs(root):
    out = []
    for d, _, files in os.walk(root):
        if "kustomization.yaml" in files:
            out.append(d)
    return sorted(out)


def patch_files(kdir):
    k = load_yaml_docs(os.path.join(kdir, "kustomization.yaml"))[0] or {}
    out = set()
    for p in k.get("patchesStrategicMerge") or []:
        out.add(os.path.normpath(os.path.join(kdir, p)))
    for p in k.get("patchesJson6902") or []:
        if "path" in p:
            out.add(os.path.normpath(os.path.join(kdir, p["path"])))
    return out


def render(kdir):
    """Returns (objects, error text or None)."""
    r = subprocess.run([KUBECTL, "kustomize", kdir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        return [], "kubectl kustomize %s failed: %s" % (rel(kdir),
                                                       r.stderr.strip())
    try:
        return [d for d in yaml.safe_load_all(r.stdout) if d is not None], None
    except yaml.YAMLError as e:
        return [], "kubectl kustomize %s: output is not YAML: %s" % (rel(kdir), e)


# ---------------------------------------------------------------- schemas

def normalize_for(obj, version):
    """The 1.25-1.28 schema workaround (see the module docstring)."""
    if ver_key(version) >= (1, 29) or obj.get("kind") != "Job":
        return obj
    rules = (((obj.get("spec") or {}).get("podFailurePolicy") or {})
             .get("rules") or [])
    if not any("onExitCodes" in r and "onPodConditions" not in r
               for r in rules):
        return obj
    obj = copy.deepcopy(obj)
    for r in obj["spec"]["podFailurePolicy"]["rules"]:
        if "onExitCodes" in r and "onPodConditions" not in r:
            r["onPodConditions"] = []
    return obj


def schema_errors(obj, where, strict=True):
    """Validates obj against every version; one line per distinct error."""
    seen = {}
    for v in VERSIONS:
        try:
            kv.validate(normalize_for(obj, v), v, strict=strict)
        except kv.ValidationError as e:
            path = ".".join(str(p) for p in e.path) or "(top)"
            seen.setdefault("%s: %s" % (path, e.message), []).append(v)
        except kvu.SchemaNotFoundError as e:
            seen.setdefault("no schema: %s" % e.message, []).append(v)
    out = []
    for msg, vs in seen.items():
        span = vs[0] if len(vs) == 1 else "%s..%s (%d versions)" % (
            vs[0], vs[-1], len(vs))
        out.append("%s: %s: %s [Kubernetes %s]" % (where, name_of(obj), msg,
                                                    span))
    return out


def has_core_schema(obj):
    try:
        kv.validate({"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")},
                    VERSIONS[-1], strict=False)
    except kvu.SchemaNotFoundError:
        return False
    except Exception:
        pass
    return True


# ---------------------------------------------------------------- CRDs
# Field names of the API types these files were written for: Kubeflow
# Trainer v2.3 (trainer.kubeflow.org/v1alpha1), training-operator v1.9
# (kubeflow.org/v1), JobSet v0.11 (jobset.x-k8s.io/v1alpha2).

def keys_in(d, allowed, where, errs):
    if not isinstance(d, dict):
        errs.append("%s: expected a mapping, got %r" % (where, type(d).__name__))
        return False
    for k in d:
        if k not in allowed:
            errs.append("%s: unknown field %r (allowed: %s)" % (
                where, k, ", ".join(sorted(allowed))))
    return True


def pod_template_obj(template, name):
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": name}, "template": template}


def crd_trainjob(o, where, errs):
    """Returns [(where, pod template dict)] and checks the TrainJob's fields."""
    spec = o.get("spec") or {}
    keys_in(spec, {"runtimeRef", "initializer", "trainer", "runtimePatches",
                   "suspend", "activeDeadlineSeconds", "managedBy",
                   "secretRef"}, where + ".spec", errs)
    rr = spec.get("runtimeRef") or {}
    keys_in(rr, {"name", "apiGroup", "kind"}, where + ".spec.runtimeRef", errs)
    if rr.get("name") != "torch-distributed" or rr.get("kind") not in (
            None, "ClusterTrainingRuntime") or rr.get("apiGroup") not in (
            None, "trainer.kubeflow.org"):
        errs.append("%s: runtimeRef must name the ClusterTrainingRuntime "
                    "torch-distributed (trainer.kubeflow.org), not %r" % (where, rr))
    tr = spec.get("trainer") or {}
    keys_in(tr, {"image", "command", "args", "env", "numNodes",
                 "resourcesPerNode", "numProcPerNode"}, where + ".spec.trainer", errs)
    for k in ("numNodes", "numProcPerNode"):
        if not isinstance(tr.get(k), int) or isinstance(tr.get(k), bool) or tr[k] < 1:
            errs.append("%s: spec.trainer.%s must be a positive integer "
                        "(`ganflow launch` reads it from PET_*), not %r" % (
                            where, k, tr.get(k)))
    container = {"name": "node"}
    for k in ("image", "command", "args", "env"):
        if k in tr:
            container[k] = tr[k]
    if "resourcesPerNode" in tr:
        container["resources"] = tr["resourcesPerNode"]
    podspec = {"containers": [container]}
    patches = spec.get("runtimePatches") or []
    for i, p in enumerate(patches):
        pw = "%s.spec.runtimePatches[%d]" % (where, i)
        keys_in(p, {"manager", "time", "trainingRuntimeSpec"}, pw, errs)
        if not p.get("manager"):
            errs.append("%s: manager is required" % pw)
        t = ((p.get("trainingRuntimeSpec") or {}).get("template") or {})
        keys_in(p.get("trainingRuntimeSpec") or {}, {"template"},
                pw + ".trainingRuntimeSpec", errs)
        keys_in(t, {"metadata", "spec"}, pw + ".trainingRuntimeSpec.template", errs)
        keys_in(t.get("spec") or {}, {"replicatedJobs"},
                pw + ".trainingRuntimeSpec.template.spec", errs)
        for j, rj in enumerate((t.get("spec") or {}).get("replicatedJobs") or []):
            rw = "%s...replicatedJobs[%d]" % (pw, j)
            keys_in(rj, {"name", "template"}, rw, errs)
            if rj.get("name") != "node":
                errs.append("%s: the torch-distributed runtime has one "
                            "replicated job, `node`, not %r" % (rw, rj.get("name")))
            jt = rj.get("template") or {}
            keys_in(jt, {"metadata", "spec"}, rw + ".template", errs)
            keys_in(jt.get("spec") or {}, {"template"}, rw + ".template.spec", errs)
            pt = (jt.get("spec") or {}).get("template") or {}
            keys_in(pt, {"metadata", "spec"}, rw + ".template.spec.template", errs)
            ps = pt.get("spec") or {}
            keys_in(ps, {"serviceAccountName", "volumes", "initContainers",
                         "containers", "imagePullSecrets", "securityContext",
                         "nodeSelector", "affinity", "tolerations",
                         "schedulingGates", "terminationGracePeriodSeconds"},
                    rw + "...spec", errs)
            for k, v in ps.items():
                if k != "containers":
                    podspec[k] = v
            for c in ps.get("containers") or []:
                keys_in(c, {"name", "env", "volumeMounts", "securityContext"},
                        rw + "...containers[%s]" % c.get("name"), errs)
                if c.get("name") != "node":
                    errs.append("%s: containers may only patch the runtime's "
                                "container `node`, not %r" % (rw, c.get("name")))
                    continue
                if "env" in c:
                    errs.append("%s: env of container node goes in "
                                "spec.trainer.env" % rw)
                for k in ("volumeMounts", "securityContext"):
                    if k in c:
                        container[k] = c[k]
    return [(where + " (trainer + runtimePatches as a pod)",
             {"metadata": {"labels": (o.get("metadata") or {}).get("labels") or {}},
              "spec": podspec})]


def crd_pytorchjob(o, where, errs):
    spec = o.get("spec") or {}
    keys_in(spec, {"runPolicy", "elasticPolicy", "pytorchReplicaSpecs",
                   "nprocPerNode"}, where + ".spec", errs)
    keys_in(spec.get("runPolicy") or {}, {
        "cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds",
        "backoffLimit", "schedulingPolicy", "suspend", "managedBy"},
        where + ".spec.runPolicy", errs)
    if (spec.get("runPolicy") or {}).get("cleanPodPolicy") not in (
            None, "All", "Running", "None"):
        errs.append("%s: runPolicy.cleanPodPolicy must be All, Running or None" % where)
    reps = spec.get("pytorchReplicaSpecs") or {}
    out = []
    if "Master" not in reps:
        errs.append("%s: pytorchReplicaSpecs needs a Master (MASTER_ADDR is "
                    "its pod)" % where)
    for rt, r in reps.items():
        rw = "%s.spec.pytorchReplicaSpecs.%s" % (where, rt)
        if rt not in ("Master", "Worker"):
            errs.append("%s: replica type must be Master or Worker" % rw)
        keys_in(r, {"replicas", "template", "restartPolicy"}, rw, errs)
        if r.get("restartPolicy") not in ("Always", "OnFailure", "Never", "ExitCode"):
            errs.append("%s: restartPolicy must be Always, OnFailure, Never or "
                        "ExitCode, not %r" % (rw, r.get("restartPolicy")))
        if rt == "Master" and r.get("replicas") != 1:
            errs.append("%s: exactly one Master" % rw)
        t = r.get("template") or {}
        cs = (t.get("spec") or {}).get("containers") or []
        py = [c for c in cs if c.get("name") == "pytorch"]
        if not py:
            errs.append("%s: no container named `pytorch` (the operator sets "
                        "the variables and reads the exit code there)" % rw)
        elif not any(p.get("name") == "pytorchjob-port"
                     for p in py[0].get("ports") or []):
            errs.append("%s: container pytorch has no port named "
                        "pytorchjob-port (MASTER_PORT)" % rw)
        out.append((rw + ".template", t))
    return out


JOB_FAILURE_REASONS = {"BackoffLimitExceeded", "DeadlineExceeded",
                       "PodFailurePolicy", "MaxFailedIndexesExceeded",
                       "FailedIndexes"}


def crd_jobset(o, where, errs):
    spec = o.get("spec") or {}
    keys_in(spec, {"replicatedJobs", "network", "successPolicy",
                   "failurePolicy", "startupPolicy", "suspend", "coordinator",
                   "managedBy", "ttlSecondsAfterFinished",
                   "volumeClaimPolicies"}, where + ".spec", errs)
    keys_in(spec.get("network") or {}, {"enableDNSHostnames", "subdomain",
                                        "publishNotReadyAddresses"},
            where + ".spec.network", errs)
    fp = spec.get("failurePolicy") or {}
    keys_in(fp, {"maxRestarts", "restartStrategy", "rules"},
            where + ".spec.failurePolicy", errs)
    for i, r in enumerate(fp.get("rules") or []):
        rw = "%s.spec.failurePolicy.rules[%d]" % (where, i)
        keys_in(r, {"name", "action", "onJobFailureReasons",
                    "onJobFailureMessagePatterns", "targetReplicatedJobs"}, rw, errs)
        if not re.match(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", r.get("name", "")):
            errs.append("%s: name %r does not match JobSet's pattern" % (rw, r.get("name")))
        if r.get("action") not in ("FailJobSet", "RestartJobSet",
                                   "RestartJobSetAndIgnoreMaxRestarts"):
            errs.append("%s: unknown action %r" % (rw, r.get("action")))
        for reason in r.get("onJobFailureReasons") or []:
            if reason not in JOB_FAILURE_REASONS:
                errs.append("%s: %r is not a Job failure reason" % (rw, reason))
    out = []
    for i, rj in enumerate(spec.get("replicatedJobs") or []):
        rw = "%s.spec.replicatedJobs[%d]" % (where, i)
        keys_in(rj, {"name", "groupName", "template", "replicas", "dependsOn"},
                rw, errs)
        t = rj.get("template") or {}
        keys_in(t, {"metadata", "spec"}, rw + ".template", errs)
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "%s-%s" % (o["metadata"]["name"], rj.get("name"))},
               "spec": t.get("spec") or {}}
        out.append((rw + ".template (as a batch/v1 Job)", job))
    return out


# ---------------------------------------------------------------- consistency

def labels_match(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def templates_of(objs):
    """[(owner object, pod template)] for the workloads in objs."""
    out = []
    for o in objs:
        if o.get("kind") in ("Deployment", "StatefulSet", "DaemonSet", "Job",
                             "ReplicaSet"):
            out.append((o, (o.get("spec") or {}).get("template") or {}))
    return out


def by_kind(objs, kind):
    return {(o.get("metadata") or {}).get("name"): o for o in objs
            if o.get("kind") == kind}


def arg_value(args, flag):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a[len(flag) + 1:]
    return None


def train_args(args):
    """The args after the word ganflow-train (a ganflow launch command)."""
    return args[args.index("ganflow-train") + 1:] if "ganflow-train" in args else []


def launch_args(args):
    return args[:args.index("--")] if "--" in args else args


def port_of(container, port):
    for p in container.get("ports") or []:
        if port == p.get("name") or port == p.get("containerPort"):
            return True
    return False


def mount_for(container, path):
    """The volumeMount holding path (longest mountPath prefix), or None."""
    best = None
    for m in container.get("volumeMounts") or []:
        mp = m.get("mountPath", "").rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"].rstrip("/")):
                best = m
    return best


def check_pod(where, tmpl, refs, errs, expect_uid=True):
    """Checks one pod template; refs: the objects its references must name."""
    spec = tmpl.get("spec") or {}
    cms, secrets, pvcs = (by_kind(refs, "ConfigMap"), by_kind(refs, "Secret"),
                          by_kind(refs, "PersistentVolumeClaim"))
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    for v in vols.values():
        vw = "%s: volume %s" % (where, v.get("name"))
        if "secret" in v and not v["secret"].get("optional"):
            s = v["secret"].get("secretName")
            if s not in secrets:
                errs.append("%s: Secret %r does not exist" % (vw, s))
            else:
                data = dict(secrets[s].get("data") or {}, **(secrets[s].get("stringData") or {}))
                for it in v["secret"].get("items") or []:
                    if it.get("key") not in data:
                        errs.append("%s: Secret %s has no key %r" % (vw, s, it.get("key")))
        if "configMap" in v and not v["configMap"].get("optional"):
            if v["configMap"].get("name") not in cms:
                errs.append("%s: ConfigMap %r does not exist" % (vw, v["configMap"].get("name")))
        if "persistentVolumeClaim" in v:
            c = v["persistentVolumeClaim"].get("claimName")
            if c not in pvcs:
                errs.append("%s: PersistentVolumeClaim %r does not exist" % (vw, c))
    psc = spec.get("securityContext") or {}
    tgps = spec.get("terminationGracePeriodSeconds", 30)
    for c in spec.get("containers") or []:
        cw = "%s: container %s" % (where, c.get("name"))
        csc = c.get("securityContext") or {}
        # References.
        for ef in c.get("envFrom") or []:
            for key, pool, what in (("configMapRef", cms, "ConfigMap"),
                                    ("secretRef", secrets, "Secret")):
                if key in ef and not ef[key].get("optional") and ef[key].get("name") not in pool:
                    errs.append("%s: envFrom %s %r does not exist" % (cw, what, ef[key].get("name")))
        env_names = set()
        for e in c.get("env") or []:
            env_names.add(e.get("name"))
            vf = e.get("valueFrom") or {}
            for key, pool, what in (("configMapKeyRef", cms, "ConfigMap"),
                                    ("secretKeyRef", secrets, "Secret")):
                if key not in vf:
                    continue
                ref = vf[key]
                if ref.get("name") not in pool:
                    errs.append("%s: env %s: %s %r does not exist" % (cw, e.get("name"), what, ref.get("name")))
                elif not ref.get("optional"):
                    o = pool[ref["name"]]
                    data = dict(o.get("data") or {}, **(o.get("stringData") or {}))
                    if ref.get("key") not in data:
                        errs.append("%s: env %s: %s %s has no key %r" % (
                            cw, e.get("name"), what, ref["name"], ref.get("key")))
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in vols:
                errs.append("%s: volumeMount %s names no volume of the pod" % (cw, m.get("name")))
        # $(VAR) in command and args must be defined in env.
        for a in (c.get("command") or []) + (c.get("args") or []):
            for var in re.findall(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)", str(a)):
                if var not in env_names:
                    errs.append("%s: $(%s) in the command line is not defined in "
                                "env, so it is passed on literally" % (cw, var))
        # Probes.
        for pk in ("readinessProbe", "livenessProbe", "startupProbe"):
            p = c.get(pk)
            if not p:
                continue
            for h in ("httpGet", "tcpSocket"):
                if h in p and not port_of(c, p[h].get("port")):
                    errs.append("%s: %s port %r is not a port of the container" % (
                        cw, pk, p[h].get("port")))
        # Security.
        non_root = csc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        uid = csc.get("runAsUser", psc.get("runAsUser"))
        if non_root is not True:
            errs.append("%s: runAsNonRoot is not true" % cw)
        if expect_uid and uid != UID:
            errs.append("%s: runAsUser is %r, the image's user is %d" % (cw, uid, UID))
        if csc.get("allowPrivilegeEscalation") is not False:
            errs.append("%s: allowPrivilegeEscalation is not false" % cw)
        if "ALL" not in ((csc.get("capabilities") or {}).get("drop") or []):
            errs.append("%s: capabilities.drop lacks ALL" % cw)
        # What ganflow writes and reads must be on volumes.
        cmd = c.get("command") or []
        args = [str(a) for a in c.get("args") or []]
        prog = os.path.basename(cmd[0]) if cmd else ""
        writes, reads = [], []
        if prog == "ganflow-serve":
            writes += [("--cache-dir", arg_value(args, "--cache-dir"))]
            reads += [("--token-file", arg_value(args, "--token-file"))]
        if prog == "ganflow" and args[:1] == ["launch"]:
            ta = train_args(args)
            writes += [("--checkpoint-dir", arg_value(ta, "--checkpoint-dir")),
                       ("--heartbeat-dir", arg_value(launch_args(args), "--heartbeat-dir"))]
            d = arg_value(ta, "--data")
            reads += [("--data", d.split(":", 1)[1] if d and ":" in d else d)]
            if not arg_value(ta, "--checkpoint-dir"):
                errs.append("%s: ganflow-train has no --checkpoint-dir: its default "
                            "is inside the container, not on shared storage" % cw)
        ro_root = csc.get("readOnlyRootFilesystem") is True
        for flag, path in writes:
            if not path:
                continue
            m = mount_for(c, path)
            if m is None and ro_root:
                errs.append("%s: %s %s is on the read-only root filesystem" % (cw, flag, path))
            elif m is not None and m.get("readOnly"):
                errs.append("%s: %s %s is on a read-only mount" % (cw, flag, path))
        for flag, path in reads:
            if path and mount_for(c, path) is None:
                errs.append("%s: %s %s is on no volume" % (cw, flag, path))
        if prog == "ganflow-serve":
            tf = arg_value(args, "--token-file")
            m = mount_for(c, tf) if tf else None
            if m is not None:
                v = vols.get(m.get("name")) or {}
                inside = tf[len(m["mountPath"].rstrip("/")) + 1:]
                files = [it.get("path") for it in (v.get("secret") or {}).get("items") or []]
                if "secret" not in v:
                    errs.append("%s: --token-file %s is not on a Secret volume" % (cw, tf))
                elif files and inside not in files:
                    errs.append("%s: --token-file %s: the Secret volume holds %s, not %s" % (
                        cw, tf, ", ".join(files), inside))
            listen = arg_value(args, "--listen") or ""
            lport = listen.rsplit(":", 1)[-1]
            if not lport.isdigit() or not port_of(c, int(lport)):
                errs.append("%s: --listen %s is not a containerPort" % (cw, listen))
            paths = {pk: ((c.get(pk) or {}).get("httpGet") or {}).get("path")
                     for pk in ("readinessProbe", "livenessProbe")}
            if paths["readinessProbe"] != "/v2/health/ready":
                errs.append("%s: readinessProbe path is %r, not /v2/health/ready" % (cw, paths["readinessProbe"]))
            if paths["livenessProbe"] != "/v2/health/live":
                errs.append("%s: livenessProbe path is %r, not /v2/health/live" % (cw, paths["livenessProbe"]))
            sleep = 0
            pre = ((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}
            mm = re.search(r"sleep (\d+)", " ".join(pre.get("command") or []))
            if mm:
                sleep = int(mm.group(1))
            deadline = int(arg_value(args, "--deadline") or 10)
            if tgps <= sleep + deadline:
                errs.append("%s: terminationGracePeriodSeconds %s leaves no time to drain "
                            "after the preStop sleep (%d s) and --deadline (%d s)" % (
                                cw, tgps, sleep, deadline))
        if prog == "ganflow" and args[:1] == ["launch"] and tgps < 60:
            errs.append("%s: terminationGracePeriodSeconds %s is short for a "
                        "checkpoint after SIGTERM (use 60 or more)" % (cw, tgps))


def nnodes_max(args):
    v = arg_value(launch_args(args), "--nnodes")
    if v is None:
        return None
    try:
        return int(v.split(":")[-1])
    except ValueError:
        return -1


def check_rdzv(cw, c, expect_host, errs):
    args = [str(a) for a in c.get("args") or []]
    r = arg_value(launch_args(args), "--rdzv")
    if r is None:
        errs.append("%s: --nnodes without --rdzv" % cw)
        return
    host, _, port = r.rpartition(":")
    if host != expect_host:
        errs.append("%s: --rdzv %s does not name pod 0 (%s)" % (cw, r, expect_host))
    if not port.isdigit() or not port_of(c, int(port)):
        errs.append("%s: --rdzv port %s is not a containerPort of the pod" % (cw, port))


def check_job_like(where, job_name, jspec, host0, subdomain, svcs, errs):
    """An Indexed Job of `ganflow launch` agents (bare, or in a JobSet)."""
    tmpl = jspec.get("template") or {}
    ps = tmpl.get("spec") or {}
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    pfp = jspec.get("podFailurePolicy")
    cnames = {c.get("name") for c in ps.get("containers") or []}
    if pfp is not None:
        if ps.get("restartPolicy") != "Never":
            errs.append("%s: podFailurePolicy needs restartPolicy Never, not %r" % (
                where, ps.get("restartPolicy")))
        for i, r in enumerate(pfp.get("rules") or []):
            oe = r.get("onExitCodes")
            if oe and oe.get("containerName") not in (None,) and oe.get("containerName") not in cnames:
                errs.append("%s: podFailurePolicy rule %d names container %r, which "
                            "the pod does not have" % (where, i, oe.get("containerName")))
    for c in ps.get("containers") or []:
        args = [str(a) for a in c.get("args") or []]
        if (c.get("command") or [""])[0] != "ganflow" or args[:1] != ["launch"]:
            continue
        cw = "%s: container %s" % (where, c.get("name"))
        n = nnodes_max(args)
        if n is None:
            continue
        if jspec.get("completionMode") != "Indexed":
            errs.append("%s: --nnodes needs completionMode Indexed (the node rank "
                        "is the completion index)" % cw)
        for k in ("completions", "parallelism"):
            if jspec.get(k) != n:
                errs.append("%s: %s is %r but --nnodes allows %d nodes" % (cw, k, jspec.get(k), n))
        rank = arg_value(launch_args(args), "--node-rank")
        env = {e.get("name"): e for e in c.get("env") or []}
        m = re.fullmatch(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", rank or "")
        if not m:
            errs.append("%s: --node-rank %r is not the pod's completion index" % (cw, rank))
        elif m.group(1) != "JOB_COMPLETION_INDEX":
            fp = (((env.get(m.group(1)) or {}).get("valueFrom") or {})
                  .get("fieldRef") or {}).get("fieldPath")
            if fp not in ("metadata.annotations['batch.kubernetes.io/job-completion-index']",
                          "metadata.labels['batch.kubernetes.io/job-completion-index']"):
                errs.append("%s: --node-rank $(%s) is not the pod's completion index "
                            "(a fieldRef on batch.kubernetes.io/job-completion-index)" % (cw, m.group(1)))
        check_rdzv(cw, c, "%s.%s" % (host0, subdomain), errs)
    if svcs is not None:
        if not ps.get("subdomain"):
            errs.append("%s: no subdomain: the pods get no DNS names for --rdzv" % where)
        else:
            s = svcs.get(ps["subdomain"])
            if s is None:
                errs.append("%s: subdomain %r names no Service" % (where, ps["subdomain"]))
            else:
                if (s.get("spec") or {}).get("clusterIP") != "None":
                    errs.append("%s: Service %s is not headless (clusterIP None)" % (where, ps["subdomain"]))
                if not labels_match((s.get("spec") or {}).get("selector"), labels):
                    errs.append("%s: the headless Service %s does not select the "
                                "Job's pods" % (where, ps["subdomain"]))


def check_set(where, objs, flavour=None):
    """Consistency of one rendered set of objects."""
    errs = []
    tmpls = templates_of(objs)
    svcs = by_kind(objs, "Service")
    deps = by_kind(objs, "Deployment")
    for o, t in tmpls:
        ow = "%s: %s" % (where, name_of(o))
        labels = (t.get("metadata") or {}).get("labels") or {}
        if o.get("kind") == "Deployment":
            sel = ((o.get("spec") or {}).get("selector") or {}).get("matchLabels")
            if not labels_match(sel, labels):
                errs.append("%s: selector %r does not match the pod labels %r" % (ow, sel, labels))
        check_pod(ow, t, objs, errs)
        if o.get("kind") == "Job":
            n = o["metadata"]["name"]
            sub = (t.get("spec") or {}).get("subdomain") or "?"
            check_job_like(ow, n, o.get("spec") or {}, "%s-0" % n, sub,
                           svcs if any(nnodes_max([str(a) for a in c.get("args") or []])
                                       for c in (t.get("spec") or {}).get("containers") or [])
                           else None, errs)
    for n, s in svcs.items():
        sw = "%s: Service/%s" % (where, n)
        sel = (s.get("spec") or {}).get("selector")
        hits = [t for _, t in tmpls if labels_match(sel, (t.get("metadata") or {}).get("labels") or {})]
        if not hits:
            errs.append("%s: selector %r matches no pod template" % (sw, sel))
        for p in (s.get("spec") or {}).get("ports") or []:
            tp = p.get("targetPort", p.get("port"))
            for t in hits:
                if not any(port_of(c, tp) for c in (t.get("spec") or {}).get("containers") or []):
                    errs.append("%s: targetPort %r is not a port of the pods it selects" % (sw, tp))
    for n, p in by_kind(objs, "PodDisruptionBudget").items():
        sel = ((p.get("spec") or {}).get("selector") or {}).get("matchLabels")
        if not any(labels_match(sel, (t.get("metadata") or {}).get("labels") or {}) for _, t in tmpls):
            errs.append("%s: PodDisruptionBudget/%s: selector %r matches no pod template" % (where, n, sel))
    for n, h in by_kind(objs, "HorizontalPodAutoscaler").items():
        ref = (h.get("spec") or {}).get("scaleTargetRef") or {}
        target = deps.get(ref.get("name")) if ref.get("kind") == "Deployment" else None
        if target is None:
            errs.append("%s: HorizontalPodAutoscaler/%s targets %s/%s, which is not here" % (
                where, n, ref.get("kind"), ref.get("name")))
        elif "replicas" in (target.get("spec") or {}):
            errs.append("%s: Deployment/%s sets replicas although HorizontalPodAutoscaler/%s "
                        "owns it (each apply would reset the count)" % (where, ref.get("name"), n))
    if flavour:
        check_flavour(where, tmpls, flavour, errs)
    return errs


def ganflow_containers(tmpls):
    for o, t in tmpls:
        for c in (t.get("spec") or {}).get("containers") or []:
            if str(c.get("image", "")).split("/")[-1].startswith("ganflow:"):
                yield o, c


def check_flavour(where, tmpls, flavour, errs):
    tag = "0.1.0-cuda" if flavour == "cuda" else "0.1.0"
    seen = 0
    for o, c in ganflow_containers(tmpls):
        seen += 1
        cw = "%s: %s container %s" % (where, name_of(o), c.get("name"))
        args = [str(a) for a in c.get("args") or []]
        img = str(c.get("image"))
        if img.rsplit(":", 1)[-1] != tag:
            errs.append("%s: image %s, the %s flavour is ganflow:%s" % (cw, img, flavour, tag))
        prog = (c.get("command") or [""])[0]
        dev_args = train_args(args) if prog == "ganflow" else args
        dev = arg_value(dev_args, "--device")
        gpus = ((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
        if flavour == "cuda":
            if dev != "cuda":
                errs.append("%s: no --device cuda for %s" % (cw, "ganflow-train" if prog == "ganflow" else prog))
            if str(gpus) != "1":
                errs.append("%s: nvidia.com/gpu limit is %r, not 1" % (cw, gpus))
        else:
            if dev not in (None, "cpu"):
                errs.append("%s: --device %s in the cpu flavour" % (cw, dev))
            if gpus is not None:
                errs.append("%s: nvidia.com/gpu limit in the cpu flavour" % cw)
    if not seen:
        errs.append("%s: no ganflow container" % where)


def check_crd_file(where, o, refs):
    """A TrainJob, PyTorchJob or JobSet: fields, pod templates, references."""
    errs = []
    kind = o.get("kind")
    meta = o.get("metadata") or {}
    if not meta.get("name"):
        errs.append("%s: %s without metadata.name" % (where, kind))
        return errs
    fn = {"TrainJob": crd_trainjob, "PyTorchJob": crd_pytorchjob,
          "JobSet": crd_jobset}[kind]
    w = "%s: %s" % (where, name_of(o))
    for tw, t in fn(o, w, errs):
        if t.get("kind") == "Job":
            errs.extend(schema_errors(t, tw))
            tmpl = (t.get("spec") or {}).get("template") or {}
        else:
            errs.extend(schema_errors(pod_template_obj(t, meta["name"]), tw))
            tmpl = t
        check_pod(tw, tmpl, refs, errs)
        cs = (tmpl.get("spec") or {}).get("containers") or []
        if kind == "JobSet":
            net = (o.get("spec") or {}).get("network") or {}
            if net.get("enableDNSHostnames") is False:
                errs.append("%s: network.enableDNSHostnames is false: no pod DNS names" % w)
            sub = net.get("subdomain") or meta["name"]
            rj = t["metadata"]["name"][len(meta["name"]) + 1:]
            check_job_like(tw, t["metadata"]["name"], t.get("spec") or {},
                           "%s-%s-0-0" % (meta["name"], rj), sub, None, errs)
        else:
            for c in cs:
                args = [str(a) for a in c.get("args") or []]
                if args[:1] != ["launch"]:
                    continue
                la = launch_args(args)
                for f in ("--nnodes", "--node-rank", "--rdzv"):
                    if arg_value(la, f) is not None:
                        errs.append("%s: container %s: %s given: the operator's "
                                    "variables are what names the nodes here" % (tw, c.get("name"), f))
                if kind == "PyTorchJob" and arg_value(la, "--nproc") is None:
                    errs.append("%s: container %s: --nproc is required: the ranks per pod "
                                "given plainly (the operator's PET_NPROC_PER_NODE is \"auto\" "
                                "by default)" % (tw, c.get("name")))
    return errs


# ---------------------------------------------------------------- a tree

def check_tree(root, refs_base=None, label=None):
    """Checks a directory of manifests: its files and its kustomizations.

    Returns the list of errors. refs_base: the kustomization whose objects
    the CRD files' references must name (deploy/k8s/training/support)."""
    errs = []
    kdirs = kustomize_dirs(root)
    partial = set()
    for d in kdirs:
        partial |= patch_files(d)
    files = []
    if os.path.isfile(root):
        files = [root]
    else:
        for d, _, fs in os.walk(root):
            for f in fs:
                p = os.path.join(d, f)
                if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml" and p not in partial:
                    files.append(p)
    refs_cache = {}

    def refs():
        if "r" not in refs_cache:
            objs, e = render(refs_base) if refs_base else ([], None)
            if e:
                errs.append(e)
            refs_cache["r"] = objs
        return refs_cache["r"]

    for p in sorted(files):
        try:
            docs = load_yaml_docs(p)
        except yaml.YAMLError as e:
            errs.append("%s: not YAML: %s" % (rel(p), e))
            continue
        if not docs:
            errs.append("%s: no objects" % rel(p))
        for o in docs:
            if not isinstance(o, dict) or "apiVersion" not in o or "kind" not in o:
                errs.append("%s: a document without apiVersion and kind" % rel(p))
                continue
            if (o["apiVersion"], o["kind"]) in CRD_KINDS:
                errs.extend(check_crd_file(rel(p), o, refs()))
            elif has_core_schema(o):
                errs.extend(schema_errors(o, rel(p)))
            else:
                errs.append("%s: %s %s: no schema for this kind (neither a core kind "
                            "nor TrainJob, PyTorchJob, JobSet)" % (rel(p), o["apiVersion"], o["kind"]))
    for d in kdirs:
        objs, e = render(d)
        if e:
            errs.append(e)
            continue
        where = "rendered %s" % rel(d)
        if not objs:
            errs.append("%s: no objects" % where)
        for o in objs:
            errs.extend(schema_errors(o, where))
        base = os.path.basename(d)
        flavour = base if os.path.basename(os.path.dirname(d)) == "overlays" else None
        errs.extend(check_set(where, objs, flavour))
    return errs


def main():
    t0 = time.time()
    print("k8s_check: Kubernetes schemas %s (%d versions), strict; kustomize "
          "of %s" % (", ".join(v.rsplit(".", 1)[0] for v in VERSIONS), len(VERSIONS),
                     rel(KUBECTL)))
    if not os.path.isdir(K8S):
        die("%s is missing" % rel(K8S))
    support = os.path.join(K8S, "training", "support")
    errs = check_tree(K8S, refs_base=support)
    kd = kustomize_dirs(K8S)
    for d in ("serving", "training", "training/support", "overlays/cpu", "overlays/cuda"):
        if os.path.join(K8S, d) not in kd:
            errs.append("deploy/k8s/%s: no kustomization.yaml" % d)
    n_files = sum(1 for d, _, fs in os.walk(K8S) for f in fs if f.endswith(".yaml"))
    print("k8s_check: deploy/k8s: %d YAML files, %d kustomizations: %s" % (
        n_files, len(kd), "OK" if not errs else "%d problems" % len(errs)))
    for e in errs:
        print("  " + e)
    # The broken fixtures: each must be rejected, for the reason it names.
    bad = []
    if not os.path.isdir(BROKEN):
        die("%s is missing" % rel(BROKEN))
    fixtures = sorted(os.listdir(BROKEN))
    for f in fixtures:
        p = os.path.join(BROKEN, f)
        head = os.path.join(p, "kustomization.yaml") if os.path.isdir(p) else p
        if not os.path.isfile(head):
            continue
        with open(head) as fh:
            first = fh.readline()
            rest = fh.read()
        m = re.match(r"#\s*expect:\s*(.+?)\s*$", first)
        if not m:
            bad.append("%s: first line must be `# expect: TEXT`" % rel(p))
            continue
        got = check_tree(p, refs_base=support)
        hit = [e for e in got if m.group(1) in e]
        if not got:
            bad.append("%s: ACCEPTED, but it is broken (%s)" % (rel(p), m.group(1)))
        elif not hit:
            bad.append("%s: rejected, but not for %r; got:\n      %s" % (
                rel(p), m.group(1), "\n      ".join(got)))
        else:
            print("k8s_check: fixture %s rejected: %s" % (f, hit[0]))
        if "# strict-only" in rest or "# strict-only" in first:
            for o in load_yaml_docs(p):
                if has_core_schema(o) and schema_errors(o, rel(p), strict=False):
                    bad.append("%s: marked strict-only, but non-strict validation "
                               "rejects it too" % rel(p))
    if len([f for f in fixtures if not f.startswith(".")]) < 10:
        bad.append("%s: expected at least 10 broken fixtures, found %d" % (
            rel(BROKEN), len(fixtures)))
    for b in bad:
        print("  " + b)
    dt = time.time() - t0
    ok = not errs and not bad
    print("k8s_check: %s (%d fixtures, %.1f s)" % ("PASS" if ok else "FAIL", len(fixtures), dt))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
