#!/usr/bin/env python3
"""The test targets the external lane must run again: those whose run in the hermetic lane
printed `SKIPPED`, each as the `cargo test` arguments that select it.

Usage: lanes.py ARTIFACTS LOG
  ARTIFACTS: `cargo test --workspace --no-run --message-format=json` output (which executable
             belongs to which package and target);
  LOG:       the hermetic lane's `cargo test --workspace -- --nocapture` output, where cargo
             heads each test binary's output with `Running <source> (<executable>)`.

Computed rather than listed, so a new test target that needs an outside peer is run with the
peers without anyone remembering to add it.
"""

import json
import re
import sys
import tomllib
from pathlib import Path

RUNNING = re.compile(r"^\s*Running .*\((?P<executable>[^()]+)\)\s*$")
DOC_TESTS = re.compile(r"^\s*Doc-tests ")


def package_name(manifest_path, cache={}):
    if manifest_path not in cache:
        with open(manifest_path, "rb") as manifest:
            cache[manifest_path] = tomllib.load(manifest)["package"]["name"]
    return cache[manifest_path]


def targets_by_executable(artifacts_path):
    targets = {}
    with open(artifacts_path) as artifacts:
        for line in artifacts:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            if message.get("reason") != "compiler-artifact" or not message.get("executable"):
                continue
            if not message.get("profile", {}).get("test"):
                continue
            target = message["target"]
            kind = target["kind"][0]
            package = package_name(message["manifest_path"])
            if kind == "lib" or kind.endswith("lib") or kind == "proc-macro":
                selector = ["--lib"]
            else:
                selector = [f"--{kind}", target["name"]]
            targets[Path(message["executable"]).name] = ["-p", package, *selector]
    return targets


def skipped_executables(log_path):
    skipped, current = [], None
    with open(log_path, errors="replace") as log:
        for line in log:
            if match := RUNNING.match(line):
                current = Path(match["executable"]).name
            elif DOC_TESTS.match(line):
                current = None
            elif "SKIPPED" in line and current and current not in skipped:
                skipped.append(current)
    return skipped


def main():
    artifacts_path, log_path = sys.argv[1:3]
    targets = targets_by_executable(artifacts_path)
    for executable in skipped_executables(log_path):
        if executable not in targets:
            sys.exit(f"lanes.py: no cargo target builds {executable}")
        print(" ".join(targets[executable]))


if __name__ == "__main__":
    main()
