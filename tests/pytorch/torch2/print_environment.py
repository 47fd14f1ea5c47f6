"""Prints the worker's environment, one "env NAME=VALUE" line per variable, sorted, for
comparing what torchrun and ddprun give their workers; given a directory, writes the same lines
to DIRECTORY/rank<RANK>.env instead. Imports no torch: the variables are the launcher's, not
torch's."""
import os
import sys

lines = ["env %s=%s\n" % (name, os.environ[name]) for name in sorted(os.environ)]
if len(sys.argv) > 1:
    with open(os.path.join(sys.argv[1], "rank%s.env" % os.environ["RANK"]), "w") as out:
        out.writelines(lines)
else:
    sys.stdout.writelines(lines)
    sys.stdout.flush()
