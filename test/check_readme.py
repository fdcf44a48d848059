#!/usr/bin/env python3
"""The README's environment table must be what `collx_info --markdown-config` prints."""
import subprocess
import sys

collx_info, readme = sys.argv[1], sys.argv[2]
table = subprocess.run([collx_info, "--markdown-config"], check=True, capture_output=True,
                       text=True).stdout.splitlines()
text = open(readme, encoding="utf-8").read()
missing = [row for row in table if row not in text]
for row in missing:
    print("README.md lacks:", row)
print(f"{len(table) - len(missing)} passed, {len(missing)} failed")
sys.exit(1 if missing else 0)
