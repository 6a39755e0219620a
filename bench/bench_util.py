"""bench_util.py - helpers that more than one bench Python script needs
(imported from bench/; no third-party imports)."""


def vm_hwm_mib():
    """This process's RSS high-water mark (VmHWM of /proc/self/status) in
    MiB, or -1.0 when it cannot be read."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return -1.0
