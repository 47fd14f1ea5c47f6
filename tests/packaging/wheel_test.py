#!/usr/bin/env python3
"""The wheel (pyproject.toml), as a PyTorch user gets it: built, tagged, installed into a new
virtual environment, used from there alone, uninstalled.

    wheel_test.py build SOURCE WHEELHOUSE TOOLS_PYTHON   `pip wheel` builds it (scikit-build-core,
                                                         no build isolation), auditwheel finds
                                                         it manylinux_2_31 or older, and it is
                                                         tagged so; under 20 MB, and no
                                                         file in it is dynamically linked
    wheel_test.py programs WHEELHOUSE                    a new environment gets ddprun, ddprund,
                                                         the network launcher and `python -m
                                                         ddprun` (an exec); pip uninstall leaves
                                                         no file of it
    wheel_test.py pytorch WHEELHOUSE SOURCE TORCH_PYTHON a 2-worker PyTorch DDP script, and again
                                                         with --python_preload=torch
    wheel_test.py two-nodes WHEELHOUSE                   a job of two nodes on loopback (the
                                                         network launcher from the wheel)
    wheel_test.py daemon WHEELHOUSE                      the wheel's ddprund on loopback serves a
                                                         --hosts job of the wheel's ddprun
    wheel_test.py older-distribution WHEELHOUSE          in a Debian 11 root (glibc 2.31, made
                                                         by debootstrap once and kept in
                                                         ~/.cache/ddprun), the wheel installs
                                                         into a venv and runs a job

The checks but `pytorch` ignore what follows WHEELHOUSE (CTest gives every check the same
arguments); an empty TOOLS_PYTHON or TORCH_PYTHON may be left out. Each environment is made by
Debian's python3 -m venv; `pytorch` gives it the torch of the
PyTorch tests through a .pth file naming that environment's site-packages, so the test installs
no torch of its own. Exit 77: skipped, with the reason printed.
"""
import fcntl
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile

SKIP = 77
LIMIT_BYTES = 20 << 20
TAG = "manylinux_2_31_x86_64"


def fail(message):
    print(f"wheel_test: {message}", file=sys.stderr)
    sys.exit(1)


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(SKIP)


def run(command, **options):
    """`command` to its end (within 5 minutes); fails the test, with its output, unless it exits
    0. Returns its stdout."""
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=options.pop("timeout", 300), **options)
    if result.returncode != 0:
        fail(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout[-6000:]}")
    return result.stdout


def the_wheel(wheelhouse):
    wheels = glob.glob(os.path.join(wheelhouse, "ddprun-*.whl"))
    if len(wheels) != 1:
        skip(f"no single wheel in {wheelhouse} (the build check did not make one): {wheels}")
    return wheels[0]


