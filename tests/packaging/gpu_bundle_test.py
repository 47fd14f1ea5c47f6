#!/usr/bin/env python3
"""The GPU bundle (bench/gpu_bundle.sh), checked where no GPU is: what the first GPU machine
would find wrong must show here first.

    gpu_bundle_test.py build SOURCE BUNDLE HAVE_NCCL   bench/gpu_bundle.sh builds BUNDLE, and
                                                       it is at most 48 MiB
    gpu_bundle_test.py ldd BUNDLE                      each program loads from outside BUNDLE
                                                       only glibc and the CUDA libraries it lists
    gpu_bundle_test.py bare BUNDLE                     gpu_run.sh with only BUNDLE, glibc and a
                                                       shell: one line naming what is missing
    gpu_bundle_test.py no-gpu BUNDLE                   ...and the CUDA libraries: every GPU
                                                       check skipped with its reason, none passed

The last two run gpu_run.sh in a mount namespace of their own, chrooted into a root that holds
BUNDLE (read-only), glibc's libraries, dash as /bin/sh, /proc, /dev/null, an empty /tmp and
/dev/shm, and the folder its results go to; `no-gpu` adds the CUDA libraries of the toolkit
here, standing in for those of a GPU machine's PyTorch. They need root (unshare, mount); without
it they are skipped, as is everything when CUDA and NCCL are not found. Exit 77: skipped.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
LIMIT_BYTES = 48 << 20
# glibc's libraries (the loader, libc, libm...), by soname, and the kernel's vDSO.
GLIBC = re.compile(r"^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|lib(c|m|pthread|dl|rt|resolv|util)"
                   r"\.so\.[0-9]+)$")
CUDA = re.compile(r"^lib(cudart|cublas|cublasLt|nccl)\.so\.[0-9]+$")


def fail(message):
    print(f"gpu_bundle_test: {message}", file=sys.stderr)
    sys.exit(1)


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(SKIP)


def programs(bundle):
    folders = [os.path.join(bundle, "bin"), os.path.join(bundle, "libexec", "ddprun")]
    return [os.path.join(folder, name) for folder in folders for name in sorted(os.listdir(folder))]


def listed_cuda_libraries(bundle):
    with open(os.path.join(bundle, "cuda-libraries")) as listing:
        return [line.strip() for line in listing if line.strip()]


def build(source, bundle, have_nccl):
    if have_nccl != "ON":
        skip("CUDA and NCCL were not found by this build: the bundle's GPU code cannot be built")
    build_dir = os.path.dirname(bundle.rstrip("/"))
    result = subprocess.run([os.path.join(source, "bench", "gpu_bundle.sh"), bundle], cwd=source,
                            env=dict(os.environ, BUILD_DIR=build_dir), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    print(result.stdout[-4000:])
    if result.returncode != 0:
        fail(f"bench/gpu_bundle.sh exited {result.returncode}")
    total = 0
    for folder, _, files in os.walk(bundle):
        total += sum(os.lstat(os.path.join(folder, name)).st_size for name in files)
    print(f"the bundle: {total / (1 << 20):.1f} MiB in {sum(1 for _ in os.walk(bundle))} folders")
    if total > LIMIT_BYTES:
        fail(f"the bundle is {total / (1 << 20):.1f} MiB, over 48")
    expected = {"unit_tests", "runtime_thread_tests", "train", "ddp-mlp-bench",
                "ddp-allreduce-bench", "ddprun"}
    missing = expected - set(os.listdir(os.path.join(bundle, "bin")))
    if missing:
        fail(f"the bundle lacks {sorted(missing)}")
    for needed in ("gpu_run.sh", "cuda-libraries", "anchors/ddp_mlp.py", "libexec/ddprun/ddprun"):
        if not os.path.exists(os.path.join(bundle, needed)):
            fail(f"the bundle lacks {needed}")


def ldd(bundle):
    bundle = os.path.realpath(bundle)
    listed = set(listed_cuda_libraries(bundle))
    if not listed or not all(CUDA.match(name) for name in listed):
        fail(f"cuda-libraries lists {sorted(listed)}: expected the CUDA runtime, cuBLAS and NCCL")
    # The programs only: a library of lib/ finds its own dependencies through the RPATH of the
    # program that loads it (DT_RPATH applies to the whole tree), which ldd of the library alone
    # does not see.
    for program in programs(bundle):
        output = subprocess.run(["ldd", program], stdout=subprocess.PIPE, text=True,
                                check=True).stdout
        for line in output.splitlines():
            fields = line.split()
            if not fields or fields[0] == "statically":
                continue
            name, path = fields[0], fields[2] if len(fields) > 3 and fields[1] == "=>" else ""
            if GLIBC.match(os.path.basename(name)):
                continue
            if CUDA.match(name):
                if name not in listed:
                    fail(f"{program} loads {name}, which cuda-libraries does not list")
                continue
            if not os.path.realpath(path).startswith(bundle + os.sep):
                fail(f"{program} loads {name} from {path or 'nowhere'}, outside the bundle")
        print(f"{os.path.relpath(program, bundle)}: loads glibc, CUDA's "
              f"{sorted(name for name in listed if name in output)} and the bundle's own")


# The root's folders, then one bind mount per line: SOURCE TARGET [ro].
SETUP = r"""
set -eu
root=$1 bundle=$2 results=$3 cuda=$4
mount -t tmpfs tmpfs "$root"
mkdir -p "$root/bundle" "$root/results" "$root/bin" "$root/lib/x86_64-linux-gnu" "$root/lib64" \
  "$root/proc" "$root/dev/shm" "$root/tmp" "$root/cuda"
