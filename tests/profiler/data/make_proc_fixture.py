"""Writes the /proc and cgroup-v2 fixture trees used by system_sampler_test.cc.

Two snapshots, 0.5 s apart in the tests, whose differences give exact rates; the expected values are
derived in the test from the numbers below (see the comments there). Run from this folder:
    .venv/bin/python make_proc_fixture.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, text):
    path = os.path.join(HERE, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def pid_stat(pid, comm, ppid, utime, stime, rss):
    # Fields 1..25 of /proc/<pid>/stat (the kernel prints 52); comm may hold spaces and ')'.
    fields = [str(pid), "(%s)" % comm, "S", str(ppid), str(pid), str(pid), "0", "-1", "4194560",
              "100", "0", "0", "0", str(utime), str(stime), "0", "0", "20", "0", "4", "0",
              "123456", "987654321", str(rss), "18446744073709551615"]
    return " ".join(fields) + " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"


SNAPS = {
    "snap1": dict(
        cpu=[(3000, 0, 1500, 14000, 500), (1000, 0, 500, 8000, 500), (2000, 0, 1000, 6000, 0)],
        mem=(16000000, 12800000),
        disk={"sda": (1000, 500), "sda1": (900, 400), "nvme0n1": (0, 0), "nvme0n1p1": (0, 0),
              "loop0": (77777, 0), "dm-0": (5555, 5555)},
        net={"lo": (999999, 999999), "eth0": (1000000, 200000), "eth1": (0, 0)},
        pids={1: ("systemd", 0, 5000, 5000, 3000), 999: ("sshd", 1, 100, 100, 500),
              4242: ("python (main) x", 1, 1000, 200, 25000),
              4300: ("pt_data_worker", 4242, 500, 100, 5000),
              4310: ("helper", 4300, 50, 0, 1000),
              4311: ("exits", 4300, 7000, 0, 100)},
        cg_cur=1000000000, cg_usage=1000000),
    "snap2": dict(
        cpu=[(3500, 0, 1550, 14400, 550), (1100, 0, 550, 8300, 550), (2400, 0, 1000, 6100, 0)],
        mem=(16000000, 12000000),
        disk={"sda": (3000, 1500), "sda1": (2900, 1400), "nvme0n1": (1000, 0),
              "nvme0n1p1": (1000, 0), "loop0": (99999, 0), "dm-0": (9999, 9999)},
        net={"lo": (1999999, 1999999), "eth0": (1500000, 250000), "eth1": (100, 0)},
        pids={1: ("systemd", 0, 5000, 5000, 3000), 999: ("sshd", 1, 9100, 100, 500),
              4242: ("python (main) x", 1, 1030, 210, 25000),
              4300: ("pt_data_worker", 4242, 520, 100, 5000),
              4310: ("helper", 4300, 60, 0, 1000),
              4320: ("new_worker", 4242, 3000, 0, 2000)},
        cg_cur=1073741824, cg_usage=1600000),
}

for name, s in SNAPS.items():
    lines = []
    for i, (user, nice, system, idle, iowait) in enumerate(s["cpu"]):
        label = "cpu " if i == 0 else "cpu%d" % (i - 1)
        lines.append("%s %d %d %d %d %d 0 0 0 0 0" % (label, user, nice, system, idle, iowait))
    lines += ["intr 123 0 0", "ctxt 456", "btime 1704100000", "processes 5000",
              "procs_running 2", "procs_blocked 0"]
    write("%s/proc/stat" % name, "\n".join(lines) + "\n")
    total, avail = s["mem"]
    write("%s/proc/meminfo" % name,
          "MemTotal:       %d kB\nMemFree:         1000000 kB\nMemAvailable:   %d kB\n"
          "Buffers:          100000 kB\nCached:          2000000 kB\n" % (total, avail))
    disk = []
    for i, (dev, (rd, wr)) in enumerate(s["disk"].items()):
        disk.append("   8       %d %s 10 0 %d 5 20 0 %d 7 0 12 12 0 0 0 0 0 0" % (i, dev, rd, wr))
    write("%s/proc/diskstats" % name, "\n".join(disk) + "\n")
    net = ["Inter-|   Receive                                                |  Transmit",
           " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
           "errs drop fifo colls carrier compressed"]
    for dev, (rx, tx) in s["net"].items():
        net.append("%6s: %d 10 0 0 0 0 0 0 %d 10 0 0 0 0 0 0" % (dev, rx, tx))
    write("%s/proc/net/dev" % name, "\n".join(net) + "\n")
    write("%s/proc/self/cgroup" % name, "0::/train.slice/job\n")
    for pid, (comm, ppid, utime, stime, rss) in s["pids"].items():
        write("%s/proc/%d/stat" % (name, pid), pid_stat(pid, comm, ppid, utime, stime, rss))
    cg = "%s/cgroup/train.slice/job/" % name
    write(cg + "cgroup.controllers", "cpu memory io\n")
    write(cg + "memory.max", "8589934592\n")
    write(cg + "memory.current", "%d\n" % s["cg_cur"])
    write(cg + "cpu.max", "200000 100000\n")
    write(cg + "cpu.stat", "usage_usec %d\nuser_usec 1\nsystem_usec 1\n" % s["cg_usage"])