def build(source, wheelhouse, tools_python=""):
    if not tools_python:
        skip("no wheel tools (scikit-build-core, auditwheel): ./run.sh test installs them and "
             "passes -DDDPRUN_WHEEL_TOOLS_PYTHON")
    with tempfile.TemporaryDirectory() as work:
        raw = os.path.join(work, "raw")
        environment = dict(os.environ, CCACHE_BASEDIR=source, CCACHE_NOHASHDIR="true")
        run([tools_python, "-m", "pip", "wheel", source, "--no-build-isolation", "--no-deps",
             "--disable-pip-version-check", "-w", raw], env=environment, timeout=1700)
        built = glob.glob(os.path.join(raw, "ddprun-*.whl"))
        if len(built) != 1:
            fail(f"pip wheel made {built}")
        # auditwheel reads what the files allow (static programs: any glibc); the tag set is
        # manylinux_2_31, the oldest glibc tried (Debian 11's): a static glibc 2.36 still needs
        # a kernel of 3.2 or newer, which the oldest manylinux tags do not promise.
        shown = run([tools_python, "-m", "auditwheel", "show", built[0]])
        print(shown.strip())
        allowed = re.search(r'platform tag:\s*"manylinux_(\d+)_(\d+)_x86_64"', shown)
        if not allowed or (int(allowed.group(1)), int(allowed.group(2))) > (2, 31):
            fail(f"auditwheel finds the wheel not consistent with {TAG}")
        run([tools_python, "-m", "wheel", "tags", "--platform-tag", TAG, "--remove", built[0]])
        for old in glob.glob(os.path.join(wheelhouse, "ddprun-*.whl")):
            os.remove(old)
        os.makedirs(wheelhouse, exist_ok=True)
        for tagged in glob.glob(os.path.join(raw, "ddprun-*.whl")):
            shutil.move(tagged, wheelhouse)
    wheel = the_wheel(wheelhouse)
    name = os.path.basename(wheel)
    if not name.endswith(f"-py3-none-{TAG}.whl"):
        fail(f"{name} is not tagged py3-none-{TAG}")
    size = os.path.getsize(wheel)
    print(f"{name}: {size / (1 << 20):.1f} MiB")
    if size > LIMIT_BYTES:
        fail(f"{name} is {size / (1 << 20):.1f} MiB, over 20")
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as unpacked:
        archive.extractall(unpacked)
        names = archive.namelist()
        for expected in (r"\.data/scripts/ddprun$", r"\.data/scripts/ddprund$",
                         r"\.data/data/libexec/ddprun/ddprun$", r"^ddprun/__init__\.py$",
                         r"^ddprun/__main__\.py$"):
            if not any(re.search(expected, member) for member in names):
                fail(f"the wheel holds nothing matching {expected}: {names}")
        programs = 0
        for member in names:
            path = os.path.join(unpacked, member)
            with open(path, "rb") as opened:
                if opened.read(4) != b"\x7fELF":
                    continue
            programs += 1
            linked = subprocess.run(["ldd", path], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True).stdout
            if "not a dynamic executable" not in linked:
                fail(f"{member} is dynamically linked:\n{linked}")
            print(f"{member}: statically linked")
        if programs != 3:
            fail(f"the wheel holds {programs} programs, not 3")


class Environment:
    """A new virtual environment with the wheel installed, and what it held before."""

    def __init__(self, work, wheel, torch_python=None):
        self.root = os.path.join(work, "venv")
        run(["/usr/bin/python3", "-m", "venv", self.root])
        self.python = os.path.join(self.root, "bin", "python")
        if torch_python:
            site = run([torch_python, "-c", "import os, torch; "
                        "print(os.path.dirname(os.path.dirname(torch.__file__)))"]).strip()
            own_site = run([self.python, "-c", "import sysconfig; "
                            "print(sysconfig.get_path('purelib'))"]).strip()
            with open(os.path.join(own_site, "torch_of_the_tests.pth"), "w") as pth:
                pth.write(site + "\n")
        self.before = self.files()
        run([self.python, "-m", "pip", "install", "--no-index", "--no-deps",
             "--disable-pip-version-check", wheel])
        # PATH: the environment's bin/ alone first, as after `source venv/bin/activate`.
        self.env = dict(os.environ, PATH=os.path.join(self.root, "bin") + ":/usr/bin:/bin",
                        VIRTUAL_ENV=self.root)

    def files(self):
        found = set()
        for folder, _, names in os.walk(self.root):
            found.update(os.path.relpath(os.path.join(folder, name), self.root) for name in names)
        return found

    def program(self, name):
        return os.path.join(self.root, "bin", name)


