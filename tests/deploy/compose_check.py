#!/usr/bin/env python3
"""Checks deploy/compose/compose.yaml offline with docker-compose's `config`.

    compose_check.py check  --root SRC --tmp-dir DIR [--docker-compose PATH]
    compose_check.py broken --root SRC --tmp-dir DIR [--docker-compose PATH]

check: the stack must pass `docker-compose config -q` (the Compose
Specification schema as docker-compose reads it, interpolation, references
between services, volumes and secrets), rendered with .env.example and again
with nothing but POSTGRES_PASSWORD set (the defaults in the file), and its
rendered config must hold the facts below (facts()). Without
POSTGRES_PASSWORD, `config` must refuse it. mlflow.Dockerfile must pin the
MLflow and psycopg versions deploy/install-deps.sh pins.

broken: every file in tests/deploy/compose-broken/ is an override merged onto
compose.yaml (`-f compose.yaml -f FIXTURE`) and must be rejected by the same
check, `config` or facts(), with a message holding each of the fixture's
`# expect:` lines. A fixture that passes, or is rejected for another reason,
fails the test.

No container engine is needed or contacted. A missing docker-compose is a
failure, never a skip. Exit 0 when everything holds, 1 otherwise.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

SERVICES = {"postgres", "mlflow", "train", "serve"}
CKPT = "/var/lib/ganflow/checkpoints"
CACHE = "/var/cache/ganflow-serve"
TOKEN = "/var/run/secrets/ganflow/token"
URI = "http://mlflow:5000"
# SIGTERM to a training job: the step (or an evaluation) in progress, the
# checkpoint, the metrics flush; compose.yaml argues for 120 s.
MIN_TRAIN_GRACE_S = 60
MIN_SERVE_GRACE_S = 10
# Variables that would change what the file renders to: the test's own
# environment (ctest's, a developer's shell) must not leak in.
ENV_PREFIXES = ("POSTGRES_", "GANFLOW_", "MLFLOW_", "COMPOSE_", "DOCKER_")


class Fatal(Exception):
    """A problem with the test itself or its tools: fail at once."""


def compose_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env.update(extra)
    return env


def run_compose(dc, files, env_file, extra_env, quiet):
    cmd = [dc]
    for f in files:
        cmd += ["-f", f]
    cmd += ["--env-file", env_file, "config"]
    if quiet:
        cmd.append("-q")
    try:
        p = subprocess.run(cmd, env=compose_env(extra_env), capture_output=True,
                           text=True, timeout=120)
    except OSError as e:
        raise Fatal(f"cannot run {dc}: {e}")
    return p.returncode, p.stdout, p.stderr


def yaml_loader(dc):
    """A function parsing YAML text: PyYAML here, else through the Python that
    runs docker-compose 1.x (PyYAML is one of its dependencies)."""
    try:
        import yaml  # noqa: PLC0415
        return yaml.safe_load
    except ImportError:
        pass
    interp = None
    try:
        with open(dc, "rb") as f:
            first = f.readline().decode("utf-8", "replace").strip()
        if first.startswith("#!") and "python" in first:
            interp = first[2:].split()
    except OSError:
        pass
    if not interp:
        raise Fatal("no YAML parser: this Python has no PyYAML (Debian: python3-yaml) "
                    f"and {dc} is not a Python script whose interpreter could lend one")
    import json  # noqa: PLC0415
    prog = "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"

    def load(text):
        p = subprocess.run(interp + ["-c", prog], input=text, capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise Fatal(f"parsing the rendered config with {' '.join(interp)}: {p.stderr.strip()}")
        return json.loads(p.stdout)
    return load


# ---- normalising what `config` renders (docker-compose 1.x writes short
# ---- syntax strings, Compose v2 long-syntax mappings) ----------------------

def duration_s(v):
    """Seconds of a compose duration: '2m', '1m30s', '120s', '2m0s', '500ms'."""
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|us|ns|m|s)", s)
    if not parts or "".join(n + u for n, u in parts) != s:
        return None
    mult = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    return sum(float(n) * mult[u] for n, u in parts)


def words(v):
    if v is None:
        return ""
    if isinstance(v, list):
        return " ".join(str(x) for x in v)
    return str(v)


def mounts(svc):
    """(type, source, target, read_only) of a service's volumes and tmpfs."""
    out = []
    for v in svc.get("volumes") or []:
        if isinstance(v, dict):
            out.append((v.get("type", "volume"), v.get("source"), v.get("target"),
                        bool(v.get("read_only"))))
            continue
        parts = str(v).split(":")
        if len(parts) == 1:
            out.append(("volume", None, parts[0], False))
            continue
        src, tgt = parts[0], parts[1]
        mode = parts[2] if len(parts) > 2 else "rw"
        kind = "bind" if src.startswith(("/", ".", "~")) else "volume"
        out.append((kind, src, tgt, "ro" in mode.split(",")))
    tmpfs = svc.get("tmpfs") or []
    for t in [tmpfs] if isinstance(tmpfs, str) else tmpfs:
        out.append(("tmpfs", None, str(t).split(":")[0], False))
    return out


