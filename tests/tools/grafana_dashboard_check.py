#!/usr/bin/env python3
"""Checks packaging/grafana/ddprun-dashboard.json against what ddprund serves.

Every query of the dashboard names only metrics that docs/metrics.md documents (and so that the
page writes: a unit test holds the table to the page), and every panel's PromQL parses, as
Debian's promtool reads it in a rules file (Grafana's variables replaced by values). Exits 0
when both hold, 1 naming what does not, 77 (skipped) when promtool is not installed.
Usage: grafana_dashboard_check.py DASHBOARD DOCS
"""
import json
import re
import shutil
import subprocess
import sys
import tempfile

SUFFIXES = ("_bucket", "_sum", "_count")


def family(name):
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def main(dashboard_path, docs_path):
    with open(dashboard_path) as file:
        dashboard = json.load(file)
    with open(docs_path) as file:
        docs = file.read()
    documented = set(re.findall(r"^\| `(ddprun_[a-z_]+)` \|", docs, re.MULTILINE))
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    variables = [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    problems = []
    for text in exprs + variables:
        for name in re.findall(r"\bddprun_[a-z_]+", text):
            if family(name) not in documented:
                problems.append(f"'{name}' is not in {docs_path}")
    if not shutil.which("promtool"):
        print("skipped: no promtool (Debian's prometheus; ./run.sh test installs it)")
        return 77 if not problems else 1
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:panel{i}",
         "expr": expr.replace("$__rate_interval", "1m").replace("$job", ".*")
                     .replace("$instance", ".*")}
        for i, expr in enumerate(exprs)]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as file:
        json.dump(rules, file)  # YAML reads JSON
        file.flush()
        checked = subprocess.run(["promtool", "check", "rules", file.name],
                                 capture_output=True, text=True)
    if checked.returncode != 0:
        problems.append("promtool check rules: " + (checked.stdout + checked.stderr).strip())
    for problem in problems:
        print(f"grafana_dashboard_check: {problem}", file=sys.stderr)
    print(f"{len(exprs)} queries of {len(dashboard['panels'])} panels checked")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