def programs(wheelhouse, *_):
    wheel = the_wheel(wheelhouse)
    version = re.match(r"ddprun-([0-9.]+)-", os.path.basename(wheel)).group(1)
    with tempfile.TemporaryDirectory() as work:
        venv = Environment(work, wheel)
        for command in ([venv.program("ddprun"), "--version"],
                        [venv.python, "-m", "ddprun", "--version"]):
            said = run(command, env=venv.env).strip()
            if said != f"ddprun {version}":
                fail(f"{' '.join(command)} said {said!r}, not 'ddprun {version}'")
        said = run([venv.program("ddprund"), "--version"], env=venv.env).strip()
        if said != f"ddprund {version}":
            fail(f"ddprund --version said {said!r}")
        where = run([venv.python, "-c", "import ddprun; print(ddprun.program('ddprun')); "
                     "print(ddprun.program('ddprund')); print(ddprun.network_launcher())"],
                    env=venv.env).split()
        expected = [venv.program("ddprun"), venv.program("ddprund"),
                    os.path.join(venv.root, "libexec", "ddprun", "ddprun")]
        if where != expected:
            fail(f"the package says its programs are {where}, not {expected}")
        # An exec: the worker's parent is the very process started as `python -m ddprun`.
        launched = subprocess.Popen([venv.python, "-m", "ddprun", "--standalone",
                                     "--nproc_per_node=1", "sh", "-c", "echo parent=$PPID"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    env=venv.env)
        output, _ = launched.communicate(timeout=120)
        if launched.returncode != 0 or f"parent={launched.pid}" not in output:
            fail(f"python -m ddprun (pid {launched.pid}) was not the workers' ddprun:\n{output}")
        run([venv.python, "-m", "pip", "uninstall", "-y", "--disable-pip-version-check",
             "ddprun"])
        left = venv.files() - venv.before
        if left:
            fail(f"pip uninstall left {sorted(left)}")
        print(f"ddprun {version}: its programs, python -m ddprun (an exec) and an uninstall "
              "that leaves nothing")


def pytorch(wheelhouse, source, torch_python=""):
    if not torch_python:
        skip("no torch for the tests (DDPRUN_TEST_TORCH_PYTHON): ./run.sh test installs it")
    wheel = the_wheel(wheelhouse)
    script = os.path.join(source, "tests", "pytorch", "ddp_train.py")
    with tempfile.TemporaryDirectory() as work:
        venv = Environment(work, wheel, torch_python)
        for preload in ([], ["--python_preload=torch"]):
            model = os.path.join(work, f"model{len(preload)}.pt")
            output = run([venv.program("ddprun"), "--standalone", "--nproc_per_node=2", *preload,
                          venv.python, script, "--epochs", "1", "--out", model], env=venv.env,
                         cwd=work)
            if not os.path.exists(model):
                fail(f"the DDP script{' with ' + preload[0] if preload else ''} saved no model:"
                     f"\n{output[-3000:]}")
            print(f"2 workers of PyTorch DDP{' with ' + preload[0] if preload else ''}: "
                  f"{output.strip().splitlines()[-1]}")


def own_loopback_endpoint():
    """127.A.B.C:29400, from this process's pid: no other running test uses the address."""
    pid = os.getpid()
    return f"127.{100 + (pid >> 16) % 150}.{(pid >> 8) & 255}.{pid & 255}:29400"


def two_nodes(wheelhouse, *_):
    wheel = the_wheel(wheelhouse)
    endpoint = own_loopback_endpoint()
    with tempfile.TemporaryDirectory() as work:
        venv = Environment(work, wheel)
        command = [venv.program("ddprun"), "--nnodes=2", "--nproc_per_node=1",
                   f"--rdzv_endpoint={endpoint}", "--rdzv_id=wheel",
                   "sh", "-c", "echo rank=$RANK of $WORLD_SIZE"]
        # Started together: the node that binds the endpoint hosts the rendezvous, the other
        # joins it (retrying until it serves), as torchrun's nodes do.
        nodes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=venv.env) for _ in range(2)]
        outputs, statuses = "", []
        for node in nodes:
            try:
                output, _ = node.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                for each in nodes:
                    each.kill()
                fail("the two nodes did not end within 180 s")
            outputs += output
            statuses.append(node.returncode)
        if statuses != [0, 0]:
            fail(f"the nodes exited {statuses}:\n{outputs}")
        ranks = sorted(re.findall(r"rank=(\d) of 2", outputs))
        if ranks != ["0", "1"]:
            fail(f"the workers said ranks {ranks}, not 0 and 1:\n{outputs}")
        print(f"two nodes at {endpoint}: ranks 0 and 1 of 2")


