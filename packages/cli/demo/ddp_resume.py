"""A DDP training run that survives a restart: it checkpoints every few steps and resumes.

Under `rankd run --max-restarts N` (or torchrun --max-restarts N) a failed rank ends the
attempt and the launcher starts the next one; this script then loads its newest checkpoint
and goes on from there, so that the final parameters are bit-identical to a run that never
failed. It uses gloo (what Debian's python3-torch has) and the launcher's environment:
RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, and the attempt number as RANKD_ATTEMPT or
TORCHELASTIC_RESTART_COUNT.

Why a resumed run ends where an uninterrupted one does:
- each step's data is a function of (step, rank) alone, so the data position is the step;
- the checkpoint holds the model, the optimizer (SGD with momentum: its buffers matter),
  the step, and every rank's global RNG state (dropout draws from it);
- the world size must be the one that wrote the checkpoint (gloo's sums are in rank order).
Only rank 0 touches the checkpoint directory: it writes each checkpoint atomically (temp
file, fsync, rename, fsync of the directory) and, at start, reads the newest one and
broadcasts it to the other ranks. A restart may put rank 0 on another node (a failed one is
left out), so on a real cluster the directory is on storage every node sees.

Every line is tagged (as test/cluster/ddp_demo.py's are):

    attempt <json>             RANK, WORLD_SIZE, RANKD_ATTEMPT, TORCHELASTIC_RESTART_COUNT, pid
    fresh | resume <step>      a new run, or the number of steps the checkpoint had done
    step <i> loss <x>          the local loss of step i (0-based; differs per rank)
    checkpoint <step>          rank 0 wrote the checkpoint after <step> steps
    params <json> <sha256>     the final parameters, exact float32 bytes hashed
    done <steps>

Run with /usr/bin/python3 (Debian's torch is not visible to other interpreters):
    rankd run -n 2 --max-restarts 1 -- /usr/bin/python3 ddp_resume.py --steps 20 --every 5 \\
        --checkpoint-dir /tmp/ckpt --sleep 0.5
    --steps N          training steps (default 20)
    --every K          checkpoint after every K steps (default 5)
    --checkpoint-dir   where rank 0 keeps the checkpoints (required)
    --sleep S          pause after each step, so that a rank can be killed mid-run
    --fail-at-step N --fail-rank R --fail-attempt A
                       rank R exits 1 before step N, in attempt A only (default 0)
"""
import argparse
import hashlib
import json
import os
import re
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CHECKPOINT = re.compile(r"^ckpt-(\d{8})\.pt$")
KEEP = 2


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.25), nn.Linear(8, 5))

    def forward(self, input):
        return self.net(input)


