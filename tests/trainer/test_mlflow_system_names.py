"""Checks the system-metric names ganflow's monitor emits (one per line on
stdin, from monitor_names: 2 ranks, 2 fake GPUs, steps fed) against the
names MLflow's own system-metrics monitor writes, taken from the installed
MLflow package: its CPU monitor (over psutil, or a stand-in where the venv
lacks it) and its GPU monitor over a stand-in pynvml module with 2 devices
(MLflow then writes gpu_0_..., gpu_1_...).
Every name of ours must be MLflow's, except the step-time split listed in
OURS with the reason. Exit 0 when so; the misses are printed."""
import sys
import types

# The step-time split: no MLflow monitor measures it. It stays under system/
# so that the UI's system-metrics section charts it beside CPU and GPU, and
# so that a resumed run finds its system-metric step numbering by prefix.
OURS = {
    "system/step_data_wait_seconds",
    "system/step_compute_seconds",
    "system/step_allreduce_seconds",
}


def fake_pynvml(count):
    m = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    class Mem:
        total, used = 16e9, 4e9

    class Util:
        gpu, memory = 50, 20

    m.NVMLError = NVMLError
    m.nvmlInit = lambda: None
    m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetCount = lambda: count
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetMemoryInfo = lambda h: Mem()
    m.nvmlDeviceGetUtilizationRates = lambda h: Util()
    m.nvmlDeviceGetPowerUsage = lambda h: 100000
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 300000
    return m


def stand_in_psutil():
    """psutil is not in the venv (the server needs none of it); MLflow's CPU
    monitor only reads these two calls, and only the names matter here."""
    m = types.ModuleType("psutil")

    class VMem:
        used, total, percent = 4e9, 16e9, 25.0

    m.cpu_percent = lambda *a, **k: 10.0
    m.virtual_memory = lambda: VMem()
    return m


def mlflow_names():
    sys.modules["pynvml"] = fake_pynvml(2)
    if "psutil" not in sys.modules:
        try:
            import psutil  # noqa: F401
        except ImportError:
            sys.modules["psutil"] = stand_in_psutil()
    from mlflow.system_metrics.metrics.cpu_monitor import CPUMonitor
    from mlflow.system_metrics.metrics.gpu_monitor import GPUMonitor

    names = set()
    for mon in (CPUMonitor(), GPUMonitor()):
        mon.collect_metrics()
        names |= {"system/" + k for k in mon.aggregate_metrics()}
    return names


def main():
    # system/ only: perf/... (the process's RSS) is ours by name
    ours = {l.strip() for l in sys.stdin if l.strip().startswith("system/")}
    theirs = mlflow_names()
    assert any(n.startswith("system/gpu_1_") for n in theirs), theirs
    bad = sorted(n for n in ours if n not in theirs and n not in OURS)
    gpu = sorted(n for n in ours if n.startswith("system/gpu_"))
    print(f"ours: {len(ours)} names ({len(gpu)} GPU); MLflow's: {len(theirs)}")
    print("MLflow's that we do not write:", sorted(theirs - ours))
    if bad or not gpu or "system/step_allreduce_seconds" not in ours:
        print("FAILED: not MLflow's names:", bad, "GPU names:", gpu)
        sys.exit(1)


if __name__ == "__main__":
    main()
