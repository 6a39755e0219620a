"""The same two measurements with MLflow's own Python client, the tool a
user would otherwise use: per-call cost of MlflowClient.log_metric with
synchronous=False (MLflow's async logging), and sustained points/s."""
import sys
import time

import mlflow
from mlflow import MlflowClient

points = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
client = MlflowClient()
exp = mlflow.set_experiment("bench-logger")
run = client.create_run(exp.experiment_id, run_name="python-async")
rid = run.info.run_id

n1 = 20000
t0 = int(time.time() * 1000)
costs = []
for i in range(n1):
    a = time.perf_counter_ns()
    client.log_metric(rid, "bench/caller", float(i), timestamp=t0 + i, step=i,
                      synchronous=False)
    costs.append(time.perf_counter_ns() - a)
costs.sort()
print(f"python caller cost over {n1} calls: mean {sum(costs)/n1:.0f} ns, "
      f"p50 {costs[n1//2]} ns, p99 {costs[n1*99//100]} ns, max {costs[-1]} ns")
mlflow.flush_async_logging()

a = time.perf_counter()
for i in range(points):
    client.log_metric(rid, "bench/throughput", float(i), timestamp=t0 + i, step=i,
                      synchronous=False)
mlflow.flush_async_logging()
b = time.perf_counter()
held = len(client.get_metric_history(rid, "bench/throughput"))
print(f"python throughput: {points} points in {b-a:.2f} s = {points/(b-a):.0f} "
      f"points/s; server holds {held}")
client.set_terminated(rid)