mount --bind "$bundle" "$root/bundle"
mount -o remount,bind,ro "$root/bundle"
mount --bind "$results" "$root/results"
for library in /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 \
    /lib/x86_64-linux-gnu/libm.so.6 /lib/x86_64-linux-gnu/libpthread.so.0 \
    /lib/x86_64-linux-gnu/libdl.so.2 /lib/x86_64-linux-gnu/librt.so.1; do
  touch "$root$library"
  mount --bind "$library" "$root$library"
done
ln -s /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
touch "$root/bin/sh" "$root/dev/null"
mount --bind /usr/bin/dash "$root/bin/sh"
mount --bind /dev/null "$root/dev/null"
mount -t proc proc "$root/proc"
mount -t tmpfs tmpfs "$root/dev/shm"
mount -t tmpfs tmpfs "$root/tmp"
if [ -n "$cuda" ]; then
  for library in $cuda; do
    touch "$root/cuda/$(basename "$library")"
    mount --bind "$library" "$root/cuda/$(basename "$library")"
  done
fi
shift 4
chroot=$(command -v chroot)
PATH=/bin exec "$chroot" "$root" "$@"
"""


def run_in_namespace(bundle, cuda_libraries):
    """gpu_run.sh chrooted into a root of its own; (exit status, output, summary.txt)."""
    if os.geteuid() != 0:
        skip("a mount namespace and chroot need root")
    if not shutil.which("unshare") or not os.path.exists("/usr/bin/dash"):
        skip("unshare (util-linux) or dash is missing")
    with tempfile.TemporaryDirectory() as work:
        root, results = os.path.join(work, "root"), os.path.join(work, "results")
        os.mkdir(root)
        os.mkdir(results)
        environment = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                       "HOME": "/tmp"}
        if cuda_libraries:
            environment["DDPRUN_CUDA_LIBRARY_PATH"] = "/cuda"
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", SETUP, "setup",
                   root, os.path.realpath(bundle), results, " ".join(cuda_libraries),
                   "/bin/sh", "/bundle/gpu_run.sh", "/results"]
        result = subprocess.run(command, env=environment, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=600)
        print(result.stdout)
        summary = ""
        if os.path.exists(os.path.join(results, "summary.txt")):
            with open(os.path.join(results, "summary.txt")) as lines:
                summary = lines.read()
        logs = sorted(os.listdir(results))
        return result.returncode, result.stdout, summary, logs


def bare(bundle):
    status, output, _, _ = run_in_namespace(bundle, [])
    lines = output.strip().splitlines()
    if status != 3:
        fail(f"gpu_run.sh exited {status} without the CUDA libraries, not 3")
    if len(lines) != 1 or "PyTorch" not in lines[0] or "DDPRUN_CUDA_LIBRARY_PATH" not in lines[0]:
        fail(f"expected one line naming the missing PyTorch and DDPRUN_CUDA_LIBRARY_PATH: {lines}")


def toolkit_libraries(bundle):
    """The toolkit's files for the sonames cuda-libraries lists, as ldd finds them here."""
    found = {}
    for program in programs(bundle):
        for line in subprocess.run(["ldd", program], stdout=subprocess.PIPE, text=True,
                                   check=True).stdout.splitlines():
            fields = line.split()
            if len(fields) > 3 and CUDA.match(fields[0]) and fields[2] != "not":
                found[fields[0]] = os.path.realpath(fields[2])
    listed = listed_cuda_libraries(bundle)
    if set(listed) - set(found):
        skip(f"the CUDA toolkit here lacks {sorted(set(listed) - set(found))}")
    return [found[name] for name in listed]


