"""Seed 002's DDP demo on gloo: nn.Linear(4, 5) under DistributedDataParallel.

Seed 002 runs it on oneCCL under mpiexec.hydra; here the backend is gloo (what Debian's
python3-torch has) and the launcher is `rankd run`, whose planner sets RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT and GLOO_SOCKET_IFNAME.

Each rank seeds its model and its data with its own rank, so the ranks agree on the
parameters at the end only if DDP's broadcast and gradient allreduces did their work.
Every line is tagged so that the test can tell a lost or repeated line from a good one:

    env <json>                 what the launcher gave this rank, and its network namespace
    init <sha256>              this rank's own initial parameters (they differ per rank)
    iter <i> loss <x> grad <g> the local loss (differs per rank) and the norm of the
                               allreduced gradient (the same on every rank)
    params <json> <sha256>     the final parameters, exact float32 bytes hashed
    done <iterations>

Run with /usr/bin/python3 (Debian's torch is not visible to other interpreters).
    --iterations N   training steps (default 3, as in the seed)
    --sleep S        pause after each step (fault tests keep the job running with it)
    --rank-from pmi  take RANK and WORLD_SIZE from PMI_RANK and PMI_SIZE, as seed 002 does
                     for its launcher (mpiexec.hydra there, rankd's PMI server here)
"""
import argparse
import hashlib
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.linear = nn.Linear(4, 5)

    def forward(self, input):
        return self.linear(input)


def flatten(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def digest_of(model):
    return hashlib.sha256(flatten(model).numpy().astype("<f4").tobytes()).hexdigest()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--rank-from", choices=["env", "pmi"], default="env")
    args = parser.parse_args()
    if args.rank_from == "pmi":
        # seed 002's lines, unchanged in meaning
        os.environ["RANK"] = os.environ.get("PMI_RANK", "-1")
        os.environ["WORLD_SIZE"] = os.environ.get("PMI_SIZE", "-1")

    rank = int(os.environ["RANK"])
    seen = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME")}
    seen["netns"] = os.readlink("/proc/self/ns/net")
    print("env " + json.dumps(seen, sort_keys=True), flush=True)

    # env:// rendezvous from MASTER_ADDR/MASTER_PORT; gloo binds to GLOO_SOCKET_IFNAME
    dist.init_process_group(backend="gloo")

    # a different start on every rank: DDP's broadcast from rank 0 must make them equal
    torch.manual_seed(1000 + rank)
    local = Model()
    print("init %s" % digest_of(local), flush=True)
    model = DDP(local)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)

    for i in range(args.iterations):
        input = torch.randn(2, 4)
        labels = torch.randn(2, 5)
        optimizer.zero_grad()
        # forward
        res = model(input)
        L = loss_fn(res, labels)
        # backward: DDP allreduces the gradients here
        L.backward()
        grad = sum(float(p.grad.norm()) for p in model.parameters())
        # update
        optimizer.step()
        print("iter %d loss %.6f grad %.6f" % (i, float(L), grad), flush=True)
        if args.sleep > 0:
            time.sleep(args.sleep)

    flat = flatten(model)
    print("params %s %s" % (json.dumps([round(float(x), 7) for x in flat]), digest_of(model)), flush=True)
    dist.destroy_process_group()
    print("done %d" % args.iterations, flush=True)


if __name__ == "__main__":
    main()
