"""TPU compile time of one decode, side by side for two checkouts of torchax_vae, in one run on this machine.

Each side runs in its own process with its checkout first on sys.path, builds the released architecture on
the meta device (bf16, tiling off), a mesh over libtpu's abstract chips of the target, and `precompile`s the decode: the
programs a real run there would compile, compiled by the TPU compiler, nothing run. It uses only what every
version has (`TorchaxVAE(mesh=...)`, `precompile`, `compile_stats`), so an older commit can be the "before":

    git worktree add /tmp/before dd707ad
    python scripts/tpu_compile_time.py --before /tmp/before --after . --json compile_time.jsonl

Figures are compiled offline on this machine (its cores set the seconds), not run on a TPU.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

WORKER = r"""
import json, os, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
sys.path.insert(0, sys.argv[1])
import torch
from jax.experimental import topologies
import torchax_vae
from torchax_vae import TorchaxVAE, make_mesh
from vaes import MODELS
config, topology, bounds = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
shape = tuple(json.loads(sys.argv[5]))
kwargs = {"chips_per_host_bounds": tuple(bounds)} if bounds else {}
devices = topologies.get_topology_desc(platform="tpu", topology_name=topology, **kwargs).devices
model_class, model_kwargs = MODELS[config]
with torch.device("meta"):
    vae = TorchaxVAE(model_class(**model_kwargs), dtype=torch.bfloat16, mesh=make_mesh(list(devices)))
vae.tiling_mode = "off"  # as issue 27 measured it (abstract chips report no free memory to "auto")
start = time.perf_counter()
stats = vae.precompile("decode", shape)
wall = time.perf_counter() - start
print(json.dumps({"source": torchax_vae.__file__, "programs": [(s["name"], s["compile_seconds"], s["temp_bytes"])
                  for s in stats], "compile_seconds": sum(s["compile_seconds"] for s in stats), "wall_seconds": wall}))
"""


def side(root: str, config: str, topology: str, bounds, shape) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", TORCHAX_VAE_CACHE_DIR="off", ALLOW_MULTIPLE_LIBTPU_LOAD="1")
    proc = subprocess.run([sys.executable, "-c", WORKER, str(pathlib.Path(root).resolve()), config, topology,
                           json.dumps(bounds), json.dumps(shape)], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise SystemExit(f"{root}: failed\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tpu_compile_time", description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="checkout (folder) of the version to compare against")
    parser.add_argument("--after", default=".", help="checkout of this version (default: .)")
    parser.add_argument("--config", default="official", help="vaes.MODELS config (default: CogVideoX's)")
    parser.add_argument("--shape", default="1,16,13,60,90", help="decode input (default: 49x480x720's latents)")
    parser.add_argument("--topology", default="v6e:2x4", help="libtpu topology (default: v6e-8's)")
    parser.add_argument("--bounds", default="2,4,1", help="chips_per_host_bounds ('' for libtpu's default)")
    parser.add_argument("--json", default=None, help="append the result as a JSON line")
    args = parser.parse_args(argv)
    shape = [int(n) for n in args.shape.split(",")]
    bounds = [int(n) for n in args.bounds.split(",")] if args.bounds else None
    result = {"config": args.config, "shape": shape, "topology": args.topology, "date": time.strftime("%Y-%m-%d"),
              "machine": f"{os.cpu_count()} cores", "python": sys.version.split()[0]}
    for name, root in (("before", args.before), ("after", args.after)):
        result[name] = side(root, args.config, args.topology, bounds, shape)
        print(name, json.dumps(result[name]), flush=True)
    ratio = result["after"]["compile_seconds"] / result["before"]["compile_seconds"]
    result["ratio"] = ratio
    print(f"TPU compile of decode {shape} on {args.topology}: before {result['before']['compile_seconds']:.0f} s "
          f"({len(result['before']['programs'])} programs), after {result['after']['compile_seconds']:.0f} s "
          f"({len(result['after']['programs'])} programs): {ratio:.2f}x; compiled offline, not run on a TPU")
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
