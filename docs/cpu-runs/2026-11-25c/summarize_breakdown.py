#!/usr/bin/env python3
"""breakdown.txt -> per round and variant: the probe's handover (read / rewrite, 256 KiB), the
call's time, and each step in us (ticks / 2.596 GHz, the mean of the two ranks)."""
import re
import sys

GHZ = 2.596
STEPS = ["copy_in", "wait_ready", "reduce", "put", "wait_reduced", "copy_out"]
text = open(sys.argv[1] if len(sys.argv) > 1 else "breakdown.txt").read()
print("| round | handover read / rewrite, 256 KiB (GB/s) | stores | call (us) | "
      + " | ".join(STEPS) + " |")
print("| --- | --- | --- | ---: | " + " | ".join("---:" for _ in STEPS) + " |")
for block in re.split(r"^== round ", text, flags=re.M)[1:]:
    rnd = block.split("\n", 1)[0]
    m = re.search(r"256 KiB ([\d.]+) / ([\d.]+)\n", block)
    hand = f"{m.group(1)} / {m.group(2)}" if m else "?"
    for part in re.split(r"^-- ", block, flags=re.M)[1:]:
        variant = part.split("\n", 1)[0].replace("COLLX_SHM_STORES=", "").strip()
        call = re.search(r"^1048576\s+([\d.]+)", part, flags=re.M)
        # The two ranks' lines may be interleaved: collect each step's numbers in order.
        vals = {s: [float(v) for v in re.findall(s + r" (\d+)", part)] for s in STEPS}
        us = [sum(v) / len(v) / GHZ / 1000 if v else float("nan") for v in vals.values()]
        print(f"| {rnd} | {hand} | {variant} | {call.group(1) if call else '?'} | "
              + " | ".join(f"{u:.1f}" for u in us) + " |")