def flatten(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def digest_of(model):
    return hashlib.sha256(flatten(model).numpy().astype("<f4").tobytes()).hexdigest()


def batch(step, rank):
    """The data of one step on one rank: the same whichever attempt runs the step."""
    g = torch.Generator().manual_seed(1_000_003 * (step + 1) + rank)
    return torch.randn(8, 4, generator=g), torch.randn(8, 5, generator=g)


def attempt_number():
    for name in ("RANKD_ATTEMPT", "TORCHELASTIC_RESTART_COUNT"):
        if os.environ.get(name):
            return int(os.environ[name])
    return 0


def newest_checkpoint(directory):
    steps = sorted(int(m.group(1)) for m in map(CHECKPOINT.match, os.listdir(directory)) if m)
    return os.path.join(directory, "ckpt-%08d.pt" % steps[-1]) if steps else None


def fsync_dir(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(directory, state):
    """Temp file, fsync, rename: a reader sees the whole checkpoint or none of it."""
    final = os.path.join(directory, "ckpt-%08d.pt" % state["step"])
    tmp = os.path.join(directory, ".ckpt-%08d.pt.tmp-%d" % (state["step"], os.getpid()))
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, final)
    fsync_dir(directory)
    # the newest KEEP stay: the one being read at a restart is never the one removed
    steps = sorted(int(m.group(1)) for m in map(CHECKPOINT.match, os.listdir(directory)) if m)
    for old in steps[:-KEEP]:
        os.unlink(os.path.join(directory, "ckpt-%08d.pt" % old))


def load_on_rank0(directory, world):
    """Rank 0 reads the newest checkpoint (or None) and every rank gets it by broadcast."""
    holder = [None]
    if dist.get_rank() == 0:
        os.makedirs(directory, exist_ok=True)
        path = newest_checkpoint(directory)
        if path is not None:
            with open(path, "rb") as f:
                holder[0] = torch.load(f)
            if holder[0]["world_size"] != world:
                holder[0] = {"error": "%s was written by %d ranks, this run has %d" % (
                    path, holder[0]["world_size"], world)}
    dist.broadcast_object_list(holder, src=0)
    if holder[0] is not None and "error" in holder[0]:
        print("ddp_resume: cannot resume: %s" % holder[0]["error"], file=sys.stderr, flush=True)
        sys.exit(2)
    return holder[0]


def parse_args():
    parser = argparse.ArgumentParser(description="DDP training that checkpoints and resumes (gloo)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--fail-at-step", type=int, default=None)
    parser.add_argument("--fail-rank", type=int, default=0)
    parser.add_argument("--fail-attempt", type=int, default=0)
    args = parser.parse_args()
    if args.steps < 1 or args.every < 1:
        parser.error("--steps and --every must be at least 1")
    return args


def main():
    args = parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    attempt = attempt_number()
    seen = {k: os.environ.get(k) for k in (
        "RANK", "WORLD_SIZE", "RANKD_ATTEMPT", "RANKD_JOB_ID", "TORCHELASTIC_RESTART_COUNT")}
    seen["pid"] = os.getpid()
    print("attempt " + json.dumps(seen, sort_keys=True), flush=True)

    dist.init_process_group(backend="gloo")
    ckpt = load_on_rank0(args.checkpoint_dir, world)

    # a fresh run starts from different parameters on every rank: DDP's broadcast from
    # rank 0 makes them equal; a resumed run starts from the checkpoint's on every rank
    torch.manual_seed(1000 + rank)
    local = Model()
    if ckpt is not None:
        local.load_state_dict(ckpt["model"])
    model = DDP(local)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.MSELoss()
    start = 0
    if ckpt is None:
        print("fresh", flush=True)
    else:
        optimizer.load_state_dict(ckpt["optimizer"])
        torch.set_rng_state(ckpt["rng"][rank])
        start = ckpt["step"]
        print("resume %d" % start, flush=True)
    model.train()

    for i in range(start, args.steps):
        if args.fail_at_step == i and args.fail_rank == rank and args.fail_attempt == attempt:
            print("ddp_resume: injected failure: rank %d exits 1 before step %d in attempt %d" % (
                rank, i, attempt), file=sys.stderr, flush=True)
            os._exit(1)
        input, labels = batch(i, rank)
        optimizer.zero_grad()
        L = loss_fn(model(input), labels)
        L.backward()  # DDP allreduces the gradients here
        optimizer.step()
        print("step %d loss %.9g" % (i, float(L)), flush=True)
        done = i + 1
        if done % args.every == 0 or done == args.steps:
            rng = [None] * world
            dist.all_gather_object(rng, torch.get_rng_state())
            if rank == 0:
                write_checkpoint(args.checkpoint_dir, {
                    "step": done,
                    "world_size": world,
                    "model": model.module.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "rng": rng,
                })
                print("checkpoint %d" % done, flush=True)
        if args.sleep > 0:
            time.sleep(args.sleep)

    flat = flatten(model)
    print("params %s %s" % (json.dumps([round(float(x), 7) for x in flat]), digest_of(model)), flush=True)
    # torch 1.13's gloo thread frees a finished collective's Python-made tensors (those of
    # all_gather_object) under the GIL; tearing the group down at that moment deadlocks at
    # exit. A barrier runs after that free, and the group then goes before the interpreter.
    dist.barrier()
    del model, optimizer
    dist.destroy_process_group()
    print("done %d" % args.steps, flush=True)


if __name__ == "__main__":
    main()