def gpu_tests(bundle, cuda_libraries):
    """The names of the bundle's [gpu] tests, listed by its programs on the toolkit's libraries."""
    folders = ":".join(dict.fromkeys(os.path.dirname(path) for path in cuda_libraries))
    names = []
    for binary in ("unit_tests", "runtime_thread_tests"):
        listing = subprocess.run([os.path.join(bundle, "bin", binary), "--list-test-names-only",
                                  "[gpu]"], stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ, LD_LIBRARY_PATH=folders)).stdout
        names += [name for name in listing.splitlines() if name.strip()]
    return names


def no_gpu(bundle):
    cuda_libraries = toolkit_libraries(bundle)
    expected_tests = gpu_tests(bundle, cuda_libraries)
    if len(expected_tests) < 4:
        fail(f"the bundle's programs list {len(expected_tests)} [gpu] tests: {expected_tests}")
    status, output, summary, logs = run_in_namespace(bundle, cuda_libraries)
    lines = [line for line in output.splitlines() if line.startswith("gpu_run: ")]
    if status != 0:
        fail(f"gpu_run.sh exited {status}")
    if summary.splitlines() != lines:
        fail("summary.txt does not hold the lines gpu_run.sh printed")
    results = {}
    for line in lines:
        match = re.match(r"^gpu_run: (.*?): (passed|FAILED|skipped \((.+?)\))(: .*)?$", line)
        if not match:
            fail(f"not a summary line: {line}")
        results[match.group(1)] = (match.group(2), match.group(3))
    checks = (["nvidia-smi"] + [f"gpu test: {name}" for name in expected_tests] +
              ["train", "all-reduce", "throughput: the seeds' model", "throughput: ddp-mlp-bench"])
    for check in checks:
        if check not in results:
            fail(f"no line for the check '{check}'")
        outcome, reason = results[check]
        if not reason:
            fail(f"'{check}' was {outcome} on a machine with no GPU")
    if results["nvidia-smi"][1] != "no nvidia-smi here":
        fail(f"nvidia-smi skipped for '{results['nvidia-smi'][1]}'")
    for check in checks[1:]:
        if results[check][1] != "no GPU visible":
            fail(f"'{check}' skipped for '{results[check][1]}', not 'no GPU visible'")
    # The CPU half of `train` ran: the bundle's ddprun and train work without a GPU.
    if not re.search(r"^gpu_run: train: .*: the CPU's held-out loss: [0-9.]+$", output, re.M):
        fail("train reported no held-out loss of the CPU's")
    if "train_cpu.log" not in logs:
        fail(f"no train_cpu.log among the results: {logs}")
    print(f"{len(checks)} checks, each skipped with its reason; the CPU's training ran")


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "build":
        build(*arguments)
        return 0
    bundle = arguments[0]
    if not os.path.isdir(bundle):
        skip(f"no bundle at {bundle} (the build check did not make one)")
    {"ldd": ldd, "bare": bare, "no-gpu": no_gpu}[command](bundle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