def ports(svc):
    """(published, target) pairs as strings."""
    out = []
    for p in svc.get("ports") or []:
        if isinstance(p, dict):
            out.append((str(p.get("published", "")), str(p.get("target", ""))))
            continue
        s = str(p).split("/")[0]
        parts = s.split(":")
        out.append((parts[-2] if len(parts) > 1 else "", parts[-1]))
    return out


def environment(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
    return env


def depends(svc):
    d = svc.get("depends_on") or {}
    if isinstance(d, list):
        return {name: "service_started" for name in d}
    return {name: (c or {}).get("condition", "service_started") for name, c in d.items()}


def facts(cfg):
    """Problems of a rendered config against what the stack must do."""
    bad = []
    services = cfg.get("services") or {}
    missing = SERVICES - set(services)
    if missing:
        return [f"services missing: {', '.join(sorted(missing))}"]
    declared_volumes = set((cfg.get("volumes") or {}).keys())
    declared_secrets = set((cfg.get("secrets") or {}).keys())

    def need(cond, msg):
        if not cond:
            bad.append(msg)

    def named_volume_at(name, svc, target):
        for kind, src, tgt, _ in mounts(svc):
            if tgt == target:
                need(kind == "volume" and src in declared_volumes,
                     f"{name}: {target} must be a declared named volume (got {kind} {src})")
                return
        bad.append(f"{name}: no volume at {target}")

    restart_re = re.compile(r"^(no|always|unless-stopped|on-failure(:\d+)?)$")
    for name, svc in services.items():
        r = str(svc.get("restart", "no"))
        need(restart_re.match(r), f"{name}: restart '{r}' is not a restart policy")
        for s in svc.get("secrets") or []:
            src = s.get("source") if isinstance(s, dict) else s
            need(src in declared_secrets, f"{name}: secret '{src}' is not declared under secrets:")

    pg = services["postgres"]
    need(re.match(r"^postgres:15\.\d+", str(pg.get("image", ""))),
         f"postgres: image must be postgres:15.<minor>... (pinned), got {pg.get('image')}")
    named_volume_at("postgres", pg, "/var/lib/postgresql/data")
    need("pg_isready" in words((pg.get("healthcheck") or {}).get("test")),
         "postgres: the healthcheck must run pg_isready")

    ml = services["mlflow"]
    mcmd = words(ml.get("command"))
    need("build" in ml, "mlflow: must be built (build:), the official image has no PostgreSQL driver")
    need(re.search(r"--backend-store-uri[= ]postgresql\+psycopg://[^ ]*@postgres:5432/", mcmd),
         "mlflow: --backend-store-uri must be postgresql+psycopg://...@postgres:5432/...")
    need(re.search(r"--serve-artifacts\b", mcmd) and
         re.search(r"--artifacts-destination[= ]/mlartifacts\b", mcmd),
         "mlflow: artifacts must be served from /mlartifacts (--serve-artifacts --artifacts-destination)")
    m = re.search(r"--allowed-hosts[= ](\S+)", mcmd)
    need(m and "mlflow:5000" in m.group(1).split(","),
         "mlflow: --allowed-hosts must list mlflow:5000 (MLflow 3 answers 403 to other Host headers)")
    named_volume_at("mlflow", ml, "/mlartifacts")
    need(any(t == "5000" for _, t in ports(ml)), "mlflow: port 5000 must be published")
    need(re.search(r"127\.0\.0\.1:5000/health\b", words((ml.get("healthcheck") or {}).get("test"))),
         "mlflow: the healthcheck must query http://127.0.0.1:5000/health")
    need(depends(ml).get("postgres") == "service_healthy",
         "mlflow: must depend on postgres with condition service_healthy")

    tr = services["train"]
    tcmd = words(tr.get("command"))
    need(tr.get("image") == "ganflow:0.1.0", f"train: image must be ganflow:0.1.0, got {tr.get('image')}")
    need(str(tr.get("user", "")).split(":")[0] == "10001", "train: must run as user 10001")
    need(environment(tr).get("MLFLOW_TRACKING_URI") == URI, f"train: MLFLOW_TRACKING_URI must be {URI}")
    need("train" in (tr.get("profiles") or []), "train: must be in profile 'train' (one-shot)")
    r = str(tr.get("restart", "no"))
    need(r == "no" or r.startswith("on-failure"),
         f"train: restart must be 'no' or on-failure (a one-shot job), got '{r}'")
    need(str(tr.get("stop_signal", "SIGTERM")) in ("SIGTERM", "TERM"), "train: stop_signal must be SIGTERM")
    g = duration_s(tr.get("stop_grace_period"))
    need(g is not None and g >= MIN_TRAIN_GRACE_S,
         f"train: stop_grace_period must be at least {MIN_TRAIN_GRACE_S} s for the checkpoint, "
         f"got {tr.get('stop_grace_period')}")
    data = [x for x in mounts(tr) if x[2] == "/data/fashion-mnist"]
    need(data and data[0][0] == "bind" and data[0][3],
         "train: the dataset must be a read-only bind mount at /data/fashion-mnist")
    named_volume_at("train", tr, CKPT)
    for pat, what in [
            (r"\bganflow launch\b.*\bganflow-train\b", "ganflow-train under ganflow launch (exit 143 on SIGTERM)"),
            (r"--data (idx:)?/data/fashion-mnist\b", "--data idx:/data/fashion-mnist"),
            (r"--checkpoint-dir " + re.escape(CKPT) + r"(/|\s)", f"--checkpoint-dir under {CKPT}"),
            (r"--register-model \S+", "--register-model"),
            (r"\bganflow promote\b.*--alias production\b", "ganflow promote ... --alias production")]:
        need(re.search(pat, tcmd, re.S), f"train: the command must run {what}")
    need(depends(tr).get("mlflow") == "service_healthy",
         "train: must depend on mlflow with condition service_healthy")

    sv = services["serve"]
    scmd = words(sv.get("command"))
    need(sv.get("image") == "ganflow:0.1.0", f"serve: image must be ganflow:0.1.0, got {sv.get('image')}")
    need(str(sv.get("user", "")).split(":")[0] == "10001", "serve: must run as user 10001")
    need(environment(sv).get("MLFLOW_TRACKING_URI") == URI, f"serve: MLFLOW_TRACKING_URI must be {URI}")
    need(re.search(r"\bganflow-serve\b", scmd), "serve: the command must run ganflow-serve")
    need(re.search(r"--model\s+\"?models:/[A-Za-z0-9_.-]+@production\b", scmd),
         "serve: --model must follow models:/NAME@production")
    need(re.search(r"--listen\s+0\.0\.0\.0:8080\b", scmd), "serve: must listen on 0.0.0.0:8080")
    need(re.search(r"--cache-dir\s+" + re.escape(CACHE) + r"\b", scmd), f"serve: --cache-dir must be {CACHE}")
    need(any(tgt == CACHE and kind in ("volume", "tmpfs") for kind, _, tgt, _ in mounts(sv)),
         f"serve: {CACHE} must be a named volume or tmpfs")
    need(any(t == "8080" for _, t in ports(sv)), "serve: port 8080 must be published")
    htest = words((sv.get("healthcheck") or {}).get("test"))
    need(re.search(r"\bcurl\b.*-f.*127\.0\.0\.1:8080/v2/health/ready\b", htest),
         "serve: the healthcheck must be curl -f http://127.0.0.1:8080/v2/health/ready")
    need(str(sv.get("restart", "no")) in ("unless-stopped", "always"),
         "serve: restart must be unless-stopped (or always)")
    g = duration_s(sv.get("stop_grace_period"))
    need(g is not None and g >= MIN_SERVE_GRACE_S,
         f"serve: stop_grace_period must be at least {MIN_SERVE_GRACE_S} s for draining")
    need(depends(sv).get("mlflow") == "service_healthy",
         "serve: must depend on mlflow with condition service_healthy")
    need(any((s.get("target") if isinstance(s, dict) else None) == TOKEN for s in sv.get("secrets") or []),
         f"serve: the token secret must be mounted at {TOKEN}")
    return bad


def judge(dc, load, files, env_file, extra_env):
    """(accepted, message): `config -q`, then `config` and facts()."""
    rc, out, err = run_compose(dc, files, env_file, extra_env, quiet=True)
    if rc != 0:
        return False, f"docker-compose config -q exited {rc}: {(err + out).strip()}"
    rc, out, err = run_compose(dc, files, env_file, extra_env, quiet=False)
    if rc != 0:
        return False, f"docker-compose config exited {rc}: {(err + out).strip()}"
    cfg = load(out)
    if not isinstance(cfg, dict):
        return False, "the rendered config is not a mapping"
    bad = facts(cfg)
    if bad:
        return False, "facts: " + "; ".join(bad)
    return True, "accepted"


def pinned(path, var):
    with open(path, encoding="utf-8") as f:
        m = re.search(r"^\s*(?:ARG\s+)?" + var + r"=([0-9][0-9A-Za-z.]*)", f.read(), re.M)
    return m.group(1) if m else None


def cmd_check(args, dc, load, compose, tmp):
    ok = True
    env_example = os.path.join(args.root, "deploy", "compose", ".env.example")
    empty = os.path.join(tmp, "empty.env")
    with open(empty, "w", encoding="utf-8"):
        pass
    for label, env_file, extra in [(".env.example", env_example, {}),
                                   ("defaults (POSTGRES_PASSWORD only)", empty, {"POSTGRES_PASSWORD": "pw"})]:
        accepted, msg = judge(dc, load, [compose], env_file, extra)
        print(f"compose_check: {label}: {msg}")
        ok &= accepted
    rc, out, err = run_compose(dc, [compose], empty, {}, quiet=True)
    refused = rc != 0 and "POSTGRES_PASSWORD" in err + out
    print("compose_check: without POSTGRES_PASSWORD: "
          + ("refused, naming it" if refused else f"NOT refused as it must be (exit {rc}): {(err + out).strip()}"))
    ok &= refused
    dockerfile = os.path.join(args.root, "deploy", "compose", "mlflow.Dockerfile")
    deps = os.path.join(args.root, "deploy", "install-deps.sh")
    for var in ("MLFLOW_VERSION", "PSYCOPG_VERSION"):
        a, b = pinned(dockerfile, var), pinned(deps, var)
        same = a is not None and a == b
        print(f"compose_check: {var}: mlflow.Dockerfile {a}, install-deps.sh {b}"
              + ("" if same else ": they must be the same"))
        ok &= same
    return ok


def cmd_broken(args, dc, load, compose, tmp):
    folder = os.path.join(args.root, "tests", "deploy", "compose-broken")
    fixtures = sorted(f for f in os.listdir(folder) if f.endswith((".yaml", ".yml")))
    if not fixtures:
        raise Fatal(f"no fixtures in {folder}")
    env_example = os.path.join(args.root, "deploy", "compose", ".env.example")
    expects = {}
    for name in fixtures:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            expects[name] = [m.strip() for m in re.findall(r"^# expect:(.*)$", f.read(), re.M)]
        if not expects[name]:
            raise Fatal(f"{name}: no '# expect:' line")
    # Each docker-compose start takes about half a second: four at a time.
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        verdicts = pool.map(lambda n: judge(dc, load, [compose, os.path.join(folder, n)],
                                            env_example, {}), fixtures)
    ok = True
    for name, (accepted, msg) in zip(fixtures, verdicts):
        expect = expects[name]
        if accepted:
            print(f"compose_check: FAIL {name}: accepted, but it is broken")
            ok = False
        elif not all(e in msg for e in expect):
            print(f"compose_check: FAIL {name}: rejected, but not for the expected reason "
                  f"({' / '.join(expect)}): {msg}")
            ok = False
        else:
            print(f"compose_check: ok   {name}: rejected: {msg}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["check", "broken"])
    ap.add_argument("--root", required=True, help="the source tree")
    ap.add_argument("--tmp-dir", required=True, help="scratch folder (made if missing)")
    ap.add_argument("--docker-compose", help="the docker-compose to run (default: from PATH)")
    args = ap.parse_args()
    dc = args.docker_compose or shutil.which("docker-compose")
    if not dc or not os.access(dc, os.X_OK):
        print("compose_check: FAIL: docker-compose not found (PATH, or --docker-compose): "
              "install Debian's docker-compose package (deploy/install-deps.sh does); "
              "this check needs it and does not skip")
        return 1
    os.makedirs(args.tmp_dir, exist_ok=True)
    compose = os.path.join(args.root, "deploy", "compose", "compose.yaml")
    try:
        p = subprocess.run([dc, "version", "--short"], capture_output=True, text=True, timeout=60)
        print(f"compose_check: {dc} {p.stdout.strip() or p.stderr.strip()}")
        load = yaml_loader(dc)
        ok = (cmd_check if args.mode == "check" else cmd_broken)(args, dc, load, compose, args.tmp_dir)
    except (Fatal, OSError, subprocess.TimeoutExpired) as e:
        print(f"compose_check: FAIL: {e}")
        return 1
    print("compose_check: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
