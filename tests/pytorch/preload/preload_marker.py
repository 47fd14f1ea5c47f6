"""Imported by --python_preload=preload_marker: appends the importing process's pid to the
file $PRELOAD_MARKER_FILE, so that a test can count the interpreters that imported it."""
import os

with open(os.environ["PRELOAD_MARKER_FILE"], "a") as marker:
    marker.write("%d\n" % os.getpid())