def daemon(wheelhouse, *_):
    wheel = the_wheel(wheelhouse)
    address = own_loopback_endpoint().split(":")[0]
    with tempfile.TemporaryDirectory() as work:
        venv = Environment(work, wheel)
        token = os.path.join(work, "token")
        with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as written:
            written.write("wheel-token\n")
        # ddprund runs each job's agent: the ddprun beside it, in the environment's bin/.
        served = subprocess.Popen([venv.program("ddprund"), f"--bind={address}",
                                   f"--token-file={token}", "--allow-root-jobs"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=venv.env)
        watchdog = threading.Timer(120, served.kill)
        watchdog.start()
        try:
            listening = served.stdout.readline()
            if f"listening on {address}:29400" not in listening:
                fail(f"ddprund did not say it listens on {address}:29400: {listening!r}")
            output = run([venv.program("ddprun"), f"--token-file={token}", f"--hosts={address}",
                          "sh", "-c", "echo rank=$RANK of $WORLD_SIZE"], env=venv.env,
                         timeout=120)
            if "rank=0 of 1" not in output:
                fail(f"the --hosts job's worker did not say rank 0 of 1:\n{output}")
        finally:
            served.terminate()
            served.wait(timeout=60)
            watchdog.cancel()
        print(f"ddprund on {address} ran a --hosts job of the wheel's ddprun")


def debian_mirror():
    """The Debian mirror this machine's apt uses (its sources), for debootstrap."""
    for sources in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(sources) as text:
            for line in text:
                if line.startswith("URIs:") and "security" not in line:
                    return line.split()[1]
    if os.path.exists("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list") as text:
            for line in text:
                fields = line.split()
                if len(fields) > 2 and fields[0] == "deb" and "security" not in fields[1]:
                    return fields[1]
    return None


def debian11_root():
    """A Debian 11 root (glibc 2.31) with python3 and venv, made once by debootstrap and kept
    in ~/.cache/ddprun/debian11-root; complete only once its marker file is there."""
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    root = os.path.join(cache, "ddprun", "debian11-root")
    if os.path.exists(os.path.join(root, ".ddprun-complete")):
        return root
    if not shutil.which("debootstrap"):
        skip("debootstrap is not installed (./run.sh test installs it)")
    mirror = debian_mirror()
    if not mirror:
        skip("no Debian mirror in this machine's apt sources for debootstrap")
    os.makedirs(os.path.dirname(root), exist_ok=True)
    with open(root + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(root, ".ddprun-complete")):
            return root
        partial = root + ".partial"
        subprocess.run(["rm", "-rf", partial, root], check=True)
        made = subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv",
                               "bullseye", partial, mirror], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=1200)
        if made.returncode != 0:
            skip(f"debootstrap could not make a Debian 11 root from {mirror}: "
                 f"{made.stdout.strip().splitlines()[-1:]}")
        os.rename(partial, root)
        open(os.path.join(root, ".ddprun-complete"), "w").close()
    return root


# In a mount namespace of its own: the root's /proc, /dev, /tmp and /dev/shm, the wheel, then
# the job inside the root.
OLDER_DISTRIBUTION_SETUP = r"""
set -eu
root=$1 wheelhouse=$2
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/dev/shm"
mount -t tmpfs tmpfs "$root/tmp"
mkdir -p "$root/tmp/wheelhouse"
mount --bind "$wheelhouse" "$root/tmp/wheelhouse"
exec chroot "$root" /bin/sh -euc '
  ldd --version | head -n 1
  python3 -m venv /tmp/venv
  /tmp/venv/bin/pip install --no-index --no-deps --disable-pip-version-check -q \
    /tmp/wheelhouse/'"$3"'
  /tmp/venv/bin/python -m ddprun --version
  /tmp/venv/bin/ddprun --standalone --nproc_per_node=2 sh -c "echo rank=\$RANK of \$WORLD_SIZE"
'
"""


def older_distribution(wheelhouse, *_):
    wheel = the_wheel(wheelhouse)
    if os.geteuid() != 0:
        skip("debootstrap, a mount namespace and chroot need root")
    root = debian11_root()
    output = run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                  OLDER_DISTRIBUTION_SETUP, "setup", root, os.path.realpath(wheelhouse),
                  os.path.basename(wheel)], timeout=300)
    print(output)
    if "2.31" not in output.splitlines()[0]:
        fail(f"the root's glibc is not 2.31: {output.splitlines()[0]}")
    if not re.search(r"^ddprun [0-9.]+$", output, re.M):
        fail("python -m ddprun --version said nothing of ddprun's version")
    ranks = sorted(re.findall(r"rank=(\d) of 2", output))
    if ranks != ["0", "1"]:
        fail(f"the job's workers said ranks {ranks}, not 0 and 1")
    print("Debian 11 (glibc 2.31): the wheel installs, and runs a job of 2 workers")


def main():
    commands = {"build": build, "programs": programs, "pytorch": pytorch, "two-nodes": two_nodes,
                "daemon": daemon, "older-distribution": older_distribution}
    if len(sys.argv) < 3 or sys.argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    commands[sys.argv[1]](*sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
