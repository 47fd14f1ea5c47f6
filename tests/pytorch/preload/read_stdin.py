"""Rank 0 says it is ready, reads one line from its stdin and prints it back."""
import os
import sys

if os.environ["RANK"] == "0":
    print("ready for input", flush=True)
    print("read: %s" % sys.stdin.readline().strip(), flush=True)
