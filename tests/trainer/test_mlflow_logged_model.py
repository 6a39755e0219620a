"""What MLflow's own Python client sees of the generator ganflow-train
logged into an MLflow 3 server: one logged model of the run (READY, named
generator, the run as its source and one of the run's outputs), its files
at its own artifact location, the run's final SWD linked to it without a
second point in the run's history, and the registry version made from it
(source models:/<id>, tag mlflow.modelVersions on the model).

usage: test_mlflow_logged_model.py TRACKING_URI RUN_ID MODEL_NAME VERSION
Exit status 0 when everything holds; the first miss is printed."""
import json
import sys

import mlflow
from mlflow import MlflowClient


def main():
    uri, run_id, name, version = sys.argv[1:5]
    mlflow.set_tracking_uri(uri)
    c = MlflowClient()
    run = c.get_run(run_id)
    models = c.search_logged_models(experiment_ids=[run.info.experiment_id])
    mine = [m for m in models if m.source_run_id == run_id]
    assert len(mine) == 1, f"{len(mine)} logged models of the run"
    m = c.get_logged_model(mine[0].model_id)
    assert m.name == "generator", m.name
    assert str(m.status).endswith("READY"), m.status
    outs = [o.model_id for o in run.outputs.model_outputs]
    assert m.model_id in outs, f"run outputs {outs}"
    files = {f.path for f in c.list_logged_model_artifacts(m.model_id)}
    for want in ("MLmodel", "generator.safetensors", "config.json"):
        assert want in files, f"{want} not in the logged model's files {files}"
    info = mlflow.models.get_model_info(f"models:/{m.model_id}")
    assert info.run_id == run_id, info.run_id
    linked = {x.key: x for x in m.metrics}
    assert "swd/avg" in linked, f"metrics linked: {sorted(linked)}"
    final = run.data.metrics["swd/avg"]
    assert linked["swd/avg"].value == final, (linked["swd/avg"].value, final)
    hist = c.get_metric_history(run_id, "swd/avg")
    steps = [p.step for p in hist]
    assert len(steps) == len(set(steps)), f"swd/avg steps twice: {steps}"
    mv = c.get_model_version(name, version)
    assert mv.source == f"models:/{m.model_id}", mv.source
    tag = json.loads(m.tags.get("mlflow.modelVersions", "[]"))
    assert {"name": name, "version": version} in tag, tag
    print(f"logged model {m.model_id}: READY, {sorted(files)}, swd/avg "
          f"{final} linked, version {name}/{version} from it")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}")
        sys.exit(1)
